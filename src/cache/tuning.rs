//! The payload of a tuning entry ([`ArtifactKind::Tuning`](super::ArtifactKind)): which
//! configuration a `#[tune]` kernel's tuning chose, what every candidate measured, and the
//! inputs its key was derived from, so that a reader can check them. One place for the format:
//!
//! ```text
//! u8 version (1)
//! 9 x [32] the key's component hashes, in `TUNING_COMPONENTS`' order
//! str device name  u32 multiprocessors  u8 0 | 1 i32 major i32 minor  u8 0 | 1 i32 driver
//! u32 n, n x u64 the tuning key's values (the bucket)
//! u32 p, p x str the tuned parameters' names
//! u32 c, c x (p x u64 the candidate's values, u8 1 u64 nanoseconds | u8 2 str why it was dropped)
//! u32 the chosen candidate  u64 the tuning's milliseconds
//! ```
//! (`str` is a u32 length and UTF-8; integers little-endian.) A record verifies only if its
//! component hashes combine to the key it is stored under, its device and bucket hash to their
//! components, and the chosen candidate was timed; anything else is a miss.

use std::time::Duration;

use super::key::{Key, TUNING_COMPONENTS, encode_bucket, encode_device, encode_driver, tuning_key_of};
use crate::ir::MAX_CANDIDATES;
use crate::runtime::DeviceModel;

/// The payload's format version.
const VERSION: u8 = 1;
/// Most tuned parameters and key values a record may claim.
const MAX_LIST: u32 = 64;

/// A candidate of a tuning and what it measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedCandidate {
    /// The tuned parameters' values.
    pub config: Vec<u64>,
    /// Its time per launch, or why it was dropped.
    pub outcome: Result<Duration, String>,
}

/// A tuning result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TuningRecord {
    /// The hash of each component of the key it is stored under, in
    /// [`TUNING_COMPONENTS`]' order.
    pub components: [[u8; 32]; 9],
    /// The device it was measured on.
    pub device: DeviceModel,
    /// The tuning key's values.
    pub bucket: Vec<u64>,
    /// The tuned parameters' names.
    pub params: Vec<String>,
    /// Every candidate, in the space's order.
    pub candidates: Vec<RecordedCandidate>,
    /// The chosen candidate.
    pub chosen: usize,
    /// How long the tuning took (compiles included).
    pub tuning_ms: u64,
}

impl TuningRecord {
    /// The hash of component `name`.
    pub fn component(&self, name: &str) -> Option<[u8; 32]> {
        TUNING_COMPONENTS.iter().position(|n| *n == name).map(|i| self.components[i])
    }

    /// The chosen configuration.
    pub fn chosen_config(&self) -> &[u64] {
        self.candidates.get(self.chosen).map(|c| c.config.as_slice()).unwrap_or(&[])
    }

    /// The chosen configuration as text: `TILE = 16`.
    pub fn describe(&self, config: &[u64]) -> String {
        self.params.iter().zip(config).map(|(p, v)| format!("{p} = {v}")).collect::<Vec<_>>().join(", ")
    }

    /// The payload's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        for h in &self.components {
            out.extend_from_slice(h);
        }
        let DeviceModel { name, multiprocessors, compute_capability, driver } = &self.device;
        put_str(&mut out, name);
        out.extend_from_slice(&multiprocessors.to_le_bytes());
        match compute_capability {
            None => out.push(0),
            Some((a, b)) => {
                out.push(1);
                out.extend_from_slice(&a.to_le_bytes());
                out.extend_from_slice(&b.to_le_bytes());
            }
        }
        match driver {
            None => out.push(0),
            Some(d) => {
                out.push(1);
                out.extend_from_slice(&d.to_le_bytes());
            }
        }
        out.extend_from_slice(&(self.bucket.len() as u32).to_le_bytes());
        for v in &self.bucket {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&(self.params.len() as u32).to_le_bytes());
        for p in &self.params {
            put_str(&mut out, p);
        }
        out.extend_from_slice(&(self.candidates.len() as u32).to_le_bytes());
        for c in &self.candidates {
            for v in &c.config {
                out.extend_from_slice(&v.to_le_bytes());
            }
            match &c.outcome {
                Ok(t) => {
                    out.push(1);
                    out.extend_from_slice(&(t.as_nanos().min(u64::MAX as u128) as u64).to_le_bytes());
                }
                Err(why) => {
                    out.push(2);
                    put_str(&mut out, why);
                }
            }
        }
        out.extend_from_slice(&(self.chosen as u32).to_le_bytes());
        out.extend_from_slice(&self.tuning_ms.to_le_bytes());
        out
    }

    /// Reads and checks a payload stored under `key`: see the module's documentation for what
    /// must hold.
    pub fn decode(bytes: &[u8], key: &Key) -> Result<TuningRecord, String> {
        let mut r = Reader { b: bytes };
        if r.u8()? != VERSION {
            return Err("another version of the tuning record".into());
        }
        let mut components = [[0u8; 32]; 9];
        for c in &mut components {
            c.copy_from_slice(r.take(32)?);
        }
        let name = r.str()?;
        let multiprocessors = r.u32()?;
        let compute_capability = match r.u8()? {
            0 => None,
            1 => Some((r.i32()?, r.i32()?)),
            _ => return Err("malformed compute capability".into()),
        };
        let driver = match r.u8()? {
            0 => None,
            1 => Some(r.i32()?),
            _ => return Err("malformed driver".into()),
        };
        let device = DeviceModel { name, multiprocessors, compute_capability, driver };
        let n = r.count(MAX_LIST)?;
        let bucket = (0..n).map(|_| r.u64()).collect::<Result<Vec<_>, _>>()?;
        let p = r.count(MAX_LIST)?;
        let params = (0..p).map(|_| r.str()).collect::<Result<Vec<_>, _>>()?;
        let c = r.count(MAX_CANDIDATES as u32)?;
        let mut candidates = Vec::with_capacity(c);
        for _ in 0..c {
            let config = (0..p).map(|_| r.u64()).collect::<Result<Vec<_>, _>>()?;
            let outcome = match r.u8()? {
                1 => Ok(Duration::from_nanos(r.u64()?)),
                2 => Err(r.str()?),
                _ => return Err("malformed candidate outcome".into()),
            };
            candidates.push(RecordedCandidate { config, outcome });
        }
        let chosen = r.u32()? as usize;
        let tuning_ms = r.u64()?;
        if !r.b.is_empty() {
            return Err("trailing bytes".into());
        }
        let record = TuningRecord { components, device, bucket, params, candidates, chosen, tuning_ms };
        if tuning_key_of(&record.components) != *key {
            return Err("its component hashes are not its key's".into());
        }
        let hash = |b: &[u8]| *blake3::hash(b).as_bytes();
        let claims = [
            ("device", hash(&encode_device(&record.device))),
            ("driver", hash(&encode_driver(&record.device))),
            ("bucket", hash(&encode_bucket(&record.bucket))),
        ];
        for (name, h) in claims {
            if record.component(name) != Some(h) {
                return Err(format!("its {name} is not the one its key was derived from"));
            }
        }
        if !matches!(record.candidates.get(record.chosen), Some(RecordedCandidate { outcome: Ok(_), .. })) {
            return Err("its chosen candidate was not timed".into());
        }
        Ok(record)
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.b.len() < n {
            return Err("truncated".into());
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| "truncated")?))
    }
    fn i32(&mut self) -> Result<i32, String> {
        Ok(i32::from_le_bytes(self.take(4)?.try_into().map_err(|_| "truncated")?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().map_err(|_| "truncated")?))
    }
    fn count(&mut self, max: u32) -> Result<usize, String> {
        match self.u32()? {
            n if n <= max => Ok(n as usize),
            n => Err(format!("a count of {n}, past {max}")),
        }
    }
    fn str(&mut self) -> Result<String, String> {
        let n = self.count(1 << 16)?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| "malformed text".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::key::{Toolchain, TuningInputs, derive_tuning};
    use crate::ir::{TuneExpr, TuneParam, TuneSpace};

    fn record() -> (TuningRecord, Key) {
        let space = TuneSpace {
            params: vec![TuneParam { name: "BLOCK".into(), values: vec![64, 128], generic: None }],
            require: vec![],
            block: vec![TuneExpr::Tuned(0)],
            grid: vec![TuneExpr::Lit(1)],
            shared_mem: None,
            key: vec![TuneExpr::Len(0)],
            arg_names: vec!["x".into()],
        };
        let device = DeviceModel { name: "GPU".into(), multiprocessors: 8, compute_capability: Some((9, 0)), driver: Some(13000) };
        let toolchain = Toolchain { kache: "k".into(), llvm: "19".into() };
        let d = derive_tuning(&TuningInputs {
            candidates: &[Key([7; 32]), Key([7; 32])],
            space: &space,
            bucket: &[4096],
            device: &device,
            toolchain: &toolchain,
            salt: "",
        });
        let mut components = [[0u8; 32]; 9];
        for (c, (_, h)) in components.iter_mut().zip(&d.components) {
            *c = *h;
        }
        let r = TuningRecord {
            components,
            device,
            bucket: vec![4096],
            params: vec!["BLOCK".into()],
            candidates: vec![
                RecordedCandidate { config: vec![64], outcome: Err("disagrees".into()) },
                RecordedCandidate { config: vec![128], outcome: Ok(Duration::from_nanos(1500)) },
            ],
            chosen: 1,
            tuning_ms: 12,
        };
        (r, d.key)
    }

    #[test]
    fn records_round_trip_and_verify_against_their_key() {
        let (r, key) = record();
        let bytes = r.encode();
        assert_eq!(TuningRecord::decode(&bytes, &key).unwrap(), r);
        assert_eq!(r.describe(r.chosen_config()), "BLOCK = 128");
        assert!(TuningRecord::decode(&bytes, &Key([0; 32])).is_err(), "stored under another key");
    }

    /// A record whose claims do not match its key, or that chose a dropped candidate, is
    /// refused, whoever recomputed the envelope's hashes around it; so is every truncation.
    #[test]
    fn forged_and_damaged_records_do_not_verify() {
        let (r, key) = record();
        let forge = |f: &dyn Fn(&mut TuningRecord)| {
            let mut x = r.clone();
            f(&mut x);
            TuningRecord::decode(&x.encode(), &key)
        };
        assert!(forge(&|x| x.chosen = 0).unwrap_err().contains("not timed"));
        assert!(forge(&|x| x.chosen = 9).is_err());
        assert!(forge(&|x| x.bucket = vec![8192]).unwrap_err().contains("bucket"));
        assert!(forge(&|x| x.device.name = "other".into()).unwrap_err().contains("device"));
        assert!(forge(&|x| x.device.driver = None).unwrap_err().contains("driver"));
        assert!(forge(&|x| x.components[3] = [0; 32]).unwrap_err().contains("component hashes"));
        let bytes = r.encode();
        for n in 0..bytes.len() {
            assert!(TuningRecord::decode(&bytes[..n], &key).is_err(), "truncated to {n}");
        }
        assert!(TuningRecord::decode(&[bytes.as_slice(), &[0]].concat(), &key).is_err());
    }
}
