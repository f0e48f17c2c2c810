//! Kernels read and write what an ArrayInterface describes: implementing it is a promise.
struct Claims;

impl kache::ArrayInterface for Claims {
    fn data_ptr(&self) -> u64 {
        0x1000
    }
    fn shape(&self) -> Vec<usize> {
        vec![1 << 20]
    }
    fn strides(&self) -> Option<Vec<isize>> {
        None
    }
    fn elem(&self) -> kache::Scalar {
        kache::Scalar::F32
    }
    fn read_only(&self) -> bool {
        false
    }
    fn location(&self) -> kache::Location {
        kache::Device::host().location()
    }
    fn owner(&self) -> kache::capture::Owner {
        std::sync::Arc::new(())
    }
}

fn main() {}
