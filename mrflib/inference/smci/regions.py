"""Spatial Monte Carlo integration (SMCI) on discrete factor graphs.

For a target region ``T`` (a variable, or a factor's scope) and a sum region
``T ⊆ A ⊆ V``, the GSMCI paper's eq. (8) estimates the marginal ``P(x_T)`` from samples
``s^(l)`` of the model as

.. math::

    m_T(A; S) = \\frac{1}{M} \\sum_{l=1}^M \\sum_{x_{A \\setminus T}}
        P(x_A \\mid s^{(l)}_{\\partial A}),
    \\qquad P(x_A \\mid x_{\\partial A}) \\propto \\exp \\sum_{C \\in F(A)} \\phi_C(x_C)

(its eq. (9)), where ``F(A)`` are the factors that meet ``A`` and ``∂A`` the other
variables of those factors (the Markov blanket of ``A``). ``order = k`` takes
``A = R_{k-1}(T)``, the target and its neighbours up to the ``(k-1)``-th (eq. (5), (7)):
1-SMCI sums the target exactly given its blanket, 2-SMCI the target and its first
neighbours given theirs; ``order = 0`` is plain Monte Carlo (the empirical frequencies).
Nothing here assumes ±1 variables or pairwise factors: the sums are over any number of
states and factors of any arity (the ±1 closed forms of the paper's eq. (14)-(15) and
(22)-(23) are the special case; :mod:`mrflib.inference.smci` has them).

The estimate is unbiased on exact samples, and Theorem 2 orders the asymptotic variances
(eq. (12)): ``v_T ≥ v(R_0) ≥ v(R_1) ≥ ...`` (plain MC first); :func:`asymptotic_variance`
computes them by enumeration on small models. Standard errors of an estimate are batch
means (``factor_gibbs.batch_ids``; i.i.d. rows by default).

The conditional of the sum region is summed per sample: all variables' 1-SMCI terms by one
numba kernel (:func:`mrflib.inference.sampling._chains_kernels.conditional_sums`); any other
region as a dense table over ``A`` for blocks of samples at once (factor slices gathered at
the sampled boundary); a region of more than :data:`MAX_DENSE_STATES` states by the exact
engine (:func:`mrflib.inference.exact.factor_marginals`) on the region conditioned on each
distinct boundary. These engines are :mod:`mrflib.inference.smci._region_sums`.
"""

from __future__ import annotations

import functools
import math
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from mrflib._support.deprecation import warn_deprecated
from mrflib._support.validation import as_rng, check_positive, require_memory
from mrflib.inference import exact
from mrflib.inference.exact import enumeration as factor_enumeration
from mrflib.inference.sampling import _chains_kernels as _k
from mrflib.inference.sampling import _pairwise
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.inference.smci import _pairwise_scopes
from mrflib.inference.smci._region_sums import dense_rho, einsum_plan, einsum_rho, exact_rho
from mrflib.models._checks import check_states
from mrflib.models.factor_graph import FactorGraph, all_states

__all__ = ["Estimate", "ScopePlan", "scope_plan", "estimate", "marginals", "factor_marginals",
           "asymptotic_variance", "smci_marginals", "sum_region", "order_of", "method_name",
           "MAX_DENSE_STATES", "MAX_KERNEL_STATES",
           "MAX_ORDER"]

#: Sum regions with more joint states are summed by the exact engine per boundary.
MAX_DENSE_STATES = 2**16
#: 1-SMCI of the factor scopes takes the numba kernel when no table has more states.
MAX_KERNEL_STATES = 2**12
#: Largest order accepted (the region grows with the order: the whole model, eventually).
MAX_ORDER = 8


class Estimate(NamedTuple):
    """SMCI estimates of the marginals of several targets.

    Attributes
    ----------
    values : list of numpy.ndarray
        ``values[j]``: the marginal of target ``j`` (shape ``(|X_i|,)`` for a variable, the
        factor's table shape for a scope).
    standard_errors : list of numpy.ndarray
        ``standard_errors[j]``: its batch-means standard error, same shape (``nan`` with
        fewer than two batches).
    """

    values: list
    standard_errors: list


def _check_model(model: Any) -> FactorGraph:
    if not isinstance(model, FactorGraph):
        raise TypeError(f"model must be a FactorGraph, got {type(model).__name__}")
    return model


def _check_order(order: Any) -> int:
    order = check_positive(order, "order", integer=True, allow_zero=True)
    if order > MAX_ORDER:
        raise ValueError(f"order must be at most {MAX_ORDER}, got {order}")
    return order


def order_of(method: Any, name: str = "method") -> int:
    """The SMCI order of an estimator named as everywhere in the library: ``"mci"`` (plain
    Monte Carlo, order 0) or ``"k-smci"`` (order ``k``, at most :data:`MAX_ORDER`).

    Parameters
    ----------
    method : str
        The estimator's name.
    name : str, default "method"
        The argument named in the error message.

    Returns
    -------
    int
        Its order ``k`` (0 for ``"mci"``).
    """
    m = re.fullmatch(r"([0-9]+)-smci", method) if isinstance(method, str) else None
    if method == "mci":
        return 0
    if m is None or not 1 <= int(m.group(1)) <= MAX_ORDER:
        raise ValueError(f"{name} must be 'mci' or 'k-smci' with 1 <= k <= {MAX_ORDER}, got "
                         f"{method!r}")
    return int(m.group(1))


def method_name(order: int) -> str:
    """The estimator's name of an SMCI order: ``"mci"`` for 0, ``"k-smci"`` otherwise.

    Parameters
    ----------
    order : int
        The order, ``0 <= order <=`` :data:`MAX_ORDER`.

    Returns
    -------
    str
        The name :func:`order_of` reads back.
    """
    order = _check_order(order)
    return "mci" if order == 0 else f"{order}-smci"


def _order_keyword(fn: Any) -> Any:
    """Accept the deprecated ``order=k`` as ``method="k-smci"``, with a FutureWarning."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "order" in kwargs:
            if "method" in kwargs:
                raise TypeError(f"{fn.__name__}() got both method= and its deprecated form "
                                "order=")
            method = method_name(kwargs.pop("order"))
            warn_deprecated(f"{fn.__name__}(order=...)", f'{fn.__name__}(method="{method}")')
            kwargs["method"] = method
        return fn(*args, **kwargs)

    return wrapper


@_order_keyword
def sum_region(model: FactorGraph, target: Sequence[int], method: str = "1-smci",
               variable_factors: list | None = None) -> tuple[tuple, tuple, list]:
    """``(A, ∂A, F(A))`` of ``target`` for the estimator ``method``: ``A = R_{k-1}(T)`` of
    k-SMCI (eq. (5)).

    Parameters
    ----------
    model : FactorGraph
    target : sequence of int
        The target ``T``'s variables (not checked).
    method : str, default "1-smci"
        ``"k-smci"`` (:func:`order_of`); ``"mci"`` gives ``A = ()``.
    variable_factors : list or None, default None
        ``model.variable_factors()``, when the caller has it; ``None``: computed here.

    Returns
    -------
    region : tuple of int
        ``A``: the target first, in its order, then the rest sorted.
    boundary : tuple of int
        Its blanket ``∂A``, sorted.
    factors : list of int
        The factors meeting ``A``, sorted.
    """
    model = _check_model(model)
    if isinstance(method, (int, np.integer)) and not isinstance(method, bool):
        warn_deprecated("sum_region(model, target, k)", f'sum_region(model, target, '
                        f'"{method_name(method)}")')
        method = method_name(method)
    return _sum_region(model, target, order_of(method), variable_factors)


def _sum_region(model: FactorGraph, target: Sequence[int], order: int,
                variable_factors: list | None = None) -> tuple[tuple, tuple, list]:
    vf = model.variable_factors() if variable_factors is None else variable_factors
    region = list(dict.fromkeys(int(v) for v in target)) if order > 0 else []
    inside = set(region)
    for _ in range(order - 1):
        grow = {v for i in inside for k in vf[i] for v in model.scopes[k]} - inside
        region += sorted(grow)
        inside |= grow
    factors = sorted({k for i in inside for k in vf[i]})
    boundary = sorted({v for k in factors for v in model.scopes[k]} - inside)
    return tuple(region), tuple(boundary), factors


def _rho(model: FactorGraph, x: np.ndarray, target: tuple, order: int,
         vf: list) -> np.ndarray:
    """``ρ_T(A; s^(l))`` of eq. (13) for each row, ``(M,) + X_T``: the estimator's terms."""
    card = model.cardinalities
    if not target:  # a constant factor's (empty) scope: probability one
        return np.ones(len(x))
    if order == 0:  # plain Monte Carlo: the indicator of the sampled x_T
        shape = tuple(int(card[v]) for v in target)
        out = np.zeros((len(x), math.prod(shape)))
        flat = np.ravel_multi_index(tuple(x[:, v] for v in target), shape) if target else 0
        out[np.arange(len(x)), flat] = 1.0
        return out.reshape((len(x),) + shape)
    region, boundary, factors = _sum_region(model, target, order, vf)
    if not factors:  # the target's variables are in no factor: uniform, whatever the rest
        shape = tuple(int(card[v]) for v in target)
        return np.full((len(x),) + shape, 1.0 / math.prod(shape))
    plan = einsum_plan(model, region, factors, len(target))
    if plan is not None and plan[2] <= MAX_DENSE_STATES:
        return einsum_rho(model, x, region, factors, len(target), plan)
    if math.prod(int(card[v]) for v in region) <= MAX_DENSE_STATES:
        return dense_rho(model, x, region, factors, len(target))
    return exact_rho(model, x, region, boundary, factors, len(target))


def _targets(model: FactorGraph, targets: Any) -> list[tuple]:
    if isinstance(targets, str):
        if targets == "variables":
            return [(i,) for i in range(model.n)]
        if targets == "factors":
            return list(model.scopes)
    raise ValueError(f"targets must be 'variables' or 'factors', got {targets!r}")


def _batches(N: int, n_chains: Any) -> tuple[np.ndarray, np.ndarray]:
    n_chains = N if n_chains is None else check_positive(n_chains, "n_chains", integer=True)
    batch = factor_gibbs.batch_ids(N, min(n_chains, N))
    return batch, np.bincount(batch)


@_order_keyword
def estimate(model: FactorGraph, samples: Any, method: str = "1-smci", *,
             targets: str = "variables", n_chains: int | None = None,
             plan: ScopePlan | None = None) -> Estimate:
    """SMCI estimates (eq. (7)-(8)) of the marginals of every variable or factor scope.

    Parameters
    ----------
    model : FactorGraph
        With evidence applied (:meth:`~mrflib.models.factor_graph.FactorGraph.condition`) if the
        samples hold it.
    samples : array_like of int, shape (M, n)
        States of positive weight (exact samples, or
        :func:`mrflib.inference.sampling.chains.gibbs`), at least one row.
    method : str, default "1-smci"
        The estimator, ``"k-smci"`` (the sum region is ``R_{k-1}(T)``, ``k`` at most
        :data:`MAX_ORDER`) or ``"mci"`` (plain Monte Carlo), as :func:`order_of` reads it.
        The deprecated ``order=k`` still works, with a ``FutureWarning``.
    targets : {"variables", "factors"}, default "variables"
        Single-variable marginals, or the marginal of each factor's scope (shaped like
        its table, axes in scope order).
    n_chains : int or None, default None
        Chains of the samples as laid out by :func:`mrflib.inference.sampling.chains.gibbs`, for the
        batch-means standard errors; ``None``: i.i.d. rows.
    plan : ScopePlan or None, default None
        :func:`scope_plan` of the model's structure, for many calls with new tables (1-SMCI
        of the factor scopes uses it; other estimates ignore it). ``None``: built here.

    Returns
    -------
    Estimate
        The estimates and their standard errors, one per target.
    """
    model = _check_model(model)
    order = order_of(method)
    x = check_states(samples, model.cardinalities, "samples")
    if len(x) == 0:
        raise ValueError("samples must hold at least one row")
    flat = factor_gibbs.flat_tables(model)
    _check_positive_weight(model, x, flat)
    batch, counts = _batches(len(x), n_chains)
    B = len(counts)
    want = _targets(model, targets)
    if order == 1 and targets == "variables":
        return _variables_order_one(model, x, batch, counts, flat)
    if order == 1 and max(map(len, model.scopes), default=0) <= 2 and targets == "factors":
        if plan is not None:
            _plan_for(model, plan)  # a plan given is checked, though these kernels need none
        return _factors_pairwise(model, x, batch, counts, flat)
    if order == 1 and max((t.size for t in model.log_tables),
                          default=0) <= MAX_KERNEL_STATES:
        return _factors_order_one(model, x, batch, counts, plan, flat)
    vf = model.variable_factors()
    values, errors = [], []
    for target in want:
        rho = _rho(model, x, tuple(target), order, vf)
        sums = np.zeros((B,) + rho.shape[1:])
        np.add.at(sums, batch, rho)
        m, s = factor_gibbs.batch_standard_errors(sums, counts)
        values.append(m)
        errors.append(s)
    return Estimate(values, errors)


def _check_positive_weight(model: FactorGraph, x: np.ndarray, flat: np.ndarray) -> None:
    """Refuse samples of zero weight (SMCI conditions on states of positive weight); a
    model whose tables ``flat`` hold no ``-inf`` gives every state positive weight, so
    only a model with zeros pays for the check (a learner calls this at every step)."""
    if not np.isneginf(flat).any():
        return
    with np.errstate(invalid="ignore"):
        zero = np.flatnonzero(model.log_weight(x) == -np.inf)
    if len(zero):
        raise ValueError(f"samples[{int(zero[0])}] has zero weight under the model "
                         f"({len(zero)} of {len(x)} rows): SMCI conditions on states of "
                         "positive weight")


def _variables_order_one(model: FactorGraph, x: np.ndarray, batch: np.ndarray,
                         counts: np.ndarray, tables: np.ndarray) -> Estimate:
    """1-SMCI of every variable at once: the conditionals ``P(x_i | s_rest)`` summed per
    batch by the numba kernel; the model's tables flattened in ``tables``."""
    card = np.ascontiguousarray(model.cardinalities, dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum(card)]).astype(np.int64)
    require_memory(8.0 * len(counts) * ptr[-1], f"the 1-SMCI sums of {model.n} variables")
    plan = factor_gibbs.pack(model, tables)
    sums, bad = _k.conditional_sums(np.ascontiguousarray(x), batch.astype(np.int64),
                                    len(counts), plan[0], *plan[1:], card, ptr)
    if bad >= 0:
        raise ValueError(f"samples[{bad}] has zero weight under the model (a variable's "
                         "conditional has no state of positive weight given the rest)")
    m, s = factor_gibbs.batch_standard_errors(sums, counts)
    return Estimate([m[ptr[i]:ptr[i + 1]] for i in range(model.n)],
                    [s[ptr[i]:ptr[i + 1]] for i in range(model.n)])


class ScopePlan(NamedTuple):
    """What 1-SMCI of every factor scope needs of a structure, built once by
    :func:`scope_plan` and reused by calls with new tables (a learner's steps).

    Attributes
    ----------
    scopes : tuple
        The model's scopes, which a plan must match.
    cardinalities : numpy.ndarray of int64
        The model's cardinalities, which a plan must match.
    targets : numpy.ndarray of int64
        The factors with a non-empty scope.
    fptr, fvars, fstride, offsets : numpy.ndarray of int64
        The packed scopes, as ``factor_gibbs.pack`` gives them.
    nptr, nfac : numpy.ndarray of int64
        The factors meeting target ``j``: ``nfac[nptr[j]:nptr[j+1]]``.
    nstride : numpy.ndarray of int64, shape (len(nfac), largest scope)
        The strides of target ``j``'s variables in those factors' tables (0 where a
        neighbour does not hold one).
    out_ptr : numpy.ndarray of int64
        Target ``j``'s states are at ``out_ptr[j]:out_ptr[j+1]`` of the joined output.
    """

    scopes: tuple
    cardinalities: np.ndarray
    targets: np.ndarray
    fptr: np.ndarray
    fvars: np.ndarray
    fstride: np.ndarray
    offsets: np.ndarray
    nptr: np.ndarray
    nfac: np.ndarray
    nstride: np.ndarray
    out_ptr: np.ndarray


def scope_plan(model: FactorGraph, packed: tuple | None = None) -> ScopePlan:
    """The :class:`ScopePlan` of ``model``'s structure (its tables are not used).

    Parameters
    ----------
    model : FactorGraph
    packed : tuple or None, default None
        The model's structure as the factor-graph sampler packs it
        (``mrflib.inference.sampling.chains.pack(model)``), when the caller has it: a
        learner that also samples packs the structure once for both. ``None``: packed
        here.

    Returns
    -------
    ScopePlan
        For :func:`estimate` and :func:`factor_marginals` on models of this structure.
    """
    model = _check_model(model)
    if packed is None:
        packed = factor_gibbs.pack(model)
    _, _, _, _, fptr, fvars, fstride, offsets = packed
    vf = model.variable_factors()
    targets = [k for k, s in enumerate(model.scopes) if s]
    width = max((len(s) for s in model.scopes), default=0)
    # each factor's strides by variable, once (not once per target that meets it)
    strides = [dict(zip(fvars[fptr[c]:fptr[c + 1]].tolist(),
                        fstride[fptr[c]:fptr[c + 1]].tolist()))
               for c in range(len(model.scopes))]
    neighbours = [sorted({c for v in model.scopes[k] for c in vf[v]}) for k in targets]
    nptr = np.concatenate([[0], np.cumsum([len(f) for f in neighbours])]).astype(np.int64)
    nfac = np.array([c for f in neighbours for c in f], dtype=np.int64)
    nstride = np.zeros((len(nfac), max(width, 1)), dtype=np.int64)
    rows = [[strides[c].get(v, 0) for v in model.scopes[k]]
            for k, f in zip(targets, neighbours) for c in f]
    for p, row in enumerate(rows):
        nstride[p, :len(row)] = row
    sizes = [model.log_tables[k].size for k in targets]
    out_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return ScopePlan(model.scopes, np.ascontiguousarray(model.cardinalities, dtype=np.int64),
                     np.array(targets, dtype=np.int64), fptr, fvars, fstride, offsets, nptr,
                     nfac, nstride, out_ptr)


def _plan_for(model: FactorGraph, plan: ScopePlan | None) -> ScopePlan:
    """``plan`` when it was made for ``model``'s structure, a new one when ``None``."""
    if plan is None:
        return scope_plan(model)
    if not isinstance(plan, ScopePlan):
        raise ValueError(f"plan must be a ScopePlan (smci_factor_graph.scope_plan), got "
                         f"{type(plan).__name__}")
    if plan.scopes != model.scopes or not np.array_equal(plan.cardinalities,
                                                         model.cardinalities):
        raise ValueError("plan must be made for the model's structure (the same scopes and "
                         "cardinalities)")
    return plan


def _factors_order_one(model: FactorGraph, x: np.ndarray, batch: np.ndarray,
                       counts: np.ndarray, plan: ScopePlan | None,
                       tables: np.ndarray) -> Estimate:
    """1-SMCI of every factor's scope at once: ``P(x_S | s_rest)`` over the states of
    ``S``, summed per batch by the numba kernel (scopes of at most
    :data:`MAX_KERNEL_STATES` states); the structure's arrays from ``plan``, the tables
    flattened in ``tables``."""
    plan = _plan_for(model, plan)
    out_ptr = plan.out_ptr
    m, s = factor_gibbs.batch_standard_errors(_scope_sums(tables, x, batch, counts, plan),
                                              counts)
    values = [np.ones(()) for _ in model.scopes]
    errors = [np.zeros(()) for _ in model.scopes]
    for j, k in enumerate(plan.targets.tolist()):
        shape = model.log_tables[k].shape
        values[k] = m[out_ptr[j]:out_ptr[j + 1]].reshape(shape)
        errors[k] = s[out_ptr[j]:out_ptr[j + 1]].reshape(shape)
    return Estimate(values, errors)


def _factors_pairwise(model: FactorGraph, x: np.ndarray, batch: np.ndarray,
                      counts: np.ndarray, tables: np.ndarray) -> Estimate:
    """1-SMCI of every factor's scope of a pairwise model by the pairwise kernels
    (:mod:`._pairwise_scopes`), summed per batch; the samples' weights are checked by the
    caller."""
    packed = factor_gibbs.pack(model, tables)
    card = np.ascontiguousarray(model.cardinalities, dtype=np.int64)
    sp = _pairwise_scopes.plan(_pairwise.structure(*packed[4:], card), *packed[4:])
    sums, _ = _pairwise_scopes.scope_sums(sp, tables, x, batch.astype(np.int64), len(counts))
    m, s = factor_gibbs.batch_standard_errors(sums, counts)
    offsets = np.concatenate([[0], np.cumsum([t.size for t in model.log_tables])])
    return Estimate([m[a:b].reshape(t.shape) for a, b, t in
                     zip(offsets[:-1], offsets[1:], model.log_tables)],
                    [s[a:b].reshape(t.shape) for a, b, t in
                     zip(offsets[:-1], offsets[1:], model.log_tables)])


def _scope_sums(tables: np.ndarray, x: np.ndarray, batch: np.ndarray, counts: np.ndarray,
                plan: ScopePlan) -> np.ndarray:
    """The kernel's per-batch sums of 1-SMCI of every target scope of ``plan``."""
    out_ptr = plan.out_ptr
    require_memory(8.0 * len(counts) * out_ptr[-1], f"the 1-SMCI sums of "
                   f"{len(plan.targets)} factor scopes")
    sizes = np.diff(out_ptr)
    sums, bad = _k.factor_conditional_sums(
        np.ascontiguousarray(x), batch.astype(np.int64), len(counts), tables, plan.fptr,
        plan.fvars, plan.fstride, plan.offsets, plan.cardinalities, plan.targets, plan.nptr,
        plan.nfac, plan.nstride, out_ptr, int(sizes.max()) if len(sizes) else 1)
    if bad >= 0:
        raise ValueError(f"samples[{bad}] has zero weight under the model (a factor scope's "
                         "conditional has no state of positive weight given the rest)")
    return sums


def flat_scope_marginals(tables: np.ndarray, samples: np.ndarray,
                         plan: ScopePlan) -> np.ndarray | None:
    """1-SMCI of every factor's scope, concatenated in factor order as the flat
    ``tables`` are (a learner's steps, which keep the tables flat).

    Parameters
    ----------
    tables : numpy.ndarray of float64
        The model's log-tables raveled and joined in factor order.
    samples : numpy.ndarray of int64, shape (M, n)
        Valid states (trusted, not checked).
    plan : ScopePlan
        :func:`scope_plan` of the model's structure (trusted).

    Returns
    -------
    numpy.ndarray of float64 or None
        The values of :func:`factor_marginals` with ``order=1``, raveled and joined, or
        ``None`` where that needs the model itself (a table with a zero, whose samples
        must be checked; a factor of empty scope; a scope beyond
        :data:`MAX_KERNEL_STATES`).
    """
    if (len(plan.targets) != len(plan.scopes) or np.isneginf(tables).any()
            or np.diff(plan.out_ptr).max(initial=0) > MAX_KERNEL_STATES):
        return None
    batch, counts = _batches(len(samples), None)
    return factor_gibbs.batch_mean(_scope_sums(tables, samples, batch, counts, plan), counts)


@_order_keyword
def marginals(model: FactorGraph, samples: Any, method: str = "1-smci", *,
              n_chains: int | None = None) -> list[np.ndarray]:
    """SMCI estimates of ``P(x_i)`` of every variable (see :func:`estimate`).

    Parameters
    ----------
    model : FactorGraph
        As in :func:`estimate`.
    samples : array_like of int, shape (M, n)
        As in :func:`estimate`.
    method : str, default "1-smci"
        The estimator, as in :func:`estimate`.
    n_chains : int or None, default None
        As in :func:`estimate`.

    Returns
    -------
    list of numpy.ndarray
        One ``(|X_i|,)`` array per variable.
    """
    return estimate(model, samples, method=method, n_chains=n_chains).values


@_order_keyword
def factor_marginals(model: FactorGraph, samples: Any, method: str = "1-smci", *,
                     n_chains: int | None = None, plan: ScopePlan | None = None
                     ) -> list[np.ndarray]:
    """SMCI estimates of ``P(x_{S_k})`` of every factor (see :func:`estimate`).

    Parameters
    ----------
    model : FactorGraph
        As in :func:`estimate`.
    samples : array_like of int, shape (M, n)
        As in :func:`estimate`.
    method : str, default "1-smci"
        The estimator, as in :func:`estimate`.
    n_chains : int or None, default None
        As in :func:`estimate`.
    plan : ScopePlan or None, default None
        As in :func:`estimate`.

    Returns
    -------
    list of numpy.ndarray
        One array per factor, shaped like ``model.log_tables[k]``.
    """
    return estimate(model, samples, method=method, targets="factors", n_chains=n_chains,
                    plan=plan).values


@_order_keyword
def asymptotic_variance(model: FactorGraph, method: str = "1-smci", *,
                        targets: str = "variables") -> list[np.ndarray]:
    """The per-sample variance ``M v(A)`` of eq. (12) of each estimated probability on
    i.i.d. exact samples, by enumeration of the model's states.

    ``M v(A) = Σ_x P(x) ρ_T(A; x_∂A)² - P(x_T)²``, ``ρ`` of eq. (13). Theorem 2 says it
    decreases with the order.

    Parameters
    ----------
    model : FactorGraph
        Small enough for its states to be enumerated in memory.
    method : str, default "1-smci"
        The estimator, as in :func:`estimate`; ``"mci"`` gives plain Monte Carlo's
        ``P(x_T)(1 - P(x_T))``.
    targets : {"variables", "factors"}, default "variables"
        As in :func:`estimate`.

    Returns
    -------
    list of numpy.ndarray
        One array per target, shaped like its marginal.

    Raises
    ------
    ValueError
        When the enumeration of the states does not fit in memory.
    """
    model = _check_model(model)
    order = order_of(method)
    require_memory(24.0 * math.prod(model.cardinalities.tolist()) * (model.n + 2),
                   "asymptotic_variance: the enumeration of the model's states")
    p = np.exp(factor_enumeration.joint_log_table(model)
               - exact.log_partition(model, method="enumerate"))
    x = all_states(model.cardinalities)
    w = np.ravel(p, order="F")  # all_states: variable 0 the fastest digit
    keep = w > 0
    x, w = x[keep], w[keep]
    vf = model.variable_factors()
    out = []
    for target in _targets(model, targets):
        rho = _rho(model, x, tuple(target), order, vf)
        ww = w.reshape((-1,) + (1,) * (rho.ndim - 1))
        mean = np.sum(ww * rho, axis=0)
        out.append(np.maximum(np.sum(ww * rho**2, axis=0) - mean**2, 0.0))
    return out


@_order_keyword
def smci_marginals(
    model: FactorGraph, method: str = "1-smci", *, n_samples: int, burn_in: int,
    n_chains: int | None = None, evidence: Mapping | None = None,
    time_limit: float | None = None, rng: Any,
) -> dict:
    """Marginals of a factor graph by k-SMCI on Gibbs samples
    (:func:`mrflib.inference.sampling.chains.gibbs`, ``n_chains`` chains), with batch-means
    standard errors.

    With ``time_limit`` the sampling takes about half of it (rounds of
    :func:`mrflib.inference.sampling.chains.gibbs_marginals`' kind), the sums the rest: for
    ``order`` 2 or more, the sums over the latest samples that fit in the time left
    (:func:`_rows_within`), or order 1 if not even one sample per chain fits.

    Parameters
    ----------
    model : FactorGraph
        The model, without the evidence (given as ``evidence``).
    method : str, default "1-smci"
        The estimator, as in :func:`estimate`.
    n_samples : int
        Gibbs samples wanted.
    burn_in : int
        Sweeps discarded before the first sample.
    n_chains : int or None, default None
        Chains, as in :func:`mrflib.inference.sampling.chains.gibbs`.
    evidence : mapping or None, default None
        ``{variable: value}``: observed variables, clamped in the chains and the sums.
    time_limit : float or None, default None
        Seconds the call may take; ``None``: no limit.
    rng : numpy.random.Generator or int
        The source of the chains' draws.

    Returns
    -------
    dict
        ``{"marginals", "standard_errors", "n_samples", "order", "burn_in", "seconds"}``
        (``n_samples`` and ``order`` as used by the sums, ``burn_in`` the sweeps run).
    """
    start = time.perf_counter()
    model = _check_model(model)
    order = order_of(method)
    rng = as_rng(rng)
    if time_limit is None:
        x = factor_gibbs.gibbs(model, n_samples, burn_in=burn_in, n_chains=n_chains,
                               evidence=evidence, rng=rng)
        chains, burned = (len(x) if n_chains is None else n_chains), burn_in
    else:
        limit = check_positive(time_limit, "time_limit", allow_zero=True)
        x, chains, burned = factor_gibbs.timed_gibbs(model, n_samples, burn_in=burn_in,
                                                     time_limit=0.5 * limit, rng=rng,
                                                     n_chains=n_chains, evidence=evidence,
                                                     start=start)
    cond = model.condition(evidence) if evidence else model
    if time_limit is not None and order >= 2:
        x, order = _rows_within(cond, x, chains, order,
                                limit - (time.perf_counter() - start))
    est = estimate(cond, x, method=method_name(order), n_chains=chains)
    return {"marginals": est.values, "standard_errors": est.standard_errors,
            "n_samples": len(x), "order": order, "burn_in": burned,
            "seconds": time.perf_counter() - start}


def _rows_within(model: FactorGraph, x: np.ndarray, chains: int, order: int, left: float
                 ) -> tuple[np.ndarray, int]:
    """The latest rows of ``x`` (whole sweeps of the ``chains`` chains, so the batch layout
    holds) whose order-``order`` sums fit in ``left`` seconds; ``(x, 1)`` when not even one
    sweep fits (order 1 is one kernel call, a small fraction of the sampling).

    The cost of a target's sums is ``a + b M`` for ``M`` rows (its region and contraction
    plan, then the rows): timed on up to eight targets over the last 4 and the last 32 rows,
    after one pass that warms both; a probe that outlasts half the time left gives order 1."""
    if left <= 0:
        return x, 1
    vf = model.variable_factors()
    probe = list(range(0, model.n, max(1, model.n // 8)))[:8]
    sizes = (min(len(x), 4), min(len(x), 32))
    t0 = time.perf_counter()

    def seconds(rows: int) -> float | None:
        t1 = time.perf_counter()
        for v in probe:
            _rho(model, x[-rows:], (v,), order, vf)
            if time.perf_counter() - t0 > 0.5 * left:
                return None
        return (time.perf_counter() - t1) * model.n / len(probe)

    times = [seconds(sizes[0]), seconds(sizes[0]), seconds(sizes[1])]
    if None in times:
        return x, 1
    _, small, big = times
    per_row = max(big - small, 0.0) / max(sizes[1] - sizes[0], 1)
    fixed = max(small - per_row * sizes[0], 0.0)
    # half of what is left after the probe: the probe's rows are cache-warm and few
    budget = 0.5 * (left - (time.perf_counter() - t0)) - fixed
    if budget <= 0:
        return x, 1
    rows = len(x) if per_row == 0 else int(min(len(x), budget / per_row))
    rows -= rows % chains
    return (x[-rows:], order) if rows >= chains else (x, 1)
