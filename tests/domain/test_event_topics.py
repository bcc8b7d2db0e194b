"""Events are a permanent contract: their stored topics never change by accident.

A renamed or moved event class would make every event recorded before the
change unreadable. Every aggregate the domain defines is found here by
walking the `domain` package, so a new one cannot slip by. If this test
fails because an event was deliberately renamed or moved, register the old
topic (`eventsourcing.utils.register_topic`) and add the new name here.
"""

import importlib
import pkgutil

from eventsourcing.domain import Aggregate
from eventsourcing.utils import get_topic

import domain
from domain.record.thread import WorkflowThread

RECORDED_TOPICS = {
    "domain.thread:WorkflowThread.ThreadStarted",
    "domain.thread:WorkflowThread.ThreadForked",
    "domain.thread:WorkflowThread.InputReceived",
    "domain.thread:WorkflowThread.NodeCompleted",
    "domain.thread:WorkflowThread.NodeFailed",
    "domain.thread:WorkflowThread.InterruptRaised",
    "domain.thread:WorkflowThread.InterruptResumed",
    "domain.thread:WorkflowThread.InterruptExpired",
    "domain.thread:WorkflowThread.InterruptAssigned",
    "domain.thread:WorkflowThread.InterruptApproved",
    "domain.thread:WorkflowThread.StateEdited",
    "domain.thread:WorkflowThread.RunReclaimed",
    "domain.thread:WorkflowThread.RunCancelled",
    "domain.thread:WorkflowThread.MetadataUpdated",
    "domain.thread:WorkflowThread.ThreadCompleted",
    "domain.thread:WorkflowThread.ThreadFailed",
    "domain.thread:WorkflowThread.ThreadCancelled",
    "domain.thread:WorkflowThread.InterruptSuperseded",
    "domain.thread:WorkflowThread.CheckpointSaved",
    "domain.thread:WorkflowThread.WritesSaved",
    "domain.identity:ApiKey.KeyCreated",
    "domain.identity:ApiKey.KeyRevoked",
    "domain.identity:KeyringBootstrap.KeysBootstrapped",
    "domain.identity:RefusedAttempt.AccessRefused",
    "domain.seal:SealRegister.Opened",
    "domain.seal:SealRegister.AuditSealed",
    "domain.memory.item:MemoryItem.ItemStored",
    "domain.memory.item:MemoryItem.ItemChanged",
    "domain.memory.item:MemoryItem.ItemDeleted",
    "domain.schedule.cron:Cron.CronScheduled",
    "domain.schedule.cron:Cron.CronUpdated",
    "domain.schedule.cron:Cron.CronFired",
    "domain.schedule.cron:Cron.CronDeleted",
    "domain.schedule.cron:Cron.CronRunRecovered",
    "domain.assistants.assistant:Assistant.AssistantCreated",
    "domain.assistants.assistant:Assistant.AssistantUpdated",
    "domain.assistants.assistant:Assistant.LatestVersionSelected",
    "domain.assistants.assistant:Assistant.AssistantDeleted",
    "domain.oversight.suspension:GraphSuspension.GraphSuspended",
    "domain.oversight.suspension:GraphSuspension.GraphResuspended",
    "domain.oversight.suspension:GraphSuspension.SuspensionLifted",
    "domain.access.role_catalogue:RoleCatalogue.RolesConfigured",
    "domain.access.role_catalogue:RoleCatalogue.RolesReconfigured",
    "domain.oversight.policy_record:OversightPolicy.OversightPolicyRecorded",
    "domain.oversight.policy_record:OversightPolicy.OversightPolicyChanged",
    "domain.oversight.read_log:ReadLog.ReadsRecorded",
    "domain.oversight.read_log:ReadLog.MoreReadsRecorded",
    "domain.retention.policies:RetentionPolicies.Opened",
    "domain.retention.policies:RetentionPolicies.RetentionPolicyAdopted",
    "domain.retention.policies:RetentionPolicies.RetentionPolicyRetired",
    "domain.retention.legal_holds:LegalHolds.Opened",
    "domain.retention.legal_holds:LegalHolds.LegalHoldPlaced",
    "domain.retention.legal_holds:LegalHolds.LegalHoldLifted",
    "domain.retention.purge_ledger:PurgeLedger.Opened",
    "domain.retention.purge_ledger:PurgeLedger.ThreadsPurged",
    "domain.retention.incidents:IncidentRegister.Opened",
    "domain.retention.incidents:IncidentRegister.IncidentOpened",
    "domain.retention.incidents:IncidentRegister.IncidentClosed",
    "domain.privacy.erasures:SubjectErasures.Opened",
    "domain.privacy.erasures:SubjectErasures.SubjectErased",
}
# Snapshots are a cache, never evidence, but a stored one must still be read back.
SNAPSHOT_TOPICS = {"eventsourcing.domain:Snapshot"}  # the library's class, not a nested one


def aggregates() -> list[type]:
    """Every aggregate class defined in a module of the `domain` package."""
    found = []
    for module in pkgutil.walk_packages(domain.__path__, "domain."):
        loaded = importlib.import_module(module.name)
        for value in vars(loaded).values():
            if (
                isinstance(value, type)
                and issubclass(value, Aggregate)
                and value.__module__ == loaded.__name__
            ):
                found.append(value)
    return found


def event_classes() -> list[type]:
    return [
        value
        for aggregate in aggregates()
        for value in vars(aggregate).values()
        if isinstance(value, type)
        and value.__name__ not in ("Event", "Created", "Snapshot")
        and issubclass(value, Aggregate.Event)
    ]


def test_every_event_class_keeps_its_recorded_topic():
    assert {get_topic(cls) for cls in event_classes()} == RECORDED_TOPICS


def test_the_thread_snapshots_keep_their_topic():
    assert {get_topic(WorkflowThread.Snapshot)} == SNAPSHOT_TOPICS


def test_event_names_are_in_the_past_tense():
    for cls in event_classes():
        assert cls.__name__.endswith("ed"), cls.__name__
