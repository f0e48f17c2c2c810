//! Choosing among candidates of a tuned kernel on the real arguments, with no compiler: each
//! candidate runs on the arguments as they were (the arrays a launch may write are saved first
//! and restored before each candidate, so in-place kernels are safe), its outputs are compared
//! with the first good candidate's, and it is timed after warm-up (CUDA events on a GPU, the
//! wall clock on the host backend, or a [`LaunchTimer`] the caller gives). A candidate that
//! faults, disagrees or cannot be timed is dropped, never chosen. The JIT and the runtime of
//! prebuilt crates both tune through [`select`]; what a device is, for a tuning result's key, is
//! its [`DeviceModel`].

use std::time::{Duration, Instant};

use super::{ArgValue, Device, DeviceImpl, Dim3, Grid, host};
use crate::capture::Location;
use crate::error::{Error, Result};
use crate::ir::{Scalar, TuneArgs, TuneSpace, Ty};

/// What a tuning result is measured on: a GPU model (or the host's CPU), with what else makes
/// two machines of one name differ in speed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceModel {
    /// The GPU's name (`NVIDIA H100 80GB HBM3`), or `host: ` and the CPU's.
    pub name: String,
    /// Streaming multiprocessors, or the host backend's worker threads.
    pub multiprocessors: u32,
    /// The GPU's compute capability.
    pub compute_capability: Option<(i32, i32)>,
    /// The CUDA driver's version.
    pub driver: Option<i32>,
}

impl std::fmt::Display for DeviceModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.compute_capability, self.driver) {
            (Some((major, minor)), Some(d)) => {
                write!(f, "{} ({} SMs, compute capability {major}.{minor}, driver {d})", self.name, self.multiprocessors)
            }
            _ => write!(f, "{} ({} threads)", self.name, self.multiprocessors),
        }
    }
}

impl Device {
    /// The device's model, what tuning results are keyed by: GPUs of one model, multiprocessor
    /// count and driver share them, whichever machine of a fleet measured them.
    pub fn model(&self) -> DeviceModel {
        match &*self.inner {
            DeviceImpl::Host(_) => DeviceModel {
                name: format!("host: {}", host_cpu_name()),
                multiprocessors: host::workers() as u32,
                compute_capability: None,
                driver: None,
            },
            DeviceImpl::Cuda(c) => DeviceModel {
                name: c.name.clone(),
                multiprocessors: c.multiprocessors,
                compute_capability: Some(c.compute_capability),
                driver: Some(c.driver_version),
            },
        }
    }
}

/// The CPU's model name (Linux's `/proc/cpuinfo`), else the architecture's; read once.
fn host_cpu_name() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        let info = crate::files::read_regular(std::path::Path::new("/proc/cpuinfo"), 1 << 20, true).unwrap_or_default();
        String::from_utf8_lossy(&info)
            .lines()
            .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_string()))
            .unwrap_or_else(|| std::env::consts::ARCH.to_string())
    })
    .clone()
}

/// A launch's arguments, as `#[tune]` expressions read them.
pub(crate) struct LaunchArgs<'a>(pub(crate) &'a [ArgValue]);

impl TuneArgs for LaunchArgs<'_> {
    fn scalar(&self, i: usize) -> Option<i128> {
        match self.0.get(i)? {
            ArgValue::Scalar(v) => v.as_i128(),
            _ => None,
        }
    }
    fn shape(&self, i: usize) -> Option<Vec<usize>> {
        match self.0.get(i)? {
            ArgValue::Array { desc, .. } => Some(desc.shape().to_vec()),
            _ => None,
        }
    }
}

/// The launch shape of configuration `config` of kernel `kernel`'s space for `args`, checked
/// like any grid: [`Error::Tuning`] where the expressions have no value, [`Error::BadLaunch`]
/// where a dimension does not fit or the grid is invalid.
pub(crate) fn launch_shape(kernel: &str, space: &TuneSpace, config: &[u64], args: &[ArgValue]) -> Result<Grid> {
    let s = space.shape(config, &LaunchArgs(args)).map_err(|e| Error::Tuning {
        kernel: kernel.to_string(),
        problem: format!("the launch shape of {} has no value: {e}", space.describe(config)),
    })?;
    let dim = |d: [u64; 3]| -> Result<Dim3> {
        let f = |v: u64| {
            u32::try_from(v).map_err(|_| Error::BadLaunch(format!("{v} does not fit a launch dimension ({})", space.describe(config))))
        };
        Ok(Dim3(f(d[0])?, f(d[1])?, f(d[2])?))
    };
    let shared = u32::try_from(s.shared_mem).map_err(|_| Error::BadLaunch(format!("{} bytes of shared memory", s.shared_mem)))?;
    let grid = Grid::new(dim(s.grid)?, dim(s.block)?).with_shared_mem(shared);
    grid.check()?;
    Ok(grid)
}

/// One candidate, as a [`LaunchTimer`] and a progress report see it.
#[derive(Clone, Copy, Debug)]
pub struct TuneCandidate<'a> {
    /// Its position among the candidates.
    pub index: usize,
    /// The tuned parameters' values.
    pub config: &'a [u64],
    /// The values as text (`TILE = 16, BLOCK = 256`).
    pub description: &'a str,
}

/// Times one candidate's launches. kache's default, [`DeviceTimer`], runs a few launches to
/// warm up and then times batches of them with device events; a test gives its own, to make
/// the winner what it wants.
pub trait LaunchTimer: Send + Sync {
    /// The time of one launch of `candidate` on `device`: `launch` launches it once, on the
    /// arguments as the previous launch left them, and may be called any number of times.
    fn time(&self, device: &Device, candidate: &TuneCandidate<'_>, launch: &mut dyn FnMut() -> Result<()>) -> Result<Duration>;
}

impl<T: LaunchTimer + ?Sized> LaunchTimer for &T {
    fn time(&self, device: &Device, candidate: &TuneCandidate<'_>, launch: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        (**self).time(device, candidate, launch)
    }
}

/// The default [`LaunchTimer`]: `warmup` launches, then `batches` batches of launches, each
/// batch long enough to be measured (about a millisecond, at most 1,000 launches); one launch's
/// time is the median batch's over its launches. On a GPU each batch is timed between CUDA
/// events on the stream kache launches on; on the host backend, by the wall clock.
#[derive(Clone, Copy, Debug)]
pub struct DeviceTimer {
    /// Launches before timing.
    pub warmup: u32,
    /// Timed batches.
    pub batches: u32,
}

impl Default for DeviceTimer {
    fn default() -> DeviceTimer {
        DeviceTimer { warmup: 2, batches: 5 }
    }
}

/// The time `launches` launches take on `device`, from the first's start to the last's end.
fn time_batch(device: &Device, launches: u32, launch: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
    match &*device.inner {
        DeviceImpl::Cuda(c) => {
            let ms = c.time(&mut || (0..launches).try_for_each(|_| launch()))?;
            Ok(Duration::from_secs_f64(ms.max(0.0) / 1e3))
        }
        DeviceImpl::Host(_) => {
            let t0 = Instant::now();
            for _ in 0..launches {
                launch()?;
            }
            Ok(t0.elapsed())
        }
    }
}

impl LaunchTimer for DeviceTimer {
    fn time(&self, device: &Device, _candidate: &TuneCandidate<'_>, launch: &mut dyn FnMut() -> Result<()>) -> Result<Duration> {
        for _ in 0..self.warmup {
            launch()?;
        }
        device.synchronize()?;
        // One launch says how many make a batch of about a millisecond.
        let one = time_batch(device, 1, launch)?.max(Duration::from_nanos(100));
        let per_batch = (Duration::from_millis(1).as_nanos() / one.as_nanos()).clamp(1, 1000) as u32;
        let mut times = Vec::with_capacity(self.batches as usize);
        for _ in 0..self.batches.max(1) {
            times.push(time_batch(device, per_batch, launch)? / per_batch);
        }
        device.synchronize()?;
        times.sort();
        Ok(times[times.len() / 2])
    }
}

/// What happened to one candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TuneOutcome {
    /// Ran, agreed with the reference (the first candidate that ran), and took this long per
    /// launch.
    Timed(Duration),
    /// Dropped: why (it did not compile, faulted, disagreed, or could not be timed).
    Dropped(String),
}

/// The arrays of a launch that it may write, saved before the first candidate runs.
struct Saved {
    arrays: Vec<SavedArray>,
}

struct SavedArray {
    /// The argument's name, for messages.
    name: String,
    location: Location,
    /// First byte (address) and the bytes of the span the array covers.
    at: u64,
    bytes: Vec<u8>,
    /// How elements compare: by value with a tolerance for floats, exactly otherwise.
    elem: Option<Scalar>,
}

/// Reads `len` bytes at address `at` of `location`.
fn read_memory(device: &Device, location: Location, at: u64, len: usize) -> Result<Vec<u8>> {
    let mut out = vec![0u8; len];
    match (&*device.inner, location) {
        (DeviceImpl::Cuda(c), Location::Cuda(_)) => {
            // SAFETY: the span is an argument's, checked against this device at the launch's
            // start and kept alive by the argument (its owner) for the whole tuning.
            unsafe { c.read_raw(at, &mut out)? };
        }
        (DeviceImpl::Host(_), Location::HostBackend(_) | Location::HostMemory) if len > 0 => {
            let _stream = host::stream();
            // SAFETY: the span is an argument's, on this (host) device, whose interface promises
            // it is live host memory while its owner (held by the argument) lives; the host
            // device's stream is held, so no launch writes it meanwhile.
            unsafe { std::ptr::copy_nonoverlapping(at as *const u8, out.as_mut_ptr(), len) };
        }
        (DeviceImpl::Host(_), _) if len == 0 => {}
        _ => return Err(Error::Device(format!("cannot read memory in {location} from {}", device.describe()))),
    }
    Ok(out)
}

/// Writes `bytes` at address `at` of `location`.
fn write_memory(device: &Device, location: Location, at: u64, bytes: &[u8]) -> Result<()> {
    match (&*device.inner, location) {
        (DeviceImpl::Cuda(c), Location::Cuda(_)) => {
            // SAFETY: as in `read_memory`; the launch may write the span (its argument is
            // writable), so restoring it writes only what the kernel could have.
            unsafe { c.write_raw(at, bytes) }
        }
        (DeviceImpl::Host(_), Location::HostBackend(_) | Location::HostMemory) => {
            if !bytes.is_empty() {
                let _stream = host::stream();
                // SAFETY: as in `read_memory`; the argument is writable.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), at as *mut u8, bytes.len()) };
            }
            Ok(())
        }
        _ => Err(Error::Device(format!("cannot write memory in {location} from {}", device.describe()))),
    }
}

impl Saved {
    /// Saves every array argument the kernel (signature `sig`) may write. An array whose
    /// description says read-only is never one, whatever the argument claims (its fields are
    /// public): kache never writes through it, not even the bytes it held.
    fn new(device: &Device, sig: &[(String, Ty)], args: &[ArgValue]) -> Result<Saved> {
        let mut arrays = Vec::new();
        for ((name, ty), a) in sig.iter().zip(args) {
            let (location, (lo, hi), elem) = match a {
                ArgValue::Array { desc, writable: true } if !desc.read_only() && matches!(ty, Ty::Array(t) if t.writable) => {
                    (desc.location(), desc.byte_range(), Some(desc.elem))
                }
                ArgValue::Structs(s) if s.writable => {
                    let len = (s.len as u64).saturating_mul(s.layout.size as u64);
                    (s.location, (s.ptr, s.ptr.saturating_add(len)), None)
                }
                _ => continue,
            };
            let bytes = read_memory(device, location, lo, (hi - lo) as usize)?;
            arrays.push(SavedArray { name: name.clone(), location, at: lo, bytes, elem });
        }
        Ok(Saved { arrays })
    }

    /// Puts every saved array back as it was.
    fn restore(&self, device: &Device) -> Result<()> {
        self.arrays.iter().try_for_each(|a| write_memory(device, a.location, a.at, &a.bytes))
    }

    /// The saved arrays as they are now (what a candidate wrote).
    fn current(&self, device: &Device) -> Result<Vec<Vec<u8>>> {
        self.arrays.iter().map(|a| read_memory(device, a.location, a.at, a.bytes.len())).collect()
    }
}

/// The first element where `got` differs from `want` beyond what rounding explains, as a
/// message; `None` when they agree.
fn disagreement(name: &str, elem: Option<Scalar>, want: &[u8], got: &[u8]) -> Option<String> {
    let Some(elem) = elem.filter(|e| e.is_float()) else {
        let size = elem.map_or(1, |e| e.size());
        let i = want.iter().zip(got).position(|(a, b)| a != b)?;
        return Some(format!("`{name}` differs at element {} (bytes {i})", i / size));
    };
    let values = |bytes: &[u8]| -> Vec<f64> {
        let size = elem.size();
        bytes
            .chunks_exact(size)
            .map(|c| match elem {
                Scalar::F64 => f64::from_le_bytes(c.try_into().unwrap_or([0; 8])),
                Scalar::F32 => f32::from_le_bytes(c.try_into().unwrap_or([0; 4])) as f64,
                Scalar::F16 => half::f16::from_le_bytes(c.try_into().unwrap_or([0; 2])).to_f64(),
                _ => half::bf16::from_le_bytes(c.try_into().unwrap_or([0; 2])).to_f64(),
            })
            .collect()
    };
    let (want, got) = (values(want), values(got));
    // Candidates may sum in another order: agreement within a few units of the type's last
    // place relative to the largest value of the array, or of the element.
    let rtol = match elem {
        Scalar::F64 => 1e-9,
        Scalar::F32 => 1e-4,
        _ => 1e-2,
    };
    let scale = want.iter().filter(|v| v.is_finite()).fold(0.0f64, |m, v| m.max(v.abs()));
    want.iter().zip(&got).enumerate().find_map(|(i, (w, g))| {
        let same = if w.is_nan() || g.is_nan() {
            w.is_nan() && g.is_nan()
        } else if w.is_infinite() || g.is_infinite() {
            w == g
        } else {
            (w - g).abs() <= rtol * scale.max(w.abs()).max(f64::MIN_POSITIVE)
        };
        (!same).then(|| format!("`{name}` differs at element {i}: {g} where the reference has {w}"))
    })
}

/// What [`select`] found.
#[derive(Clone, Debug)]
pub struct Selection {
    /// Each candidate's outcome, in the candidates' order.
    pub outcomes: Vec<TuneOutcome>,
    /// The chosen candidate: the fastest timed one (the first of equals).
    pub chosen: usize,
}

/// Tunes: `launch(i)` launches candidate `i` once on `args` (the launch's arguments, checked
/// against `sig`, the kernel's signature); `dropped[i]` says why candidate `i` cannot run at all
/// (it did not compile), else `None`. Every candidate that can runs on the arguments as they
/// were (the arrays it may write restored first) and is compared with the first that ran
/// without fault, then timed by `timer`. The arrays are left as the chosen candidate's single
/// launch leaves them, as if only it had run. `progress` is told each candidate as it starts.
/// With no candidate left, [`Error::Tuning`] says why each was dropped.
#[allow(clippy::too_many_arguments)]
pub fn select(
    kernel: &str,
    device: &Device,
    sig: &[(String, Ty)],
    args: &[ArgValue],
    candidates: &[TuneCandidate<'_>],
    dropped: &[Option<String>],
    timer: &dyn LaunchTimer,
    progress: &mut dyn FnMut(usize, &TuneCandidate<'_>),
    launch: &dyn Fn(usize) -> Result<()>,
) -> Result<Selection> {
    let saved = Saved::new(device, sig, args)?;
    let mut reference: Option<(usize, Vec<Vec<u8>>)> = None;
    let mut outcomes = Vec::with_capacity(candidates.len());
    for (i, c) in candidates.iter().enumerate() {
        progress(i, c);
        if let Some(Some(why)) = dropped.get(i) {
            outcomes.push(TuneOutcome::Dropped(why.clone()));
            continue;
        }
        let outcome = (|| -> Result<TuneOutcome> {
            saved.restore(device)?;
            if let Err(e) = launch(i).and_then(|()| device.synchronize()) {
                return Ok(TuneOutcome::Dropped(format!("faults: {e}")));
            }
            let out = saved.current(device)?;
            match &reference {
                None => reference = Some((i, out)),
                Some((r, want)) => {
                    for ((a, w), g) in saved.arrays.iter().zip(want).zip(&out) {
                        if let Some(why) = disagreement(&a.name, a.elem, w, g) {
                            return Ok(TuneOutcome::Dropped(format!("disagrees with {}: {why}", candidates[*r].description)));
                        }
                    }
                }
            }
            Ok(match timer.time(device, c, &mut || launch(i)) {
                Ok(t) => TuneOutcome::Timed(t),
                Err(e) => TuneOutcome::Dropped(format!("could not be timed: {e}")),
            })
        })()?;
        outcomes.push(outcome);
    }
    let chosen = outcomes
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            TuneOutcome::Timed(t) => Some((i, *t)),
            TuneOutcome::Dropped(_) => None,
        })
        .min_by_key(|(i, t)| (*t, *i))
        .map(|(i, _)| i);
    let Some(chosen) = chosen else {
        saved.restore(device)?;
        let why = candidates.iter().zip(&outcomes).map(|(c, o)| match o {
            TuneOutcome::Dropped(why) => format!("{}: {why}", c.description),
            TuneOutcome::Timed(_) => format!("{}: timed", c.description),
        });
        return Err(Error::Tuning {
            kernel: kernel.to_string(),
            problem: format!("no candidate is usable ({})", why.collect::<Vec<_>>().join("; ")),
        });
    };
    saved.restore(device)?;
    launch(chosen)?;
    Ok(Selection { outcomes, chosen })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_agree_within_rounding_and_nothing_else_does() {
        let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let want = f32s(&[1000.0, 1.0, f32::NAN, f32::INFINITY]);
        assert_eq!(disagreement("y", Some(Scalar::F32), &want, &f32s(&[1000.01, 1.0, f32::NAN, f32::INFINITY])), None);
        let off = disagreement("y", Some(Scalar::F32), &want, &f32s(&[1000.0, 1.5, f32::NAN, f32::INFINITY])).unwrap();
        assert_eq!(off, "`y` differs at element 1: 1.5 where the reference has 1");
        assert!(disagreement("y", Some(Scalar::F32), &want, &f32s(&[1000.0, 1.0, 0.0, f32::INFINITY])).is_some());
        assert!(disagreement("y", Some(Scalar::F32), &want, &f32s(&[1000.0, 1.0, f32::NAN, f32::NEG_INFINITY])).is_some());
        let ints = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        assert_eq!(disagreement("n", Some(Scalar::U32), &ints(&[1, 2]), &ints(&[1, 2])), None);
        assert_eq!(disagreement("n", Some(Scalar::U32), &ints(&[1, 2]), &ints(&[1, 3])).unwrap(), "`n` differs at element 1 (bytes 4)");
    }
}
