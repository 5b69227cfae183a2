"""Parse the text output of iputils ``tracepath`` (checked against 20221126).

Line shapes, as printed by tracepath.c::

     1?: [LOCALHOST]                      pmtu 1500
     1:  192.168.1.1                                           0.512ms
     3:  no reply
     4:  198.51.100.17                                        11.233ms asymm  5
     7:  192.0.2.44                                           16.120ms reached
     1?: reply received 8)
         Too many hops: pmtu 1500
         Resume: pmtu 1480 hops 7 back 8

``N?:`` means tracepath could not match the answer to the probe's TTL; the
number is still the TTL it was probing, so it is kept as the hop's ttl.
"""

import re
from dataclasses import dataclass

from benchmarks.parsers import ParseError

# Digit runs are bounded so a garbage line cannot make int() chew on a
# thousand-digit number; real values are a TTL (<= 255) and an MTU.
_HOP_PREFIX = re.compile(r"^\s*(?P<ttl>\d{1,3})(?P<unsure>\?)?: +(?P<body>.*?)\s*$", re.ASCII)

# `tracepath -b` prints "name (address)", otherwise the host is one token.
# The tail is one of the verdicts recverr() prints after the round-trip time.
_ANSWER = re.compile(
    r"^(?P<host>\S+(?: \([^()\s]*\))?)"
    r"(?: +(?P<rtt>\d{1,12}\.\d{3})ms)?"
    r"(?: +\(This broken router returned corrupted payload\))?"
    r"(?: +(?:pmtu (?P<pmtu>\d{1,9})|(?P<reached>reached)|asymm +\d{1,3}|![HNPA]))?$",
    re.ASCII,
)
_LOCALHOST = "[LOCALHOST]"
_PMTU_NOTE = re.compile(r"\bpmtu (?P<pmtu>\d{1,9})$", re.ASCII)
_TOO_MANY_HOPS = re.compile(r"^\s*Too many hops: pmtu (?P<pmtu>\d{1,9})\s*$", re.ASCII)
_RESUME = re.compile(
    r"^\s*Resume: pmtu (?P<pmtu>\d{1,9})(?: hops (?P<hops>\d{1,3}))?(?: back (?P<back>\d{1,3}))?\s*$",
    re.ASCII,
)


@dataclass(frozen=True)
class Hop:
    ttl: int
    host: str | None
    rtt_ms: float | None
    no_reply: bool


@dataclass(frozen=True)
class TracepathResult:
    hops: tuple[Hop, ...]
    hop_count: int
    pmtu: int | None
    reached: bool


@dataclass(frozen=True)
class _Line:
    """What one line of output contributes to the result."""

    hop: Hop | None = None
    reached: bool = False
    pmtu: int | None = None
    resume_hops: int | None = None
    is_resume: bool = False


def parse_tracepath(text: str) -> TracepathResult:
    """Parse the stdout of one ``tracepath`` run.

    ``hops`` keeps every answer line in order, so a TTL can appear more than
    once (tracepath re-probes after a PMTU change).  ``[LOCALHOST]`` lines
    are the local PMTU notice, not a router, and are left out of ``hops``.
    ``hop_count`` is the ``hops N`` from the Resume line when the target
    answered, otherwise the highest TTL probed.
    """
    lines = [_parse_line(line) for line in text.splitlines()]
    hops = tuple(line.hop for line in lines if line.hop is not None)
    resumes = [line for line in lines if line.is_resume]
    if not hops and not resumes:
        raise ParseError("no hop or Resume line: not tracepath output")
    if len(resumes) > 1:
        raise ParseError("more than one Resume line")

    resume_hops = resumes[0].resume_hops if resumes else None
    return TracepathResult(
        hops=hops,
        hop_count=resume_hops if resume_hops is not None else max((h.ttl for h in hops), default=0),
        pmtu=_final_pmtu(lines),
        # Resume only prints "hops N" when the destination answered.
        reached=resume_hops is not None or any(line.reached for line in lines),
    )


def _final_pmtu(lines: list[_Line]) -> int | None:
    # The Resume line carries the final answer; without it (an interrupted
    # run) the last PMTU tracepath reported is the best we know.
    for line in reversed(lines):
        if line.is_resume:
            return line.pmtu
    return next((line.pmtu for line in reversed(lines) if line.pmtu is not None), None)


def _parse_line(line: str) -> _Line:
    if (resume := _RESUME.match(line)) is not None:
        hops = resume["hops"]
        return _Line(
            pmtu=int(resume["pmtu"]),
            resume_hops=None if hops is None else int(hops),
            is_resume=True,
        )
    if (too_many := _TOO_MANY_HOPS.match(line)) is not None:
        return _Line(pmtu=int(too_many["pmtu"]))
    if (prefix := _HOP_PREFIX.match(line)) is not None:
        return _parse_hop(int(prefix["ttl"]), prefix["body"])
    # Blank lines and tracepath's odd diagnostics ("no info", "cmsg4:N")
    # say nothing about the path; skipping them beats failing a whole run.
    return _Line()


def _parse_hop(ttl: int, body: str) -> _Line:
    if body in ("no reply", "send failed"):
        # "send failed" is the last line of a run that could not probe this
        # TTL; like a timeout, nothing answered.
        return _Line(hop=Hop(ttl=ttl, host=None, rtt_ms=None, no_reply=True))
    if body == "reply received 8)":
        # The destination itself answered the UDP probe (something listens
        # on the port): reached, but tracepath prints neither host nor time.
        return _Line(hop=Hop(ttl=ttl, host=None, rtt_ms=None, no_reply=False), reached=True)
    if body.startswith(_LOCALHOST):
        note = _PMTU_NOTE.search(body)
        return _Line(pmtu=None if note is None else int(note["pmtu"]))
    answer = _ANSWER.match(body)
    if answer is None:
        raise ParseError(f"unrecognised tracepath hop line: {body[:80]!r}")
    rtt = answer["rtt"]
    pmtu = answer["pmtu"]
    return _Line(
        hop=Hop(
            ttl=ttl,
            host=answer["host"],
            rtt_ms=None if rtt is None else float(rtt),
            no_reply=False,
        ),
        reached=answer["reached"] is not None,
        pmtu=None if pmtu is None else int(pmtu),
    )
