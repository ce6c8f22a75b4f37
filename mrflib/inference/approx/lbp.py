"""Loopy belief propagation (sum-product) on any discrete factor graph, and the Bethe ``log Z``.

Messages between factors ``k`` and their variables ``i`` (Yedidia, Freeman and Weiss,
"Constructing free-energy approximations and generalized belief propagation algorithms",
eqs. (9)-(10) of their factor-graph form),

.. math::

    q_{i→k}(x_i) ∝ \\prod_{k' ∋ i,\\, k' ≠ k} r_{k'→i}(x_i), \\qquad
    r_{k→i}(x_i) ∝ \\sum_{x_{S_k \\setminus i}} ψ_k(x_{S_k}) \\prod_{j ∈ S_k \\setminus i}
    q_{j→k}(x_j),

are kept as normalized natural-log vectors (``-inf`` an exact zero), updated factor by
factor in a fixed order (a sequential schedule: exact after a few sweeps on a tree),
optionally damped geometrically. The beliefs are ``b_i ∝ Π_{k ∋ i} r_{k→i}`` and
``b_k ∝ ψ_k Π_{i ∈ S_k} q_{i→k}``; the run stops when no variable's belief moved by more
than ``tol`` (in probability) over a sweep, after ``max_iter`` sweeps, or at the time limit.
The Bethe approximation of ``log Z`` is minus the Bethe free energy at the beliefs,

.. math::

    \\log Z_{\\rm Bethe} = \\sum_k \\sum_{x_{S_k}} b_k (\\log ψ_k - \\log b_k)
                        + \\sum_i (d_i - 1) \\sum_{x_i} b_i \\log b_i,

exact on a tree (``d_i`` is the number of factors holding ``i``).

Evidence is exact: an observed variable (a unary factor with one finite entry, as
:meth:`~mrflib.models.factor_graph.FactorGraph.condition` makes, or one state) is sliced out of
every factor before any message is sent, and its marginal is a point mass. Zeros stay
zeros: a message's support only shrinks, as in arc consistency, so a value of positive
probability is never excluded; a variable left with no allowed state proves ``Z = 0``
(``ValueError``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from mrflib._support.validation import check_positive, check_real, format_count, require_memory
from mrflib.inference._factor_ops import expand, logsumexp_numpy
from mrflib.inference._packed import Packed, pack
from mrflib.inference._reduction import Reduced
from mrflib.inference.approx import _lbp_kernels as _k
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph, as_factor_graph

__all__ = ["BPResult", "loopy_bp", "loopy_bp_numpy"]


@dataclass(frozen=True)
class BPResult:
    """The answer of :func:`loopy_bp`.

    Attributes
    ----------
    marginals : list of ndarray
        The beliefs ``b_i``, one ``(|X_i|,)`` probability vector per variable (an observed
        variable a point mass).
    log_partition : float
        The Bethe approximation of ``log Z`` at the final beliefs (exact on a tree).
    converged : bool
        Whether the largest change of a belief over the last sweep was at most ``tol``.
    iterations : int
        Sweeps over the factors done.
    max_change : float
        The largest change of a belief (in probability) over the last sweep.
    factor_beliefs : list of ndarray or None
        With ``factor_beliefs=True``, ``b_k`` shaped like ``model.log_tables[k]``.
    """

    marginals: list
    log_partition: float
    converged: bool
    iterations: int
    max_change: float
    factor_beliefs: list | None = None


class Prepared:
    """A model reduced for message passing: evidence sliced out (an observed variable
    keeps one state), constant factors summed into ``const``, and its flat arrays.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied; refused (``ValueError``) when a constant factor proves
        ``Z = 0``, and when the messages do not fit in memory.

    Attributes
    ----------
    model : FactorGraph
        The model as a factor graph.
    red : Reduced
        The model with the evidence sliced out.
    observed : dict
        ``{variable: state}`` of the observed variables.
    card : numpy.ndarray of int64, shape (n,)
        The cardinalities, 1 for an observed variable.
    packed : Packed
        The reduced factors as flat arrays for the kernels.
    voff : numpy.ndarray of int64, shape (n + 1,)
        Offsets of each variable's beliefs in the flat belief array.
    """

    def __init__(self, model: FactorGraph | BoltzmannMachine) -> None:
        model = as_factor_graph(model)
        red = Reduced(model, barren=False)
        if red.const == -np.inf:
            raise ValueError("model has Z = 0 (a factor without variables, or one sliced "
                             "by the evidence, has zero weight): its marginals are undefined")
        self.model, self.red = model, red
        self.observed = red.observed
        card = np.array(model.cardinalities, dtype=np.int64)
        card[list(self.observed)] = 1
        self.card = card
        size = sum(t.size for t in red.tables)
        slots = sum(int(card[v]) for s in red.scopes for v in s)
        require_memory(8.0 * (size + 5 * slots + 3 * int(card.sum())),
                       f"the messages of {format_count(len(red.scopes))} factors "
                       f"({format_count(size)} table entries)")
        self.packed: Packed = pack(red.scopes, [np.asarray(t) for t in red.tables], card)
        self.voff = np.concatenate([[0], np.cumsum(card)]).astype(np.int64)

    def marginals(self, flat: np.ndarray) -> list[np.ndarray]:
        """Per-variable marginals from the flat beliefs (observed: point masses).

        Parameters
        ----------
        flat : numpy.ndarray of float64
            The beliefs of every variable joined, at the offsets ``voff``.

        Returns
        -------
        list of numpy.ndarray
            One ``(|X_i|,)`` array per variable, divided by its sum: the log-space
            normalization rounds like the log-weights, a relative ``1e-8`` at
            log-weights of ``1e8``.
        """
        full = self.model.cardinalities
        out = [flat[self.voff[i]:self.voff[i + 1]] for i in range(len(full))]
        out = [p / p.sum() for p in out]
        for v, x in self.observed.items():
            out[v] = np.zeros(int(full[v]))
            out[v][x] = 1.0
        return out

    def check_support(self, flat: np.ndarray) -> None:
        """``ValueError`` if some variable's beliefs allow no state (``Z = 0``).

        Parameters
        ----------
        flat : numpy.ndarray of float64
            The beliefs of every variable joined, at the offsets ``voff``.
        """
        sums = np.add.reduceat(flat, self.voff[:-1]) if len(flat) else flat
        bad = np.flatnonzero(~(sums > 0.5))
        if len(bad):
            raise ValueError(f"model has Z = 0: the factors allow no state of variable "
                             f"{int(bad[0])} (its incoming messages exclude every value)")


def check_options(damping: Any, max_iter: Any, tol: Any, time_limit: Any
                  ) -> tuple[float, int, float, float]:
    """Validated options of :func:`loopy_bp`.

    Parameters
    ----------
    damping : float
        In [0, 1).
    max_iter : int
        Positive.
    tol : float
        Non-negative.
    time_limit : float or None
        Non-negative seconds, or ``None``.

    Returns
    -------
    tuple of (float, int, float, float)
        ``(damping, max_iter, tol, deadline)``; ``deadline`` is ``inf`` without a time
        limit, else a :func:`time.perf_counter` value (:func:`deadline`).
    """
    damping = check_real(damping, "damping")
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    max_iter = check_positive(max_iter, "max_iter", integer=True)
    tol = check_positive(tol, "tol", allow_zero=True)
    return damping, max_iter, tol, deadline(time_limit)


def _check_flag(value: Any, name: str) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is a ``bool``."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def deadline(time_limit: Any) -> float:
    """The :func:`time.perf_counter` time at which ``time_limit`` seconds are over.

    Parameters
    ----------
    time_limit : float or None
        Non-negative seconds from now, or ``None``.

    Returns
    -------
    float
        The deadline; ``inf`` when ``time_limit`` is ``None``.
    """
    if time_limit is None:
        return math.inf
    return time.perf_counter() + check_positive(time_limit, "time_limit", allow_zero=True)


def _initial(p: Packed) -> np.ndarray:
    """Uniform normalized log messages."""
    return -np.log(p.card[p.fvars].astype(np.float64)).repeat(p.card[p.fvars])


def _iterate(prep: Prepared, r: np.ndarray, sweep: Any, beliefs: Any, max_iter: int,
             tol: float, stop: float) -> tuple[np.ndarray, bool, int, float]:
    """Sweeps until the beliefs move by at most ``tol``, ``max_iter`` or the deadline (at
    least one sweep)."""
    b = beliefs(r)
    change, it = math.inf, 0
    while it < max_iter:
        sweep(r)
        it += 1
        nb = beliefs(r)
        with np.errstate(invalid="ignore"):
            change = float(np.max(np.abs(nb - b), initial=0.0))
        b = nb
        if change <= tol or time.perf_counter() >= stop:
            break
    return b, bool(change <= tol), it, change


def loopy_bp(model: FactorGraph | BoltzmannMachine, *, damping: float = 0.0, max_iter: int = 1000,
             tol: float = 1e-9, time_limit: float | None = None,
             factor_beliefs: bool = False) -> BPResult:
    """Loopy belief propagation on ``model``: beliefs, the Bethe ``log Z``, convergence.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        Any discrete factor graph (a Boltzmann machine is converted by
        :meth:`~mrflib.models.factor_graph.FactorGraph.from_boltzmann`: state 0 is spin -1);
        zeros (``-inf``) and evidence are exact.
    damping : float in [0, 1), default 0.0
        Each new factor-to-variable message is ``new^(1-damping) old^damping``.
    max_iter : int, default 1000
        Largest number of sweeps over the factors.
    tol : float, default 1e-09
        Converged when no belief changed by more than this (in probability) in a sweep.
    time_limit : float or None, default None
        Seconds; the run stops after the sweep that passes it (at least one sweep).
    factor_beliefs : bool, default False
        Also return ``b_k`` for every factor (its table's size in memory).

    Returns
    -------
    BPResult

    Raises ``ValueError`` for bad options and when the messages prove ``Z = 0``. The numba
    kernels (:mod:`mrflib.inference.approx._lbp_kernels`) follow :func:`loopy_bp_numpy` step for
    step.
    """
    damping, max_iter, tol, stop = check_options(damping, max_iter, tol, time_limit)
    _check_flag(factor_beliefs, "factor_beliefs")
    prep = Prepared(model)
    p = prep.packed
    q, new, sm = (np.zeros(p.n_slots) for _ in range(3))
    flat = np.zeros(int(prep.card.sum()))

    def sweep(r: np.ndarray) -> None:
        _k.sweep(p.tables, p.offsets, p.sizes, p.fptr, p.fvars, p.vptr, p.vedge, p.moff,
                 p.card, r, q, new, sm, damping)

    def beliefs(r: np.ndarray) -> np.ndarray:
        _k.beliefs(p.vptr, p.vedge, p.moff, p.card, prep.voff, r, flat)
        return flat.copy()

    r = _initial(p)
    b, converged, it, change = _iterate(prep, r, sweep, beliefs, max_iter, tol, stop)
    prep.check_support(b)
    logz = prep.red.const + _k.bethe(p.tables, p.offsets, p.sizes, p.fptr, p.fvars, p.vptr,
                                     p.vedge, p.moff, p.card, prep.voff, r, q, b)
    fb = _factor_beliefs(prep, _cavities_numpy(p, r)) if factor_beliefs else None
    return BPResult(prep.marginals(b), float(logz), converged, it, change, fb)


# --------------------------------------------------------------------------- numpy reference
def _slots(p: Packed, m: np.ndarray, e: int) -> np.ndarray:
    c = int(p.card[p.fvars[e]])
    return m[p.moff[e]:p.moff[e] + c]


def _norm(m: np.ndarray) -> np.ndarray:
    top = logsumexp_numpy(m, 0)
    return m - top if np.isfinite(top) else m


def _cavities_numpy(p: Packed, r: np.ndarray) -> np.ndarray:
    q = np.zeros_like(r)
    for i in range(len(p.card)):
        edges = p.vedge[p.vptr[i]:p.vptr[i + 1]]
        for e in edges:
            s = sum((_slots(p, r, e2) for e2 in edges if e2 != e),
                    np.zeros(int(p.card[i])))
            q[p.moff[e]:p.moff[e] + p.card[i]] = _norm(s)
    return q


def _factor_table(p: Packed, k: int) -> tuple[np.ndarray, list[int]]:
    edges = list(range(p.fptr[k], p.fptr[k + 1]))
    shape = tuple(int(p.card[p.fvars[e]]) for e in edges)
    t = p.tables[p.offsets[k]:p.offsets[k] + p.sizes[k]].reshape(shape)
    return t, edges


def _sweep_numpy(p: Packed, r: np.ndarray, damping: float) -> None:
    for k in range(len(p.sizes)):
        t, edges = _factor_table(p, k)
        q = _cavities_numpy(p, r)
        axes = list(range(len(edges)))
        for a, e in enumerate(edges):
            total = t.copy()
            for b, e2 in enumerate(edges):
                if b != a:
                    total = total + expand(_slots(p, q, e2), (b,), axes)
            new = _norm(logsumexp_numpy(total, tuple(x for x in axes if x != a)))
            if damping > 0.0:
                old = _slots(p, r, e)
                with np.errstate(invalid="ignore"):
                    mixed = (1.0 - damping) * new + damping * old
                new = _norm(np.where(np.isinf(new) | np.isinf(old), -np.inf, mixed))
            r[p.moff[e]:p.moff[e] + len(new)] = new


def _beliefs_numpy(prep: Prepared, r: np.ndarray) -> np.ndarray:
    p = prep.packed
    out = []
    for i in range(len(p.card)):
        s = sum((_slots(p, r, e) for e in p.vedge[p.vptr[i]:p.vptr[i + 1]]),
                np.zeros(int(p.card[i])))
        out.append(np.exp(_norm(s)))
    return np.concatenate(out) if out else np.zeros(0)


def _factor_beliefs_reduced(p: Packed, q: np.ndarray) -> list[np.ndarray]:
    """``b_k ∝ exp(θ_k + Σ_i q_{i→k})`` of every packed factor (zeros where ``θ_k`` is)."""
    out = []
    for k in range(len(p.sizes)):
        t, edges = _factor_table(p, k)
        axes = list(range(len(edges)))
        lw = t.copy()
        for a, e in enumerate(edges):
            lw = lw + expand(_slots(p, q, e), (a,), axes)
        top = logsumexp_numpy(lw, tuple(axes))
        out.append(np.exp(lw - top) if np.isfinite(top) else np.zeros_like(lw))
    return out


def _bethe_numpy(prep: Prepared, r: np.ndarray, b: np.ndarray) -> float:
    p = prep.packed
    total = prep.red.const
    for k, bk in enumerate(_factor_beliefs_reduced(p, _cavities_numpy(p, r))):
        t, _ = _factor_table(p, k)
        pos = bk > 0
        if not pos.any():
            return -math.inf
        total += float(np.sum(bk[pos] * (t[pos] - np.log(bk[pos]))))
    for i in range(len(p.card)):
        bi = b[prep.voff[i]:prep.voff[i + 1]]
        d = int(p.vptr[i + 1] - p.vptr[i])
        total += (d - 1) * float(np.sum(bi[bi > 0] * np.log(bi[bi > 0])))
    return total


def _factor_beliefs(prep: Prepared, q: np.ndarray) -> list[np.ndarray]:
    """Factor beliefs shaped like the model's tables (observed axes a point mass)."""
    return prep.red.factor_tables(prep.model,
                                  enumerate(_factor_beliefs_reduced(prep.packed, q)))


def loopy_bp_numpy(model: FactorGraph | BoltzmannMachine, *, damping: float = 0.0,
                   max_iter: int = 1000, tol: float = 1e-9, time_limit: float | None = None,
                   factor_beliefs: bool = False) -> BPResult:
    """Plain numpy reference of :func:`loopy_bp`: the same schedule, messages and stopping
    rule, one factor's messages at a time by broadcasting (slow; for tests).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        As in :func:`loopy_bp`.
    damping : float, default 0.0
        As in :func:`loopy_bp`.
    max_iter : int, default 1000
        As in :func:`loopy_bp`.
    tol : float, default 1e-09
        As in :func:`loopy_bp`.
    time_limit : float or None, default None
        As in :func:`loopy_bp`.
    factor_beliefs : bool, default False
        As in :func:`loopy_bp`.

    Returns
    -------
    BPResult
        What :func:`loopy_bp` returns, up to rounding.
    """
    damping, max_iter, tol, stop = check_options(damping, max_iter, tol, time_limit)
    _check_flag(factor_beliefs, "factor_beliefs")
    prep = Prepared(model)
    p = prep.packed
    r = _initial(p)
    b, converged, it, change = _iterate(
        prep, r, lambda r: _sweep_numpy(p, r, damping), lambda r: _beliefs_numpy(prep, r),
        max_iter, tol, stop)
    prep.check_support(b)
    logz = _bethe_numpy(prep, r, b)
    fb = _factor_beliefs(prep, _cavities_numpy(p, r)) if factor_beliefs else None
    return BPResult(prep.marginals(b), float(logz), converged, it, change, fb)
