"""The record's generation: a number that every change to what the public board shows moves
on (a node's board rows refreshed; a node, provider or region edited or revoked; a re-test
done or missed; a pause; a certificate issued or revoked). What is computed from the record
and kept (board/page_cache.py) is kept under the generation it was computed at, and never
read under a later one.

A PostgreSQL sequence: no writer waits on another for it, and since no rollback returns a
number, a number never stands for two different contents. A change moves it twice: at once,
so a reader in the same transaction (a test's, which never commits) sees it, and again after
its commit, so a page computed from the data before the commit is not kept under the number
that the change took.

Saves and deletes of the models the board shows move it by themselves (board.page_cache
connects to them); a bulk ``update()`` sends no signal, so the writer calls ``changed()``.
"""

from __future__ import annotations

from django.db import connection, transaction

SEQUENCE = "record_generation"  # fleet/migrations/0017_record_generation.py


def current() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT last_value FROM record_generation")
        row = cur.fetchone()
    return int(row[0]) if row else 0


def changed() -> None:
    """Something the board shows has changed: the generation moves now and after the commit."""
    _move()
    transaction.on_commit(_move)


def _move() -> None:
    with connection.cursor() as cur:
        cur.execute("SELECT nextval(%s)", [SEQUENCE])
