#!/usr/bin/env python3
"""The execution-speed suite in Triton, written as Triton writes kernels (a program per block of
elements, rows or tile; tl.sum, tl.max, tl.cumsum, tl.dot, tl.histogram instead of hand-written
trees and shuffles), on the same sizes, checked against the same float64 (or exact) references
and timed the same way (CUDA events, median over batches of back-to-back launches). The kernels
are in triton_base.py (the suite's first kernels) and triton_corpus.py (the corpus); a kernel
that is not natural in Triton (warp shuffles, per-thread loops whose trip counts differ within
a block) is a skipped row that says why. Running them, the command line and the rows are
speed_common.py's (see there).

usage: triton_speed.py [--json FILE] [--only PART,..] [--reps N] [--batches N] [--part-timeout S] [--list]
"""
import sys

import speed_common


def probe():
    import torch
    import triton  # noqa: F401
    if not torch.cuda.is_available():
        raise RuntimeError("torch finds no GPU")


def load():
    import triton_base
    import triton_corpus
    import triton_tensor
    return {**triton_base.PARTS, **triton_corpus.PARTS, **triton_tensor.PARTS}


def make_ctx(out):
    import torch

    def event_pair():
        def elapsed(a, b):
            b.synchronize()
            return a.elapsed_time(b)
        return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True), elapsed

    return speed_common.Ctx("triton", out, torch.cuda.synchronize, event_pair, torch.cuda.empty_cache)


if __name__ == "__main__":
    sys.exit(speed_common.main("triton", speed_common.PARTS, load, probe, make_ctx))
