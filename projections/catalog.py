"""The read models Holdpoint keeps, and the runner that feeds them."""

from __future__ import annotations

from domain.record.application import Workflows
from projections.assistant_index import AssistantIndexProjection
from projections.change_log import ChangeLogProjection
from projections.cron_index import CronIndexProjection
from projections.decision_register import DecisionRegisterProjection
from projections.memory_items import MemoryItemsProjection
from projections.oversight import OversightProjection
from projections.pending_approvals import PendingApprovalsProjection
from projections.projection import Projection
from projections.read_records import ReadRecordsProjection
from projections.record_life import RecordLifeProjection
from projections.runner import ProjectionRunner
from projections.thread_index import ThreadIndexProjection


def all_projections() -> list[Projection]:
    return [
        PendingApprovalsProjection(),
        ThreadIndexProjection(),
        OversightProjection(),
        MemoryItemsProjection(),
        CronIndexProjection(),
        AssistantIndexProjection(),
        ChangeLogProjection(),
        DecisionRegisterProjection(),
        RecordLifeProjection(),
        ReadRecordsProjection(),
    ]


def runner_for(store: Workflows) -> ProjectionRunner:
    """A runner for every read model, in the store's own database."""
    return ProjectionRunner(store, all_projections())
