//! kache's events through the [`log`] facade: its warnings, and debug-level records of what the
//! cache and the compiler do (tier hits and misses, stores, compile times).
//!
//! Who receives them:
//!
//! - an application that installed a logger (`env_logger`, `tracing-subscriber`'s `init()`,
//!   which forwards `log` records to tracing, or any [`log::Log`]) gets every event, filtered
//!   by its own rules: kache is a library and never installs a global logger;
//! - otherwise kache prints them itself on stderr, warnings exactly as `kache: warning: ...`,
//!   filtered by `KACHE_LOG` (env_logger's syntax, through [`env_filter`]; default `warn`) and
//!   silenced by `KACHE_QUIET`; inside a build script warnings become `cargo::warning=` lines,
//!   since cargo hides a build script's stderr.
//!
//! "Installed a logger" is read from [`log::max_level`]: every logger that wants records
//! raises it above `Off` (the `log` crate hands none to a logger that leaves it there), and
//! nothing else does. The `kache` command installs [`StderrLogger`] so that `-v` can lower
//! the level.

use std::fmt;
use std::io::Write as _;
use std::sync::OnceLock;

use log::{Level, LevelFilter, Log, Metadata, Record};

use crate::build_script;

/// What kache prints when `KACHE_LOG` is not set, and what a `KACHE_LOG` of module
/// directives alone keeps for every other module: warnings and errors.
pub const DEFAULT_LEVEL: LevelFilter = LevelFilter::Warn;

/// Emits a record at `level` from the calling module. The arguments are formatted only when
/// someone takes the record.
macro_rules! event {
    ($level:expr, $($arg:tt)+) => {{
        let level: ::log::Level = $level;
        if $crate::logging::enabled(level, module_path!()) {
            $crate::logging::emit(level, module_path!(), format_args!($($arg)+), file!(), line!());
        }
    }};
}

/// A warning: something the user should know about that did not stop the work (a cache that
/// could not be opened, a remote that does not answer, a kernel that was not cached).
macro_rules! warning {
    ($($arg:tt)+) => { $crate::logging::event!(::log::Level::Warn, $($arg)+) };
}

/// A debug record: what kache did and how long it took, for someone looking into it.
macro_rules! debug {
    ($($arg:tt)+) => { $crate::logging::event!(::log::Level::Debug, $($arg)+) };
}

pub(crate) use {debug, event, warning};

/// Whether a record at `level` from `target` would be taken by anyone.
pub(crate) fn enabled(level: Level, target: &str) -> bool {
    let meta = Metadata::builder().level(level).target(target).build();
    if application_logger() { level <= log::max_level() && log::logger().enabled(&meta) } else { fallback().enabled(&meta) }
}

/// Hands a record to the application's logger, or else prints it as kache does.
pub(crate) fn emit(level: Level, target: &'static str, args: fmt::Arguments<'_>, file: &'static str, line: u32) {
    let record = Record::builder()
        .level(level)
        .target(target)
        .module_path_static(Some(target))
        .file_static(Some(file))
        .line(Some(line))
        .args(args)
        .build();
    if application_logger() {
        log::logger().log(&record);
    } else {
        fallback().log(&record);
    }
}

fn application_logger() -> bool {
    log::max_level() != LevelFilter::Off
}

/// kache's own printer when the application installed no logger, read from the environment once.
fn fallback() -> &'static StderrLogger {
    static FALLBACK: OnceLock<StderrLogger> = OnceLock::new();
    FALLBACK.get_or_init(StderrLogger::from_env)
}

/// Prints records on stderr the way kache always has (`kache: warning: ...`), or inside a
/// build script warnings and errors as `cargo::warning=` lines.
///
/// kache uses one itself, without installing it, when the application installed no logger.
/// An application that wants kache's format for everything it logs may install one:
///
/// ```
/// let logger = kache::logging::StderrLogger::new("warn,kache=debug");
/// log::set_max_level(logger.max_level());
/// // log::set_boxed_logger(Box::new(logger)) in the application's main.
/// ```
pub struct StderrLogger {
    /// `None` takes nothing (`KACHE_QUIET`).
    filter: Option<env_filter::Filter>,
}

impl StderrLogger {
    /// The printer the environment asks for: nothing under `KACHE_QUIET` (any value), else
    /// `KACHE_LOG`'s filter (see [`new`](Self::new)). A `KACHE_LOG` that does not parse is
    /// reported as a warning, and the default used.
    pub fn from_env() -> StderrLogger {
        if std::env::var_os("KACHE_QUIET").is_some() {
            return StderrLogger { filter: None };
        }
        let spec = std::env::var("KACHE_LOG").unwrap_or_default();
        StderrLogger::try_new(&spec).unwrap_or_else(|e| {
            let logger = StderrLogger::new("");
            logger.log(
                &Record::builder()
                    .level(Level::Warn)
                    .target(module_path!())
                    .args(format_args!("KACHE_LOG=`{spec}` is not a filter ({e}); showing warnings only"))
                    .build(),
            );
            logger
        })
    }

    /// A printer taking what `spec` says, in env_logger's syntax (`debug`,
    /// `kache::cache=debug`, `kache=trace/miss`), on top of [`DEFAULT_LEVEL`]: warnings stay
    /// on unless a bare level (`error`, `off`) says otherwise. A spec that does not parse
    /// leaves the default.
    pub fn new(spec: &str) -> StderrLogger {
        StderrLogger::try_new(spec).unwrap_or_else(|_| StderrLogger { filter: Some(default_filter().build()) })
    }

    /// [`new`](Self::new), or the parse error of `spec`.
    pub fn try_new(spec: &str) -> Result<StderrLogger, env_filter::ParseError> {
        let mut builder = default_filter();
        builder.try_parse(spec)?;
        Ok(StderrLogger { filter: Some(builder.build()) })
    }

    /// The most verbose level it takes (for [`log::set_max_level`]).
    pub fn max_level(&self) -> LevelFilter {
        self.filter.as_ref().map_or(LevelFilter::Off, env_filter::Filter::filter)
    }
}

/// [`DEFAULT_LEVEL`] for every module; a directive parsed on top replaces the bare level or
/// adds a module's.
fn default_filter() -> env_filter::Builder {
    let mut builder = env_filter::Builder::new();
    builder.filter_level(DEFAULT_LEVEL);
    builder
}

impl Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.filter.as_ref().is_some_and(|f| f.enabled(metadata))
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let target = record.target();
        let ours = target == "kache" || target.starts_with("kache::");
        let level = match record.level() {
            Level::Error => "error",
            Level::Warn => "warning",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        };
        if build_script::running() && record.level() <= Level::Warn {
            // `cargo::error=` would fail the build: an event never does.
            let from = if ours { "kache" } else { target };
            build_script::instruction("warning", &format!("{from}: {}", record.args()));
            return;
        }
        let line = match (ours, record.level()) {
            (true, Level::Error | Level::Warn | Level::Info) => format!("kache: {level}: {}", record.args()),
            (true, _) => format!("kache: {level}: {}: {}", target.strip_prefix("kache::").unwrap_or(target), record.args()),
            (false, _) => format!("{target}: {level}: {}", record.args()),
        };
        // One write per record, so records of several threads do not interleave; nothing to do
        // if stderr is gone.
        let _ = std::io::stderr().lock().write_all(format!("{line}\n").as_bytes());
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// An application's logger: keeps what it is given.
    struct Keeper(Mutex<Vec<(Level, String, String)>>);

    impl Log for Keeper {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn log(&self, record: &Record<'_>) {
            self.0.lock().unwrap().push((record.level(), record.target().to_string(), record.args().to_string()));
        }
        fn flush(&self) {}
    }

    /// The only test of this binary that installs a logger (one per process).
    #[test]
    fn an_application_logger_receives_kaches_records() {
        static KEEPER: Keeper = Keeper(Mutex::new(Vec::new()));
        log::set_logger(&KEEPER).unwrap();
        log::set_max_level(LevelFilter::Debug);
        warning!("to the application {}", 1);
        debug!("also to the application");
        event!(Level::Trace, "above its level");
        let kept = KEEPER.0.lock().unwrap().clone();
        let ours: Vec<_> = kept.iter().filter(|(_, target, _)| target == module_path!()).collect();
        assert_eq!(
            ours,
            [
                &(Level::Warn, module_path!().to_string(), "to the application 1".to_string()),
                &(Level::Debug, module_path!().to_string(), "also to the application".to_string())
            ]
        );
    }

    fn takes(logger: &StderrLogger, level: Level, target: &str) -> bool {
        logger.enabled(&Metadata::builder().level(level).target(target).build())
    }

    #[test]
    fn warnings_stay_on_unless_a_bare_level_says_otherwise() {
        let default = StderrLogger::new("");
        assert!(takes(&default, Level::Warn, "kache::cache"));
        assert!(!takes(&default, Level::Debug, "kache::cache"));
        assert_eq!(default.max_level(), LevelFilter::Warn);

        let cache = StderrLogger::new("kache::cache=debug");
        assert!(takes(&cache, Level::Debug, "kache::cache::store"));
        assert!(!takes(&cache, Level::Debug, "kache::jit"));
        assert!(takes(&cache, Level::Warn, "kache::jit"));

        let quiet = StderrLogger::new("off");
        assert!(!takes(&quiet, Level::Warn, "kache::cache"));
        assert_eq!(quiet.max_level(), LevelFilter::Off);

        let all = StderrLogger::new("debug");
        assert!(takes(&all, Level::Debug, "kache::jit") && !takes(&all, Level::Trace, "kache::jit"));
    }

    #[test]
    fn a_filter_that_does_not_parse_is_an_error() {
        assert!(StderrLogger::try_new("kache=loud").is_err());
        assert!(StderrLogger::try_new("a/b/c").is_err());
        // `new` falls back to the default.
        assert_eq!(StderrLogger::new("kache=loud").max_level(), LevelFilter::Warn);
    }
}
