"""Fitting a table to a terminal: display widths, wrapping at word boundaries, and splitting
the columns that do not fit into blocks printed one under the other.

A Chinese character takes two columns, so widths are display columns (rich's cell_len), never
len(). A line breaks at a space or between two Chinese characters, never inside a Latin word
("TCP", "DataLoader", "network.tcp_throughput", a node name, "(7.1–8.9)"): a word cut in two
reads as two other words. Only a word wider than the whole column is folded.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from rich.cells import cell_len

# Borders and padding of a rich table with the default box: "│ " before each column, " │"
# after the last, and one space between a cell and the next border.
PER_COLUMN = 3
EDGE = 1
# Kept with the word after them (opening) or before them (closing): a line never ends with
# "（" nor starts with "）" or "，".
OPENING = set("（([{「『《〈【“‘")
CLOSING = set("）)]}」』》〉】”’，、。：；！？,.:;!?%")


def width(text: str) -> int:
    """Display columns of the widest line of ``text``."""
    return max((cell_len(line) for line in text.split("\n")), default=0)


def _wide(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def words(text: str) -> list[str]:
    """The pieces a line may break between: Latin words whole, each Chinese character alone
    (with the punctuation that clings to it), and " " where the text had a space."""
    out: list[str] = []
    opening = ""  # brackets waiting for the word they open
    for char in text:
        if char.isspace():
            if out and out[-1] != " ":
                out.append(" ")
        elif char in CLOSING and out and out[-1] != " ":
            out[-1] += char
        elif char in OPENING:
            opening += char
        elif out and out[-1] != " " and not _wide(char) and not _wide(out[-1][-1]):
            out[-1] += opening + char  # inside a Latin word: "a(b)" stays one
            opening = ""
        else:
            out.append(opening + char)
            opening = ""
    if opening:
        out.append(opening)
    while out and out[-1] == " ":
        out.pop()
    return out


def narrowest(text: str) -> int:
    """The narrowest a column can be and still show ``text`` without cutting a word."""
    return max((cell_len(w) for line in text.split("\n") for w in words(line) if w != " "),
               default=0)


def wrap(text: str, limit: int) -> str:
    """``text`` in lines of at most ``limit`` columns, broken between words."""
    return "\n".join(line for part in text.split("\n") for line in _wrap_line(part, limit))


def _wrap_line(text: str, limit: int) -> list[str]:
    lines: list[str] = []
    line, space = "", False
    for word in words(text):
        if word == " ":
            space = True
            continue
        joined = line + (" " if space and line else "") + word
        if cell_len(joined) <= limit or not line:
            line = joined
        else:
            lines.append(line)
            line = word
        space = False
        while cell_len(line) > limit > 0:  # a word wider than the column: folded, the last resort
            cut = _fold_at(line, limit)
            lines.append(line[:cut])
            line = line[cut:]
    return [*lines, line] if line or not lines else lines


def _fold_at(text: str, limit: int) -> int:
    used = 0
    for i, char in enumerate(text):
        used += cell_len(char)
        if used > limit:
            return max(i, 1)
    return len(text)


@dataclass(frozen=True)
class Column:
    """A column's header and cells as text; its natural width (nothing wrapped) and the
    narrowest it can be (its widest word)."""

    header: str
    cells: tuple[str, ...]

    @property
    def natural(self) -> int:
        return max(width(t) for t in (self.header, *self.cells))

    @property
    def narrowest(self) -> int:
        return max(narrowest(t) for t in (self.header, *self.cells))


def table_width(widths: list[int]) -> int:
    return sum(widths) + PER_COLUMN * len(widths) + EDGE


def widths(columns: list[Column], total: int) -> list[int]:
    """Each column's width so that the table fits ``total`` columns: the natural ones when they
    fit, else the widest column narrowed first (a long label wraps before a figure does), never
    below its widest word."""
    out = [c.natural for c in columns]
    floor = [c.narrowest for c in columns]
    while table_width(out) > total:
        shrinkable = [i for i in range(len(out)) if out[i] > floor[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: out[i])
        out[widest] -= 1
    return out


def fits(columns: list[Column], total: int) -> bool:
    return table_width([c.narrowest for c in columns]) <= total


def blocks(kept: list[Column], spread: list[Column], total: int,
           last: list[Column] | None = None) -> list[list[int]]:
    """Which of the ``spread`` columns (compare's nodes) go in each block, every block with the
    ``kept`` columns (the metric, its unit) beside them and the last one with ``last`` too (the
    winner, said once): as few blocks as fit, and as even as they can be. A column that fits
    no block gets one of its own."""
    if not spread:
        return [[]]
    tail = last or []
    count = 1
    while count < len(spread):
        size = -(-len(spread) // count)
        parts = [list(range(i, min(i + size, len(spread)))) for i in range(0, len(spread), size)]
        if all(fits(kept + [spread[i] for i in part] + (tail if part is parts[-1] else []), total)
               for part in parts):
            return parts
        count += 1
    return [[i] for i in range(len(spread))]
