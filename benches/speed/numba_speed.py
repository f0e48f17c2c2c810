#!/usr/bin/env python3
"""The execution-speed suite in numba-cuda: the same algorithms, sizes and grids as the kache
kernels (benches/speed/kernels.rs, kernels/*.rs) and their CUDA C twins (cuda.cu, kernels/*.cu),
checked against float64 (or exact) references with numpy, timed with CUDA events after warm-up
(median over batches of back-to-back launches, as the Rust suite does). The kernels are in
numba_base.py (the suite's first kernels) and numba_corpus.py (the corpus); running them, the
command line and the rows are speed_common.py's (see there).

usage: numba_speed.py [--json FILE] [--only PART,..] [--reps N] [--batches N] [--part-timeout S]
                      [--small] [--check-only] [--list]

Without a GPU: NUMBA_ENABLE_CUDASIM=1 numba_speed.py --small --check-only checks the kernels on
numba's CUDA simulator.
"""
import sys

import speed_common


def probe():
    import numpy as np
    np.row_stack = np.vstack  # numba-cuda 0.30 with numpy 2.5
    from numba import cuda
    if not cuda.is_available():
        raise RuntimeError("numba.cuda finds no GPU")


def load():
    import numba_base
    import numba_corpus
    # numba-cuda has no tensor-core instructions: the tensor parts are skipped rows.
    tensor = {p: (lambda ctx, p=p: ctx.skip(p, "numba-cuda has no tensor-core instructions")) for p in ("gemm", "attention")}
    return {**numba_base.PARTS, **numba_corpus.PARTS, **tensor}


def make_ctx(out):
    from numba import cuda

    def event_pair():
        def elapsed(a, b):
            b.synchronize()
            return cuda.event_elapsed_time(a, b)
        return cuda.event(), cuda.event(), elapsed

    def cleanup():
        # Frees the part's arrays now (numba defers it); the simulator has nothing to free.
        pending = getattr(cuda.current_context(), "deallocations", None)
        if pending is not None:
            pending.clear()

    return speed_common.Ctx("numba", out, cuda.synchronize, event_pair, cleanup)


if __name__ == "__main__":
    sys.exit(speed_common.main("numba", speed_common.PARTS, load, probe, make_ctx))
