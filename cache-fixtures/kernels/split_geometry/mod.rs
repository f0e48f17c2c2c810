//! Shared geometry for `split_kernels.rs`.

pub mod vector;

pub const SCALE: f32 = 2.0;

/// An unused item: editing it keeps the kernels' keys.
pub const UNUSED: f32 = 123.0;

#[derive(Clone, Copy, PartialEq)]
#[repr(u8)]
pub enum Shape {
    Rectangle,
    Triangle,
    Ellipse,
}

pub fn area(s: Shape, w: f32, h: f32) -> f32 {
    match s {
        Shape::Rectangle => w * h,
        Shape::Triangle => 0.5 * w * h,
        Shape::Ellipse => f32::consts::FRAC_PI_4 * w * h,
    }
}

pub fn unused_helper(x: f32) -> f32 {
    x * UNUSED
}
