# The experiments' timing: median milliseconds per launch of `batches` batches of `reps`
# back-to-back launches between two CUDA events, after two warm-up launches.
import cupy as cp, numpy as np


def timeit(launch, reps=10, batches=15):
    launch(); launch(); cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event(); ts = []
    for _ in range(batches):
        s.record()
        for _ in range(reps): launch()
        e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e) / reps)
    return float(np.median(ts))
