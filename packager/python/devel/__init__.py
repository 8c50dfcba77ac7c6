"""rocm-sdk-devel: headers, CMake files, static libraries and tools of the ROCm SDK.

The tree ships as a tarball beside this file and is unpacked into site-packages on first
use: run `rocm-sdk init`, or `rocm-sdk path --root` to unpack it and print where it is.
"""

# The reference exports the version here and downstream code reads it (TensileLite
# turns its absence into a hard error); it is `rocm_sdk.__version__` (SPEC §4).
from ._dist_info import __version__

__all__ = ["__version__"]
