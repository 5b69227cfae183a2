"""The page cache, which the storage probe's timed reads must not measure instead of the disk."""

from __future__ import annotations

import os
from pathlib import Path

PAGE_CACHE_NOTE = ("evicted per file with posix_fadvise(DONTNEED) before each read (best effort, "
                   "no root needed); pages the kernel keeps anyway may still be served from cache")


def drop_cached_pages(path: Path) -> None:
    """Ask the kernel to evict ``path``'s clean pages; needs no privileges (best effort)."""
    fadvise = getattr(os, "posix_fadvise", None)
    if fadvise is None:
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
