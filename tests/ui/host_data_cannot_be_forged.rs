//! Constant data and the shape kernels index it by always agree: only kache makes HostData.
use std::sync::Arc;

fn main() {
    let _ = kache::capture::HostData {
        elem: kache::Scalar::F32,
        shape: vec![1 << 20],
        strides: vec![1],
        layout: kache::Layout::C,
        bytes: Arc::from(vec![0u8; 4]),
        hash: [0; 32],
    };
}
