"""The inbox: the pending-approval read model, filtered, sorted and cut into pages.

The read model pages oldest first; other orders are sorted here over at most
`SORT_WINDOW` matching rows (the inbox says so when there are more: filter to
narrow them down). A search (`q`) is answered by the read model's word table
(projections/pending_search.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from domain.oversight.reviews import review_of
from projections.pending_approvals import PendingApproval, PendingApprovals
from projections.timestamps import parse_utc_text

PAGE_SIZE = 20
PREVIEW = 2000  # characters of a payload a confirmation shows (its page shows it all)
SORT_WINDOW = 1000
AGES = {"": None, "5m": 300.0, "1h": 3600.0, "1d": 86400.0}
AGE_LABELS = {
    "": "any age",
    "5m": "older than 5 minutes",
    "1h": "older than 1 hour",
    "1d": "older than 1 day",
}
SORTS = {
    "oldest": "oldest first",
    "newest": "newest first",
    "deadline": "deadline soonest",
    "graph": "graph, then node",
}


@dataclass(frozen=True)
class InboxFilters:
    graph_id: str | None = None
    node: str | None = None
    overdue: bool = False
    age: str = ""
    sort: str = "oldest"
    page: int = 1
    q: str | None = None  # words of the thread id, its metadata or the payload
    mine: bool = False  # only those assigned to the viewer

    @classmethod
    def from_query(cls, query: Any) -> InboxFilters:
        """From the inbox's query string; unknown choices fall back to the defaults."""
        try:
            page = max(1, min(int(query.get("page") or 1), 10_000))
        except ValueError:
            page = 1
        age = query.get("age") or ""
        sort = query.get("sort") or "oldest"
        return cls(
            graph_id=(query.get("graph_id") or "").strip() or None,
            node=(query.get("node") or "").strip()[:200] or None,
            overdue=query.get("overdue") in ("1", "true", "on"),
            age=age if age in AGES else "",
            sort=sort if sort in SORTS else "oldest",
            page=page,
            q=(query.get("q") or "").strip()[:200] or None,
            mine=query.get("mine") in ("1", "true", "on"),
        )

    def query(self, **changes: Any) -> dict[str, str]:
        """The query string of these filters (with `changes`), for links."""
        values = {
            "graph_id": self.graph_id or "",
            "node": self.node or "",
            "overdue": "1" if self.overdue else "",
            "age": self.age,
            "sort": self.sort,
            "page": str(self.page),
            "q": self.q or "",
            "mine": "1" if self.mine else "",
        }
        values.update({k: str(v) for k, v in changes.items()})
        return {k: v for k, v in values.items() if v and not (k == "page" and v == "1")}

    @property
    def narrowed(self) -> bool:
        """Whether any filter narrows the queue (the counts say "matching")."""
        return bool(self.graph_id or self.node or self.overdue or self.age or self.q or self.mine)


@dataclass(frozen=True)
class InboxItem:
    approval: PendingApproval
    overdue: bool
    summary: str  # its title: as its graph declared it, or read from its payload
    payload_text: str = ""  # the whole payload as text a person reads (for a confirmation)


@dataclass
class Inbox:
    items: list[InboxItem]
    matching: int
    overdue: int
    pages: int
    truncated: bool
    signature: str = field(default="")


def summary(payload: Any, limit: int = 160) -> str:
    """What the interrupt asks, in one line: the tool calls a review of an agent's calls
    puts to a person, its `question` (or `message`), else its fields as "key: value"
    text (never raw JSON)."""
    review = review_of(payload)
    if review is not None:
        calls = [f"{a['name']} {_nested(a['args'] or {})}" for a in review["actions"]]
        payload = f"Review {'tool call' if len(calls) == 1 else 'tool calls'}: " + " · ".join(calls)
    elif isinstance(payload, dict):
        for key in ("question", "message", "title", "prompt"):
            if isinstance(payload.get(key), str):
                payload = payload[key]
                break
    text = " ".join(readable(payload).split()) or "(nothing to show)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def title_of(approval: PendingApproval) -> str:
    """The item's title: the one its `interrupt(..., title=...)` made, else `summary`."""
    return approval.title or summary(approval.payload)


def readable(value: Any) -> str:
    """A JSON value as text a person reads: "key: value · key: value", lists by commas."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return " · ".join(f"{key}: {_nested(item)}" for key, item in value.items())
    if isinstance(value, list):
        return ", ".join(_nested(item) for item in value)
    return json.dumps(value, ensure_ascii=False, default=str)  # a number, true, null


def _nested(value: Any) -> str:
    if isinstance(value, dict) and not value:
        return "()"
    if isinstance(value, dict):
        return "(" + ", ".join(f"{key}: {_nested(item)}" for key, item in value.items()) + ")"
    if isinstance(value, list):
        return "(" + ", ".join(_nested(item) for item in value) + ")"
    return readable(value)


def is_overdue(due_by: str | None, now: datetime) -> bool:
    return due_by is not None and parse_utc_text(due_by) < now


def _sort_key(sort: str) -> Any:
    if sort == "newest":
        return lambda a: (a.raised_at, a.interrupt_id)
    if sort == "deadline":
        return lambda a: (a.due_by is None, a.due_by or "", a.raised_at)
    if sort == "graph":
        return lambda a: (a.graph_id, a.node, a.raised_at)
    return lambda a: (a.raised_at, a.interrupt_id)


def read_inbox(queue: PendingApprovals, filters: InboxFilters, viewer_id: str) -> Inbox:
    """The page of the queue `filters` ask for, as `viewer_id` sees it ("mine")."""
    now = datetime.now(UTC)
    common: dict[str, Any] = {
        "graph_id": filters.graph_id,
        "node": filters.node,
        "search": filters.q,
        "assigned_to": viewer_id if filters.mine else None,
        "now": now,
    }
    rows: list[PendingApproval] = []
    cursor: str | None = None
    matching = 0
    while len(rows) < SORT_WINDOW:
        page = queue.page(
            **common,
            overdue=filters.overdue,
            min_age_seconds=AGES[filters.age],
            limit=min(500, SORT_WINDOW - len(rows)),
            after=cursor,
        )
        rows.extend(page.items)
        matching = page.total
        cursor = page.next_cursor
        if cursor is None:
            break
    overdue = queue.page(**common, overdue=True, limit=1).total
    rows.sort(key=_sort_key(filters.sort), reverse=filters.sort == "newest")
    start = (filters.page - 1) * PAGE_SIZE
    shown = [
        InboxItem(a, is_overdue(a.due_by, now), title_of(a), readable(a.payload)[:PREVIEW])
        for a in rows[start : start + PAGE_SIZE]
    ]
    pages = max(1, -(-min(len(rows), SORT_WINDOW) // PAGE_SIZE))
    signature = hashlib.sha256(
        f"{matching}|{overdue}|{filters.page}|"
        f"{[(i.approval.interrupt_id, i.approval.assigned_to) for i in shown]}".encode()
    ).hexdigest()[:16]
    return Inbox(shown, matching, overdue, pages, cursor is not None, signature)
