//! `ForeignArray`: wraps another array and exposes nothing but the `ArrayInterface` (as
//! numba-cuda's tests do with their ForeignArray), so foreign producers are tested. It can
//! report when the memory's owner is dropped, and can present the array as read-only.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kache::ArrayInterface;
use kache::capture::{Location, Owner};
use kache::ir::Scalar;

struct Recorder {
    _inner: Owner,
    dropped: Arc<AtomicBool>,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

/// An array known only through its interface.
pub struct ForeignArray {
    ptr: u64,
    shape: Vec<usize>,
    strides: Option<Vec<isize>>,
    elem: Scalar,
    read_only: bool,
    location: Location,
    owner: Arc<Recorder>,
}

impl ForeignArray {
    /// Wraps `a` (its owner is kept inside the foreign array's own owner).
    pub fn wrap(a: &dyn ArrayInterface) -> ForeignArray {
        ForeignArray {
            ptr: a.data_ptr(),
            shape: a.shape(),
            strides: a.strides(),
            elem: a.elem(),
            read_only: a.read_only(),
            location: a.location(),
            owner: Arc::new(Recorder { _inner: a.owner(), dropped: Arc::new(AtomicBool::new(false)) }),
        }
    }

    /// The same array, presented as read-only.
    pub fn read_only(mut self) -> ForeignArray {
        self.read_only = true;
        self
    }

    /// Set once the owner (and so the memory, if nothing else holds it) is dropped.
    pub fn drop_flag(&self) -> Arc<AtomicBool> {
        self.owner.dropped.clone()
    }

    /// As a trait object, for `with_global`, factory arguments and kernel arguments.
    pub fn iface(&self) -> &dyn ArrayInterface {
        self
    }
}

// SAFETY: every field is copied from the wrapped array's interface, whose owner the recorder
// keeps, so each promise of the wrapped implementation carries over; `read_only` only narrows
// what kache may do.
unsafe impl ArrayInterface for ForeignArray {
    fn data_ptr(&self) -> u64 {
        self.ptr
    }
    fn shape(&self) -> Vec<usize> {
        self.shape.clone()
    }
    fn strides(&self) -> Option<Vec<isize>> {
        self.strides.clone()
    }
    fn elem(&self) -> Scalar {
        self.elem
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn location(&self) -> Location {
        self.location
    }
    fn owner(&self) -> Owner {
        self.owner.clone()
    }
}
