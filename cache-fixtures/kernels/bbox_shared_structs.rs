//! A shared array of structs: each block reduces its points to an axis-aligned bounding box
//! (a struct holding two nested `Point` structs) in shared memory, one box per block, with
//! methods merging two boxes.

const BLOCK: usize = 128;

#[derive(Clone, Copy)]
struct Point {
    x: f32,
    y: f32,
}

#[derive(Clone, Copy)]
struct Bbox {
    lo: Point,
    hi: Point,
    count: u32,
}

impl Bbox {
    fn empty() -> Bbox {
        Bbox { lo: Point { x: f32::MAX, y: f32::MAX }, hi: Point { x: f32::MIN, y: f32::MIN }, count: 0 }
    }

    fn of(p: Point) -> Bbox {
        Bbox { lo: p, hi: p, count: 1 }
    }

    fn merge(self, o: Bbox) -> Bbox {
        Bbox {
            lo: Point { x: self.lo.x.min(o.lo.x), y: self.lo.y.min(o.lo.y) },
            hi: Point { x: self.hi.x.max(o.hi.x), y: self.hi.y.max(o.hi.y) },
            count: self.count + o.count,
        }
    }
}

#[kernel]
pub fn block_bbox(xs: &[f32], ys: &[f32], out: &mut Array<f32, 2>, counts: &mut [u32]) {
    let boxes = shared_array::<Bbox, BLOCK>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    boxes[t] = if i < xs.len() { Bbox::of(Point { x: xs[i], y: ys[i] }) } else { Bbox::empty() };
    sync_threads();
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if t < stride {
            boxes[t] = boxes[t].merge(boxes[t + stride]);
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        let b = block_idx_x() as usize;
        let Bbox { lo, hi, count } = boxes[0];
        out[[b, 0]] = lo.x;
        out[[b, 1]] = lo.y;
        out[[b, 2]] = hi.x;
        out[[b, 3]] = hi.y;
        counts[b] = count;
    }
}
