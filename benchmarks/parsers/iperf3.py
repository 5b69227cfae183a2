"""Parse the JSON that ``iperf3 -J`` prints on the client (checked against 3.12).

The fields used::

    start.version                          "iperf 3.12"
    start.cookie                           the test's id, also in the server's own report
    start.test_start.num_streams           1, 4, ...
    start.test_start.reverse               0 / 1 (-R)
    intervals[*].sum.bits_per_second
    end.sum_sent.{bits_per_second, seconds, retransmits}
    end.sum_received.bits_per_second
    end.streams[*].sender.mean_rtt         microseconds, TCP only

On failure iperf3 still prints JSON, with a top-level ``"error"`` string and
mostly empty sections; that becomes ``Iperf3Error``.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from benchmarks.parsers import ParseError
from benchmarks.parsers import json_fields as jf

_MICROSECONDS_PER_MILLISECOND = 1000.0


class Iperf3Error(ParseError):
    """iperf3 ran but reported a failure (e.g. connection refused).

    A subclass of ``ParseError`` so "no usable result" is still one ``except``,
    while callers that care can tell a tool failure from garbled output.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Iperf3Result:
    sender_bps: float
    receiver_bps: float
    retransmits: int | None
    mean_rtt_ms: float | None
    duration_s: float
    streams: int
    reverse: bool
    version: str
    intervals_bps: tuple[float, ...]
    # The test's id, which the server's JSON log also carries: the platform finds its
    # reference endpoint's own record of this exact test by it.
    cookie: str = ""


def parse_iperf3(text: str) -> Iperf3Result:
    """Parse the stdout of one ``iperf3 -c ... -J`` client run."""
    document = jf.load_object(text, "iperf3")
    _raise_reported_error(document)

    start = jf.mapping(document, "start")
    test_start = jf.mapping(start, "test_start")
    end = jf.mapping(document, "end")
    sum_sent = jf.mapping(end, "sum_sent")
    sum_received = jf.mapping(end, "sum_received")
    reverse = _flag(test_start, "reverse")

    return Iperf3Result(
        sender_bps=jf.number(sum_sent, "bits_per_second"),
        # sum_received is what the receiving peer measured: the figure that
        # actually arrived, as opposed to what was pushed into the socket.
        receiver_bps=jf.number(sum_received, "bits_per_second"),
        retransmits=_optional_count(sum_sent, "retransmits"),
        mean_rtt_ms=_mean_rtt_ms(jf.sequence(end, "streams"), reverse),
        # The measured length of the sending side, not the requested -t: the
        # two differ slightly and bits_per_second is computed over this one.
        duration_s=jf.number(sum_sent, "seconds"),
        streams=jf.count(test_start, "num_streams"),
        reverse=reverse,
        version=jf.string(start, "version"),
        intervals_bps=tuple(
            jf.number(jf.mapping(interval, "sum"), "bits_per_second")
            for interval in jf.mappings(jf.sequence(document, "intervals"), "intervals")
        ),
        cookie=str(start.get("cookie", "")),
    )


def _raise_reported_error(document: Mapping[str, object]) -> None:
    if "error" not in document:
        return
    message = document["error"]
    # iperf3 always writes a string here; anything else is still a failure,
    # so keep its JSON form as the message instead of losing it.
    raise Iperf3Error(message if isinstance(message, str) else json.dumps(message))


def _mean_rtt_ms(streams: Sequence[object], reverse: bool) -> float | None:
    # With -R the remote end is the sender; the client never sees its TCP_INFO
    # and iperf3 fills mean_rtt with a placeholder 0, so it means "unknown".
    if reverse:
        return None
    rtts_us: list[float] = []
    for stream in jf.mappings(streams, "end.streams"):
        sender = jf.mapping(stream, "sender")
        if "mean_rtt" not in sender:
            # UDP runs and non-Linux senders have no RTT at all.
            return None
        rtts_us.append(jf.number(sender, "mean_rtt"))
    if not rtts_us:
        return None
    return sum(rtts_us) / len(rtts_us) / _MICROSECONDS_PER_MILLISECOND


def _optional_count(parent: Mapping[str, object], key: str) -> int | None:
    # Absent for UDP and for senders whose OS does not expose retransmits.
    if key not in parent:
        return None
    return jf.count(parent, key)


def _flag(parent: Mapping[str, object], key: str) -> bool:
    # iperf3 writes 0/1 here rather than JSON booleans; accept both.
    value = jf.field(parent, key)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ParseError(f"{key!r} must be 0/1 or a boolean")
