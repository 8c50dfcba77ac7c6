"""rocm-sdk-libraries: the ROCm math and communication libraries.

The files live in the sibling platform package; `rocm_sdk.find_libraries` locates them.
"""

# The reference exports the version here and downstream code reads it (TensileLite
# turns its absence into a hard error); it is `rocm_sdk.__version__` (SPEC §4).
from ._dist_info import __version__

__all__ = ["__version__"]
