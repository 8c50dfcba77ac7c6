"""rocm-sdk-core: the ROCm runtime, compilers and tools, arch-neutral.

The files live in the sibling platform package (`_rocm_sdk_core`); this package holds
the distribution metadata (`_dist_info`) and the console-script trampolines (`_cli`).
"""

# The reference exports the version here and downstream code reads it (TensileLite
# turns its absence into a hard error); it is `rocm_sdk.__version__` (SPEC §4).
from ._dist_info import __version__

__all__ = ["__version__"]
