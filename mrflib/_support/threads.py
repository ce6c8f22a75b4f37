"""Thread policy: decide threads per operation, not per process.

Two pools can fight inside one process: the BLAS library's (OpenBLAS, MKL) and
numba's. The learners (exact maximum likelihood among them) and the samplers make many
small BLAS calls from inside optimizer loops and next to numba's parallel regions; waking a
BLAS thread pool for each costs more than the call (measured: exact ML on a 4x4
lattice, N = 20,000, 119 ms with OpenBLAS's default threads against 33 ms with one).
The policy, applied with :mod:`threadpoolctl`:

* :func:`single_blas` (and the decorator :func:`blas_single_threaded`) keeps BLAS on
  one thread for the duration of a call; nested uses cost nothing;
* :func:`parallel_ok` gives numba's parallel kernels the cores only when the work is
  large (above :data:`PARALLEL_WORK` elementary operations) and at least two cores are
  idle (:func:`idle_cores`);
* the user's own settings win: when any of ``OMP_NUM_THREADS``,
  ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` (or ``BLIS_NUM_THREADS``,
  ``VECLIB_MAXIMUM_THREADS``) is set, BLAS is left as the user configured it; when
  ``NUMBA_NUM_THREADS`` is set, parallel kernels always run, on that many threads.

Results never depend on the thread count: every parallel kernel of mrflib writes
disjoint slots and reduces them in a fixed order.
"""

from __future__ import annotations

import functools
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = [
    "BLAS_ENV",
    "NUMBA_ENV",
    "PARALLEL_WORK",
    "blas_single_threaded",
    "idle_cores",
    "own_load",
    "parallel_ok",
    "reserve_cores",
    "serial_only",
    "single_blas",
    "user_sets_blas",
    "user_sets_numba",
]

#: Environment variables through which a user sets the BLAS / OpenMP thread count.
BLAS_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
            "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
#: Environment variable through which a user sets numba's thread count.
NUMBA_ENV = "NUMBA_NUM_THREADS"
#: Elementary operations per call above which a numba kernel runs in parallel.
PARALLEL_WORK = 1 << 21
#: Load of other processes below which a core still counts as idle (daemons, the shell).
IDLE_SLACK = 0.5
#: Time constant of the one-minute load average (seconds): Linux decays it as exp(-t / 60).
LOAD_WINDOW = 60.0

_F = TypeVar("_F", bound=Callable[..., Any])
_state = threading.local()
_controller = None
_controller_lock = threading.Lock()


def user_sets_blas() -> bool:
    """Whether the user chose the BLAS thread count through the environment."""
    return any(os.environ.get(v) for v in BLAS_ENV)


def user_sets_numba() -> bool:
    """Whether the user chose numba's thread count through the environment."""
    return bool(os.environ.get(NUMBA_ENV))


def _blas_controller():
    """One :class:`threadpoolctl.ThreadpoolController` per process (building one scans
    the loaded libraries, which costs milliseconds; limiting through it costs
    microseconds)."""
    global _controller
    with _controller_lock:
        if _controller is None:
            # the controller limits only the libraries loaded when it is built: scipy's
            # own OpenBLAS (L-BFGS-B's BLAS) loads with scipy.linalg, so load it first
            import scipy.linalg  # noqa: F401
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
        return _controller


@contextmanager
def single_blas() -> Iterator[None]:
    """Run the block with BLAS on one thread, unless the user set the BLAS threads.

    Re-entrant: only the outermost use changes (and restores) the BLAS pools.
    """
    depth = getattr(_state, "depth", 0)
    if depth or user_sets_blas():
        _state.depth = depth + 1
        try:
            yield
        finally:
            _state.depth = depth
        return
    _state.depth = 1
    try:
        with _blas_controller().limit(limits=1, user_api="blas"):
            yield
    finally:
        _state.depth = 0


def blas_single_threaded(fn: _F) -> _F:
    """Decorator: run ``fn`` inside :func:`single_blas`."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with single_blas():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


_SERIAL_ONLY = [False]


def serial_only() -> None:
    """Make :func:`parallel_ok` false for the rest of this process: a forked child's. GNU
    OpenMP, numba's threading layer here, kills a forked child with SIGTERM at its first
    parallel region once the parent has run one, so a child of a fork runs serial kernels."""
    _SERIAL_ONLY[0] = True


def parallel_ok(work: float, min_idle: float = 2.0) -> bool:
    """Whether a numba kernel with ``work`` elementary operations should run in parallel.

    ``False`` in a forked child (:func:`serial_only`); else ``True`` when the user set
    ``NUMBA_NUM_THREADS`` above 1 (their choice wins), or when the work is at least
    :data:`PARALLEL_WORK`, numba has more than one thread and at least ``min_idle``
    cores are idle (:func:`idle_cores`). Two by default: a region split statically waits
    for its slowest thread. A kernel that hands its work out in small chunks as threads
    finish (``numba.parallel_chunksize``) loses little to a thread on a shared core and
    may ask for one.
    """
    import numba

    if _SERIAL_ONLY[0]:
        return False
    if user_sets_numba():
        return numba.config.NUMBA_NUM_THREADS > 1
    return (work >= PARALLEL_WORK and numba.get_num_threads() > 1
            and idle_cores() >= min_idle)


_OWN_LOCK = threading.Lock()
_OWN = [time.monotonic(), time.process_time(), 0.0]  # wall, CPU seconds, load estimate


def own_load() -> float:
    """This process's part of the one-minute load average: its CPU seconds per second
    (all threads), averaged as the kernel averages the load (exponentially, time constant
    :data:`LOAD_WINDOW`), since this module was imported."""
    now, cpu = time.monotonic(), time.process_time()
    with _OWN_LOCK:
        wall0, cpu0, avg = _OWN
        dt = now - wall0
        if dt > 0.0:
            decay = math.exp(-dt / LOAD_WINDOW)
            avg = avg * decay + max(cpu - cpu0, 0.0) / dt * (1.0 - decay)
            _OWN[:] = [now, cpu, avg]
        return avg


_RESERVED = [0.0]  # cores taken by children of this process that the load has not caught


def reserve_cores(count: float) -> None:
    """Count ``count`` more cores as busy in :func:`idle_cores` (a negative ``count`` gives
    them back): a child of this process that takes a core from now on (toulbar2 beside the
    ``MPE`` solver) is seen by the one-minute load average only after a minute, and two
    numba threads on the one core left wait on each other (measured: a mini-bucket
    heuristic on a 40x40 grid took 12.5 s instead of its estimated 4.6 s).

    Parameters
    ----------
    count : float
        Cores to add to the reserve (its total never goes below 0).
    """
    _RESERVED[0] = max(0.0, _RESERVED[0] + float(count))


def idle_cores() -> float:
    """Cores not busy with other processes: ``cpu_count - (load - own_load())``, the
    one-minute load average less this process's own part of it (:func:`own_load`), a
    load of others below :data:`IDLE_SLACK` counted as none, less the cores reserved for
    this process's children (:func:`reserve_cores`). A parallel region waits for
    its slowest thread, so on a machine whose cores are taken by others one thread is
    faster (measured on a 2-core machine under load 8: pattern counting 0.46 ms on one
    thread, 24 ms on two). The own part is measured, not assumed: a long fit running
    alone keeps the load at the number of threads it used, which a fixed allowance for
    the caller would read as another process's."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - platforms without getloadavg
        return float(os.cpu_count() or 1)
    others = load - own_load()
    return (float(os.cpu_count() or 1) - (others if others > IDLE_SLACK else 0.0)
            - _RESERVED[0])
