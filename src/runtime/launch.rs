//! Launching loaded code: arguments checked against a kernel's signature (which selects the
//! specialisation to run), arrays that would alias refused, arguments flattened into one 8-byte
//! slot per parameter as the kernel ABI ([`crate::abi`]) passes them, and run on the host
//! executor or a CUDA device, with bounds-check faults reported. The JIT's compiled kernels and
//! the prebuilt kernels of generated code both launch through here, so they check and pass
//! arguments the same way.

use std::sync::Arc;

use crate::abi::{HostEntry, ParamAbi};
use crate::capture::{ArrayDesc, ForeignQueue, Location};
use crate::error::{Error, Result};
use crate::ir::{AggId, AggTy, ArrayTy, Elem, EnumDef, Layout, ScalarValue, Ty, Types};
use crate::runtime::fault::FaultSites;
use crate::runtime::{ArgValue, Device, Grid, check_layout, check_value, cuda, describe_kind, host, struct_slots};
use crate::target::Specialization;

/// Checks arguments against a signature (its structs in `types`); returns the specialisation
/// they select.
pub(crate) fn check_args(
    kernel: &str,
    sig: &[(String, Ty)],
    enums: &[EnumDef],
    types: &Types,
    args: &[ArgValue],
    device: &Device,
) -> Result<Specialization> {
    if sig.len() != args.len() {
        return Err(Error::ArgumentCount { kernel: kernel.to_string(), expected: sig.len(), got: args.len() });
    }
    let mut layouts = Vec::new();
    for ((pname, pty), a) in sig.iter().zip(args) {
        let bad = |problem: String| Error::BadArgument { kernel: kernel.to_string(), param: pname.clone(), problem };
        match (pty, a) {
            (Ty::Scalar(s), ArgValue::Scalar(v)) => {
                if v.ty() != *s {
                    return Err(bad(format!("expected `{s}`, got `{}`", v.ty())));
                }
                layouts.push(None);
            }
            (Ty::Array(t), ArgValue::Structs(a)) => {
                let Elem::Struct(id) = t.elem else {
                    return Err(bad(format!("expected `{}`, got an array of `{}` structs", types.array_name(t), a.layout.name)));
                };
                if t.ndim != 1 {
                    return Err(bad(format!("expected `{}`, got a 1-d array of structs", types.array_name(t))));
                }
                if t.writable && !a.writable {
                    return Err(bad("the kernel writes this array: pass it as `&mut`".into()));
                }
                check_layout(types, Ty::Agg(id), &a.layout).map_err(|e| bad(format!("the struct layouts differ: {e}")))?;
                if a.location != device.location() {
                    return Err(wrong_device(kernel, format!("argument `{pname}`"), a.location, device));
                }
                layouts.push(Some(Layout::C));
            }
            (Ty::Agg(_), ArgValue::TensorMap(m)) => {
                if !types.is_tensor_map(*pty) {
                    return Err(bad(format!("expected `{}`, got the tensor map `{}`", types.name(*pty), m.type_name)));
                }
                let want = types.name(*pty);
                if want != m.type_name {
                    return Err(bad(format!(
                        "expected `{want}`, got a `{}`: make the map with the kernel's element type, box and swizzle",
                        m.type_name
                    )));
                }
                if m.array.location() != device.location() {
                    return Err(wrong_device(kernel, format!("tensor map `{pname}`"), m.array.location(), device));
                }
                layouts.push(None);
            }
            (_, ArgValue::TensorMap(m)) => {
                return Err(bad(format!("expected `{}`, got the tensor map `{}`", types.name(*pty), m.type_name)));
            }
            (Ty::Agg(id), ArgValue::Struct { kind, .. }) => {
                if holds_tensor_map(types, *id) {
                    return Err(bad(format!(
                        "expected `{}`, which holds a tensor map: only a `kache::TensorMap` passes one, to a `&TensorMap<..>` parameter",
                        types.name(*pty)
                    )));
                }
                check_value(types, *pty, kind).map_err(|e| bad(format!("the struct layouts differ: {e}")))?;
                layouts.push(None);
            }
            (Ty::Agg(_), _) if types.is_tensor_map(*pty) => {
                return Err(bad(format!(
                    "expected the tensor map `{}`: pass `&map`, `map` made by `kache::TensorMap::tiled(&array, W, H, S)`",
                    types.name(*pty)
                )));
            }
            (Ty::Agg(_), _) => {
                return Err(bad(format!(
                    "expected a `{}` value: pass a struct declared with `kache::plain_struct!` as `kache::ByValue(value)`",
                    types.name(*pty)
                )));
            }
            (_, ArgValue::Structs(a)) => {
                return Err(bad(format!("expected `{}`, got an array of `{}` structs", types.name(*pty), a.layout.name)));
            }
            (_, ArgValue::Struct { kind, .. }) => {
                return Err(bad(format!("expected `{}`, got {} by value", types.name(*pty), describe_kind(kind))));
            }
            (Ty::Scalar(s), ArgValue::Array { desc, .. }) => return Err(bad(format!("expected a `{s}` scalar, got {}", desc.describe()))),
            (Ty::Array(t), ArgValue::Scalar(v)) => return Err(bad(format!("expected `{t}`, got the scalar `{}`", v.ty()))),
            (Ty::Array(t), ArgValue::Array { desc, writable }) => {
                if let Elem::Struct(_) = t.elem {
                    return Err(bad(format!(
                        "expected `{}`, got {}: upload the structs with `Device::upload_structs`",
                        types.array_name(t),
                        desc.describe()
                    )));
                }
                check_array_arg(t, desc, *writable).map_err(bad)?;
                // Plain host memory is the host backend's own address space.
                let reachable = desc.location() == device.location() || (desc.location() == Location::HostMemory && !device.is_cuda());
                if !reachable {
                    return Err(wrong_device(kernel, format!("argument `{pname}`"), desc.location(), device));
                }
                layouts.push(Some(desc.layout()));
            }
            (Ty::Enum(e), ArgValue::Scalar(v)) => {
                let Some(def) = enums.get(e.id as usize) else { return Err(bad("an enum parameter without its definition".into())) };
                check_enum_arg(def, *v).map_err(bad)?;
                layouts.push(None);
            }
            (Ty::Enum(e), ArgValue::Array { desc, .. }) => {
                let name = enums.get(e.id as usize).map(|d| d.name.as_str()).unwrap_or("an enum");
                return Err(bad(format!("expected `{name}` (its discriminant as a `{}`), got {}", e.repr, desc.describe())));
            }
            _ => return Err(bad("unsupported parameter type".into())),
        }
    }
    Ok(Specialization { layouts })
}

/// Whether aggregate `id` is or holds a tensor map (which no host struct may stand for).
fn holds_tensor_map(types: &Types, id: AggId) -> bool {
    if types.is_tensor_map(Ty::Agg(id)) {
        return true;
    }
    let inner = |t: &Ty| matches!(t, Ty::Agg(a) if holds_tensor_map(types, *a));
    match types.get(id) {
        Some(AggTy::Struct(def)) => def.fields.iter().any(|(_, t)| inner(t)),
        Some(AggTy::Tuple(ts)) => ts.iter().any(inner),
        Some(AggTy::Array { elem, .. }) => inner(elem),
        _ => false,
    }
}

/// [`Error::WrongDevice`]: `array` of `kernel` lives in `on`, not on `device`.
pub(crate) fn wrong_device(kernel: &str, array: String, on: Location, device: &Device) -> Error {
    Error::WrongDevice { kernel: kernel.to_string(), array, array_on: on, launch_on: device.location() }
}

/// An enum argument is its discriminant as the enum's integer type, and must be one of its
/// variants' (a kernel never sees a value its enum does not have).
fn check_enum_arg(def: &EnumDef, v: ScalarValue) -> std::result::Result<(), String> {
    let variants = || def.variants.iter().map(|(n, d)| format!("{n} = {d}")).collect::<Vec<_>>().join(", ");
    if v.ty() != def.repr {
        return Err(format!("expected `{}`, passed as its discriminant, a `{}`; got a `{}` ({})", def.name, def.repr, v.ty(), variants()));
    }
    let d = v.as_i128().unwrap_or(i128::MIN);
    if !def.variants.iter().any(|(_, x)| *x == d) {
        return Err(format!("{d} is not a discriminant of `{}` (variants: {})", def.name, variants()));
    }
    Ok(())
}

fn check_array_arg(t: &ArrayTy, d: &ArrayDesc, writable: bool) -> std::result::Result<(), String> {
    if Elem::Scalar(d.elem()) != t.elem {
        return Err(format!("expected elements of type `{}`, got `{}`", t.elem, d.elem()));
    }
    if d.shape().len() != t.ndim as usize {
        return Err(format!("expected a {}-d array, got a {}-d array", t.ndim, d.shape().len()));
    }
    if t.writable && (!writable || d.read_only()) {
        return Err(if d.read_only() {
            "the kernel writes this array, but it is read-only".to_string()
        } else {
            "the kernel writes this array: pass it as `&mut`".to_string()
        });
    }
    Ok(())
}

/// A device array a kernel captured, as its launches check and order it.
#[derive(Clone)]
pub(crate) struct CapturedArray {
    /// "global 'G'", for messages.
    pub origin: String,
    /// The array (its owner keeps it alive for as long as the kernel is).
    pub desc: ArrayDesc,
    /// Whether the kernel may write it (`abi::written_captures`).
    pub written: bool,
}

/// Refuses a launch in which an array the kernel writes shares memory with another array of
/// the launch: an argument passed twice (as `&` and `&mut`, or twice as `&mut`), overlapping
/// views of one buffer, or an argument overlapping a captured array the kernel writes. Arrays
/// of structs ([`StructArray`](super::StructArray)) count as every array does. The code
/// generator may then take every array as `noalias` (and load read-only ones through the
/// non-coherent cache), which is only sound because of this check. Arrays overlap when the byte
/// ranges they span overlap, so two interleaved views of one buffer are refused too.
pub(crate) fn check_aliasing(kernel: &str, sig: &[(String, Ty)], args: &[ArgValue], captured: &[CapturedArray]) -> Result<()> {
    // (name, where, the bytes it spans, whether the kernel writes it); empty arrays span none.
    let mut arrays: Vec<(String, Location, (u64, u64), bool)> = Vec::new();
    for ((name, ty), a) in sig.iter().zip(args) {
        let Ty::Array(t) = ty else { continue };
        match a {
            ArgValue::Array { desc, .. } if !desc.is_empty() => {
                arrays.push((format!("argument `{name}`"), desc.location(), desc.byte_range(), t.writable))
            }
            ArgValue::Structs(s) if s.len > 0 => {
                let end = (s.len as u64).saturating_mul(s.layout.size as u64).saturating_add(s.ptr);
                arrays.push((format!("argument `{name}`"), s.location, (s.ptr, end), t.writable))
            }
            _ => {}
        }
    }
    // A tensor map reads its array (as its argument).
    for ((name, _), a) in sig.iter().zip(args) {
        if let ArgValue::TensorMap(m) = a
            && !m.array.is_empty()
        {
            arrays.push((format!("argument `{name}`"), m.array.location(), m.array.byte_range(), false));
        }
    }
    for c in captured.iter().filter(|c| !c.desc.is_empty()) {
        arrays.push((format!("captured array {}", c.origin), c.desc.location(), c.desc.byte_range(), c.written));
    }
    for (j, (b_name, b_at, (blo, bhi), b_written)) in arrays.iter().enumerate() {
        for (a_name, a_at, (alo, ahi), a_written) in &arrays[..j] {
            if !(*a_written || *b_written) || a_at != b_at {
                continue;
            }
            if alo < bhi && blo < ahi {
                let writes = match (a_written, b_written) {
                    (true, true) => "both".to_string(),
                    (true, false) => a_name.clone(),
                    _ => b_name.clone(),
                };
                let param = b_name.strip_prefix("argument ").unwrap_or(b_name).trim_matches('`').to_string();
                return Err(Error::BadArgument {
                    kernel: kernel.to_string(),
                    param,
                    problem: format!(
                        "{b_name} shares memory with {a_name}, and the kernel writes {writes}: arrays of one launch must not \
                         overlap where one is written; pass separate arrays"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The arguments in their parameter slots: one 8-byte slot per flattened parameter (a scalar;
/// an array's pointer, extents and strides).
pub(crate) fn param_slots(kernel: &str, abi: &[ParamAbi], args: &[ArgValue]) -> Result<Vec<u64>> {
    let mut slots: Vec<u64> = Vec::new();
    for (abi, a) in abi.iter().zip(args) {
        match (abi, a) {
            (ParamAbi::Scalar(_), ArgValue::Scalar(v)) => slots.push(scalar_slot(*v)),
            (ParamAbi::Array { .. }, ArgValue::Array { desc, .. }) => {
                slots.push(desc.ptr());
                slots.extend(desc.shape().iter().map(|d| *d as u64));
                slots.extend(desc.strides().iter().map(|s| *s as i64 as u64));
            }
            (ParamAbi::Array { ndim: 1, .. }, ArgValue::Structs(a)) => slots.extend([a.ptr, a.len as u64, 1]),
            (ParamAbi::Aggregate(leaves), ArgValue::TensorMap(m)) if leaves.len() == 1 => slots.push(m.slot),
            (ParamAbi::Aggregate(leaves), ArgValue::Struct { bytes, .. }) => match struct_slots(bytes, leaves) {
                Some(v) => slots.extend(v),
                None => return Err(Error::BadArgument { kernel: kernel.to_string(), param: "?".into(), problem: "struct bytes".into() }),
            },
            _ => return Err(Error::BadArgument { kernel: kernel.to_string(), param: "?".into(), problem: "argument kind".into() }),
        }
    }
    Ok(slots)
}

/// A scalar argument in its 8-byte parameter slot.
fn scalar_slot(v: ScalarValue) -> u64 {
    match v {
        ScalarValue::Bool(b) => b as u64,
        ScalarValue::Int(_, bits) => bits,
        ScalarValue::F16(x) => x.to_bits() as u64,
        ScalarValue::Bf16(x) => x.to_bits() as u64,
        ScalarValue::F32(x) => x.to_bits() as u64,
        ScalarValue::F64(x) => x.to_bits(),
    }
}

/// What the host executor needs to run one kernel's machine code.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostKernel {
    /// The entry (see [`HostEntry`]).
    pub entry: HostEntry,
    /// Bytes of static shared memory per block.
    pub static_shared: u64,
    /// Whether the kernel synchronises the threads of a block (run as coroutines).
    pub cooperative: bool,
    /// Bytes of stack one kernel thread may use (`HostModule::stack_bytes`); each thread is
    /// given at least that.
    pub stack: u64,
}

/// Runs a grid of `kernel` on the host executor; a failed bounds check is the
/// [`Error::Launch`] that `faults` describes.
///
/// # Safety
///
/// `kernel.entry` must be a host kernel entry generated by kache, loaded until this returns,
/// for the parameters whose [`param_slots`] `slots` are, built from arguments checked against
/// that kernel's signature with [`check_args`] and [`check_aliasing`]; and the code must be
/// bounds-checked, or every array access of this launch in bounds.
pub(crate) unsafe fn run_host(kernel: HostKernel, grid: &Grid, slots: &[u64], faults: &FaultSites) -> Result<()> {
    let stack = usize::try_from(kernel.stack).ok().filter(|s| *s <= host::MAX_THREAD_STACK).ok_or_else(|| {
        Error::BadLaunch(format!(
            "kernel '{}' may use {} bytes of stack per thread; the host backend gives a thread at most {} (keep fewer or smaller local arrays alive at once)",
            faults.kernel,
            kernel.stack,
            host::MAX_THREAD_STACK
        ))
    })?;
    let ptrs: Vec<*const u8> = slots.iter().map(|s| s as *const u64 as *const u8).collect();
    let launch = host::HostLaunch {
        grid: [grid.grid.0, grid.grid.1, grid.grid.2],
        block: [grid.block.0, grid.block.1, grid.block.2],
        dyn_shared: grid.shared_mem as usize,
        static_shared: kernel.static_shared as usize,
        cooperative: kernel.cooperative,
        stack,
    };
    // SAFETY: the caller's promise: `entry` is loaded kache host code for exactly these slots,
    // bounds-checked or vouched for.
    let fault = unsafe { host::run(kernel.entry, launch, &ptrs) }?;
    if fault.flag != 0 {
        return Err(faults.error(&fault));
    }
    Ok(())
}

/// What a CUDA launch passes besides its parameters.
pub(crate) struct CudaLaunch<'a> {
    /// How the kernel's fault records are reported.
    pub faults: &'a Arc<FaultSites>,
    /// The streams of the cudarc arrays the launch uses (arguments and captures).
    pub queues: Vec<&'a ForeignQueue>,
    /// Whether the code is bounds-checked (only then can it write the fault record).
    pub checked: bool,
    /// The addresses of the arrays bound to a relocatable kernel's capture slots, in the order
    /// of its slots (`abi::slot_captures`): hidden parameters after the token.
    pub captured: &'a [u64],
}

/// The streams of the cudarc arrays among `args`.
pub(crate) fn queues_of(args: &[ArgValue]) -> impl Iterator<Item = &ForeignQueue> {
    args.iter().filter_map(|a| if let ArgValue::Array { desc, .. } = a { desc.queue() } else { None })
}

/// Launches a grid of `f` on a CUDA device; `slots` as [`param_slots`] builds them from
/// arguments checked against the kernel's signature (and with [`check_aliasing`]). Every NVPTX
/// kernel kache generates takes the device's fault record and its kernel's token first, checked
/// or not, then the addresses of its relocatable captures; a failed check is reported by the
/// next operation that waits for the device.
///
/// # Safety
///
/// `f` must be kache's code for the kernel whose parameters `slots` fill, bounds-checked if
/// `launch.checked` says so, and otherwise with every array access of this launch in bounds.
pub(crate) unsafe fn run_cuda(
    dev: &cuda::CudaDevice,
    f: &cuda::LoadedFunction,
    grid: &Grid,
    slots: &[u64],
    launch: CudaLaunch<'_>,
) -> Result<()> {
    let (record, token) = dev.fault_target(launch.faults);
    let mut all: Vec<u64> = Vec::with_capacity(slots.len() + launch.captured.len() + 2);
    all.push(record);
    all.push(token as u64);
    all.extend_from_slice(launch.captured);
    all.extend_from_slice(slots);
    let mut ptrs: Vec<*mut std::ffi::c_void> = all.iter_mut().map(|s| s as *mut u64 as *mut std::ffi::c_void).collect();
    dev.launch(f, grid, &mut ptrs, &launch.queues, launch.checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Code that may use more stack per thread than the host backend gives a thread is refused
    /// before anything runs (its entry is never called).
    #[test]
    fn host_code_needing_more_stack_than_a_thread_is_given_is_refused() {
        unsafe extern "C" fn never(_: *mut u8, _: *const *const u8) {
            unreachable!("a refused launch ran");
        }
        let faults = FaultSites { kernel: "deep".into(), sites: Vec::new() };
        let kernel = HostKernel { entry: never, static_shared: 0, cooperative: false, stack: host::MAX_THREAD_STACK as u64 + 1 };
        // SAFETY: the launch is refused before the entry could be called.
        let e = unsafe { run_host(kernel, &Grid::linear(1, 1), &[], &faults) }.unwrap_err();
        assert!(matches!(&e, Error::BadLaunch(m) if m.starts_with("kernel 'deep' may use")), "{e}");
    }
}
