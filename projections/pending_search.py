"""The inbox's text search: a table of the words of each open interrupt and its thread.

Each open interrupt has a row per word of its thread id, graph, node, title and payload
(keys and values); each thread has a row per word of its id and metadata, under the
interrupt id "" (a thread's words are shared by all its interrupts, so that a change of
metadata is one thread's rows, not each interrupt's). The table is keyed by the word
first: a search finds a word's rows by a range of that key (a prefix: "refu" finds
"refund"), on SQLite and PostgreSQL alike, and never reads the queue's text.

A thread's metadata words are added as its metadata changes, never taken away: a search
also finds a thread by a value its metadata held earlier (the model stays what a rebuild
from the log gives, without keeping each thread's metadata).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from projections.database import Cursor, Database
from projections.rows import Row

TERMS = "holdpoint_pending_terms"
THREAD_WIDE = ""  # the interrupt id of a thread's own words (its id, its metadata)
WORD = re.compile(r"\w+")
MAX_WORD = 40  # longer words are cut: a search for a prefix of one still finds it
MAX_TERMS = 500  # words kept per interrupt or thread (a huge payload is found by its start)
MAX_QUERY_WORDS = 8
COUNT_CAP = 5_000  # rows a word's count reads at most, to find a search's rarest word
COLUMNS = ("term", "thread_id", "interrupt_id")  # the key, too
HIGHEST = chr(0x10FFFF)  # after every word that starts with a prefix, in code-point order


def create_terms_table(cursor: Cursor, db: Database) -> None:
    # Code-point order ("C") on PostgreSQL, as SQLite's own, so that a prefix is a range.
    collate = ' COLLATE "C"' if db.dialect == "postgres" else ""
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {db.table(TERMS)} (term TEXT{collate} NOT NULL, "
        "thread_id TEXT NOT NULL, interrupt_id TEXT NOT NULL, "
        "PRIMARY KEY (term, thread_id, interrupt_id))"
    )
    cursor.execute(  # what a closed interrupt's and a purged thread's deletes find rows by
        f"CREATE INDEX IF NOT EXISTS {TERMS}_owner ON {db.table(TERMS)} (thread_id, interrupt_id)"
    )


def words(text: str) -> list[str]:
    """The words of `text`, lower case, each cut to MAX_WORD characters."""
    return [word[:MAX_WORD] for word in WORD.findall(text.lower())]


def terms(*values: Any) -> set[str]:
    """The distinct words of JSON values: every key and every string or number in them."""
    texts = _texts(values, [])
    # One pass over them all (a space ends a word, and lowers a text's last letter as its
    # end does); where that finds MAX_TERMS or more, the words are taken text by text.
    found = {word[:MAX_WORD] for word in WORD.findall(" ".join(texts).lower())}
    if len(found) < MAX_TERMS:
        return found
    found = set()
    for text in texts:
        found.update(words(text))
        if len(found) >= MAX_TERMS:
            return set(sorted(found)[:MAX_TERMS])
    return found


def _texts(value: Any, found: list[str]) -> list[str]:
    """The texts of a JSON value, added to `found`: keys, strings and numbers."""
    kind = type(value)
    if kind is str:
        found.append(value)
    elif kind is dict:
        for key, item in value.items():
            found.append(str(key))
            _texts(item, found)
    elif kind is list or kind is tuple:
        for item in value:
            _texts(item, found)
    elif kind is bool or value is None:
        pass
    elif kind is int or kind is float:
        found.append(str(value))
    else:  # a subclass of one of them, as the checks by kind above would not see it
        _texts_of_subclass(value, found)
    return found


def _texts_of_subclass(value: Any, found: list[str]) -> None:
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        found.append(str(value))
    elif isinstance(value, dict):
        for key, item in value.items():
            found.append(str(key))
            _texts(item, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _texts(item, found)


def item_terms(row: Row, payload: Any) -> set[str]:
    """The words an open interrupt is found by (its thread's are kept apart)."""
    return terms(row["graph_id"], row["node"], row["title"] or "", payload)


def add_terms(cursor: Cursor, db: Database, owned: Iterable[tuple[str, str, set[str]]]) -> None:
    """Add each (thread id, interrupt id, words)'s rows (those already there stay)."""
    rows = [(term, thread, interrupt) for thread, interrupt, found in owned for term in found]
    if rows:
        cursor.executemany(
            f"INSERT INTO {db.table(TERMS)} (term, thread_id, interrupt_id) "
            "VALUES (%s, %s, %s) ON CONFLICT (term, thread_id, interrupt_id) DO NOTHING",
            rows,
        )


def add_new_terms(cursor: Cursor, db: Database, owned: Iterable[tuple[str, str, set[str]]]) -> None:
    """Add the rows of owners that have none yet (a thread begun, an interrupt raised):
    in bulk where the database can (`Database.insert_new`)."""
    rows = [(term, thread, interrupt) for thread, interrupt, found in owned for term in found]
    if rows:
        db.insert_new(cursor, db.table(TERMS), COLUMNS, rows, COLUMNS)


def drop_terms(cursor: Cursor, db: Database, owners: Iterable[tuple[str, str]]) -> None:
    """Delete the rows of each (thread id, interrupt id)."""
    gone = list(owners)
    if gone:
        cursor.executemany(
            f"DELETE FROM {db.table(TERMS)} WHERE thread_id = %s AND interrupt_id = %s", gone
        )


def matching(db: Database, queue: str, query: str) -> tuple[list[str], list[Any]]:
    """SQL conditions on the queue (`queue`, its table) for a search: each word of `query`
    begins a word of the interrupt's or of its thread's; and their parameters.

    The word that begins the fewest rows drives the search, through the word key: it
    names the candidates. Every other word is then checked on each candidate alone,
    through the owner index, so that a word most threads share ("bench" of thread ids
    all beginning "bench-") costs the candidates' rows, not its own."""
    found = list(dict.fromkeys(words(query)[:MAX_QUERY_WORDS]))
    if not found:
        return [], []
    terms_table = db.table(TERMS)
    rarest = found[0] if len(found) == 1 else min(found, key=lambda w: _rows_beginning(db, w))
    where = [
        f"interrupt_id IN (SELECT t.interrupt_id FROM {terms_table} t "
        "WHERE t.term >= %s AND t.term < %s AND t.interrupt_id <> '' "
        f"UNION ALL SELECT q.interrupt_id FROM {queue} q "
        f"JOIN {terms_table} t ON t.thread_id = q.thread_id AND t.interrupt_id = '' "
        "WHERE t.term >= %s AND t.term < %s)"
    ]
    params: list[Any] = [rarest, rarest + HIGHEST] * 2
    for word in found:
        if word != rarest:
            where.append(
                f"EXISTS (SELECT 1 FROM {terms_table} t WHERE t.thread_id = {queue}.thread_id "
                f"AND t.interrupt_id IN ({queue}.interrupt_id, '') "
                "AND t.term >= %s AND t.term < %s)"
            )
            params += [word, word + HIGHEST]
    return where, params


def _rows_beginning(db: Database, word: str) -> int:
    """How many rows have a word beginning `word`, counted up to COUNT_CAP (a range of the
    word key)."""
    rows = db.statement(
        f"SELECT COUNT(*) FROM (SELECT 1 FROM {db.table(TERMS)} WHERE term >= %s AND term < %s "
        f"LIMIT {COUNT_CAP}) AS found",
        (word, word + HIGHEST),
        write=False,
    )
    return int(rows[0][0])
