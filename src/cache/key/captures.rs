//! The `captures` component of the key: each captured value's identity. Host values by
//! content; device arrays baked into the code by their pointer, extents and strides (such
//! kernels are never persisted, so the pointer only tells apart kernels of this process);
//! device arrays compiled relocatably by what the code holds of them, their type, extents and
//! strides, never their address ([`encode_relocatable`]).
//!
//! Like the program encoding, every struct is destructured exhaustively, so a new field does
//! not compile until it is keyed or skipped here with its reason.

use crate::capture::{ArrayDesc, CaptureValue, HostData, Location};

/// Writes `v`'s identity into `out`.
pub fn encode_capture(v: &CaptureValue, out: &mut Vec<u8>) {
    out.push(value_tag(v));
    match v {
        CaptureValue::Scalar(s) => {
            out.push(s.ty().tag());
            out.extend_from_slice(&s.bits().to_le_bytes());
        }
        CaptureValue::Host(h) => {
            // The elements are keyed by their hash, computed once when the value was bound.
            let HostData { elem, shape, strides, layout, bytes: _, hash } = &**h;
            out.push(elem.tag());
            out.push(layout.tag());
            extents(out, shape, strides);
            out.extend_from_slice(hash);
        }
        CaptureValue::Device(d) => {
            let ArrayDesc {
                elem,
                shape,
                strides,
                // Follows from the strides, which are keyed.
                layout: _,
                ptr,
                read_only,
                location,
                // Keeps the memory alive; not part of what the array is.
                owner: _,
                // Orders the producer's stream around launches; changes no code.
                queue: _,
            } = d;
            out.push(elem.tag());
            out.push(*read_only as u8);
            out.extend_from_slice(&ptr.to_le_bytes());
            out.push(location_tag(*location));
            let id = match *location {
                Location::HostMemory => 0,
                Location::HostBackend(id) => id,
                Location::Cuda(ordinal) => ordinal as u64,
            };
            out.extend_from_slice(&id.to_le_bytes());
            extents(out, shape, strides);
        }
    }
}

/// Writes what the code of a relocatable capture depends on: the slot that stands for its
/// address (a tag of its own, so a baked and a relocatable kernel never share a key), the
/// element type, read-only, extents and strides. Not the address and not the device, which
/// the code does not hold: a later process binds its own array of the same type and shape.
pub fn encode_relocatable(d: &ArrayDesc, out: &mut Vec<u8>) {
    let ArrayDesc {
        elem,
        shape,
        strides,
        // Follows from the strides, which are keyed.
        layout: _,
        // The loader puts it in the slot; the code does not hold it.
        ptr: _,
        read_only,
        // Any device of the target: checked at launch, not compiled in.
        location: _,
        // Keeps the memory alive; not part of what the array is.
        owner: _,
        // How launches order work around the memory; not part of what the array is.
        queue: _,
    } = d;
    out.push(3);
    out.push(elem.tag());
    out.push(*read_only as u8);
    extents(out, shape, strides);
}

fn extents(out: &mut Vec<u8>, shape: &[usize], strides: &[isize]) {
    out.extend_from_slice(&(shape.len() as u64).to_le_bytes());
    for (d, s) in shape.iter().zip(strides) {
        out.extend_from_slice(&(*d as u64).to_le_bytes());
        out.extend_from_slice(&(*s as i64).to_le_bytes());
    }
}

fn value_tag(v: &CaptureValue) -> u8 {
    match v {
        CaptureValue::Scalar(_) => 0,
        CaptureValue::Host(_) => 1,
        CaptureValue::Device(_) => 2,
    }
}

fn location_tag(l: Location) -> u8 {
    match l {
        Location::HostMemory => 0,
        Location::HostBackend(_) => 1,
        Location::Cuda(_) => 2,
    }
}
