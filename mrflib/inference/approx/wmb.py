"""Weighted mini-bucket elimination: an upper bound on ``log Z`` and approximate marginals
for any discrete factor graph (Liu and Ihler, ICML 2011, "Bounding the partition function
using Hölder's inequality").

Variable elimination sums ``v_t`` out of the product of its *bucket* (the factors and
messages whose first-eliminated variable is ``v_t``); the table over the bucket's variables
grows with the treewidth. Mini-bucket elimination splits a bucket into *mini-buckets*
``r`` whose scopes fit a limit (the *i-bound*: at most ``ibound`` variables, and at most
``memory`` bytes per table) and sums ``v_t`` out of each separately. With weights
``w_r > 0``, ``Σ_r w_r = 1``, Hölder's inequality (the paper's eq. (4)) gives

.. math::

    \\sum_{x_v} \\prod_r f_r(x) \\le \\prod_r \\Big(\\sum_{x_v} f_r(x)^{1/w_r}\\Big)^{w_r},

so the messages ``λ_r = w_r log Σ_{x_v} exp(θ_r / w_r)`` (the weighted power sum, eq. (5))
passed to later buckets end in a certified upper bound on ``log Z``. The bound holds for
every reparameterization ``θ_r`` of the model (factors moved between mini-buckets whose sum
is unchanged) and every weighting, so each forward pass first *matches* the mini-buckets of
a bucket (moves ``θ`` so that their beliefs on ``x_v`` agree, the paper's sec. 5 fixed
point) and moves the weights along the bound's gradient, the conditional entropies
``H(x_v | x_{C_r \\ v})`` (eq. (9)), as pyGMs' ``WMB.msgForward`` does. The first
matched pass has no backward message to guide it and can end far above the trivial bound
``Σ_k max θ_k + Σ_v log |X_v|``, which the model's own tables never exceed: each run's
first bound is therefore also taken without matching
(:func:`~mrflib.inference.approx._mini_buckets.unmatched_bound`). A backward
pass sends each mini-bucket the weighted message of its parent, so that every mini-bucket
has a belief ``b_r ∝ exp((θ_r + messages) / w_r)``; a variable's marginal is the mean of its
bucket's mini-bucket beliefs. When ``ibound`` covers the order's width every bucket is one
mini-bucket of weight one and the bound is ``log Z`` and the beliefs are exact.

The mini-bucket tree and its passes are those of
:mod:`mrflib.inference.approx._mini_buckets`, which the importance sampler's proposal and the
max-product heuristic of :mod:`mrflib.inference.approx.max_mini_bucket` share.

Zero weights (``-inf`` log entries) are exact: the power sums are computed in log space
with ``-inf`` kept, and a relaxation only ever adds support, so a state a mini-bucket
belief gives zero mass has zero weight in the model and may be set to ``-inf`` in every
mini-bucket of the bucket without changing the product.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from mrflib._support.validation import check_positive, require_memory
from mrflib.inference._reduction import Reduced
from mrflib.inference.approx._mini_buckets import (
    Late,
    backward,
    forward,
    mini_bucket_order,
    structure,
    unmatched_bound,
)
from mrflib.inference.exact import elimination_order as eo
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph, as_factor_graph

__all__ = ["WMBResult", "weighted_mini_bucket", "wmb_passes", "growing_passes",
           "elimination_order", "check_budget", "DEFAULT_MEMORY"]

#: The default budget of one mini-bucket table, in bytes (``2^21`` float64 entries).
DEFAULT_MEMORY = 2**24
#: Step sizes of the reparameterization (matching) and of the weights' exponentiated
#: gradient in the forward passes.
STEP_THETA = 1.0
STEP_WEIGHTS = 0.1
#: Under a time limit (:func:`growing_passes`) the first run's largest table, in bytes;
#: each next run's is :data:`GROWTH` times larger.
FIRST_MEMORY = 2**12
GROWTH = 16
#: The next run is started when this many times the last one's seconds per pass are left
#: (a pass of a small budget costs mostly its per-mini-bucket overhead, not its tables; a
#: run cut by the deadline keeps the results of its complete passes).
NEXT_COST = 4.0


@dataclass(frozen=True)
class WMBResult:
    """What :func:`weighted_mini_bucket` found.

    Attributes
    ----------
    log_upper : float
        A certified upper bound on the natural ``log Z`` (the smallest of the passes).
    marginals : list of ndarray
        One ``(card_i,)`` array per variable: the beliefs of the last backward pass (an
        observed variable a point mass, a variable no factor holds uniform).
    ibound : int
        The most variables in one mini-bucket.
    seconds : float
        Wall time.
    iterations : int
        Forward-backward passes made.
    """

    log_upper: float
    marginals: list
    ibound: int
    seconds: float
    iterations: int


def elimination_order(model: FactorGraph) -> tuple[list[int], float, float]:
    """The order :func:`weighted_mini_bucket` uses, with the cost of exact elimination in it.

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied (a Boltzmann machine is converted).

    Returns
    -------
    order : list of int
        The variables left once evidence is clamped, in elimination order.
    log_biggest : float
        The log of the entries of the largest clique table.
    total : float
        The entries of all the clique tables.
    """
    model = as_factor_graph(model)
    red = Reduced(model, barren=False)
    order = mini_bucket_order(red, model.n)
    adj = eo.interaction_graph(model.n, red.scopes)
    logc = np.log(red.card.astype(np.float64)).tolist()
    _, biggest, total = eo.order_cliques(adj, order, logc)
    return order, biggest, total


def check_budget(ibound: Any, memory: Any, seconds: Any, seconds_name: str = "time_limit"
                 ) -> None:
    """Check the budgets of a mini-bucket method, each optional (``None`` passes).

    Parameters
    ----------
    ibound : int or None
        Variables of a mini-bucket's scope at most: a positive int.
    memory : float or None
        Bytes of its largest table: a positive number.
    seconds : float or None
        Time the method may take: a non-negative number (``0``: the first pass only, as
        for every approx method).
    seconds_name : str, default "time_limit"
        The name of ``seconds`` in the caller's signature, which a refusal names.

    Returns
    -------
    None
        A bad budget raises a ``ValueError`` naming it.
    """
    if ibound is not None:
        check_positive(ibound, "ibound", integer=True)
    if memory is not None:
        check_positive(memory, "memory")
    if seconds is not None:
        check_positive(seconds, seconds_name, allow_zero=True)


def _check_options(ibound: Any, max_iter: Any, time_limit: Any, memory: Any, tol: Any
                   ) -> None:
    check_positive(tol, "tol", allow_zero=True)
    check_positive(max_iter, "max_iter", integer=True)
    check_budget(ibound, memory, time_limit)


def _final_marginals(model: FactorGraph, red: Reduced, marg: dict[int, np.ndarray]
                     ) -> list[np.ndarray]:
    out = []
    for v in range(model.n):
        c = int(model.cardinalities[v])
        if v in red.observed:
            p = np.zeros(c)
            p[red.observed[v]] = 1.0
        elif v in marg:
            p = marg[v]
        else:
            p = np.full(c, 1.0 / c)
        out.append(p)
    return out


def weighted_mini_bucket(model: FactorGraph | BoltzmannMachine, *, ibound: int | None = None,
                         max_iter: int = 20, time_limit: float | None = None,
                         memory: float | None = None, tol: float = 1e-6,
                         order: Any = None, deadline: float | None = None) -> WMBResult:
    """Weighted mini-bucket elimination: an upper bound on ``log Z`` and marginals.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied (:meth:`~mrflib.models.factor_graph.FactorGraph.condition`).
    ibound : int, optional
        The most variables in one mini-bucket. ``None``: limited by ``memory`` only.
    max_iter : int, default 20
        Forward-backward passes at most (each tightens the bound and the beliefs).
    time_limit : float, optional
        Seconds after which no new pass is started (the first always runs).
    memory : float, optional
        Bytes of the largest mini-bucket table (default :data:`DEFAULT_MEMORY`).
    tol : float, default 1e-06
        Stop when a pass changes the bound by less than ``tol (1 + |bound|)``.
    order : sequence of int, optional
        The elimination order (:func:`elimination_order`, computed once for several runs).
    deadline : float, optional
        Seconds (from the call) after which a running pass is abandoned: the result is that
        of the passes completed before it (``TimeoutError`` when none was).

    Returns
    -------
    WMBResult
        ``log_upper >= log Z`` (equal when every bucket is one mini-bucket), the beliefs.

    Raises
    ------
    ValueError
        When the bound is ``-inf``: the model has ``Z = 0``.
    TimeoutError
        When ``deadline`` passes before the first pass ends.
    """
    passes = wmb_passes(model, ibound=ibound, max_iter=max_iter, time_limit=time_limit,
                        memory=memory, tol=tol, order=order, deadline=deadline)
    return collections.deque(passes, maxlen=1)[0]  # the last pass's result


def wmb_passes(model: FactorGraph | BoltzmannMachine, *, ibound: int | None = None,
               max_iter: int = 20, time_limit: float | None = None,
               memory: float | None = None, tol: float = 1e-6, order: Any = None,
               deadline: float | None = None) -> Iterator[WMBResult]:
    """:func:`weighted_mini_bucket` one pass at a time (an anytime caller writes each).

    The arguments are checked at the call, before the first pass is asked for.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        As in :func:`weighted_mini_bucket`.
    ibound : int, optional
        As in :func:`weighted_mini_bucket`.
    max_iter : int, default 20
        As in :func:`weighted_mini_bucket`.
    time_limit : float, optional
        As in :func:`weighted_mini_bucket`.
    memory : float, optional
        As in :func:`weighted_mini_bucket`.
    tol : float, default 1e-06
        As in :func:`weighted_mini_bucket`.
    order : sequence of int, optional
        As in :func:`weighted_mini_bucket`.
    deadline : float, optional
        As in :func:`weighted_mini_bucket`.

    Yields
    ------
    WMBResult
        The result after each forward-backward pass; its bound is the lowest so far.

    Raises
    ------
    ValueError
        When the bound is ``-inf``: the model has ``Z = 0``.
    TimeoutError
        When ``deadline`` passes before the first pass ends.
    """
    start = time.perf_counter()
    _check_options(ibound, max_iter, time_limit, memory, tol)
    if deadline is not None:
        check_positive(deadline, "deadline")
    model = as_factor_graph(model)
    require_memory(8.0 * float(np.sum(model.cardinalities, dtype=np.float64)),
                   f"the weighted mini-bucket marginals of {model.n} variables")
    red = Reduced(model, barren=False)
    order = checked_order(red, order)
    return _passes(model, red, start, ibound, max_iter, time_limit, memory, tol, order,
                   deadline)


def checked_order(red: Reduced, order: Any) -> list[int] | None:
    """``order`` as a list of ints, checked against the reduced model.

    Parameters
    ----------
    red : Reduced
        The model with the evidence clamped.
    order : sequence of int or None
        Must list each variable of ``red`` left once the evidence is clamped exactly once.

    Returns
    -------
    list of int or None
        The order; ``None`` stays ``None`` (the default order).
    """
    if order is None:
        return None
    order = [int(v) for v in order]
    if sorted(order) != red.active:
        raise ValueError("order must list each variable left once evidence is clamped "
                         "exactly once (as elimination_order gives)")
    return order


def _passes(model, red, start, ibound, max_iter, time_limit, memory, tol, order, deadline
            ) -> Iterator[WMBResult]:
    """The passes of :func:`wmb_passes`, on checked arguments."""
    stop_at = math.inf if deadline is None else start + deadline
    try:
        order, nodes, buckets, _ = structure(red, model.n, ibound, memory or DEFAULT_MEMORY,
                                             order, stop_at)
    except Late:
        raise TimeoutError(f"weighted mini-bucket's tables were not built within the "
                           f"deadline of {deadline:g} s") from None
    single = all(len(ids) == 1 for ids in buckets)
    const = red.const + red.free_log
    width = max((len(nd.clique) for nd in nodes), default=0)
    best, prev, it = math.inf, math.inf, 0
    while it < max_iter:
        try:
            low = (const + unmatched_bound(nodes, buckets, stop_at) if it == 0 and not single
                   else math.inf)
            bound = const + forward(nodes, buckets, STEP_THETA, STEP_WEIGHTS, stop_at)
            if not bound > -math.inf:
                raise ValueError("model has Z = 0 (every state has zero weight, e.g. "
                                 "impossible evidence): the upper bound on log Z is -inf")
            marg: dict[int, np.ndarray] = {}
            backward(nodes, buckets, order, marg, stop_at)
        except Late:
            if it == 0:
                raise TimeoutError(f"no pass of weighted mini-bucket ended within the "
                                   f"deadline of {deadline:g} s") from None
            return
        it += 1
        best = min(best, low, bound)
        yield WMBResult(best, _final_marginals(model, red, marg), width,
                        time.perf_counter() - start, it)
        late = time_limit is not None and time.perf_counter() - start > time_limit
        if single or late or abs(prev - bound) <= tol * (1.0 + abs(bound)):
            return
        prev = bound


def growing_passes(model: FactorGraph | BoltzmannMachine, time_limit: float, *,
                   order: Any = None, max_iter: int = 20, strict: bool = False
                   ) -> Iterator[WMBResult]:
    """Weighted mini-bucket within ``time_limit`` seconds: runs of growing table budgets,
    :data:`FIRST_MEMORY` bytes first, then :data:`GROWTH` times larger while the next run
    is expected to end in time (:data:`NEXT_COST`), a :class:`WMBResult` after each pass.

    A larger budget (a higher i-bound) usually tightens the bound, so this is how a time
    limit is met on a model of any width: one run at the default budget can take minutes
    per pass on a wide lattice. The first pass of the smallest budget always runs (as every
    approximate method's first step does, even at ``time_limit=0``) unless ``strict``
    (a competition's hard limit: then it too is abandoned at the limit, with
    ``TimeoutError``); later runs may start
    new passes during the first half of the time left and are abandoned at its end
    (:func:`wmb_passes`' ``deadline``). The sequence stops when a budget no longer changes
    the i-bound. Every result's bound is the lowest of all passes so far (each is an upper
    bound on ``log Z``); its marginals are the last pass's.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.
    time_limit : float
        Non-negative seconds for all the runs.
    order : sequence of int, optional
        The elimination order, as in :func:`weighted_mini_bucket`.
    max_iter : int, default 20
        Forward-backward passes at most per run.
    strict : bool, default False
        Abandon the first pass too at the limit.

    Yields
    ------
    WMBResult
        The result after each pass.

    Raises
    ------
    TimeoutError
        With ``strict``, when the first pass does not end within ``time_limit``.
    """
    # the arguments are checked at the call, not when the first pass is asked for
    model = as_factor_graph(model)
    check_positive(time_limit, "time_limit", allow_zero=True)
    return _growing(model, time_limit, order, max_iter, strict)


def _growing(model: FactorGraph, time_limit: float, order: Any, max_iter: int, strict: bool
             ) -> Iterator[WMBResult]:
    """The runs of :func:`growing_passes`, on checked arguments."""
    start = time.perf_counter()
    deadline = start + time_limit
    memory, last_ibound, best = float(FIRST_MEMORY), -1, math.inf
    while True:
        left = deadline - time.perf_counter()
        first = last_ibound < 0
        t0, passes, ibound = time.perf_counter(), 0, None
        try:
            for res in wmb_passes(model, memory=memory, time_limit=max(left / 2, 0.0),
                                  order=order, max_iter=max_iter,
                                  deadline=None if first and not strict
                                  else max(left, 1e-6)):
                best = min(best, res.log_upper)
                passes, ibound = res.iterations, res.ibound
                yield dataclasses.replace(res, log_upper=best,
                                          seconds=time.perf_counter() - start)
        except TimeoutError:
            if first:
                raise
            return  # a later run: the earlier results stand
        took = time.perf_counter() - t0
        if ibound == last_ibound or took / passes * NEXT_COST > deadline - time.perf_counter():
            return
        last_ibound = ibound
        memory *= GROWTH
