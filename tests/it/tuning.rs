//! Tuned launches (`#[tune]`, `Kernel::launch_tuned`) on the host backend: the configuration
//! timing picks is the one chosen (timings injected), candidates that disagree, fault or do not
//! compile are never chosen, in-place kernels see their inputs restored between candidates,
//! results are cache entries reused by later processes and machines (through Redis), keyed by
//! every input and verified when read.
// Tests fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use kache::cache::{Key, Tier, TuningRecord, envelope};
use kache::{Config, Device, Jit, LaunchTimer, TuneCandidate, TuningSource};

/// Tunes in place over items per thread (a const parameter) and the block size (the launch
/// shape alone), keyed by the length's power-of-two bucket.
const SCALE: &str = r#"
#[kernel]
#[tune(ITEMS = [1, 2, 4], BLOCK = [32, 64], block = BLOCK, grid = x.len().div_ceil(BLOCK * ITEMS),
       key = x.len().next_power_of_two())]
pub fn scale<const ITEMS: usize>(a: f32, x: &mut [f32]) {
    let base = global_id_x() * ITEMS;
    for k in 0..ITEMS {
        let i = base + k;
        if i < x.len() {
            x[i] = a * x[i] + 1.0;
        }
    }
}
"#;

/// A timer that gives each candidate the time the test wants (and launches nothing), counting
/// the candidates it timed.
struct Injected {
    micros: HashMap<String, u64>,
    timed: Mutex<Vec<String>>,
}

impl Injected {
    fn new(times: &[(&str, u64)]) -> Injected {
        Injected { micros: times.iter().map(|(c, t)| (c.to_string(), *t)).collect(), timed: Mutex::new(Vec::new()) }
    }
}

impl LaunchTimer for Injected {
    fn time(&self, _: &Device, c: &TuneCandidate<'_>, _launch: &mut dyn FnMut() -> kache::Result<()>) -> kache::Result<Duration> {
        self.timed.lock().unwrap().push(c.description.to_string());
        Ok(Duration::from_micros(*self.micros.get(c.description).unwrap_or(&1000)))
    }
}

/// A timer that must not be asked: the launch should have found its result.
struct Unused;

impl LaunchTimer for Unused {
    fn time(&self, _: &Device, c: &TuneCandidate<'_>, _: &mut dyn FnMut() -> kache::Result<()>) -> kache::Result<Duration> {
        panic!("candidate {} was timed: the tuning result was not found", c.description)
    }
}

fn jit(dir: &Path) -> Jit {
    Jit::new(Config::in_memory().with_cache_dir(dir)).unwrap()
}

fn scale_kernel(jit: &Jit, src: &str) -> kache::Kernel {
    jit.load_source("scale.rs", src).unwrap().kernel("scale").unwrap()
}

#[test]
fn the_configuration_timing_picks_is_chosen_and_in_place_inputs_are_restored() {
    let dev = Device::host();
    let x0: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let want: Vec<f32> = x0.iter().map(|v| 3.0 * v + 1.0).collect();
    for (fastest, instance) in [("ITEMS = 2, BLOCK = 64", "scale::<2>"), ("ITEMS = 4, BLOCK = 32", "scale::<4>")] {
        let dir = tempfile::tempdir().unwrap();
        let jit = jit(dir.path());
        let k = scale_kernel(&jit, SCALE);
        let timer = Injected::new(&[(fastest, 5)]);
        let mut x = dev.upload(&x0).unwrap();
        let mut steps = Vec::new();
        let t = k
            .tuner()
            .timer(&timer)
            .progress(|done, total, what| steps.push((done, total, what.to_string())))
            .launch(&dev, (3.0f32, &mut x))
            .unwrap();
        // Every candidate ran (and was restored before the next): the array is one launch's.
        assert_eq!(x.download().unwrap(), want, "{fastest}");
        let config: Vec<String> = t.config.iter().map(|(n, v)| format!("{n} = {v}")).collect();
        assert_eq!(config.join(", "), fastest);
        assert_eq!(t.kernel, instance);
        assert_eq!(timer.timed.lock().unwrap().len(), 6, "every candidate was timed");
        assert_eq!(t.grid.block.0 as u64, t.config[1].1);
        assert_eq!(steps.len(), 7, "the compile, then each candidate: {steps:?}");
        assert!(steps.iter().all(|(_, total, _)| *total == 7));
        let TuningSource::Tuned(report) = &t.source else { panic!("{:?}", t.source) };
        assert!(report.stored);
        assert_eq!(report.candidates[report.chosen].0, fastest);
        // The next launch in this process neither tunes nor looks anything up.
        let mut y = dev.upload(&x0).unwrap();
        let again = k.tuner().timer(Unused).launch(&dev, (3.0f32, &mut y)).unwrap();
        assert!(matches!(again.source, TuningSource::Memoized), "{:?}", again.source);
        assert_eq!(y.download().unwrap(), want);
        let s = jit.cache().stats();
        assert_eq!((s.tuning_hits, s.tuning_misses), (0, 1));
    }
}

/// A candidate that computes something else, one that faults and one that does not check are
/// dropped, each with its reason, however fast they are said to be.
#[test]
fn wrong_faulting_and_broken_candidates_are_never_chosen() {
    let src = r#"
#[kernel]
#[tune(V = [1, 2, 3, 4], block = 64, grid = y.len().div_ceil(64))]
pub fn pick<const V: usize>(x: &[f32], y: &mut [f32]) {
    let scratch = shared_array::<f32, { V * 4000 }>();
    let i = global_id_x();
    if i < y.len() {
        scratch[thread_idx_x() as usize] = x[i];
        y[i] = if V == 2 { scratch[thread_idx_x() as usize] + 1.0 } else { scratch[thread_idx_x() as usize] };
        if V == 3 {
            y[i + y.len()] = 0.0;
        }
    }
}
"#;
    let dir = tempfile::tempdir().unwrap();
    let jit = jit(dir.path());
    let k = jit.load_source("pick.rs", src).unwrap().kernel("pick").unwrap();
    let dev = Device::host();
    let x = dev.upload(&(0..300).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let mut y = dev.alloc::<f32>(&[300]).unwrap();
    let timer = Injected::new(&[("V = 1", 100), ("V = 2", 1), ("V = 3", 2), ("V = 4", 3)]);
    let t = k.tuner().timer(&timer).launch(&dev, (&x, &mut y)).unwrap();
    assert_eq!(t.kernel, "pick::<1>");
    assert_eq!(y.download().unwrap(), x.download().unwrap());
    let TuningSource::Tuned(report) = t.source else { panic!() };
    let why: HashMap<&str, String> = report
        .candidates
        .iter()
        .filter_map(|(c, o)| match o {
            kache::TuneOutcome::Dropped(w) => Some((c.as_str(), w.clone())),
            _ => None,
        })
        .collect();
    assert!(why["V = 2"].starts_with("disagrees with V = 1: `y` differs at element 0"), "{why:?}");
    assert!(why["V = 3"].starts_with("faults: kernel `pick::<3>`: index"), "{why:?}");
    assert!(why["V = 4"].starts_with("does not check:") && why["V = 4"].contains("too large"), "{why:?}");
    assert_eq!(*timer.timed.lock().unwrap(), ["V = 1"], "only the good candidate was timed");
    // The choice is stored, and a later process takes it without tuning.
    let again = jit_kernel_in_new_process(dir.path(), "pick.rs", src, "pick");
    let mut y2 = dev.alloc::<f32>(&[300]).unwrap();
    let t2 = again.tuner().timer(Unused).launch(&dev, (&x, &mut y2)).unwrap();
    assert_eq!(t2.kernel, "pick::<1>");
    assert!(matches!(t2.source, TuningSource::Cache(Tier::Local)), "{:?}", t2.source);
    assert_eq!(y2.download().unwrap(), x.download().unwrap());
}

fn jit_kernel_in_new_process(dir: &Path, file: &str, src: &str, name: &str) -> kache::Kernel {
    jit(dir).load_source(file, src).unwrap().kernel(name).unwrap()
}

/// A launch with no usable candidate is an error naming why each was dropped, and the arrays
/// are left as they were.
#[test]
fn no_usable_candidate_is_an_error_and_restores_the_arrays() {
    let src = r#"
#[kernel]
#[tune(V = [1, 2], block = 32, grid = x.len().div_ceil(32))]
pub fn bad<const V: usize>(x: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        x[i] = 7.0;
        x[i + V * x.len()] = 1.0;
    }
}
"#;
    let jit = Jit::new(Config::in_memory()).unwrap();
    let k = jit.load_source("bad.rs", src).unwrap().kernel("bad").unwrap();
    let dev = Device::host();
    let mut x = dev.upload(&[1.0f32, 2.0, 3.0]).unwrap();
    let e = k.launch_tuned(&dev, (&mut x,)).unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("kernel `bad`: cannot tune: no candidate is usable (V = 1: faults:"), "{msg}");
    assert!(msg.contains("V = 2: faults:"), "{msg}");
    assert_eq!(x.download().unwrap(), [1.0, 2.0, 3.0]);
}

/// Tuning results are keyed by the kernel's code, the bucket and the salt, and not by comments
/// or sizes within one bucket.
#[test]
fn tuning_results_follow_the_code_the_bucket_and_the_salt() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::host();
    let run = |src: &str, n: usize, config: Config| {
        let jit = Jit::new(config.with_cache_dir(dir.path())).unwrap();
        let k = scale_kernel(&jit, src);
        let mut x = dev.upload(&vec![1.0f32; n]).unwrap();
        let t = k.tuner().timer(Injected::new(&[])).launch(&dev, (2.0f32, &mut x)).unwrap();
        assert!(x.download().unwrap().iter().all(|v| *v == 3.0));
        t
    };
    let tuned = |t: &kache::Tuning| matches!(t.source, TuningSource::Tuned(_));
    let first = run(SCALE, 1000, Config::in_memory());
    assert!(tuned(&first));
    // Same bucket (1024), a comment: found.
    let commented = SCALE.replace("let base", "// the first element\n    let base");
    let hit = run(&commented, 1000, Config::in_memory());
    assert!(matches!(hit.source, TuningSource::Cache(Tier::Local)), "{:?}", hit.source);
    assert_eq!(hit.key, first.key);
    assert!(!tuned(&run(SCALE, 900, Config::in_memory())), "900 is in 1000's bucket");
    // Another bucket, another code, another space, another salt: tuned again, under new keys.
    let mut keys = vec![first.key];
    for (src, n, config) in [
        (SCALE.to_string(), 2000, Config::in_memory()),
        (SCALE.replace("+ 1.0", "+ 1.0 * 1.0"), 1000, Config::in_memory()),
        (SCALE.replace("BLOCK = [32, 64]", "BLOCK = [32, 128]"), 1000, Config::in_memory()),
        (SCALE.to_string(), 1000, Config { salt: "another".into(), ..Config::in_memory() }),
    ] {
        let t = run(&src, n, config);
        assert!(tuned(&t), "{n}");
        keys.push(t.key);
    }
    let mut unique = keys.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), keys.len());
}

/// The entry file of `key` in the store under `dir`.
fn entry_file(dir: &Path, key: &Key) -> std::path::PathBuf {
    let hex = key.hex();
    dir.join("v2").join("objects").join(&hex[..2]).join(&hex)
}

/// A damaged tuning entry, and one forged with every hash recomputed (a bucket it was not tuned
/// for, a chosen candidate that was dropped), are misses: counted as bad, tuned again and
/// overwritten.
#[test]
fn corrupt_and_forged_tuning_entries_are_misses() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::host();
    let launch = |timer: Injected| {
        let jit = jit(dir.path());
        let k = scale_kernel(&jit, SCALE);
        let mut x = dev.upload(&vec![1.0f32; 100]).unwrap();
        let t = k.tuner().timer(timer).launch(&dev, (2.0f32, &mut x)).unwrap();
        assert!(x.download().unwrap().iter().all(|v| *v == 3.0));
        (t, jit.cache().stats())
    };
    let (first, _) = launch(Injected::new(&[("ITEMS = 1, BLOCK = 64", 1)]));
    jit(dir.path()).cache().reset_stats().unwrap();
    let file = entry_file(dir.path(), &first.key);
    let good = std::fs::read(&file).unwrap();
    let (meta, payload) = envelope::decode(&good, Some(&first.key)).unwrap();
    let record = TuningRecord::decode(payload, &first.key).unwrap();
    assert_eq!(record.describe(record.chosen_config()), "ITEMS = 1, BLOCK = 64");
    let mut forged_bucket = record.clone();
    forged_bucket.bucket = vec![1 << 20];
    let mut forged_choice = record.clone();
    forged_choice.candidates[0].outcome = Err("dropped".into());
    forged_choice.chosen = 0;
    for (what, bytes) in [
        ("garbage", b"not an entry".to_vec()),
        ("a flipped bit", {
            let mut b = good.clone();
            let n = b.len() - 3;
            b[n] ^= 4;
            b
        }),
        ("another bucket", envelope::encode(&meta, &forged_bucket.encode())),
        ("a dropped candidate chosen", envelope::encode(&meta, &forged_choice.encode())),
    ] {
        std::fs::write(&file, &bytes).unwrap();
        let (t, s) = launch(Injected::new(&[("ITEMS = 4, BLOCK = 32", 1)]));
        assert!(matches!(t.source, TuningSource::Tuned(_)), "{what}: {:?}", t.source);
        assert_eq!(t.kernel, "scale::<4>", "{what}");
        assert_eq!((s.bad_entries, s.tuning_misses), (1, 1), "{what}: {s:?}");
        // Overwritten by the new tuning, which the next process finds.
        let (again, _) = launch(Injected::new(&[]));
        assert!(matches!(again.source, TuningSource::Cache(Tier::Local)), "{what}");
        assert_eq!(again.kernel, "scale::<4>");
        jit(dir.path()).cache().reset_stats().unwrap();
    }
}

#[test]
fn a_kernel_without_a_space_or_arguments_without_a_key_is_a_typed_error() {
    let jit = Jit::new(Config::in_memory()).unwrap();
    let dev = Device::host();
    let plain = jit.load_source("p.rs", "#[kernel] pub fn p(x: &mut [f32]) { x[0] = 1.0; }").unwrap().kernel("p").unwrap();
    let mut x = dev.upload(&[0.0f32]).unwrap();
    let e = plain.launch_tuned(&dev, (&mut x,)).unwrap_err();
    assert!(e.to_string().contains("it has no `#[tune(..)]` space"), "{e}");
    let k = scale_kernel(&jit, SCALE);
    let e = k.launch_tuned(&dev, (2.0f32,)).unwrap_err();
    assert!(matches!(e, kache::Error::Tuning { .. }), "{e}");
    // A plain launch of a tuned generic kernel (no grid chooses its constants) says to tune it.
    let mut y = dev.upload(&[1.0f32; 4]).unwrap();
    let e = k.launch(&dev, kache::Grid::linear(4, 32), (2.0f32, &mut y)).unwrap_err();
    assert!(
        format!("{e:?}").contains("launch it with `launch_tuned(&device, args)`, which takes `ITEMS` from its `#[tune]` space"),
        "{e:?}"
    );
    // Wrong argument types: the launch's own check says so.
    let mut ints = dev.upload(&[1i32]).unwrap();
    let e = k.launch_tuned(&dev, (2.0f32, &mut ints)).unwrap_err();
    assert!(e.to_string().contains("argument `x`") || e.to_string().contains("`x`"), "{e}");
    assert_eq!(x.download().unwrap(), [0.0]);
}

/// A tuning result crosses machines through Redis: the second machine, with an empty local
/// store, launches the configuration the first chose without tuning.
#[test]
fn tuning_results_travel_through_the_remote_tier() {
    let Some(r) = crate::redis_servers::shared() else { return };
    let db = crate::redis_servers::fresh_db();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dev = Device::host();
    let machine = |dir: &Path| crate::remote::machine(dir, crate::remote::remote(&r.url(db), crate::remote::SECRET, false));
    let first = machine(a.path());
    let mut x = dev.upload(&vec![1.0f32; 64]).unwrap();
    let t =
        scale_kernel(&first, SCALE).tuner().timer(Injected::new(&[("ITEMS = 2, BLOCK = 32", 1)])).launch(&dev, (2.0f32, &mut x)).unwrap();
    assert!(matches!(t.source, TuningSource::Tuned(_)));
    drop(first);
    let second = machine(b.path());
    let mut y = dev.upload(&vec![1.0f32; 64]).unwrap();
    let t2 = scale_kernel(&second, SCALE).tuner().timer(Unused).launch(&dev, (2.0f32, &mut y)).unwrap();
    assert!(matches!(t2.source, TuningSource::Cache(Tier::Remote)), "{:?}", t2.source);
    assert_eq!(t2.kernel, "scale::<2>");
    assert!(y.download().unwrap().iter().all(|v| *v == 3.0));
    assert_eq!(second.cache().stats().tuning_hits, 1);
    drop(second);
    // A tuning result changed in Redis (its MAC kept) is rejected: a third machine tunes.
    let (name, mut value) = r.dump(db).into_iter().find(|(k, _)| k.ends_with(&t.key.hex())).unwrap();
    let n = value.len();
    value[n - 9] ^= 1;
    let mut c = r.connection(db).unwrap();
    let _: () = redis::cmd("SET").arg(&name).arg(value).query(&mut c).unwrap();
    let c3 = tempfile::tempdir().unwrap();
    let third = machine(c3.path());
    let mut z = dev.upload(&vec![1.0f32; 64]).unwrap();
    let t3 =
        scale_kernel(&third, SCALE).tuner().timer(Injected::new(&[("ITEMS = 4, BLOCK = 64", 1)])).launch(&dev, (2.0f32, &mut z)).unwrap();
    assert!(matches!(t3.source, TuningSource::Tuned(_)), "{:?}", t3.source);
    assert_eq!(t3.kernel, "scale::<4>");
    assert!(third.cache().stats().remote_rejected >= 1);
}

/// `kache tune` measures and stores; the next process (a program's `Jit`, or the command again)
/// launches without tuning; `ls`, `show`, `stats` and `explain` report it.
#[test]
fn kache_tune_stores_what_a_later_process_launches_and_the_commands_report_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scale.rs");
    std::fs::write(&file, SCALE).unwrap();
    let cache = dir.path().join("cache");
    let kache = |args: &[&str]| {
        let o = std::process::Command::new(crate::common::kache_bin())
            .args(args)
            .env("KACHE_DIR", &cache)
            .env_remove("KACHE_REMOTE")
            .output()
            .unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let f = file.to_str().unwrap();
    let tune = ["tune", f, "--kernel", "scale", "--arg", "x=f32[3000]", "--arg", "a=2.0f32", "--device", "host"];
    let (code, out, err) = kache(&tune);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("<- chosen") && out.contains("tuned in") && out.contains("stored as"), "{out}");
    let chosen = out.lines().find(|l| l.ends_with("<- chosen")).unwrap().trim().to_string();
    // Another process: the program's launch takes the stored choice.
    let jit = jit(&cache);
    let k = scale_kernel(&jit, SCALE);
    let dev = Device::host();
    let mut x = dev.upload(&vec![1.0f32; 3000]).unwrap();
    let t = k.tuner().timer(Unused).launch(&dev, (5.0f32, &mut x)).unwrap();
    assert!(matches!(t.source, TuningSource::Cache(Tier::Local)), "{:?}", t.source);
    let config: Vec<String> = t.config.iter().map(|(n, v)| format!("{n} = {v}")).collect();
    assert!(chosen.starts_with(&format!("{} ", config.join(", "))), "{out}");
    assert!(x.download().unwrap().iter().all(|v| *v == 6.0));
    drop((k, jit));
    // The command again: its launch record leads to the result without keying a candidate.
    let (code, out, err) = kache(&["-v", tune[0], tune[1], tune[2], tune[3], tune[4], tune[5], tune[6], tune[7], tune[8], tune[9]]);
    assert_eq!(code, Some(0));
    assert!(out.contains("cached (Local):"), "{out}");
    assert!(err.contains("tuned launch of `scale`: recorded (record "), "{err}");
    let (_, ls, _) = kache(&["ls"]);
    let line = ls.lines().find(|l| l.contains(" tuning ")).unwrap_or_else(|| panic!("{ls}"));
    assert!(line.ends_with(&format!("scale: {}", config.join(", "))), "{line}");
    let key = &t.key.hex();
    let (code, show, _) = kache(&["show", &key[..12]]);
    assert_eq!(code, Some(0));
    assert!(show.contains("kind       Tuning") && show.contains("key values [4096]") && show.contains("<- chosen"), "{show}");
    let (_, stats, _) = kache(&["stats", "--json"]);
    let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!((stats["tuning_hits"].as_u64(), stats["tuning_misses"].as_u64()), (Some(2), Some(1)), "{stats}");
    let (_, explained, _) = kache(&["explain", f, "--kernel", "scale", "--arg", "x=f32[3000]", "--arg", "a=2.0f32", "--device", "host"]);
    assert!(explained.contains(&format!("tuned: {}", config.join(", "))), "{explained}");
    let (_, explained, _) = kache(&["explain", f, "--kernel", "scale", "--arg", "x=f32[5000]", "--arg", "a=2.0f32", "--device", "host"]);
    assert!(explained.contains("bucket (tuned for [4096], this launch's is [8192])"), "{explained}");
    let (code, _, err) = kache(&["tune", f, "--kernel", "scale", "--arg", "x=f32[10]"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no --arg a=.."), "{err}");
}

/// A tuned kernel's candidates are listed without running anything, each with its instance and
/// launch shape; compiling every kernel of its module means compiling each instance they run.
#[test]
fn candidates_and_the_instances_to_compile_come_from_the_space() {
    let jit = Jit::new(Config::in_memory()).unwrap();
    let m = jit.load_source("scale.rs", SCALE).unwrap();
    assert_eq!(m.kernels_to_compile().unwrap().names, ["scale::<1>", "scale::<2>", "scale::<4>"]);
    let dev = Device::host();
    let mut x = dev.upload(&vec![0.0f32; 1000]).unwrap();
    let c = m.kernel("scale").unwrap().tuner().candidates(&dev, (2.0f32, &mut x)).unwrap();
    let shown: Vec<(String, &str, u32, u32)> =
        c.iter().map(|c| (c.description.clone(), c.kernel.name(), c.grid.grid.0, c.grid.block.0)).collect();
    assert_eq!(
        shown,
        [
            ("ITEMS = 1, BLOCK = 32".to_string(), "scale::<1>", 32, 32),
            ("ITEMS = 1, BLOCK = 64".to_string(), "scale::<1>", 16, 64),
            ("ITEMS = 2, BLOCK = 32".to_string(), "scale::<2>", 16, 32),
            ("ITEMS = 2, BLOCK = 64".to_string(), "scale::<2>", 8, 64),
            ("ITEMS = 4, BLOCK = 32".to_string(), "scale::<4>", 8, 32),
            ("ITEMS = 4, BLOCK = 64".to_string(), "scale::<4>", 4, 64),
        ]
    );
    assert_eq!(x.download().unwrap(), vec![0.0; 1000], "listing candidates runs nothing");
}

/// The autotuning bench's kernels (benches/tune/kernels.rs) are right in every configuration of
/// their spaces, on the host backend (every candidate runs and agrees with the first), and each
/// candidate instance's PTX for sm_90 assembles.
#[test]
fn the_bench_kernels_agree_in_every_configuration_and_assemble() {
    let jit = Jit::new(Config::in_memory()).unwrap();
    let m = jit.load_file(crate::common::root().join("benches/tune/kernels.rs")).unwrap();
    let dev = Device::host();
    let floats = |n: usize| (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0).collect::<Vec<f32>>();
    let check = |name: &str, args: Vec<kache::ArgValue>| {
        let t = m.kernel(name).unwrap().tuner().timer(Injected::new(&[])).launch(&dev, args).unwrap();
        let TuningSource::Tuned(r) = &t.source else { panic!("{name}: {:?}", t.source) };
        let dropped: Vec<_> = r.candidates.iter().filter(|(_, o)| !matches!(o, kache::TuneOutcome::Timed(_))).collect();
        assert!(dropped.is_empty(), "{name}: {dropped:?}");
    };
    use kache::KernelArg;
    let n = 64;
    let (a, b) = (floats(n * n), floats(n * n).into_iter().rev().collect::<Vec<_>>());
    let (da, db) = (dev.upload_nd(&a, &[n, n], kache::Order::C).unwrap(), dev.upload_nd(&b, &[n, n], kache::Order::C).unwrap());
    let mut dc = dev.alloc::<f32>(&[n, n]).unwrap();
    check("matmul_tuned", vec![(&da).arg().unwrap(), (&db).arg().unwrap(), KernelArg::arg(&&mut dc).unwrap()]);
    let c = dc.download().unwrap();
    for (i, j) in [(0, 0), (5, 17), (63, 63)] {
        let want: f32 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
        assert!((c[i * n + j] - want).abs() < 1e-3, "matmul at ({i}, {j}): {} vs {want}", c[i * n + j]);
    }
    let (rows, cols) = (3, 700);
    let x = floats(rows * cols);
    let dx = dev.upload_nd(&x, &[rows, cols], kache::Order::C).unwrap();
    let mut dy = dev.alloc::<f32>(&[rows, cols]).unwrap();
    check("softmax_tuned", vec![(&dx).arg().unwrap(), KernelArg::arg(&&mut dy).unwrap()]);
    let y = dy.download().unwrap();
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let max = row.iter().fold(f32::NEG_INFINITY, |m, v| m.max(*v));
        let sum: f32 = row.iter().map(|v| (v - max).exp()).sum();
        for j in [0, 333, cols - 1] {
            let want = (row[j] - max).exp() / sum;
            assert!((y[r * cols + j] - want).abs() < 1e-6, "softmax at ({r}, {j}): {} vs {want}", y[r * cols + j]);
        }
    }
    let (sx, sy) = (floats(5000), floats(5000));
    let dsx = dev.upload(&sx).unwrap();
    let mut dsy = dev.upload(&sy).unwrap();
    check("saxpy_tuned", vec![2.0f32.arg().unwrap(), (&dsx).arg().unwrap(), KernelArg::arg(&&mut dsy).unwrap()]);
    let got = dsy.download().unwrap();
    assert!(sx.iter().zip(&sy).zip(&got).all(|((x, y), g)| *g == 2.0 * x + y));
    let Some(ptxas) = crate::common::ptxas() else { return };
    let names = m.kernels_to_compile().unwrap().names;
    assert_eq!(names.len(), 10 + 7 + 4, "{names:?}");
    let sm90 = kache::Target::Nvptx(kache::Arch::parse("sm_90").unwrap());
    for name in names {
        let k = m.kernel(&name).unwrap();
        let c = k.compile(sm90, &kache::Specialization::uniform(k.program(), kache::Layout::C)).unwrap();
        crate::common::assemble(&ptxas, c.ptx().unwrap(), &name);
    }
}
