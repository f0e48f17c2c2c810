//! Launching a compiled kernel: the checks that belong to the JIT (captured arrays on the
//! device, the compiled specialisation), then `runtime::launch`, where the arguments are
//! checked and passed as for every kernel.

use super::compiled::CompiledKernel;
use crate::capture::CaptureValue;
use crate::error::{Error, Result};
use crate::ir::Program;
pub(super) use crate::runtime::launch::check_args;
use crate::runtime::{ArgValue, Device, Grid, KernelArgs, launch};
use crate::target::Target;

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

impl CompiledKernel {
    /// Launches with arguments checked against the signature and the specialisation.
    pub fn launch(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<()> {
        let args = args.args()?;
        let spec = check_args(&self.name, &self.signature, &self.enums, &self.types, &args, device)?;
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
        for loc in self.device_captures.iter().copied().chain(super::slots::slot_locations(&self.slots)) {
            if loc != device.location() {
                return Err(Error::Device(format!(
                    "kernel '{}' captured an array in {loc} and cannot run on {}",
                    self.name,
                    device.describe()
                )));
            }
        }
        let mut slots = launch::param_slots(&self.name, &self.abi, args)?;
        match device.cuda_impl() {
            None => {
                let m = self.host_module()?;
                let code = launch::HostKernel { entry: m.entry(), static_shared: self.static_shared, cooperative: self.cooperative };
                // SAFETY: `m` owns the entry's code and outlives the launch; `slots` holds one value
                // per flattened parameter of this kernel's ABI, checked against its signature.
                unsafe { launch::run_host(code, &grid, &slots) }
            }
            Some(dev) => {
                let f = self.cuda_function(dev)?;
                launch::run_cuda(dev, &f, &grid, &mut slots)
            }
        }
    }
}
