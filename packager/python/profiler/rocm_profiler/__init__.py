"""rocm-profiler: ROCm Compute Profiler and ROCm Systems Profiler.

The files live in the sibling platform package (`_rocm_profiler`); this package holds
the distribution metadata (`_dist_info`) and the console-script trampolines (`_cli`).
"""
