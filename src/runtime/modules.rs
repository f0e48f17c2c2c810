//! One kernel's code on CUDA devices: a module per device (its primary context), loaded once,
//! and the machine code those loads built or fetched, kept per compute capability, so that a
//! second GPU of the same architecture loads the same cubin instead of compiling it again.

use std::sync::{Arc, Mutex};

use super::cuda::{CudaDevice, LoadedFunction};
use crate::error::Result;

/// What loading a kernel's code on a device found or made.
pub(crate) struct Load<H> {
    /// The loaded module's kernel function.
    pub function: LoadedFunction,
    /// The cubin that was loaded, for this device's compute capability, where it is worth
    /// keeping for the next device of the same (not when the kernel holds it already).
    pub cubin: Option<Arc<[u8]>>,
    /// How the code was obtained.
    pub how: H,
}

/// A device's compute capability: (major, minor).
type ComputeCapability = (i32, i32);

/// A device's module, once loaded, and how its code was obtained.
type Slot<H> = Arc<Mutex<Option<(Arc<LoadedFunction>, H)>>>;

/// The cubin for one compute capability, once a load has built or fetched it; held while that
/// load runs, so that a second device of the same waits for it instead of building its own.
type CubinSlot = Arc<Mutex<Option<Arc<[u8]>>>>;

/// One kernel's modules, by device ordinal, and its cubins, by compute capability (a machine
/// has a few devices: lists, which a `const fn` can make). `H` says how a module's code was
/// obtained (the JIT's cache tiers, or the prebuilt code).
pub(crate) struct DeviceModules<H> {
    devices: Mutex<Vec<(usize, Slot<H>)>>,
    cubins: Mutex<Vec<(ComputeCapability, CubinSlot)>>,
}

impl<H> Default for DeviceModules<H> {
    fn default() -> Self {
        DeviceModules::new()
    }
}

impl<H> DeviceModules<H> {
    /// Nothing loaded yet.
    pub const fn new() -> Self {
        DeviceModules { devices: Mutex::new(Vec::new()), cubins: Mutex::new(Vec::new()) }
    }
}

impl<H: Clone> DeviceModules<H> {
    /// The cubin slot of compute capability `cc`, made on first use.
    fn cubin_slot(&self, cc: ComputeCapability) -> CubinSlot {
        let mut cubins = self.cubins.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, s)) = cubins.iter().find(|(c, _)| *c == cc) {
            return s.clone();
        }
        let s = CubinSlot::default();
        cubins.push((cc, s.clone()));
        s
    }

    /// The slot of device `ordinal`, made on first use.
    fn slot(&self, ordinal: usize) -> Slot<H> {
        let mut devices = self.devices.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, s)) = devices.iter().find(|(o, _)| *o == ordinal) {
            return s.clone();
        }
        let s = Slot::<H>::default();
        devices.push((ordinal, s.clone()));
        s
    }

    /// The module loaded on device `ordinal`, and how its code was obtained, if it is loaded.
    fn get(&self, ordinal: usize) -> Option<(Arc<LoadedFunction>, H)> {
        let devices = self.devices.lock().unwrap_or_else(|e| e.into_inner());
        let slot = devices.iter().find(|(o, _)| *o == ordinal)?.1.clone();
        drop(devices);
        let loaded = slot.lock().unwrap_or_else(|e| e.into_inner());
        loaded.clone()
    }

    /// The module loaded on device `ordinal`, if it is.
    pub fn loaded(&self, ordinal: usize) -> Option<Arc<LoadedFunction>> {
        self.get(ordinal).map(|(f, _)| f)
    }

    /// How the code of the module on device `ordinal` was obtained, if one is loaded there.
    // Only the JIT reports it (`CompiledKernel::loaded_on`).
    #[cfg_attr(not(feature = "compiler"), allow(dead_code))]
    pub fn how(&self, ordinal: usize) -> Option<H> {
        self.get(ordinal).map(|(_, how)| how)
    }

    /// The module on `dev`, loaded on first use: from the cubin an earlier load on a device of
    /// the same compute capability kept (`reused` then says how), else by `load`, whose cubin
    /// is kept for the next such device. Threads asking for the same device meanwhile wait
    /// for its load and share it; a device of the same compute capability waits for the load
    /// that builds or fetches the cubin, then loads that cubin; others load at the same time.
    pub fn get_or_load(
        &self,
        dev: &CudaDevice,
        entry: &str,
        reused: H,
        load: impl FnOnce() -> Result<Load<H>>,
    ) -> Result<Arc<LoadedFunction>> {
        let slot = self.slot(dev.ordinal);
        let mut loaded = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((f, _)) = &*loaded {
            return Ok(f.clone());
        }
        let cubin_slot = self.cubin_slot(dev.compute_capability);
        let mut cubin = cubin_slot.lock().unwrap_or_else(|e| e.into_inner());
        let (function, how) = match &*cubin {
            Some(known) => {
                let known = known.clone();
                drop(cubin);
                match dev.load_image(&known, entry) {
                    Ok(f) => (f, reused),
                    // A cubin of this compute capability that does not load here (it cannot
                    // happen unless the driver changed its mind) is rebuilt as on the first.
                    Err(_) => {
                        let new = load()?;
                        (new.function, new.how)
                    }
                }
            }
            None => {
                let new = load()?;
                *cubin = new.cubin;
                drop(cubin);
                (new.function, new.how)
            }
        };
        let function = Arc::new(function);
        *loaded = Some((function.clone(), how));
        Ok(function)
    }
}
