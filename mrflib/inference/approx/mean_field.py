"""Naive mean field on any discrete factor graph: marginals and a certified lower bound on log Z.

For any product distribution ``q(x) = Π_i q_i(x_i)``, Gibbs' inequality gives

.. math::

    \\log Z \\;\\ge\\; F(q) = \\sum_k E_q[\\log ψ_k(x_{S_k})] + \\sum_i H(q_i)

(the variational lower bound; Wainwright and Jordan, "Graphical models, exponential
families, and variational inference", section 5.1). Coordinate ascent sets, variable by
variable in the order ``0..n-1``, ``q_i(x_i) ∝ exp Σ_{k ∋ i} E_{q_{-i}}[\\log ψ_k]``, the
exact maximizer of ``F`` in ``q_i``: ``F`` never decreases, and every value it reports is a
lower bound whether or not the iteration converged.

Zeros. ``F(q) = -inf`` as soon as ``q`` gives mass to a state of zero weight. A coordinate
step never leaves a ``q`` of finite ``F`` (the maximizer's support keeps ``F`` finite), so
the run starts from points of finite ``F`` where it can find one: the uniform ``q`` (finite
when the model has no zeros), and a point mass on a state of positive weight, found by
:func:`mrflib.inference.approx.map_search.feasible_state` (a search with arc consistency on the
zeros) within the call's time limit (it does one chunk of search when the limit is spent
and the bound is still ``-inf``). When none is found the bound is ``-inf``: a valid bound,
but one a better start may improve (deciding whether a model has a state of positive
weight is NP-hard in general). When ``Z = 0`` the bound is ``-inf`` exactly. Evidence is
exact: observed variables are sliced out, as in :mod:`mrflib.inference.approx.lbp`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from mrflib._support.validation import check_positive, require_memory
from mrflib.inference._factor_ops import expand
from mrflib.inference._packed import Packed
from mrflib.inference.approx import _mean_field_kernels as _k
from mrflib.inference.approx.lbp import Prepared, deadline
from mrflib.inference.approx.map_search import feasible_state
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph

__all__ = ["MeanFieldResult", "mean_field", "mean_field_numpy"]


@dataclass(frozen=True)
class MeanFieldResult:
    """The answer of :func:`mean_field`.

    Attributes
    ----------
    marginals : list of ndarray
        ``q_i`` for every variable, ``(|X_i|,)`` (an observed variable a point mass).
    lower_bound : float
        ``F(q) <= log Z`` at the returned ``q`` (``-inf`` when no start of finite ``F``
        was found).
    converged : bool
        Whether the last sweep changed no probability by more than ``tol``.
    iterations : int
        Sweeps done, over all starts.
    start : str
        The start whose run gave the returned ``q``: ``"uniform"``, ``"feasible"`` or
        ``"init"``.
    """

    marginals: list
    lower_bound: float
    converged: bool
    iterations: int
    start: str


class _Runner:
    """Coordinate ascent on a prepared model, by the kernels or by the numpy reference."""

    def __init__(self, prep: Prepared, numpy: bool) -> None:
        self.prep, self.numpy = prep, numpy
        p = prep.packed
        self.efac = np.repeat(np.arange(len(p.sizes), dtype=np.int64), np.diff(p.fptr))
        self.score = np.zeros(int(p.card.max()))

    def sweep(self, q: np.ndarray) -> float:
        p = self.prep.packed
        if self.numpy:
            return _sweep_numpy(self.prep, q)
        return _k.sweep(p.tables, p.offsets, p.sizes, p.fptr, p.fvars, self.efac, p.vptr,
                        p.vedge, p.card, self.prep.voff, q, self.score)

    def bound(self, q: np.ndarray) -> float:
        p = self.prep.packed
        if self.numpy:
            value = _bound_numpy(self.prep, q)
        else:
            value = _k.bound(p.tables, p.offsets, p.sizes, p.fptr, p.fvars, p.card,
                             self.prep.voff, q)
        return self.prep.red.const + value

    def run(self, q: np.ndarray, max_iter: int, tol: float, stop: float
            ) -> tuple[float, bool, int]:
        change, it = math.inf, 0
        while it < max_iter:
            change = self.sweep(q)
            it += 1
            if change <= tol or time.perf_counter() >= stop:
                break
        return self.bound(q), bool(change <= tol), it


def _point_mass(prep: Prepared, x: np.ndarray) -> np.ndarray:
    q = np.zeros(int(prep.card.sum()))
    q[prep.voff[:-1] + x] = 1.0
    return q


def _feasible_state(prep: Prepared, stop: float) -> np.ndarray | None:
    """A state of positive weight in the prepared model's states (an observed variable's
    one state is 0), or ``None`` when the search proves there is none or has not ended
    by the :func:`time.perf_counter` time ``stop``. On a model without zeros it is the
    greedy assignment of each variable in turn to its best state given the earlier ones."""
    left = None if stop == math.inf else max(stop - time.perf_counter(), 0.0)
    try:
        x = feasible_state(prep.model, deadline=left)
    except TimeoutError:
        return None
    return None if x is None else np.where(prep.card == 1, 0, x)


def _starts(prep: Prepared, init: Any, stop: float) -> list[tuple[str, Any]]:
    """The starting points, in the order they are tried (built lazily)."""
    if init is not None:
        return [("init", lambda: _check_init(prep, init))]
    uniform = np.concatenate([np.full(int(c), 1.0 / int(c)) for c in prep.card])

    def feasible() -> np.ndarray | None:
        x = _feasible_state(prep, stop)
        return None if x is None else _point_mass(prep, x)

    return [("uniform", lambda: uniform), ("feasible", feasible)]


def _check_init(prep: Prepared, init: Any) -> np.ndarray:
    card = prep.model.cardinalities
    if not isinstance(init, (list, tuple)) or len(init) != len(card):
        raise ValueError(f"init must be a list of {len(card)} probability vectors (one per "
                         "variable, as marginals returns)")
    out = []
    for i, (qi, c) in enumerate(zip(init, card.tolist())):
        qi = np.asarray(qi, dtype=np.float64)
        if qi.shape != (c,) or not np.all(np.isfinite(qi)) or np.any(qi < 0) or qi.sum() <= 0:
            raise ValueError(f"init[{i}] must be {c} non-negative finite numbers with a "
                             f"positive sum, got {qi!r}")
        out.append(qi / qi.sum() if i not in prep.observed else np.ones(1))
    return np.concatenate(out)


def _solve(model: FactorGraph | BoltzmannMachine, max_iter: Any, tol: Any, time_limit: Any,
           init: Any, numpy: bool) -> MeanFieldResult:
    max_iter = check_positive(max_iter, "max_iter", integer=True)
    tol = check_positive(tol, "tol", allow_zero=True)
    stop = deadline(time_limit)
    prep = Prepared(model)
    require_memory(16.0 * int(prep.card.sum()), "the mean-field marginals")
    runner = _Runner(prep, numpy)
    best: tuple | None = None
    total = 0
    for name, make in _starts(prep, init, stop):
        # past the time limit no further start, unless the bound is still -inf (the
        # feasible start is what makes it finite on a model with zeros)
        if best is not None and best[0] > -math.inf and time.perf_counter() >= stop:
            break
        q = make()
        if q is None:
            continue
        value, converged, it = runner.run(q, max_iter, tol, stop)
        total += it
        if best is None or value > best[0]:
            best = (value, converged, q, name)
    assert best is not None  # the first start always exists
    value, converged, q, name = best
    return MeanFieldResult(prep.marginals(q), float(value), converged, total, name)


def mean_field(model: FactorGraph | BoltzmannMachine, *, max_iter: int = 1000, tol: float = 1e-9,
               time_limit: float | None = None, init: list | None = None
               ) -> MeanFieldResult:
    """Naive mean field: the product distribution of largest bound found, and the bound.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        Any discrete factor graph (a Boltzmann machine is converted: state 0 is spin -1);
        zeros and evidence are exact (see the module notes).
    max_iter : int, default 1000
        Largest number of sweeps per start.
    tol : float, default 1e-09
        A run stops when no probability changed by more than this in a sweep.
    time_limit : float or None, default None
        Seconds; a run stops after the sweep that passes it, and no further start begins
        once a start has given a finite bound.
    init : list of arrays or None, default None
        A starting point (one probability vector per variable); default: the uniform
        point, then a point mass on a state of positive weight, the better bound kept.

    Returns
    -------
    MeanFieldResult
        ``lower_bound <= log Z`` always (up to rounding); ``-inf`` when no start of finite
        bound was found.
    """
    return _solve(model, max_iter, tol, time_limit, init, False)


# --------------------------------------------------------------------------- numpy reference
def _table(p: Packed, k: int) -> np.ndarray:
    shape = tuple(int(p.card[v]) for v in p.fvars[p.fptr[k]:p.fptr[k + 1]])
    return p.tables[p.offsets[k]:p.offsets[k] + p.sizes[k]].reshape(shape)


def _weighted(p: Packed, voff: np.ndarray, q: np.ndarray, k: int, skip: int) -> np.ndarray:
    """``Π_{b ≠ skip} q_b`` over factor ``k``'s table axes."""
    scope = p.fvars[p.fptr[k]:p.fptr[k + 1]].tolist()
    axes = list(range(len(scope)))
    w = np.ones(_table(p, k).shape)
    for b, v in enumerate(scope):
        if b != skip:
            w = w * expand(q[voff[v]:voff[v + 1]], (b,), axes)
    return w


def _expect(t: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.where(w > 0, w * np.where(w > 0, t, 0.0), 0.0)


def _sweep_numpy(prep: Prepared, q: np.ndarray) -> float:
    p, voff = prep.packed, prep.voff
    change = 0.0
    for i in range(len(p.card)):
        c = int(p.card[i])
        if c == 1:
            continue
        score = np.zeros(c)
        for e in p.vedge[p.vptr[i]:p.vptr[i + 1]]:
            k = int(np.searchsorted(p.fptr, e, side="right") - 1)
            a = int(e - p.fptr[k])
            w = _weighted(p, voff, q, k, a)
            other = tuple(b for b in range(w.ndim) if b != a)
            score += np.sum(_expect(_table(p, k), w), axis=other)
        if np.max(score) == -np.inf:
            continue
        new = np.exp(score - np.max(score))
        new /= new.sum()
        change = max(change, float(np.max(np.abs(new - q[voff[i]:voff[i + 1]]))))
        q[voff[i]:voff[i + 1]] = new
    return change


def _bound_numpy(prep: Prepared, q: np.ndarray) -> float:
    p = prep.packed
    total = sum(float(np.sum(_expect(_table(p, k), _weighted(p, prep.voff, q, k, -1))))
                for k in range(len(p.sizes)))
    pos = q[q > 0]
    return total - float(np.sum(pos * np.log(pos)))


def mean_field_numpy(model: FactorGraph | BoltzmannMachine, *, max_iter: int = 1000,
                     tol: float = 1e-9, time_limit: float | None = None, init: list | None = None
                     ) -> MeanFieldResult:
    """Plain numpy reference of :func:`mean_field` (the same starts, sweeps and bound).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        As in :func:`mean_field`.
    max_iter : int, default 1000
        As in :func:`mean_field`.
    tol : float, default 1e-09
        As in :func:`mean_field`.
    time_limit : float or None, default None
        As in :func:`mean_field`.
    init : list of arrays or None, default None
        As in :func:`mean_field`.

    Returns
    -------
    MeanFieldResult
        What :func:`mean_field` returns, up to rounding.
    """
    return _solve(model, max_iter, tol, time_limit, init, True)
