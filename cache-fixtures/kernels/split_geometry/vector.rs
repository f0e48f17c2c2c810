//! Vectors for `split_kernels.rs`, a module below `split_geometry`.

use super::SCALE;

#[derive(Clone, Copy)]
pub enum Vec2 {
    Horizontal,
    Diagonal,
}

pub fn dot(x: f32, y: f32, v: Vec2) -> f32 {
    match v {
        Vec2::Horizontal => x,
        Vec2::Diagonal => (x + y) * 0.5,
    }
}

pub fn length2(x: f32, y: f32) -> f32 {
    (x * x + y * y) / SCALE
}
