"""What bounds a fit and who hears of it: the time limit and the progress lines of
:func:`mrflib.learning.learners.fit`, the same for every learner.

A fit's clock starts when :func:`fit <mrflib.learning.learners.fit>` is called
(:class:`mrflib._support.optimizers.Deadline`); its step loop polls it and reports through
:mod:`mrflib._support.progress`. Where the lines go (:func:`fit_reporting`):

- inside a caller's ``with progress.reporting(say, every)``: to ``say``, whatever
  ``progress`` is (the caller asked for them);
- else with ``progress=None`` (the default) and stderr not a terminal (a log file, a
  batch job): to stderr, at most one line every :data:`LOG_EVERY` seconds, the first after
  that long, so a fit shorter than that prints nothing; on a terminal the tqdm bar shows
  instead, and in a Jupyter kernel nothing (a notebook's stderr is part of the page it
  renders: ask for the bar with ``progress=True``);
- else (``progress=True``: the bar; ``progress=False``: silence) nowhere.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from mrflib._support import progress as _progress
from mrflib._support.optimizers import Deadline, step_ticker
from mrflib._support.validation import check_positive

__all__ = ["LOG_EVERY", "SCHEDULES", "averaged_verdict", "check_schedule", "check_time_limit",
           "deadline", "fit_reporting", "gradient_verdict", "run_in_batches"]

#: The step-size schedules of the learners that draw: ``"constant"`` (a constant step,
#: the last iterate, no stopping rule) and ``"averaged"`` (a constant step, iterate
#: averaging and the stopping rule of :mod:`mrflib._support.averaging`).
SCHEDULES = ("constant", "averaged")

#: Seconds between the progress lines a fit logs to a stderr that is not a terminal.
LOG_EVERY = 5.0


def check_time_limit(time_limit: Any) -> float | None:
    """``time_limit`` as seconds (``None``: no limit); 0 allows one step."""
    if time_limit is None:
        return None
    return float(check_positive(time_limit, "time_limit", allow_zero=True))


def deadline(time_limit: Any) -> Deadline:
    """The validated ``time_limit`` as a :class:`~mrflib._support.optimizers.Deadline`
    starting now."""
    return Deadline(check_time_limit(time_limit))


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def fit_reporting(progress: Any) -> Iterator[None]:
    """Route a fit's progress lines by the rule of the module docstring."""
    if (progress is None and not _progress.active() and not _stderr_is_terminal()
            and not _in_kernel()):
        with _progress.reporting(_to_stderr, every=LOG_EVERY):
            yield
    else:
        yield


def _in_kernel() -> bool:
    """Whether this process is a running Jupyter (IPython) kernel."""
    app = sys.modules.get("ipykernel.kernelapp")
    return app is not None and bool(app.IPKernelApp.initialized())


def _stderr_is_terminal() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def gradient_verdict(converged: bool, steps: int, max_steps: int, tol: float,
                     deadline: Deadline, *, stochastic: bool) -> tuple[bool, str]:
    """``(converged, stop_reason)`` of a gradient-ascent fit, for both model families.

    A learner that draws (CD, PCD, SMCI-PCD) never claims convergence: its direction is a
    noisy estimate, and one that falls below ``tol`` proves nothing. With its default
    ``tol = 0`` the test ``max |Delta| < tol`` cannot hold, so it has no stopping rule at
    all and runs until ``max_steps`` or its time limit; the reason says so.
    """
    if converged and not stochastic:
        return True, f"converged: max |gradient| < tol {tol:g}"
    if converged:
        return False, (f"stopped: the stochastic gradient estimate fell below tol {tol:g} "
                       f"after {steps} steps; a noisy estimate proves no convergence")
    reason = deadline.reason(steps) if deadline.hit else f"max_steps = {max_steps} reached"
    if stochastic and tol == 0:
        reason += (" (a stochastic fit has no stopping rule: with tol = 0, max |gradient| "
                   "< tol never holds, so it never reports convergence)")
    return False, reason


def check_schedule(schedule: Any) -> str:
    """``schedule`` validated: one of :data:`SCHEDULES`."""
    if not isinstance(schedule, str) or schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    return schedule


def averaged_verdict(rule: Any, steps: int, max_steps: int,
                     deadline: Deadline) -> tuple[bool, str]:
    """``(converged, stop_reason)`` of a fit under the averaged schedule
    (:class:`mrflib._support.averaging.AveragedRule`): converged when its rule held, else
    which limit ended the fit first, with the rule's last check either way."""
    if rule.converged:
        how = ("within its noise" if rule.last["z_rms"] <= rule.ratio else
               "within tol, its noise being far smaller,")
        return True, (f"converged: the averaged gradient was {how} at "
                      f"{rule.patience} consecutive checks ({rule.describe()})")
    limit = deadline.reason(steps) if deadline.hit else f"max_steps = {max_steps} reached"
    return False, f"{limit} before the stopping rule held ({rule.describe()})"


def run_in_batches(n_items: int, fit_batch: Callable[[int, int], Any],
                   deadline: Deadline | None, what: str) -> tuple[list, int]:
    """Run the local fits ``0..n_items-1`` as ``fit_batch(start, stop)`` over batches of
    consecutive ones, polling ``deadline`` and reporting progress between batches.

    The first batch is one fit (a time limit of 0 fits one); each next one doubles, but is
    expected to take at most a quarter of the time left (a batch runs in one kernel call
    and cannot be interrupted) and about a second when only progress is reported. Returns
    the batches' results and the number of fits done (all, unless the deadline passed,
    which is then marked ``hit``).
    """
    results, done, size = [], 0, 1
    tick = step_ticker(what, n_items, deadline)
    while done < n_items:
        if done and deadline is not None and deadline.expired():
            deadline.hit = True
            break
        start = time.monotonic()
        stop = min(n_items, done + size)
        results.append(fit_batch(done, stop))
        size = _next_batch(stop - done, time.monotonic() - start, deadline)
        done = stop
        if tick is not None:
            tick(done)
    return results, done


def _next_batch(size: int, seconds: float, deadline: Deadline | None) -> int:
    per_fit = max(seconds / size, 1e-7)
    budget = 1.0
    if deadline is not None and deadline.seconds is not None:
        left = deadline.seconds - (deadline.clock() - deadline.start)
        budget = min(budget, max(0.0, left) / 4)
    return max(1, min(2 * size, int(budget / per_fit)))
