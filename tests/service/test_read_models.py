"""The server's read models on SQLite: the projector takes turns with the store's writers."""

import threading
from pathlib import Path

from domain.record.store import open_store
from service.read_models import SQLITE_BATCH, ReadModels


def test_the_projector_writes_between_the_stores_commits_in_short_batches(tmp_path: Path):
    # Given a server's read models on a SQLite store, and a commit in progress
    with open_store(f"sqlite:///{tmp_path / 'r.db'}") as store:
        models = ReadModels(store, projector=True, poll=0.2, wait_timeout=1.0)
        try:
            assert models.runner.batch_size == SQLITE_BATCH
            pool = store.recorder.datastore.pool
            writing = pool.get_connection(is_writer=True)
            done = threading.Event()

            def project() -> None:
                with models.runner.db.transaction():
                    done.set()

            # When the projector starts writing
            projector = threading.Thread(target=project)
            projector.start()
            try:
                # Then it waits for the commit, in this process
                assert not done.wait(0.2)
            finally:
                pool.put_connection(writing)
            # And writes as soon as the commit is done
            projector.join(timeout=5)
            assert done.is_set()
        finally:
            models.stop()
