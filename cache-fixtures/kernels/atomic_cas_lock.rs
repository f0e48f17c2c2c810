// atomic_cas: compare-and-swap loops that build other atomics, and first-come slot claims.

// Integer add built from CAS; returns the value before the add.
fn cas_add_u64(a: &mut [u64], i: usize, v: u64) -> u64 {
    let mut old = a[i];
    loop {
        let seen = atomic_cas(&mut a[i], old, old + v);
        if seen == old {
            break seen;
        }
        old = seen;
    }
}

#[kernel]
pub fn cas_counter(n: usize, counter: &mut [u64], tickets: &mut [u64]) {
    let i = global_id_x();
    if i < n {
        tickets[i] = cas_add_u64(counter, 0, 1);
    }
}

// Float maximum built from CAS on f32 elements.
#[kernel]
pub fn cas_float_max(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        let v = x[i];
        let mut cur = out[0];
        while v > cur {
            let seen = atomic_cas(&mut out[0], cur, v);
            if seen == cur {
                break;
            }
            cur = seen;
        }
    }
}

// Each thread tries to claim slot `key % slots`; the winner records its id (CAS on i32 from -1).
#[kernel]
pub fn claim_slots(keys: &[i32], owner: &mut [i32], won: &mut [i32]) {
    let i = global_id_x();
    if i < keys.len() {
        let s = (keys[i] as usize) % owner.len();
        let prev = atomic_cas(&mut owner[s], -1, i as i32);
        won[i] = if prev == -1 { 1 } else { 0 };
    }
}

// CAS on i64 and u32 and f64 elements, single thread per element: swap only where expected.
#[kernel]
pub fn cas_types(a: &mut [i64], b: &mut [u32], c: &mut [f64], olds: &mut [i64]) {
    let i = global_id_x();
    if i < a.len() {
        let expect = if i % 2 == 0 { a[i] } else { a[i] + 1 };
        olds[i] = atomic_cas(&mut a[i], expect, 100 + i as i64);
        atomic_cas(&mut b[i], i as u32, 7);
        atomic_cas(&mut c[i], 1.5, -2.5);
    }
}
