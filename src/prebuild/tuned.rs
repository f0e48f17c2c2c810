//! The run-time side of a prebuilt `#[tune]` kernel: [`PrebuiltTuned`] launches the candidate
//! the build step recorded for this device model and the arguments' tuning key (tuning results
//! found in the cache at build time), and where none was recorded tunes among the prebuilt
//! candidates at run time, once per process, with nothing but the runtime
//! (`runtime::tune::select`).

use std::sync::{Mutex, OnceLock};

use super::runtime::Prebuilt;
use crate::capture::Location;
use crate::error::{Error, Result};
use crate::ir::TuneSpace;
use crate::runtime::tune::{DeviceTimer, LaunchArgs, TuneCandidate, launch_shape, select};
use crate::runtime::{ArgValue, Device, Grid, KernelArg, KernelArgs};

/// A tuning result recorded by the build step (generated code).
#[derive(Clone, Copy, Debug)]
pub struct TunedResult {
    /// The GPU's name (or `host: ` and the CPU's) it was measured on.
    pub device: &'static str,
    /// Its multiprocessors (or the host backend's threads).
    pub multiprocessors: u32,
    /// Its compute capability.
    pub compute_capability: Option<(i32, i32)>,
    /// The CUDA driver it was measured with.
    pub driver: Option<i32>,
    /// The tuning key's values it was measured for.
    pub bucket: &'static [u64],
    /// The chosen candidate, by position in [`TunedData::candidates`].
    pub chosen: usize,
}

/// A candidate of a prebuilt tuned kernel: its configuration (the space's parameters' values,
/// in order) and the accessor of the prebuilt kernel it runs.
pub type TunedCandidate = (&'static [u64], fn() -> &'static Prebuilt);

/// Everything generated code knows about a tuned kernel.
#[derive(Debug)]
pub struct TunedData {
    /// The kernel's name.
    pub name: &'static str,
    /// Makes its tuning space (as the kernel declares it).
    pub space: fn() -> TuneSpace,
    /// Each candidate: its configuration (the space's parameters' values, in order) and the
    /// prebuilt kernel it runs.
    pub candidates: &'static [TunedCandidate],
    /// The tuning results the build step found for it.
    pub results: &'static [TunedResult],
}

/// What a launch of a [`PrebuiltTuned`] ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TunedChoice {
    /// The chosen configuration: each tuned parameter's name and value.
    pub config: Vec<(String, u64)>,
    /// The prebuilt kernel it ran (`matmul::<16>`).
    pub kernel: &'static str,
    /// Whether the build step recorded the choice (`false`: tuned at run time, in this process).
    pub recorded: bool,
}

/// A prebuilt kernel declared with `#[tune(..)]` (generated code holds one per such kernel).
pub struct PrebuiltTuned {
    data: TunedData,
    space: OnceLock<TuneSpace>,
    /// The choices tuned at run time: device, tuning key values, candidate.
    tuned: Mutex<Vec<(Location, Vec<u64>, usize)>>,
}

impl std::fmt::Debug for PrebuiltTuned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrebuiltTuned")
            .field("name", &self.data.name)
            .field("candidates", &self.data.candidates.len())
            .field("results", &self.data.results.len())
            .finish()
    }
}

impl PrebuiltTuned {
    /// Used by generated code. Safe: what runs is the candidates' [`Prebuilt`] code, whose own
    /// construction carries the build step's promise.
    pub const fn new(data: TunedData) -> PrebuiltTuned {
        PrebuiltTuned { data, space: OnceLock::new(), tuned: Mutex::new(Vec::new()) }
    }

    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.data.name
    }

    /// Its tuning space.
    pub fn space(&self) -> &TuneSpace {
        self.space.get_or_init(self.data.space)
    }

    /// The tuning results the build step recorded.
    pub fn recorded(&self) -> &'static [TunedResult] {
        self.data.results
    }

    /// The recorded choice for `device` and `bucket`: a result measured on the same model
    /// (name, multiprocessors, compute capability) for the same key values, with the same
    /// driver if one was, else with another (the choice is one of the prebuilt candidates, each
    /// correct: another driver may only make another one faster).
    fn recorded_choice(&self, device: &Device, bucket: &[u64]) -> Option<usize> {
        let m = device.model();
        let fits = |r: &&TunedResult| {
            r.device == m.name
                && r.multiprocessors == m.multiprocessors
                && r.compute_capability == m.compute_capability
                && r.bucket == bucket
        };
        let mut found = self.data.results.iter().filter(fits);
        let first = found.clone().next();
        found.find(|r| r.driver == m.driver).or(first).map(|r| r.chosen).filter(|c| *c < self.data.candidates.len())
    }

    /// Launches in the configuration recorded for this device model and the arguments' tuning
    /// key, or else the one tuned among the prebuilt candidates at the first such launch of the
    /// process (each candidate run on the arguments as they were, checked against the first and
    /// timed, as the JIT's tuned launches do; not stored anywhere). Arguments are checked as for
    /// every prebuilt kernel.
    pub fn launch(&self, device: &Device, args: impl KernelArgs) -> Result<TunedChoice> {
        let args = args.args()?;
        let space = self.space();
        let name = self.data.name;
        let bucket = space
            .bucket(&LaunchArgs(&args))
            .map_err(|e| Error::Tuning { kernel: name.to_string(), problem: format!("the tuning key has no value: {e}") })?;
        let choice = |i: usize, recorded: bool| TunedChoice {
            config: space.params.iter().map(|p| p.name.clone()).zip(self.data.candidates[i].0.iter().copied()).collect(),
            kernel: (self.data.candidates[i].1)().name(),
            recorded,
        };
        if let Some(i) = self.recorded_choice(device, &bucket) {
            let (config, kernel) = self.data.candidates[i];
            kernel().launch(device, launch_shape(name, space, config, &args)?, args)?;
            return Ok(choice(i, true));
        }
        let at = device.location();
        let mut tuned = self.tuned.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, i)) = tuned.iter().find(|(l, b, _)| *l == at && *b == bucket) {
            let (config, kernel) = self.data.candidates[*i];
            kernel().launch(device, launch_shape(name, space, config, &args)?, args)?;
            return Ok(choice(*i, false));
        }
        let i = self.tune(device, space, &args)?;
        tuned.push((at, bucket, i));
        Ok(choice(i, false))
    }

    /// [`launch`](Self::launch) with the arguments as a slice of any length (generated launch
    /// functions use it).
    pub fn launch_with(&self, device: &Device, args: &[&dyn KernelArg]) -> Result<TunedChoice> {
        let args: Vec<ArgValue> = args.iter().map(|a| a.arg()).collect::<Result<_>>()?;
        self.launch(device, args)
    }

    /// Tunes among the prebuilt candidates on `args`; the chosen one has run once on them.
    fn tune(&self, device: &Device, space: &TuneSpace, args: &[ArgValue]) -> Result<usize> {
        let name = self.data.name;
        let cands = self.data.candidates;
        let first = cands.first().ok_or_else(|| Error::Tuning { kernel: name.to_string(), problem: "it has no candidate".into() })?;
        let mut grids = Vec::with_capacity(cands.len());
        let mut dropped = Vec::with_capacity(cands.len());
        for (config, _) in cands {
            match launch_shape(name, space, config, args) {
                Ok(g) => {
                    grids.push(g);
                    dropped.push(None);
                }
                Err(e) => {
                    grids.push(Grid::linear(1, 1));
                    dropped.push(Some(format!("cannot be launched: {e}")));
                }
            }
        }
        let descriptions: Vec<String> = cands.iter().map(|(c, _)| space.describe(c)).collect();
        let shown: Vec<TuneCandidate<'_>> = cands
            .iter()
            .zip(&descriptions)
            .enumerate()
            .map(|(index, ((config, _), description))| TuneCandidate { index, config, description })
            .collect();
        let launch = |i: usize| (cands[i].1)().launch(device, grids[i], args.to_vec());
        let sel = select(name, device, (first.1)().signature(), args, &shown, &dropped, &DeviceTimer::default(), &mut |_, _| {}, &launch)?;
        for (c, o) in shown.iter().zip(&sel.outcomes) {
            if let crate::runtime::tune::TuneOutcome::Dropped(why) = o {
                crate::logging::warning!("tuning prebuilt kernel `{name}`: candidate {} dropped: {why}", c.description);
            }
        }
        crate::logging::debug!(
            "prebuilt kernel `{name}`: no recorded tuning for {}; tuned at run time: {}",
            device.model(),
            descriptions[sel.chosen]
        );
        Ok(sel.chosen)
    }
}
