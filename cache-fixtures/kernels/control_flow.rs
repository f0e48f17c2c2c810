// Control flow: if/else as an expression, while, loop with break value, for over a..b, a..=b
// and (a..b).step_by(s), labelled break/continue, early return, blocks with tail expressions.

// Sign as an if/else-if chain used as a value.
fn sign(x: i32) -> i32 {
    if x > 0 {
        1
    } else if x < 0 {
        -1
    } else {
        0
    }
}

#[kernel]
pub fn if_else_expr(x: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i >= x.len() {
        return;
    }
    let v = x[i];
    let magnitude = if v >= 0 { v } else { -v };
    out[i] = sign(v) * 1000 + if magnitude > 100 { 100 } else { magnitude };
}

// Sum 1..=n, sum of a..b with a step, in three loop forms that must agree.
#[kernel]
pub fn loop_forms(n: &[u32], out: &mut Array<u64, 2>) {
    let i = global_id_x();
    if i < n.len() {
        let m = n[i];
        let mut s1: u64 = 0;
        for k in 1..=m {
            s1 += k as u64;
        }
        let mut s2: u64 = 0;
        let mut k = 0u32;
        while k < m {
            k += 1;
            s2 += k as u64;
        }
        let mut k3 = m;
        let s3 = loop {
            if k3 == 0 {
                break 0u64;
            }
            let mut acc = 0u64;
            while k3 > 0 {
                acc += k3 as u64;
                k3 -= 1;
            }
            break acc;
        };
        let mut s4: u64 = 0;
        for k in (0..m + 1).step_by(3) {
            s4 += k as u64;
        }
        let mut s5: u64 = 0;
        for k in (2..=m).step_by(2) {
            s5 += k as u64;
        }
        out[[i, 0]] = s1;
        out[[i, 1]] = s2;
        out[[i, 2]] = s3;
        out[[i, 3]] = s4;
        out[[i, 4]] = s5;
    }
}

// First (row, col) in a 2-d array equal to `target`, with labelled break and continue:
// rows whose first element is negative are skipped.
#[kernel]
pub fn labelled_search(a: &Array<i32, 2>, targets: &[i32], found: &mut Array<i64, 2>) {
    let t = global_id_x();
    if t >= targets.len() {
        return;
    }
    let target = targets[t];
    let mut r: i64 = -1;
    let mut c: i64 = -1;
    'rows: for i in 0..a.shape(0) {
        if a[[i, 0]] < 0 {
            continue 'rows;
        }
        let mut j = 0;
        'cols: loop {
            if j >= a.shape(1) {
                break 'cols;
            }
            if a[[i, j]] == target {
                r = i as i64;
                c = j as i64;
                break 'rows;
            }
            j += 1;
        }
    }
    found[[t, 0]] = r;
    found[[t, 1]] = c;
}

// Counts primes below n[i] with a labelled continue out of the inner loop.
#[kernel]
pub fn count_primes(n: &[u32], out: &mut [u32]) {
    let i = global_id_x();
    if i < n.len() {
        let mut count = 0;
        'cand: for p in 2..n[i] {
            let mut d = 2;
            while d * d <= p {
                if p % d == 0 {
                    continue 'cand;
                }
                d += 1;
            }
            count += 1;
        }
        out[i] = count;
    }
}

// Blocks with tail expressions, nested, as values.
#[kernel]
pub fn block_tails(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        let y = {
            let a = x[i] * 2.0;
            let b = {
                let c = a + 1.0;
                c * c
            };
            b - a
        };
        out[i] = y;
    }
}

// `return` from inside nested loops in a device function.
fn first_multiple(x: &[i32], of: i32) -> i64 {
    for i in 0..x.len() {
        let mut k = 0;
        while k < 1 {
            if of != 0 && x[i] % of == 0 {
                return i as i64;
            }
            k += 1;
        }
    }
    -1
}

#[kernel]
pub fn early_return(x: &[i32], of: &[i32], out: &mut [i64]) {
    let i = global_id_x();
    if i < of.len() {
        out[i] = first_multiple(x, of[i]);
    }
}

// Ranges that end at the top of their type stop there (no wrap-around), like Rust's
// iterators; every loop is capped so that a wrong implementation still terminates.
#[kernel]
pub fn ranges_near_max(out: &mut [u32]) {
    if global_id_x() == 0 {
        let mut n = 0u32;
        for _k in u32::MAX - 3..=u32::MAX {
            n += 1;
            if n > 100 {
                break;
            }
        }
        out[0] = n;
        let mut n = 0u32;
        for _k in (u32::MAX - 10..u32::MAX).step_by(4) {
            n += 1;
            if n > 100 {
                break;
            }
        }
        out[1] = n;
        let mut s = 0u32;
        let mut guard = 0;
        for k in (0..=10u32).step_by(5) {
            s += k + 1;
            guard += 1;
            if guard > 100 {
                break;
            }
        }
        out[2] = s;
        let mut n = 0u32;
        for _k in i32::MAX - 2..=i32::MAX {
            n += 1;
            if n > 100 {
                break;
            }
        }
        out[3] = n;
    }
}
