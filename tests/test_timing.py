"""Timing verdicts that the machine's load does not flip (mrflib.repro.timing)."""

from __future__ import annotations

import pytest

from mrflib.repro import timing


def test_compare_calls_a_difference_only_beyond_the_margin():
    assert timing.compare(1.0, 2.0) == "faster" and timing.compare(2.0, 1.0) == "slower"
    assert timing.compare(1.0, 1.2) == "tie" and timing.compare(1.2, 1.0) == "tie"
    assert timing.compare(1.0, 1.2, margin=0.1) == "faster"
    assert timing.compare([1.0, 9.0, 1.1], [2.0, 2.1, 0.1]) == "faster"  # medians 1.1, 2.0


def test_load_that_slows_both_methods_alike_leaves_the_verdict():
    for load in (1.0, 1.7, 3.0):
        assert timing.compare(0.5 * load, 1.0 * load) == "faster"
        assert timing.compare(0.9 * load, 1.0 * load) == "tie"


def test_median_seconds_times_repeats_in_this_process():
    calls = []
    assert timing.median_seconds(lambda: calls.append(1), repeats=5) >= 0
    assert len(calls) == 5


@pytest.mark.parametrize("args, match", [((0.0, 1.0), "a must be positive"),
                                         ((1.0, float("nan")), "b must be positive"),
                                         ((1.0, 1.0, -0.1), "margin")])
def test_bad_times_are_refused(args, match):
    with pytest.raises(ValueError, match=match):
        timing.compare(*args)


def test_bad_arguments_of_median_seconds():
    with pytest.raises(TypeError, match="fn must be callable"):
        timing.median_seconds(1.0)
    with pytest.raises(ValueError, match="repeats"):
        timing.median_seconds(lambda: None, repeats=0)


def test_best_seconds_is_the_shortest_call_and_returns_the_result():
    calls = []
    t, out = timing.best_seconds(lambda: calls.append(1) or len(calls), repeats=4)
    assert t >= 0 and out == 4 and len(calls) == 4
    with pytest.raises(TypeError, match="fn must be callable"):
        timing.best_seconds(1.0)
    with pytest.raises(ValueError, match="repeats"):
        timing.best_seconds(lambda: None, repeats=0)


def test_cpu_time_is_the_processor_time_of_this_process_not_the_time_waited():
    """A call that sleeps takes wall time but almost no CPU time: a job that shares the cores
    (as a sleeping call stands for here) does not add to a time read from the CPU clock."""
    import time

    t, out = timing.cpu_seconds(lambda: time.sleep(0.2) or "done")
    assert out == "done" and 0 <= t < 0.1
    assert timing.median_seconds(lambda: time.sleep(0.05), repeats=1, clock="wall") >= 0.05
    assert timing.median_seconds(lambda: time.sleep(0.05), repeats=1, clock="cpu") < 0.04
    best, _ = timing.best_seconds(lambda: time.sleep(0.05), repeats=1, clock="cpu")
    assert best < 0.04
    with pytest.raises(ValueError, match="clock must be one of"):
        timing.median_seconds(lambda: None, clock="gpu")
    with pytest.raises(TypeError, match="fn must be callable"):
        timing.cpu_seconds(1.0)
