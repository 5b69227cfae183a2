"""Parse NCCL's own init log (``NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET``): which transport
carried the data, over which device (checked against NCCL 2.18-2.21 log lines).

The lines used (each prefixed ``host:pid:tid [cudaDev] NCCL INFO `` except where noted)::

    NCCL version 2.19.3+cuda12.3                       bare on stdout in some versions, an
                                                       INFO line in others
    NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.1<0>
    NET/Socket : Using [0]eth0:10.0.0.2<0> [1]eth1:...  the devices each network offers
    NET/IB : No device found.                          IB asked for, none usable
    NCCL_IB_DISABLE set by environment to 1.           IB switched off by the environment
    Using network IB | Socket | IBext_v8 | ...         the network NCCL chose for all
                                                       inter-node traffic
    Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA
    Channel 00/0 : 1[1] -> 0[0] via P2P/CUMEM/read     how each connection went: NET/<net>/
    Channel 00 : 2[1] -> 0[0] via SHM/direct/direct    <dev>[(proxy)][/GDRDMA] between nodes,
                                                       P2P, SHM within one
    NET/IB : GPU Direct RDMA Enabled|Disabled for HCA 0 'mlx5_0'
    16 coll channels, 0 nvls channels, 16 p2p channels, ...   (2.19+ adds "N collnet channels")

A channel line is the evidence of what carried the data: ``Using network IB`` alone says what
NCCL would use between nodes, not that any data crossed a node. Anything else in the log is
ignored; a log with none of these lines is a ``ParseError`` (NCCL_DEBUG was not INFO, or the
file is not NCCL's).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from benchmarks.parsers import ParseError

_VERSION = re.compile(r"NCCL version (\S+)")
_NET_DEVICES = re.compile(r"NET/(\w+) : Using (.*)")
_DEVICE = re.compile(r"\[(\d+)\]([^\s;\[]+)")
_NETWORK = re.compile(r"NCCL INFO Using network (\S+)")
_CHANNEL = re.compile(r"NCCL INFO Channel \d+(?:/\d+)? : \d+\[\w+\] -> \d+\[\w+\]"
                      r"(?: \[(?:send|receive)\])? via (.+?)\s*$")
_NET_PATH = re.compile(r"NET/([^/\s]+)/(\d+)(?:\(\d+\))?(/GDRDMA)?")
_GDR = re.compile(r"GPU Direct RDMA (Enabled|Disabled) for")
_NVLS_CHANNELS = re.compile(r"(\d+) nvls channels")
_IB_DISABLED = re.compile(r"NCCL_IB_DISABLE set by environment to (\d+)")


@dataclass(frozen=True)
class NcclLog:
    version: str | None  # "2.19.3+cuda12.3"; None when the line went to stdout instead
    network: str | None  # "IB", "Socket", a plugin's name ("IBext_v8"); None if never named
    devices: dict[str, tuple[str, ...]]  # network -> its devices, in NCCL's index order
    # Connections by transport: "NET/IB", "NET/Socket", "P2P/CUMEM", "SHM", ... -> lines
    channels: dict[str, int]
    net_devices: tuple[str, ...]  # the devices the NET channels named ("mlx5_0:1/IB")
    gdr: bool | None  # GPU Direct RDMA: a GDRDMA channel or NCCL's own Enabled/Disabled line
    nvls_channels: int | None  # NVLink SHARP channels (H100/H200 with NVSwitch); None if unsaid
    ib_disabled: bool  # NCCL_IB_DISABLE=1 in the environment
    no_ib_device: bool  # NCCL looked for IB devices and found none usable

    @property
    def transport(self) -> str | None:
        """What carried the data: the NET transport when data crossed nodes, else the
        intra-node ones ("P2P/CUMEM", "SHM", joined by "+", most used first); None when no
        connection was logged."""
        net = [kind for kind, _ in Counter(self.channels).most_common() if kind.startswith("NET/")]
        if net:
            return net[0]
        local = [kind for kind, _ in Counter(self.channels).most_common()]
        return "+".join(local) if local else None


def channel_kind(via: str) -> str:
    """"NET/IB/0/GDRDMA" -> "NET/IB", "P2P/CUMEM/read" -> "P2P/CUMEM", "SHM/direct/direct"
    -> "SHM", "P2P/direct pointer" -> "P2P/direct pointer"."""
    parts = via.split("/")
    if parts[0] == "SHM":
        return "SHM"
    if parts[0] in ("NET", "P2P") and len(parts) > 1:
        return f"{parts[0]}/{parts[1]}"
    return via


def parse_nccl_log(text: str) -> NcclLog:
    """Parse one or more ranks' NCCL INFO logs (concatenated: each line stands alone)."""
    version = network = None
    devices: dict[str, tuple[str, ...]] = {}
    channels: Counter[str] = Counter()
    used: dict[tuple[str, int], bool] = {}  # (network, device index) -> GDRDMA seen
    gdr_said: list[bool] = []
    nvls: int | None = None
    ib_disabled = no_ib = False
    recognised = False
    for line in text.splitlines():
        if (m := _CHANNEL.search(line)) is not None:
            recognised = True
            via = m.group(1)
            channels[channel_kind(via)] += 1
            if (net := _NET_PATH.match(via)) is not None:
                key = (net.group(1), int(net.group(2)))
                used[key] = used.get(key, False) or bool(net.group(3))
            continue
        if (m := _NET_DEVICES.search(line)) is not None:
            recognised = True
            devices[m.group(1)] = tuple(d for _, d in sorted(
                ((int(i), d) for i, d in _DEVICE.findall(m.group(2).split(";")[0])),
                key=lambda pair: pair[0]))
        elif (m := _NETWORK.search(line)) is not None:
            recognised = True
            network = m.group(1)
        elif (m := _VERSION.search(line)) is not None:
            recognised = True
            version = m.group(1)
        elif (m := _GDR.search(line)) is not None:
            gdr_said.append(m.group(1) == "Enabled")
        elif (m := _NVLS_CHANNELS.search(line)) is not None:
            nvls = max(nvls or 0, int(m.group(1)))
        elif (m := _IB_DISABLED.search(line)) is not None:
            ib_disabled = ib_disabled or m.group(1) != "0"
        elif "NET/IB : No device found" in line:
            no_ib = True
    if not recognised:
        raise ParseError("no NCCL INFO init lines (NCCL_DEBUG=INFO, subsystems INIT,NET)")
    if used:
        gdr: bool | None = any(used.values())
    else:
        gdr = any(gdr_said) if gdr_said else None
    return NcclLog(version=version, network=network, devices=devices, channels=dict(channels),
                   net_devices=tuple(_device_name(devices, net, index) for net, index in
                                     sorted(used)),
                   gdr=gdr, nvls_channels=nvls, ib_disabled=ib_disabled, no_ib_device=no_ib)


def _device_name(devices: dict[str, tuple[str, ...]], network: str, index: int) -> str:
    # A plugin built on IB verbs (IBext, IBext_v8) lists its devices as NET/IB does.
    listed = devices.get(network) or (devices.get("IB", ()) if network.startswith("IB") else ())
    return listed[index] if index < len(listed) else f"{network}/{index}"
