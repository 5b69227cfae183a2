"""The areas a buyer weighs when comparing nodes, in the order both the compare page and
`benchctl compare` show them: each metric belongs to the first area whose test it passes.

Shared by both sides so that the page and the command line group (and name) alike; the
labels are translated where they are shown (the web's catalogue, benchctl's).
"""

from __future__ import annotations

from collections.abc import Callable

from contract.metrics import gettext_noop

AREAS: list[tuple[str, str, Callable[[str], bool]]] = [
    # A cluster's weakest pair (network.slowest_link) is network's too.
    ("network", gettext_noop("Network"), lambda m: m.startswith("network.")),
    ("data-loading", gettext_noop("Data loading"),
     lambda m: "dataloader" in m or m in ("storage.smallfile_read", "storage.packedfile_read")),
    ("storage", gettext_noop("Storage"), lambda m: m.startswith("storage.")),
    ("training", gettext_noop("Training"), lambda m: m.startswith("training.")),
    ("gpu", gettext_noop("GPU"), lambda m: m.startswith("gpu.")),
    ("other", gettext_noop("Other"), lambda m: True)]


def area_of(metric: str) -> str:
    return next(key for key, _label, test in AREAS if test(metric))
