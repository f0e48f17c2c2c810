//! A kernel split across files: the geometry lives in `split_geometry/mod.rs` and its
//! submodule `split_geometry/vector.rs`, named by `use` (a group and a rename) and by paths.

mod split_geometry;

use split_geometry::vector::{Vec2, dot as dot2};
use split_geometry::{Shape, area};

#[kernel]
pub fn areas(w: &[f32], h: &[f32], kind: Shape, out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = area(kind, w[i], h[i]) * split_geometry::SCALE;
    }
}

#[kernel]
pub fn projections(x: &[f32], y: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let v = Vec2::Diagonal;
        out[i] = dot2(x[i], y[i], v) + split_geometry::vector::length2(x[i], y[i]);
    }
}
