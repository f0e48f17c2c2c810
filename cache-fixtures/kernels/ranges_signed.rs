// Ranges over signed integers and empty ranges, side effects inside short-circuited operands
// (which must not run), and a labelled `while` left with `continue 'label`.
#[kernel]
pub fn signed_ranges(out: &mut [i64]) {
    if global_id_x() == 0 {
        let mut s = 0i64;
        let mut c = 0i64;
        for i in -3..3 {
            s += i as i64;
            c += 1;
        }
        out[0] = s;
        out[1] = c;
        let mut s2 = 0;
        for i in (-10i64..10).step_by(3) {
            s2 = s2 * 2 + i;
        }
        out[2] = s2;
        let mut e = 0;
        for _i in 5..2 {
            e += 1;
        }
        for _i in 7..=6 {
            e += 1;
        }
        out[3] = e;
        let x: u64 = 1 << 40;
        out[4] = x as i64;
        let mut counter = 0;
        let t = false && {
            counter += 1;
            true
        };
        let u = true || {
            counter += 10;
            false
        };
        out[5] = counter + t as i64 * 100 + u as i64 * 1000;
        let mut k = 0;
        let mut w = 0;
        'outer: while k < 10 {
            k += 1;
            let mut j = 0;
            while j < 10 {
                j += 1;
                if j == 3 {
                    continue 'outer;
                }
                w += 1;
            }
        }
        out[6] = w;
    }
}
