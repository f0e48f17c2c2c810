//! `kache tune FILE --kernel NAME --arg ..`: tunes a `#[tune]` kernel on this machine's device
//! with arguments made from their descriptions (arrays of pseudo-random values of a given shape,
//! scalars as literals), with a progress bar, and stores the result in the cache; and `kache
//! explain` of a tuned launch. Over `Kernel::tuner`.

use std::io::IsTerminal;

use std::path::Path;

use kache::{ArgValue, Config, Device, DeviceArray, Element, Jit, KernelArg, Scalar, Ty};

use super::{Failure, load, user, write_stdout};

/// Prints a line on stdout (see `main.rs`'s `say!`).
macro_rules! say {
    ($($arg:tt)*) => {
        write_stdout(format!("{}\n", format_args!($($arg)*)).as_bytes())?
    };
}

/// The device `--device` names: `host`, `cuda` (device 0) or `cuda:N`; by default device 0 of
/// CUDA where there is one, else the host backend.
pub fn device_named(name: Option<&str>) -> Result<Device, Failure> {
    match name {
        None => Ok(Device::best()),
        Some("host") => Ok(Device::host()),
        Some(d) => {
            let n = match d.strip_prefix("cuda") {
                Some("") => 0,
                Some(rest) => rest.strip_prefix(':').and_then(|n| n.parse().ok()).ok_or_else(|| bad_device(d))?,
                None => return Err(bad_device(d)),
            };
            Ok(Device::cuda(n)?)
        }
    }
}

fn bad_device(d: &str) -> Failure {
    user(format!("--device {d}: expected `host`, `cuda` or `cuda:N`"))
}

/// Pseudo-random values (a fixed sequence, so two runs tune on the same data): floats in
/// [-1, 1), integers in [0, 256), booleans alternating.
fn values<T>(n: usize, f: impl Fn(u64) -> T) -> Vec<T> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            f(state)
        })
        .collect()
}

fn unit(r: u64) -> f64 {
    (r >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

/// An array argument: uploaded to `dev` with `shape`, writable or not.
fn array<T: Element>(dev: &Device, data: Vec<T>, shape: &[usize], writable: bool) -> Result<ArgValue, Failure> {
    let mut a: DeviceArray<T> = dev.upload_nd(&data, shape, kache::Order::C)?;
    Ok(if writable {
        // `&mut` makes the argument writable.
        let w: &mut DeviceArray<T> = &mut a;
        KernelArg::arg(&w)?
    } else {
        KernelArg::arg(&&a)?
    })
}

/// `f32[1024,1024]`: an element type and a shape.
fn parse_array(spec: &str) -> Option<(Scalar, Vec<usize>)> {
    let (ty, rest) = spec.split_once('[')?;
    let dims = rest.strip_suffix(']')?;
    let shape = dims.split(',').map(|d| d.trim().replace('_', "").parse::<usize>().ok()).collect::<Option<Vec<_>>>()?;
    Some((Scalar::from_name(ty.trim())?, shape))
}

/// The launch's arguments from `--arg NAME=VALUE` (every parameter once, in any order): an
/// array parameter takes `TYPE[D0,D1,..]` (C order, pseudo-random values), a scalar a literal
/// whose suffix gives its type (`2.0f32`, `4096u32`; as `--define`).
pub fn arguments(signature: &[(String, Ty)], given: &[String], dev: &Device) -> Result<Vec<ArgValue>, Failure> {
    let mut by_name = std::collections::HashMap::new();
    for g in given {
        let (name, value) =
            g.split_once('=').ok_or_else(|| user(format!("--arg {g}: expected NAME=VALUE, like x=f32[4096] or n=4096u32")))?;
        if by_name.insert(name.trim().to_string(), value.trim().to_string()).is_some() {
            return Err(user(format!("--arg {}: given twice", name.trim())));
        }
    }
    let mut out = Vec::new();
    for (name, ty) in signature {
        let value = by_name
            .remove(name)
            .ok_or_else(|| user(format!("no --arg {name}=..: every parameter of the kernel needs one ({})", describe_params(signature))))?;
        let (is_array, writable, ndim) = match ty {
            Ty::Array(a) => (true, a.writable, a.ndim),
            Ty::ParamArray(a) => (true, a.writable, a.ndim),
            _ => (false, false, 0),
        };
        if !is_array {
            let v = kache::lang::parse_scalar_literal(&value).map_err(|m| user(format!("--arg {name}={value}: {m}")))?;
            out.push(ArgValue::Scalar(v));
            continue;
        }
        let (elem, shape) =
            parse_array(&value).ok_or_else(|| user(format!("--arg {name}={value}: an array is TYPE[D0,D1,..], like f32[1024,1024]")))?;
        if shape.len() != ndim as usize {
            return Err(user(format!("--arg {name}={value}: parameter `{name}` has {ndim} dimension(s)")));
        }
        let n: usize = shape.iter().product();
        let arg = match elem {
            Scalar::Bool => array(dev, values(n, |r| r & 1 == 1), &shape, writable)?,
            Scalar::I8 => array(dev, values(n, |r| (r % 128) as i8), &shape, writable)?,
            Scalar::I16 => array(dev, values(n, |r| (r % 256) as i16), &shape, writable)?,
            Scalar::I32 => array(dev, values(n, |r| (r % 256) as i32), &shape, writable)?,
            Scalar::I64 => array(dev, values(n, |r| (r % 256) as i64), &shape, writable)?,
            Scalar::U8 => array(dev, values(n, |r| r as u8), &shape, writable)?,
            Scalar::U16 => array(dev, values(n, |r| (r % 256) as u16), &shape, writable)?,
            Scalar::U32 => array(dev, values(n, |r| (r % 256) as u32), &shape, writable)?,
            Scalar::U64 => array(dev, values(n, |r| r % 256), &shape, writable)?,
            Scalar::Usize => array(dev, values(n, |r| (r % 256) as usize), &shape, writable)?,
            Scalar::F16 => array(dev, values(n, |r| kache::half::f16::from_f64(unit(r))), &shape, writable)?,
            Scalar::Bf16 => array(dev, values(n, |r| kache::half::bf16::from_f64(unit(r))), &shape, writable)?,
            Scalar::F32 => array(dev, values(n, |r| unit(r) as f32), &shape, writable)?,
            Scalar::F64 => array(dev, values(n, unit), &shape, writable)?,
        };
        out.push(arg);
    }
    if let Some(extra) = by_name.keys().next() {
        return Err(user(format!("--arg {extra}: the kernel has no parameter `{extra}` ({})", describe_params(signature))));
    }
    Ok(out)
}

fn describe_params(signature: &[(String, Ty)]) -> String {
    format!("its parameters: {}", signature.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "))
}

/// A progress bar on stderr, drawn only on a terminal.
pub fn bar() -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    if !std::io::stderr().is_terminal() {
        pb.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    if let Ok(style) = indicatif::ProgressStyle::with_template("tuning {bar:30} {pos}/{len} {msg}") {
        pb.set_style(style);
    }
    pb
}

/// `kache explain FILE --kernel NAME --arg ..`: the tuning key of a tuned launch with those
/// arguments, whether the local store has its result, and how the store's other results of the
/// kernel differ.
pub fn explain(
    file: &Path,
    only: &[String],
    config: Config,
    defines: &[String],
    args: &[String],
    device: Option<&str>,
) -> Result<(), Failure> {
    let [name] = only else { return Err(user("explaining a tuned launch takes one --kernel and its --arg values")) };
    let jit = Jit::new(config)?;
    let m = load(&jit, file, defines)?;
    let k = m.kernel(name)?;
    let dev = device_named(device)?;
    let values = arguments(k.signature(), args, &dev)?;
    let e = k.tuner().explain(&dev, values)?;
    say!("tuned launch of {} on {}, key {:?}", k.name(), e.device, e.bucket);
    for (n, h) in &e.derivation.components {
        say!("  {n:<15} {}", blake3::Hash::from_bytes(*h).to_hex());
    }
    say!("  {:<15} {}", "key", e.derivation.key);
    match &e.found {
        Some(config) => say!("tuned: {config} (a tuned launch with these arguments runs it at once)"),
        None if e.others.is_empty() => say!("not tuned: the store holds no tuning result of kernel {}", k.name()),
        None => {
            say!("not tuned: the store's results of kernel {} are for another", k.name());
            for (key, differs) in &e.others {
                say!("  {}: {}", &key.hex()[..16], differs.join("; "));
            }
        }
    }
    Ok(())
}

/// `kache tune`: tunes (or shows the cached result), with a progress bar.
pub fn tune(file: &Path, kernel: &str, args: &[String], device: Option<&str>, defines: &[String], retune: bool) -> Result<(), Failure> {
    let jit = Jit::new(Config::from_env()?)?;
    let m = load(&jit, file, defines)?;
    let k = m.kernel(kernel)?;
    let dev = device_named(device)?;
    let values = arguments(k.signature(), args, &dev)?;
    let pb = bar();
    let bar = pb.clone();
    let t = k
        .tuner()
        .retune(retune)
        .progress(move |done, total, what| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(what.to_string());
        })
        .launch(&dev, values)?;
    pb.finish_and_clear();
    let config: Vec<String> = t.config.iter().map(|(n, v)| format!("{n} = {v}")).collect();
    say!("kernel {} on {}", k.name(), dev.model());
    match &t.source {
        kache::TuningSource::Tuned(r) => {
            for (i, (c, o)) in r.candidates.iter().enumerate() {
                let mark = if i == r.chosen { "  <- chosen" } else { "" };
                match o {
                    kache::TuneOutcome::Timed(d) => say!("  {c:<32} {:>10.4} ms{mark}", d.as_secs_f64() * 1e3),
                    kache::TuneOutcome::Dropped(why) => say!("  {c:<32} dropped: {why}"),
                }
            }
            say!(
                "tuned in {} ms: {} ({}){}",
                r.elapsed.as_millis(),
                config.join(", "),
                t.kernel,
                if r.stored { format!("; stored as {}", t.key) } else { "; not stored (the kernel is not persisted)".into() }
            );
        }
        kache::TuningSource::Cache(tier) => {
            say!("cached ({tier:?}): {} ({}), key {}; --retune measures again", config.join(", "), t.kernel, t.key)
        }
        kache::TuningSource::Memoized => say!("{} ({})", config.join(", "), t.kernel),
    }
    Ok(())
}
