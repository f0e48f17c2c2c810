//! An n-body step over an array of structs: `&mut [Particle]` with nested fixed-size arrays,
//! methods on `&self` and `&mut self`, a struct passed by value as a kernel parameter (the
//! step's settings), and particles staged through a shared array of structs one tile at a time.

const TILE: usize = 64;

#[derive(Clone, Copy)]
pub struct Particle {
    pub pos: [f32; 3],
    pub vel: [f32; 3],
    pub mass: f32,
}

#[derive(Clone, Copy)]
pub struct Step {
    pub dt: f32,
    pub soft2: f32,
    pub damping: f32,
}

impl Particle {
    /// The acceleration `other` gives this particle, with softening.
    fn pull(&self, other: Particle, soft2: f32) -> [f32; 3] {
        let d = [other.pos[0] - self.pos[0], other.pos[1] - self.pos[1], other.pos[2] - self.pos[2]];
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + soft2;
        let inv = 1.0 / r2.sqrt();
        let s = other.mass * inv * inv * inv;
        [d[0] * s, d[1] * s, d[2] * s]
    }

    fn advance(&mut self, acc: [f32; 3], step: Step) {
        for k in 0..3 {
            self.vel[k] = (self.vel[k] + acc[k] * step.dt) * step.damping;
            self.pos[k] += self.vel[k] * step.dt;
        }
    }
}

#[kernel]
pub fn nbody_step(cur: &[Particle], next: &mut [Particle], step: Step) {
    let tile = shared_array::<Particle, TILE>();
    let n = cur.len();
    let i = global_id_x();
    let t = thread_idx_x() as usize;
    let me = if i < n { cur[i] } else { Particle { pos: [0.0; 3], vel: [0.0; 3], mass: 0.0 } };
    let mut acc = [0.0f32; 3];
    let mut base = 0;
    while base < n {
        let j = base + t;
        tile[t] = if j < n { cur[j] } else { Particle { mass: 0.0, ..me } };
        sync_threads();
        for k in 0..TILE {
            let a = me.pull(tile[k], step.soft2);
            for c in 0..3 {
                acc[c] += a[c];
            }
        }
        sync_threads();
        base += TILE;
    }
    if i < n {
        let mut p = me;
        p.advance(acc, step);
        next[i] = p;
    }
}

#[kernel]
pub fn kinetic_energy(ps: &[Particle], out: &mut [f32]) {
    let i = global_id_x();
    if i < ps.len() {
        let Particle { vel, mass, .. } = ps[i];
        out[i] = 0.5 * mass * (vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2]);
    }
}
