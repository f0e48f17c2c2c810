"""What the speed suite's Python twins share (numba_speed.py, triton_speed.py): the command line,
timing, rows, skipped rows, and running the parts so that one that hangs or crashes is a failed
row and the others still run.

A script calls `main(IMPL, NAMES, load, probe, make_ctx)`: NAMES are the parts of the suite (the
names of the Rust suite's `PARTS`, benches/speed/suite.rs), `load()` gives each a function of a
`Ctx` that measures its rows (imported only in the worker, so that a missing package fails the
probe, not the script).
Run plainly, the script is the supervisor: it runs `probe` (the import of numba-cuda or Triton
and a GPU: where that fails, one skipped row says why, and the script exits 0), then runs itself
as a worker over the parts; the worker runs each part in turn, writing each row to a JSON-lines
file as soon as it is measured, under a watchdog that ends the worker when a part runs past
--part-timeout seconds. When the worker ends early (a hang, a crash, a GPU fault), the
supervisor records the part it was in as a failed row and starts a new worker on the parts
after it. The rows go to --json FILE.

usage: SCRIPT [--json FILE] [--only PART,..] [--reps N] [--batches N] [--part-timeout S]
              [--small] [--check-only] [--list]

--small: small sizes; --check-only: check, do not time (both for numba's CUDA simulator,
NUMBA_ENABLE_CUDASIM=1, on a machine without a GPU).
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


def arg(flag, default):
    return type(default)(sys.argv[sys.argv.index(flag) + 1]) if flag in sys.argv else default


# The parts of the suite, in the Rust suite's order (`PARTS` in benches/speed/suite.rs;
# tests/it/speed_suite.rs checks that they agree).
PARTS = [
    "saxpy", "reduce", "softmax", "matmul", "histogram", "scan", "transpose", "gemv", "spmv", "conv2d",
    "layernorm", "rmsnorm", "softmax3", "topk", "stencil2d", "stencil3d", "bitonic", "radix_hist", "compact",
    "nbody", "black_scholes", "mandelbrot", "gemm", "attention",
]

REPS = arg("--reps", 10)
BATCHES = arg("--batches", 15)
PART_TIMEOUT = arg("--part-timeout", 240.0)
SMALL = "--small" in sys.argv
CHECK_ONLY = "--check-only" in sys.argv


def row_dict(kernel, impl, check, ok, median=0.0, fastest=0.0, bytes_=None, flops=None, skipped=False):
    return {
        "kernel": kernel, "implementation": impl, "median_ms": median, "min_ms": fastest,
        "gbs": bytes_ / (median * 1e-3) / 1e9 if bytes_ and median else None,
        "gflops": flops / (median * 1e-3) / 1e9 if flops and median else None,
        "check": check, "ok": ok, "skipped": skipped,
    }


class Ctx:
    """One worker's state: the implementation's name, how to time, where rows go."""

    def __init__(self, impl, out, sync, event_pair, cleanup):
        self.impl = impl
        self.out = out
        self.sync = sync  # waits for the GPU
        self.event_pair = event_pair  # () -> (start, end, elapsed(start, end) in ms)
        self.cleanup = cleanup  # frees what a part left on the GPU
        self.small = SMALL

    def size(self, full, small):
        return small if self.small else full

    def emit(self, r):
        self.out.write(json.dumps({"row": r}) + "\n")
        self.out.flush()
        tag = "%s %s" % (r["kernel"], r["implementation"])
        print("%22s: %9.4f ms  %s" % (tag, r["median_ms"], r["check"]), file=sys.stderr)

    def time_it(self, launch):
        for _ in range(2):
            launch()
        self.sync()
        times = []
        for _ in range(BATCHES):
            a, b, elapsed = self.event_pair()
            a.record()
            for _ in range(REPS):
                launch()
            b.record()
            times.append(elapsed(a, b) / REPS)
        times.sort()
        return times[len(times) // 2], times[0]

    def row(self, kernel, launch, verify, bytes_=None, flops=None, reset=None):
        """Checks `launch`'s first run with `verify` (which returns what it found, or raises),
        then times it; any failure is a failed row. `reset`, if given, runs first."""
        try:
            if reset:
                reset()
            launch()
            self.sync()
            check = verify()
            med, fastest = (0.0, 0.0) if CHECK_ONLY else self.time_it(launch)
            self.emit(row_dict(kernel, self.impl, check, True, med, fastest, bytes_, flops))
        except Exception as e:  # one kernel's failure does not hide the others'
            self.emit(row_dict(kernel, self.impl, "FAILED: %s: %s" % (type(e).__name__, e), False))

    def skip(self, kernel, why):
        """A row this implementation does not have, and why."""
        self.emit(row_dict(kernel, self.impl, "skipped: " + why, True, skipped=True))


def worker(impl, names, load, make_ctx, jsonl):
    with open(jsonl, "a") as out:
        ctx = make_ctx(out)
        current = {"part": None, "deadline": None}

        def watchdog():
            while True:
                time.sleep(0.5)
                d = current["deadline"]
                if d is not None and time.time() > d:
                    out.write(json.dumps({"timeout": current["part"]}) + "\n")
                    out.flush()
                    os._exit(3)

        threading.Thread(target=watchdog, daemon=True).start()
        fns = load()
        for name in names:
            fn = fns.get(name, lambda ctx, name=name: ctx.emit(row_dict(name, impl, "FAILED: no part %s here" % name, False)))
            out.write(json.dumps({"start": name}) + "\n")
            out.flush()
            current["part"], current["deadline"] = name, time.time() + PART_TIMEOUT
            try:
                fn(ctx)
            except Exception as e:  # a part that fails before its rows is one failed row
                ctx.emit(row_dict(name, impl, "FAILED: %s: %s" % (type(e).__name__, e), False))
            current["deadline"] = None
            out.write(json.dumps({"done": name}) + "\n")
            out.flush()
            ctx.cleanup()


def supervise(impl, names):
    """Runs workers over `names` until every part has finished or failed; returns the rows."""
    rows, remaining = [], list(names)
    while remaining:
        fd, jsonl = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        cmd = [sys.executable, sys.argv[0], "--worker", jsonl, "--only", ",".join(remaining)]
        cmd += [a for a in sys.argv[1:] if a in ("--small", "--check-only")]
        for flag in ("--reps", "--batches", "--part-timeout"):
            if flag in sys.argv:
                cmd += [flag, sys.argv[sys.argv.index(flag) + 1]]
        # The worker's own watchdog bounds each part; this bounds a worker that cannot even
        # write its marks.
        try:
            proc = subprocess.run(cmd, stdout=sys.stderr, stderr=subprocess.PIPE, text=True,
                                  timeout=PART_TIMEOUT * len(remaining) + 120)
            code, err = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired as e:
            code, err = "timeout", (e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        sys.stderr.write(err)
        started, done, timed_out = None, set(), None
        with open(jsonl) as f:
            for line in f:
                try:
                    mark = json.loads(line)
                except ValueError:
                    continue  # a line cut short by the end of the process
                if "row" in mark:
                    rows.append(mark["row"])
                elif "start" in mark:
                    started = mark["start"]
                elif "done" in mark:
                    done.add(mark["done"])
                elif "timeout" in mark:
                    timed_out = mark["timeout"]
        os.unlink(jsonl)
        remaining = [p for p in remaining if p not in done]
        if not remaining:
            break
        tail = " ".join(err.strip().splitlines()[-3:])[-400:]
        if started is None:
            # The worker ended before its first part (it could not load the kernels): every
            # part left fails with its error.
            rows += [row_dict(p, impl, "FAILED: the worker ended before the part (status %s): %s" % (code, tail), False) for p in remaining]
            break
        if started in done:
            # It ended between parts, after finishing `started`: go on with the rest.
            continue
        # The part the worker was in when it ended fails; the others go on.
        why = ("ran past %.0f s" % PART_TIMEOUT) if timed_out == started else ("the worker ended (status %s): %s" % (code, tail))
        rows.append(row_dict(started, impl, "FAILED: part %s: %s" % (started, why), False))
        remaining.remove(started)
    return rows


def main(impl, names, load, probe, make_ctx):
    """`names`: the parts, in order; `load()`: {name: fn(ctx)}; `probe()` raises where the
    implementation cannot run here; `make_ctx(out)` makes the worker's `Ctx`."""
    if "--list" in sys.argv:
        print("\n".join(names))
        return 0
    only = [p for p in arg("--only", "").split(",") if p]
    unknown = [p for p in only if p not in names]
    if unknown:
        print("error: --only %s: the parts are %s" % (",".join(unknown), ", ".join(names)), file=sys.stderr)
        return 2
    chosen = [n for n in names if not only or n in only]
    if "--worker" in sys.argv:
        worker(impl, chosen, load, make_ctx, sys.argv[sys.argv.index("--worker") + 1])
        return 0
    try:
        probe()
        rows = supervise(impl, chosen)
    except Exception as e:
        why = "%s: %s" % (type(e).__name__, e)
        print("skipping %s: %s" % (impl, why), file=sys.stderr)
        rows = [row_dict("*", impl, "skipped: %s cannot run here (%s)" % (impl, why), True, skipped=True)]
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1
