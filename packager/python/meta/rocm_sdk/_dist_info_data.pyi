"""The types of `_dist_info_data.py`, which the packager generates for each package (SPEC
§2, `_dist_info.py`): what `_dist_info` imports from it, for mypy. Not shipped; the
packager's tests check that the generated module defines exactly these names.
"""

__version__: str
PY_PACKAGE_SUFFIX_NONCE: str
KPACK_SPLIT: bool
DEVEL_TARGET_SPECIFIC: bool
DEFAULT_TARGET_FAMILY: str | None
AVAILABLE_TARGET_FAMILIES: list[str]
LINUX_TARGET_FAMILIES: list[str]
WINDOWS_TARGET_FAMILIES: list[str]
DEVICE_TARGETS: list[str]
TARGET_OWNERS: dict[str, str]
THIS_TARGET_FAMILY: str | None
THIS_PACKAGE_LOGICAL_NAME: str
