"""The batched LAP fit of an Ising model: every clique's auxiliary MRF by Newton in one numba
kernel, split over local processes or a Dask cluster, under an optional time limit.

:func:`fit_ising_info` is :func:`mrflib.learning.lap.fit_ising` (where LAP and the reason the
batched conditional fit is the auxiliary-MRF maximum likelihood are described) with its
per-clique convergence, which :func:`mrflib.learning.learners.fit` reports (and
:func:`stopped_reason`, when its time limit stopped it); :func:`check_ising` checks the
arguments of both ±1 LAP fits.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from mrflib._support import progress as _progress
from mrflib._support.executor import Executor
from mrflib._support.optimizers import Deadline
from mrflib._support.validation import check_positive, check_spins, is_choice
from mrflib.inference import exact
from mrflib.learning import _lap_kernels as _k
from mrflib.learning import _limits
from mrflib.learning._maximum_likelihood import mle_degeneracies
from mrflib.learning.neighbourhoods import all_cliques, maximal_cliques, pack
from mrflib.models import graphs
from mrflib.models.boltzmann import BoltzmannMachine

__all__ = ["check_ising", "fit_ising_info", "stopped_reason"]

_RIDGE = 1e-10  # Levenberg damping of the Newton system (not part of the objective)
_MAX_CLIQUE = 12  # 2^12 states of x_Q per data pattern
_HUGE = 10.0  # |θ| beyond which an "optimum" is a likelihood still climbing to infinity


def check_ising(data: Any, edges: Any, n: int | None) -> tuple[np.ndarray, graphs.Graph, int]:
    """Validated spins (``N >= 1`` rows), the :class:`~mrflib.models.graphs.Graph` (of an edge
    array or a ``Graph``) and ``n``: the arguments of both ±1 LAP fits (this one and
    :func:`mrflib.learning.lap.fit_auxiliary`), each a ``ValueError`` naming it when bad."""
    if n is not None:
        n = check_positive(n, "n", integer=True)
    s = check_spins(data, n, "data")
    if s.shape[0] == 0:
        raise ValueError("data must contain at least one sample (got 0 rows)")
    n = s.shape[1]
    return s, graphs.as_graph(edges, n), n


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


def fit_ising_info(data: Any, edges: Any, n: int | None = None, *, cliques: str = "all",
                   scheduler: Any = None, n_jobs: int | None = None, l2: float = 0.0,
                   tol: float = 1e-10, max_iter: int = 100, deadline: Deadline | None = None
                   ) -> tuple[BoltzmannMachine, dict[str, Any]]:
    """:func:`mrflib.learning.lap.fit_ising` (the same arguments, checked the same way)
    with its per-clique convergence ``{"iterations", "converged", "n_cliques", "cliques",
    "missing", "done"}`` (what :func:`mrflib.learning.learners.fit` reports).

    Under a time limit (``deadline``), or while progress is reported, the cliques are
    fitted in this process in batches with the clock polled between them; when the limit
    passes, the cliques not fitted (``done`` of ``n_cliques`` were) leave their
    parameters at zero, and a parameter shared by maximal cliques is the average over the
    fitted ones."""
    s, graph, n = check_ising(data, edges, n)
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
