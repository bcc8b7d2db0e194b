"""Keyset paging over a read-model table: a stable order, a cursor, a total.

The order is two key columns (a time, then an id to break ties); the cursor
is the last row's two keys, so pages neither skip nor repeat rows while the
table changes between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from projections.database import Database


@dataclass(frozen=True)
class KeysetPage:
    rows: list[Any]
    total: int
    next_cursor: str | None


def keyset_page(
    db: Database,
    *,
    table: str,
    columns: str,
    where: list[str],
    params: list[Any],
    keys: tuple[str, str],
    descending: bool,
    limit: int,
    after: str | None,
    count: tuple[str, list[Any]] | None = None,
) -> KeysetPage:
    """Rows matching `where`, ordered by `keys`, after the cursor `after`.

    The two key columns must come first in `columns`, so the cursor can be
    read from each row. The total is `COUNT(*)` over the matching rows, or
    `count` (a query and its parameters) where a kept count answers it.
    """
    condition = " AND ".join(where) or "1 = 1"
    first, second = keys
    direction, beyond = ("DESC", "<") if descending else ("ASC", ">")
    with db.transaction(write=False) as cursor:
        cursor.execute(*(count or (f"SELECT COUNT(*) FROM {table} WHERE {condition}", params)))
        total = int(cursor.fetchone()[0])
        page_params = list(params)
        if after:
            first_value, _, second_value = after.partition("|")
            condition += f" AND ({first}, {second}) {beyond} (%s, %s)"
            page_params += [first_value, second_value]
        cursor.execute(
            f"SELECT {columns} FROM {table} WHERE {condition} "
            f"ORDER BY {first} {direction}, {second} {direction} LIMIT %s",
            [*page_params, limit + 1],
        )
        rows = cursor.fetchall()
    page = rows[:limit]
    more = len(rows) > limit and bool(page)
    next_cursor = f"{page[-1][0]}|{page[-1][1]}" if more else None
    return KeysetPage(page, total, next_cursor)
