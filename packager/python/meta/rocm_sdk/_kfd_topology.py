"""The GPUs of this machine, read from the KFD topology the way `rocm_agent_enumerator`
reads it (SPEC §4, `rocm-sdk doctor`).

Standard library only, and nothing from the rest of `rocm_sdk`: `detect_agents` is a pure
function from a topology directory to the agents it describes, so another package (a
PEP 850 variant provider) can carry this file as it is, and the `rocm` sdist's build
backend loads it from the sdist to choose what to install before anything is (SPEC §3).

The amdgpu driver's KFD publishes one directory per HSA node under
`/sys/class/kfd/kfd/topology/nodes/`, whose `properties` file holds one `name value` pair
per line. A GPU node has a non-zero `gfx_target_version`: its ISA as packed decimal,
major * 10000 + minor * 100 + stepping, where the target name spells minor and stepping
as one hex digit each (90010 -> gfx90a, 110501 -> gfx1151, 120500 -> gfx1250). A CPU
node has 0. Feature settings (`xnack`, `sramecc`) are not in the topology: an agent is
its base target, as `rocm_agent_enumerator` reports it.
"""

import os
from collections.abc import Mapping
from typing import NamedTuple, Optional

# Where the kernel publishes the topology, and the variable that points elsewhere (a
# recorded tree, for tests and for diagnosing another machine's topology).
DEFAULT_TOPOLOGY_ROOT = "/sys/class/kfd/kfd/topology"
TOPOLOGY_ROOT_VARIABLE = "ROCM_SDK_KFD_TOPOLOGY"

# A properties file is a few hundred bytes; more than this is not one.
_MAX_PROPERTIES_BYTES = 64 * 1024


class Agent(NamedTuple):
    """One GPU node: its KFD node number, its target (`gfx90a`), and the raw
    `gfx_target_version`, `vendor_id`, `device_id` and `simd_count` it was named from."""

    node: int
    target: str
    gfx_target_version: int
    vendor_id: Optional[int]
    device_id: Optional[int]
    simd_count: Optional[int]


def topology_root(environ: Optional[Mapping[str, str]] = None) -> str:
    """The topology directory to read: `ROCM_SDK_KFD_TOPOLOGY` if set, else the kernel's."""
    environ = os.environ if environ is None else environ
    return environ.get(TOPOLOGY_ROOT_VARIABLE) or DEFAULT_TOPOLOGY_ROOT


def target_name(gfx_target_version: int) -> Optional[str]:
    """`90010` -> `gfx90a`; None for 0 (a CPU node) and for values no target has."""
    if gfx_target_version <= 0:
        return None
    major = gfx_target_version // 10000
    minor = (gfx_target_version // 100) % 100
    stepping = gfx_target_version % 100
    if minor > 15 or stepping > 15:
        return None
    return "gfx%d%x%x" % (major, minor, stepping)


def parse_properties(text: str) -> dict[str, int]:
    """{name: int} of a `properties` file; lines that are not `name integer` are skipped."""
    values = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2:
            continue
        try:
            values[parts[0]] = int(parts[1], 10)
        except ValueError:
            continue
    return values


def _read_properties(path: str) -> Optional[dict[str, int]]:
    try:
        with open(path, "rb") as file:
            data = file.read(_MAX_PROPERTIES_BYTES + 1)
    except OSError:
        return None
    if len(data) > _MAX_PROPERTIES_BYTES:
        return None
    return parse_properties(data.decode("ascii", "replace"))


def detect_agents(root: str = DEFAULT_TOPOLOGY_ROOT) -> list[Agent]:
    """The GPU agents of the topology at `root` (a directory holding `nodes/`), in node
    order. A missing or unreadable topology, as on a machine without the amdgpu driver,
    has none; so does a node whose properties cannot be read or name no GPU target.
    """
    nodes_dir = os.path.join(root, "nodes")
    try:
        names = os.listdir(nodes_dir)
    except OSError:
        return []
    agents = []
    for name in sorted((name for name in names if name.isdigit()), key=int):
        properties = _read_properties(os.path.join(nodes_dir, name, "properties"))
        if properties is None:
            continue
        version = properties.get("gfx_target_version", 0)
        target = target_name(version)
        if target is None:
            continue
        agents.append(
            Agent(
                node=int(name),
                target=target,
                gfx_target_version=version,
                vendor_id=properties.get("vendor_id"),
                device_id=properties.get("device_id"),
                simd_count=properties.get("simd_count"),
            )
        )
    return agents
