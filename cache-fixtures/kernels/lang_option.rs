// `Option<T>` as a value: returned, matched, `if let`, `while let`, `?` in a device function
// that returns an `Option`, `unwrap_or`, `map`, `and_then`, `filter`, `is_some`, `unwrap`,
// `take`; and enums with fields: tuple and struct variants matched with bindings, nested.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    Circle(f32),
    Rect { w: f32, h: f32 },
    Tri(f32, f32, f32),
    Empty,
}

impl Shape {
    fn area(&self) -> f32 {
        match *self {
            Shape::Circle(r) => 3.0 * r * r,
            Shape::Rect { w, h } => w * h,
            Shape::Tri(a, b, _) => 0.5 * a * b,
            Shape::Empty => 0.0,
        }
    }
}

fn find_first_above(xs: &[f32], t: f32) -> Option<usize> {
    let mut i = 0;
    while i < xs.len() {
        if xs[i] > t {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn checked_div(a: i32, b: i32) -> Option<i32> {
    if b == 0 { None } else { Some(a / b) }
}

fn half_then_third(a: i32) -> Option<i32> {
    let h = checked_div(a, 2)?;
    let t = checked_div(h, if a % 3 == 0 { 0 } else { 3 })?;
    Some(h + t)
}

fn shape_of(k: usize, v: f32) -> Shape {
    match k % 4 {
        0 => Shape::Circle(v),
        1 => Shape::Rect { w: v, h: 2.0 },
        2 => Shape::Tri(v, v + 1.0, 3.0),
        _ => Shape::Empty,
    }
}

#[kernel]
pub fn options(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let found = find_first_above(x, x[i]);
        let mut r = match found {
            Some(j) => j as f32,
            None => -1.0,
        };
        if let Some(j) = find_first_above(x, 5.0) {
            r += x[j];
        }
        let doubled = found.map(|j| j * 2).unwrap_or(7);
        r += doubled as f32;
        if found.is_some() && found.unwrap() > 3 {
            r += 0.5;
        }
        let mut o = Some(x[i]);
        let mut n = 0;
        while let Some(v) = o {
            n += 1;
            o = if v > 1.0 { Some(v * 0.5) } else { None };
        }
        r += n as f32;
        let f = Some(x[i]).filter(|v| *v > 0.0).and_then(|v| if v < 4.0 { Some(v * 10.0) } else { None });
        r += f.unwrap_or_default();
        let mut t = Some(3.0f32);
        let taken = t.take();
        r += taken.unwrap_or(0.0) + t.unwrap_or(100.0);
        out[i] = r;
    }
}

#[kernel]
pub fn question_mark(x: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = match half_then_third(x[i]) {
            Some(v) => v,
            None => -999,
        } + checked_div(100, x[i]).unwrap_or(0);
    }
}

#[kernel]
pub fn shapes_enum(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let s = shape_of(i, x[i]);
        let mut r = s.area();
        r += match s {
            Shape::Circle(r) if r > 0.0 => 1.0,
            Shape::Circle(_) => 2.0,
            Shape::Rect { w, .. } => w,
            Shape::Tri(a, ..) => a * 0.25,
            Shape::Empty => 8.0,
        };
        if s == Shape::Empty {
            r += 16.0;
        }
        let pair = (Some(i % 3), shape_of(i + 1, 1.0));
        r += match pair {
            (Some(0), Shape::Rect { h, .. }) => h,
            (Some(_), Shape::Circle(c)) => c + 0.125,
            (None, _) => 1000.0,
            _ => 0.0,
        };
        let nested: Option<Option<i32>> = if i % 5 == 0 { None } else { Some(if i % 2 == 0 { Some(i as i32) } else { None }) };
        r += match nested {
            Some(Some(v)) => v as f32,
            Some(None) => 0.5,
            None => 0.25,
        };
        out[i] = r;
    }
}
