"""A board page remembered until the record changes (#35).

A page of 100 nodes costs some 40 ms of queries, findings and scores, and is the same for
every reader until something it shows changes. So its JSON is kept in the cache under the
record's generation (fleet/services/generation.py), which every such change moves on: a
page kept under an older generation is never read again. What time alone changes (a node
going offline, a figure going stale) shows within BOARD_PAGE_SECONDS.

The key is the page's own parameters only, sorted, so junk parameters cannot fill the cache
with copies of one page; a buyer's site figures are added after, never kept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.core.signals import setting_changed
from django.db.models.signals import post_delete, post_save
from django.utils.translation import get_language

from fleet.services import generation

T = TypeVar("T")

# What a board page shows, by model label: their saves and deletes move the generation.
SHOWN = frozenset({"leaderboard.LatestResult", "fleet.Node", "fleet.Provider", "fleet.Region",
                   "fleet.RetestPause", "jobs.Retest", "certification.Certificate"})


def page_name(path: str, params: Iterable[tuple[str, str]]) -> str:
    """A page's name among what is kept: the language, the address and the page's parameters
    (those the caller names, sorted)."""
    text = "\n".join([path, *(f"{k}={v}" for k, v in sorted(params))])
    digest = hashlib.sha256(text.encode()).hexdigest()
    return f"page:{get_language() or ''}:{digest}"


def kept(name: str, compute: Callable[[], T]) -> T:
    """``compute()``'s answer, kept under ``name`` and the record's generation for at most
    BOARD_PAGE_SECONDS: the rule for every board answer that is the same for all readers
    until the record changes. Computed every time when keeping is off (the generation is
    then not even read). ``name`` must come from a closed set, never from raw input."""
    seconds = settings.BOARD_PAGE_SECONDS
    if seconds <= 0:
        return compute()
    key = f"board:{generation.current()}.{_settings_epoch}:{name}"
    found: T | None = cache.get(key)
    if found is None:
        found = compute()
        cache.set(key, found, seconds)
    return found


def remembered(path: str, params: Iterable[tuple[str, str]], compute: Callable[[], bytes]) -> bytes:
    """The page under these parameters: from the cache, or computed and kept."""
    return kept(page_name(path, params), compute)


# Settings change in a running process only where a test overrides them (a week's window,
# the score's weights): a page kept under the old ones is not read under the new.
_settings_epoch = 0


def _on_setting_changed(**_: object) -> None:
    global _settings_epoch
    _settings_epoch += 1


def _on_save_or_delete(sender: Any, **_: object) -> None:
    if getattr(sender, "_meta", None) is not None and sender._meta.label in SHOWN:
        generation.changed()


def connect() -> None:
    # Any sender: certification is the board's peer, and the board does not import it.
    post_save.connect(_on_save_or_delete, dispatch_uid="board.page_cache.save")
    post_delete.connect(_on_save_or_delete, dispatch_uid="board.page_cache.delete")
    setting_changed.connect(_on_setting_changed, dispatch_uid="board.page_cache.settings")
