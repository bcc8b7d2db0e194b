"""What one oversight report reads: the tables, the period and the graph, as SQL.

Shared by the report's modules (`oversight_report`, `hold_point_report`), so
that every figure filters the same period and graph in the same words.
"""

from __future__ import annotations

from dataclasses import dataclass

from projections.database import Database
from projections.oversight_tables import CANCELLATIONS, FLOW_EDITS, INTERRUPTS, REFUSALS

DECIDED = "outcome IN ('decided', 'expired') AND closed_at >= %s AND closed_at < %s"
# On SQLite, the period again as the UTC days decisions are grouped by: SQLite keeps no
# statistics, and without a range on `substr(closed_at, 1, 10)` it would not read the index
# on (that day, decision, reviewer_id, graph_id, ...), in GROUP BY order, but sort every
# decision. PostgreSQL plans from statistics; there the range would only cost two substr()
# a row.
SQLITE_DAYS = " AND substr(closed_at, 1, 10) BETWEEN %s AND %s"


@dataclass(frozen=True)
class ReportScope:
    """The tables, period (as read-model text) and graph filter of one report, and
    whether the database is SQLite (see SQLITE_DAYS)."""

    log: str
    cancelled: str
    flow_edits: str
    refusals: str
    start: str
    end: str
    graph_id: str | None
    sqlite: bool

    @classmethod
    def of(cls, db: Database, since: str, until: str, graph_id: str | None) -> ReportScope:
        return cls(
            log=db.table(INTERRUPTS),
            cancelled=db.table(CANCELLATIONS),
            flow_edits=db.table(FLOW_EDITS),
            refusals=db.table(REFUSALS),
            start=since,
            end=until,
            graph_id=graph_id,
            sqlite=db.dialect == "sqlite",
        )

    @property
    def graph(self) -> str:
        return " AND graph_id = %s" if self.graph_id else ""

    @property
    def graph_params(self) -> list[str]:
        return [self.graph_id] if self.graph_id else []

    @property
    def period_params(self) -> list[str]:
        return [self.start, self.end, *self.graph_params]

    @property
    def decided(self) -> str:
        """The decisions made in the period (and in the graph)."""
        return DECIDED + (SQLITE_DAYS if self.sqlite else "") + self.graph

    @property
    def decided_params(self) -> list[str]:
        days = [self.start[:10], self.end[:10]] if self.sqlite else []
        return [self.start, self.end, *days, *self.graph_params]
