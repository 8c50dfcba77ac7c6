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

Nothing here waits or trusts a name (SPEC §5, "Nothing followed, nothing waited on"; the
runtime reads the topology in every process): a `properties` file is opened without
blocking and read only if it is a regular file, checked before the open and again on the
descriptor, and only up to a bound; a node directory whose name is not ASCII digits is
skipped with a `TopologyWarning` that shows the name escaped, and so is one with a leading
zero, which the kernel never writes (`01` would name node 1 twice).
"""

import os
import stat
import warnings
from collections.abc import Mapping
from typing import NamedTuple, Optional

# Where the kernel publishes the topology, and the variable that points elsewhere (a
# recorded tree, for tests and for diagnosing another machine's topology).
DEFAULT_TOPOLOGY_ROOT = "/sys/class/kfd/kfd/topology"
TOPOLOGY_ROOT_VARIABLE = "ROCM_SDK_KFD_TOPOLOGY"

# A properties file is a few hundred bytes; more than this is not one.
_MAX_PROPERTIES_BYTES = 64 * 1024

# A FIFO opened for reading without O_NONBLOCK waits for a writer forever. Windows has no
# such flag and no KFD; there the open is plain.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


class TopologyWarning(RuntimeWarning):
    """A topology entry that was skipped because it is not what the kernel writes."""


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


def printable(text: str) -> str:
    """`text` with control characters escaped (`\\x1b`), as the rest of `rocm_sdk`
    escapes what it prints (SPEC §4); a copy of its rule, since this module stands alone."""
    return "".join(ch if ch == " " or ch.isprintable() else repr(ch)[1:-1] for ch in text)


def is_node_name(name: str) -> bool:
    """A KFD node directory's name: ASCII digits only, without leading zeros, as the kernel
    writes it. `str.isdigit` also takes `²` (which `int` refuses) and `\\u0661`, Arabic-Indic
    one (which `int` reads as 1, naming a node twice); `01` is node 1 to `int` as well."""
    return name.isascii() and name.isdigit() and (name == "0" or not name.startswith("0"))


def read_regular_file(path: str, limit: int) -> Optional[bytes]:
    """The bytes of `path` if it is a regular file (a symlink to one too: sysfs is reached
    through symlinks) of at most `limit` bytes; None for anything else, without waiting: a
    FIFO, a device or a socket is refused by its type before the open and on the
    descriptor, and the open itself never blocks."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        descriptor = os.open(path, _OPEN_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        # Swapped for a FIFO between the check and the open: the descriptor says so.
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        chunks = []
        size = 0
        # sysfs files report a size of 4096 whatever they hold: read to the end, bounded.
        while size <= limit:
            chunk = os.read(descriptor, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    return b"".join(chunks) if size <= limit else None


def _read_properties(path: str) -> Optional[dict[str, int]]:
    data = read_regular_file(path, _MAX_PROPERTIES_BYTES)
    if data is None:
        return None
    return parse_properties(data.decode("ascii", "replace"))


def node_names(names: list[str], nodes_dir: str) -> list[str]:
    """The node directories among `names`, in numeric order; any other name, which the
    kernel never writes there, is skipped with a `TopologyWarning`."""
    nodes = []
    for name in names:
        if is_node_name(name):
            nodes.append(name)
        else:
            warnings.warn(
                "ignoring %s in the KFD topology: a node's name is ASCII digits without leading zeros"
                % printable(os.path.join(nodes_dir, name)),
                TopologyWarning,
                stacklevel=3,
            )
    return sorted(nodes, key=int)


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
    for name in node_names(names, nodes_dir):
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
