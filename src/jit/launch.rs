//! Launching: arguments checked against a kernel's signature (selecting its specialisation)
//! and the checked launch of a compiled kernel on a device.

use super::compiled::CompiledKernel;
use crate::abi::ParamAbi;
use crate::capture::{ArrayDesc, CaptureValue};
use crate::error::{Error, Result};
use crate::ir::{ArrayTy, EnumDef, Program, ScalarValue, Ty};
use crate::runtime::{ArgValue, Device, Grid, KernelArgs, host};
use crate::target::{Specialization, Target};

/// Checks that every device array a kernel captured lives on `device`.
pub(super) fn check_capture_locations(name: &str, p: &Program, captures: &[CaptureValue], device: &Device) -> Result<()> {
    for (c, v) in p.captures.iter().zip(captures) {
        if let CaptureValue::Device(d) = v
            && d.location != device.location()
        {
            return Err(Error::Device(format!(
                "kernel '{name}' captured device array {} in {} and cannot run on {}",
                c.origin,
                d.location,
                device.describe()
            )));
        }
    }
    Ok(())
}

/// Checks arguments against a signature; returns the specialisation they select.
pub(crate) fn check_args(
    kernel: &str,
    sig: &[(String, Ty)],
    enums: &[EnumDef],
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
            (Ty::Scalar(s), ArgValue::Array { desc, .. }) => return Err(bad(format!("expected a `{s}` scalar, got {}", desc.describe()))),
            (Ty::Array(t), ArgValue::Scalar(v)) => return Err(bad(format!("expected `{t}`, got the scalar `{}`", v.ty()))),
            (Ty::Array(t), ArgValue::Array { desc, writable }) => {
                check_array_arg(t, desc, *writable).map_err(bad)?;
                if desc.location != device.location() {
                    return Err(bad(format!("the array is in {}, but the kernel is launched on {}", desc.location, device.describe())));
                }
                layouts.push(Some(desc.layout));
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
    if d.elem != t.elem {
        return Err(format!("expected elements of type `{}`, got `{}`", t.elem, d.elem));
    }
    if d.shape.len() != t.ndim as usize {
        return Err(format!("expected a {}-d array, got a {}-d array", t.ndim, d.shape.len()));
    }
    if t.writable && !writable {
        return Err(if d.read_only {
            "the kernel writes this array, but it is read-only".to_string()
        } else {
            "the kernel writes this array: pass it as `&mut`".to_string()
        });
    }
    Ok(())
}

impl CompiledKernel {
    /// Launches with arguments checked against the signature and the specialisation.
    pub fn launch(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<()> {
        let args = args.args()?;
        let spec = check_args(&self.name, &self.signature, &self.enums, &args, device)?;
        if spec != self.spec {
            return Err(Error::BadArgument {
                kernel: self.name.clone(),
                param: "(layouts)".into(),
                problem: format!("compiled for array layouts {} but given {}", self.spec.describe(), spec.describe()),
            });
        }
        grid.check()?;
        self.launch_checked(device, grid, &args)
    }

    /// Launches `args` already checked against the signature and the specialisation.
    pub(super) fn launch_checked(&self, device: &Device, grid: Grid, args: &[ArgValue]) -> Result<()> {
        if device.target() != self.target && !(device.is_cuda() && matches!(self.target, Target::Nvptx(_))) {
            return Err(Error::Device(format!("kernel '{}' was compiled for {}, not for {}", self.name, self.target, device.describe())));
        }
        for loc in &self.device_captures {
            if *loc != device.location() {
                return Err(Error::Device(format!(
                    "kernel '{}' captured an array in {loc} and cannot run on {}",
                    self.name,
                    device.describe()
                )));
            }
        }
        // One 8-byte slot per flattened parameter.
        let mut slots: Vec<u64> = Vec::new();
        for (abi, a) in self.abi.iter().zip(args) {
            match (abi, a) {
                (ParamAbi::Scalar(_), ArgValue::Scalar(v)) => slots.push(scalar_slot(*v)),
                (ParamAbi::Array { .. }, ArgValue::Array { desc, .. }) => {
                    slots.push(desc.ptr);
                    slots.extend(desc.shape.iter().map(|d| *d as u64));
                    slots.extend(desc.strides.iter().map(|s| *s as i64 as u64));
                }
                _ => return Err(Error::BadArgument { kernel: self.name.clone(), param: "?".into(), problem: "argument kind".into() }),
            }
        }
        let g = [grid.grid.0, grid.grid.1, grid.grid.2];
        let b = [grid.block.0, grid.block.1, grid.block.2];
        match device.cuda_impl() {
            None => {
                let m = self.host_module()?;
                let ptrs: Vec<*const u8> = slots.iter().map(|s| s as *const u64 as *const u8).collect();
                // SAFETY: `m` owns the entry's code and outlives the launch; `slots` holds one value
                // per flattened parameter of this kernel's ABI, checked against its signature.
                unsafe {
                    host::run(
                        m.entry(),
                        host::HostLaunch {
                            grid: g,
                            block: b,
                            dyn_shared: grid.shared_mem as usize,
                            static_shared: self.static_shared as usize,
                            cooperative: self.cooperative,
                        },
                        &ptrs,
                    )
                }
            }
            Some(dev) => {
                let f = self.cuda_function(dev)?;
                let mut ptrs: Vec<*mut std::ffi::c_void> = slots.iter_mut().map(|s| s as *mut u64 as *mut std::ffi::c_void).collect();
                dev.launch(&f, g, b, grid.shared_mem, &mut ptrs)
            }
        }
    }
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
