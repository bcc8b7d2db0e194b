"""Prometheus metrics: counters kept by this process, gauges read from the read models.

Counters (requests, runs, interrupts raised, decisions, verifications) count
what this process did; sum them over replicas. Gauges (open approvals, the
oldest open approval's age, projection lag, events quarantined because they
cannot be decoded; the latest seal's age and the events recorded since it)
are read from the shared read models and the store at each scrape, so every
replica reports the same values.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from domain.integrity.seal import SealFormatError
from integrity.sealing import latest_seal
from projections.pending_approvals import PendingApprovals
from projections.quarantine import Quarantine
from service.read_models import ReadModels
from service.runs import RunManager, RunOutcome

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class ReadModelGauges(Collector):
    """Gauges computed at scrape time from the read models."""

    def __init__(self, read_models: ReadModels) -> None:
        self.read_models = read_models

    def collect(self) -> Iterator[Metric]:
        page = PendingApprovals(self.read_models.db).page(limit=1)
        yield GaugeMetricFamily(
            "holdpoint_open_approvals", "Interrupts waiting for a human", value=page.total
        )
        oldest = page.items[0].age_seconds if page.items else 0.0
        yield GaugeMetricFamily(
            "holdpoint_oldest_open_approval_age_seconds",
            "Age of the oldest interrupt still waiting for a human (0 when none)",
            value=oldest,
        )
        lag = GaugeMetricFamily(
            "holdpoint_projection_lag_events",
            "Events recorded but not yet applied, per read model",
            labels=["projection"],
        )
        for status in self.read_models.status():
            lag.add_metric([status.name], status.lag)
        yield lag
        yield GaugeMetricFamily(
            "holdpoint_quarantined_events",
            "Events the read models passed by because they cannot be decoded (see /readyz "
            "and holdpoint verify)",
            value=Quarantine(self.read_models.db).count(),
        )


class SealGauges(Collector):
    """How far the log is from its latest seal: its age, and the events recorded since
    (what a seal does not yet cover). Neither is reported while no seal is recorded."""

    def __init__(self, read_models: ReadModels) -> None:
        self.store = read_models.store

    def collect(self) -> Iterator[Metric]:
        try:
            seal = latest_seal(self.store)
        except SealFormatError:
            seal = None  # `holdpoint verify --seal` and the audit say what is wrong with it
        if seal is None:
            return
        age = (datetime.now(UTC) - datetime.fromisoformat(seal["sealed_at"])).total_seconds()
        yield GaugeMetricFamily(
            "holdpoint_last_seal_age_seconds", "Seconds since the latest seal was made", value=age
        )
        head = int(self.store.recorder.max_notification_id() or 0)
        yield GaugeMetricFamily(
            "holdpoint_events_after_last_seal",
            "Events recorded after the latest seal's position (not yet sealed)",
            value=max(head - int(seal["position"]), 0),
        )


class RunRecordGauges(Collector):
    """The run records this process keeps in memory and their cap (`runs_kept`): what its
    memory grows with as it serves, bounded (README, "Memory")."""

    def __init__(self, runs: RunManager) -> None:
        self.runs = runs

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "holdpoint_run_records",
            "Records of runs this process keeps in memory (a run's chunks for its streams, "
            "a finished run's output)",
            value=self.runs.records_kept(),
        )
        yield GaugeMetricFamily(
            "holdpoint_run_records_max",
            "The most run records it keeps (runs_kept): past it, the oldest finished go",
            value=self.runs.keep,
        )


class Metrics:
    """The server's metrics, in a registry of its own (one per app)."""

    def __init__(self, read_models: ReadModels) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "holdpoint_http_requests",
            "HTTP requests by route template, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "holdpoint_http_request_duration_seconds",
            "HTTP request duration by route template and method",
            ["route", "method"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self.runs = Counter(
            "holdpoint_runs", "Runs finished, by status", ["status"], registry=self.registry
        )
        self.interrupts = Counter(
            "holdpoint_interrupts_raised",
            "Interrupts raised by runs of this process",
            registry=self.registry,
        )
        self.decisions = Counter(
            "holdpoint_decisions",
            "Human answers to interrupts recorded through this process, by kind",
            ["decision"],
            registry=self.registry,
        )
        self.verifications = Counter(
            "holdpoint_verifications",
            "Verifications of the record run through GET /audit/verify, by result "
            "(failed: a problem was found)",
            ["result"],
            registry=self.registry,
        )
        self.registry.register(ReadModelGauges(read_models))
        self.registry.register(SealGauges(read_models))

    def watch_runs(self, runs: RunManager) -> None:
        """Report `runs`' records in memory with the other gauges."""
        self.registry.register(RunRecordGauges(runs))

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route, method).observe(seconds)

    def observe_run(self, outcome: RunOutcome) -> None:
        self.runs.labels(outcome.record.status).inc()
        if outcome.interrupts_raised:
            self.interrupts.inc(outcome.interrupts_raised)
        for decision in outcome.decisions:
            self.decisions.labels(decision).inc()

    def observe_verification(self, problems: int) -> None:
        self.verifications.labels("failed" if problems else "ok").inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
