"""An upper bound on the MAP log-weight by max-product dual decomposition (MPLP), and the
model reparameterized by it.

::

    r = map_dual.dual_bound(model, deadline=2.0)   # r.upper_bound >= max_x log w(x)
    r.model.log_weight(x) == model.log_weight(x)   # the same weights, spread differently

Every state's log-weight is ``Σ_k θ_k(x_{S_k})``. Moving a function ``λ_{k,v}(x_v)`` out of
factor ``k`` into the unary table of ``v`` changes no state's weight (a
*reparameterization*), and for every choice of the messages ``λ``

.. math::

    \\max_x \\sum_k θ_k(x) \\le \\sum_v \\max_{x_v} \\Big(θ_v + \\sum_{k \\ni v} λ_{k,v}\\Big)
        + \\sum_k \\max_{x_k} \\Big(θ_k - \\sum_{v \\in k} λ_{k,v}\\Big),

the dual of the local-polytope linear relaxation. MPLP (Globerson and Jaakkola 2007; the
star form over factors of Sontag, Globerson and Jaakkola 2011) lowers it by block
coordinate descent: each factor in turn sends its variables its max-marginals given what
the rest of the model sends them, shared equally, which never raises the bound. The
reparameterized model (``model`` of :class:`DualResult`) carries the messages: the mini-buckets of
:func:`mrflib.inference.approx.max_mini_bucket.branch_and_bound` over it start from this
bound instead of the model's own (the cost shifting that tightens the mini-bucket heuristic
of AND/OR branch and bound: Ihler, Flerova, Dechter and Otten 2012), and each variable's
best value under its unary table is a decoding.

Zeros (``-inf``) are exact constraints for the model but not for the relaxation: the
messages are computed on the tables with each zero raised to a finite floor below every
finite log-weight, a model that weighs every state at least as much as the original, so
its bound holds for the original too; the reparameterized model keeps the zeros.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from mrflib._support.validation import check_positive, check_real, require_memory
from mrflib.inference.approx import _map_dual_kernels as _k
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph, as_factor_graph

__all__ = ["DualResult", "dual_bound", "DUAL_SWEEPS", "DUAL_TOLERANCE"]

#: Largest number of sweeps of :func:`dual_bound` by default.
DUAL_SWEEPS = 1000
#: Relative decrease of the bound over :data:`STALL_SWEEPS` sweeps under which the descent
#: is taken to have converged.
DUAL_TOLERANCE = 1e-6
#: Sweeps over which a stall is measured.
STALL_SWEEPS = 10


@dataclass(frozen=True)
class DualResult:
    """What :func:`dual_bound` found.

    Attributes
    ----------
    upper_bound : float
        A certified upper bound on ``max_x Σ_k θ_k(x)`` (the lowest of the sweeps').
    model : FactorGraph
        The reparameterized model: the factors of more than one variable less their
        messages, then one unary factor per variable holding its unary tables plus the
        messages it receives, then the constant factors; every state's log-weight is the
        original's (up to rounding).
    state : ndarray of int64, shape (n,)
        Each variable's best value under its unary factor of ``model`` (its weight may
        be zero).
    sweeps : int
        Sweeps done.
    converged : bool
        Whether the bound stalled (or met ``lower``) before the sweeps or the deadline ran
        out.
    seconds : float
        Wall time.
    """

    upper_bound: float
    model: FactorGraph
    state: np.ndarray
    sweeps: int
    converged: bool
    seconds: float


def _floor(tables: list[np.ndarray]) -> float:
    """A finite log-weight below every state's of finite weight: the least finite entry
    less the sum of the factors' finite spans, less one."""
    low, span = 0.0, 0.0
    for t in tables:
        fin = t[np.isfinite(t)]
        if fin.size:
            low = min(low, float(fin.min()))
            span += float(fin.max() - fin.min())
    return low - span - 1.0


def dual_bound(model: FactorGraph | BoltzmannMachine, *, deadline: float | None = None,
               max_sweeps: int = DUAL_SWEEPS, tolerance: float = DUAL_TOLERANCE,
               lower: float = -math.inf) -> DualResult:
    """An upper bound on the MAP log-weight by MPLP, and the reparameterized model (see
    the module notes).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied (a Boltzmann machine is taken as its factor graph,
        state 0 is spin -1).
    deadline : float, optional
        Seconds from the call after which no further sweep starts (one always runs).
    max_sweeps : int, default DUAL_SWEEPS
        Largest number of sweeps.
    tolerance : float, default DUAL_TOLERANCE
        The descent stops when the bound fell by less than ``tolerance`` times
        ``1 + |bound|`` over the last :data:`STALL_SWEEPS` sweeps.
    lower : float, default -inf
        A log-weight already reached: the descent stops once the bound meets it.

    Returns
    -------
    DualResult
        The bound, the reparameterized model and its decoding.
    """
    start = time.perf_counter()
    fg = as_factor_graph(model)
    stop = math.inf if deadline is None else start + check_positive(
        deadline, "deadline", allow_zero=True)
    max_sweeps = check_positive(max_sweeps, "max_sweeps", integer=True)
    tolerance = check_positive(tolerance, "tolerance", allow_zero=True)
    if not (isinstance(lower, (float, np.floating)) and lower == -math.inf):
        lower = check_real(lower, "lower")
    card = np.ascontiguousarray(fg.cardinalities, dtype=np.int64)
    scopes = [tuple(s) for s in fg.scopes]
    tabs = [np.asarray(t, dtype=np.float64) for t in fg.log_tables]
    require_memory(8.0 * (3 * sum(t.size for t in tabs) + 4 * int(card.sum())),
                   f"the dual bound of {fg.n} variables")
    floor = _floor(tabs)
    const = sum(float(t) for s, t in zip(scopes, tabs) if not s)
    unary = [np.zeros(int(c)) for c in card]
    for s, t in zip(scopes, tabs):
        if len(s) == 1:
            unary[s[0]] = unary[s[0]] + t
    high = [k for k, s in enumerate(scopes) if len(s) > 1]
    inner = FactorGraph(card, [scopes[k] for k in high], [tabs[k] for k in high])
    tables, _, _, _, fptr, fvars, _, offsets = factor_gibbs.pack(inner)
    work = np.maximum(tables, floor)
    off = np.append(offsets, tables.size).astype(np.int64)
    sptr = np.concatenate([[0], np.cumsum(card)]).astype(np.int64)
    loff = np.concatenate([[0], np.cumsum(card[fvars])]).astype(np.int64)
    lam = np.zeros(int(loff[-1]))
    tot = np.maximum(np.concatenate(unary) if unary else np.zeros(0), floor)
    belief = np.empty(int(np.diff(off).max(initial=1)))
    states = np.add.reduceat(card[fvars], fptr[:-1]) if high else np.ones(1, np.int64)
    mu, best = np.empty(int(states.max())), np.empty(int(states.max()))
    digit = np.zeros(int(np.diff(fptr).max(initial=1)), dtype=np.int64)
    args = (work, off, fptr, fvars, card, sptr, loff, lam, tot)
    bound = float(_k.bound(*args, digit)) + const
    last, sweeps, converged = bound, 0, not high
    while not converged and sweeps < max_sweeps and time.perf_counter() < stop:
        _k.sweep(*args, belief, mu, best, digit)
        sweeps += 1
        if sweeps % STALL_SWEEPS and sweeps < max_sweeps:
            continue  # the bound costs a sweep's pass: looked at every STALL_SWEEPS
        now = float(_k.bound(*args, digit)) + const
        bound = min(bound, now)
        converged = last - now <= tolerance * (1.0 + abs(now)) or bound <= lower
        last = now
    # the messages moved onto the original tables, zeros kept
    lam_of = [lam[loff[j]:loff[j] + card[fvars[j]]] for j in range(len(fvars))]
    new_tabs: list[np.ndarray] = []
    for i, k in enumerate(high):
        t = tabs[k].copy()
        for a, j in enumerate(range(fptr[i], fptr[i + 1])):
            shape = [1] * len(scopes[k])
            shape[a] = -1
            t = t - lam_of[j].reshape(shape)
        new_tabs.append(t)
    units = []
    for v in range(fg.n):
        u = tot[sptr[v]:sptr[v + 1]].copy()
        u[~(unary[v] > -np.inf)] = -np.inf
        units.append(u)
    state = np.array([int(np.argmax(u)) for u in units], dtype=np.int64)
    out = FactorGraph(card, [scopes[k] for k in high] + [(v,) for v in range(fg.n)]
                      + [() for s in scopes if not s],
                      new_tabs + units + [tabs[k] for k, s in enumerate(scopes) if not s])
    return DualResult(bound, out, state, sweeps, converged, time.perf_counter() - start)
