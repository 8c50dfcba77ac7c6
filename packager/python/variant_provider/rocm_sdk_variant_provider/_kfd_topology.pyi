"""Typing only: the packager ships `rocm_sdk/_kfd_topology.py` here as it is (SPEC §9).
Not shipped.
"""

from rocm_sdk._kfd_topology import *  # noqa: F403
