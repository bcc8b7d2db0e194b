"""The oversight log's tables: their names, shapes, and the indexes readers use.

`holdpoint_interrupt_log` has one row per interrupt (`projections/oversight.py`
says what each column records); `holdpoint_cancellations` one per stopped
thread; `holdpoint_flow_edits` one per edit `as_node` (a decision about the
flow that stands in for a node having run); `holdpoint_oversight_refusals` one
per attempt the hold points' rules refused. Columns added after the first
shape have defaults, so that rows written by name with the first shape's
columns (the report's benchmark does) stay valid. `actions` is set for a review of an
agent's tool calls (domain/oversight/reviews.py): JSON, each action's tool and, once
decided, its decision and whether its arguments were edited.
"""

from __future__ import annotations

from projections.database import Cursor, Database
from projections.rows import ReaderIndex, TableShape

INTERRUPTS = "holdpoint_interrupt_log"
CANCELLATIONS = "holdpoint_cancellations"
FLOW_EDITS = "holdpoint_flow_edits"
REFUSALS = "holdpoint_oversight_refusals"
TABLES = (INTERRUPTS, CANCELLATIONS, FLOW_EDITS, REFUSALS)

# What became of an answer, once the interrupt's node ran past it (NULL until then).
APPLIED, UNAPPLIED, REASKED = "applied", "unapplied", "reasked"
# The outcomes whose `applied` a later event may still settle.
UNSETTLED = "applied IS NULL AND outcome IN ('open', 'decided', 'expired')"


def create_tables(cursor: Cursor, db: Database) -> None:
    """The tables and indexes that are missing (IF NOT EXISTS)."""
    log = db.table(INTERRUPTS)
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {log} ("
        "interrupt_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, graph_id TEXT NOT NULL, "
        "node TEXT NOT NULL, idx INTEGER NOT NULL, raised_at TEXT NOT NULL, "
        "required_role TEXT, due_by TEXT, escalations INTEGER NOT NULL DEFAULT 0, "
        "outcome TEXT NOT NULL, closed_at TEXT, decision TEXT, "
        "reviewer_id TEXT, reviewer_role TEXT, reason TEXT, "
        "seconds_to_decision DOUBLE PRECISION, digest TEXT, "
        "approvals_needed INTEGER NOT NULL DEFAULT 1, "
        "approvals_given INTEGER NOT NULL DEFAULT 0, reasked TEXT, applied TEXT, "
        "actions TEXT)"
    )
    cursor.execute(  # the batch's loads find a thread's unsettled interrupts by it
        f"CREATE INDEX IF NOT EXISTS {INTERRUPTS}_thread ON {log} (thread_id, outcome)"
    )
    for index in READER_INDEXES:
        index.create(cursor, db)
    # Partial indexes of rare rows, kept through a rebuild (an insert that does not match
    # costs their condition alone): the report's hold-point figures read them.
    for name, definition in RARE_ROW_INDEXES:
        cursor.execute(f"CREATE INDEX IF NOT EXISTS {INTERRUPTS}_{name} ON {log} {definition}")
    if db.dialect == "postgres":  # true group counts, so the report's grouping is hashed
        cursor.execute(
            f"CREATE STATISTICS IF NOT EXISTS {db.table(INTERRUPTS + '_decided_groups')} "
            f"(ndistinct) ON (substr(closed_at, 1, 10)), decision, reviewer_id, graph_id "
            f"FROM {log}"
        )
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {db.table(CANCELLATIONS)} ("
        "thread_id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, cancelled_at TEXT NOT NULL, "
        "actor_id TEXT, actor_role TEXT, reason TEXT)"
    )
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {db.table(FLOW_EDITS)} ("
        "position BIGINT PRIMARY KEY, thread_id TEXT NOT NULL, graph_id TEXT NOT NULL, "
        "at TEXT NOT NULL, actor_id TEXT, actor_role TEXT, as_node TEXT NOT NULL, reason TEXT)"
    )
    cursor.execute(
        f"CREATE TABLE IF NOT EXISTS {db.table(REFUSALS)} ("
        "position BIGINT PRIMARY KEY, at TEXT NOT NULL, principal_id TEXT, role TEXT, "
        "reason TEXT NOT NULL, action TEXT, target TEXT)"
    )
    for table in (FLOW_EDITS, REFUSALS):  # few rows; the report reads a period's
        cursor.execute(f"CREATE INDEX IF NOT EXISTS {table}_at ON {db.table(table)} (at)")


READER_INDEXES = (  # the report's
    ReaderIndex(f"{INTERRUPTS}_raised", INTERRUPTS, "(raised_at, graph_id)"),
    ReaderIndex(f"{INTERRUPTS}_closed", INTERRUPTS, "(closed_at)"),  # decisions, breaches
    ReaderIndex(  # decisions, grouped by day (read in index order)
        f"{INTERRUPTS}_decided_day",
        INTERRUPTS,
        "(substr(closed_at, 1, 10), decision, reviewer_id, graph_id, outcome, closed_at, "
        "seconds_to_decision)",
    ),
    ReaderIndex(  # the open backlog (partial: other outcomes must not use it)
        f"{INTERRUPTS}_open", INTERRUPTS, "(graph_id, raised_at) WHERE outcome = 'open'"
    ),
)
RARE_ROW_INDEXES = (  # (name suffix, definition): the report's conditions, word for word
    ("reasks", "(raised_at) WHERE reasked IS NOT NULL"),
    ("unapplied", f"(raised_at) WHERE applied = '{UNAPPLIED}'"),
    ("four_eyes", "(closed_at) WHERE approvals_needed > 1"),
)
LOG_SHAPE = TableShape(
    INTERRUPTS,
    "interrupt_id",
    (
        "interrupt_id",
        "thread_id",
        "graph_id",
        "node",
        "idx",
        "raised_at",
        "required_role",
        "due_by",
        "escalations",
        "outcome",
        "closed_at",
        "decision",
        "reviewer_id",
        "reviewer_role",
        "reason",
        "seconds_to_decision",
        "digest",
        "approvals_needed",
        "approvals_given",
        "reasked",
        "applied",
        "actions",
    ),
)
CANCELLATION_SHAPE = TableShape(
    CANCELLATIONS,
    "thread_id",
    ("thread_id", "graph_id", "cancelled_at", "actor_id", "actor_role", "reason"),
)
FLOW_EDIT_SHAPE = TableShape(
    FLOW_EDITS,
    "position",
    ("position", "thread_id", "graph_id", "at", "actor_id", "actor_role", "as_node", "reason"),
)
REFUSAL_SHAPE = TableShape(
    REFUSALS,
    "position",
    ("position", "at", "principal_id", "role", "reason", "action", "target"),
)
