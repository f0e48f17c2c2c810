//! The CUDA backend's interface when kache is built without its `cuda` feature: no driver is
//! ever loaded, [`open`] says how to get CUDA support, and no value of the device, buffer and
//! function types can exist, so the code that would use one compiles and never runs.

use crate::error::{Error, Result};
use crate::target::Arch;

/// No value of this type exists.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Never {}

/// Whether the driver library can be loaded: never, without the `cuda` feature.
pub(crate) fn driver_present() -> bool {
    false
}

/// Always an error: CUDA support is not compiled in.
pub(crate) fn open(_ordinal: usize) -> Result<CudaDevice> {
    Err(not_compiled_in())
}

/// Always an error: CUDA support is not compiled in.
pub(crate) fn device_count() -> Result<usize> {
    Err(not_compiled_in())
}

fn not_compiled_in() -> Error {
    Error::Config(
        "kache was built without its `cuda` feature, so it cannot open a CUDA device; \
         enable the feature (kache = { features = [\"cuda\"] }) or use Device::host()"
            .into(),
    )
}

/// An open CUDA device (none can be opened).
#[derive(Debug)]
pub(crate) struct CudaDevice {
    never: Never,
    pub ordinal: usize,
    pub name: String,
    pub arch: Arch,
    pub compute_capability: (i32, i32),
    pub driver_version: i32,
    pub multiprocessors: u32,
}

impl CudaDevice {
    // Only the JIT's cubin tier keys by it.
    #[cfg_attr(not(feature = "compiler"), allow(dead_code))]
    pub fn machine_arch(&self) -> Arch {
        match self.never {}
    }

    pub fn alloc(&self, _len: usize) -> Result<CudaBuffer> {
        match self.never {}
    }

    pub fn synchronize(&self) -> Result<()> {
        match self.never {}
    }

    pub fn time(&self, _run: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        match self.never {}
    }

    /// # Safety
    ///
    /// None can be called: no device exists.
    pub unsafe fn read_raw(&self, _ptr: u64, _dst: &mut [u8]) -> Result<()> {
        match self.never {}
    }

    /// # Safety
    ///
    /// None can be called: no device exists.
    pub unsafe fn write_raw(&self, _ptr: u64, _src: &[u8]) -> Result<()> {
        match self.never {}
    }

    pub fn load_ptx(&self, _ptx: &str, _entry: &str) -> Result<(LoadedFunction, Option<Vec<u8>>)> {
        match self.never {}
    }

    pub fn load_image(&self, _image: &[u8], _entry: &str) -> Result<LoadedFunction> {
        match self.never {}
    }

    pub fn fault_target(&self, _sites: &std::sync::Arc<super::fault::FaultSites>) -> (u64, u32) {
        match self.never {}
    }

    pub fn check_faults(&self) -> Result<()> {
        match self.never {}
    }

    pub fn launch(
        &self,
        _f: &LoadedFunction,
        _grid: &super::Grid,
        _params: &mut [*mut std::ffi::c_void],
        _queues: &[&crate::capture::ForeignQueue],
        _checked: bool,
    ) -> Result<()> {
        match self.never {}
    }
}

/// Device memory (none can be allocated).
pub(crate) struct CudaBuffer {
    never: Never,
}

impl CudaBuffer {
    pub fn ptr(&self) -> u64 {
        match self.never {}
    }

    pub fn len(&self) -> usize {
        match self.never {}
    }

    pub fn write(&self, _at: usize, _src: &[u8]) -> Result<()> {
        match self.never {}
    }

    pub fn read(&self, _at: usize, _dst: &mut [u8]) -> Result<()> {
        match self.never {}
    }
}

/// A loaded kernel function (none can be loaded).
pub(crate) struct LoadedFunction {
    never: Never,
}

impl std::fmt::Debug for LoadedFunction {
    fn fmt(&self, _f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.never {}
    }
}

/// Never called: no device exists.
pub(crate) fn encode_tiled_2d(dev: &CudaDevice, _elem: crate::ir::Scalar, _m: &crate::host_calls::HostTensorMap) -> Result<Vec<u8>> {
    match dev.never {}
}
