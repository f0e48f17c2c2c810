//! Faults of bounds-checked kernels: the record a failing check writes (laid out as
//! `abi::fault_layout` says) and how it becomes an [`Error::Launch`] naming the kernel, the
//! array, the index, the length and the source location.

use std::sync::Arc;

use crate::abi::fault_layout as L;
use crate::error::Error;

/// The record a failed bounds check writes: the first failing thread sets `flag` with a
/// compare-and-swap, then writes the rest.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Zeroable, bytemuck::Pod)]
pub(crate) struct FaultRecord {
    pub flag: u32,
    pub site: u32,
    pub dim: u32,
    pub token: u32,
    pub index: u64,
    pub len: u64,
}

const _: () = {
    assert!(std::mem::offset_of!(FaultRecord, flag) as u64 == L::FLAG);
    assert!(std::mem::offset_of!(FaultRecord, site) as u64 == L::SITE);
    assert!(std::mem::offset_of!(FaultRecord, dim) as u64 == L::DIM);
    assert!(std::mem::offset_of!(FaultRecord, token) as u64 == L::TOKEN);
    assert!(std::mem::offset_of!(FaultRecord, index) as u64 == L::INDEX);
    assert!(std::mem::offset_of!(FaultRecord, len) as u64 == L::LEN);
    assert!(std::mem::size_of::<FaultRecord>() as u64 == L::SIZE);
};

/// One bounds-checked access, described for messages, or one `unwrap()`/`expect(..)`.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct SiteInfo {
    /// The array: "parameter `x`", "captured array global 'G'", "shared array", ...; for an
    /// `unwrap` site (`ndim` 0), what failed.
    pub array: String,
    /// Its dimensions (the dimension is named only for arrays of more than one); 0 for an
    /// `unwrap` site (a 0-d array's access has no check, so no bounds site has 0).
    pub ndim: usize,
    /// `file:line:col` of the access, when the kernel's source is known.
    pub location: Option<String>,
}

/// What a kernel's fault records are reported with: its name and its sites, numbered as
/// `abi::bounds_sites` numbers them.
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct FaultSites {
    pub kernel: String,
    pub sites: Vec<SiteInfo>,
}

impl FaultSites {
    /// The error a record stands for.
    pub(crate) fn error(&self, rec: &FaultRecord) -> Error {
        if rec.dim >= L::MISALIGNED {
            let (array, location) = match self.sites.get(rec.site as usize) {
                Some(s) => (s.array.clone(), s.location.clone()),
                None => (format!("the array of check #{} (a deserialised kernel does not carry its source)", rec.site), None),
            };
            let problem = match rec.dim & !0xffff {
                L::MISALIGNED => format!("is not aligned to {} bytes", rec.dim & 0xffff),
                L::TMA_COLUMN => format!(
                    "cannot receive the tensor copy's box at column {}: a box starts at a multiple of {} elements (16 bytes) of a row",
                    rec.len as i64,
                    rec.dim & 0xffff
                ),
                L::NOT_SHARED => "is not in shared memory".to_string(),
                _ => "is not in global memory".to_string(),
            };
            return Error::BadAccess { kernel: self.kernel.clone(), array, index: rec.index, problem, location };
        }
        if let Some(s) = self.sites.get(rec.site as usize)
            && s.ndim == 0
        {
            return Error::Panic { kernel: self.kernel.clone(), message: s.array.clone(), location: s.location.clone() };
        }
        let (array, location) = match self.sites.get(rec.site as usize) {
            Some(s) if s.ndim > 1 => (format!("dimension {} of {}", rec.dim, s.array), s.location.clone()),
            Some(s) => (s.array.clone(), s.location.clone()),
            None => (format!("the array of bounds check #{} (a deserialised kernel does not carry its source)", rec.site), None),
        };
        Error::Launch { kernel: self.kernel.clone(), array, index: rec.index, len: rec.len, location }
    }
}

/// Kernels registered with a device for fault reports, by token (a CUDA launch passes its
/// kernel's token, which the record carries back).
#[derive(Default)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) struct Registry {
    kernels: Vec<std::sync::Weak<FaultSites>>,
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
impl Registry {
    /// The token of `sites`, registering it in a free slot if it has none.
    pub(crate) fn token(&mut self, sites: &Arc<FaultSites>) -> u32 {
        if let Some(i) = self.kernels.iter().position(|w| w.strong_count() > 0 && std::ptr::eq(w.as_ptr(), Arc::as_ptr(sites))) {
            return i as u32;
        }
        let slot = match self.kernels.iter().position(|w| w.strong_count() == 0) {
            Some(i) => i,
            None => {
                self.kernels.push(std::sync::Weak::new());
                self.kernels.len() - 1
            }
        };
        self.kernels[slot] = Arc::downgrade(sites);
        slot as u32
    }

    /// The error a record stands for, with its kernel found by token.
    pub(crate) fn error(&self, rec: &FaultRecord) -> Error {
        match self.kernels.get(rec.token as usize).and_then(std::sync::Weak::upgrade) {
            Some(sites) => sites.error(rec),
            None => FaultSites { kernel: "(a kernel since dropped)".into(), sites: Vec::new() }.error(rec),
        }
    }
}
