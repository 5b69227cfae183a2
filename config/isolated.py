"""Background work item by item: one bad row never stops the others.

A periodic task (renewals, re-tests, the sweeper) walks many rows. An exception from one of
them (a bug, a row no one foresaw, a broker that answers nonsense) used to abort the walk,
and every row after it waited for a fix: one multi-node certificate stopped every renewal.
Here each item runs in its own savepoint; what fails is rolled back, logged with its
traceback and counted, and the walk goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TypeVar

from django.db import transaction

log = logging.getLogger(__name__)
T = TypeVar("T")


def each(items: Iterable[T], handle: Callable[[T], object], what: str,
         failed: Callable[[T, Exception], object] | None = None) -> int:
    """``handle`` every item in its own savepoint; returns how many raised. ``failed`` is
    called (in a savepoint of its own) with an item that raised, to record why."""
    errors = 0
    for item in items:
        try:
            with transaction.atomic():
                handle(item)
        except Exception as exc:  # noqa: BLE001 - the point: any fault of one item
            errors += 1
            log.exception("%s %s failed; the others go on", what, item)
            if failed is not None:
                try:
                    with transaction.atomic():
                        failed(item, exc)
                except Exception:  # noqa: BLE001 - recording the fault must not stop the walk
                    log.exception("%s %s: its failure could not be recorded", what, item)
    return errors


def step(handle: Callable[[], int], what: str) -> int:
    """One phase of a periodic task; a phase that raises counts 0 and the next still runs.
    No transaction of its own: a phase that publishes to a broker does so after its rows
    are committed, as it would alone."""
    try:
        return handle()
    except Exception:  # noqa: BLE001 - the point: any fault of one phase
        log.exception("%s failed; the task's other phases go on", what)
        return 0
