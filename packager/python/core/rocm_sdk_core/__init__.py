"""rocm-sdk-core: the ROCm runtime, compilers and tools, arch-neutral.

The files live in the sibling platform package (`_rocm_sdk_core`); this package holds
the distribution metadata (`_dist_info`) and the console-script trampolines (`_cli`).
"""
