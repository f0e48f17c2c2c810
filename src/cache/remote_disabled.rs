//! The remote tier in a build without the `remote` feature: the same names, no Redis or TLS
//! code. [`RemoteConfig`] and [`RemoteStore`] cannot be made (they have no values), so a
//! [`CacheConfig`](super::CacheConfig) of this build never has a remote, and
//! [`RemoteConfig::from_env`] refuses `KACHE_REMOTE` with the remedy rather than ignoring it.
//! The types and fields that mention them are the same in every build, so features only add.

use std::convert::Infallible;
use std::time::Duration;

use super::counters::Counters;
use super::key::Key;
use crate::error::{Error, Result};

/// What a remote configuration or operation says in a build without the feature.
const DISABLED: &str = "this build of kache has no remote cache: enable its `remote` feature \
                        (kache-gpu = { version = \"0.1\", features = [\"remote\"] }, a default feature)";

/// A remote configuration: none can exist in this build.
#[derive(Clone, Debug)]
pub struct RemoteConfig {
    never: Infallible,
}

impl RemoteConfig {
    /// `None` without `KACHE_REMOTE`; with it, a configuration error that says this build has
    /// no remote tier (a remote asked for is never silently left out).
    pub fn from_env() -> Result<Option<RemoteConfig>> {
        from_var(&|v| std::env::var_os(v))
    }

    /// Always a configuration error in this build.
    pub fn new(url: String, secret: Vec<u8>, read_only: bool, timeout: Duration) -> Result<RemoteConfig> {
        let _ = (url, secret, read_only, timeout);
        Err(Error::Config(DISABLED.to_string()))
    }

    /// The URL, credentials hidden.
    pub fn display_url(&self) -> &str {
        match self.never {}
    }

    /// Whether nothing is stored.
    pub fn read_only(&self) -> bool {
        match self.never {}
    }

    /// The time budget of one lookup or store.
    pub fn timeout(&self) -> Duration {
        match self.never {}
    }
}

/// A remote store: none can exist in this build.
#[derive(Debug)]
pub struct RemoteStore {
    never: Infallible,
}

impl RemoteStore {
    /// Never reached: there is no [`RemoteConfig`] to pass.
    pub fn new(config: RemoteConfig) -> Result<RemoteStore> {
        match config.never {}
    }

    /// Its configuration.
    pub fn config(&self) -> &RemoteConfig {
        match self.never {}
    }

    /// Never reached.
    pub fn get_many(&self, _counters: &Counters, _keys: &[Key]) -> Vec<Option<Vec<u8>>> {
        match self.never {}
    }

    /// Never reached.
    pub fn put_many(&self, _counters: &Counters, _entries: &[(Key, Vec<u8>)]) {
        match self.never {}
    }
}

/// [`RemoteConfig::from_env`] under the environment `var` gives.
fn from_var(var: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Result<Option<RemoteConfig>> {
    match var("KACHE_REMOTE").filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(_) => Err(Error::Config(format!("KACHE_REMOTE is set, but {DISABLED}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_asked_for_is_refused_with_the_feature_to_enable() {
        assert!(matches!(from_var(&|_| None), Ok(None)));
        assert!(matches!(from_var(&|_| Some("".into())), Ok(None)));
        let e = from_var(&|v| (v == "KACHE_REMOTE").then(|| "redis://127.0.0.1:6379".into())).unwrap_err();
        assert!(matches!(&e, Error::Config(m) if m.contains("KACHE_REMOTE is set") && m.contains("`remote` feature")), "{e}");
        let e = RemoteConfig::new("redis://127.0.0.1:6379".into(), vec![7; 32], false, Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("`remote` feature"), "{e}");
    }
}
