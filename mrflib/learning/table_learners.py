"""Learning discrete factor graphs: exact ML, pseudo-likelihood and LAP for any cliques.

:func:`mrflib.learning.learners.fit` comes here when its structure is a
:class:`~mrflib.models.factor_graph.FactorGraph`: the scopes and cardinalities define the family
(every factor a free table), the tables are ignored unless given as ``init``.

Parameters. A family of free tables is over-parameterized (a table over ``(i, j)`` can
trade a function of ``x_i`` with the table over ``(i,)``); the identifiable parameters
are the normalized potentials of Definition 5 of Mizrahi, de Freitas & Tenorio (state 0
the reference; unique by Theorem 6): for every clique ``B`` (a non-empty subset of a
scope) the entries ``V_B(x_B)`` with every ``x_i ≠ 0``. ``θ`` is their concatenation,
each clique stored in its owner's table (:func:`mrflib.learning.potentials.clique_owners`), and
every learner returns :func:`mrflib.learning.potentials.normalize`'d tables, so two fits compare
entry by entry. The tables are the linear map ``t = A θ`` (a sparse matrix).

``"mle"``
    Exact maximum likelihood: ``ℓ(θ) = Σ_k <p̂_k, t_k> - log Z``, gradient
    ``A^T (p̂ - p_θ)`` (data minus model factor marginals, eq. (5)), L-BFGS; ``log Z``
    and the model marginals from the exact engine (:func:`mrflib.inference.exact.factor_marginals`).
``"mple"``
    Pseudo-likelihood ``(1/N) Σ_μ Σ_i log P(x_i^μ | x_{-i}^μ)``: the data are compressed
    once into their distinct contexts (a variable and a state of its Markov blanket)
    with the counts of the variable's states, so an evaluation costs the same whatever
    N and each conditional is computed once per context (numba kernel); L-BFGS. With
    tied parameters, variables whose conditionals are the same function of ``φ`` share
    their contexts (:mod:`._contexts`), so an evaluation costs what the distinct tied
    conditionals cost, not what the variables do. A structure whose factors all hold at
    most two variables, untied, is evaluated row by row instead
    (:mod:`._pairwise_likelihood`): each conditional from the variable's unary row and one
    row per neighbour, its gradient accumulated into those rows, the variables in
    parallel, with memory linear in the model and in N; L-BFGS then runs on the centred,
    curvature-scaled parameters of :mod:`._centering` (the same optimum, judged by the
    same rule on ``θ``'s gradient, in less than half the iterations on Potts lattices).
``"lap"``
    LAP (section 4): for each factor ``Q``, its 1-neighbourhood ``A_Q`` (Definition 7),
    the auxiliary MRF on it (every factor meeting ``Q`` as a free table, and a free
    function ``g(x_{A\\Q})``), fitted by exact ML, then the normalized potentials of the
    cliques ``Q`` owns are pulled out. As in :mod:`mrflib.learning.lap`, the auxiliary ML of the
    potentials meeting ``Q`` is the conditional ML of ``x_Q`` given ``x_{A\\Q}`` (the
    free ``g`` fits the marginal of ``x_{A\\Q}``), a convex problem over the distinct
    data patterns of ``x_A``, solved by damped Newton. The fits run in numba, the
    factors of a chunk in one call: each factor's distinct patterns of ``x_{A\\Q}``
    counted once with the counts of the states of ``x_Q`` seen with them, the small model
    over ``x_Q`` enumerated (``_lap_factor_numpy`` is the plain numpy reference). A factor
    whose auxiliary model is pairwise (its scope and every potential meeting it of at
    most two variables) is fitted by :mod:`._pairwise_lap_kernels`: the Hessian summed by
    the base functions of ``x_Q`` and kept near the optimum (chord steps, the same
    optimum), warm-started (:mod:`._lap_warm_start`); for a pairwise model ``n_jobs``
    threads share these fits in this process (one copy of the data, nothing pickled; a
    time limit holds). The others go through the general kernel (:mod:`._factor_lap_kernels`,
    a sparse Hessian at every step) and, with ``n_jobs > 1``, local processes. With
    ``gauge="zero-sum"`` the
    potentials are pulled out in the zero-sum (ANOVA) gauge instead, which for two states
    is the ±1 parameterization of :func:`mrflib.learning.lap.fit_ising` (the two gauges give the
    same ML and PL estimates, but LAP takes each piece from a different auxiliary MRF, so
    its finite-sample estimate depends on the gauge; both are consistent).
"""

from __future__ import annotations

import functools
import math
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from mrflib._support import progress as _progress
from mrflib._support.executor import Executor
from mrflib._support.optimizers import Deadline, lbfgs
from mrflib._support.threads import single_blas
from mrflib._support.validation import check_positive, require_memory
from mrflib.inference.sampling.chains import flat_tables
from mrflib.learning import _centering, _limits
from mrflib.learning import _factor_lap_kernels as _flk
from mrflib.learning import _lap_warm_start as _warm
from mrflib.learning import _pairwise_lap_kernels as _plk
from mrflib.learning import _pairwise_likelihood as _ppl
from mrflib.learning import tying as _tying
from mrflib.learning._clique_groups import subset_positions
from mrflib.learning._contexts import Contexts
from mrflib.learning._layout import Layout, check_data, check_structure, data_marginals
from mrflib.learning._parameters import initial_parameters, parameter_map
from mrflib.learning.existence import check_existence, not_converged_if
from mrflib.learning.fit_result import Fit
from mrflib.learning.parameter_layout import data_factor_marginals
from mrflib.learning.potentials import (
    GAUGES,
    clique_owners,
    clique_term,
    normalize,
    tables_from_potentials,
)
from mrflib.models.factor_graph import FactorGraph, all_states

__all__ = [
    "METHODS",
    "STOCHASTIC_METHODS",
    "pseudo_log_likelihood",
    "data_factor_marginals",
]

METHODS = ("mle", "mple", "lap")
_RIDGE = 1e-10


def _inference(lay: Layout):
    """``flat tables -> (log Z, flat factor marginals)`` by the exact engine
    (:func:`mrflib.inference.exact.factor_marginals`, ``"auto"``: enumeration up to ``2^14``
    joint states, the junction tree beyond; on a 3x3 lattice of 4-state variables the tree
    is 13x faster than enumerating the 262,144 states)."""
    from mrflib.inference import exact

    def infer(flat: np.ndarray) -> tuple[float, np.ndarray]:
        tables = tuple(flat[lay.offsets[k]:lay.offsets[k + 1]].reshape(s)
                       for k, s in enumerate(lay.shapes))
        model = FactorGraph._from_checked(lay.card, lay.scopes, tables)
        marg = exact.factor_marginals(model)
        return float(exact.log_partition(model)), np.concatenate(
            [np.ravel(m) for m in marg] or [np.zeros(0)])

    return infer


# ----------------------------------------------------------------------------- results
def _result(method, lay, theta, steps, converged, reason, t0, params, gmax, options):
    model = lay.model(theta) if lay.one_term_per_entry else normalize(lay.model(theta))
    return Fit(model, method, "lbfgs" if method != "lap" else "lap", int(steps),
               bool(converged), time.perf_counter() - t0, params, gmax, None, options,
               stop_reason=reason, tied=_tying.tied_parameters(lay, theta))


def _lbfgs(objective, theta0, max_steps, tol, record, deadline=None, desc=None,
           precondition=None):
    """Minimize a convex ``objective -> (f, grad)`` by :func:`lbfgs` (preconditioned by
    ``precondition``, ``(M, M_inv)``, if given), then up to 50 quasi-Newton polish steps
    (counted in ``n_steps``, within what ``max_steps`` leaves; none once ``deadline``
    stopped it)."""
    trace = [theta0.copy()] if record else None
    # a preconditioned problem needs a short memory (a 64x64 q = 4 lattice: 57 steps with
    # 10 pairs, 59 with 30), and scipy's cost per step grows with it
    res = lbfgs(objective, theta0, max_iter=max_steps, tol=tol,
                memory=30 if precondition is None else 10,
                max_evals=4 * max_steps + 100, trace=trace,
                polish=50, deadline=deadline, desc=desc, precondition=precondition)
    params = np.array(trace) if record else None
    return res.x, int(res.nit), res.converged, res.stop_reason, params


def _ridge(objective, l2: float):
    """``objective`` plus ``l2/2 |θ|²`` (itself when ``l2 = 0``, so an unpenalized fit
    keeps its bits)."""
    if l2 == 0:
        return objective

    def penalized(theta):
        f, g = objective(theta)
        return f + 0.5 * l2 * float(theta @ theta), g + l2 * theta

    return penalized


def _extra_options(l2: float, tie: Any) -> dict:
    return ({"l2": l2} if l2 else {}) | ({"tie": tie} if tie is not None else {})


def _fit_mle(lay, x, theta0, max_steps, tol, record, t0, l2=0.0, tie=None,
             deadline=None) -> Any:
    d = data_marginals(lay, x)
    infer = _inference(lay)
    A, At = lay.A, lay.A.T.tocsr()

    def negll(theta):
        flat = A @ theta
        logz, m = infer(flat)
        return logz - d @ flat, At @ (m - d)

    missing = check_existence(lay, d, "mle", l2)
    theta, steps, conv, reason, params = _lbfgs(_ridge(negll, l2), theta0, max_steps, tol,
                                                record, deadline, "fit mle (L-BFGS)")
    conv, reason = not_converged_if(missing, "mle", conv, reason)
    return _result("mle", lay, theta, steps, conv, reason, t0, params, None,
                   {"max_steps": max_steps, "tol": tol} | _extra_options(l2, tie))


# --------------------------------------------------------------------- pseudo-likelihood
def pseudo_log_likelihood(model: FactorGraph, data: Any) -> float:
    """``(1/N) Σ_μ Σ_i log P(x_i^μ | x_{-i}^μ)`` from the data's distinct contexts
    (numba kernel; :func:`_pseudo_log_likelihood_numpy` is its per-sample reference).

    Parameters
    ----------
    model : FactorGraph
        The model whose conditionals ``P(x_i | x_{-i})`` are evaluated.
    data : array_like of int, shape (N, n)
        States ``0..cardinality-1`` of every variable, ``N >= 1`` rows.

    Returns
    -------
    float
        The pseudo-log-likelihood, averaged over the data rows.
    """
    model = check_structure(model, "model")
    x = check_data(data, model)
    lay = Layout(model)
    return float(_pl_objective(lay, x)(flat_tables(model), False)[0])


def _pseudo_log_likelihood_numpy(model: FactorGraph, data: Any) -> float:
    """Plain per-sample reference of :func:`pseudo_log_likelihood`: for every sample and
    variable, the log-weights of all values of ``x_i`` with the rest held."""
    model = check_structure(model, "model")
    x = check_data(data, model)
    total = 0.0
    for i in range(model.n):
        lw = []
        for v in range(int(model.cardinalities[i])):
            y = x.copy()
            y[:, i] = v
            lw.append(model.log_weight(y))
        lw = np.stack(lw, axis=1)
        mx = np.maximum(lw.max(axis=1, keepdims=True), -np.finfo(float).max)
        with np.errstate(divide="ignore", invalid="ignore"):  # rows of all zero weights
            lse = mx[:, 0] + np.log(np.exp(lw - mx).sum(axis=1))
            obs = lw[np.arange(len(x)), x[:, i]]
            total += np.sum(np.where(lse == -np.inf, -np.inf, obs - lse))
    return float(total / len(x))


def _pl_objective(lay, x) -> Any:
    """The pseudo-likelihood as a function of the flat tables: row by row on a pairwise
    structure without tied variables (:mod:`._pairwise_likelihood`), else over the data's
    distinct contexts, pooled over tied variables (:mod:`._contexts`)."""
    if not isinstance(lay, _tying.Tie):
        pl = _ppl.objective(lay.structure, np.ascontiguousarray(x, dtype=np.int64))
        if pl is not None:
            return pl
    return Contexts(lay, x)


def _mple_marginals(ctx, lay, x) -> np.ndarray:
    """The data's factor marginals for the existence test: from the pairwise
    pseudo-likelihood's context counts where it holds them all, else from the rows."""
    d = (ctx.data_marginals(int(lay.offsets[-1])) if isinstance(ctx, _ppl.PairwisePL)
         else None)
    return data_marginals(lay, x) if d is None else d


def _fit_mple(lay, x, theta0, max_steps, tol, record, t0, l2=0.0, tie=None,
             deadline=None) -> Any:
    ctx = _pl_objective(lay, x)
    # pooled contexts read only their representatives' tables, the rows ctx.rows of A
    A = lay.A if ctx.rows is None else lay.A[ctx.rows]
    At = A.T.tocsr()

    def negpl(theta):
        value, g = ctx(A @ theta)
        return -value, -(At @ g)

    missing = check_existence(lay, lambda: _mple_marginals(ctx, lay, x), "mple", l2)
    # the centred, scaled parameters of a pairwise family (its own module's docstring)
    pre = (_centering.centring(lay.terms, lay.term_offsets, lay.card, x, l2)
           if isinstance(ctx, _ppl.PairwisePL) else None)
    with single_blas():  # scipy's L-BFGS-B: BLAS-1 calls on long vectors, one thread
        theta, steps, conv, reason, params = _lbfgs(_ridge(negpl, l2), theta0, max_steps,
                                                    tol, record, deadline,
                                                    "fit mple (L-BFGS)", pre)
    conv, reason = not_converged_if(missing, "mple", conv, reason)
    return _result("mple", lay, theta, steps, conv, reason, t0, params, None,
                   {"max_steps": max_steps, "tol": tol} | _extra_options(l2, tie))


# ---------------------------------------------------------------------------------- LAP
def _lap_structure(card, scopes, k, touching):
    """The auxiliary model of factor ``k`` without the data: its scope ``Q``, the
    1-neighbourhood ``A_Q`` (Definition 7) of the ``touching`` factors (those meeting
    ``Q``), the potentials meeting ``Q`` (``terms``, each with the touching factor hosting
    it), their offsets in ``θ`` and the parameter count ``D``."""
    Q = scopes[k]
    qset = set(Q)
    A = sorted(set().union(*(scopes[c] for c in touching)))
    host: dict[tuple[int, ...], int] = {}
    for c in touching:
        # every clique of one factor is a non-empty subset of its scope (what
        # clique_owners([scope]) keys, without its validation per call: the scopes are
        # checked once per fit)
        s = sorted(scopes[c])
        for pos in subset_positions(len(s)):
            B = tuple(s[a] for a in pos)
            if qset & set(B):
                host.setdefault(B, c)
    terms = sorted(host, key=lambda B: (len(B), B))
    free = [math.prod(int(card[v]) - 1 for v in B) for B in terms]
    off = np.concatenate([[0], np.cumsum(free)]).astype(np.int64)
    return dict(Q=Q, A=A, terms=terms, host=host, off=off, free=free, D=int(off[-1]),
                touching=touching)


def _lap_setup_numpy(x, card, scopes, k):
    """The auxiliary problem of factor ``k`` (reference): its structure and, for each
    distinct data pattern of ``x_A`` and each state of ``x_Q``, the parameter index of
    every potential's entry (``D``, a dummy, where the entry is a reference zero)."""
    Q = scopes[k]
    qset = set(Q)
    st = _lap_structure(card, scopes, k, [c for c, s in enumerate(scopes) if qset & set(s)])
    A, terms, free, off, D = st["A"], st["terms"], st["free"], st["off"], st["D"]
    pos = {v: a for a, v in enumerate(A)}
    uniq, counts = np.unique(x[:, A], axis=0, return_counts=True)
    SQ = all_states(card[list(Q)])
    P, S = len(uniq), len(SQ)
    require_memory(8.0 * P * S * (len(A) + 2 * len(terms) + 4),
                   f"the auxiliary problem of factor {k} ({P} data patterns of its "
                   f"{len(A)}-variable 1-neighbourhood, {S} states of its scope)")
    X = np.repeat(uniq[:, None, :], S, axis=1)
    qpos = [pos[v] for v in Q]
    X[:, :, qpos] = SQ[None, :, :]
    idx = np.empty((P, S, len(terms)), dtype=np.int64)
    for t, B in enumerate(terms):
        if not free[t]:  # a variable of one state: the potential is its reference zero
            idx[:, :, t] = D
            continue
        xB = X[:, :, [pos[v] for v in B]]
        ok = np.all(xB > 0, axis=2)
        flat = np.ravel_multi_index(np.moveaxis(np.maximum(xB - 1, 0), 2, 0),
                                    [int(card[v]) - 1 for v in B])
        idx[:, :, t] = np.where(ok, off[t] + flat, D)
    obs = np.all(X[:, :, qpos] == uniq[:, None, qpos], axis=2).argmax(axis=1)
    return dict(st, idx=idx, obs=obs, w=counts / counts.sum())


def _lap_objective_numpy(prob, l2):
    """``evaluate(θ) -> (ℓ, ∇ℓ, ∇²ℓ)`` of the averaged conditional log-likelihood of
    ``x_Q`` given ``x_{A\\Q}`` of the auxiliary problem ``prob`` (reference)."""
    idx, obs, w, D = prob["idx"], prob["obs"], prob["w"], prob["D"]
    P, S, m = idx.shape
    require_memory(8.0 * P * S * (3 * D + 4) + 16.0 * D * D,
                   f"the Newton system of an auxiliary fit ({P} patterns, {S} states, "
                   f"{D} parameters)")
    F = np.zeros((P * S, D + 1))
    F[np.repeat(np.arange(P * S), m), idx.ravel()] = 1.0
    F = np.ascontiguousarray(F[:, :D])
    F3 = F.reshape(P, S, D)
    target = w @ F3[np.arange(P), obs]
    eye = np.eye(D)

    def evaluate(theta):
        sc = (F @ theta).reshape(P, S)
        mx = sc.max(axis=1, keepdims=True)
        lse = mx[:, 0] + np.log(np.exp(sc - mx).sum(axis=1))
        pr = np.exp(sc - lse[:, None])
        ll = w @ (sc[np.arange(P), obs] - lse) - 0.5 * l2 * theta @ theta
        r = (w[:, None] * pr).ravel()
        g = target - F.T @ r - l2 * theta
        M = np.einsum("ps,psd->pd", pr, F3)
        H = (M.T * w) @ M - (F.T * r) @ F - l2 * eye
        return ll, g, H

    return evaluate


def _lap_newton_numpy(prob, l2, tol, max_iter):
    """Damped Newton on the averaged conditional log-likelihood of ``x_Q`` given
    ``x_{A\\Q}`` (convex; reference); returns ``(θ, iterations, converged)``."""
    D = prob["D"]
    eye = np.eye(D)
    evaluate = _lap_objective_numpy(prob, l2)
    theta = np.zeros(D)
    ll, g, H = evaluate(theta)
    for it in range(max_iter):
        delta = np.linalg.solve(-H + _RIDGE * eye, g)
        dec = float(g @ delta)
        if dec < 2.0 * tol:
            return theta + delta, it, True
        step = 1.0
        for _ in range(40):
            new = theta + step * delta
            ll_new, g_new, H_new = evaluate(new)
            if ll_new >= ll + 1e-4 * step * dec:
                break
            step *= 0.5
        if ll_new < ll:  # no ascent possible at machine precision
            return theta, it + 1, dec < 1e-8
        theta, ll, g, H = new, ll_new, g_new, H_new
    return theta, max_iter, False


def _lap_potentials(card, scopes, st, theta, owned, gauge):
    """The normalized potentials of the cliques ``owned`` from the fitted auxiliary
    parameters ``θ`` of a structure ``st`` (:func:`_lap_structure`), in ``gauge``."""
    if gauge == "reference":
        return _reference_potentials(card, st, theta, owned)
    return _gauge_potentials(card, scopes, st, theta, owned, gauge)


def _gauge_potentials(card, scopes, st, theta, owned, gauge):
    """:func:`_lap_potentials` in any gauge: the touching factors' tables summed from
    ``θ``, then each owned clique's term of every table holding it."""
    tables = {c: np.zeros(tuple(int(card[v]) for v in scopes[c])) for c in st["touching"]}
    for t, B in enumerate(st["terms"]):
        c = st["host"][B]
        s = scopes[c]
        V = np.zeros(tuple(int(card[v]) for v in B))
        V[(slice(1, None),) * len(B)] = theta[st["off"][t]:st["off"][t + 1]].reshape(
            [int(card[v]) - 1 for v in B])
        axes = [s.index(v) for v in B]
        shape = [1] * len(s)
        for a in axes:
            shape[a] = int(card[s[a]])
        tables[c] += np.transpose(V, np.argsort(axes)).reshape(shape)
    out = {}
    for B in owned:
        V = 0.0
        for c, t in tables.items():
            s = scopes[c]
            if set(B) <= set(s):
                mask = [v in B for v in s]
                kept = [v for v in s if v in B]
                V = V + np.transpose(clique_term(t, mask, gauge),
                                     [kept.index(v) for v in B])
        out[B] = V
    return out


def _reference_potentials(card, st, theta, owned):
    """:func:`_lap_potentials` in the reference gauge, read off ``θ``: the auxiliary
    model's potentials are normalized at state 0 already, and each is hosted by one table,
    so the reference term of a clique is its own entries (the Möbius inversion of the
    host's table gives them back up to rounding, the other tables give zero)."""
    where = {B: t for t, B in enumerate(st["terms"])}
    out = {}
    for B in owned:
        t = where[B]
        V = np.zeros(tuple(int(card[v]) for v in B))
        V[(slice(1, None),) * len(B)] = theta[st["off"][t]:st["off"][t + 1]].reshape(
            [int(card[v]) - 1 for v in B])
        out[B] = V
    return out


def _lap_factor_numpy(x, card, scopes, k, owned, gauge, l2, tol, max_iter):
    """LAP for factor ``k`` in plain numpy (the reference of the numba path): fit its
    auxiliary MRF, pull out the potentials it owns; ``(potentials, iterations, ok)``."""
    prob = _lap_setup_numpy(x, card, scopes, k)
    theta, it, ok = _lap_newton_numpy(prob, l2, tol, max_iter)
    return _lap_potentials(card, scopes, prob, theta, owned, gauge), it, ok


def _lap_chunk_numpy(x, card, scopes, gauge, l2, tol, max_iter, jobs, warm=None):
    """:func:`_lap_chunk` in plain numpy: every fit starts at zero, as the reference of the
    fits themselves, so ``warm`` (the one-variable factors' terms) is taken and unused."""
    return [(k, *_lap_factor_numpy(x, card, scopes, k, owned, gauge, l2, tol, max_iter))
            for k, owned in jobs]


def _lap_pack(card, structs):
    """The kernels' flat description of the auxiliary models ``structs`` (local order
    ``Q`` then ``A_Q \\ Q``; see :mod:`._factor_lap_kernels`)."""
    l_vars, l_len, q_len, t_len, b_pos, b_len, t_off, d = [], [], [], [], [], [], [], []
    for st in structs:
        qset = set(st["Q"])
        L = list(st["Q"]) + [v for v in st["A"] if v not in qset]
        pos = {v: a for a, v in enumerate(L)}
        l_vars += L
        l_len.append(len(L))
        q_len.append(len(st["Q"]))
        t_len.append(len(st["terms"]))
        for t, B in enumerate(st["terms"]):
            b_pos += [pos[v] for v in B]
            b_len.append(len(B))
            t_off.append(int(st["off"][t]) if st["free"][t] else -1)
        d.append(st["D"])

    def ptr(sizes):
        return np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)

    arr = np.asarray
    return (ptr(l_len), arr(l_vars, np.int64), arr(q_len, np.int64), ptr(t_len),
            ptr(b_len), arr(b_pos, np.int64), arr(t_off, np.int64), ptr(d))


def _pairwise(st) -> bool:
    """Whether the auxiliary model ``st`` has a scope and potentials of at most two
    variables each (fitted by :mod:`._pairwise_lap_kernels`)."""
    return len(st["Q"]) <= 2 and all(len(B) <= 2 for B in st["terms"])


def _by_variable(x, card):
    """The data ``x (N, n)`` by variable ``(n, N)``, as the narrowest type that holds every
    state (the kernels are compiled per type), after refusing its memory."""
    small = int(np.max(card, initial=1)) <= 256
    N = x.shape[0]
    require_memory((1.0 if small else 8.0) * N * x.shape[1] + 40.0 * N,
                   f"the data by variable ({N} rows) and the counts of a factor's "
                   "1-neighbourhood patterns")
    return np.ascontiguousarray(x.T, dtype=np.uint8 if small else np.int64)


def _lap_fit_structures(x, card, ks, structs, l2, tol, max_iter, threads=1, x_t=None,
                        init=None):
    """The auxiliary fits of factors ``ks``, after refusing the worst one's memory:
    ``(θ per factor, iterations, converged)``. Each pairwise auxiliary model goes through
    :mod:`._pairwise_lap_kernels`, these factors dealt to ``threads`` threads (the kernel
    releases the GIL; a factor's fit is the same on any thread and in any batch), started
    at its ``init`` (per factor, ``None``: all at zero), the others through the general
    kernel from zero in one call. ``x_t``: :func:`_by_variable` of ``x`` when the caller
    holds it already."""
    card = np.ascontiguousarray(card, dtype=np.int64)
    N = x.shape[0]
    pairwise = np.array([_pairwise(st) for st in structs], dtype=bool)
    x_t = _by_variable(x, card) if x_t is None else x_t
    packed = _lap_pack(card, structs)
    l_ptr, l_vars, q_len, t_ptr, b_ptr, b_pos, t_off, d_ptr = packed
    P = _flk.count_patterns(x_t, card, l_ptr, l_vars, q_len)
    # codes and their histogram; weights, indices and counts per (pattern, state of x_Q);
    # the Hessian, the next one and the solve's copies
    S = [math.prod(int(card[v]) for v in st["Q"]) for st in structs]
    need = [8.0 * (5 * N + P[i] * (S[i] * (len(st["terms"]) + 3) + 2)
                   + 6 * (st["D"] + 6) ** 2) for i, st in enumerate(structs)]
    i = int(np.argmax(need))
    st = structs[i]
    require_memory(need[i] * max(1, threads),
                   f"the auxiliary problem of factor {ks[i]} ({P[i]} data patterns "
                   f"of the {len(st['A']) - len(st['Q'])} other variables of its "
                   f"1-neighbourhood, {S[i]} states of its scope, {st['D']} parameters)")
    K = len(structs)
    theta, iters, conv = np.zeros(d_ptr[K]), np.zeros(K, np.int64), np.zeros(K, bool)
    todo = np.flatnonzero(pairwise).astype(np.int64)
    start = np.zeros(d_ptr[K]) if init is None else np.concatenate([np.zeros(0), *init])
    if len(todo):
        threads = max(1, min(threads, len(todo)))

        def part(r):
            _plk.fit_factors(x_t, card, *packed, todo[r::threads], float(l2), float(tol),
                             int(max_iter), _RIDGE, start, theta, iters, conv)

        if threads == 1:
            part(0)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(part, range(threads)))
    rest = [i for i in range(K) if not pairwise[i]]
    if rest:
        g_ptr, g_vars, g_q, g_t, g_b, g_pos, g_off, g_d = _lap_pack(
            card, [structs[i] for i in rest])
        th, it, ok = _flk.fit_factors(x_t, card, g_ptr, g_vars, g_q, g_t, g_b, g_pos, g_off,
                                      g_d, float(l2), float(tol), int(max_iter), _RIDGE)
        for j, i in enumerate(rest):
            theta[d_ptr[i]:d_ptr[i + 1]] = th[g_d[j]:g_d[j + 1]]
            iters[i], conv[i] = it[j], ok[j]
    return [theta[d_ptr[i]:d_ptr[i + 1]] for i in range(K)], iters, conv


def _factors_of(scopes):
    """The factors meeting each variable, ``{v: [c, ...]}`` in factor order."""
    vf: dict[int, list[int]] = {}
    for c, s in enumerate(scopes):
        for v in s:
            vf.setdefault(v, []).append(c)
    return vf


def _lap_chunk(x, card, scopes, gauge, l2, tol, max_iter, jobs, threads=1, x_t=None,
               vf=None, warm=None):
    """LAP for the factors of ``jobs`` (``(k, cliques k owns)``): the auxiliary fits in
    the numba kernels, batched, pairwise ones on ``threads`` threads (a 1-neighbourhood
    whose joint states do not fit a 62-bit code goes through the numpy reference), the
    one-variable factors first and the others warm-started from theirs and from ``warm``
    (:func:`~._lap_warm_start.singles_first`); ``[(k, potentials, iterations, ok, warm
    terms)]``. ``x_t`` (the data by variable) and ``vf`` (:func:`_factors_of` the scopes),
    when the caller fits several chunks in this process (built per chunk, they would cost
    a pass over the whole model each)."""
    vf = _factors_of(scopes) if vf is None else vf
    structs = {k: _lap_structure(card, scopes, k, sorted({c for v in scopes[k] for c in vf[v]}))
               for k, _ in jobs}
    fits = [k for k, _ in jobs
            if np.sum(np.log2(card[structs[k]["A"]].astype(np.float64))) < 62]

    def fit(ks, init):
        return _lap_fit_structures(x, card, ks, [structs[k] for k in ks], l2, tol, max_iter,
                                   threads, x_t, init)

    out = _warm.singles_first(fit, scopes, structs, fits, warm, _pairwise)
    results = []
    for k, owned in jobs:
        if k in out:
            theta, it, ok, terms = out[k]
            results.append((k, _lap_potentials(card, scopes, structs[k], theta, owned, gauge),
                            it, ok, terms))
        else:
            results.append((k, *_lap_factor_numpy(x, card, scopes, k, owned, gauge, l2,
                                                    tol, max_iter), None))
    return results


def _fit_lap(lay, x, max_steps, tol, options, t0, reference: bool = False,
             deadline: Deadline | None = None) -> Any:
    """LAP over every factor owning a clique, each list of factors fitted by
    :func:`_lap_chunk` (with ``reference``, :func:`_lap_chunk_numpy`). Under a time limit
    (``deadline``), or while progress is reported, the factors are fitted in this process
    in batches with the clock polled between them; the factors not reached when it passes
    keep their potentials at zero."""
    gauge = options.get("gauge", "reference")
    if gauge not in GAUGES:
        raise ValueError(f"gauge must be one of {GAUGES}, got {gauge!r}")
    l2 = check_positive(options.get("l2", 0.0), "l2", allow_zero=True)
    n_jobs = options.get("n_jobs")
    n_jobs = 1 if n_jobs is None else check_positive(n_jobs, "n_jobs", integer=True)
    scheduler = options.get("scheduler")
    owners = clique_owners(lay.scopes)
    owned: dict[int, list] = {}
    for B, k in owners.items():
        owned.setdefault(k, []).append(B)
    # the one-variable factors first: the others' fits start from theirs (_lap_chunk)
    jobs = sorted(owned.items(), key=lambda job: (len(lay.scopes[job[0]]) > 1, job[0]))
    shared = (x, lay.card, lay.scopes, gauge, l2, tol, max_steps)
    limited = deadline is not None and deadline.seconds is not None
    # pairwise fits run on threads in this process: one copy of the data, nothing pickled
    threaded = (not reference and scheduler is None and n_jobs > 1
                and max(map(len, lay.scopes), default=0) <= 2)
    local = (n_jobs == 1 and scheduler is None) or len(jobs) < 2 or threaded
    chunk = _lap_chunk_numpy if reference else _lap_chunk
    if not reference and local:  # the batches share one copy of the data by variable
        chunk = functools.partial(_lap_chunk, x_t=_by_variable(x, lay.card),
                                  vf=_factors_of(lay.scopes),
                                  threads=min(n_jobs, os.cpu_count() or 1) if threaded else 1)
    if limited and not local:
        raise ValueError("time_limit is polled between LAP's auxiliary fits in this "
                         "process; give n_jobs=1 and no scheduler, or no time_limit")
    done = len(jobs)
    warm: dict = {}
    keep_warm = functools.partial(_warm.keep_warm, warm, lay.scopes)
    if local and (limited or _progress.active()):
        parts, done = _limits.run_in_batches(
            len(jobs), lambda start, stop: keep_warm(chunk(*shared, jobs[start:stop], warm=warm)),
            deadline, "fit lap (auxiliary fits)")
        results = [r for part in parts for r in part]
    elif local:
        results = chunk(*shared, jobs)
    else:
        with Executor(min(n_jobs, os.cpu_count() or 1) if scheduler is None else n_jobs,
                      scheduler) as ex:
            results = _warm.map_singles_first(ex, chunk, jobs, lay.scopes, shared, warm)
    potentials, iters, conv = {}, [], []
    for _, V, it, ok, *_ in results:
        potentials.update(V)
        iters.append(it)
        conv.append(ok)
    model = normalize(tables_from_potentials(lay.card, lay.scopes, potentials))
    bad = len(conv) - int(np.sum(conv))
    # a ridge (l2 > 0) gives every auxiliary fit a finite optimum
    missing = check_existence(lay, lambda: data_marginals(lay, x), "lap", l2)
    if bad and not missing:
        warnings.warn(f"LAP: {bad} of {len(conv)} auxiliary fits did not converge in "
                      f"{max_steps} Newton steps (data that separate a clique have no "
                      "finite ML; consider l2 > 0 or more data)", RuntimeWarning, stacklevel=4)
    reason = (f"converged: every one of {len(conv)} auxiliary fits" if not bad
              else f"{bad} of {len(conv)} auxiliary fits reached max_steps")
    converged, reason = not_converged_if(missing, "lap", not bad, reason)
    if done < len(jobs):
        converged = False
        reason = (deadline.reason(done, f"of {len(jobs)} auxiliary fits")
                  + f"; the other {len(jobs) - done} factors keep their potentials at zero: "
                  "not a LAP estimate of the whole model")
    theta = lay.theta(model)
    return Fit(model, "lap", "lap", int(max(iters, default=0)), converged,
               time.perf_counter() - t0, theta[None, :], None, None,
               {"gauge": gauge, "l2": l2, "n_jobs": n_jobs, "max_steps": max_steps,
                "tol": tol}, stop_reason=reason)


def _lap_reference(data: Any, structure: FactorGraph, **options: Any) -> Any:
    """``learning.fit(data, structure, "lap", **options)`` on the plain numpy path (every
    auxiliary fit by :func:`_lap_factor_numpy`): the reference of tests and benchmarks."""
    t0 = time.perf_counter()
    x = check_data(data, check_structure(structure))
    return _fit_lap(Layout(structure), x, 100, 1e-12, options, t0, reference=True)


# ---------------------------------------------------------------------------------- fit
#: The stochastic learners, in :mod:`mrflib.learning.stochastic_learning`.
STOCHASTIC_METHODS = ("1-smci", "cd", "pcd", "smci-pcd")
_OPTIONS = {"mle": frozenset({"l2", "tie"}), "mple": frozenset({"l2", "tie"}),
            "lap": frozenset({"gauge", "l2", "n_jobs", "scheduler"})}


def fit(
    data: Any,
    structure: FactorGraph,
    method: str,
    *,
    max_steps: int | None = None,
    tol: float | None = None,
    init: Any = None,
    record: bool = True,
    rng: Any = None,
    learning_rate: float | None = None,
    progress: bool | None = None,
    time_limit: float | None = None,
    **options: Any,
) -> Any:
    """Learn the free tables of ``structure`` from integer data (see the module docstring).

    Parameters
    ----------
    data : array_like of int, shape (N, n)
        States ``0..cardinality-1`` of every variable, ``N >= 1`` rows.
    structure : FactorGraph
        Its cardinalities and scopes define the family; its tables are ignored.
    method : {"mle", "mple", "lap", "1-smci", "cd", "pcd", "smci-pcd"}
        The last four are the stochastic-gradient learners of
        :func:`mrflib.learning.stochastic_learning.fit`, which takes ``rng`` and
        ``learning_rate`` (ignored by the others).
    max_steps : int or None, default None
        L-BFGS iterations (``None``: 10000); for LAP, Newton steps per auxiliary fit
        (``None``: 100); for the stochastic learners, see
        :func:`mrflib.learning.stochastic_learning.fit`.
    tol : float or None, default None
        Stop when ``max |gradient|`` of the averaged objective is below ``tol`` (``None``:
        1e-8); for LAP, when half the squared Newton decrement is (``None``: 1e-12).
    init : FactorGraph or array or None, default None
        Initial tables (same scopes and cardinalities; MLE and MPLE), or with ``tie`` the
        initial ``φ``. ``None``: all zeros. LAP takes none.
    record : bool, default True
        Keep the parameters ``θ`` (normalized potentials, or ``φ`` with ``tie``) of every
        iteration.
    rng : Generator or int or None, default None
        The draws of the stochastic learners (passed to
        :func:`mrflib.learning.stochastic_learning.fit`); ignored by the others.
    learning_rate : float or None, default None
        ``η`` of the stochastic learners (``None``: 0.2); ignored by the others.
    progress : bool or None, default None
        The ±1 learners' rule (:func:`mrflib.learning.learners.fit`): a bar on a terminal,
        else a line on stderr every 5 s of a long fit.
    time_limit : float or None, default None
        Seconds the fit may run (``None``: no limit; 0: one step). MLE and MPLE stop after
        the L-BFGS iteration in progress with its parameters; LAP polls it between its
        auxiliary fits and returns the factors fitted so far with the others' potentials
        at zero (the stop reason says how many): not a LAP estimate of the whole model.
        Either way ``converged`` is false and ``stop_reason`` starts ``"time limit of"``.
    **options
        ``l2``: a ridge ``l2/2 |θ|²`` added to the averaged negative objective (MLE, MPLE;
        on ``φ`` with ``tie``), default 0. ``tie``: a :class:`mrflib.learning.tying.Tie`
        (or a sequence of group labels, one per factor) whose parameters ``φ`` are fitted
        instead of every table (MLE and MPLE; LAP estimates each factor's potentials from
        its own auxiliary model and has no tied form). LAP only: ``gauge`` ("reference",
        Definition 5, default; or "zero-sum"), ``l2`` (ridge on each auxiliary fit),
        ``n_jobs`` (default 1: threads in this process for a pairwise structure, local
        processes otherwise), ``scheduler`` (a Dask cluster).

    Returns
    -------
    mrflib.learning.learners.Fit
        ``model`` a :class:`~mrflib.models.factor_graph.FactorGraph` with normalized tables
        (:func:`mrflib.learning.potentials.normalize`); ``params`` the ``θ`` history.
    """
    t0 = time.perf_counter()
    structure = check_structure(structure)
    if isinstance(method, str) and method in STOCHASTIC_METHODS:
        from mrflib.learning import stochastic_learning

        return stochastic_learning.fit(data, structure, method, max_steps=max_steps, tol=tol,
                                       init=init, record=record, rng=rng,
                                       learning_rate=learning_rate, progress=progress,
                                       time_limit=time_limit, **options)
    deadline = _limits.deadline(time_limit)
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError("method for a FactorGraph structure must be one of "
                         f"{METHODS + STOCHASTIC_METHODS}, got {method!r}")
    if method == "lap" and "tie" in options:
        raise ValueError("method 'lap' takes no tie: it estimates each factor's potentials "
                         "from its own auxiliary model; fit tied parameters by 'mle', "
                         "'mple' or a stochastic learner")
    unknown = set(options) - _OPTIONS[method]
    if unknown:
        raise ValueError(f"unknown options {sorted(unknown)} for method {method!r} on a "
                         "FactorGraph")
    x = check_data(data, structure)
    if method == "lap":
        lay = Layout(structure)
        if init is not None:
            raise ValueError("method 'lap' has no initial parameters; init must be None")
        max_steps = check_positive(100 if max_steps is None else max_steps, "max_steps",
                                   integer=True)
        tol = check_positive(1e-12 if tol is None else tol, "tol")
        with _limits.fit_reporting(progress):
            return _fit_lap(lay, x, max_steps, tol, options, t0, deadline=deadline)
    max_steps = check_positive(10_000 if max_steps is None else max_steps, "max_steps",
                               integer=True)
    tol = check_positive(1e-8 if tol is None else tol, "tol")
    l2 = check_positive(options.get("l2", 0.0), "l2", allow_zero=True)
    lay = parameter_map(structure, options.get("tie"))
    theta0 = initial_parameters(lay, structure, init)
    run = _fit_mle if method == "mle" else _fit_mple
    with _limits.fit_reporting(progress):
        return run(lay, x, theta0, max_steps, tol, bool(record), t0, l2, options.get("tie"),
                   deadline)
