"""Timing claims decided by a measurement that the machine's load does not flip.

A chapter that checks a paper's claim about speed ("FL learns faster than BM-DI", "MPF is
the fastest") times the methods it compares **in one process, one after the other**, takes
the **median of repeats** of each, and calls a difference only beyond a **margin**: a pair
of medians within ``margin`` of each other is a tie, which neither confirms nor refutes a
claim that one is faster. A timing shared with other load then shifts both methods alike,
and a verdict changes only when a method's speed really changes by more than the margin.

A verdict is decided on **CPU time** (:func:`cpu_seconds`, ``clock="cpu"``): the processor
time this process spent, which another job on the shared cores does not add to, where wall
time grows with every job that runs beside it; the papers, too, give CPU seconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mrflib._support.validation import check_positive

__all__ = ["MARGIN", "CLOCKS", "cpu_seconds", "median_seconds", "best_seconds", "compare"]

#: Default margin: medians within 25% of each other are a tie.
MARGIN = 0.25


#: The clocks a time is read from: ``"wall"`` (elapsed, :func:`time.perf_counter`) and
#: ``"cpu"`` (processor time of this process, all its threads, :func:`time.process_time`).
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def _clock(clock: str) -> Callable[[], float]:
    if not isinstance(clock, str) or clock not in CLOCKS:
        raise ValueError(f"clock must be one of {sorted(CLOCKS)}, got {clock!r}")
    return CLOCKS[clock]


def _callable(fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")


def cpu_seconds(fn: Callable[[], Any]) -> tuple[float, Any]:
    """The CPU time of one call of ``fn()`` and its result.

    Parameters
    ----------
    fn : callable
        Called once, without arguments.

    Returns
    -------
    tuple
        The processor time (s) this process, all its threads, spent in the call, and what
        the call returned.
    """
    _callable(fn)
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def median_seconds(fn: Callable[[], Any], repeats: int = 3, clock: str = "wall") -> float:
    """The median time of ``repeats`` calls of ``fn()`` in this process (seconds), read
    from ``clock`` (:data:`CLOCKS`)."""
    _callable(fn)
    repeats = check_positive(repeats, "repeats", integer=True)
    now = _clock(clock)
    times = []
    for _ in range(repeats):
        t0 = now()
        fn()
        times.append(now() - t0)
    return float(np.median(times))


def best_seconds(fn: Callable[[], Any], repeats: int = 3,
                 clock: str = "wall") -> tuple[float, Any]:
    """The shortest time of ``repeats`` calls of ``fn()`` (seconds, read from ``clock``) and
    the last call's result: the benchmarks' measure of a method alone, where a median decides
    a claim between two (:func:`median_seconds`, :func:`compare`)."""
    _callable(fn)
    repeats = check_positive(repeats, "repeats", integer=True)
    now = _clock(clock)
    best, out = math.inf, None
    for _ in range(repeats):
        t0 = now()
        out = fn()
        best = min(best, now() - t0)
    return best, out


def compare(a: float | Sequence[float], b: float | Sequence[float],
            margin: float = MARGIN) -> str:
    """``"faster"`` if ``a`` takes less than ``b / (1 + margin)``, ``"slower"`` if more than
    ``b * (1 + margin)``, else ``"tie"``; sequences are reduced to their medians.

    Raises
    ------
    ValueError
        A time that is not positive and finite, or a negative margin.
    """
    margin = check_positive(margin, "margin", allow_zero=True)
    values = []
    for name, x in (("a", a), ("b", b)):
        v = float(np.median(np.asarray(x, dtype=float)))
        if not np.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be positive, finite seconds, got {x!r}")
        values.append(v)
    ta, tb = values
    if ta * (1 + margin) < tb:
        return "faster"
    if ta > tb * (1 + margin):
        return "slower"
    return "tie"
