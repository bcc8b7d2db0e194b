"""The notifier: makes deliveries from the log and sends those that are due.

Each pass, in any number of server processes at once:
1. the log's interrupt events after the notifier's mark become one delivery per target
   that wants them (raised, assigned, decided, and breached: an `InterruptExpired`), and
   the mark moves on with them, in one transaction; a store's first pass marks the head
   (history is not sent);
2. an open interrupt due within `near_deadline_seconds` becomes one delivery per target;
3. runs that ended make their webhooks due;
4. due deliveries are claimed, checked against the allow-list, sent, and their attempt
   written: 2xx delivered; a network error, 408, 429 or 5xx retried after a doubling
   backoff until `max_attempts`; any other status failed at once.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import httpx
import structlog

from domain.record.application import Workflows
from domain.record.thread import WorkflowThread
from projections.database import Database
from projections.pending_approvals import QUEUE
from projections.timestamps import utc_text
from service.notifications.deliveries import (
    DELIVERED,
    FAILED,
    PENDING,
    REFUSED,
    RUN_WEBHOOK,
    Delivery,
    DeliveryStore,
    new_delivery,
)
from service.notifications.hosts import HostRefusedError, check_url
from service.notifications.messages import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    encode,
    sign,
    slack_message,
)
from service.notifications.settings import Notifications, Target
from service.run_store import RunStore

log = structlog.get_logger()
MARK = "interrupts"
SCAN_LIMIT = 500
RETRIED_STATUSES = {408, 429}
# The queue's rows follow the log a little behind: an interrupt raised just before a pass
# may reach the queue after it, so each pass looks back this far for ones raised since.
NEAR_SLACK_SECONDS = 60.0
EVENTS = {
    "InterruptRaised": "interrupt.raised",
    "InterruptAssigned": "interrupt.assigned",
    "InterruptResumed": "interrupt.decided",
    "InterruptExpired": "interrupt.breached",
}
TOPICS = tuple(
    f"domain.thread:WorkflowThread.{name}" for name in EVENTS
)  # as recorded (domain/record/topics.py keeps the first module's name)


class Notifier:
    def __init__(
        self,
        store: Workflows,
        deliveries: DeliveryStore,
        runs: RunStore,
        read_models: Database,
        settings: Notifications,
        base_url: str,
    ) -> None:
        self.store = store
        self.deliveries = deliveries
        self.runs = runs
        self.read_models = read_models
        self.settings = settings
        self.base_url = base_url.rstrip("/")
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._near_mark: tuple[str, str] | None = None  # the last pass's window end, time
        self._client = httpx.Client(timeout=settings.timeout_seconds, follow_redirects=False)

    # -- the worker -------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="holdpoint-notifier", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._client.close()

    def nudge(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # the next pass tries again; a bug is logged, not fatal
                log.exception("notifier pass failed")
            self._wake.wait(self.settings.poll_seconds)
            self._wake.clear()

    def run_once(self) -> int:
        """One pass; how many deliveries it sent (or tried to)."""
        self.make_from_log()
        self.make_near_deadline()
        self.deliveries.release_ended_runs()
        return self.send_due()

    # -- making deliveries ------------------------------------------------

    def make_from_log(self) -> None:
        mark = self.deliveries.position(MARK)
        if mark is None:
            head = int(self.store.recorder.max_notification_id() or 0)
            self.deliveries.made(MARK, [], head)
            return
        found = self.store.recorder.select_notifications(mark + 1, SCAN_LIMIT, topics=TOPICS)
        if not found:
            return
        threads: dict[UUID, tuple[str, str]] = {}
        made: list[Delivery] = []
        for notification in found:
            event = self.store.mapper.to_domain_event(notification)
            name = EVENTS[type(event).__name__]
            thread_id, graph_id = self._thread_of(event.originator_id, threads)
            notice = self._notice(name, event, thread_id, graph_id, notification.id)
            made += self._for_targets(f"{notification.id}", name, notice)
        self.deliveries.made(MARK, made, found[-1].id)

    def make_near_deadline(self) -> None:
        wanting = [t for t in self.settings.targets if t.wants("interrupt.near_deadline")]
        if not wanting:
            return
        now = datetime.now(UTC)
        soon = utc_text(now + timedelta(seconds=self.settings.near_deadline_seconds))
        # Those whose deadline came into the window since the last pass, and those raised
        # since with a deadline in it already (a first pass: all in it; deduplicated)
        last_soon, last_pass = self._near_mark or (utc_text(now), "")
        rows = self.read_models.statement(
            "SELECT interrupt_id, thread_id, graph_id, node, due_by, required_role, assigned_to "
            f"FROM {self.read_models.table(QUEUE)} WHERE due_by IS NOT NULL AND due_by <= %s "
            "AND (due_by > %s OR (raised_at >= %s AND due_by > %s))",
            (soon, last_soon, last_pass, utc_text(now)),
            write=False,
        )
        self._near_mark = (soon, utc_text(now - timedelta(seconds=NEAR_SLACK_SECONDS)))
        made: list[Delivery] = []
        for interrupt_id, thread_id, graph_id, node, due_by, role, assignee in rows:
            notice = {
                "event": "interrupt.near_deadline",
                "thread_id": thread_id,
                "graph_id": graph_id,
                "interrupt_id": interrupt_id,
                "node": node,
                "due_by": due_by,
                "required_role": role,
                "assigned_to": assignee,
                "link": self._link(interrupt_id),
            }
            made += self._for_targets(f"near:{interrupt_id}", "interrupt.near_deadline", notice)
        if made:
            with self.deliveries.db.transaction() as cursor:
                self.deliveries.add(cursor, made)

    def _for_targets(self, key: str, event: str, notice: dict[str, Any]) -> list[Delivery]:
        made = []
        for target in self.settings.targets:
            if target.wants(event):
                made.append(
                    new_delivery(
                        f"{key}:{target.name}", target.name, target.kind, event, target.url, notice
                    )
                )
        return made

    def _thread_of(
        self, originator_id: UUID, known: dict[UUID, tuple[str, str]]
    ) -> tuple[str, str]:
        if originator_id not in known:
            [first] = self.store.recorder.select_events(originator_id, lte=1, limit=1)
            start = self.store.mapper.to_domain_event(first)
            known[originator_id] = (getattr(start, "thread_id", ""), getattr(start, "graph_id", ""))
        return known[originator_id]

    def _notice(
        self, name: str, event: Any, thread_id: str, graph_id: str, position: int
    ) -> dict[str, Any]:
        notice: dict[str, Any] = {
            "event": name,
            "thread_id": thread_id,
            "graph_id": graph_id,
            "interrupt_id": event.interrupt_id,
            "at": utc_text(event.timestamp),
            "position": position,
            "link": self._link(event.interrupt_id),
        }
        if isinstance(event, WorkflowThread.InterruptRaised):
            notice.update(
                node=event.node,
                question=event.value,
                required_role=event.required_role,
                due_by=event.due_by,
                digest=event.digest,
            )
        elif isinstance(event, WorkflowThread.InterruptAssigned):
            notice.update(assigned_to=event.reviewer_id, actor=event.actor)
        elif isinstance(event, WorkflowThread.InterruptResumed):
            notice.update(decision=event.decision, reason=event.reason, actor=event.actor)
        elif isinstance(event, WorkflowThread.InterruptExpired):
            notice.update(due_by=event.due_by, rule=event.rule)
        return notice

    def _link(self, interrupt_id: str) -> str:
        return f"{self.base_url}/ui/approvals/{interrupt_id}"

    # -- sending ----------------------------------------------------------

    def send_due(self) -> int:
        lease = self.settings.timeout_seconds * 3
        sent = 0
        for delivery in self.deliveries.claim(lease):
            self.send(delivery)
            sent += 1
        return sent

    def send(self, delivery: Delivery) -> None:
        try:
            check_url(delivery.url, self.settings)
        except HostRefusedError as error:
            self.deliveries.attempted(delivery, REFUSED, {"attempted": False, "error": str(error)})
            log.warning("delivery refused", delivery_id=delivery.delivery_id, why=str(error))
            return
        body, secret = self._body(delivery)
        data = encode(body)
        headers = {
            "Content-Type": "application/json",
            EVENT_HEADER: delivery.event,
            DELIVERY_HEADER: delivery.delivery_id,
            "User-Agent": "holdpoint-notifier",
        }
        if secret is not None:
            headers[SIGNATURE_HEADER] = sign(secret, data)
        try:  # the answer's status only: its body is never read (nor held in memory)
            with self._client.stream("POST", delivery.url, content=data, headers=headers) as answer:
                status = answer.status_code
        except httpx.HTTPError as error:
            self._retry_or_fail(delivery, {"error": f"{type(error).__name__}: {error}"[:300]})
            return
        outcome = {"status": status}
        if 200 <= status < 300:
            self.deliveries.attempted(delivery, DELIVERED, outcome)
        elif status in RETRIED_STATUSES or status >= 500:
            self._retry_or_fail(delivery, outcome)
        else:
            self.deliveries.attempted(delivery, FAILED, outcome)

    def _retry_or_fail(self, delivery: Delivery, outcome: dict[str, Any]) -> None:
        if delivery.attempts + 1 >= self.settings.max_attempts:
            self.deliveries.attempted(delivery, FAILED, outcome)
            return
        delay = self.settings.retry_delay(delivery.attempts + 1)
        self.deliveries.attempted(delivery, PENDING, outcome, retry_in=delay)

    def _body(self, delivery: Delivery) -> tuple[dict[str, Any], str | None]:
        if delivery.kind == RUN_WEBHOOK:
            run = self.runs.get(delivery.run_id or "")
            body: dict[str, Any] = run.json() if run is not None else {"run_id": delivery.run_id}
            if run is not None:
                body["values"] = run.output
            body["delivery_id"] = delivery.delivery_id
            return body, self.settings.run_webhook_secret
        target = self._target(delivery.target)
        notice = {**(delivery.body or {}), "delivery_id": delivery.delivery_id}
        secret = None if target is None else target.secret
        if delivery.kind == "slack":
            return slack_message(notice), secret
        return notice, secret

    def _target(self, name: str) -> Target | None:
        return next((t for t in self.settings.targets if t.name == name), None)


def run_webhook(run_id: str, url: str) -> Delivery:
    """A run's webhook, waiting for the run to end (made with the run: service/run_store.py)."""
    return new_delivery(
        f"run:{run_id}",
        RUN_WEBHOOK,
        RUN_WEBHOOK,
        "run.ended",
        url,
        None,
        run_id=run_id,
        status="waiting",
    )
