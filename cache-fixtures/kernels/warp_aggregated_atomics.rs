// Warp-aggregated atomics: the lanes that keep an element elect a leader, which reserves room
// for all of them with one atomic_add; each lane then writes at the leader's base plus its
// rank among the keepers. Also every atomic read-modify-write on global and shared memory.
#[kernel]
pub fn keep_positive(x: &[i32], out: &mut [i32], count: &mut [u32]) {
    let i = global_id_x();
    if i < x.len() && x[i] > 0 {
        let active = activemask();
        let lane = lane_id();
        let leader = active.trailing_zeros();
        let mut base = 0u32;
        if lane == leader {
            base = atomic_add(&mut count[0], active.count_ones());
        }
        base = shfl_sync(active, base, leader);
        let below = if lane == 0 { 0 } else { active & (u32::MAX >> (32 - lane)) };
        out[(base + below.count_ones()) as usize] = x[i];
    }
}

// Each thread applies every integer atomic to global u32 and i64 cells and to a shared u32
// cell, whose final value thread 0 publishes.
#[kernel]
pub fn int_atomics(v: &[u32], g32: &mut [u32], g64: &mut [i64], olds: &mut [u32]) {
    let s = shared_array::<u32, 4>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    if t < 4 {
        s[t] = if t == 1 { u32::MAX } else { 0 };
    }
    sync_threads();
    let x = v[i];
    atomic_sub(&mut g32[0], x);
    atomic_and(&mut g32[1], !(1u32 << (x % 32)));
    atomic_or(&mut g32[2], 1u32 << (x % 32));
    atomic_xor(&mut g32[3], x);
    olds[i] = atomic_inc(&mut g32[4], 9);
    atomic_dec(&mut g32[5], 6);
    atomic_max(&mut g32[6], x);
    atomic_min(&mut g32[7], x);
    atomic_add(&mut g64[0], x as i64 - 50);
    atomic_sub(&mut g64[1], x as i64);
    atomic_xor(&mut g64[2], (x as i64) << 33);
    atomic_or(&mut g64[3], 1i64 << (x % 64));
    atomic_and(&mut g64[4], !(1i64 << (x % 64)));
    atomic_min(&mut g64[5], x as i64 - 1000);
    atomic_add(&mut s[0], x);
    atomic_and(&mut s[1], !(1u32 << (x % 32)));
    atomic_inc(&mut s[2], 1000);
    atomic_xor(&mut s[3], x);
    sync_threads();
    if t == 0 {
        atomic_add(&mut g32[8], s[0]);
        atomic_and(&mut g32[9], s[1]);
        atomic_add(&mut g32[10], s[2]);
        atomic_xor(&mut g32[11], s[3]);
    }
}

// Exchanges and float atomics: the last writer's value stays, and the old values of all the
// exchanges are exactly the values written (each once).
#[kernel]
pub fn exch_and_float_atomics(v: &[f32], slot: &mut [f32], olds: &mut [f32], g64: &mut [f64], s_out: &mut [f64]) {
    let sh = shared_array::<f64, 2>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    if t == 0 {
        sh[0] = 0.0;
        sh[1] = f64::INFINITY;
    }
    sync_threads();
    olds[i] = atomic_exch(&mut slot[0], v[i]);
    atomic_add(&mut g64[0], v[i] as f64);
    atomic_max(&mut g64[1], v[i] as f64);
    atomic_exch(&mut g64[2], 2.5);
    atomic_add(&mut sh[0], v[i] as f64);
    atomic_min(&mut sh[1], v[i] as f64);
    sync_threads();
    if t == 0 {
        atomic_add(&mut s_out[0], sh[0]);
        atomic_min(&mut s_out[1], sh[1]);
    }
}

// The last block to finish sums every block's partial: its partial is published, a fence
// orders it before the ticket, and atomic_inc's wrap returns the counter to 0 for the next
// launch.
#[kernel]
pub fn last_block_sum(x: &[u32], partials: &mut [u32], ticket: &mut [u32], total: &mut [u32]) {
    let sums = shared_array::<u32, 1>();
    let t = thread_idx_x() as usize;
    let b = block_idx_x() as usize;
    if t == 0 {
        sums[0] = 0;
    }
    sync_threads();
    let i = global_id_x();
    if i < x.len() {
        atomic_add(&mut sums[0], x[i]);
    }
    sync_threads();
    if t == 0 {
        partials[b] = sums[0];
        threadfence();
        let done = atomic_inc(&mut ticket[0], grid_dim_x() - 1);
        if done == grid_dim_x() - 1 {
            threadfence_block();
            let mut s = 0u32;
            for k in 0..grid_dim_x() as usize {
                s += atomic_or(&mut partials[k], 0);
            }
            total[0] = s;
            threadfence_system();
        }
    }
}
