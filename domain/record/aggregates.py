"""The aggregates a store records, imported together.

An event names its class by topic, and a moved class's old topic is registered when
its module is imported (`domain/record/topics.py`). Every reader of the whole log (a
projector, `holdpoint verify` and its worker processes, which import little to start
fast) imports this module, so that each event of the log decodes, whatever else the
process imported: otherwise a seal's events, say, would look undecodable to a process
that never imported the seal's module.
"""

from __future__ import annotations

from domain.access.identity import ApiKey, KeyringBootstrap, RefusedAttempt
from domain.access.role_catalogue import RoleCatalogue
from domain.assistants.assistant import Assistant
from domain.integrity.seal import SealRegister
from domain.memory.item import MemoryItem
from domain.oversight.policy_record import OversightPolicy
from domain.oversight.read_log import ReadLog
from domain.oversight.suspension import GraphSuspension
from domain.privacy.erasures import SubjectErasures
from domain.record.thread import WorkflowThread
from domain.retention.incidents import IncidentRegister
from domain.retention.legal_holds import LegalHolds
from domain.retention.policies import RetentionPolicies
from domain.retention.purge_ledger import PurgeLedger
from domain.schedule.cron import Cron

AGGREGATES = (
    WorkflowThread,
    ApiKey,
    KeyringBootstrap,
    RefusedAttempt,
    SealRegister,
    MemoryItem,
    Cron,
    Assistant,
    GraphSuspension,
    ReadLog,
    RoleCatalogue,
    OversightPolicy,
    RetentionPolicies,
    LegalHolds,
    PurgeLedger,
    IncidentRegister,
    SubjectErasures,
)
