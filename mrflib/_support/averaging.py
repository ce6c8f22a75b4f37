"""Iterate averaging and the stopping rule of a stochastic gradient ascent (private).

A learner whose ascent direction is a noisy estimate (CD, PCD, SMCI-PCD) never sees a
vanishing gradient: at constant step size ``η`` its iterates ``θ_t`` settle into a cloud
around the fixed point whose width does not shrink. :class:`AveragedRule` turns such an
ascent into one that finishes.

Schedule: constant ``η``, with Polyak-Ruppert iterate averaging over a window of recent
steps (Polyak & Juditsky 1992). The average has the asymptotically optimal covariance
``H^{-1} Σ H^{-1} / W`` over a window of ``W`` steps whatever ``η`` is, so the default step
stays the one a user tuned for speed of approach; a Robbins-Monro decay
``η_t = η_0 / (1 + t / t_0)`` reaches its ``1 / t`` rate only when ``η_0`` exceeds
``1 / (2 λ_min)`` of the Hessian (unknown for a given model; below it the error falls as
``t^{-η_0 λ_min}``), and it shrinks the step before slowly mixing persistent chains have
reached the fixed point. The price of the constant step is a bias of order ``η`` in the
average of a non-quadratic objective (Dieuleveut, Durmus & Bach 2020), below the noise
the rule tolerates at the learners' default step.

Windows: the first spans the steps ``[0, first)``; every next one is ``[s, 2s)`` for the
starts ``s`` of two interleaved doubling sequences, ``first 2^j`` and ``3 first 2^j / 2``
(``first, 3 first / 2, 2 first, 3 first, 4 first, ...``: each start ``4/3`` or ``3/2`` times
the previous one). Every window after the first lies within the later half of the run
that ends with it: the transient from the initial parameters is left out without a
burn-in parameter (in the first window the drift test below catches it). At most two
windows are open at a time. Each window is cut into ``n_batches`` equal batches
(``first`` is a multiple of ``2 n_batches``), and it is checked after each of its batches
from the ``min_batches``-th on; when two windows complete a batch at the same step, only
the younger is checked. With ``min_batches`` half of ``n_batches`` (the default) one
window at a time is checked (a window's last batch ends with its successor's
``min_batches``-th when the successor starts ``4/3`` times as late), so that a check, over
the batches of the later half (to two thirds) of the run, comes at every batch end of
the checked window except in short gaps (the steps ``[first, 3 first / 2)``, and
``[2a, 9a/4)`` for the starts ``a = first 2^j``); a single doubling sequence would leave
half of the run unchecked, and a fit that holds there waits until the next window, twice
as long, is half done.

Stopping rule: after every completed batch of a checked window, with batch means
``m_1..m_k`` of the direction and ``ḡ`` their mean (the averaged
gradient, the mean direction at the window's iterates), the batch-means standard error
of each coordinate ``SE_i = sd_i(m) / sqrt(k)`` and ``s = |SE|_2``:

- the averaged gradient is within its own noise, the root mean square of the
  coordinates' ``|ḡ_i| / SE_i`` at most ``ratio``, or within the tolerance,
  ``max_i |ḡ_i| <= tol`` (the deterministic rule, for an estimator whose noise is far
  below ``tol``, such as SMCI-PCD's: its tiny noise would expose the order-``η`` bias of
  the average long after the average is as close to the fixed point as the data resolve).
  In a stationary window ``E ḡ = E(θ_end - θ_start) / (η W) = 0`` exactly (the iterates
  do not drift), and each ``|ḡ_i| / SE_i`` is then about 1; a drift toward the fixed
  point makes ``ḡ`` larger;
- the average is precise: ``max_i SE_i <= tol`` (no test with ``tol = 0``), so that
  the noise the first test tolerates is itself small. Linearized at the fixed point
  ``θ*``, ``ḡ ≈ -H (θ̄ - θ*)``, so ``θ̄`` is within about ``H^{-1} (ratio s)`` of ``θ*``.

The rule *holds* at a check when both tests pass; the ascent has converged when it holds
at ``patience`` consecutive checks, and at every check from one window into a later one:
a slow mode of the ascent (a flat direction of the objective) drifts too little within a
short window to show in its averaged gradient, and the later window is longer (by
``4/3`` or ``3/2``), ends later, and its checks span a later stretch of the run.
The estimate returned (:meth:`AveragedRule.estimate`)
is the average of the iterates over the checked window's completed batches once they
number ``min_batches``, else the average of the last window completed, else (before any
window has enough batches) the mean of the iterates so far: the estimate of a run
stopped at step ``k`` is the estimate of a run of ``k`` steps.

Memory: five vectors of the parameters' size for each of the two open windows, and the
last completed window's average, whatever the number of steps.
"""

from __future__ import annotations

import numpy as np

__all__ = ["AveragedRule", "default_tol"]


def default_tol(n_rows: int, spread: float) -> float:
    """The default ``tol`` of the rule for data of ``n_rows`` rows whose statistics have a
    standard deviation of at most ``spread`` (1 for ±1 spins and their products, 1/2 for
    the indicators of a factor's states): a twentieth of the largest sampling error
    ``spread / sqrt(n_rows)`` of a data average, so that the averaging's noise adds at
    most a small share to the estimator's own."""
    return spread / (20.0 * float(n_rows) ** 0.5)


class _Window:
    """The steps ``[start, start + length)`` cut into ``n_batches`` batches: the sums of
    the iterates over its completed batches, and of its batch means and their squares."""

    def __init__(self, size: int, start: int, length: int, n_batches: int) -> None:
        self.start, self.length = start, length
        self.batch = length // n_batches
        self.done = 0                          # completed batches
        self.theta_sum = np.zeros(size)        # over completed batches
        self.mean_sum = np.zeros(size)         # Σ m_b
        self.mean_sq = np.zeros(size)          # Σ m_b²
        self.theta_open = np.zeros(size)       # the batch in progress
        self.g_open = np.zeros(size)
        self.in_batch = 0

    def add(self, theta: np.ndarray, g: np.ndarray) -> bool:
        """Take a pair; returns whether it completed a batch."""
        self.theta_open += theta
        self.g_open += g
        self.in_batch += 1
        if self.in_batch < self.batch:
            return False
        mean = self.g_open / self.batch
        self.mean_sum += mean
        self.mean_sq += mean * mean
        self.theta_sum += self.theta_open
        self.theta_open[:] = 0.0
        self.g_open[:] = 0.0
        self.in_batch = 0
        self.done += 1
        return True

    def average(self) -> np.ndarray:
        """The mean of the iterates over the completed batches."""
        return self.theta_sum / (self.done * self.batch)


class AveragedRule:
    """The averaging windows and stopping rule of the module docstring.

    Parameters
    ----------
    size : int
        Number of parameters.
    tol : float
        The largest standard error of the averaged gradient's coordinates at which the
        rule may hold (0: no precision test).
    first : int
        Length of the first window (a multiple of ``2 n_batches``).
    n_batches : int
        Batches per window.
    min_batches : int
        Completed batches a window needs before it is checked or averaged.
    ratio : float
        The multiple of the standard error the averaged gradient's norm may reach.
    patience : int
        Consecutive checks at which the rule must hold.
    """

    def __init__(self, size: int, tol: float, *, first: int = 64, n_batches: int = 16,
                 min_batches: int = 8, ratio: float = 1.5, patience: int = 3) -> None:
        if first % (2 * n_batches) or not 2 <= min_batches <= n_batches:
            raise ValueError("first must be a multiple of 2 n_batches and 2 <= min_batches "
                             "<= n_batches")
        self.size, self.tol, self.first = size, float(tol), first
        self.n_batches, self.min_batches = n_batches, min_batches
        self.ratio, self.patience = float(ratio), patience
        self.steps = 0          # pairs (θ_t, g_t) seen
        self.streak = 0         # consecutive checks at which the rule held
        self.streak_from = 0    # the first step of the window where the streak began
        self.converged = False
        self.last: dict | None = None  # the statistics of the last check
        self.checks: dict[str, list] = {k: [] for k in (
            "step", "window_start", "batches", "z_rms", "max_grad", "grad_norm", "se_norm",
            "max_se", "within_tol", "held")}
        self._previous: np.ndarray | None = None  # the last completed window's average
        self._estimate: np.ndarray | None = None
        self._windows = [_Window(size, 0, first, n_batches)]
        self._next = first      # the start of the next window

    def _following(self, start: int) -> int:
        """The start after ``start``: ``first 2^j`` is followed by ``3 first 2^j / 2``,
        that by ``first 2^(j+1)``."""
        m, r = divmod(start, self.first)
        doubling = r == 0 and m & (m - 1) == 0
        return start * 3 // 2 if doubling else start * 4 // 3

    # ------------------------------------------------------------------ windows
    def add(self, theta: np.ndarray, g: np.ndarray) -> bool:
        """Take the direction ``g`` evaluated at the iterate ``theta``; returns whether the
        ascent has converged (the rule held at ``patience`` consecutive checks)."""
        if self.steps == self._next:
            self._windows.append(_Window(self.size, self._next, self._next,
                                         self.n_batches))
            self._next = self._following(self._next)
        self.steps += 1
        ended = [w for w in self._windows if w.add(theta, g)]
        due = [w for w in ended if w.done >= self.min_batches]
        if due:  # the youngest: a window's last batch can end with its successor's 8th
            self._check(due[-1])
        if not ended:
            if self._previous is None and self._checked() is None:
                self._estimate = None  # the running mean changes every step
            return self.converged
        self._estimate = None
        for w in [w for w in self._windows if w.done == self.n_batches]:
            self._previous = w.average()
            self._windows.remove(w)
        return self.converged

    def _checked(self) -> _Window | None:
        """The youngest open window with ``min_batches`` completed batches."""
        due = [w for w in self._windows if w.done >= self.min_batches]
        return due[-1] if due else None

    def _check(self, w: _Window) -> None:
        k = w.done
        gbar = w.mean_sum / k
        var = np.maximum(w.mean_sq - k * gbar**2, 0.0) / (k - 1)
        se = np.sqrt(var / k)
        moving = (se > 0) | (gbar != 0)  # a coordinate the ascent never moves tells nothing
        with np.errstate(divide="ignore"):
            z = np.abs(gbar[moving]) / se[moving]
        z_rms = float(np.sqrt(np.mean(z**2))) if z.size else 0.0
        max_grad = float(np.max(np.abs(gbar))) if gbar.size else 0.0
        max_se = float(np.max(se)) if se.size else 0.0
        small = self.tol > 0 and max_grad <= self.tol
        held = (z_rms <= self.ratio or small) and (self.tol == 0 or max_se <= self.tol)
        if held and not self.streak:
            self.streak_from = w.start
        self.streak = self.streak + 1 if held else 0
        # a slow mode drifts too little within one window to show in its gradient: the
        # rule must keep holding into a later, longer, window
        self.converged = self.streak >= self.patience and self.streak_from < w.start
        self.last = dict(step=self.steps - 1, window_start=w.start, batches=k,
                         z_rms=z_rms, max_grad=max_grad,
                         grad_norm=float(np.sqrt(np.sum(gbar**2))),
                         se_norm=float(np.sqrt(np.sum(se**2))), max_se=max_se,
                         within_tol=small, held=held)
        for key, value in self.last.items():
            self.checks[key].append(value)

    # ------------------------------------------------------------------ results
    def estimate(self) -> np.ndarray:
        """The parameters a run stopped now returns (see the module docstring)."""
        if self._estimate is None:
            checked = self._checked()
            if checked is not None:
                self._estimate = checked.average()
            elif self._previous is not None:
                self._estimate = self._previous
            else:
                w = self._windows[0]  # the first window: every step so far
                n = w.done * w.batch + w.in_batch
                self._estimate = (w.theta_sum + w.theta_open) / max(n, 1)
        return self._estimate

    def history(self) -> dict[str, np.ndarray]:
        """The statistics of every check, one entry each: the step (its last pair), the
        window's first step, the completed batches, the rms of ``|ḡ_i| / SE_i``,
        ``max |ḡ_i|``, ``|ḡ|_2``, ``s``, ``max SE``, whether ``max |ḡ_i| <= tol`` and
        whether the rule held."""
        return {k: np.asarray(v, dtype=bool if k in ("within_tol", "held") else None)
                for k, v in self.checks.items()}

    def describe(self) -> str:
        """The last check, in words, for a stop reason."""
        if self.last is None:
            first = self.min_batches * self.first // self.n_batches - 1
            return f"no check yet (the first is at step {first})"
        c = self.last
        tol = f" (tol {self.tol:g})" if self.tol else ""
        # the streak may pass the patience while it waits to reach a later window
        if self.converged:
            held = (f"the rule held at the last {self.streak} consecutive checks "
                    f"({self.patience} required, from one window into a later one)")
        elif self.streak >= self.patience:
            held = (f"the rule held at the last {self.streak} consecutive checks, all in "
                    "the window where it began (it must hold into a later one)")
        else:
            held = (f"the rule held at {self.streak} of the {self.patience} consecutive "
                    "checks required")
        return (f"last check at step {c['step']}, over {c['batches']} batches from step "
                f"{c['window_start']}: averaged gradient {c['z_rms']:.3g} standard errors "
                f"(rms; at most {self.ratio:g}), max {c['max_grad']:.3g}; max standard "
                f"error {c['max_se']:.3g}{tol}; {held}")
