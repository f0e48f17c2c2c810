#[derive(Clone, Copy)]
struct Counter {
    n: u32,
}

impl Counter {
    fn bump(&mut self) {
        self.n += 1;
    }
}

#[kernel]
pub fn k(cs: &[Counter]) {
    let i = global_id_x();
    if i < cs.len() {
        cs[i].bump();
    }
}
