enum Either<T> {
    Left { v: T },
    Right { v: T },
}

#[kernel]
pub fn k(out: &mut [f32]) {
    let e = Either::<f32>::Left { v: 1.0 };
    if let Either::Left { v } = e {
        out[0] = v;
    }
}
