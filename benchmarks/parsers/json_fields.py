"""Typed access to the fields of a tool's JSON output (iperf3 -J, fio --output-format=json).

Every accessor raises ParseError naming the field, so a parser never lets a KeyError,
TypeError or a NaN out of untrusted output.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

from benchmarks.parsers import ParseError


def load_object(text: str, tool: str) -> Mapping[str, object]:
    """The top-level JSON object of ``tool``'s output."""
    try:
        document: object = json.loads(text)
    except RecursionError as exc:
        # Deeply nested input blows the decoder's stack before it can fail.
        raise ParseError("JSON nested too deeply") from exc
    except ValueError as exc:
        # JSONDecodeError, and also the int-digits limit on huge integers.
        raise ParseError(f"not valid JSON: {exc}") from exc
    if not isinstance(document, Mapping):
        raise ParseError(f"{tool} JSON output must be an object")
    return document


def field(parent: Mapping[str, object], key: str) -> object:
    try:
        return parent[key]
    except KeyError as exc:
        raise ParseError(f"missing field {key!r}") from exc


def mapping(parent: Mapping[str, object], key: str) -> Mapping[str, object]:
    value = field(parent, key)
    if not isinstance(value, Mapping):
        raise ParseError(f"{key!r} must be an object")
    return value


def mappings(items: Sequence[object], where: str) -> list[Mapping[str, object]]:
    result: list[Mapping[str, object]] = []
    for item in items:
        if not isinstance(item, Mapping):
            raise ParseError(f"every entry of {where!r} must be an object")
        result.append(item)
    return result


def sequence(parent: Mapping[str, object], key: str) -> Sequence[object]:
    value = field(parent, key)
    if not isinstance(value, list):
        raise ParseError(f"{key!r} must be an array")
    return value


def number(parent: Mapping[str, object], key: str) -> float:
    value = field(parent, key)
    # bool is an int subclass; true/false is never a measurement.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(f"{key!r} must be a number")
    try:
        result = float(value)
    except OverflowError as exc:
        raise ParseError(f"{key!r} is too large") from exc
    # json.loads accepts NaN/Infinity, which no real measurement produces.
    if not math.isfinite(result) or result < 0:
        raise ParseError(f"{key!r} must be a finite non-negative number")
    return result


def count(parent: Mapping[str, object], key: str) -> int:
    value = field(parent, key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParseError(f"{key!r} must be a non-negative integer")
    return value


def string(parent: Mapping[str, object], key: str) -> str:
    value = field(parent, key)
    if not isinstance(value, str):
        raise ParseError(f"{key!r} must be a string")
    return value
