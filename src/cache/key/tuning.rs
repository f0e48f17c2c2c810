//! The key of a tuning result: what a `#[tune]` kernel's chosen configuration depends on. The
//! code of every candidate (by its own key, which covers the program, its captures, the target
//! and the code generation options), the tuning space as declared (its values, conditions,
//! launch shape and key expressions), the tuning key's values for the launch (its bucket), the
//! device model (name, multiprocessors, compute capability), the driver, kache's build and the
//! salt. Nothing else: not the launch's other argument values, not the file's name, comments or
//! formatting (they do not reach any candidate's key).

use super::{Derivation, KEY_SCHEMA, Key, Toolchain, combine, component};
use crate::ir::{TuneBinary, TuneExpr, TuneParam, TuneSpace, TuneUnary};
use crate::runtime::DeviceModel;

/// Everything a tuning result depends on.
pub struct TuningInputs<'a> {
    /// The key of each candidate's code, in the candidates' order (a kernel tuned over its launch
    /// shape alone has the same key for every candidate).
    pub candidates: &'a [Key],
    /// The tuning space as declared.
    pub space: &'a TuneSpace,
    /// The tuning key's values for the launch.
    pub bucket: &'a [u64],
    /// The device the candidates are measured on.
    pub device: &'a DeviceModel,
    /// The compiler.
    pub toolchain: &'a Toolchain,
    /// `KACHE_SALT`.
    pub salt: &'a str,
}

/// The component names of a tuning key, in order: what `kache explain` prints and what a
/// tuning record keeps the hashes of.
pub const TUNING_COMPONENTS: [&str; 9] = ["schema", "artifact", "toolchain", "kernel", "space", "bucket", "device", "driver", "salt"];

/// Derives a tuning result's key, with the hash of each component.
pub fn derive_tuning(t: &TuningInputs<'_>) -> Derivation {
    let mut kernel = Vec::with_capacity(8 + 32 * t.candidates.len());
    kernel.extend_from_slice(&(t.candidates.len() as u64).to_le_bytes());
    for k in t.candidates {
        kernel.extend_from_slice(&k.0);
    }
    let mut space = Vec::new();
    encode_space(t.space, &mut space);
    combine(vec![
        component("schema", &KEY_SCHEMA.to_le_bytes()),
        component("artifact", b"tuning"),
        component("toolchain", &t.toolchain.encode()),
        component("kernel", &kernel),
        component("space", &space),
        component("bucket", &encode_bucket(t.bucket)),
        component("device", &encode_device(t.device)),
        component("driver", &encode_driver(t.device)),
        component("salt", t.salt.as_bytes()),
    ])
}

/// The key whose components hash to `hashes` (in [`TUNING_COMPONENTS`]' order): how a tuning
/// record's component hashes are checked against the key it is stored under.
pub fn tuning_key_of(hashes: &[[u8; 32]; 9]) -> Key {
    combine(TUNING_COMPONENTS.iter().zip(hashes).map(|(n, h)| (*n, *h)).collect()).key
}

/// The `bucket` component's bytes.
pub fn encode_bucket(bucket: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 8 * bucket.len());
    out.extend_from_slice(&(bucket.len() as u64).to_le_bytes());
    for v in bucket {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// The `device` component's bytes: the model's name, multiprocessors and compute capability.
pub fn encode_device(d: &DeviceModel) -> Vec<u8> {
    let DeviceModel { name, multiprocessors, compute_capability, driver: _ } = d;
    let mut out = Vec::new();
    out.extend_from_slice(&(name.len() as u64).to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&multiprocessors.to_le_bytes());
    match compute_capability {
        None => out.push(0),
        Some((major, minor)) => {
            out.push(1);
            out.extend_from_slice(&major.to_le_bytes());
            out.extend_from_slice(&minor.to_le_bytes());
        }
    }
    out
}

/// The `driver` component's bytes.
pub fn encode_driver(d: &DeviceModel) -> Vec<u8> {
    match d.driver {
        None => vec![0],
        Some(v) => [&[1u8][..], &v.to_le_bytes()].concat(),
    }
}

/// The `space` component: the declaration, taken apart exhaustively so that a field added to
/// it does not compile until it is keyed. The kernel's parameter names are not keyed (the
/// expressions name parameters by position).
fn encode_space(s: &TuneSpace, out: &mut Vec<u8>) {
    let TuneSpace { params, require, block, grid, shared_mem, key, arg_names: _ } = s;
    out.extend_from_slice(&(params.len() as u64).to_le_bytes());
    for p in params {
        let TuneParam { name, values, generic } = p;
        out.extend_from_slice(&(name.len() as u64).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(values.len() as u64).to_le_bytes());
        for v in values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&generic.map_or(u64::MAX, |g| g as u64).to_le_bytes());
    }
    for list in [require, block, grid, key] {
        out.extend_from_slice(&(list.len() as u64).to_le_bytes());
        for e in list {
            encode_expr(e, out);
        }
    }
    match shared_mem {
        None => out.push(0),
        Some(e) => {
            out.push(1);
            encode_expr(e, out);
        }
    }
}

fn encode_expr(e: &TuneExpr, out: &mut Vec<u8>) {
    let u = |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&v.to_le_bytes());
    match e {
        TuneExpr::Lit(v) => {
            out.push(0);
            u(out, *v);
        }
        TuneExpr::Tuned(i) => {
            out.push(1);
            u(out, *i as u64);
        }
        TuneExpr::Arg(i) => {
            out.push(2);
            u(out, *i as u64);
        }
        TuneExpr::Len(i) => {
            out.push(3);
            u(out, *i as u64);
        }
        TuneExpr::Shape(i, d) => {
            out.push(4);
            u(out, *i as u64);
            u(out, *d as u64);
        }
        TuneExpr::Unary(op, a) => {
            out.push(5);
            out.push(match op {
                TuneUnary::Not => 0,
                TuneUnary::NextPowerOfTwo => 1,
                TuneUnary::Ilog2 => 2,
            });
            encode_expr(a, out);
        }
        TuneExpr::Binary(op, a, b) => {
            out.push(6);
            out.push(match op {
                TuneBinary::Add => 0,
                TuneBinary::Sub => 1,
                TuneBinary::Mul => 2,
                TuneBinary::Div => 3,
                TuneBinary::Rem => 4,
                TuneBinary::Shl => 5,
                TuneBinary::Shr => 6,
                TuneBinary::Min => 7,
                TuneBinary::Max => 8,
                TuneBinary::DivCeil => 9,
                TuneBinary::Pow => 10,
                TuneBinary::Eq => 11,
                TuneBinary::Ne => 12,
                TuneBinary::Lt => 13,
                TuneBinary::Le => 14,
                TuneBinary::Gt => 15,
                TuneBinary::Ge => 16,
                TuneBinary::And => 17,
                TuneBinary::Or => 18,
            });
            encode_expr(a, out);
            encode_expr(b, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> TuneSpace {
        TuneSpace {
            params: vec![TuneParam { name: "TILE".into(), values: vec![16, 32], generic: Some(0) }],
            require: vec![],
            block: vec![TuneExpr::Tuned(0), TuneExpr::Tuned(0)],
            grid: vec![TuneExpr::Binary(TuneBinary::DivCeil, Box::new(TuneExpr::Shape(2, 1)), Box::new(TuneExpr::Tuned(0)))],
            shared_mem: None,
            key: vec![TuneExpr::Unary(TuneUnary::NextPowerOfTwo, Box::new(TuneExpr::Shape(0, 0)))],
            arg_names: vec!["a".into(), "b".into(), "c".into()],
        }
    }

    fn gpu() -> DeviceModel {
        DeviceModel { name: "NVIDIA H100 80GB HBM3".into(), multiprocessors: 132, compute_capability: Some((9, 0)), driver: Some(12080) }
    }

    /// Every input of a tuning key changes it, and the kernel's parameter names do not: the
    /// mutation test of tuning entries, as `cubins_are_keyed_by_every_input` is of cubins.
    #[test]
    fn tuning_keys_change_with_every_input_and_nothing_else() {
        let toolchain = Toolchain { kache: "k".into(), llvm: "19".into() };
        let (s, d) = (space(), gpu());
        let keys = [Key([1; 32]), Key([2; 32])];
        let key = |candidates: &[Key], space: &TuneSpace, bucket: &[u64], device: &DeviceModel, toolchain: &Toolchain, salt: &str| {
            derive_tuning(&TuningInputs { candidates, space, bucket, device, toolchain, salt }).key
        };
        let base = key(&keys, &s, &[1024], &d, &toolchain, "");
        let mut mutants: Vec<(&str, Key)> = Vec::new();
        mutants.push(("a candidate's code", key(&[Key([1; 32]), Key([3; 32])], &s, &[1024], &d, &toolchain, "")));
        mutants.push(("the candidates' order", key(&[Key([2; 32]), Key([1; 32])], &s, &[1024], &d, &toolchain, "")));
        let mut values = s.clone();
        values.params[0].values = vec![16, 64];
        mutants.push(("a value", key(&keys, &values, &[1024], &d, &toolchain, "")));
        let mut renamed = s.clone();
        renamed.params[0].name = "T".into();
        mutants.push(("a tuned name", key(&keys, &renamed, &[1024], &d, &toolchain, "")));
        let mut launch_only = s.clone();
        launch_only.params[0].generic = None;
        mutants.push(("const or launch parameter", key(&keys, &launch_only, &[1024], &d, &toolchain, "")));
        let mut required = s.clone();
        required.require.push(TuneExpr::Binary(TuneBinary::Le, Box::new(TuneExpr::Tuned(0)), Box::new(TuneExpr::Lit(32))));
        mutants.push(("a condition", key(&keys, &required, &[1024], &d, &toolchain, "")));
        let mut block = s.clone();
        block.block.pop();
        mutants.push(("the block", key(&keys, &block, &[1024], &d, &toolchain, "")));
        let mut grid = s.clone();
        grid.grid[0] = TuneExpr::Binary(TuneBinary::DivCeil, Box::new(TuneExpr::Shape(2, 0)), Box::new(TuneExpr::Tuned(0)));
        mutants.push(("the grid", key(&keys, &grid, &[1024], &d, &toolchain, "")));
        let mut shared = s.clone();
        shared.shared_mem = Some(TuneExpr::Lit(0));
        mutants.push(("shared memory", key(&keys, &shared, &[1024], &d, &toolchain, "")));
        let mut keyed = s.clone();
        keyed.key[0] = TuneExpr::Shape(0, 0);
        mutants.push(("the key expression", key(&keys, &keyed, &[1024], &d, &toolchain, "")));
        mutants.push(("the bucket", key(&keys, &s, &[2048], &d, &toolchain, "")));
        mutants.push(("another key value", key(&keys, &s, &[1024, 1], &d, &toolchain, "")));
        mutants.push(("the GPU model", key(&keys, &s, &[1024], &DeviceModel { name: "NVIDIA H200".into(), ..gpu() }, &toolchain, "")));
        mutants.push(("the multiprocessors", key(&keys, &s, &[1024], &DeviceModel { multiprocessors: 114, ..gpu() }, &toolchain, "")));
        mutants.push((
            "the compute capability",
            key(&keys, &s, &[1024], &DeviceModel { compute_capability: Some((9, 1)), ..gpu() }, &toolchain, ""),
        ));
        mutants.push(("the driver", key(&keys, &s, &[1024], &DeviceModel { driver: Some(12090), ..gpu() }, &toolchain, "")));
        mutants.push(("no driver", key(&keys, &s, &[1024], &DeviceModel { driver: None, ..gpu() }, &toolchain, "")));
        mutants.push(("kache's build", key(&keys, &s, &[1024], &d, &Toolchain { kache: "k2".into(), ..toolchain.clone() }, "")));
        mutants.push(("LLVM", key(&keys, &s, &[1024], &d, &Toolchain { llvm: "20".into(), ..toolchain.clone() }, "")));
        mutants.push(("the salt", key(&keys, &s, &[1024], &d, &toolchain, "salt")));
        for (what, k) in &mutants {
            assert_ne!(*k, base, "{what} does not change the key");
        }
        let mut seen: Vec<Key> = mutants.iter().map(|(_, k)| *k).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), mutants.len(), "two mutations gave one key");
        let mut names = s.clone();
        names.arg_names = vec!["x".into(), "y".into(), "z".into()];
        assert_eq!(key(&keys, &names, &[1024], &d, &toolchain, ""), base, "parameter names are not keyed");
        let d = derive_tuning(&TuningInputs { candidates: &keys, space: &s, bucket: &[1024], device: &d, toolchain: &toolchain, salt: "" });
        assert_eq!(d.components.iter().map(|(n, _)| *n).collect::<Vec<_>>(), TUNING_COMPONENTS);
    }
}
