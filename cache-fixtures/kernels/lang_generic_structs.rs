// Generic structs and generic impls, const-generic parameters, as values, locals, parameters,
// results, in fixed-size arrays and in shared memory; associated constants and `const fn` in
// array lengths and constant expressions.

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range<T> {
    pub lo: T,
    pub hi: T,
}

impl<T: PartialOrd + Copy> Range<T> {
    pub fn new(a: T, b: T) -> Range<T> {
        if a < b { Range { lo: a, hi: b } } else { Range { lo: b, hi: a } }
    }
    pub fn contains(&self, v: T) -> bool {
        self.lo <= v && v < self.hi
    }
    pub fn clamp(&self, v: T) -> T {
        if v < self.lo {
            self.lo
        } else if v > self.hi {
            self.hi
        } else {
            v
        }
    }
}

#[derive(Clone, Copy)]
pub struct Tile<const N: usize> {
    pub v: [f32; N],
}

impl<const N: usize> Tile<N> {
    const LEN: usize = N;
    pub fn filled(x: f32) -> Self {
        Tile { v: [x; N] }
    }
    pub fn sum(&self) -> f32 {
        let mut s = 0.0;
        for k in 0..N {
            s += self.v[k];
        }
        s
    }
}

#[derive(Clone, Copy)]
struct Pair<A, B> {
    a: A,
    b: B,
}

fn swap<A: Copy, B: Copy>(p: Pair<A, B>) -> Pair<B, A> {
    Pair { a: p.b, b: p.a }
}

const fn cube(n: usize) -> usize {
    n * n * n
}

const fn fib(n: u32) -> u32 {
    let mut a = 0;
    let mut b = 1;
    let mut i = 0;
    while i < n {
        let t = a + b;
        a = b;
        b = t;
        i += 1;
    }
    a
}

const CUBE: usize = cube(2);
const FIB10: u32 = fib(10);

trait HasDim {
    const DIM: usize;
}

struct Plane;

impl HasDim for Plane {
    const DIM: usize = 3;
}

impl Plane {
    const SCALE: f32 = 0.5;
    fn zeros(&self) -> [f32; Self::DIM] {
        [Self::SCALE; <Plane as HasDim>::DIM]
    }
}

fn dim_of<D: HasDim>() -> usize {
    D::DIM * 2
}

#[kernel]
pub fn ranges(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let r = Range::new(x[i], 1.0);
        let ri: Range<i32> = Range::new(5, -3);
        let mut v = r.clamp(0.5) + if r.contains(0.0) { 1.0 } else { 0.0 };
        v += ri.clamp(i as i32) as f32 + if ri.contains(2) { 10.0 } else { 0.0 };
        let tiles = [Tile::<4>::filled(x[i]), Tile::<4>::filled(1.0)];
        v += tiles[0].sum() + tiles[1].sum() + Tile::<4>::LEN as f32;
        let p = swap(Pair { a: i as u32, b: x[i] });
        v += p.a + p.b as f32;
        let arr = [0u8; CUBE];
        let z = Plane.zeros();
        v += arr.len() as f32 + FIB10 as f32 + z.len() as f32 + z[1] + cube(3) as f32 + dim_of::<Plane>() as f32;
        out[i] = v;
    }
}

#[kernel]
pub fn shared_ranges(x: &[f32], out: &mut [f32]) {
    let tile = shared_array::<Range<f32>, 64>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    tile[t] = Range::new(x[i % x.len()], 0.0);
    sync_threads();
    if i < out.len() {
        let other = tile[(t + 1) % 32];
        out[i] = other.clamp(x[i]) + other.hi - other.lo;
    }
}
