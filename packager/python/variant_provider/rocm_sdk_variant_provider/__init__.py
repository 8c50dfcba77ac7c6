"""The `amd` wheel variant provider of the ROCm SDK packages (PEP 850 plugin API, draft).

An installer that supports wheel variants (PEP 825, draft) asks this module which values of
`amd :: gfx_arch` the machine supports, and installs the `rocm-sdk-device` variant wheel
whose label carries the device code of the machine's GPU (SPEC section 9).

The GPUs come from the KFD topology through `_kfd_topology`, the very detector
`rocm-sdk doctor` uses: the packager copies `rocm_sdk/_kfd_topology.py` into this package
when it builds it, so there is one source file for both. `ROCM_SDK_KFD_TOPOLOGY=DIR` reads
another topology directory (a recorded tree, in tests).

Values are GPU targets spelled as PEP 825 allows (`^[a-z0-9_.]+$`): `gfx90a`, `gfx1030`.
A feature setting (`xnack`, `sramecc`) is no value: the KFD topology does not publish it,
and a device wheel carries every setting its target was built for. A GPU's value is its
target, followed by the target whose device wheel carries its code when the owner table
(`target_owners.json`, the packager's) names another one.

Standard library only: a plugin runs in whatever environment the installer makes for it.
"""

import json
import pkgutil
import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple, Optional

from . import _kfd_topology

NAMESPACE = "amd"
FEATURE = "gfx_arch"

# What PEP 825 allows as a feature value.
_VALUE_PATTERN = re.compile(r"^[a-z0-9_.]+$")


class VariantFeatureConfig(NamedTuple):
    """A feature and its values: the three attributes the plugin's answers need (PEP 850,
    variant feature config)."""

    name: str
    values: list[str]
    multi_value: bool


# `get_supported_configs` depends on the machine, so the plugin cannot stand in for a
# static list at build time (variantlib's `all_properties_compatible`).
all_properties_compatible = False


def property_value(target: str) -> Optional[str]:
    """`gfx90a` -> `gfx90a`, `gfx1250-strict` -> `gfx1250_strict`: a target as a feature
    value; None for a name no value can spell."""
    value = target.strip().lower().replace("-", "_")
    return value if _VALUE_PATTERN.match(value) else None


def _target_owners() -> dict[str, str]:
    data = pkgutil.get_data(__name__, "target_owners.json")
    if data is None:
        return {}
    owners: dict[str, str] = json.loads(data.decode("utf-8")).get("owners", {})
    return owners


def supported_values(agents: Iterable[_kfd_topology.Agent], owners: Mapping[str, str]) -> list[str]:
    """The `gfx_arch` values of `agents`, in node order (HIP's device 0 first), each GPU's
    target before its owner's, every value once."""
    values = []
    for agent in agents:
        for target in (agent.target, owners.get(agent.target, agent.target)):
            value = property_value(target)
            if value is not None and value not in values:
                values.append(value)
    return values


def get_supported_configs() -> list[VariantFeatureConfig]:
    """`amd :: gfx_arch` values of this machine's GPUs; none when it has no AMD GPU (or no
    amdgpu driver), so that no `amd` variant is compatible."""
    agents = _kfd_topology.detect_agents(_kfd_topology.topology_root())
    values = supported_values(agents, _target_owners())
    if not values:
        return []
    return [VariantFeatureConfig(name=FEATURE, values=values, multi_value=True)]


# The majors of the GPU generations ROCm builds for (GCN 3 to RDNA 4 and CDNA): every
# target name the detector can give a GPU of those is a valid value.
_MAJORS = range(8, 13)


def get_all_configs() -> list[VariantFeatureConfig]:
    """Every valid `amd :: gfx_arch` value: each name `_kfd_topology.target_name` gives a
    `gfx_target_version` of those generations, and each target of the owner table."""
    values: list[Optional[str]] = []
    for major in _MAJORS:
        for minor in range(16):
            for stepping in range(16):
                values.append(_kfd_topology.target_name(major * 10000 + minor * 100 + stepping))
    for target, owner in sorted(_target_owners().items()):
        values.extend([target, owner])
    unique = []
    for value in (property_value(name) for name in values if name):
        if value is not None and value not in unique:
            unique.append(value)
    return [VariantFeatureConfig(name=FEATURE, values=unique, multi_value=True)]
