// Every index builtin, in x, y and z: each thread of a 3-d launch records what it sees.
// `ids` has shape [threads, 12]; `gid` has shape [threads, 3].
#[kernel]
pub fn record_indices(ids: &mut Array<u32, 2>, gid: &mut Array<usize, 2>) {
    let bx = block_dim_x();
    let by = block_dim_y();
    let bz = block_dim_z();
    let t_in_block = (thread_idx_z() * by + thread_idx_y()) * bx + thread_idx_x();
    let block = (block_idx_z() * grid_dim_y() + block_idx_y()) * grid_dim_x() + block_idx_x();
    let linear = (block * bx * by * bz + t_in_block) as usize;
    if linear < ids.shape(0) {
        ids[[linear, 0]] = thread_idx_x();
        ids[[linear, 1]] = thread_idx_y();
        ids[[linear, 2]] = thread_idx_z();
        ids[[linear, 3]] = block_idx_x();
        ids[[linear, 4]] = block_idx_y();
        ids[[linear, 5]] = block_idx_z();
        ids[[linear, 6]] = block_dim_x();
        ids[[linear, 7]] = block_dim_y();
        ids[[linear, 8]] = block_dim_z();
        ids[[linear, 9]] = grid_dim_x();
        ids[[linear, 10]] = grid_dim_y();
        ids[[linear, 11]] = grid_dim_z();
        gid[[linear, 0]] = global_id_x();
        gid[[linear, 1]] = global_id_y();
        gid[[linear, 2]] = global_id_z();
    }
}

// A 3-d launch that fills a 3-d array with its own coordinates, guarded for sizes that are
// not multiples of the block.
#[kernel]
pub fn fill_coords_3d(out: &mut Array<u32, 3>) {
    let x = global_id_x();
    let y = global_id_y();
    let z = global_id_z();
    if z < out.shape(0) && y < out.shape(1) && x < out.shape(2) {
        out[[z, y, x]] = (z * 10000 + y * 100 + x) as u32;
    }
}
