//! Regenerates the stores in `cache-fixtures/stores/` (run `scripts/make-fixtures.sh`).
//!
//! - `garbage-file-as-store`: a file of random bytes where the sled folder should be;
//! - `garbage-files-in-store`: the sled folder with its files overwritten by random bytes;
//! - `future-format`: a valid sled store stamped with a store format from the future;
//! - `bad-entries`: entries compiled from `cache-fixtures/sources/fixture_kernels.rs`, some
//!   good and some damaged (flipped payload bit, flipped header bit, truncated, another
//!   envelope version, an entry as envelope version 1 wrote it, stored under the wrong key),
//!   listed in `MANIFEST`.

use std::path::Path;
use std::time::Duration;

use kache::cache::key::KEY_SCHEMA;
use kache::cache::{Key, LocalStore};
use kache::{Arch, Config, Jit, Layout, Specialization, Target};

fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("cache-fixtures/stores");
    let _ = std::fs::remove_dir_all(&root);

    // A garbage file where the store should be.
    let d = root.join(format!("garbage-file-as-store/v{KEY_SCHEMA}"));
    std::fs::create_dir_all(&d)?;
    std::fs::write(d.join("db"), noise(1, 4096))?;

    // A real store, then every file in it (catalogue and entries) overwritten with random
    // bytes of the same size.
    let d = root.join("garbage-files-in-store");
    {
        let store = LocalStore::new(&d, Duration::from_secs(5), 1 << 30)?;
        store.put(&Key([1; 32]), b"placeholder")?;
    }
    fn scramble(dir: &Path) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let p = e?.path();
            if p.is_dir() {
                scramble(&p)?;
            } else {
                let n = std::fs::metadata(&p)?.len() as usize;
                std::fs::write(&p, noise(n as u64 + 7, n.max(64)))?;
            }
        }
        Ok(())
    }
    scramble(&d.join(format!("v{KEY_SCHEMA}")))?;

    // A valid store written by a future store format: made by hand with sled, as another kache
    // version would have (kache keeps its catalogue private).
    let d = root.join("future-format");
    {
        let store = LocalStore::new(&d, Duration::from_secs(5), 1 << 30)?;
        let db = sled::open(store.db_path())?;
        db.open_tree("meta")?.insert("format", &99u32.to_le_bytes())?;
        db.flush()?;
    }

    // Good and bad entries.
    let d = root.join("bad-entries");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("cache-fixtures/sources/fixture_kernels.rs");
    let jit = Jit::new(Config::in_memory())?;
    let m = jit.load_file(&src)?;
    let mut entries = Vec::new();
    for k in ["scale", "add", "fill"] {
        let kern = m.kernel(k)?;
        for arch in ["sm_70", "sm_80"] {
            let c = kern.compile(Target::Nvptx(Arch::parse(arch)?), &Specialization::uniform(kern.program(), Layout::C))?;
            let meta = kache::cache::Meta::new(c.key(), k, "", kache::cache::ArtifactKind::Ptx, c.entry(), 1);
            entries.push((c.key(), kache::cache::envelope::encode(&meta, c.ptx().unwrap_or("").as_bytes())));
        }
    }
    let old = Key([0x01; 32]);
    let old_entry = version_1_entry(old, &entries[5].1)?;
    let mut manifest = String::new();
    let store = LocalStore::new(&d, Duration::from_secs(5), 1 << 30)?;
    store.batch(|batch| {
        for (i, (key, bytes)) in entries.iter().enumerate() {
            let mut b = bytes.clone();
            let (label, what) = match i {
                0 => ("good", "intact"),
                1 => {
                    let n = b.len();
                    b[n - 10] ^= 0x04;
                    ("bad", "payload bit flipped")
                }
                2 => {
                    b[30] ^= 0x80;
                    ("bad", "header bit flipped")
                }
                3 => {
                    b.truncate(b.len() - 100);
                    ("bad", "truncated payload")
                }
                4 => {
                    b[8] = 0;
                    ("bad", "envelope version 0")
                }
                _ => ("good", "intact"),
            };
            batch.put(key, &b)?;
            manifest.push_str(&format!("{label} {} {what}\n", key.hex()));
        }
        // An intact entry stored under another key.
        let wrong = Key([0xab; 32]);
        batch.put(&wrong, &entries[0].1)?;
        manifest.push_str(&format!("bad {} stored under the wrong key\n", wrong.hex()));
        // An entry exactly as envelope version 1 wrote it: no interface byte, a correct checksum.
        batch.put(&old, &old_entry)?;
        manifest.push_str(&format!("bad {} envelope version 1 (before the interface), checksum intact\n", old.hex()));
        Ok::<_, kache::cache::StoreError>(())
    })??;
    std::fs::write(d.join("MANIFEST"), manifest)?;
    println!("fixtures written under {}", root.display());
    Ok(())
}

/// `entry` (a cache entry of the current envelope, version 2) re-encoded under `key` as version
/// 1 wrote entries: the same fields without the interface byte, with a checksum that matches.
fn version_1_entry(key: Key, entry: &[u8]) -> Result<Vec<u8>, kache::cache::envelope::EnvelopeError> {
    let (meta, payload) = kache::cache::envelope::decode(entry, None)?;
    let v2 = kache::cache::envelope::encode(&kache::cache::Meta { key, ..meta }, payload);
    // [.. entry symbol] [u8 interface = 0] [u64 length] [32 payload hash] | [32 header hash] payload
    let header_end = v2.len() - payload.len() - 32;
    let interface_byte = header_end - 32 - 8 - 1;
    assert_eq!(v2[interface_byte], 0, "a cache entry has no interface");
    let mut v1 = [&v2[..interface_byte], &v2[interface_byte + 1..header_end]].concat();
    v1[8..10].copy_from_slice(&1u16.to_le_bytes());
    let h = *blake3::hash(&v1).as_bytes();
    v1.extend_from_slice(&h);
    v1.extend_from_slice(payload);
    Ok(v1)
}
