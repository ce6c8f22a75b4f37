"""Mini-bucket elimination with max: an upper bound on the MAP log-weight and a decoding.

Max-product elimination maximizes ``v_t`` out of the product of its bucket; mini-bucket
elimination (Dechter and Rish, JACM 2003) splits a bucket into mini-buckets ``r`` whose
scopes fit the i-bound and maximizes ``v_t`` out of each separately. Since

.. math::

    \\max_{x_v} \\prod_r f_r(x) \\le \\prod_r \\max_{x_v} f_r(x),

the messages end in a certified upper bound on ``max_x Σ_k θ_k(x)`` (the power-0 limit of
weighted mini-bucket: :mod:`mrflib.inference.approx.wmb` bounds ``log Z`` with the same tree).
The bound holds for every reparameterization of the mini-buckets, so before a bucket is
maximized out its mini-buckets are *moment matched* (Flerova, Ihler, Dechter and Otten
2011): each one's max-marginal on ``x_v`` is moved to the mean of them all, a shift whose
sum over the bucket is zero. The decoding assigns the variables from the last eliminated
to the first, each to its best value under its bucket's mini-buckets given the values
already chosen; its weight may be zero where the relaxation hides a constraint (a caller
repairs it: :func:`mrflib.inference.approx.map_search.feasible_state`).

Zero weights (``-inf``) are exact: a value of ``x_v`` every completion of some mini-bucket
gives zero weight has zero weight in the model too (a relaxation only adds support), so it
is set to ``-inf`` in every mini-bucket of the bucket.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from mrflib._support.validation import check_positive, require_memory
from mrflib.inference._factor_ops import expand
from mrflib.inference._reduction import Reduced
from mrflib.inference.approx import _max_mini_bucket_kernels as _bb
from mrflib.inference.approx import _mini_buckets as mb
from mrflib.inference.approx import wmb
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph, as_factor_graph

__all__ = ["MaxMiniBucketResult", "BranchAndBoundResult", "max_mini_bucket",
           "growing_max_mini_bucket", "branch_and_bound", "trivial_upper_bound", "bound_meets",
           "OPTIMAL_RTOL"]

#: Relative gap under which an upper bound meets a log-weight (:func:`bound_meets`).
OPTIMAL_RTOL = 1e-9


@dataclass(frozen=True)
class MaxMiniBucketResult:
    """What :func:`max_mini_bucket` found.

    Attributes
    ----------
    upper_bound : float
        A certified upper bound on ``max_x Σ_k θ_k(x)`` (``-inf``: ``Z = 0`` is proven).
    state : ndarray of int64, shape (n,)
        The decoding (observed variables at their values); its weight may be zero.
    ibound : int
        The most variables in one mini-bucket.
    exact : bool
        Whether every bucket was one mini-bucket: then the bound is the MAP log-weight and
        the decoding a MAP state.
    seconds : float
        Wall time.
    memory : float
        The table budget of the run, in bytes.
    """

    upper_bound: float
    state: np.ndarray
    ibound: int
    exact: bool
    seconds: float
    memory: float = 0.0


def trivial_upper_bound(model: FactorGraph | BoltzmannMachine) -> float:
    """``Σ_k max θ_k`` over the factors with the evidence clamped: no state weighs more.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.

    Returns
    -------
    float
        An upper bound on the MAP log-weight (``-inf`` when a factor is zero everywhere
        once the evidence is clamped: ``Z = 0``).
    """
    red = Reduced(as_factor_graph(model), barren=False)
    return float(red.const + sum(float(np.max(t)) for t in red.tables if t.size))


def bound_meets(upper: float, value: float) -> bool:
    """Whether the upper bound ``upper`` meets the log-weight ``value`` within
    :data:`OPTIMAL_RTOL` relative (then the state of that log-weight is a MAP state).

    Parameters
    ----------
    upper : float
        An upper bound on the MAP log-weight.
    value : float
        The log-weight of a state.

    Returns
    -------
    bool
        ``False`` for a state of zero weight (``value = -inf``).
    """
    upper, value = float(upper), float(value)
    if not value > -math.inf:
        return False
    return upper - value <= OPTIMAL_RTOL * max(1.0, abs(value))


class _Late(Exception):
    """The deadline passed during a run."""


def _belief(node: Any, nodes: list) -> np.ndarray:
    b = node.theta.copy()
    for c in node.children:
        child = nodes[c]
        b += expand(child.fwd, child.clique[1:], node.clique)
    return b


def _max_rest(b: np.ndarray) -> np.ndarray:
    """The max of ``b`` over every axis but the first."""
    return b.reshape(b.shape[0], -1).max(axis=1)


def _match(ids: list[int], nodes: list) -> None:
    """Move the bucket's mini-buckets' max-marginals on ``x_v`` to their mean."""
    bels = [_belief(nodes[i], nodes) for i in ids]
    maxes = [_max_rest(b) for b in bels]
    finite = np.logical_and.reduce([np.isfinite(m) for m in maxes])
    avg = sum(np.where(finite, m, 0.0) for m in maxes) / len(ids)
    for i, m in zip(ids, maxes):
        node = nodes[i]
        shape = (-1,) + (1,) * (node.theta.ndim - 1)
        node.theta = node.theta + np.where(finite, avg - np.where(finite, m, 0.0),
                                           0.0).reshape(shape)
        node.theta[~finite] = -np.inf


def _forward(nodes: list, buckets: list[list[int]], stop_at: float) -> float:
    bound = 0.0
    for ids in buckets:
        if time.perf_counter() > stop_at:
            raise _Late
        if len(ids) > 1:
            _match(ids, nodes)
        for i in ids:
            node = nodes[i]
            node.fwd = np.max(_belief(node, nodes), axis=0)  # a scalar for a root
            if node.parent < 0:
                bound += float(node.fwd)
    return bound


def _decode(model: FactorGraph, red: Reduced, nodes: list, buckets: list[list[int]],
            order: list[int]) -> np.ndarray:
    """The values from the last eliminated variable to the first, each the best under its
    bucket's mini-buckets given those chosen."""
    x = np.zeros(model.n, dtype=np.int64)
    for v, value in red.observed.items():
        x[v] = value
    for t in range(len(buckets) - 1, -1, -1):
        v = order[t]
        score = np.zeros(int(red.card[v]))
        for i in buckets[t]:
            node = nodes[i]
            b = _belief(node, nodes)
            score = score + b[(slice(None),) + tuple(int(x[u]) for u in node.clique[1:])]
        x[v] = int(np.argmax(score))
    return x


def max_mini_bucket(model: FactorGraph | BoltzmannMachine, *, ibound: int | None = None,
                    memory: float | None = None, order: Any = None,
                    deadline: float | None = None) -> MaxMiniBucketResult:
    """Mini-bucket elimination with max and moment matching (see the module notes).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied (a Boltzmann machine is taken as its factor graph,
        state 0 is spin -1).
    ibound : int, optional
        The most variables in one mini-bucket (``None``: limited by ``memory`` only).
    memory : float, optional
        Bytes of the largest mini-bucket table (default
        :data:`mrflib.inference.approx.wmb.DEFAULT_MEMORY`).
    order : sequence of int, optional
        The elimination order (:func:`mrflib.inference.approx.wmb.elimination_order`).
    deadline : float, optional
        Seconds from the call after which the run is abandoned (``TimeoutError``).

    Returns
    -------
    MaxMiniBucketResult
        ``upper_bound >= max_x log w(x)`` (equal when ``exact``) and the decoding.

    Raises
    ------
    TimeoutError
        When ``deadline`` passes before the run ends.
    """
    start = time.perf_counter()
    wmb.check_budget(ibound, memory, deadline, "deadline")
    fg = as_factor_graph(model)
    require_memory(8.0 * fg.n, f"the decoding of {fg.n} variables")
    red = Reduced(fg, barren=False)
    order = wmb.checked_order(red, order)
    stop_at = math.inf if deadline is None else start + deadline
    return _run(fg, red, ibound, memory, order, stop_at, start)


def _run(fg: FactorGraph, red: Reduced, ibound: int | None, memory: float | None,
         order: list[int] | None, stop_at: float, start: float) -> MaxMiniBucketResult:
    try:
        order, nodes, buckets, _ = mb.structure(red, fg.n, ibound, memory or wmb.DEFAULT_MEMORY,
                                                order, stop_at)
        bound = red.const + _forward(nodes, buckets, stop_at)
        if time.perf_counter() > stop_at:  # no time left to decode, nor to use the result
            raise _Late
    except (_Late, mb.Late):
        raise TimeoutError("the max mini-bucket run did not end within its deadline") from None
    width = max((len(nd.clique) for nd in nodes), default=0)
    single = all(len(ids) == 1 for ids in buckets)
    x = _decode(fg, red, nodes, buckets, order)
    return MaxMiniBucketResult(float(bound), x, width, single, time.perf_counter() - start,
                               float(memory or wmb.DEFAULT_MEMORY))


def growing_max_mini_bucket(model: FactorGraph | BoltzmannMachine, time_limit: float, *,
                            order: Any = None) -> Iterator[MaxMiniBucketResult]:
    """:func:`max_mini_bucket` runs of growing table budgets within ``time_limit`` seconds:
    :data:`mrflib.inference.approx.wmb.FIRST_MEMORY` bytes first, then
    :data:`mrflib.inference.approx.wmb.GROWTH` times larger while the next run is expected to
    end in time (it is abandoned at the limit), until a run is exact or a budget no longer
    changes the i-bound. Each result's ``upper_bound`` is the lowest so far; the first
    run is abandoned at the limit too (``TimeoutError``).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.
    time_limit : float
        Seconds for all the runs.
    order : sequence of int, optional
        The elimination order (computed once when not given).

    Returns
    -------
    iterator of MaxMiniBucketResult
        One result per run.
    """
    fg = as_factor_graph(model)
    check_positive(time_limit, "time_limit", allow_zero=True)
    if order is None:
        order = wmb.elimination_order(fg)[0]
    return _growing(fg, float(time_limit), [int(v) for v in order])


def _growing(fg: FactorGraph, time_limit: float, order: list[int]
             ) -> Iterator[MaxMiniBucketResult]:
    start = time.perf_counter()
    stop_at = start + time_limit
    red = Reduced(fg, barren=False)
    memory, last, best = float(wmb.FIRST_MEMORY), -1, math.inf
    while True:
        t0 = time.perf_counter()
        try:
            res = _run(fg, red, None, memory, order, stop_at, t0)
        except TimeoutError:
            if last < 0:
                raise
            return
        best = min(best, res.upper_bound)
        yield MaxMiniBucketResult(best, res.state, res.ibound, res.exact,
                                  time.perf_counter() - start, memory)
        took = time.perf_counter() - t0
        if res.exact or res.ibound == last or \
                took * wmb.GROWTH > stop_at - time.perf_counter():
            return
        last = res.ibound
        memory *= wmb.GROWTH


# --------------------------------------------------------------------------- search
#: Search nodes between two looks at the clock.
NODES_PER_CHECK = 512


@dataclass(frozen=True)
class BranchAndBoundResult:
    """What :func:`branch_and_bound` found.

    Attributes
    ----------
    state : ndarray of int64, shape (n,) or None
        The best state found above ``lower`` (``None``: none was).
    log_weight : float
        Its log-weight (``-inf`` without one).
    complete : bool
        Whether the search ended: then no state weighs more than ``max(log_weight,
        lower)``, a proof of optimality.
    nodes : int
        Search nodes expanded.
    ibound : int
        The i-bound of the mini-bucket heuristic.
    seconds : float
        Wall time.
    """

    state: np.ndarray | None
    log_weight: float
    complete: bool
    nodes: int
    ibound: int
    seconds: float


def _heuristic(red: Reduced, nodes: list, buckets: list[list[int]]
               ) -> list[list[tuple[np.ndarray, tuple]]]:
    """Per bucket, each mini-bucket's table ``b_r - λ_r`` over its clique (``λ_r`` a
    constant for a root): the bound of the assigned buckets is the mini-bucket bound (the
    sum of the roots' messages) plus their tables, which are never positive; over all
    buckets it is ``Σ_r θ_r``, the log-weight less the constant."""
    out = []
    for ids in buckets:
        tabs = []
        for i in ids:
            node = nodes[i]
            b = _belief(node, nodes)
            with np.errstate(invalid="ignore"):
                b = b - node.fwd[np.newaxis]
            b[np.isnan(b)] = -np.inf  # -inf - -inf: a value of no completion
            tabs.append((b, node.clique[1:]))
        out.append(tabs)
    return out


def branch_and_bound(model: FactorGraph | BoltzmannMachine, *, ibound: int | None = None,
                     memory: float | None = None, order: Any = None,
                     deadline: float | None = None, lower: float = -math.inf
                     ) -> BranchAndBoundResult:
    """Depth-first branch and bound guided by the max mini-bucket bound.

    The variables are assigned from the last eliminated to the first; a partial assignment
    is bounded by its buckets' mini-bucket tables minus their messages plus the messages
    of the buckets below (the static mini-bucket heuristic of Kask and Dechter 2001), and
    pruned when that bound is not above the best log-weight known. Values are tried best
    bound first. Without a deadline the search is complete (exponential at worst).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.
    ibound : int, optional
        The mini-buckets of the heuristic, as :func:`max_mini_bucket` takes them.
    memory : float, optional
        As :func:`max_mini_bucket` takes it.
    order : sequence of int, optional
        As :func:`max_mini_bucket` takes it.
    deadline : float, optional
        Seconds from the call after which the search stops (its best state so far kept,
        ``complete`` false).
    lower : float, default -inf
        A log-weight already reached (an incumbent's): only better states are searched for.

    Returns
    -------
    BranchAndBoundResult
        The best state found above ``lower``, and whether the search ended.
    """
    start = time.perf_counter()
    wmb.check_budget(ibound, memory, deadline, "deadline")
    lower = float(lower)
    if math.isnan(lower):
        raise ValueError("lower must be a log-weight or -inf, got nan")
    fg = as_factor_graph(model)
    red = Reduced(fg, barren=False)
    order = wmb.checked_order(red, order)
    stop_at = math.inf if deadline is None else start + deadline
    try:
        order, nodes, buckets, _ = mb.structure(red, fg.n, ibound, memory or wmb.DEFAULT_MEMORY,
                                                order, stop_at)
        top = _forward(nodes, buckets, stop_at)
    except (_Late, mb.Late):
        return BranchAndBoundResult(None, -math.inf, False, 0, 0,
                                    time.perf_counter() - start)
    width = max((len(nd.clique) for nd in nodes), default=0)
    tables = _heuristic(red, nodes, buckets)
    best_x, best, complete, count = _search(fg, red, order, tables, top,
                                            lower - red.const, stop_at)
    value = -math.inf if best_x is None else float(fg.log_weight(best_x))
    return BranchAndBoundResult(best_x, value, complete, count, width,
                                time.perf_counter() - start)


def _pack(red: Reduced, order: list[int], tables: list) -> tuple:
    """The levels' mini-bucket tables flat, for
    :func:`mrflib.inference.approx._max_mini_bucket_kernels.search`."""
    card = np.ascontiguousarray(red.card, dtype=np.int64)
    bptr = np.zeros(len(order) + 1, dtype=np.int64)
    flat, moff, vstride, mptr, mvars, mstride = [], [], [], [0], [], []
    at = 0
    for t, tabs in enumerate(tables):
        bptr[t + 1] = bptr[t] + len(tabs)
        for b, rest in tabs:
            b = np.ascontiguousarray(b, dtype=np.float64)
            strides = [st // 8 for st in b.strides] if b.ndim else []
            flat.append(b.ravel())
            moff.append(at)
            at += b.size
            vstride.append(strides[0])
            mvars.extend(int(u) for u in rest)
            mstride.extend(strides[1:])
            mptr.append(len(mvars))
    i64 = np.int64
    return (card, bptr, np.array(moff, dtype=i64), np.array(vstride, dtype=i64),
            np.array(mptr, dtype=i64), np.array(mvars, dtype=i64),
            np.array(mstride, dtype=i64),
            np.concatenate(flat) if flat else np.zeros(0))


def _search(fg: FactorGraph, red: Reduced, order: list[int], tables: list, top: float,
            floor: float, stop_at: float) -> tuple[np.ndarray | None, float, bool, int]:
    """The depth-first search of :func:`branch_and_bound` (log-weights less the constant),
    compiled (:func:`mrflib.inference.approx._max_mini_bucket_kernels.search`), the clock
    looked at every :data:`NODES_PER_CHECK` nodes."""
    x = np.zeros(fg.n, dtype=np.int64)
    for v, value in red.observed.items():
        x[v] = value
    levels = len(order)
    if levels == 0:
        return x.copy(), 0.0, True, 0
    if not top > floor:
        return None, floor, True, 0  # the bound itself proves nothing better exists
    card, bptr, moff, vstride, mptr, mvars, mstride, tabs = _pack(red, order, tables)
    width = int(card[np.asarray(order, dtype=np.int64)].max())
    order_a = np.asarray(order, dtype=np.int64)
    best_x = x.copy()
    best = np.array([floor])
    regs = np.zeros(3, dtype=np.int64)
    cand_v = np.zeros((levels, width), dtype=np.int64)
    cand_b = np.zeros((levels, width))
    ncand = np.zeros(levels, dtype=np.int64)
    icand = np.zeros(levels, dtype=np.int64)
    score = np.zeros(width)
    count = 0
    while True:
        count += _bb.search(order_a, card, bptr, moff, vstride, mptr, mvars, mstride, tabs,
                            float(top), x, best_x, best, regs, cand_v, cand_b, ncand, icand,
                            score, NODES_PER_CHECK)
        if regs[_bb.ENDED]:
            break
        if time.perf_counter() > stop_at:
            break
    found = best[0] > floor
    return (best_x if found else None), float(best[0]), bool(regs[_bb.ENDED]), count
