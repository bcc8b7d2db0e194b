"""How many processes check a large log by default: one per CPU, this one included.

A process more than the CPUs only makes them take turns (on 2 CPUs, 2 beat 3
in every A/B measured); more than 4 gain little for the memory they take.
"""

from __future__ import annotations

import pytest

from integrity import verify_log
from integrity.verify_log import default_jobs


@pytest.mark.parametrize(("cpus", "jobs"), [(None, 1), (1, 1), (2, 2), (3, 3), (4, 4), (16, 4)])
def test_the_default_is_one_process_per_cpu_at_most_four(monkeypatch, cpus, jobs):
    # Given a machine with `cpus` CPUs (None: unknown)
    monkeypatch.setattr(verify_log.os, "cpu_count", lambda: cpus)
    # Then
    assert default_jobs() == jobs
