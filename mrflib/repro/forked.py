"""Run a call in a forked child with a wall-clock limit and a memory budget (benchmarks).

A benchmark that times a peer library, or our engine on a problem that may run for
minutes, calls :func:`run_limited`: the call runs in a child process (``fork``: it sees the
parent's objects without pickling them), the child's address space is capped at what it
holds at the start plus ``memory`` bytes (``RLIMIT_AS``; the engine's memory check sees the
cap, so it refuses what would not fit under it), and the child is killed when ``seconds``
pass. The parent gets an :class:`Outcome`: the best time and the value, or
why there is none (the time limit, memory, an exception, or the child's death).
"""

from __future__ import annotations

import gc
import math
import multiprocessing
import resource
from collections.abc import Callable
from typing import Any, NamedTuple

from mrflib._support.validation import check_positive

from .factor_graph_experiments import timed

__all__ = ["Outcome", "run_limited"]

#: Most timed calls :func:`run_limited` makes (its time limit grows with them).
MAX_REPEATS = 1000


class Outcome(NamedTuple):
    """What :func:`run_limited` got: ``seconds`` (best of the timed calls; NaN without a
    value), ``value`` (the last call's return value, or ``None``) and ``status``: ``"ok"``,
    ``"time limit"``, ``"out of memory"``, ``"error: <type>: <message>"`` (an exception in
    the call) or ``"died (exit code <c>)"``."""

    seconds: float
    value: Any
    status: str


def _child(conn, fn, repeats, warmup, memory):  # pragma: no cover - runs in a child process
    if memory is not None:
        with open("/proc/self/statm") as f:  # address space now, in pages, plus the budget
            now = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (now + memory, now + memory))
    try:
        if warmup:
            fn()  # the child's first touches of the parent's pages are copied (fork)
        seconds, value = timed(fn, repeats)
        conn.send(("ok", seconds, value))
    except MemoryError:
        conn.send(("out of memory", math.nan, None))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, by type and message
        text = " ".join(str(exc).split())
        conn.send((f"error: {type(exc).__name__}: {text}", math.nan, None))
    conn.close()


def run_limited(fn: Callable[[], Any], *, seconds: float, repeats: int = 1,
                warmup: bool = True, memory: float | None = None) -> Outcome:
    """``timed(fn, repeats)`` in a forked child, stopped after ``seconds`` per call.

    Parameters
    ----------
    fn : callable
        Called without arguments; its value must pickle (it is sent back through a pipe).
    seconds : float
        Wall-clock limit of one call; the child is killed after ``seconds * (repeats +
        warmup)``.
    repeats : int
        Timed calls, at most :data:`MAX_REPEATS` (the best time is reported).
    warmup : bool
        Call ``fn`` once, untimed, first (the child's first writes to the parent's pages
        copy them, which would otherwise be timed).
    memory : float or None
        Bytes the child may allocate beyond what it holds when it starts (``None``: no cap).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    seconds = check_positive(seconds, "seconds")
    repeats = check_positive(repeats, "repeats", integer=True)
    if repeats > MAX_REPEATS:
        raise ValueError(f"repeats must be at most {MAX_REPEATS}, got {repeats}")
    if memory is not None:
        memory = int(check_positive(memory, "memory"))
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, repeats, bool(warmup), memory))
    gc.freeze()  # the child's collector then leaves the parent's objects (and pages) alone
    proc.start()
    gc.unfreeze()
    send.close()
    try:
        if recv.poll(seconds * (repeats + bool(warmup))):
            status, best, value = recv.recv()
        else:
            status, best, value = "time limit", math.nan, None
    except EOFError:  # the child died without a word
        proc.join(5)
        status, best, value = f"died (exit code {proc.exitcode})", math.nan, None
    proc.kill()
    proc.join()
    recv.close()
    return Outcome(best, value, status)
