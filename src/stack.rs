//! Stack for the recursive passes (parser lowering, checker, code generator).
//!
//! Each recursive step asks for a red zone of free stack and grows a new segment when less is
//! left ([`stacker::maybe_grow`]). Asking costs nothing on most threads, but on the main thread
//! the first ask makes glibc read `/proc/self/maps` (35 to 70 µs, a tenth of a cached kernel's
//! first launch). The main thread's stack is the process's stack limit (8 MiB by default) and
//! the first levels of nesting use a few KiB each, so there the first [`UNCHECKED`] levels run
//! without asking; deeper nesting asks as everywhere else.

use std::cell::Cell;

/// Nesting levels run on the main thread without asking for stack.
const UNCHECKED: u32 = 24;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static IS_MAIN: bool = std::thread::current().name() == Some("main");
}

struct Level(u32);

impl Drop for Level {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(self.0));
    }
}

/// Runs `f` with at least `red_zone` bytes of stack left, on a new segment of `size` bytes if
/// the current one has less.
pub(crate) fn ensure<R>(red_zone: usize, size: usize, f: impl FnOnce() -> R) -> R {
    let depth = DEPTH.with(|d| {
        let v = d.get();
        d.set(v + 1);
        v
    });
    let _restore = Level(depth);
    if depth < UNCHECKED && IS_MAIN.with(|m| *m) { f() } else { stacker::maybe_grow(red_zone, size, f) }
}
