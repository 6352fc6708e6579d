"""Phase timings of a run: each phase counted from the end of the one before."""

import io
import time

import pytest

from dask_ssl.workflow.progress import Progress


def test_work_between_phases_lands_in_the_next_phase_so_phases_add_up():
    progress = Progress(io.StringIO())
    began = time.perf_counter()
    with progress.phase("read"):
        time.sleep(0.05)
    time.sleep(0.2)  # set-up between phases, outside any ``with``
    with progress.phase("fit"):
        time.sleep(0.05)
    since = progress.start()
    time.sleep(0.1)
    progress.finish("write", since)
    elapsed = time.perf_counter() - began
    assert list(progress.timings) == ["read", "fit", "write"]
    assert progress.timings["fit"] >= 0.25
    assert sum(progress.timings.values()) == pytest.approx(elapsed, abs=0.01)
    assert set(progress.cpu_timings) == set(progress.timings)
    assert all(v >= 0 for v in progress.cpu_timings.values())


def test_a_recorded_phase_starts_the_clock_of_the_next():
    progress = Progress(None)
    progress.record("imports", 1.5, 1.0)
    time.sleep(0.1)
    with progress.phase("cluster"):
        pass
    assert progress.timings["imports"] == 1.5 and progress.cpu_timings["imports"] == 1.0
    assert progress.timings["cluster"] >= 0.1


def test_a_repeated_phase_accumulates():
    progress = Progress(None)
    for _ in range(2):
        with progress.phase("scores"):
            time.sleep(0.02)
    assert list(progress.timings) == ["scores"] and progress.timings["scores"] >= 0.04
