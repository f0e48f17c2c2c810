//! The remote's time budget. Every exchange runs on one worker thread that owns the
//! connection, and the caller waits for its answer until a deadline and no longer, whatever the
//! exchange is stuck in: name resolution, connect, the TLS handshake, a read from a frozen
//! server, a cluster's retries. (Socket timeouts alone bound each system call, not their sum:
//! a connect, a handshake and a read each waited the whole timeout before.)

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::config::RemoteConfig;
use super::link::{Failure, Link};

/// The worker's side: the connection, opened on first use and dropped after any failure.
pub(super) struct Session {
    config: Arc<RemoteConfig>,
    link: Option<Link>,
}

impl Session {
    /// Runs `exchange` on the connection (opening it first if needed). A failure other than a
    /// refused command drops the connection: the next exchange starts afresh.
    pub(super) fn run<R>(&mut self, exchange: impl FnOnce(&mut Link) -> redis::RedisResult<R>) -> Result<R, Failure> {
        let link = match &mut self.link {
            Some(l) => l,
            None => self.link.insert(Link::open(&self.config)?),
        };
        exchange(link).map_err(|e| {
            let failure = Failure::Redis(e);
            if !failure.is_refused_command() {
                self.link = None;
            }
            failure
        })
    }

    /// The configuration.
    pub(super) fn config(&self) -> &RemoteConfig {
        &self.config
    }
}

type Job = Box<dyn FnOnce(&mut Session) + Send>;

/// The caller's side: hands exchanges to the worker thread (started on first use, restarted if
/// it ever dies) and waits for each until its deadline.
pub(super) struct Worker {
    config: Arc<RemoteConfig>,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
}

impl Worker {
    pub(super) fn new(config: Arc<RemoteConfig>) -> Worker {
        Worker { config, jobs: Mutex::new(None) }
    }

    fn spawn(&self) -> Result<mpsc::Sender<Job>, Failure> {
        let (tx, rx) = mpsc::channel::<Job>();
        let mut session = Session { config: self.config.clone(), link: None };
        std::thread::Builder::new()
            .name("kache-remote".into())
            .spawn(move || {
                // Ends when the store is dropped (the sender with it).
                while let Ok(job) = rx.recv() {
                    if std::panic::catch_unwind(AssertUnwindSafe(|| job(&mut session))).is_err() {
                        session.link = None;
                    }
                }
            })
            .map_err(|e| Failure::Setup(format!("cannot start the remote cache's thread: {e}")))?;
        Ok(tx)
    }

    fn submit(&self, job: Job) -> Result<(), Failure> {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        let tx = match &*jobs {
            Some(tx) => tx.clone(),
            None => jobs.insert(self.spawn()?).clone(),
        };
        if let Err(mpsc::SendError(job)) = tx.send(job) {
            // The thread is gone: start another.
            let tx = jobs.insert(self.spawn()?);
            tx.send(job).map_err(|_| Failure::Setup("the remote cache's thread stopped".into()))?;
        }
        Ok(())
    }

    /// Runs `exchange` on the worker and waits for its result until `deadline`. Past it the
    /// answer is [`Failure::Timeout`]; the exchange finishes on its own (bounded by the socket
    /// timeouts) and its connection, too slow to keep, is dropped.
    pub(super) fn call<R: Send + 'static>(
        &self,
        deadline: Instant,
        exchange: impl FnOnce(&mut Session) -> Result<R, Failure> + Send + 'static,
    ) -> Result<R, Failure> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.submit(Box::new(move |session: &mut Session| {
            // Queued behind an exchange that outlived its caller: nobody waits for this one.
            if Instant::now() >= deadline {
                return;
            }
            let result = exchange(session);
            if tx.send(result).is_err() {
                session.link = None;
            }
        }))?;
        let budget = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(budget) {
            Ok(result) => result,
            Err(RecvTimeoutError::Timeout) => Err(Failure::Timeout(self.config.timeout())),
            Err(RecvTimeoutError::Disconnected) => Err(Failure::Setup("the remote cache's thread stopped".into())),
        }
    }
}
