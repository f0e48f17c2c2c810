//! Independent jobs run on several threads, their results in the jobs' order: how a batch of
//! compiles (`Jit::compile_many`, `Module::compile_all`, the `kache` command, the prebuild
//! step) and of cubin assemblies uses the machine's cores. Each job runs wholly on one thread,
//! so a compile's LLVM context is created, used and dropped on the thread that runs it (inkwell's
//! `Context` is not `Send`), and the results do not depend on the number of threads or on which
//! thread ran what. A job that panics is that job's error, whichever thread ran it.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Stack of each worker thread: the main thread's usual size, since a job may run LLVM's
/// passes (kache's own recursive passes grow their stack as they need).
const WORKER_STACK: usize = 8 << 20;

/// The number of threads a batch uses by default: the machine's available parallelism.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// `f` of every item, on up to `threads` threads (the calling thread is one of them), in the
/// items' order. With one thread or one item it all runs on the calling thread. A thread that
/// cannot be started leaves its share to the others. A job that panics is that item's `Err`,
/// with the panic's message, on one thread or many: the other jobs run on, and nothing waits
/// for a thread that is gone.
pub(crate) fn map<T: Sync, R: Send>(threads: usize, items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<Result<R, String>> {
    let job = |item: &T| std::panic::catch_unwind(AssertUnwindSafe(|| f(item))).map_err(|p| panic_message(p.as_ref()));
    let workers = threads.min(items.len());
    if workers <= 1 {
        return items.iter().map(job).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { return done };
            done.push((i, job(item)));
        }
    };
    let mut done: Vec<(usize, Result<R, String>)> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..workers)
            .filter_map(|n| {
                std::thread::Builder::new().name(format!("kache-worker-{n}")).stack_size(WORKER_STACK).spawn_scoped(s, work).ok()
            })
            .collect();
        let mut all = work();
        for h in helpers {
            // Every job's panic is caught inside it, so a worker itself ends normally; were it
            // not to, its jobs are reported lost below rather than the caller panicking.
            if let Ok(d) = h.join() {
                all.extend(d);
            }
        }
        all
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    let mut done = done.into_iter().peekable();
    (0..items.len())
        .map(|i| match done.next_if(|(j, _)| *j == i) {
            Some((_, r)) => r,
            None => Err("its worker thread ended without a result".into()),
        })
        .collect()
}

/// What a panic said, when it said it with a string (as `panic!` and `unwrap` do).
fn panic_message(payload: &(dyn Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_string(),
        (_, Some(s)) => s.clone(),
        _ => "a panic without a message".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_items_order_whatever_the_threads() {
        let items: Vec<u64> = (0..100).collect();
        let slow_square = |x: &u64| {
            // Uneven jobs, so threads finish out of order.
            std::thread::sleep(std::time::Duration::from_micros((x % 7) * 100));
            x * x
        };
        let serial: Vec<u64> = map(1, &items, slow_square).into_iter().map(Result::unwrap).collect();
        assert_eq!(serial, items.iter().map(|x| x * x).collect::<Vec<_>>());
        for threads in [2, 3, 8, 200] {
            let parallel: Vec<u64> = map(threads, &items, slow_square).into_iter().map(Result::unwrap).collect();
            assert_eq!(parallel, serial, "{threads} threads");
        }
        assert!(map(4, &[] as &[u64], slow_square).is_empty());
    }

    #[test]
    fn jobs_run_on_several_threads() {
        let items: Vec<u32> = (0..8).collect();
        let barrier = std::sync::Barrier::new(2);
        // Two jobs that wait for each other finish only if they run at once.
        let ids = map(2, &items[..2], |_| {
            barrier.wait();
            std::thread::current().id()
        });
        assert_ne!(ids[0].as_ref().unwrap(), ids[1].as_ref().unwrap());
    }

    #[test]
    fn a_panicking_job_is_its_items_error_and_the_others_complete() {
        let items: Vec<u32> = (0..16).collect();
        for threads in [1, 2, 4, 16] {
            let out = map(threads, &items, |x| match *x {
                11 => panic!("job {x} panicked"),
                3 => String::from("x").parse::<u32>().unwrap(),
                x => x * 2,
            });
            assert_eq!(out.len(), 16, "{threads} threads");
            for (i, r) in out.iter().enumerate() {
                match i {
                    11 => assert_eq!(r.as_ref().unwrap_err(), "job 11 panicked", "{threads} threads"),
                    3 => assert!(r.as_ref().unwrap_err().contains("InvalidDigit"), "{threads} threads: {r:?}"),
                    _ => assert_eq!(r.as_ref().ok(), Some(&(i as u32 * 2)), "{threads} threads"),
                }
            }
        }
    }
}
