//! Tuned launches of kernels declared with `#[tune(..)]` ([`Kernel::launch_tuned`],
//! [`Tuner`]): the candidates are the space's configurations, each an instance of the kernel
//! (its const parameters) with a launch shape; the tuning result for this kernel, tuning-key
//! bucket and device model is looked up in the cache; on a miss every candidate is compiled in
//! one batch through the cache, run on the real arguments and timed (`runtime::tune::select`),
//! and the choice is stored as a tuning entry for every later process, and every machine of a
//! fleet with the same GPU model, to launch with no tuning at all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::batch::CompileRequest;
use super::kernel::Kernel;
use super::launch::check_args;
use crate::cache::{ArtifactKind, Derivation, Key, Meta, RecordedCandidate, TUNING_COMPONENTS, Tier, TuningInputs, TuningRecord, ops};
use crate::capture::Location;
use crate::error::{Error, Result};
use crate::ir::{Layout, Scalar, TuneSpace, Ty};
use crate::lang::ast::GenericParamKind;
use crate::runtime::tune::{DeviceTimer, LaunchArgs, LaunchTimer, TuneCandidate, TuneOutcome};
use crate::runtime::{ArgValue, Device, Grid, KernelArgs};
use crate::target::{Options, Specialization};

/// What a tuned launch's arguments look like to the memo of choices: each argument's type and
/// layout, and the tuning key's values.
type MemoKey = (Location, Vec<(Option<Scalar>, Option<Layout>)>, Vec<u64>);

/// The choices a kernel's tuned launches made in this process, and the lock that makes one
/// tuning at a time.
#[derive(Default)]
pub(super) struct TunedMemo {
    chosen: Mutex<HashMap<MemoKey, Arc<Chosen>>>,
    tuning: Mutex<()>,
}

/// A choice: the candidate's kernel (an instance for a generic kernel), its configuration and
/// the tuning result's key.
struct Chosen {
    kernel: Kernel,
    config: Vec<u64>,
    key: Key,
}

/// What a tuned launch ran, and where its configuration came from.
#[derive(Clone, Debug)]
pub struct Tuning {
    /// The chosen configuration: each tuned parameter's name and value.
    pub config: Vec<(String, u64)>,
    /// The kernel that ran: the instance of a generic kernel (`matmul_tiled::<16>`).
    pub kernel: String,
    /// The launch shape it ran with.
    pub grid: Grid,
    /// The tuning result's key.
    pub key: Key,
    /// Where the configuration came from.
    pub source: TuningSource,
}

/// Where a tuned launch's configuration came from.
#[derive(Clone, Debug)]
pub enum TuningSource {
    /// A tuned launch of this kernel in this process chose it.
    Memoized,
    /// A tuning entry of the cache (this process's memory, the local store, the remote).
    Cache(Tier),
    /// This launch tuned.
    Tuned(TuningReport),
}

/// A candidate of a tuned launch ([`Tuner::candidates`]).
#[derive(Clone, Debug)]
pub struct TuningCandidate {
    /// The tuned parameters' values, in the space's order.
    pub config: Vec<u64>,
    /// The values as text (`TILE = 16, ROWS = 2`).
    pub description: String,
    /// The kernel it runs: the instance of a generic kernel (`matmul::<16, 2>`).
    pub kernel: Kernel,
    /// Its launch shape for the arguments asked about.
    pub grid: Grid,
}

/// What a tuning measured.
#[derive(Clone, Debug)]
pub struct TuningReport {
    /// Each candidate (its configuration as text) and what happened to it.
    pub candidates: Vec<(String, TuneOutcome)>,
    /// The chosen candidate.
    pub chosen: usize,
    /// How long the tuning took, compiles included.
    pub elapsed: Duration,
    /// Whether the result was stored (not for a kernel that is not persisted).
    pub stored: bool,
}

/// Why a tuned launch would find its tuning result, or not: `kache explain`'s account.
#[derive(Clone, Debug)]
pub struct TuningExplanation {
    /// The tuning key, with each component's hash.
    pub derivation: Derivation,
    /// The tuning key's values for the arguments.
    pub bucket: Vec<u64>,
    /// The device model.
    pub device: String,
    /// The local store's tuning entry under this key, if any: its chosen configuration.
    pub found: Option<String>,
    /// The local store's other tuning entries of this kernel: each one's key, and the
    /// components in which it differs from this key, with what it was tuned for.
    pub others: Vec<(Key, Vec<String>)>,
}

/// A tuned-launch record: for a generic kernel's launch, what its full tuned path found (the
/// tuning result's key and the chosen candidate), keyed by the launch's raw inputs (the
/// source's identity by content, the globals, the kernel, the code generation options, the
/// arguments' types and layouts, the tuning key's values, the device model and driver,
/// libdevice's hash, the build and the salt), as direct mode's manifests are: every input of
/// every candidate's code key is among them, so the record leads to the result the full path
/// would find, without checking or keying any candidate. Local only, written off the launch
/// path (`Cache::store_record`); anything missing or different is a miss, and the full path
/// serves the launch and writes it again.
struct LaunchRecord<'k> {
    kernel: &'k Kernel,
    key: Key,
}

/// What a [`LaunchRecord`] holds.
#[derive(serde::Serialize, serde::Deserialize)]
struct Recorded {
    /// The tuning result's key.
    tuning: [u8; 32],
    /// The chosen candidate, by position.
    chosen: u32,
    /// The kernel it runs (an instance's name).
    instance: String,
}

impl<'k> LaunchRecord<'k> {
    /// The record of a launch of generic kernel `k` (`None` for a kernel that is not generic,
    /// whose full path keys one candidate kernel, or a module without records).
    fn of(k: &'k Kernel, device: &Device, args: &[ArgValue], bucket: &[u64]) -> Option<LaunchRecord<'k>> {
        let g = k.inner.generic.as_ref()?;
        let module = g.module();
        if !super::records::eligible(module) {
            return None;
        }
        let config = k.inner.jit.config();
        let options = config.options(k.target_on(device));
        let mut opts = Vec::new();
        options.encode(&mut opts);
        opts.push(config.relocatable_captures as u8);
        let mut kinds = Vec::with_capacity(args.len() * 2);
        for (ty, layout) in arg_kinds(args) {
            kinds.extend_from_slice(&[ty.map_or(0, |t| t.tag()), layout.map_or(0, |l| l.tag())]);
        }
        let model = device.model();
        let dev = [crate::cache::key::encode_device(&model), crate::cache::key::encode_driver(&model)].concat();
        let libdevice = match options.target {
            crate::target::Target::Nvptx(_) => crate::toolchain::libdevice().map(|l| l.hash.to_vec()).unwrap_or_default(),
            crate::target::Target::Host => Vec::new(),
        };
        let key = crate::cache::derive_record(
            "tuned launch",
            &config.toolchain,
            &config.salt,
            &[
                ("source", &module.source_id),
                ("globals", &crate::cache::encode_globals(&module.globals)),
                ("kernel", k.name().as_bytes()),
                ("options", &opts),
                ("arguments", &kinds),
                ("bucket", &crate::cache::key::encode_bucket(bucket)),
                ("device", &dev),
                ("libdevice", &libdevice),
            ],
        )
        .key;
        Some(LaunchRecord { kernel: k, key })
    }

    /// The choice the record leads to, and the tier of its tuning result, if the record and the
    /// result are there and verify.
    fn find(&self, space: &TuneSpace) -> Option<(Arc<Chosen>, Tier)> {
        let k = self.kernel;
        let cache = k.inner.jit.cache();
        let entry = cache.lookup_manifest(&self.key)?;
        let rec: Recorded = postcard::from_bytes(&entry.payload).ok()?;
        let configs = space.candidates().ok()?;
        let names: Vec<&str> = space.params.iter().map(|p| p.name.as_str()).collect();
        let expect = |r: &TuningRecord| -> std::result::Result<(), String> {
            let same = r.params.iter().map(String::as_str).eq(names.iter().copied())
                && r.candidates.len() == configs.len()
                && r.candidates.iter().zip(&configs).all(|(a, b)| &a.config == b)
                && r.chosen == rec.chosen as usize;
            if same { Ok(()) } else { Err("it is not the result its launch record names".into()) }
        };
        // A miss here is counted by the full path's lookup, which follows.
        let (r, tier) = cache.lookup_tuning(&Key(rec.tuning), &expect, false)?;
        let kernel = k.inner.generic.as_ref()?.instance_named(&rec.instance).ok()?;
        crate::logging::debug!("tuned launch of `{}`: recorded (record {})", k.name(), self.key);
        Some((Arc::new(Chosen { kernel, config: configs.get(r.chosen)?.clone(), key: Key(rec.tuning) }), tier))
    }

    /// Records that the launch's full path found `c`, candidate `chosen`.
    fn write(&self, c: &Chosen, chosen: usize) {
        let rec = Recorded { tuning: c.key.0, chosen: chosen as u32, instance: c.kernel.name().to_string() };
        let Ok(payload) = postcard::to_allocvec(&rec) else { return };
        let meta = Meta::new(self.key, self.kernel.name(), "(tuned-launch record)", ArtifactKind::Manifest, "", 0);
        self.kernel.inner.jit.cache().store_record(crate::cache::Entry { meta, payload: payload.into() });
    }
}

/// A launch's candidates: each one's kernel (or why it has none), configuration and code key.
struct Candidates {
    kernels: Vec<std::result::Result<Kernel, String>>,
    configs: Vec<Vec<u64>>,
    descriptions: Vec<String>,
    /// The key each candidate's code is cached under (for one that does not check, a stand-in
    /// derived from the message, so the tuning key still changes when it starts to check).
    code_keys: Vec<Key>,
    spec: Specialization,
    options: Options,
}

/// Told (steps done, steps in all, what is being done) as a tuning goes.
type Progress<'k> = Box<dyn FnMut(usize, usize, &str) + 'k>;

/// Configures a tuned launch: how candidates are timed, who is told of progress, whether a
/// cached result is used. [`Kernel::tuner`] makes one; [`Kernel::launch_tuned`] is
/// `kernel.tuner().launch(..)`.
pub struct Tuner<'k> {
    kernel: &'k Kernel,
    timer: Box<dyn LaunchTimer + 'k>,
    progress: Option<Progress<'k>>,
    retune: bool,
}

impl std::fmt::Debug for Tuner<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tuner").field("kernel", &self.kernel.name()).field("retune", &self.retune).finish_non_exhaustive()
    }
}

impl Kernel {
    /// The kernel's `#[tune(..)]` space, if it has one.
    pub fn tune_space(&self) -> Option<&TuneSpace> {
        self.inner.program.tune.as_ref()
    }

    /// Launches a kernel declared with `#[tune(..)]` in the configuration tuned for these
    /// arguments' tuning key on this device (its model, multiprocessors and driver), with the
    /// launch shape the space gives for it. The first such launch anywhere tunes: every
    /// candidate is compiled (in one batch, through the cache), run on these arguments (the
    /// arrays it may write restored before each, so in-place kernels are safe), checked against
    /// the first candidate's results and timed; the fastest is launched and its choice stored
    /// in the cache, where every later process (and, through a remote cache, every machine with
    /// the same GPU model) finds it and launches at once. A candidate that does not compile,
    /// faults or disagrees is dropped with a warning naming it, never chosen. The arrays end
    /// as one launch of the chosen candidate leaves them.
    pub fn launch_tuned(&self, device: &Device, args: impl KernelArgs) -> Result<()> {
        self.tuner().launch(device, args).map(|_| ())
    }

    /// A [`Tuner`] for this kernel, with the default timer ([`DeviceTimer`]).
    pub fn tuner(&self) -> Tuner<'_> {
        Tuner { kernel: self, timer: Box::new(DeviceTimer::default()), progress: None, retune: false }
    }
}

impl<'k> Tuner<'k> {
    /// Times candidates with `timer` instead of [`DeviceTimer`] (a test gives each candidate
    /// the time it wants, to pick the winner).
    pub fn timer(mut self, timer: impl LaunchTimer + 'k) -> Tuner<'k> {
        self.timer = Box::new(timer);
        self
    }

    /// Tells `progress` (steps done, steps in all, what is being done) as a tuning goes: the
    /// compile of the candidates, then each candidate's run.
    pub fn progress(mut self, progress: impl FnMut(usize, usize, &str) + 'k) -> Tuner<'k> {
        self.progress = Some(Box::new(progress));
        self
    }

    /// Tunes even when a result is cached, and stores the new one in its place.
    pub fn retune(mut self, on: bool) -> Tuner<'k> {
        self.retune = on;
        self
    }

    /// The tuned launch of [`Kernel::launch_tuned`], saying what ran and where its
    /// configuration came from.
    pub fn launch(mut self, device: &Device, args: impl KernelArgs) -> Result<Tuning> {
        let args = args.args()?;
        let k = self.kernel;
        let space = k.tune_space().ok_or_else(|| not_tunable(k))?;
        let bucket = space.bucket(&LaunchArgs(&args)).map_err(|e| tuning_error(k, format!("the tuning key has no value: {e}")))?;
        let memo_key: MemoKey = (device.location(), arg_kinds(&args), bucket.clone());
        let memo = &k.inner.tuned;
        if !self.retune
            && let Some(c) = memo.chosen.lock().unwrap_or_else(|e| e.into_inner()).get(&memo_key).cloned()
        {
            let grid = launch_shape(k, space, &c.config, &args)?;
            c.kernel.launch(device, grid, args)?;
            return Ok(self.tuning(space, &c, grid, TuningSource::Memoized));
        }
        // One tuning at a time per kernel: a second launch waits, then finds the choice.
        let _turn = memo.tuning.lock().unwrap_or_else(|e| e.into_inner());
        if !self.retune
            && let Some(c) = memo.chosen.lock().unwrap_or_else(|e| e.into_inner()).get(&memo_key).cloned()
        {
            let grid = launch_shape(k, space, &c.config, &args)?;
            c.kernel.launch(device, grid, args)?;
            return Ok(self.tuning(space, &c, grid, TuningSource::Memoized));
        }
        let record = if self.retune { None } else { LaunchRecord::of(k, device, &args, &bucket) };
        // A launch recorded before: its tuning result's key without deriving any candidate's.
        if let Some((c, tier)) = record.as_ref().and_then(|r| r.find(space)) {
            let grid = launch_shape(k, space, &c.config, &args)?;
            c.kernel.launch(device, grid, args)?;
            memo.chosen.lock().unwrap_or_else(|e| e.into_inner()).insert(memo_key, c.clone());
            return Ok(self.tuning(space, &c, grid, TuningSource::Cache(tier)));
        }
        let cands = candidates(k, space, device, &args)?;
        let d = derivation(k, space, &cands, &bucket, device);
        let cache = k.inner.jit.cache();
        let found = match self.retune {
            true => None,
            false => cache.lookup_tuning(&d.key, &|r| consistent(space, &cands, r), true),
        };
        if let Some((found, tier)) = found {
            let chosen = found.chosen;
            if let Ok(kernel) = &cands.kernels[chosen] {
                let c = Arc::new(Chosen { kernel: kernel.clone(), config: cands.configs[chosen].clone(), key: d.key });
                let grid = launch_shape(k, space, &c.config, &args)?;
                c.kernel.launch(device, grid, args)?;
                if let Some(r) = &record {
                    r.write(&c, chosen);
                }
                memo.chosen.lock().unwrap_or_else(|e| e.into_inner()).insert(memo_key, c.clone());
                return Ok(self.tuning(space, &c, grid, TuningSource::Cache(tier)));
            }
        }
        let (c, report, grid) = self.tune(space, &cands, &d, &bucket, device, &args)?;
        if let (Some(r), true) = (LaunchRecord::of(k, device, &args, &bucket), report.stored) {
            r.write(&c, report.chosen);
        }
        memo.chosen.lock().unwrap_or_else(|e| e.into_inner()).insert(memo_key, c.clone());
        Ok(self.tuning(space, &c, grid, TuningSource::Tuned(report)))
    }

    fn tuning(&self, space: &TuneSpace, c: &Chosen, grid: Grid, source: TuningSource) -> Tuning {
        Tuning {
            config: space.params.iter().map(|p| p.name.clone()).zip(c.config.iter().copied()).collect(),
            kernel: c.kernel.name().to_string(),
            grid,
            key: c.key,
            source,
        }
    }

    /// Compiles every candidate, chooses one on `args` and stores the choice; the chosen
    /// candidate has run once on the arguments as they were.
    fn tune(
        &mut self,
        space: &TuneSpace,
        cands: &Candidates,
        d: &Derivation,
        bucket: &[u64],
        device: &Device,
        args: &[ArgValue],
    ) -> Result<(Arc<Chosen>, TuningReport, Grid)> {
        let k = self.kernel;
        let t0 = Instant::now();
        let total = cands.configs.len() + 1;
        if let Some(p) = &mut self.progress {
            p(0, total, &format!("compiling {} candidates", cands.configs.len()));
        }
        let jit = &k.inner.jit;
        let target = k.target_on(device);
        // Each distinct kernel once (candidates that differ in their launch shape alone share
        // one), in one batch.
        let mut distinct: Vec<&Kernel> = Vec::new();
        let mut which: Vec<Option<usize>> = Vec::with_capacity(cands.kernels.len());
        for r in &cands.kernels {
            which.push(r.as_ref().ok().map(|kernel| match distinct.iter().position(|d| d.same_kernel(kernel)) {
                Some(j) => j,
                None => {
                    distinct.push(kernel);
                    distinct.len() - 1
                }
            }));
        }
        let requests: Vec<CompileRequest> =
            distinct.iter().map(|kernel| CompileRequest { kernel: (*kernel).clone(), target, spec: cands.spec.clone() }).collect();
        let options = vec![cands.options.clone(); requests.len()];
        let built = jit.compile_many_with(&requests, &options);
        let mut compiled: Vec<Option<Arc<super::CompiledKernel>>> = vec![None; cands.configs.len()];
        let mut dropped: Vec<Option<String>> =
            cands.kernels.iter().map(|r| r.as_ref().err().map(|e| format!("does not check: {e}"))).collect();
        for (i, j) in which.iter().enumerate() {
            match j.map(|j| &built[j]) {
                Some(Ok(c)) => compiled[i] = Some(c.clone()),
                Some(Err(e)) => dropped[i] = Some(format!("does not compile: {e}")),
                None => {}
            }
        }
        // Each candidate's launch shape for these arguments; one that has none cannot run.
        let mut grids = vec![Grid::linear(1, 1); cands.configs.len()];
        for (i, config) in cands.configs.iter().enumerate() {
            if dropped[i].is_none() {
                match launch_shape(k, space, config, args) {
                    Ok(g) => grids[i] = g,
                    Err(e) => dropped[i] = Some(format!("cannot be launched: {e}")),
                }
            }
        }
        let shown: Vec<TuneCandidate<'_>> = cands
            .configs
            .iter()
            .zip(&cands.descriptions)
            .enumerate()
            .map(|(index, (config, description))| TuneCandidate { index, config, description })
            .collect();
        let launch = |i: usize| -> Result<()> {
            let c = compiled[i].as_ref().ok_or_else(|| tuning_error(k, "a dropped candidate was launched".into()))?;
            c.launch(device, grids[i], args.to_vec())
        };
        let progress = &mut self.progress;
        let sel = crate::runtime::tune::select(
            k.name(),
            device,
            k.signature_for_tuning(&cands.kernels),
            args,
            &shown,
            &dropped,
            self.timer.as_ref(),
            &mut |i, c| {
                if let Some(p) = progress {
                    p(i + 1, total, &format!("running {}", c.description));
                }
            },
            &launch,
        )?;
        let elapsed = t0.elapsed();
        for (c, o) in shown.iter().zip(&sel.outcomes) {
            if let TuneOutcome::Dropped(why) = o {
                crate::logging::warning!("tuning kernel `{}`: candidate {} dropped: {why}", k.name(), c.description);
            }
        }
        let chosen = sel.chosen;
        let persist = k.inner.persist && compiled.iter().flatten().all(|c| c.library().persistable().is_ok());
        if persist {
            let mut components = [[0u8; 32]; 9];
            for (slot, (_, h)) in components.iter_mut().zip(&d.components) {
                *slot = *h;
            }
            let record = TuningRecord {
                components,
                device: device.model(),
                bucket: bucket.to_vec(),
                params: space.params.iter().map(|p| p.name.clone()).collect(),
                candidates: cands
                    .configs
                    .iter()
                    .zip(&sel.outcomes)
                    .map(|(config, o)| RecordedCandidate {
                        config: config.clone(),
                        outcome: match o {
                            TuneOutcome::Timed(t) => Ok(*t),
                            TuneOutcome::Dropped(why) => Err(why.clone()),
                        },
                    })
                    .collect(),
                chosen,
                tuning_ms: elapsed.as_millis().min(u64::MAX as u128) as u64,
            };
            let ms = record.tuning_ms.min(u32::MAX as u64) as u32;
            let chosen_name = cands.kernels[chosen].as_ref().map(|c| c.name().to_string()).unwrap_or_default();
            let meta = Meta::new(d.key, k.name(), &space.describe(&cands.configs[chosen]), ArtifactKind::Tuning, &chosen_name, ms);
            k.inner.jit.cache().store_tuning(meta, &record);
        }
        let timed: Vec<String> = shown
            .iter()
            .zip(&sel.outcomes)
            .filter_map(|(c, o)| match o {
                TuneOutcome::Timed(t) => Some(format!("{}: {:.3} ms", c.description, t.as_secs_f64() * 1e3)),
                TuneOutcome::Dropped(_) => None,
            })
            .collect();
        crate::logging::event!(
            log::Level::Info,
            "tuned kernel `{}` for key {bucket:?} on {} in {} ms: chose {} ({})",
            k.name(),
            device.model(),
            elapsed.as_millis(),
            cands.descriptions[chosen],
            timed.join(", ")
        );
        let kernel = cands.kernels[chosen].as_ref().map_err(|e| tuning_error(k, e.clone()))?.clone();
        let c = Arc::new(Chosen { kernel, config: cands.configs[chosen].clone(), key: d.key });
        let report =
            TuningReport { candidates: cands.descriptions.iter().cloned().zip(sel.outcomes).collect(), chosen, elapsed, stored: persist };
        Ok((c, report, grids[chosen]))
    }

    /// The candidates of a tuned launch with these arguments on `device`, in the space's order,
    /// without running or looking anything up: each usable one's configuration, the kernel it
    /// runs (an instance of a generic kernel) and its launch shape for these arguments. A
    /// candidate that does not check, or has no valid launch shape here, is left out (a tuned
    /// launch drops it). For measuring configurations by hand, as an exhaustive sweep does.
    pub fn candidates(&self, device: &Device, args: impl KernelArgs) -> Result<Vec<TuningCandidate>> {
        let args = args.args()?;
        let k = self.kernel;
        let space = k.tune_space().ok_or_else(|| not_tunable(k))?;
        let cands = candidates(k, space, device, &args)?;
        Ok(cands
            .kernels
            .into_iter()
            .zip(cands.configs)
            .zip(cands.descriptions)
            .filter_map(|((kernel, config), description)| {
                let kernel = kernel.ok()?;
                let grid = launch_shape(k, space, &config, &args).ok()?;
                Some(TuningCandidate { config, description, kernel, grid })
            })
            .collect())
    }

    /// Why a tuned launch with these arguments on `device` would find its tuning result in the
    /// local store, or not: the key's components, and how the store's other tuning entries of
    /// this kernel differ from it (another bucket, device, driver, kernel code, space, build or
    /// salt). Looks nothing up in the remote and counts nothing.
    pub fn explain(&self, device: &Device, args: impl KernelArgs) -> Result<TuningExplanation> {
        let args = args.args()?;
        let k = self.kernel;
        let space = k.tune_space().ok_or_else(|| not_tunable(k))?;
        let bucket = space.bucket(&LaunchArgs(&args)).map_err(|e| tuning_error(k, format!("the tuning key has no value: {e}")))?;
        let cands = candidates(k, space, device, &args)?;
        let d = derivation(k, space, &cands, &bucket, device);
        let mut found = None;
        let mut others = Vec::new();
        if let Some(store) = k.inner.jit.cache().local() {
            for l in ops::list(store).into_iter().filter(|l| l.kind == ArtifactKind::Tuning && l.kernel == k.name()) {
                let Some(bytes) = store.get(&l.key) else { continue };
                let Ok((_, payload)) = crate::cache::envelope::decode(&bytes, Some(&l.key)) else { continue };
                let Ok(record) = TuningRecord::decode(payload, &l.key) else { continue };
                if l.key == d.key {
                    found = Some(record.describe(record.chosen_config()));
                    continue;
                }
                let differs: Vec<String> = TUNING_COMPONENTS
                    .iter()
                    .zip(&d.components)
                    .filter(|(name, (_, h))| record.component(name) != Some(*h))
                    .map(|(name, _)| match *name {
                        "bucket" => format!("bucket (tuned for {:?}, this launch's is {bucket:?})", record.bucket),
                        "device" => format!("device (tuned on {}, this is {})", record.device, device.model()),
                        "driver" => format!("driver (tuned with {:?}, this is {:?})", record.device.driver, device.model().driver),
                        "kernel" => "kernel (a candidate's code, captures, target or options differ)".to_string(),
                        "space" => "space (the `#[tune(..)]` declaration differs)".to_string(),
                        "toolchain" => "toolchain (another kache build or LLVM)".to_string(),
                        other => other.to_string(),
                    })
                    .collect();
                others.push((l.key, differs));
            }
        }
        others.sort_by_key(|(_, d)| d.len());
        Ok(TuningExplanation { derivation: d, bucket, device: device.model().to_string(), found, others })
    }
}

impl Kernel {
    /// The signature the tuner restores and compares arrays by: the first candidate that
    /// checked (every instance of a kernel has the same parameters, with concrete types).
    fn signature_for_tuning<'a>(&'a self, kernels: &'a [std::result::Result<Kernel, String>]) -> &'a [(String, Ty)] {
        kernels.iter().find_map(|k| k.as_ref().ok()).map(|k| k.signature()).unwrap_or(self.signature())
    }
}

fn not_tunable(k: &Kernel) -> Error {
    tuning_error(k, "it has no `#[tune(..)]` space; launch it with `launch` and a grid, or declare one".into())
}

fn tuning_error(k: &Kernel, problem: String) -> Error {
    Error::Tuning { kernel: k.name().to_string(), problem }
}

/// Each argument's type and layout.
fn arg_kinds(args: &[ArgValue]) -> Vec<(Option<Scalar>, Option<Layout>)> {
    args.iter()
        .map(|a| match a {
            ArgValue::Scalar(v) => (Some(v.ty()), None),
            ArgValue::Array { desc, .. } => (Some(desc.elem()), Some(desc.layout())),
            _ => (None, None),
        })
        .collect()
}

/// The instances a tuned generic kernel's candidates run, in the space's order, each once
/// (`matmul::<16, 2>`): what compiling every kernel of its module means for it. `None` for a
/// kernel that is not generic, has no space, or has a type parameter (the launch's argument
/// types choose it).
pub(crate) fn candidate_instances(k: &Kernel) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for name in candidate_names(k)? {
        if !out.contains(&name) {
            out.push(name);
        }
    }
    Some(out)
}

/// The instance each candidate of a tuned generic kernel runs, in the space's order (one per
/// candidate, so instances repeat where only the launch shape differs); `None` as for
/// [`candidate_instances`].
pub(crate) fn candidate_names(k: &Kernel) -> Option<Vec<String>> {
    let (space, g) = (k.tune_space()?, k.generic_signature()?);
    let mut out: Vec<String> = Vec::new();
    for config in space.candidates().ok()? {
        let mut args = Vec::new();
        for (index, p) in g.generics.iter().enumerate() {
            match p.kind {
                GenericParamKind::Const(_) => {
                    args.push(config.get(space.params.iter().position(|t| t.generic == Some(index))?)?.to_string())
                }
                GenericParamKind::Type(_) => return None,
            }
        }
        out.push(format!("{}::<{}>", g.name, args.join(", ")));
    }
    Some(out)
}

/// The local store's tuning results of kernel `k` (declared with `#[tune]`) that tuned launches
/// of it on a device compiling for one of `targets` would find (with every array argument
/// C-contiguous): each result's candidates' code, space, build and salt are this kernel's, as the
/// JIT derives them for that target; its device, driver and bucket may be any. The newest for
/// each device, driver and bucket. What the prebuild step records for a crate's tuned kernels.
pub(crate) fn recorded_tunings(k: &Kernel, targets: &[crate::target::Target]) -> Result<Vec<TuningRecord>> {
    let space = k.tune_space().ok_or_else(|| not_tunable(k))?;
    let configs = space.candidates().map_err(|e| tuning_error(k, e.to_string()))?;
    let kernels: Vec<Kernel> = match (&k.inner.generic, candidate_instances(k)) {
        (None, _) => vec![k.clone(); configs.len()],
        (Some(g), Some(_)) => {
            let mut out = Vec::with_capacity(configs.len());
            for config in &configs {
                out.push(g.instance_named(&format!("{}::<{}>", k.name(), instance_args(k, space, config, &[])?))?);
            }
            out
        }
        (Some(_), None) => return Ok(Vec::new()),
    };
    let config = k.inner.jit.config();
    // What every result of this kernel for these targets must share with the key a launch would
    // derive: everything but the device, the driver and the bucket.
    let shared = ["schema", "artifact", "toolchain", "kernel", "space", "salt"];
    let mut wanted: Vec<Vec<[u8; 32]>> = Vec::new();
    for target in targets {
        let options = config.options(*target);
        let mut keys = Vec::with_capacity(kernels.len());
        for kernel in &kernels {
            let spec = Specialization::uniform(kernel.program(), Layout::C);
            keys.push(kernel.prepare(&options, &spec, None)?.key);
        }
        let d = crate::cache::derive_tuning(&TuningInputs {
            candidates: &keys,
            space,
            bucket: &[],
            device: &crate::runtime::DeviceModel { name: String::new(), multiprocessors: 0, compute_capability: None, driver: None },
            toolchain: &config.toolchain,
            salt: &config.salt,
        });
        wanted.push(d.components.iter().filter(|(n, _)| shared.contains(n)).map(|(_, h)| *h).collect());
    }
    let Some(store) = k.inner.jit.cache().local() else { return Ok(Vec::new()) };
    let mut found: Vec<(u64, TuningRecord)> = Vec::new();
    for l in ops::list(store).into_iter().filter(|l| l.kind == ArtifactKind::Tuning && l.kernel == k.name()) {
        let Some(bytes) = store.get(&l.key) else { continue };
        let Ok((_, payload)) = crate::cache::envelope::decode(&bytes, Some(&l.key)) else { continue };
        let Ok(r) = TuningRecord::decode(payload, &l.key) else { continue };
        let theirs: Vec<[u8; 32]> = shared.iter().filter_map(|n| r.component(n)).collect();
        if !wanted.contains(&theirs) || r.candidates.iter().map(|c| &c.config).ne(configs.iter()) {
            continue;
        }
        let same = |(_, o): &(u64, TuningRecord)| o.device == r.device && o.bucket == r.bucket;
        match found.iter_mut().find(|o| same(o)) {
            Some(o) if o.0 >= l.created => {}
            Some(o) => *o = (l.created, r),
            None => found.push((l.created, r)),
        }
    }
    Ok(found.into_iter().map(|(_, r)| r).collect())
}

/// The launch shape of configuration `config` for `args`, checked.
fn launch_shape(k: &Kernel, space: &TuneSpace, config: &[u64], args: &[ArgValue]) -> Result<Grid> {
    crate::runtime::tune::launch_shape(k.name(), space, config, args)
}

/// The generic arguments of the instance for configuration `config` (`f32, 16`): each type
/// parameter the type of the arguments declared with it, each const parameter its tuned value.
fn instance_args(k: &Kernel, space: &TuneSpace, config: &[u64], args: &[ArgValue]) -> Result<String> {
    let Some(g) = k.generic_signature() else { return Ok(String::new()) };
    let mut out = Vec::new();
    for (index, p) in g.generics.iter().enumerate() {
        match p.kind {
            GenericParamKind::Const(_) => {
                let t = space.params.iter().position(|t| t.generic == Some(index));
                let v =
                    t.and_then(|t| config.get(t)).ok_or_else(|| tuning_error(k, format!("const parameter `{}` is not tuned", p.name)))?;
                out.push(v.to_string());
            }
            GenericParamKind::Type(_) => {
                let ty = g.params.iter().zip(args).find_map(|((_, ty), a)| match (ty, a) {
                    (Ty::Param(t), ArgValue::Scalar(v)) if t.index as usize == index => Some(v.ty()),
                    (Ty::ParamArray(t), ArgValue::Array { desc, .. }) if t.elem.index as usize == index => Some(desc.elem()),
                    _ => None,
                });
                let ty = ty.ok_or_else(|| {
                    tuning_error(
                        k,
                        format!(
                            "no argument gives the type parameter `{}`: name the instance's type, `kernel(\"{}::<..>\")`",
                            p.name, g.name
                        ),
                    )
                })?;
                out.push(ty.to_string());
            }
        }
    }
    Ok(out.join(", "))
}

/// The candidates of a tuned launch of `k` with `args` on `device`.
fn candidates(k: &Kernel, space: &TuneSpace, device: &Device, args: &[ArgValue]) -> Result<Candidates> {
    let configs = space.candidates().map_err(|e| tuning_error(k, e.to_string()))?;
    let options = k.inner.jit.config().options(k.target_on(device));
    let mut kernels = Vec::with_capacity(configs.len());
    let mut code_keys = Vec::with_capacity(configs.len());
    let mut spec = None;
    for config in &configs {
        let kernel = match &k.inner.generic {
            None => Ok(k.clone()),
            Some(g) => {
                let name = format!("{}::<{}>", k.name(), instance_args(k, space, config, args)?);
                g.instance_named(&name).map_err(|e| e.to_string())
            }
        };
        let prepared = kernel.and_then(|kernel| {
            let s = check_args(kernel.name(), kernel.signature(), kernel.enums(), &kernel.inner.types, args, device)
                .map_err(|e| e.to_string())?;
            let p = kernel.prepare(&options, &s, None).map_err(|e| e.to_string())?;
            Ok((kernel, s, p.key))
        });
        match prepared {
            Ok((kernel, s, key)) => {
                spec.get_or_insert(s);
                kernels.push(Ok(kernel));
                code_keys.push(key);
            }
            Err(why) => {
                code_keys.push(Key(*blake3::hash(format!("a candidate that does not check: {why}").as_bytes()).as_bytes()));
                kernels.push(Err(why));
            }
        }
    }
    // No candidate checks: the arguments are wrong for all of them, which the first says.
    let Some(spec) = spec else {
        let first = kernels.into_iter().find_map(|k| k.err()).unwrap_or_default();
        return Err(tuning_error(k, format!("no candidate accepts these arguments: {first}")));
    };
    let descriptions = configs.iter().map(|c| space.describe(c)).collect();
    Ok(Candidates { kernels, configs, descriptions, code_keys, spec, options })
}

/// The tuning key of a launch.
fn derivation(k: &Kernel, space: &TuneSpace, cands: &Candidates, bucket: &[u64], device: &Device) -> Derivation {
    let config = k.inner.jit.config();
    crate::cache::derive_tuning(&TuningInputs {
        candidates: &cands.code_keys,
        space,
        bucket,
        device: &device.model(),
        toolchain: &config.toolchain,
        salt: &config.salt,
    })
}

/// Whether a tuning record describes these candidates (a record whose key matched always does,
/// unless it was forged or blake3 collides).
fn consistent(space: &TuneSpace, cands: &Candidates, r: &TuningRecord) -> std::result::Result<(), String> {
    let names: Vec<&str> = space.params.iter().map(|p| p.name.as_str()).collect();
    if r.params.iter().map(String::as_str).ne(names.iter().copied()) {
        return Err("its tuned parameters are not the space's".into());
    }
    if r.candidates.len() != cands.configs.len() || r.candidates.iter().zip(&cands.configs).any(|(a, b)| &a.config != b) {
        return Err("its candidates are not the space's".into());
    }
    if cands.kernels.get(r.chosen).is_none_or(|k| k.is_err()) {
        return Err("its chosen candidate does not check".into());
    }
    Ok(())
}
