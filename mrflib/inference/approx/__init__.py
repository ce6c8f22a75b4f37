"""Approximate inference on any discrete model: one front for every method, and ``"auto"``.

::

    approx.marginals(model, method="auto", *, time_limit=None, rng=None, **options)
    approx.log_partition(model, method="auto", ...)
    approx.log_partition_bounds(model, *, time_limit=None)  # lower <= log Z <= upper
    approx.map_assignment(model, method="auto", *, time_limit=None, rng=None)  # MAP, bound

``model`` is a :class:`~mrflib.models.factor_graph.FactorGraph` (evidence applied with
:meth:`~mrflib.models.factor_graph.FactorGraph.condition`) or a
:class:`~mrflib.models.boltzmann.BoltzmannMachine` (converted by
:meth:`~mrflib.models.factor_graph.FactorGraph.from_boltzmann`: state 0 is spin -1, state 1 is
spin +1). Every method returns an :class:`~mrflib.inference.approx.result.ApproxResult`.

Methods (:data:`METHODS`; a new one is one entry ``name: runner``, a runner being
``runner(model, *, time_limit, rng, **options) -> ApproxResult`` whose keyword-only
parameters are the options it takes):

* ``"exact"``: the junction-tree engine (:mod:`mrflib.inference.exact`);
* ``"lbp"``: loopy belief propagation and the Bethe ``log Z`` (:mod:`mrflib.inference.approx.lbp`);
* ``"mean-field"``: naive mean field and its lower bound
  (:mod:`mrflib.inference.approx.mean_field`);
* ``"wmb"``: weighted mini-bucket, an upper bound on ``log Z`` and its beliefs
  (:mod:`mrflib.inference.approx.wmb`; under a ``time_limit`` its table budget grows from small
  while time remains, :func:`mrflib.inference.approx.wmb.growing_passes`, unless ``ibound`` is
  given);
* ``"importance"``: importance sampling of ``Z`` with the weighted mini-bucket proposal
  (a mean-field one where that cannot run), an unbiased estimate of ``Z`` whose log is
  ``log_partition``, bounds on ``log Z`` that hold with probability ``confidence``
  (``log_partition_bounds``) and the self-normalized marginals of its samples
  (:mod:`mrflib.inference.approx.importance`; without ``n_samples`` it draws until the
  ``time_limit``, or :data:`IMPORTANCE_SAMPLES` samples without one);
* ``"gibbs"``, ``"smci"``: Gibbs sampling and spatial Monte Carlo integration on factor
  graphs (:mod:`mrflib.inference.sampling.chains`, :mod:`mrflib.inference.smci.regions`),
  with a standard error for every probability;
* ``"auto"``: exact inference where its plan fits in memory and its estimated time in
  ``time_limit``; otherwise loopy BP, then damped loopy BP if it did not converge, then
  weighted mini-bucket's beliefs if that did not converge either and time remains.
  ``result.method`` names the method whose marginals are returned and
  ``result.details["tried"]`` every step, with its time.

:func:`log_partition`'s ``"auto"`` answers ``log Z`` instead: exact where its plan fits
the ``time_limit`` (as above), otherwise the importance sampling estimate within the time
left (which needs an ``rng``).

:func:`map_assignment` answers the MPE question (a most probable state) with a
:class:`~mrflib.inference.approx.result.MapResult`: the best state found, its log-weight and
a certified upper bound on the largest log-weight (:data:`MAP_METHODS`):

* ``"exact"``: max-product elimination (:func:`mrflib.inference.exact.map_assignment`),
  refused as ``"exact"`` marginals are where its plan does not fit the ``time_limit``;
* ``"search"``: a state of positive weight by depth-first search with arc consistency
  (:func:`mrflib.inference.approx.map_search.feasible_state`), improved by iterated conditional
  modes (:func:`~mrflib.inference.approx.map_search.local_search`; with an ``rng``, also by
  perturbations while time remains); its bound is ``Σ_k max θ_k``;
* ``"mini-bucket"``: mini-bucket elimination with max and moment matching
  (:mod:`mrflib.inference.approx.max_mini_bucket`, budgets grown within the ``time_limit``): an
  upper bound on the MAP log-weight and a decoding, repaired to positive weight and
  improved as ``"search"`` improves its state;
* ``"branch-and-bound"``: ``"search"``'s state, then a depth-first branch and bound above
  it guided by the max mini-bucket bound
  (:func:`mrflib.inference.approx.max_mini_bucket.branch_and_bound`); when it ends within the
  ``time_limit`` (or without one) its best state is proven optimal;
* ``"wmb"``: weighted mini-bucket's sum-product decoding, repaired and improved; its bound
  on ``log Z`` bounds the MAP log-weight too (``max_x w(x) <= Z``), more loosely;
* ``"toulbar2"``: toulbar2's branch and bound on the model's costs
  (:func:`mrflib.inference.approx.map_toulbar2.toulbar2_map`, optional ``pytoulbar2``:
  ``pip install "mrflib[mpe]"``) in a forked child killed at the ``time_limit``; its state is
  proven optimal when its search ends;
* ``"auto"``: ``"exact"`` where its plan fits the time left (as :func:`marginals`'
  ``"auto"`` decides); otherwise, where the evidence fixes variables, the model reduced
  for MAP
  (:func:`mrflib.inference.approx.map_reduction.reduce_map`: the zeros propagated, small
  buckets eliminated, connected parts split), each part solved by max-product where they
  all fit half the time left (:func:`~mrflib.inference.approx.map_reduction.exact_parts`);
  otherwise ``"search"`` (where the reduction fixed variables, then the iterated local
  search of propagated moves on the reduced parts,
  :func:`~mrflib.inference.approx.map_reduction.propagated_moves_parts`, whose moves fix one
  variable and let the zeros move the rest, then under a ``time_limit`` each part's branch
  and bound over its dual reparameterization,
  :func:`~mrflib.inference.approx.map_reduction.dual_branch_and_bound_parts`), then
  ``"mini-bucket"``, then (under a
  ``time_limit``) ``"branch-and-bound"`` for the time left, then (with an ``rng``)
  perturbations of the best state, stopping as soon as a bound meets the best log-weight.
  ``"auto"`` does not run ``"toulbar2"`` even where it is installed: its answer, bound and
  steps are then the same whichever extras are installed, and without a ``time_limit``
  toulbar2 may never end; ``python -m mrflib solve --task MPE`` runs it beside these steps.

Every method adds log-weights in float64 as the exact engines do, so past the precision
limit of :mod:`mrflib.models.precision` each call of this front warns once with a
:class:`~mrflib.models.precision.PrecisionWarning` (estimates, and the guarantee of a
bound, may be off by the rounding); the approximate methods' own modules do not warn (the exact
engines' modules do, as :mod:`mrflib.models.precision` says).
"""

from __future__ import annotations

import collections
import inspect
import math
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from mrflib._support.deprecation import warn_deprecated
from mrflib._support.validation import as_rng, check_real, is_choice
from mrflib.inference import bounds, exact
from mrflib.inference._reduction import observed_states
from mrflib.inference.approx import (
    importance,
    map_reduction,
    map_search,
    map_toulbar2,
    max_mini_bucket,
    wmb,
)
from mrflib.inference.approx.lbp import loopy_bp
from mrflib.inference.approx.mean_field import mean_field as naive_mean_field
from mrflib.inference.approx.result import ApproxResult, MapIncumbent, MapResult
from mrflib.inference.exact import elimination
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.inference.smci import regions as smci_factor_graph
from mrflib.models.boltzmann import BoltzmannMachine, to_spins
from mrflib.models.factor_graph import FactorGraph, as_factor_graph, with_evidence
from mrflib.models.precision import reported
from mrflib.models.structure import is_pairwise_binary

__all__ = ["ApproxResult", "MapResult", "METHODS", "MAP_METHODS", "EXACT_ENTRIES_PER_SECOND",
           "available", "marginals", "log_partition", "log_partition_bounds",
           "map_assignment"]

#: Clique-table entries the exact engine gets through per second (marginals and log Z,
#: upward and downward passes), a conservative figure for ``"auto"``'s time estimate.
EXACT_ENTRIES_PER_SECOND = 5e6
#: An exact plan estimated within this many seconds runs under any time limit, 0 included.
EXACT_ONE_STEP_SECONDS = 0.01


# --------------------------------------------------------------------------- checks
def _check_time_limit(time_limit: Any) -> float | None:
    if time_limit is None:
        return None
    value = check_real(time_limit, "time_limit")
    if value < 0:
        raise ValueError(f"time_limit must be None or a non-negative number of seconds, "
                         f"got {value}")
    return value


class _Clock:
    """The time left of a limit (``None``: no limit)."""

    def __init__(self, time_limit: float | None) -> None:
        self.start, self.limit = time.perf_counter(), time_limit

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self, share: float = 1.0) -> float | None:
        if self.limit is None:
            return None
        return max(0.0, (self.limit - self.elapsed()) * share)

    def over(self) -> bool:
        return self.limit is not None and self.elapsed() >= self.limit


# --------------------------------------------------------------------------- runners
def _exact(model: FactorGraph, *, time_limit: float | None, rng: Any) -> ApproxResult:
    """The exact marginals and ``log Z``. The engine is not interruptible, so with a
    ``time_limit`` it is planned first without the seconds-long order search (as
    :func:`_exact_fits` plans) and refused (``ValueError`` with the limit and the estimate)
    where that plan does not fit in memory or its estimated time in the limit, or in
    :data:`EXACT_ONE_STEP_SECONDS` for a shorter limit (a limit of 0 gives every method
    one step of its work: the exact answer of a tiny model is that step)."""
    if time_limit is not None:
        clock = _Clock(max(time_limit, EXACT_ONE_STEP_SECONDS))
        fits, why = _exact_fits(model, clock)
        if not fits:
            raise ValueError(f"method 'exact' cannot answer within time_limit = "
                             f"{time_limit:g} s ({why})")
    margs = exact.marginals(model)
    logz = exact.log_partition(model)
    return ApproxResult(margs, "exact", 0.0, True, logz, log_partition_bounds=(logz, logz),
                        confidence=1.0)


def _lbp(model: FactorGraph, *, time_limit: float | None, rng: Any, damping: float = 0.0,
         max_iter: int = 1000, tol: float = 1e-9) -> ApproxResult:
    r = loopy_bp(model, damping=damping, max_iter=max_iter, tol=tol, time_limit=time_limit)
    return ApproxResult(r.marginals, "lbp", 0.0, r.converged, r.log_partition,
                        iterations=r.iterations,
                        details={"damping": damping, "max_change": r.max_change})


def _mean_field(model: FactorGraph, *, time_limit: float | None, rng: Any,
                max_iter: int = 1000, tol: float = 1e-9, init: list | None = None
                ) -> ApproxResult:
    r = naive_mean_field(model, max_iter=max_iter, tol=tol, time_limit=time_limit, init=init)
    return ApproxResult(r.marginals, "mean-field", 0.0, r.converged, r.lower_bound,
                        iterations=r.iterations, details={"start": r.start})


def _wmb(model: FactorGraph, *, time_limit: float | None, rng: Any,
         ibound: int | None = None, max_iter: int = 20) -> ApproxResult:
    if time_limit is None or ibound is not None:
        r = wmb.weighted_mini_bucket(model, ibound=ibound, max_iter=max_iter,
                                     time_limit=time_limit)
    else:  # budgets grown within the limit: one default-budget pass can take minutes
        r = collections.deque(wmb.growing_passes(model, time_limit, max_iter=max_iter),
                              maxlen=1)[0]
    return ApproxResult(r.marginals, "wmb", 0.0, True, r.log_upper, iterations=r.iterations,
                        details={"ibound": r.ibound})


#: Samples of ``"importance"`` without ``n_samples`` or a ``time_limit``.
IMPORTANCE_SAMPLES = 10000


def _importance(model: FactorGraph, *, time_limit: float | None, rng: Any,
                n_samples: int | None = None, ibound: int | None = None,
                delta: float = importance.DELTA) -> ApproxResult:
    if n_samples is None and time_limit is None:
        n_samples = IMPORTANCE_SAMPLES
    clock = _Clock(time_limit)
    gen = as_rng(rng)
    proposal = importance.default_proposal(model, time_limit=time_limit, ibound=ibound)
    if not proposal.log_upper_bound > -math.inf:
        raise ValueError("model has Z = 0 (every state has zero weight, e.g. impossible "
                         "evidence): the proposal's upper bound on log Z is -inf")
    details = {"proposal": proposal.kind, "ibound": proposal.ibound,
               "log_upper_bound": proposal.log_upper_bound}
    if proposal.exact and not proposal.red.pruned:
        # a mini-bucket tree that splits no bucket is the exact elimination: it fits
        z = proposal.log_upper_bound
        return ApproxResult(exact.marginals(model), "importance", 0.0, True, z, n_samples=0,
                            log_partition_bounds=(z, z), confidence=1.0,
                            details={**details, "exact": True})
    counts: list = []
    runs = importance.importance_estimates(model, rng=gen, n_samples=n_samples,
                                           time_limit=clock.left(), proposal=proposal,
                                           delta=delta, marginals=counts)
    r = collections.deque(runs, maxlen=1)[0]
    margs = _weighted_marginals(model, counts)
    return ApproxResult(margs, "importance", 0.0, n_samples is None or r.n_samples >= n_samples,
                        r.log_partition, n_samples=r.n_samples,
                        log_partition_bounds=(r.lower, r.upper), confidence=1.0 - r.delta,
                        details={**details, "standard_error": r.standard_error, **r.details})


def _weighted_marginals(model: FactorGraph, counts: list) -> list[np.ndarray]:
    """The weighted counts normalized (uniform for a variable no factor holds, whose
    samples stay at 0, or when every weight was 0; an observed variable's counts are its
    point mass, its evidence being a factor)."""
    held = {v for s in model.scopes for v in s}
    out = []
    for v, c in enumerate(counts):
        total = float(c.sum())
        if total > 0 and v in held:
            out.append(c / total)
        else:
            out.append(np.full(c.size, 1.0 / c.size))
    return out


def _gibbs(model: FactorGraph, *, time_limit: float | None, rng: Any,
           n_samples: int = 10000, burn_in: int = 100, n_chains: int | None = None,
           thin: int = 1) -> ApproxResult:
    r = factor_gibbs.gibbs_marginals(
        model, n_samples=n_samples, burn_in=burn_in, n_chains=n_chains, thin=thin,
        time_limit=time_limit, rng=as_rng(rng))
    return ApproxResult(r["marginals"], "gibbs", 0.0,
                        r["n_samples"] >= n_samples and r["burn_in"] >= burn_in,
                        n_samples=r["n_samples"], standard_errors=r["standard_errors"],
                        details={"burn_in": r["burn_in"]})


def _smci(model: FactorGraph, *, time_limit: float | None, rng: Any,
          n_samples: int = 1000, burn_in: int = 100, estimator: str = "1-smci",
          n_chains: int | None = None, order: int | None = None) -> ApproxResult:
    if order is not None:  # deprecated: the estimator's one spelling is its name
        estimator = smci_factor_graph.method_name(order)
        warn_deprecated('approx.marginals(model, "smci", order=...)',
                        f'approx.marginals(model, "smci", estimator="{estimator}")')
    order = smci_factor_graph.order_of(estimator, "estimator")
    r = smci_factor_graph.smci_marginals(
        model, n_samples=n_samples, burn_in=burn_in, method=estimator, n_chains=n_chains,
        time_limit=time_limit, rng=as_rng(rng))
    return ApproxResult(r["marginals"], "smci", 0.0,
                        r["n_samples"] >= n_samples and r["order"] == order
                        and r["burn_in"] >= burn_in,
                        n_samples=r["n_samples"], standard_errors=r["standard_errors"],
                        details={"order": r["order"], "burn_in": r["burn_in"]})


def _exact_fits(model: FactorGraph, clock: _Clock) -> tuple[bool, str]:
    """Whether the exact engine's plan fits in memory and its estimated time in what is
    left of the limit, and why."""
    try:
        # the randomized order search takes seconds: only without a time limit
        plan = elimination.plan(model, search=clock.left() is None)
    except (ValueError, MemoryError) as err:
        return False, f"exact refused: {' '.join(str(err).split())}"
    seconds = plan.total_bytes / 8.0 / EXACT_ENTRIES_PER_SECOND
    left = clock.left()
    what = (f"exact plan: treewidth {plan.treewidth}, {plan.total_bytes / 8.0:.3g} table "
            f"entries, about {seconds:.3g} s")
    if left is not None and seconds > left:
        return False, what + f", more than the {left:.3g} s left"
    return True, what


def _auto(model: FactorGraph, *, time_limit: float | None, rng: Any) -> ApproxResult:
    clock = _Clock(time_limit)
    fits, why = _exact_fits(model, clock)
    tried: list[dict] = [{"step": "plan", "seconds": clock.elapsed(), "note": why}]

    def run(method: str, share: float, **options: Any) -> ApproxResult:
        t0 = time.perf_counter()
        # (the exact plan was held to the limit above: not planned and checked again)
        limit = None if method == "exact" else clock.left(share)
        res = METHODS[method](model, time_limit=limit, rng=rng, **options)
        tried.append({"step": method, **options, "seconds": time.perf_counter() - t0,
                      "converged": res.converged})
        return res

    if fits:
        res = run("exact", 1.0)
    else:
        res = run("lbp", 0.4)
        if not res.converged and not clock.over():
            damped = run("lbp", 0.5, damping=0.5)
            res = damped if damped.converged or not res.converged else res
        if not res.converged and not clock.over():
            res = run("wmb", 1.0)
    return replace(res, details={**res.details, "tried": tried})


#: Method name -> runner (see the module notes); ``"auto"`` chooses among the others.
METHODS: dict[str, Callable[..., ApproxResult]] = {
    "auto": _auto,
    "exact": _exact,
    "lbp": _lbp,
    "mean-field": _mean_field,
    "wmb": _wmb,
    "importance": _importance,
    "gibbs": _gibbs,
    "smci": _smci,
}


def available() -> list[str]:
    """The names of the methods, ``"auto"`` first.

    Returns
    -------
    list of str
        The keys of :data:`METHODS`, the ``method`` values :func:`marginals` takes.
    """
    return list(METHODS)


def _runner(method: Any, options: dict) -> Callable[..., ApproxResult]:
    """The runner of ``method``, after checking the method and the options it takes."""
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {available()}, got {method!r}")
    fn = METHODS[method]
    takes = [p.name for p in inspect.signature(fn).parameters.values()
             if p.kind == p.KEYWORD_ONLY and p.name not in ("time_limit", "rng")]
    unknown = sorted(set(options) - set(takes))
    if unknown:
        raise ValueError(f"method {method!r} does not take the option(s) {unknown}; it takes "
                         f"{takes or 'no options'}")
    return fn


# --------------------------------------------------------------------------- front
def marginals(model: FactorGraph | BoltzmannMachine, method: str = "auto", *,
              time_limit: float | None = None, rng: Any = None,
              evidence: Mapping[Any, Any] | None = None, **options: Any) -> ApproxResult:
    """The marginals of every variable by ``method`` (see the module notes).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.
    method : str, default "auto"
        One of :data:`METHODS`' names (:func:`available`).
    time_limit : float or None, default None
        Seconds the call may take (a method stops after the step that passes it).
    rng : numpy.random.Generator or int or None, default None
        The seed of the sampling methods (they refuse ``None``).
    evidence : mapping or None, default None
        ``{variable: value}``, indices or the model's names: the answer is that of the
        model conditioned on it (:func:`~mrflib.models.factor_graph.with_evidence`).
    **options
        The method's own options (``damping``, ``max_iter``, ``tol`` for ``"lbp"``;
        ``n_samples`` for sampling; ...); one it does not take is a ``ValueError``.

    Returns
    -------
    ApproxResult
    """
    fg = as_factor_graph(with_evidence(model, evidence))
    time_limit = _check_time_limit(time_limit)
    fn = _runner(method, options)
    if rng is not None:
        as_rng(rng)  # a bad rng is refused by every method, not only by the samplers
    start = time.perf_counter()
    with reported(fg):  # every method adds log-weights in float64 as the exact engines do
        res = fn(fg, time_limit=time_limit, rng=rng, **options)
    return replace(res, seconds=time.perf_counter() - start)


def log_partition(model: FactorGraph | BoltzmannMachine, method: str = "auto", *,
                  time_limit: float | None = None, rng: Any = None,
                  evidence: Mapping[Any, Any] | None = None, **options: Any) -> float:
    """``log Z`` as ``method`` estimates or bounds it: exact, the Bethe approximation
    (``"lbp"``), the mean-field lower bound, weighted mini-bucket's upper bound.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.
    method : str, default "auto"
        One of ``"exact"``, ``"lbp"``, ``"mean-field"``, ``"wmb"``, ``"importance"`` or
        ``"auto"`` (the default of every front): exact where its plan fits the
        ``time_limit``, else ``"importance"`` within the time left (see the module notes;
        :func:`marginals` with ``"importance"`` gives its bounds too).
    time_limit : float or None, default None
        As in :func:`marginals`.
    rng : numpy.random.Generator or int or None, default None
        As in :func:`marginals`.
    evidence : mapping or None, default None
        As in :func:`marginals`.
    **options
        The method's own options, as in :func:`marginals`.

    Returns
    -------
    float
        The estimate or bound of ``log Z``.

    Raises
    ------
    ValueError
        When the method gives no estimate of ``log Z`` (the samplers), and for bad
        arguments.
    """
    if method == "auto":
        res = _partition_auto(model, time_limit, rng, evidence, options)
    else:
        res = marginals(model, method, time_limit=time_limit, rng=rng, evidence=evidence,
                        **options)
    if res.log_partition is None:
        raise ValueError(f"method {res.method!r} gives no estimate of log Z; use one of "
                         "'exact', 'lbp', 'mean-field', 'wmb', 'importance', 'auto'")
    return float(res.log_partition)


def _partition_auto(model: FactorGraph | BoltzmannMachine, time_limit: Any, rng: Any,
                    evidence: Mapping[Any, Any] | None, options: dict) -> ApproxResult:
    """``log_partition``'s ``"auto"``: exact where it fits, else importance sampling."""
    if options:
        raise ValueError(f"method 'auto' of log_partition takes no options, got "
                         f"{sorted(options)}")
    fg = as_factor_graph(with_evidence(model, evidence))
    clock = _Clock(_check_time_limit(time_limit))
    if rng is not None:
        as_rng(rng)
    with reported(fg):
        fits, why = _exact_fits(fg, clock)
        if fits:
            return _exact(fg, time_limit=None, rng=None)
        if rng is None:
            raise ValueError(f"rng is None, but log Z must be estimated by importance "
                             f"sampling ({why}): give rng (a seed or a Generator)")
        return _importance(fg, time_limit=clock.left(), rng=rng,
                           n_samples=None if clock.limit is not None else IMPORTANCE_SAMPLES)


def log_partition_bounds(model: FactorGraph | BoltzmannMachine, *,
                         time_limit: float | None = None,
                         evidence: Mapping[Any, Any] | None = None) -> tuple[float, float]:
    """``(lower, upper)`` with ``lower <= log Z <= upper``.

    Exact where ``"auto"`` would solve the model exactly (then ``lower == upper``);
    otherwise the mean-field lower bound and weighted mini-bucket's upper bound. For a
    :class:`~mrflib.models.boltzmann.BoltzmannMachine` the lower end is also the third-order
    bound of Leisink and Kappen (:func:`mrflib.inference.bounds.log_partition_lower_bound`,
    their bound (5) around the mean-field solution), whichever is higher. A model with
    ``Z = 0`` gives ``(-inf, -inf)`` when a bound proves it. Past the precision limit
    (:mod:`mrflib.models.precision`) the bounds hold up to the rounding it names, and the
    call warns once.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.
    time_limit : float or None, default None
        Seconds the call may take, shared by its steps.
    evidence : mapping or None, default None
        As in :func:`marginals` (a Boltzmann machine with evidence is bounded as its
        conditioned factor graph).

    Returns
    -------
    tuple of (float, float)
        ``(lower, upper)`` with ``lower <= log Z <= upper``.
    """
    model = with_evidence(model, evidence)
    fg = as_factor_graph(model)
    clock = _Clock(_check_time_limit(time_limit))
    with reported(fg):
        return _bounds(model, fg, clock)


def _bounds(model: FactorGraph | BoltzmannMachine, fg: FactorGraph, clock: _Clock
            ) -> tuple[float, float]:
    fits, _ = _exact_fits(fg, clock)
    if fits:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # Z = 0: -inf is the answer
            z = exact.log_partition(fg)
        return z, z
    try:
        lower = naive_mean_field(fg, time_limit=clock.left(0.5)).lower_bound
    except ValueError as err:  # the model's constant factors prove Z = 0
        _reraise_unless_zero(err)
        return -math.inf, -math.inf
    if is_pairwise_binary(model):
        try:  # the third order only improves the bound: skipped when out of time
            lower = max(lower, bounds.log_partition_lower_bound(model, 3,
                                                                time_limit=clock.left(0.5)))
        except TimeoutError:
            pass
    try:
        upper = _wmb(fg, time_limit=clock.left(), rng=None).log_partition
    except ValueError as err:  # the bound is -inf: Z = 0
        _reraise_unless_zero(err)
        upper = -math.inf
    return float(lower), float(min(upper, np.inf))


def _reraise_unless_zero(err: ValueError) -> None:
    """Re-raise ``err`` unless it is an engine's proof that ``Z = 0`` (their messages say
    "Z = 0"): a refusal for memory or a bad argument is not a bound of ``-inf``."""
    if "Z = 0" not in str(err):
        raise err


# --------------------------------------------------------------------------- MAP
#: Perturbations of a local search given an ``rng`` (fewer when the ``time_limit`` comes
#: first).
MAP_PERTURBATIONS = 100
#: Share of the time left that ``"auto"`` gives the search before the mini-buckets.
MAP_SEARCH_SHARE = 0.2
#: Share of the time left that each run of ``"auto"``'s propagated moves on the reduced
#: parts takes (two runs: from each part's state by score, then from the best state).
MAP_MOVES_SHARE = 0.3
#: Share of the time left that ``"auto"``'s dual bound and branch and bound of the reduced
#: parts take.
MAP_DUAL_SHARE = 0.8
def _zero(how: str) -> ValueError:
    return ValueError(f"model has Z = 0 (every state has zero weight, e.g. impossible "
                      f"evidence): {how}")


def _improve(fg: FactorGraph, x: np.ndarray | None, clock: _Clock, rng: Any,
             share: float = 1.0) -> tuple[np.ndarray | None, float]:
    """``x`` repaired to positive weight (its values tried first; a search from scratch
    without it) and improved by local search (with ``rng``, by perturbations too), and the
    log-weight of the repaired state before the local search; ``(x, -inf)`` when the search
    does not end in time. A search proving ``Z = 0`` raises."""
    try:
        y = map_search.feasible_state(fg, start=x, deadline=clock.left(share))
    except TimeoutError:
        return x, -math.inf
    if y is None:
        raise _zero("no state of positive weight (proven by search)")
    start = float(fg.log_weight(y))
    left = clock.left(share)
    perturb = 0 if rng is None else MAP_PERTURBATIONS
    r = map_search.local_search(fg, y, deadline=left, perturbations=perturb, rng=rng)
    return r.state, start


def _map_exact(fg: FactorGraph, clock: _Clock, rng: Any, best: MapIncumbent) -> None:
    if clock.limit is not None:
        fits, why = _exact_fits(fg, clock)
        if not fits:
            raise ValueError(f"method 'exact' cannot answer within time_limit = "
                             f"{clock.limit:g} s ({why})")
    x, value = exact.map_assignment(fg)
    best.offer(x, "exact", value)
    best.upper = best.value  # the maximum itself


def _map_search(fg: FactorGraph, clock: _Clock, rng: Any, best: MapIncumbent,
                share: float = 1.0) -> None:
    x, start = _improve(fg, None, clock, rng, share)
    best.details.setdefault("start_log_weight", start)
    best.offer(x, "search")


def _map_mini_bucket(fg: FactorGraph, clock: _Clock, rng: Any, best: MapIncumbent) -> None:
    left = clock.left()
    try:
        runs = ([max_mini_bucket.max_mini_bucket(fg)] if left is None else
                max_mini_bucket.growing_max_mini_bucket(fg, left))
        ibounds = []
        for r in runs:
            ibounds.append(r.ibound)
            best.offer(None, "mini-bucket", r.upper_bound)
            if not r.upper_bound > -math.inf:
                raise _zero("the max mini-bucket bound is -inf")
            x, start = _improve(fg, r.state, clock, None, 0.5)
            best.details.setdefault("start_log_weight", start)
            best.offer(x, "mini-bucket")
            if best.done() or clock.over():
                break
    except TimeoutError:
        best.details["mini-bucket"] = "no run ended in time"
        return
    best.details["ibounds"] = ibounds


def _map_wmb(fg: FactorGraph, clock: _Clock, rng: Any, best: MapIncumbent) -> None:
    left = clock.left()
    if left is None:
        res = wmb.weighted_mini_bucket(fg)
    else:
        try:
            res = collections.deque(wmb.growing_passes(fg, left), maxlen=1)[0]
        except TimeoutError:
            best.details["wmb"] = "no pass ended in time"
            return
    decoded = np.array([int(np.argmax(p)) for p in res.marginals], dtype=np.int64)
    x, start = _improve(fg, decoded, clock, rng)
    best.details.update(start_log_weight=start, ibound=res.ibound)
    best.offer(x, "wmb", res.log_upper)


#: Bytes of the largest mini-bucket table of the branch and bound's heuristic.
MAP_SEARCH_MEMORY = 2**20


def _map_branch_and_bound(fg: FactorGraph, clock: _Clock, rng: Any, best: MapIncumbent) -> None:
    if best.state is None:
        _map_search(fg, clock, None, best, MAP_SEARCH_SHARE)
    r = max_mini_bucket.branch_and_bound(fg, memory=MAP_SEARCH_MEMORY, deadline=clock.left(),
                                         lower=best.value)
    best.details.update(nodes=r.nodes, complete=r.complete)
    best.offer(r.state, "branch-and-bound")
    if r.complete:  # nothing weighs more than the best state
        best.upper = min(best.upper, best.value)


def _map_auto(fg: FactorGraph, clock: _Clock, rng: Any, best: MapIncumbent) -> None:
    fits, why = _exact_fits(fg, clock)
    tried: list[dict] = [{"step": "plan", "seconds": clock.elapsed(), "note": why}]
    best.details["tried"] = tried
    steps_reduced: list[tuple[str, Callable[[], None]]] = []
    # without evidence nothing is fixed to propagate, and the reduction takes seconds
    if not fits and observed_states(fg):
        red = map_reduction.solve_reduced(fg, best, clock.left, MAP_SEARCH_SHARE)
        tried.append({"step": "reduction", "seconds": clock.elapsed(),
                      "log_weight": best.value, "upper_bound": best.upper})
        if red is None:  # solved on its parts
            return
        if red.fixed:  # one-variable moves are blocked: the parts' propagated moves
            steps_reduced = [("propagated moves on the reduced parts",
                              lambda: map_reduction.moves_on_parts(
                                  red, best, clock.left, MAP_MOVES_SHARE, rng))]
            if clock.limit is not None:  # without a limit it could take forever
                steps_reduced.append(("dual branch and bound on the reduced parts",
                                      lambda: map_reduction.dual_on_parts(
                                          red, best, clock.left, MAP_DUAL_SHARE)))
    steps: list[tuple[str, Callable[[], None]]] = [
        ("exact", lambda: _map_exact(fg, _Clock(None), rng, best))] if fits else [
        ("search", lambda: _map_search(fg, clock, None, best, MAP_SEARCH_SHARE)),
        ("mini-bucket", lambda: _map_mini_bucket(fg, clock, rng, best))]
    if not fits and clock.limit is not None:  # without a limit it could take forever
        steps.append(("branch-and-bound", lambda: _map_branch_and_bound(fg, clock, rng, best)))
    if not fits:
        steps[1:1] = steps_reduced
    if not fits and rng is not None:
        steps.append(("perturbations", lambda: best.offer(_improve(
            fg, best.state, clock, rng)[0], best.method + " and perturbations")))
    for name, step in steps:
        t0 = time.perf_counter()
        step()
        tried.append({"step": name, "seconds": time.perf_counter() - t0,
                      "log_weight": best.value, "upper_bound": best.upper})
        if best.done() or clock.over():
            break


def _map_toulbar2(fg: FactorGraph, clock: _Clock, rng: Any, best: MapIncumbent) -> None:
    left = clock.left()
    try:
        r = map_toulbar2.toulbar2_map(fg, time_limit=None if left is None else
                                      max(left, EXACT_ONE_STEP_SECONDS))
    except TimeoutError as err:
        best.details["toulbar2"] = str(err)
        return
    best.details.update(r.details)
    best.offer(r.state, "toulbar2", r.upper_bound)


#: MAP method name -> runner ``runner(fg, clock, rng, best)`` (see the module notes).
MAP_METHODS: dict[str, Callable[..., None]] = {
    "auto": _map_auto,
    "exact": _map_exact,
    "search": _map_search,
    "mini-bucket": _map_mini_bucket,
    "branch-and-bound": _map_branch_and_bound,
    "wmb": _map_wmb,
    "toulbar2": _map_toulbar2,
}


def map_assignment(model: FactorGraph | BoltzmannMachine, method: str = "auto", *,
                   time_limit: float | None = None, rng: Any = None,
                   evidence: Mapping | None = None) -> MapResult:
    """A most probable state of ``model`` by ``method``, with a bound (see the module notes).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.
    method : str, default "auto"
        One of :data:`MAP_METHODS`' names.
    time_limit : float or None, default None
        Seconds the call may take (a step in progress ends first; ``"exact"`` is refused
        when its plan does not fit).
    rng : numpy.random.Generator or int or None, default None
        The seed of the perturbations of the local search (``"search"``, ``"wmb"``,
        ``"auto"``); without it nothing is drawn and no perturbation is made.
    evidence : mapping or None, default None
        ``{variable: value}``, indices or the model's names: the answer is that of the
        model conditioned on it (:func:`~mrflib.models.factor_graph.with_evidence`).

    Returns
    -------
    MapResult
        The best state found (``±1`` spins of a Boltzmann machine), its log-weight, an
        upper bound on every state's, and whether they meet.

    Raises
    ------
    ValueError
        For a bad argument, and when the model is proven to have ``Z = 0`` (the message
        says "Z = 0").
    ImportError
        For ``"toulbar2"`` without ``pytoulbar2`` (``pip install "mrflib[mpe]"``).
    RuntimeError
        For ``"toulbar2"`` when toulbar2 fails before it finds a state.
    """
    fg = as_factor_graph(with_evidence(model, evidence))
    time_limit = _check_time_limit(time_limit)
    if not is_choice(method, MAP_METHODS):
        raise ValueError(f"method must be one of {list(MAP_METHODS)}, got {method!r}")
    gen = None if rng is None else as_rng(rng)
    start = time.perf_counter()
    clock = _Clock(time_limit)
    with reported(fg):
        best = MapIncumbent(fg, max_mini_bucket.trivial_upper_bound(fg))
        if not best.upper > -math.inf:
            raise _zero("a factor is zero everywhere once the evidence is clamped")
        MAP_METHODS[method](fg, clock, gen, best)
    state = best.state
    if state is None:  # no state of positive weight found in the time
        state = np.array([observed_states(fg).get(v, 0) for v in range(fg.n)],
                         dtype=np.int64)
        best.offer(state, "none found: the evidence and state 0 elsewhere")
    value = best.value
    if is_pairwise_binary(model):
        state = to_spins(state)
    optimal = max_mini_bucket.bound_meets(best.upper, value)
    return MapResult(state, value, max(best.upper, value), optimal, best.method,
                     time.perf_counter() - start, best.details)
