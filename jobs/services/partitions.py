"""The samples table by month: partitions made ahead, and old months rolled up (#35).

A re-test plan of 4 a day at 10,000 hosts writes some 2 million samples a day, 700 million a
year. ``jobs_sample`` is partitioned by range of ``created_at`` (the platform's clock at
intake, never the host's), one partition a calendar month in UTC, named
``jobs_sample_y2026m12``. Every reader keeps reading ``jobs_sample``; PostgreSQL routes.

- **Ahead:** the sweeper makes this month's partition and SAMPLES_PARTITIONS_AHEAD more
  (``ensure``), so an insert never waits on DDL. A row dated where no month exists yet
  (a clock far off) lands in ``jobs_sample_default`` and loses nothing: making its month
  moves it there first, since PostgreSQL refuses a partition whose range the default holds.
- **Rolled up:** a month that ended over SAMPLES_RAW_KEEP_MONTHS ago keeps every figure
  (value, spread, count, evidence: the per-run summary, for ever) and drops the raw part of
  its metadata (curves, conditions, cookies, the host's own figures), all but the keys named
  in SAMPLES_ROLLED_UP_KEEPS, which the history and job pages read of an old figure. The
  month is rewritten into a new table and swapped in, in one transaction: a bulk rewrite
  leaves no dead rows behind, as an UPDATE of millions would. Its name ends ``_rolled``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from psycopg import sql

TABLE = "jobs_sample"
DEFAULT = f"{TABLE}_default"
NAME = re.compile(rf"^{TABLE}_y(\d{{4}})m(\d{{2}})(_rolled)?$")
# One month's partitions are made or rolled up under this lock at a time: two sweepers
# (two platform workers) racing on the same DDL would have one fail on a name taken.
LOCK_KEY = 0x53414D50  # "SAMP"


@dataclass(frozen=True, order=True)
class Month:
    year: int
    month: int

    @classmethod
    def of(cls, when: datetime) -> Month:
        when = when.astimezone(UTC)
        return cls(when.year, when.month)

    def plus(self, months: int) -> Month:
        index = self.year * 12 + self.month - 1 + months
        return Month(index // 12, index % 12 + 1)

    @property
    def start(self) -> datetime:
        return datetime(self.year, self.month, 1, tzinfo=UTC)

    @property
    def name(self) -> str:
        return f"{TABLE}_y{self.year:04d}m{self.month:02d}"


def partitions() -> dict[Month, str]:
    """The month partitions there are, by month: their table names (``_rolled`` once rolled up)."""
    with connection.cursor() as cur:
        cur.execute("SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
                    "WHERE i.inhparent = %s::regclass", [TABLE])
        names = [row[0] for row in cur.fetchall()]
    return {Month(int(m[1]), int(m[2])): name for name in names if (m := NAME.match(name))}


def ensure(now: datetime, ahead: int | None = None) -> int:
    """Make the partitions of ``now``'s month and ``ahead`` more that are missing; how many."""
    ahead = settings.SAMPLES_PARTITIONS_AHEAD if ahead is None else ahead
    first = Month.of(now)
    wanted = [first.plus(i) for i in range(ahead + 1)]
    there = partitions()
    missing = [m for m in wanted if m not in there]
    for month in missing:
        make(month)
    return len(missing)


def make(month: Month) -> None:
    """A month's partition, with the rows the default partition held for it moved in."""
    start, end = month.start, month.plus(1).start
    name = sql.Identifier(month.name)
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
        if month in partitions():
            return  # another sweeper made it while this one waited
        # Built beside the table and attached, not created as a partition: PostgreSQL refuses
        # a new partition whose range the default partition holds rows of.
        cur.execute(LIKE.format(name, sql.Identifier(TABLE)))
        cur.execute(sql.SQL("WITH moved AS (DELETE FROM {} WHERE created_at >= %s AND "
                            "created_at < %s RETURNING *) INSERT INTO {} SELECT * FROM moved")
                    .format(sql.Identifier(DEFAULT), name), [start, end])
        _attach(cur, month.name, start, end)


def roll_up(now: datetime, keep_months: int | None = None) -> int:
    """Roll up every month that ended over ``keep_months`` ago and is not rolled up yet;
    how many were."""
    keep = settings.SAMPLES_RAW_KEEP_MONTHS if keep_months is None else keep_months
    # The month ``keep`` months back is still kept whole: it ended under ``keep`` months ago.
    oldest_kept = Month.of(now).plus(-keep)
    due = sorted(m for m, name in partitions().items()
                 if not name.endswith("_rolled") and m < oldest_kept)
    for month in due:
        _roll(month)
    return len(due)


def _roll(month: Month) -> None:
    start, end = month.start, month.plus(1).start
    raw, rolled = sql.Identifier(month.name), f"{month.name}_rolled"
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
        if partitions().get(month) != month.name:
            return  # rolled up by another sweeper while this one waited
        # The foreign key to jobs_run is checked at commit; a month with such checks still
        # pending in this transaction cannot be dropped, so they are made now.
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cur.execute("SELECT array_agg(attname::text ORDER BY attnum) FROM pg_attribute "
                    "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped", [TABLE])
        columns = cur.fetchone()[0]
        kept = sql.SQL(", ").join(
            KEPT_METADATA if c == "metadata" else sql.Identifier(c) for c in columns)
        cur.execute(LIKE.format(sql.Identifier(rolled), sql.Identifier(TABLE)))
        cur.execute(sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {}").format(
            sql.Identifier(rolled), sql.SQL(", ").join(map(sql.Identifier, columns)), kept, raw),
            [list(settings.SAMPLES_ROLLED_UP_KEEPS)])
        cur.execute(sql.SQL("ALTER TABLE {} DETACH PARTITION {}").format(
            sql.Identifier(TABLE), raw))
        cur.execute(sql.SQL("DROP TABLE {}").format(raw))
        _attach(cur, rolled, start, end)


LIKE = sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
# Not formatted itself (an argument of another SQL), so its braces are literal.
KEPT_METADATA = sql.SQL("(SELECT COALESCE(jsonb_object_agg(k, v), '{}'::jsonb) "
                        "FROM jsonb_each(metadata) AS e(k, v) WHERE k = ANY(%s))")


def _attach(cur: CursorWrapper, name: str, start: datetime, end: datetime) -> None:
    # The range as a CHECK first, so that ATTACH takes it as proof instead of scanning the
    # month's rows under its lock; dropped once attached (the partition bound holds it).
    # Literals, not parameters: DDL takes none.
    table, check = sql.Identifier(name), sql.Identifier(f"{name}_month")
    since, until = sql.Literal(start), sql.Literal(end)
    cur.execute(sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} CHECK (created_at >= {} AND "
                        "created_at < {})").format(table, check, since, until))
    cur.execute(sql.SQL("ALTER TABLE {} ATTACH PARTITION {} FOR VALUES FROM ({}) TO ({})")
                .format(sql.Identifier(TABLE), table, since, until))
    cur.execute(sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(table, check))
