//! Running the front end and the code generator on arbitrary bytes without panicking: each
//! call inside `catch_unwind`, a panic or an untyped failure reported with the source.

use super::*;

pub(super) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_else(|| "(no message)".into())
}

pub(super) fn show(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => format!("--- source ({} bytes) ---\n{s}\n--- as a Rust string ---\n{s:?}", s.len()),
        Err(_) => format!("--- source ({} bytes, not UTF-8) ---\n{bytes:?}", bytes.len()),
    }
}

/// Parses and checks `bytes`: `Ok(Some(summary))` when it checks, `Ok(None)` on a located typed
/// error, `Err(description)` when the front end panicked or gave a bad location.
pub(super) fn front_end(bytes: &[u8], env: &Env) -> Result<Option<ModuleSummary>, String> {
    let name = "fuzz.rs";
    let r = catch_unwind(AssertUnwindSafe(|| {
        let m = parse_bytes(name, bytes)?;
        check_module(&m, env)
    }));
    match r {
        Ok(Ok(summary)) => Ok(Some(summary)),
        Ok(Err(d)) => {
            let loc = d.location();
            let ok = loc
                .strip_prefix("fuzz.rs:")
                .map(|rest| {
                    let parts: Vec<&str> = rest.split(':').collect();
                    parts.len() == 2 && parts.iter().all(|p| p.parse::<usize>().is_ok_and(|n| n >= 1))
                })
                .unwrap_or(false);
            if !ok {
                return Err(format!("diagnostic location `{loc}` is not `fuzz.rs:line:col`\n{}", show(bytes)));
            }
            // Rendering must not panic either.
            match catch_unwind(AssertUnwindSafe(|| d.render(false))) {
                Ok(text) if !text.is_empty() => Ok(None),
                Ok(_) => Err(format!("empty rendered diagnostic\n{}", show(bytes))),
                Err(p) => Err(format!("rendering the diagnostic panicked: {}\n{}", panic_text(&*p), show(bytes))),
            }
        }
        Err(p) => Err(format!("the front end panicked: {}\n{}", panic_text(&*p), show(bytes))),
    }
}

/// A host array of `elem` and `ndim` dimensions (each of extent 4), as a capture.
pub(super) fn host_array(elem: Scalar, ndim: u8) -> Option<CaptureValue> {
    let shape = vec![4usize; ndim as usize];
    let n: usize = shape.iter().product();
    fn arr<T: kache::Element>(v: T, n: usize, shape: &[usize]) -> Option<CaptureValue> {
        HostArray::new(vec![v; n], shape).ok()?.into_capture().ok()
    }
    match elem {
        Scalar::F32 => arr(1.5f32, n, &shape),
        Scalar::F64 => arr(2.5f64, n, &shape),
        Scalar::I32 => arr(-3i32, n, &shape),
        Scalar::I64 => arr(7i64, n, &shape),
        Scalar::U32 => arr(3u32, n, &shape),
        Scalar::U64 => arr(9u64, n, &shape),
        Scalar::Usize => arr(2usize, n, &shape),
        Scalar::Bool => arr(true, n, &shape),
        Scalar::I8 => arr(-5i8, n, &shape),
        Scalar::I16 => arr(-300i16, n, &shape),
        Scalar::U8 => arr(200u8, n, &shape),
        Scalar::U16 => arr(60000u16, n, &shape),
        Scalar::F16 => arr(half::f16::from_f32(1.5), n, &shape),
        Scalar::Bf16 => arr(half::bf16::from_f32(-2.5), n, &shape),
    }
}

pub(super) fn scalar_value(s: Scalar) -> Option<CaptureValue> {
    match s {
        Scalar::F32 => 0.5f32.into_capture(),
        Scalar::F64 => 0.25f64.into_capture(),
        Scalar::I32 => (-2i32).into_capture(),
        Scalar::I64 => 5i64.into_capture(),
        Scalar::U32 => 3u32.into_capture(),
        Scalar::U64 => 11u64.into_capture(),
        Scalar::Usize => 4usize.into_capture(),
        Scalar::Bool => true.into_capture(),
        Scalar::I8 => (-7i8).into_capture(),
        Scalar::I16 => 1234i16.into_capture(),
        Scalar::U8 => 255u8.into_capture(),
        Scalar::U16 => 7u16.into_capture(),
        Scalar::F16 => half::f16::from_f32(0.75).into_capture(),
        Scalar::Bf16 => half::bf16::from_f32(3.0).into_capture(),
    }
    .ok()
}

/// The NVPTX target the fuzzed kernels are compiled for.
pub(super) fn sm70() -> Target {
    Target::Nvptx(Arch::parse("sm_70").expect("sm_70 is supported"))
}

/// Compiles every kernel and kernel factory of a source that checked, for the host and for
/// NVPTX. Typed errors are fine; a panic or an internal (LLVM) error is not.
pub(super) fn compile_checked(bytes: &[u8], summary: &ModuleSummary, with_globals: bool) -> Result<usize, String> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(_) => return Ok(0),
    };
    let r = catch_unwind(AssertUnwindSafe(|| -> Result<usize, String> {
        let jit = common::memory_jit();
        let mut m = match jit.load_source("fuzz.rs", text) {
            Ok(m) => m,
            Err(e) => return Err(format!("a source that checked failed to load: {e}")),
        };
        if with_globals {
            m = m.with_global("RATE", 0.5f32).map_err(|e| e.to_string())?;
            m = m.with_global("PRICES", vec![1.0f32, 2.0, 3.0, 4.0]).map_err(|e| e.to_string())?;
        }
        let mut kernels = Vec::new();
        for k in &summary.kernels {
            // Host-array globals are read-only where the front-end test bound device arrays:
            // a typed error here is fine.
            if let Ok(kernel) = m.kernel(&k.name) {
                kernels.push(kernel);
            }
        }
        for f in &summary.kernel_factories {
            let args: Option<Vec<CaptureValue>> = f
                .params
                .iter()
                .map(|(_, ty)| match ty {
                    Ty::Scalar(s) => scalar_value(*s),
                    Ty::Array(a) => host_array(a.elem.scalar()?, a.ndim),
                    _ => None,
                })
                .collect();
            if let Some(args) = args
                && let Ok(kernel) = m.closure(&f.name, args)
            {
                kernels.push(kernel);
            }
        }
        let mut n = 0;
        for kernel in kernels {
            let spec = Specialization::uniform(kernel.program(), Layout::C);
            for target in [Target::Host, sm70()] {
                match kernel.compile(target, &spec) {
                    Ok(_) => n += 1,
                    Err(kache::Error::Codegen(kache::codegen::CodegenError::Llvm(e))) => {
                        return Err(format!("internal code generation error for `{}` on {target}: {e}", kernel.name()));
                    }
                    Err(_) => {}
                }
            }
        }
        Ok(n)
    }));
    match r {
        Ok(Ok(n)) => Ok(n),
        Ok(Err(e)) => Err(format!("{e}\n{}", show(bytes))),
        Err(p) => Err(format!("the code generator panicked: {}\n{}", panic_text(&*p), show(bytes))),
    }
}
