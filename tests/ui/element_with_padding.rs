//! An Element is copied to devices as bytes: without bytemuck's guarantee that all its bytes are
//! initialised (which its derive refuses for a type with padding, like this one), a type is not
//! an Element.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
struct Padded {
    a: u8,
    b: u32,
}

impl kache::Element for Padded {
    const SCALAR: kache::Scalar = kache::Scalar::U64;
    fn to_value(self) -> kache::ir::ScalarValue {
        kache::ir::ScalarValue::Int(kache::Scalar::U64, self.b as u64)
    }
}

fn main() {}
