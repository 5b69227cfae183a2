"""Parse the text output of iputils ``ping`` (checked against iputils 20221126).

Shape of a successful run::

    PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.
    64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.043 ms
    ...
    --- 127.0.0.1 ping statistics ---
    5 packets transmitted, 5 received, 0% packet loss, time 816ms
    rtt min/avg/max/mdev = 0.042/0.045/0.057/0.005 ms

With 100% loss the ``rtt`` line is missing, and the statistics line may carry
extra ``+N duplicates`` / ``+N corrupted`` / ``+N errors`` fields.
"""

import math
import re
from dataclasses import dataclass

from benchmarks.parsers import ParseError

# re.ASCII everywhere: without it \d also matches non-ASCII digits such as
# "٣", which int()/float() would happily accept and turn garbage into numbers.
_NUMBER = r"\d+(?:\.\d+)?"

# "%g" is how iputils prints the loss, so a very small loss can come out in
# exponent form ("1e-05%"); accept that rather than rejecting real output.
_LOSS_NUMBER = r"\d+(?:\.\d+)?(?:e[+-]?\d+)?"

_STATISTICS_LINE = re.compile(
    r"^(?P<transmitted>\d+) packets transmitted, "
    r"(?P<received>\d+) (?:packets )?received\b(?P<rest>.*)$",
    re.MULTILINE | re.ASCII,
)
_LOSS = re.compile(rf"\b(?P<loss>{_LOSS_NUMBER})% packet loss\b", re.ASCII)

# The line can be followed by ", pipe N" or ", ipg/ewma a/b ms", so it is not
# anchored at the end.  "round-trip ... stddev" is the BSD/busybox spelling;
# accepting it costs nothing and avoids a surprise on a non-Linux host.
_RTT_LINE = re.compile(
    rf"^(?:rtt|round-trip) min/avg/max/(?:mdev|stddev) = "
    rf"(?P<min>{_NUMBER})/(?P<avg>{_NUMBER})/(?P<max>{_NUMBER})/(?P<mdev>{_NUMBER}) ms\b",
    re.MULTILINE | re.ASCII,
)

# Only reply lines carry a per-packet time.  The optional "[epoch] " prefix is
# what `ping -D` adds.  iputils prints times >= 100 ms without decimals.
_REPLY_TIME = re.compile(
    rf"^(?:\[{_NUMBER}\] )?\d+ bytes from .*\bicmp_seq=\d+\b.*\btime=(?P<time>{_NUMBER}) ms\b",
    re.MULTILINE | re.ASCII,
)


@dataclass(frozen=True)
class PingResult:
    transmitted: int
    received: int
    loss_percent: float
    rtt_min_ms: float | None
    rtt_avg_ms: float | None
    rtt_max_ms: float | None
    rtt_mdev_ms: float | None
    rtts_ms: tuple[float, ...]


def parse_ping(text: str) -> PingResult:
    """Parse the stdout of one iputils ``ping`` run.

    Raises ``ParseError`` when the text has no (or more than one) statistics
    line, because without it we cannot say how many packets were sent.
    """
    transmitted, received, rest = _statistics(text)
    rtt_min, rtt_avg, rtt_max, rtt_mdev = _rtt_summary(text)
    return PingResult(
        transmitted=transmitted,
        received=received,
        loss_percent=_loss_percent(rest, transmitted),
        rtt_min_ms=rtt_min,
        rtt_avg_ms=rtt_avg,
        rtt_max_ms=rtt_max,
        rtt_mdev_ms=rtt_mdev,
        rtts_ms=tuple(_to_float(m["time"]) for m in _REPLY_TIME.finditer(text)),
    )


def _statistics(text: str) -> tuple[int, int, str]:
    matches = list(_STATISTICS_LINE.finditer(text))
    if not matches:
        raise ParseError("no 'packets transmitted' statistics line: not ping output")
    if len(matches) > 1:
        # Two runs pasted together: refusing beats silently picking one.
        raise ParseError("more than one ping statistics line")
    match = matches[0]
    return _to_int(match["transmitted"]), _to_int(match["received"]), match["rest"]


def _loss_percent(rest_of_statistics_line: str, transmitted: int) -> float:
    match = _LOSS.search(rest_of_statistics_line)
    if match is None:
        # iputils only prints the loss when it sent something; with nothing
        # sent nothing was lost.  Anything else missing the field is not ping.
        if transmitted == 0:
            return 0.0
        raise ParseError("statistics line has no '% packet loss' field")
    return _to_float(match["loss"])


def _rtt_summary(
    text: str,
) -> tuple[float | None, float | None, float | None, float | None]:
    # No rtt line means no timed reply came back (100% loss, or `-s` too
    # small for ping to carry a timestamp), so the fields are unknown: None.
    matches = list(_RTT_LINE.finditer(text))
    if not matches:
        return None, None, None, None
    if len(matches) > 1:
        raise ParseError("more than one rtt summary line")
    match = matches[0]
    return (
        _to_float(match["min"]),
        _to_float(match["avg"]),
        _to_float(match["max"]),
        _to_float(match["mdev"]),
    )


def _to_int(digits: str) -> int:
    # int() refuses strings over ~4300 digits (CVE-2020-10735 guard) with a
    # plain ValueError; map it onto the documented error.
    try:
        return int(digits)
    except ValueError as exc:
        raise ParseError(f"number out of range: {digits[:20]}...") from exc


def _to_float(digits: str) -> float:
    value = float(digits)
    # A long enough digit string rounds to inf; no real ping prints that.
    if not math.isfinite(value):
        raise ParseError(f"number out of range: {digits[:20]}...")
    return value
