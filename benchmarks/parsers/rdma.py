"""What RDMA hardware a host shows: its /sys tree and ``rdma link`` (iproute2) read as data.

The files used, under ``<root>/sys/class/infiniband/<device>/`` (the kernel's ib_core)::

    node_type                  "1: CA" (an HCA: InfiniBand or RoCE), "4: RNIC" (iWARP)
    hca_type, fw_ver, board_id "MT4123", "20.36.1010", "MT_0000000223"
    ports/<n>/state            "4: ACTIVE", "1: DOWN", "2: INIT", "3: ARMED"
    ports/<n>/phys_state       "5: LinkUp", "3: Disabled", "2: Polling"
    ports/<n>/rate             "200 Gb/sec (4X HDR)", "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)"
    ports/<n>/link_layer       "InfiniBand", or "Ethernet" (RoCE)
    ports/<n>/gid_attrs/ndevs/0  the netdev of a RoCE port's first GID
    device/net/<netdev>/dev_port the PCI function's netdevs (IPoIB or Ethernet), by port - 1

and ``<root>/sys/module/nvidia_peermem`` (or the older ``nv_peer_mem``): the module that lets
an HCA read GPU memory directly (GPUDirect RDMA). Newer drivers can do the same through
DMA-BUF without it, which /sys does not show; NCCL's own log says what it used.

``rdma link`` prints one line per port, ``link mlx5_0/1 state ACTIVE physical_state LINK_UP
netdev ens1f0np0`` (iproute2 5.x and later; older releases begin ``0/1: mlx5_0/1:``), and, on
a host without the RDMA netlink family, only an error on stderr.

Everything here reads a tree it is given, so tests point it at recorded trees under
tests/data/rdma/; a file that is missing or unreadable leaves its field empty, never raises.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

PEER_MEMORY_MODULES = ("nvidia_peermem", "nv_peer_mem")
_RATE = re.compile(r"([\d.]+) Gb/sec")
_LINK = re.compile(r"^(?:link |\d+/\d+: )(\S+?)/(\d+):? ?(.*)$")


@dataclass(frozen=True)
class RdmaPort:
    device: str
    port: int
    state: str  # "ACTIVE", "DOWN", ... (the kernel's word, without its number)
    phys_state: str  # "LinkUp", "Polling", "Disabled", ...
    rate_gbps: float | None
    rate: str  # as the kernel says it: "200 Gb/sec (4X HDR)"
    link_layer: str  # "InfiniBand" or "Ethernet"
    transport: str  # "IB", "RoCE", "iWARP"
    netdev: str | None

    @property
    def name(self) -> str:
        return f"{self.device}/{self.port}"

    @property
    def active(self) -> bool:
        return self.state == "ACTIVE"


@dataclass(frozen=True)
class RdmaDevice:
    name: str
    hca_type: str
    fw_ver: str
    board_id: str
    node_type: str  # "CA", "RNIC"
    ports: tuple[RdmaPort, ...]


@dataclass(frozen=True)
class RdmaLink:
    device: str
    port: int
    state: str  # "ACTIVE", "DOWN", ...
    physical_state: str  # "LINK_UP", "POLLING", "DISABLED", ...
    netdev: str | None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _word(value: str) -> str:
    """"4: ACTIVE" -> "ACTIVE"."""
    return value.split(":", 1)[1].strip() if ":" in value else value


def _netdev(device_dir: Path, port_dir: Path, port: int) -> str | None:
    roce = _read(port_dir / "gid_attrs" / "ndevs" / "0")
    if roce:
        return roce
    try:
        candidates = sorted(p for p in (device_dir / "device" / "net").iterdir() if p.is_dir())
    except OSError:
        return None
    for net in candidates:
        if _read(net / "dev_port") == str(port - 1):
            return net.name
    return candidates[0].name if len(candidates) == 1 else None


def _port(device_dir: Path, port_dir: Path, node_type: str) -> RdmaPort | None:
    try:
        number = int(port_dir.name)
    except ValueError:
        return None
    rate = _read(port_dir / "rate")
    found = _RATE.search(rate)
    link_layer = _read(port_dir / "link_layer")
    transport = ("iWARP" if node_type == "RNIC" else "IB" if link_layer == "InfiniBand"
                 else "RoCE" if link_layer == "Ethernet" else link_layer or "unknown")
    return RdmaPort(device=device_dir.name, port=number, state=_word(_read(port_dir / "state")),
                    phys_state=_word(_read(port_dir / "phys_state")),
                    rate_gbps=float(found.group(1)) if found else None, rate=rate,
                    link_layer=link_layer, transport=transport,
                    netdev=_netdev(device_dir, port_dir, number))


def read_sysfs(root: Path) -> list[RdmaDevice]:
    """The RDMA devices under ``root``/sys/class/infiniband, ports in order; [] when none."""
    try:
        dirs = sorted((root / "sys" / "class" / "infiniband").iterdir())
    except OSError:
        return []
    devices = []
    for device_dir in dirs:
        node_type = _word(_read(device_dir / "node_type"))
        try:
            port_dirs = sorted((device_dir / "ports").iterdir(), key=lambda p: p.name.zfill(4))
        except OSError:
            port_dirs = []
        ports = tuple(p for p in (_port(device_dir, d, node_type) for d in port_dirs) if p)
        devices.append(RdmaDevice(name=device_dir.name, hca_type=_read(device_dir / "hca_type"),
                                  fw_ver=_read(device_dir / "fw_ver"),
                                  board_id=_read(device_dir / "board_id"), node_type=node_type,
                                  ports=ports))
    return devices


def peer_memory_module(root: Path) -> str | None:
    """The GPUDirect RDMA kernel module loaded under ``root``/sys/module, if any."""
    for name in PEER_MEMORY_MODULES:
        if (root / "sys" / "module" / name).is_dir():
            return name
    return None


def parse_rdma_link(text: str) -> list[RdmaLink]:
    """Ports from ``rdma link show``; [] for its error text (no RDMA netlink, no device)."""
    links = []
    for line in text.splitlines():
        found = _LINK.match(line.strip())
        if found is None:
            continue
        words = found.group(3).split()
        fields = dict(zip(words[::2], words[1::2], strict=False))
        links.append(RdmaLink(device=found.group(1), port=int(found.group(2)),
                              state=fields.get("state", ""),
                              physical_state=fields.get("physical_state", ""),
                              netdev=fields.get("netdev")))
    return links


def inventory(root: Path, rdma_link_text: str | None) -> dict[str, Any]:
    """The host inventory's ``rdma`` entry: devices and ports, the ports that are up,
    ``rdma link``'s view where the tool ran (``rdma_link_text``: its stdout and stderr; None
    where it is not installed), and the GPUDirect RDMA module."""
    devices = read_sysfs(root)
    links = parse_rdma_link(rdma_link_text) if rdma_link_text is not None else None
    ports = [p for d in devices for p in d.ports]
    if links:
        # rdma link names a RoCE port's netdev from the kernel's own table: fill any gap.
        by_name = {f"{li.device}/{li.port}": li.netdev for li in links}
        ports = [p if p.netdev or not by_name.get(p.name) else
                 replace(p, netdev=by_name[p.name]) for p in ports]
    out: dict[str, Any] = {
        "devices": [{"name": d.name, "hca_type": d.hca_type, "fw_ver": d.fw_ver,
                     "board_id": d.board_id, "node_type": d.node_type,
                     "ports": [asdict(p) for p in ports if p.device == d.name]}
                    for d in devices],
        # What the diagnosis reads: the host shows working RDMA ports ("mlx5_0/1").
        "active_ports": [p.name for p in ports if p.active],
        "gpudirect_module": peer_memory_module(root),
    }
    if links is not None and rdma_link_text is not None:
        out["rdma_link"] = [asdict(li) for li in links]
        if not links and rdma_link_text.strip():
            out["rdma_link_error"] = rdma_link_text.strip().splitlines()[0][:200]
    if not devices:
        out["reason"] = "no RDMA device (/sys/class/infiniband is empty or absent)"
    return out
