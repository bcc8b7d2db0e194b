"""`holdpoint projector`, slowed down, for tests that kill it in the middle of a batch.

    python -m tests.projections.small_batch_projector BATCH_SIZE PAUSE [projector options]

The command has no batch-size option, and on a test's history its default
batch (1,000 positions) makes a catch-up one or two quick transactions, done
before a test can kill it between them. This runs the same command
(`api.cli.main.main`) with every runner applying BATCH_SIZE positions per
transaction, and pausing PAUSE seconds per event inside the transaction that
writes a batch's rows and positions: on PostgreSQL, after each projection
applies the batch; on SQLite, where the rows are worked out in a read
transaction and then written in a write transaction (`StagedCursor`), also
after they are written, before the commit. So a kill most likely lands in an
open write transaction.
"""

from __future__ import annotations

import functools
import sys
import time
from typing import Any

from api.cli import main as cli
from projections import catalog
from projections.database import StagedCursor
from projections.projection import Projection
from projections.runner import ProjectionRunner


def slowed(projection: Projection, pause: float) -> Projection:
    apply_batch = projection.apply_batch

    def apply_then_pause(events: Any, cursor: Any, db: Any) -> None:
        apply_batch(events, cursor, db)
        time.sleep(pause * len(events))

    projection.apply_batch = apply_then_pause  # type: ignore[method-assign]
    return projection


def slowed_replay(pause: float, batch_size: int) -> None:
    replay = StagedCursor.replay

    def replay_then_pause(self: StagedCursor, cursor: Any) -> None:
        replay(self, cursor)
        time.sleep(pause * batch_size)

    StagedCursor.replay = replay_then_pause  # type: ignore[method-assign]


def main(argv: list[str]) -> int:
    batch_size, pause, options = int(argv[0]), float(argv[1]), argv[2:]
    slowed_replay(pause, batch_size)
    every_projection = catalog.all_projections
    catalog.all_projections = lambda: [slowed(p, pause) for p in every_projection()]
    catalog.ProjectionRunner = functools.partial(  # type: ignore[misc]
        ProjectionRunner, batch_size=batch_size
    )
    return cli.main(["projector", *options])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
