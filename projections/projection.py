"""What a read model is to its runner: its tables, and how events change them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from projections.database import Cursor, Database
from projections.log_reader import Entry


class Projection(ABC):
    """A read model: its tables, and how each event it cares about changes them."""

    name: str
    event_classes: tuple[type, ...]
    # The shape of the model's tables: bumped whenever a column, a table or the meaning of
    # a row changes, so that a runner rebuilds the model instead of reading old rows.
    version: int = 1
    # The tables the model owns (what `drop_tables` drops when the version changes).
    tables: tuple[str, ...] = ()
    # (table, column) pairs holding rows of a thread, by its id (column `thread_id`) or its
    # aggregate's key (`originator_id`): what a recorded purge deletes (`forget`).
    thread_rows: tuple[tuple[str, str], ...] = ()

    @abstractmethod
    def create_tables(self, cursor: Cursor, db: Database) -> None:
        """Create the model's tables if they do not exist."""

    @abstractmethod
    def clear(self, cursor: Cursor, db: Database) -> None:
        """Delete every row, before a rebuild; may drop indexes only readers use, which
        `create_tables` creates again (the rebuild calls it after its last batch)."""

    def drop_tables(self, cursor: Cursor, db: Database) -> None:
        """Drop the model's tables (their indexes go with them), before they are created
        in the shape of a new version."""
        for table in self.tables:
            cursor.execute(f"DROP TABLE IF EXISTS {db.table(table)}")

    @abstractmethod
    def apply_batch(self, entries: Sequence[Entry], cursor: Cursor, db: Database) -> None:
        """Change the rows for a batch of entries (position, event, its thread...), in log order.

        Only events of `event_classes` are given. The batch's transaction is
        committed with the new position after this returns.
        """

    def forget(self, threads: Sequence[tuple[str, str]], cursor: Cursor, db: Database) -> None:
        """Delete the rows of purged threads, each (thread id, aggregate key), when the
        log reaches their `ThreadsPurged`: the model is then what a rebuild would give."""
        for table, column in self.thread_rows:
            values = [thread_id if column == "thread_id" else key for thread_id, key in threads]
            for value in values:
                cursor.execute(f"DELETE FROM {db.table(table)} WHERE {column} = %s", (value,))
