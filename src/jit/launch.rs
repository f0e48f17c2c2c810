//! Launching a compiled kernel: the checks that belong to the JIT (captured arrays on the
//! device, the compiled specialisation, checked code for a safe launch), then
//! `runtime::launch`, where the arguments are checked and passed as for every kernel.

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
            && d.location() != device.location()
        {
            return Err(launch::wrong_device(name, format!("captured array {}", c.origin), d.location(), device));
        }
    }
    Ok(())
}

impl CompiledKernel {
    /// Launches with arguments checked against the signature and the specialisation. The code
    /// must be bounds-checked ([`is_checked`](Self::is_checked)); unchecked code is refused
    /// with [`Error::BadLaunch`] and runs only through [`launch_unchecked`](Self::launch_unchecked).
    pub fn launch(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<()> {
        if !self.checked {
            return Err(Error::BadLaunch(format!(
                "kernel '{}' was compiled without bounds checks; only the unsafe `launch_unchecked` runs it",
                self.name
            )));
        }
        let args = self.checked_args(device, grid, args)?;
        // SAFETY: the code is bounds-checked (tested above).
        unsafe { self.run(device, grid, &args) }
    }

    /// Launches checked or unchecked code alike, with every other check of
    /// [`launch`](Self::launch).
    ///
    /// # Safety
    ///
    /// Unless the code is bounds-checked, every array access that the kernel makes in this
    /// launch must be in bounds, and its `setmaxnreg` plan must balance (see
    /// [`Kernel::launch_unchecked`](crate::Kernel::launch_unchecked)).
    pub unsafe fn launch_unchecked(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<()> {
        let args = self.checked_args(device, grid, args)?;
        // SAFETY: the caller's promise covers unchecked code.
        unsafe { self.run(device, grid, &args) }
    }

    fn checked_args(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<Vec<ArgValue>> {
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
        Ok(args)
    }

    /// Runs `args`, already checked against the signature and the specialisation, after the
    /// checks that involve the kernel itself: its target and captured arrays fit the device, and
    /// no array it writes overlaps another. A failed bounds check is [`Error::Launch`], from
    /// here on the host backend, and from the next operation that waits for the device on CUDA.
    ///
    /// # Safety
    ///
    /// The code is bounds-checked, or every array access of this launch is in bounds.
    pub(super) unsafe fn run(&self, device: &Device, grid: Grid, args: &[ArgValue]) -> Result<()> {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.run_with(device, grid, args, false) }
    }

    /// [`run`](Self::run), with overlapping arrays let through where `allow_overlap` is set and
    /// the code was compiled for them ([`may_alias`](Self::may_alias)).
    ///
    /// # Safety
    ///
    /// As [`run`](Self::run); with `allow_overlap`, also the promise of
    /// [`Kernel::launch_aliased`](crate::Kernel::launch_aliased).
    pub(super) unsafe fn run_with(&self, device: &Device, grid: Grid, args: &[ArgValue], allow_overlap: bool) -> Result<()> {
        let threads = grid.threads_per_block();
        if let Some(max) = self.max_threads
            && threads > max as u64
        {
            return Err(Error::BadLaunch(format!(
                "kernel '{}' is declared with `max_threads = {max}`, and the launch's blocks have {threads} threads",
                self.name
            )));
        }
        if device.target() != self.target && !(device.is_cuda() && matches!(self.target, Target::Nvptx(_))) {
            return Err(Error::Device(format!("kernel '{}' was compiled for {}, not for {}", self.name, self.target, device.describe())));
        }
        // Baked captures, or the arrays bound to the slots of a relocatable kernel.
        let captured = &self.captured;
        for c in captured {
            if c.desc.location() != device.location() {
                return Err(launch::wrong_device(&self.name, format!("captured array {}", c.origin), c.desc.location(), device));
            }
        }
        // Code compiled for overlapping arrays runs them only from `launch_aliased`.
        if !(allow_overlap && self.may_alias) {
            launch::check_aliasing(&self.name, &self.signature, args, captured)?;
        }
        let slots = launch::param_slots(&self.name, &self.abi, args)?;
        match device.cuda_impl() {
            None => {
                let m = self.host_module()?;
                let code = launch::HostKernel {
                    entry: m.entry(),
                    static_shared: self.static_shared,
                    cooperative: self.cooperative,
                    stack: m.stack_bytes(),
                };
                // SAFETY: `m` owns the entry's code and outlives the launch; `slots` holds one value
                // per flattened parameter of this kernel's ABI, checked against its signature and
                // for aliasing; the code is bounds-checked or the caller vouched for every access.
                unsafe { launch::run_host(code, &grid, &slots, &self.faults) }
            }
            Some(dev) => {
                let addresses = super::slots::slot_addresses(&self.name, &self.slots)?;
                let f = self.cuda_function(dev)?;
                let queues = launch::queues_of(args).chain(captured.iter().filter_map(|c| c.desc.queue())).collect();
                let cuda = launch::CudaLaunch { faults: &self.faults, queues, checked: self.checked, captured: &addresses };
                // SAFETY: `f` is this kernel's code, `slots` its checked parameters; the code is
                // bounds-checked or the caller vouched for every access.
                unsafe { launch::run_cuda(dev, &f, &grid, &slots, cuda) }
            }
        }
    }
}
