//! A pointer for a kernel comes only from an (unsafe) ArrayInterface, never from safe code.
use std::sync::Arc;

fn main() {
    let desc = kache::capture::ArrayDesc {
        elem: kache::Scalar::F32,
        shape: vec![1 << 20],
        strides: vec![1],
        layout: kache::Layout::C,
        ptr: 0x1000,
        read_only: false,
        location: kache::Device::host().location(),
        owner: Arc::new(()),
    };
    let _ = kache::ArgValue::Array { desc, writable: true };
}
