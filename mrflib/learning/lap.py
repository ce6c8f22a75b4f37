"""LAP: learning Markov random fields with exact local inference.

Mizrahi, de Freitas & Tenorio, *Efficient learning of practical Markov random fields
with exact inference* ({cite}`lap-mizrahi-defreitas-tenorio`). Node labels are
0-based here; the paper counts from 1.

The pieces (each in its own module, all re-exported here):

- :mod:`mrflib.learning.neighbourhoods`: the 1-neighbourhood ``A_Q`` of a clique (Definition 7),
  maximal cliques (section 4.5) and the path-connected pairs of a marginal (Definition 8,
  Proposition 9);
- :mod:`mrflib.learning.potentials`: normalized potentials of a discrete distribution by Möbius
  inversion (Definition 5, Theorem 6) and back;
- :func:`fit_ising`: LAP for Ising models (section 4.2): one auxiliary MRF per clique
  ``Q`` on ``A_Q`` whose parameters ``θ_Q`` are pulled out, all cliques fitted in one
  batched numba kernel, split over local processes or a Dask cluster;
- :mod:`mrflib.learning.lap_gaussian`, :func:`fit_gaussian`: LAP for Gaussian MRFs (section 6,
  eq. 13-14), together with the maximum-likelihood estimate under the same sparsity pattern
  (:func:`fit_gaussian_mle`, the baseline of Figure 8) and the data generators of
  Figure 7.

The exact-inference baseline of Figure 5 (pgmpy's junction tree) is a peer the book
compares with, not part of LAP: :func:`mrflib.repro.peers.junction_tree_moments`.

Why the batched Ising fit is the auxiliary-MRF maximum likelihood
-------------------------------------------------------------------
The auxiliary MRF of a clique ``Q`` is
``log f(x_A) = Σ_{i∈Q} b_i x_i + Σ_{e touches Q} J_e x_i x_j + g(x_{A\\Q}) - log Z``
with ``g`` a *fully general* function of ``x_{A\\Q}`` (it absorbs the unknown ``g`` of
eq. (6), every term inside ``A\\Q`` and the path-connected pairs ``H``). Write
``f(x_A) = f(x_{A\\Q}) f(x_Q | x_{A\\Q})``: the conditional depends on ``θ_Q`` only, and
because ``g`` is free the marginal ``f(x_{A\\Q})`` ranges over every positive
distribution whatever ``θ_Q`` is. The likelihood therefore factorizes, the marginal is
fitted by the empirical one and the maximum-likelihood ``θ_Q`` maximizes the
conditional likelihood ``Π_n f(x_Q^n | x_{A\\Q}^n; θ_Q)`` -- a convex problem over the
``2^|Q|`` states of ``x_Q`` for each distinct data pattern of ``x_A`` (at most
``2^|A_Q|``). :func:`fit_auxiliary` fits the auxiliary MRF literally (all ``2^|A_Q|``
states, ``g`` as a free table) and the tests check that both agree.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import numpy as np

from mrflib._support import progress as _progress
from mrflib._support.deprecation import warn_deprecated
from mrflib._support.executor import Executor
from mrflib._support.optimizers import Deadline, lbfgs
from mrflib._support.validation import check_positive, check_spins, is_choice
from mrflib.inference import exact
from mrflib.learning import _lap_kernels as _k
from mrflib.learning import _limits
from mrflib.learning._maximum_likelihood import mle_degeneracies
from mrflib.learning.lap_gaussian import (
    fit_gaussian,
    fit_gaussian_decomposable,
    fit_gaussian_mle,
    laplacian_precision,
    random_sparse_precision,
    sample_gaussian,
)
from mrflib.learning.neighbourhoods import (
    all_cliques,
    clique_list,
    maximal_cliques,
    one_neighbourhood,
    one_neighbourhoods,
    pack,
    path_connected_pairs,
)
from mrflib.learning.potentials import (
    distribution_from_potentials,
    ising_normalized_potentials,
    normalized_potentials,
)
from mrflib.models import graphs
from mrflib.models.boltzmann import BoltzmannMachine

__all__ = [
    "one_neighbourhood",
    "one_neighbourhoods",
    "maximal_cliques",
    "path_connected_pairs",
    "normalized_potentials",
    "distribution_from_potentials",
    "ising_normalized_potentials",
    "fit_auxiliary",
    "fit_ising",
    "fit_gaussian",
    "fit_gaussian_mle",
    "fit_gaussian_decomposable",
    "laplacian_precision",
    "random_sparse_precision",
    "sample_gaussian",
]

_RIDGE = 1e-10  # Levenberg damping of the Newton system (not part of the objective)
_MAX_CLIQUE = 12  # 2^12 states of x_Q per data pattern
_HUGE = 10.0  # |θ| beyond which an "optimum" is a likelihood still climbing to infinity


# ------------------------------------------------------------------- Ising: reference
_UNSET = object()  # return_info not passed


def _check_ising(data: Any, edges: Any, n: int | None) -> tuple[np.ndarray, graphs.Graph, int]:
    """Validated spins, the :class:`~mrflib.models.graphs.Graph` (an edge array or a ``Graph``) and
    ``n``."""
    if n is not None:
        n = check_positive(n, "n", integer=True)
    s = check_spins(data, n, "data")
    if s.shape[0] == 0:
        raise ValueError("data must contain at least one sample (got 0 rows)")
    n = s.shape[1]
    return s, graphs.as_graph(edges, n), n


def fit_auxiliary(
    data: Any, edges: Any, Q: Any, n: int | None = None, *, gtol: float = 1e-10
) -> dict[str, Any]:
    """Literal LAP step for one clique: the auxiliary MRF on ``A_Q``, fitted by exact ML.

    Plain numpy/scipy reference of :func:`fit_ising` (section 4.2, steps 1-3): the
    auxiliary MRF has the unary and pairwise terms that touch ``Q`` and a free table
    ``g(x_{A\\Q})`` (one parameter per pattern, the first fixed at 0); it is fitted by
    L-BFGS on the exact log-likelihood over all ``2^|A_Q|`` states of the empirical
    distribution of ``x_A``. Then ``θ_Q`` is pulled out.

    Parameters
    ----------
    data : array_like of int, shape (N, n)
        Spins in {-1, +1}, ``N >= 1`` rows.
    edges : array_like of int, shape (E, 2), or Graph
        The MRF's graph.
    Q : int or sequence of int
        The clique: distinct node indices below ``n``. Its 1-neighbourhood ``A_Q`` may
        have at most 16 nodes (all ``2^|A_Q|`` states are enumerated).
    n : int or None, default None
        Number of spins (``None``: ``data.shape[1]``).
    gtol : float, default 1e-10
        The L-BFGS tolerance on the max-abs gradient of the average negative
        log-likelihood.

    Returns
    -------
    dict
        ``A`` (the 1-neighbourhood), ``bias`` (b_i for i in Q, sorted), ``coupling``
        ({edge (i, j): J} for every edge touching Q, inner and boundary), ``loglik``
        (average) and ``result`` (scipy's OptimizeResult).
    """
    s, graph, n = _check_ising(data, edges, n)
    edges = graph.edges
    gtol = check_positive(gtol, "gtol")
    q = clique_list([Q], "Q")[0]
    if q[-1] >= n:
        raise ValueError(f"Q refers to node {int(q[-1])}, but n = {n}")
    A = graph.R_k(q, 1)  # the 1-neighbourhood A_Q of Definition 7
    if len(A) > 16:
        raise ValueError(f"the 1-neighbourhood has {len(A)} nodes; the reference fit "
                         "enumerates 2^|A_Q| states and is meant for |A_Q| <= 16")
    pos = {int(v): t for t, v in enumerate(A)}
    inQ = np.isin(edges, q)
    touch = np.flatnonzero(inQ[:, 0] | inQ[:, 1])
    X = exact.states(len(A)).astype(np.float64)  # (2^a, a)
    feats = [X[:, pos[int(i)]] for i in q]
    feats += [X[:, pos[int(edges[e, 0])]] * X[:, pos[int(edges[e, 1])]] for e in touch]
    F = np.stack(feats, axis=1)
    rest = [pos[int(v)] for v in A if v not in set(q.tolist())]
    bitsA = (X[:, rest] > 0).astype(np.int64)
    code = (bitsA << np.arange(len(rest))).sum(axis=1)  # pattern of x_{A\Q}
    G = np.zeros((len(X), 2 ** len(rest)))
    G[np.arange(len(X)), code] = 1.0
    G = G[:, 1:]
    M = np.hstack([F, G])
    p_emp = exact.empirical_distribution(s[:, A], len(A))
    target = p_emp @ M

    def negll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        e = M @ theta
        mx = e.max()
        w = np.exp(e - mx)
        z = w.sum()
        prob = w / z
        return mx + math.log(z) - theta @ target, prob @ M - target

    res = lbfgs(negll, np.zeros(M.shape[1]), max_iter=20_000, tol=gtol, memory=50)
    theta = res.x
    k = len(q)
    coupling = {(int(edges[e, 0]), int(edges[e, 1])): float(theta[k + t])
                for t, e in enumerate(touch)}
    return {"A": A, "bias": theta[:k].copy(), "coupling": coupling,
            "loglik": float(-res.fun), "result": res}


# --------------------------------------------------------------------- Ising: batched
def _fit_chunk(data_t, g, q_ptr, q_nodes, l2, tol, max_iter):
    return _k.fit_conditional(data_t, g, q_ptr, q_nodes, l2, tol, max_iter, _RIDGE)


def _chunks(q_ptr: np.ndarray, q_nodes: np.ndarray, n_chunks: int):
    """Split cliques round-robin into ``n_chunks`` packed sub-lists (with their indices)."""
    C = len(q_ptr) - 1
    out = []
    for r in range(n_chunks):
        idx = np.arange(r, C, n_chunks)
        if idx.size == 0:
            continue
        sizes = q_ptr[idx + 1] - q_ptr[idx]
        ptr = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(sizes, out=ptr[1:])
        take = np.concatenate([np.arange(q_ptr[c], q_ptr[c + 1]) for c in idx]) \
            if len(idx) < 64 else _ranges(q_ptr[idx], sizes)
        out.append((idx, ptr, q_nodes[take]))
    return out


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + k)`` for each (s, k), vectorized."""
    total = int(sizes.sum())
    offs = np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    return np.arange(total, dtype=np.int64) + offs


def _run_cliques(data_t, g, q_ptr, q_nodes, l2, tol, max_iter, n_jobs, scheduler):
    """Fit every clique: in this process, on ``n_jobs`` local processes or on a Dask
    cluster (:class:`mrflib._support.executor.Executor`), in chunks; results in clique order."""
    C = len(q_ptr) - 1
    args = (l2, tol, max_iter)
    jobs = n_jobs if n_jobs is not None else (os.cpu_count() or 1)
    if scheduler is None:
        work = C * min(data_t.shape[1], 256)
        if jobs <= 1 or (n_jobs is None and work < 4_000_000) or C < 2 * jobs:
            return _fit_chunk(data_t, g, q_ptr, q_nodes, *args)
    with Executor(jobs, scheduler) as ex:
        n_chunks = min(C, 2 * ex.slots) if scheduler is not None else jobs
        parts = _chunks(q_ptr, q_nodes, n_chunks)
        names = [f"LAP cliques {idx[0]}, {idx[0] + n_chunks}, ... ({len(idx)} cliques)"
                 for idx, _, _ in parts]
        results = ex.map(_fit_chunk, [(ptr, nodes, *args) for _, ptr, nodes in parts],
                         shared=(data_t, g), names=names)
    return _merge_chunks(q_ptr, q_nodes, parts, results)


def stopped_reason(deadline: Deadline, info: dict[str, Any]) -> str:
    """The stop reason of a LAP fit its time limit ended (the fits done, those not)."""
    done, total = info["done"], info["n_cliques"]
    return (deadline.reason(done, f"of {total} clique fits") + f"; the other {total - done} "
            "keep their parameters at zero: not a LAP estimate of the whole model")


def _merge_chunks(q_ptr, q_nodes, parts, results):
    """The chunks' ``(bias, inner, eid, n_iter, converged)`` back in clique order."""
    C = len(q_ptr) - 1
    k = q_ptr[1:] - q_ptr[:-1]
    i_ptr = np.zeros(C + 1, dtype=np.int64)
    np.cumsum(k * (k - 1) // 2, out=i_ptr[1:])
    bias = np.zeros(len(q_nodes))
    inner = np.zeros(int(i_ptr[-1]))
    eid = np.full(int(i_ptr[-1]), -1, dtype=np.int64)
    n_iter = np.zeros(C, dtype=np.int64)
    conv = np.zeros(C, dtype=bool)
    for (idx, _, _), (b, inn, e, it, cv) in zip(parts, results):
        bias[_ranges(q_ptr[idx], k[idx])] = b
        sizes = i_ptr[idx + 1] - i_ptr[idx]
        sel = _ranges(i_ptr[idx], sizes)
        inner[sel] = inn
        eid[sel] = e
        n_iter[idx] = it
        conv[idx] = cv
    return bias, inner, eid, n_iter, conv


def fit_ising(
    data: Any,
    edges: Any,
    n: int | None = None,
    *,
    cliques: str = "all",
    scheduler: Any = None,
    n_jobs: int | None = None,
    l2: float = 0.0,
    tol: float = 1e-10,
    max_iter: int = 100,
    return_info: Any = _UNSET,
) -> BoltzmannMachine:
    """LAP estimate of an Ising model / Boltzmann machine (section 4.2).

    For every clique ``Q``: (1) locate ``A_Q`` (Definition 7); (2) fit the auxiliary
    MRF on ``A_Q`` -- the unary and pairwise terms touching ``Q`` plus a fully general
    log-linear function of ``x_{A\\Q}`` -- by exact maximum likelihood (convex; damped
    Newton over the ``2^|Q|`` states of ``x_Q`` per distinct data pattern of ``x_A``,
    at most ``2^|A_Q|``; see the module docstring for why this is the auxiliary ML);
    (3) pull out ``θ_Q``. All cliques are fitted by one batched numba kernel.

    Parameters
    ----------
    data : array_like, shape (N, n)
        Spins in {-1, +1}.
    edges : array_like, shape (E, 2), or Graph
        The MRF's graph (2D grids, cubic lattices, chimera graphs, any graph with
        small 1-neighbourhoods).
    n : int or None, default None
        Number of spins (``None``: ``data.shape[1]``).
    cliques : {"all", "maximal"}, default "all"
        ``"all"``: every node and every edge is its own ``Q``; ``b_i`` comes from
        ``Q = {i}``, ``J_ij`` from ``Q = {i, j}``. ``"maximal"``: only the maximal
        cliques are fitted (section 4.5, Theorem 12) and a parameter shared by several
        maximal cliques (a bias, or an edge of two triangles) is their average.
    scheduler : str or distributed.Client or None, default None
        Run the clique fits on this Dask cluster (address or client). ``None``: local.
    n_jobs : int or None, default None
        Local worker processes. ``None``: all cores when the problem is large enough
        to pay for starting them, else in-process.
    l2 : float, default 0.0
        Optional ridge penalty ``l2/2 |θ_Q|^2`` on each averaged auxiliary
        log-likelihood (0: exact ML; use > 0 when the data separate some clique and
        its ML is infinite).
    tol : float, default 1e-10
        Stop a clique's Newton iteration (after one last step) when half the squared
        Newton decrement (the predicted gain of average log-likelihood) is below ``tol``.
    max_iter : int, default 100
        Newton iterations per clique.
    return_info : bool, optional
        Deprecated (not passed by default): ``learning.fit(data, edges, "lap")`` gives the
        machine with its convergence (a :class:`mrflib.learning.learners.Fit`). ``True``
        still returns ``(machine, {"iterations", "converged", "n_cliques", "cliques"})``.

    Returns
    -------
    BoltzmannMachine
        The estimate, on ``edges``; with ``return_info=True`` the pair
        ``(machine, info)``.

    Warns
    -----
    RuntimeWarning
        If a clique fit did not converge, or an estimate exceeds 10 in magnitude: data
        that separate a clique (e.g. two spins always equal) have no finite ML.
    """
    bm, info = _fit_ising(data, edges, n, cliques=cliques, scheduler=scheduler, n_jobs=n_jobs,
                          l2=l2, tol=tol, max_iter=max_iter)
    if return_info is _UNSET:
        return bm
    warn_deprecated("lap.fit_ising(..., return_info=...)",
                    'learning.fit(data, edges, "lap"), whose Fit has n_steps, converged and '
                    "stop_reason")
    return (bm, info) if return_info else bm


def _fit_ising(data, edges, n=None, *, cliques="all", scheduler=None, n_jobs=None, l2=0.0,
               tol=1e-10, max_iter=100,
               deadline: Deadline | None = None) -> tuple[BoltzmannMachine, dict[str, Any]]:
    """:func:`fit_ising` with its per-clique convergence ``{"iterations", "converged",
    "n_cliques", "cliques", "done"}`` (what :func:`mrflib.learning.learners.fit` reports).

    Under a time limit (``deadline``), or while progress is reported, the cliques are
    fitted in this process in batches with the clock polled between them; when the limit
    passes, the cliques not fitted (``done`` of ``n_cliques`` were) leave their
    parameters at zero, and a parameter shared by maximal cliques is the average over the
    fitted ones."""
    s, graph, n = _check_ising(data, edges, n)
    edges = graph.edges
    if not is_choice(cliques, ("all", "maximal")):
        raise ValueError(f"cliques must be 'all' or 'maximal', got {cliques!r}")
    l2 = check_positive(l2, "l2", allow_zero=True)
    tol = check_positive(tol, "tol")
    max_iter = check_positive(max_iter, "max_iter", integer=True)
    if n_jobs is not None:
        n_jobs = check_positive(n_jobs, "n_jobs", integer=True)
    E = len(edges)
    if cliques == "all":
        q_ptr, q_nodes = all_cliques(edges, n)
    else:
        mc = maximal_cliques(edges, n)
        big = max(len(c) for c in mc)
        if big > _MAX_CLIQUE:
            raise ValueError(f"edges has a maximal clique of {big} nodes; LAP here "
                             f"enumerates 2^|Q| states and allows |Q| <= {_MAX_CLIQUE}")
        q_ptr, q_nodes = pack([np.asarray(c, dtype=np.int64) for c in mc], n)
    data_t = np.ascontiguousarray(s.T)
    limited = deadline is not None and deadline.seconds is not None
    local = scheduler is None and (n_jobs is None or n_jobs == 1)
    if limited and not local:
        raise ValueError("time_limit is polled between LAP's clique fits in this process; "
                         "give n_jobs=1 (or None) and no scheduler, or no time_limit")
    C = len(q_ptr) - 1
    if local and (limited or _progress.active()):
        parts = []

        def fit_batch(start: int, stop: int) -> tuple:
            ptr = q_ptr[start:stop + 1] - q_ptr[start]
            nodes = q_nodes[q_ptr[start]:q_ptr[stop]]
            parts.append((np.arange(start, stop), ptr, nodes))
            return _fit_chunk(data_t, graph.structure, ptr, nodes, l2, tol, max_iter)

        results, done = _limits.run_in_batches(C, fit_batch, deadline, "fit lap (clique fits)")
        bias_q, inner, eid, n_iter, conv = _merge_chunks(q_ptr, q_nodes, parts, results)
    else:
        bias_q, inner, eid, n_iter, conv = _run_cliques(
            data_t, graph.structure, q_ptr, q_nodes, l2, tol, max_iter, n_jobs, scheduler)
        done = C
    sizes = q_ptr[1:] - q_ptr[:-1]
    if done < C:
        bias, coupling = _partial_parameters(q_ptr, q_nodes, bias_q, inner, eid, done, n, E,
                                             cliques)
    elif cliques == "all":
        bias = np.zeros(n)
        bias[q_nodes[:n]] = bias_q[:n]
        coupling = np.zeros(E)
        coupling[eid] = inner
    else:
        bw = np.bincount(q_nodes, minlength=n).astype(np.float64)
        bias = np.bincount(q_nodes, weights=bias_q, minlength=n) / bw
        ok = eid >= 0
        cw = np.bincount(eid[ok], minlength=E).astype(np.float64)
        if np.any(cw == 0):  # pragma: no cover - every edge is in a maximal clique
            raise RuntimeError("an edge is in no maximal clique")
        coupling = np.bincount(eid[ok], weights=inner[ok], minlength=E) / cw
    missing = _missing_estimate(s, edges) if l2 == 0 else []  # a ridge always has one
    bad = int(np.sum(~conv[:done]))
    if missing:
        warnings.warn("LAP: the estimate does not exist for this data (" + "; ".join(missing)
                      + "): some auxiliary fit has no finite ML; the fit is reported as not "
                      "converged (consider l2 > 0 or more data)", RuntimeWarning, stacklevel=3)
    elif bad:
        warnings.warn(f"LAP: {bad} of {done} clique fits did not converge in "
                      f"{max_iter} Newton steps (separable data has no finite ML; "
                      "consider l2 > 0 or more data)", RuntimeWarning, stacklevel=3)
    elif max(np.abs(bias).max(), np.abs(coupling).max(initial=0.0)) > _HUGE:
        warnings.warn(f"LAP: some estimates exceed {_HUGE} in magnitude: the data "
                      "separate a clique and its ML is at infinity (no finite ML); "
                      "consider l2 > 0 or more data", RuntimeWarning, stacklevel=3)
    bm = BoltzmannMachine(bias, edges, coupling)
    return bm, {"iterations": n_iter, "converged": conv, "n_cliques": len(sizes),
                "cliques": cliques, "missing": missing, "done": done}


def _partial_parameters(q_ptr, q_nodes, bias_q, inner, eid, done, n, E, cliques):
    """``(bias, coupling)`` from the first ``done`` cliques' fits: each parameter the
    average of its fitted cliques' estimates (with ``cliques="all"`` a bias comes from
    its node's clique only, the first ``n``), zero where no fitted clique holds it."""
    # cliques="all": the node cliques come first, one node each
    end = q_ptr[min(done, n)] if cliques == "all" else q_ptr[done]
    fitted_nodes = q_nodes[:end]
    bw = np.bincount(fitted_nodes, minlength=n).astype(np.float64)
    bsum = np.bincount(fitted_nodes, weights=bias_q[:end], minlength=n)
    bias = np.divide(bsum, bw, out=np.zeros(n), where=bw > 0)
    k = q_ptr[1:done + 1] - q_ptr[:done]
    pairs = int(np.sum(k * (k - 1) // 2))  # the inner pairs of the fitted cliques come first
    ok = eid[:pairs] >= 0
    cw = np.bincount(eid[:pairs][ok], minlength=E).astype(np.float64)
    csum = np.bincount(eid[:pairs][ok], weights=inner[:pairs][ok], minlength=E)
    coupling = np.divide(csum, cw, out=np.zeros(E), where=cw > 0)
    return bias, coupling


def _missing_estimate(s: np.ndarray, edges: np.ndarray) -> list[str]:
    """Why LAP's estimate does not exist for spins ``s`` (``[]`` when nothing says so):
    the maximum-likelihood checks with biases
    (:func:`mrflib.learning._maximum_likelihood.mle_degeneracies`).

    Each is the end of some auxiliary fit. A spin ``i`` constant in the data: the fit of
    any ``Q`` holding ``i`` must match ``<s_i> = ±1`` with ``E[P(s_i | x_{A\\Q})]``, which
    no finite ``θ`` reaches. An edge ``(i, j)`` never seen in a joint state ``(a, b)``:
    the fit of a ``Q`` holding ``i`` has the edge's whole table ``(s_i, s_i s_j)`` given
    ``s_j`` (and ``s_j``'s too when ``j`` is in ``Q``), so it must give ``(a, b)``
    conditional probability zero in the samples where ``s_j = b``, again at infinity.
    A multi-spin separation beyond these shows as a Newton fit that does not converge."""
    mean, pair = exact.sufficient_statistics(s, edges)
    return mle_degeneracies(mean, pair, edges, True, s.shape[0])


