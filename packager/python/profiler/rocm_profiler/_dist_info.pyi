"""Typing only: the packager ships `rocm_sdk/_dist_info.py` here as it is, with this
package's own `_dist_info_data.py` beside it (SPEC §2, `_dist_info.py`). Not shipped.
"""

from rocm_sdk._dist_info import *  # noqa: F403
from rocm_sdk._dist_info import __version__ as __version__
