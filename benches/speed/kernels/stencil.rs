//! The speed corpus's stencils in kache (benches/speed/): a 5-point 2-D and a 7-point 3-D
//! Jacobi step; their CUDA C twins are in stencil.cu beside this file.

const C0: f32 = 0.5;
const C1: f32 = 0.125;
const D0: f32 = 0.4;
const D1: f32 = 0.1;

// v = one Jacobi step of u on a 2-D grid, a thread per point; the border is copied.
#[kernel]
pub fn stencil2d(u: &Array<f32, 2>, v: &mut Array<f32, 2>) {
    let i = global_id_y();
    let j = global_id_x();
    let (ny, nx) = (u.shape(0), u.shape(1));
    if i < ny && j < nx {
        v[[i, j]] = if i > 0 && j > 0 && i + 1 < ny && j + 1 < nx {
            C0 * u[[i, j]] + C1 * (u[[i - 1, j]] + u[[i + 1, j]] + u[[i, j - 1]] + u[[i, j + 1]])
        } else {
            u[[i, j]]
        };
    }
}

// v = one Jacobi step of u on a 3-D grid, a thread per point; the border is copied.
#[kernel]
pub fn stencil3d(u: &Array<f32, 3>, v: &mut Array<f32, 3>) {
    let k = global_id_z();
    let i = global_id_y();
    let j = global_id_x();
    let (nz, ny, nx) = (u.shape(0), u.shape(1), u.shape(2));
    if k < nz && i < ny && j < nx {
        v[[k, i, j]] = if k > 0 && i > 0 && j > 0 && k + 1 < nz && i + 1 < ny && j + 1 < nx {
            D0 * u[[k, i, j]]
                + D1 * (u[[k - 1, i, j]] + u[[k + 1, i, j]] + u[[k, i - 1, j]] + u[[k, i + 1, j]] + u[[k, i, j - 1]] + u[[k, i, j + 1]])
        } else {
            u[[k, i, j]]
        };
    }
}
