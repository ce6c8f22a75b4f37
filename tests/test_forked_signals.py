"""A signal under ``ending_on_signals`` ends the section even when its exception was raised
inside a finalizer, which Python prints and drops (numba's ``__del__`` while it compiles):
the signal is raised again at the next wait on children, or when the section ends."""

from __future__ import annotations

import signal
import time

import pytest

from mrflib._support import forked


def _dropped(signum: int) -> None:
    """The handler's exception, dropped as a finalizer drops it."""
    try:
        forked._on_signal(signum, None)
    except BaseException:  # noqa: BLE001 - what a finalizer does with it
        pass


@pytest.mark.parametrize(("signum", "kind"), [(signal.SIGINT, KeyboardInterrupt),
                                              (signal.SIGTERM, forked.Terminated)])
def test_a_dropped_signal_is_raised_at_the_next_wait(signum, kind):
    with pytest.raises(kind), forked.ending_on_signals():
        _dropped(signum)
        forked.first_done([], time.perf_counter() + 0.01)
        pytest.fail("the wait went on after the signal")


def test_a_dropped_signal_is_raised_when_the_section_ends():
    with pytest.raises(KeyboardInterrupt), forked.ending_on_signals():
        _dropped(signal.SIGINT)


def test_a_signal_on_its_way_out_is_raised_once():
    """Cleanup that waits on children while the signal's exception propagates does not
    raise it a second time, and the next section starts afresh."""
    with pytest.raises(KeyboardInterrupt) as got, forked.ending_on_signals():
        try:
            forked._on_signal(signal.SIGINT, None)
        finally:
            forked.first_done([], time.perf_counter() + 0.01)
    assert got.value.__context__ is None
    with forked.ending_on_signals():
        forked.first_done([], time.perf_counter() + 0.01)


def _nested(depth: int) -> int:
    """``depth`` Forked children, each started by the one before."""
    if depth == 0:
        return 0
    child = forked.Forked(_nested, (depth - 1,))
    try:
        kind, value = child.result(wait=60.0)
    finally:
        child.stop()
    assert kind == "ok", value
    return value + 1


def test_a_forked_child_may_fork_its_own():
    """A child of :class:`~mrflib._support.forked.Forked` starts children of its own (the
    race of model counters runs in the solver's child): multiprocessing's refusal of
    children to a daemonic process does not apply."""
    assert _nested(3) == 3
