//! Where an array's memory lives: a leaf that errors, captures and the runtime all name.

use std::fmt;

/// Where an array's memory lives, which decides how a kernel takes it: plain host memory is
/// copied into the code as a constant (like a numpy array a numba kernel captures), while a
/// device's memory, the host backend's included, is captured by its address (like a numba
/// device array).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Location {
    /// Ordinary host memory that no kache device owns (a `Vec`, a numpy-style buffer, a DLPack
    /// `kDLCPU` tensor): captured as a constant (copied when bound), passed as an argument only
    /// to kernels on the host backend, which runs in this address space.
    HostMemory,
    /// Device memory of host backend device `index` ([`Device::host_device`](crate::Device::host_device);
    /// [`Device::host`](crate::Device::host) is index 0), whose arrays are
    /// [`DeviceArray`](crate::DeviceArray)s like a GPU's: captured by address, as CUDA device
    /// memory is.
    HostBackend(u64),
    /// Device memory of CUDA device `ordinal`.
    Cuda(usize),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::HostMemory => f.write_str("host memory"),
            Location::HostBackend(index) => write!(f, "host backend device {index}"),
            Location::Cuda(o) => write!(f, "CUDA device {o}"),
        }
    }
}
