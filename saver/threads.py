"""The threads a `HoldpointSaver` writes, kept at hand, and their saves committed in groups.

A save is a change to a thread (`WorkflowThread.save_checkpoint`, `save_writes`). It is
applied to the thread at hand under the thread's lock, in the order the saves are made
(saver/write_order.py), and then committed. Saves applied while a commit of the thread
is in flight wait for it and go together in the next one: a group commit, one
transaction for several saves. Each save returns only once its own events are committed,
so nothing is acknowledged that is not on record; what a group commit saves is the
transactions' fixed costs, which a graph's saves, made from LangGraph's background
threads one after another, would otherwise pay each.

A save may also be parked until the save it must follow is applied (`park`): a task's
writes that arrive before their step's checkpoint is saved are applied right after it,
under the same lock, and committed with it; their caller sleeps once, until that commit.

A commit refused because another writer (another process) appended to the thread first
reads the thread again and applies every save not yet committed on it, in order, then
commits again. A save whose change raises leaves nothing of it on the thread.

Reading: the thread at hand, with its applied saves, orders the saves (`read(...,
fresh=False)`); any other reader (`get_tuple`) sees only what is committed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from domain.errors import ConcurrentUpdateError, StaleCheckpointError
from domain.record.application import Workflows
from domain.record.langgraph_record import LANGGRAPH
from domain.record.thread import WorkflowThread

RETRIES = 20  # commits refused because another writer appended first, then it gives up
CACHED_THREADS = 256  # threads kept at their latest version between saves
LOCK_STRIPES = 64

Change = Callable[[WorkflowThread, bool], Any]  # (thread, grow): what the save returns


@dataclass(eq=False)
class Save:
    """One save: its change to the thread, how to begin the thread if it has none yet,
    whether it was parked and is left to commit by itself (`alone`), and, once committed
    (`done`), what the change returned or the error it ended in."""

    thread_id: str
    change: Change
    begin: Callable[[], WorkflowThread]
    result: Any = None
    error: BaseException | None = None
    alone: bool = False
    done: bool = False
    woken: threading.Condition | None = None  # a parked save's: wakes its caller alone


@dataclass(eq=False)
class Applied:
    """A thread at hand with saves applied to it that are not committed yet, in order."""

    thread: WorkflowThread
    saves: list[Save] = field(default_factory=list)


class Threads:
    """The threads at hand of one saver, and its saves to them (see the module)."""

    def __init__(self, store: Workflows) -> None:
        self.store = store
        self._cached: OrderedDict[str, WorkflowThread] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._stripes = [threading.Lock() for _ in range(LOCK_STRIPES)]
        # A save's end (on record, or never) wakes the saves lingering on its stripe.
        self._ended = [threading.Condition(lock) for lock in self._stripes]
        self._committers = [threading.Lock() for _ in range(LOCK_STRIPES)]
        self._applied: dict[str, Applied] = {}
        self._committing: set[str] = set()  # threads with a commit in flight
        self._positions: OrderedDict[str, int] = OrderedDict()
        # Threads a fresh read found not begun: the save that follows begins them without
        # reading again (if another writer began one meanwhile, its commit is refused and
        # applied again on their thread).
        self._absent: OrderedDict[str, bool] = OrderedDict()
        # Saves parked until the one of a key is applied (`park`), by thread and key.
        self._parked: dict[tuple[str, Hashable], list[Save]] = {}

    def _stripe(self, thread_id: str) -> int:
        return hash(thread_id) % LOCK_STRIPES

    # -- reading -----------------------------------------------------------

    def read(
        self, thread_id: str, read: Callable[[WorkflowThread | None], Any], *, fresh: bool = True
    ) -> Any:
        """`read(thread)` of the thread, under its lock (never midway through a change).

        Unless `fresh`: the thread at hand, with the saves applied to it (for the order of
        this saver's own saves). Fresh: what is committed; the thread at hand if nothing
        was recorded on it since (one probe of the store), else read again.
        """
        with self._stripes[self._stripe(thread_id)]:
            busy = thread_id in self._applied or thread_id in self._committing
            current = self._current(thread_id)
            if current is not None and (
                not fresh or (not busy and self.store.unchanged_since(thread_id, current.version))
            ):
                return read(current)
            thread = self.store.thread(thread_id)
            if thread is None and not busy:
                self._absent[thread_id] = True
                if len(self._absent) > CACHED_THREADS:
                    self._absent.popitem(last=False)
            if thread is not None and thread.engine == LANGGRAPH and not busy:
                self._keep(thread_id, thread)
            return read(thread)

    def position(self, thread_id: str) -> int | None:
        """The log position of the last event committed on the thread by this saver."""
        return self._positions.get(thread_id)

    # -- saving ------------------------------------------------------------

    def save(self, thread_id: str, change: Change, begin: Callable[[], WorkflowThread]) -> Save:
        """Apply a change to the thread at hand (`apply`), then commit it (`commit`)."""
        return self.commit(self.apply(thread_id, change, begin))

    def apply(
        self,
        thread_id: str,
        change: Change,
        begin: Callable[[], WorkflowThread],
        *,
        then: Hashable | None = None,
    ) -> Save:
        """Apply `change(thread, grow)` to the thread at hand, to be committed (`commit`).

        `grow` is False on a second try, after the change found the thread not as it
        expected (StaleCheckpointError): then on a fresh read. A change that raises
        leaves nothing on the thread and raises here.
        `then`: this save's key; the saves parked until it (`park`) are applied right
        after it, whether it succeeded or not.
        """
        save = Save(thread_id, change, begin)
        with self._stripes[self._stripe(thread_id)]:
            try:
                self._apply(save)
            except BaseException:
                if then is not None:  # they commit by themselves: wake them
                    self._apply_parked(thread_id, then, alone=True)
                raise
            if then is not None:  # they go in this save's commit
                self._apply_parked(thread_id, then, alone=False)
        return save

    def _apply(self, save: Save) -> None:
        """`apply`'s work, under the thread's lock."""
        thread_id = save.thread_id
        grow = True
        for _ in range(RETRIES):
            thread = self._current(thread_id) or self._unless_absent(thread_id) or save.begin()
            before = len(thread.pending_events)
            try:
                save.result = save.change(thread, grow)
            except StaleCheckpointError:
                self._reapply(thread_id)
                grow = False
                continue
            except BaseException:
                if len(thread.pending_events) != before:  # it changed the thread: undo
                    self._reapply(thread_id)
                raise
            self._applied.setdefault(thread_id, Applied(thread)).saves.append(save)
            self._keep(thread_id, thread)
            return
        raise ConcurrentUpdateError(thread_id)

    def park(
        self,
        thread_id: str,
        change: Change,
        begin: Callable[[], WorkflowThread],
        until: Hashable,
        waiting: Callable[[WorkflowThread], bool],
    ) -> Save | None:
        """Park `change` until the save of key `until` (`apply(..., then=until)`), if the
        thread at hand is `waiting(thread)` for it: it is then applied right after that
        save and goes in its commit (`commit_parked`). None, with nothing done, when the
        thread is not at hand or not waiting."""
        with self._stripes[self._stripe(thread_id)]:
            thread = self._current(thread_id)
            if thread is None or not waiting(thread):
                return None
            save = Save(thread_id, change, begin)
            save.woken = threading.Condition(self._stripes[self._stripe(thread_id)])
            self._parked.setdefault((thread_id, until), []).append(save)
            return save

    def commit_parked(self, save: Save, until: Hashable, timeout: float) -> Save:
        """Return once a parked save is committed, or raise its error. If the save it was
        parked until failed, or does not come within `timeout` seconds, it is applied as
        it is and committed by itself."""
        woken = save.woken
        assert woken is not None, "a save parked by `park`"
        with woken:  # the thread's lock
            if not woken.wait_for(lambda: save.done or save.alone, timeout):
                parked = self._parked.get((save.thread_id, until), [])
                if save in parked:  # never came: applied now, as it arrived
                    parked.remove(save)
                    if not parked:
                        del self._parked[save.thread_id, until]
                    self._apply(save)
        return self.commit(save)

    def _apply_parked(self, thread_id: str, key: Hashable, *, alone: bool) -> None:
        """Apply the saves parked until the one of `key`, in the order they came; one that
        raises ends in its error (under the thread's lock). `alone`: that save failed, so
        they commit by themselves."""
        saves = self._parked.pop((thread_id, key), None)
        if not saves:
            return
        for save in saves:
            try:
                self._apply(save)
            except BaseException as error:  # its caller raises it (`commit_parked`)
                self._end([save], error)
            save.alone = alone
            if alone and save.woken is not None:
                save.woken.notify()

    def commit(self, save: Save, *, linger: float = 0.0) -> Save:
        """Commit the save, with every save applied to its thread so far; raise its error
        if it has one. Returns once the save is on record.

        `linger`: seconds to wait first for another save's commit to take this one along
        (one that is sure to follow soon: a step's checkpoint after its tasks' writes).
        """
        thread_id = save.thread_id
        stripe = self._stripe(thread_id)
        if linger:
            with self._ended[stripe]:
                self._ended[stripe].wait_for(lambda: save.done, linger)
        if save.done:  # taken along by another save's commit
            return self._outcome(save)
        with self._committers[stripe]:
            refused = 0  # commits refused because another writer appended first
            while not save.done:
                if refused == RETRIES:
                    self._give_up(thread_id, save)
                    break
                with self._stripes[stripe]:
                    applied = self._applied.pop(thread_id)
                    new = self.store.take_new(applied.thread)
                    self._committing.add(thread_id)
                try:
                    position = self.store.commit(new)
                except ConcurrentUpdateError:
                    refused += 1
                    self._again(applied, None)
                    continue
                except BaseException as error:
                    self._again(applied, error)
                    break
                with self._stripes[stripe]:
                    self._committing.discard(thread_id)
                    self._end(applied.saves)
                    if position is not None:
                        self._positions[thread_id] = position
                        self._positions.move_to_end(thread_id)
                        if len(self._positions) > CACHED_THREADS:
                            self._positions.popitem(last=False)
        return self._outcome(save)

    def _end(self, saves: list[Save], error: BaseException | None = None) -> None:
        """The saves are on record, or (`error`) never will be; under their stripe's lock."""
        for save in saves:
            save.error, save.done = error, True
            if save.woken is not None:
                save.woken.notify()
        if saves:
            self._ended[self._stripe(saves[0].thread_id)].notify_all()

    @staticmethod
    def _outcome(save: Save) -> Save:
        if save.error is not None:
            raise save.error
        return save

    def _again(self, failed: Applied, error: BaseException | None) -> None:
        """A commit failed: with `error`, its saves end in it; without (another writer
        appended first), they are applied again. Either way the saves applied after
        them are applied again, on a fresh read of the thread."""
        thread_id = failed.thread.thread_id
        with self._stripes[self._stripe(thread_id)]:
            self._committing.discard(thread_id)
            if error is not None:
                self._end(failed.saves, error)
            later = self._applied.pop(thread_id, None)
            again = ([] if error is not None else failed.saves) + (later.saves if later else [])
            self._applied[thread_id] = Applied(failed.thread, again)
            self._reapply(thread_id)

    def _give_up(self, thread_id: str, save: Save) -> None:
        """Another writer kept appending first: the saves not committed end in it."""
        with self._stripes[self._stripe(thread_id)]:
            applied = self._applied.pop(thread_id, None)
            self._end(applied.saves if applied else [save], ConcurrentUpdateError(thread_id))
            self._forget(thread_id)

    def _reapply(self, thread_id: str) -> None:
        """Read the thread again and apply on it, in order, the saves not committed yet
        (under the thread's lock). One that now raises ends in its error; so does any
        begun on a thread it could no longer begin."""
        applied = self._applied.pop(thread_id, None)
        self._forget(thread_id)
        saves = applied.saves if applied else []
        while saves:
            thread = self._load(thread_id)
            kept: list[Save] = []
            for save in saves:
                try:
                    thread = thread or save.begin()
                    save.result = save.change(thread, False)
                except BaseException as error:  # the save ends in it
                    self._end([save], error)
                    saves = [s for s in saves if s is not save]
                    break
                kept.append(save)
            else:
                if thread is not None:
                    self._applied[thread_id] = Applied(thread, kept)
                    self._keep(thread_id, thread)
                return

    # -- the threads at hand -------------------------------------------------

    def _current(self, thread_id: str) -> WorkflowThread | None:
        applied = self._applied.get(thread_id)
        if applied is not None:
            return applied.thread
        with self._cache_lock:
            cached = self._cached.get(thread_id)
            if cached is not None:
                self._cached.move_to_end(thread_id)
            return cached

    def _unless_absent(self, thread_id: str) -> WorkflowThread | None:
        """The thread as recorded, unless a fresh read just found it not begun."""
        if self._absent.pop(thread_id, False):  # one call: other stripes drop entries too
            return None
        return self._load(thread_id)

    def _load(self, thread_id: str) -> WorkflowThread | None:
        thread = self.store.thread(thread_id)
        if thread is not None:
            thread.check_engine(LANGGRAPH)
        return thread

    def _keep(self, thread_id: str, thread: WorkflowThread) -> None:
        with self._cache_lock:
            self._cached[thread_id] = thread
            self._cached.move_to_end(thread_id)
            while len(self._cached) > CACHED_THREADS:
                self._cached.popitem(last=False)

    def _forget(self, thread_id: str) -> None:
        with self._cache_lock:
            self._cached.pop(thread_id, None)
