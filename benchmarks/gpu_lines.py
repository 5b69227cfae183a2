"""One line of `make gpu-check`'s report, and how the report is printed."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Line:
    text: str
    # LOW: a figure under its threshold; FIX: a fault of the board; FAIL: a part that did
    # not run. Any of them makes the check exit 1.
    mark: str = ""
    look: list[str] = field(default_factory=list)  # what to look at

    @property
    def low(self) -> bool:
        return bool(self.mark)


def render(lines: list[Line]) -> str:
    out = []
    for line in lines:
        out.append(f"{line.text}  <- {line.mark}" if line.mark else line.text)
        indent = " " * (len(line.text) - len(line.text.lstrip()) + 4)
        out += [f"{indent}look at: {hint}" for hint in line.look]
    return "\n".join(out)
