"""LAP: learning Markov random fields with exact local inference.

Mizrahi, de Freitas & Tenorio, *Efficient learning of practical Markov random fields
with exact inference* ({cite}`lap-mizrahi-defreitas-tenorio`). Node labels are
0-based here; the paper counts from 1.

The pieces:

- the 1-neighbourhood ``A_Q`` of a clique (Definition 7), maximal cliques (section
  4.5) and the path-connected pairs of a marginal (Definition 8, Proposition 9);
- normalized potentials of a discrete distribution by Möbius inversion
  (Definition 5, Theorem 6) and back;
- :func:`fit_ising`: LAP for Ising models (section 4.2): one auxiliary MRF per clique
  ``Q`` on ``A_Q`` whose parameters ``θ_Q`` are pulled out, all cliques fitted in one
  batched numba kernel, split over local processes or a Dask cluster;
- :func:`fit_gaussian`: LAP for Gaussian MRFs (section 6, eq. 13-14), together with
  the maximum-likelihood estimate under the same sparsity pattern
  (:func:`fit_gaussian_mle`, the baseline of Figure 8) and the data generators of
  Figure 7;
- :func:`junction_tree_moments`: exact moments by pgmpy's junction-tree belief
  propagation, the exact-inference baseline of Figure 5.

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
from itertools import combinations
from typing import Any

import numpy as np
import scipy.optimize
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from . import _lap_kernels as _k
from . import exact, graphs
from ._validation import (
    as_rng,
    check_array,
    check_edges,
    check_positive,
    check_spins,
    require_memory,
)
from .model import BoltzmannMachine

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
    "junction_tree_moments",
]

_RIDGE = 1e-10  # Levenberg damping of the Newton system (not part of the objective)
_MAX_CLIQUE = 12  # 2^12 states of x_Q per data pattern
_HUGE = 10.0  # |θ| beyond which an "optimum" is a likelihood still climbing to infinity


# ----------------------------------------------------------------------------- graphs
def _clique_list(cliques: Any, name: str = "cliques") -> list[np.ndarray]:
    """Cliques as a list of sorted distinct int64 arrays (an (E, 2) edge array is allowed)."""
    if isinstance(cliques, np.ndarray) and cliques.ndim == 2:
        arr = cliques
        if arr.dtype.kind not in "iu":
            raise ValueError(f"{name} must contain integer node labels")
        items = list(arr)
    else:
        try:
            items = list(cliques)
        except TypeError:
            raise ValueError(f"{name} must be an iterable of node collections") from None
    out = []
    for c in items:
        a = np.atleast_1d(np.asarray(c))
        if a.ndim != 1 or a.size == 0 or a.dtype.kind not in "iu":
            raise ValueError(f"{name}: every clique must be a non-empty collection of "
                             f"integer node labels, got {c!r}")
        a = np.unique(a.astype(np.int64))
        if a.size != np.asarray(c).size:
            raise ValueError(f"{name}: clique {c!r} repeats a node")
        if a[0] < 0:
            raise ValueError(f"{name}: node labels must be non-negative, got {c!r}")
        out.append(a)
    return out


def one_neighbourhood(cliques: Any, Q: Any) -> np.ndarray:
    """The 1-neighbourhood ``A_Q`` of a clique ``Q`` (Definition 7).

    ``A_Q = ∪_{C ∩ Q ≠ ∅} C`` (together with ``Q`` itself): every node of a clique of the
    family that meets ``Q``.

    Parameters
    ----------
    cliques : (E, 2) edge array or iterable of node collections
        The clique family of the MRF. For a pairwise model the edges suffice (the
        singletons add nothing to the union).
    Q : int or collection of int
        The clique whose 1-neighbourhood is wanted.

    Returns
    -------
    (|A_Q|,) int64, sorted.

    Examples
    --------
    The running example of the paper (Figure 1, 3x3 lattice, nodes 1..9 there,
    0..8 here): ``Q = {7, 8}`` has ``A_Q = {4, 5, 7, 8, 9}``.

    >>> from mrflib import graphs
    >>> one_neighbourhood(graphs.square_grid(3, 3), [6, 7]).tolist()
    [3, 4, 6, 7, 8]
    """
    family = _clique_list(cliques)
    q = _clique_list([Q], "Q")[0]
    out = set(q.tolist())
    for c in family:
        if np.intersect1d(c, q, assume_unique=True).size:
            out.update(c.tolist())
    return np.array(sorted(out), dtype=np.int64)


def one_neighbourhoods(edges: Any, n: int, cliques: Any) -> list[np.ndarray]:
    """``A_Q`` for many cliques of a pairwise graph at once (numba kernel).

    Same result as :func:`one_neighbourhood` for each clique, for an edge-list graph.
    """
    edges = check_edges(edges, n)
    q_ptr, q_nodes = _pack(_clique_list(cliques), n)
    indptr, indices, _ = graphs.adjacency(edges, n)
    a_ptr, a_nodes = _k.one_neighbourhoods(indptr, indices, q_ptr, q_nodes)
    return [a_nodes[a_ptr[c]:a_ptr[c + 1]] for c in range(len(q_ptr) - 1)]


def _pack(cliques: list[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.array([len(c) for c in cliques], dtype=np.int64)
    q_ptr = np.zeros(len(cliques) + 1, dtype=np.int64)
    np.cumsum(sizes, out=q_ptr[1:])
    q_nodes = (np.concatenate(cliques).astype(np.int64) if cliques
               else np.zeros(0, dtype=np.int64))
    if q_nodes.size and q_nodes.max() >= n:
        raise ValueError(f"cliques refer to node {int(q_nodes.max())}, but n = {n}")
    return q_ptr, q_nodes


def maximal_cliques(edges: Any, n: int) -> list[tuple[int, ...]]:
    """Maximal cliques of the graph (section 4.5), sorted tuples in sorted order.

    Triangle-free graphs (square and cubic lattices, chimera graphs) are recognised
    with one sparse product: their maximal cliques are the edges and the isolated
    nodes. Other graphs go through networkx's Bron-Kerbosch.
    """
    edges = check_edges(edges, n)
    n = check_positive(n, "n", integer=True)
    deg = np.bincount(edges.ravel(), minlength=n)
    isolated = [(int(i),) for i in np.flatnonzero(deg == 0)]
    if len(edges) == 0:
        return isolated
    A = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n)).tocsr()
    A = A + A.T
    triangles = (A @ A).multiply(A).sum()
    if triangles == 0:
        found = [tuple(int(v) for v in e) for e in edges]
    else:
        import networkx as nx

        found = [tuple(sorted(int(v) for v in c))
                 for c in nx.find_cliques(graphs.to_networkx(edges, n)) if len(c) > 1]
    return sorted(found + isolated)


def path_connected_pairs(
    edges: Any, n: int, A: Any, *, include_edges: bool = False
) -> np.ndarray:
    """Pairs of ``A`` joined by a path through ``S \\ A`` (Definition 8, the set ``H``).

    By Proposition 9 the marginal MRF on ``A`` has an edge between ``i`` and ``j`` iff
    they are neighbours in the full MRF or ``{i, j} ∈ H``. As in the paper's running
    example (``H = {{4, 9}, {5, 9}}``, Figure 3), pairs that are already edges of the
    full MRF are left out unless ``include_edges``.

    Returns
    -------
    (|H|, 2) int64 canonical edge array.
    """
    edges = check_edges(edges, n)
    n = check_positive(n, "n", integer=True)
    A = np.unique(np.asarray(A, dtype=np.int64))
    if A.size and (A[0] < 0 or A[-1] >= n):
        raise ValueError(f"A must contain nodes in 0..{n - 1}")
    inA = np.zeros(n, dtype=bool)
    inA[A] = True
    outside = edges[~inA[edges[:, 0]] & ~inA[edges[:, 1]]]
    G = sp.coo_matrix((np.ones(len(outside)), (outside[:, 0], outside[:, 1])), shape=(n, n))
    _, label = connected_components(G, directed=False)
    touch: dict[int, set[int]] = {}
    for i, j in edges:
        if inA[i] != inA[j]:
            a, b = (i, j) if inA[i] else (j, i)
            touch.setdefault(int(label[b]), set()).add(int(a))
    pairs = {p for members in touch.values() for p in combinations(sorted(members), 2)}
    if not include_edges:
        pairs -= {(int(i), int(j)) for i, j in edges}
    return graphs.from_pairs(sorted(pairs)) if pairs else np.zeros((0, 2), dtype=np.int64)


# ------------------------------------------------------------- normalized potentials
def _cardinalities(p: np.ndarray, cardinalities: Any) -> tuple[int, ...]:
    if cardinalities is None:
        n = int(round(math.log2(p.size))) if p.size > 1 else 0
        if 2**n != p.size or n == 0:
            raise ValueError(f"p must have 2^n entries for binary variables, got {p.size}")
        return (2,) * n
    card = tuple(int(check_positive(k, "cardinalities", integer=True)) for k in cardinalities)
    if any(k < 2 for k in card):
        raise ValueError("cardinalities must all be at least 2")
    if math.prod(card) != p.size:
        raise ValueError(f"p has {p.size} entries but the cardinalities give "
                         f"{math.prod(card)}")
    return card


def normalized_potentials(
    p: Any, cardinalities: Any = None, *, tol: float | None = None
) -> dict[tuple[int, ...], np.ndarray]:
    """Normalized (canonical) potentials of a positive discrete distribution.

    Möbius inversion of Definition 5:
    ``V_C(x) = Σ_{B ⊆ C} (-1)^{|C \\ B|} log f(x^B)``, where ``x^B`` agrees with ``x``
    on ``B`` and is 0 elsewhere. By Theorem 6 this is the unique potential with
    ``V_C = 0`` whenever some ``x_i = 0`` (i ∈ C), and
    ``log f(x) = log f(0) + Σ_{C ≠ ∅} V_C(x)`` (sign: log-potentials, i.e. minus the
    paper's energy terms; ``V_∅ = 0`` and the free term goes into ``Z``).

    The inversion is done axis by axis, ``O(|X| Σ_i 1)``: along each variable the
    operator ``h(x_i) -> h(x_i) - h(0)`` (for ``x_i ≠ 0``); their composition is the
    sum over subsets above.

    Parameters
    ----------
    p : array_like, shape (|X|,)
        Probabilities in the mixed-radix order of the design (``x_0`` least
        significant). For ±1 spins from :func:`mrflib.exact.probabilities`, state 0 is
        spin -1 (bit cleared) and 1 is spin +1, so the reference configuration is all
        spins -1.
    cardinalities : sequence of int, optional
        ``|X_i|`` for each variable; default all 2.
    tol : float, optional
        Drop cliques whose potential is within ``tol`` of 0 everywhere.

    Returns
    -------
    dict
        ``clique (sorted tuple) -> array`` of shape ``(|X_i| - 1 for i in clique)``:
        ``V_C(x_C)`` at ``x_i = 1..|X_i|-1`` (entry ``x_i - 1``).
    """
    p = check_array(p, "p", ndim=1)
    card = _cardinalities(p, cardinalities)
    if np.any(p <= 0):
        raise ValueError("p must be strictly positive (normalized potentials need f > 0)")
    n = len(card)
    L = np.log(p / p.sum()).reshape(card[::-1])  # axis n-1-i <-> variable i
    for ax in range(n):
        sl0 = [slice(None)] * n
        sl0[ax] = slice(0, 1)
        sl1 = [slice(None)] * n
        sl1[ax] = slice(1, None)
        L[tuple(sl1)] -= L[tuple(sl0)]
    out: dict[tuple[int, ...], np.ndarray] = {}
    for r in range(1, n + 1):
        for C in combinations(range(n), r):
            idx = [0] * n
            for i in C:
                idx[n - 1 - i] = slice(1, None)
            V = L[tuple(idx)]
            V = np.ascontiguousarray(np.transpose(V, axes=tuple(range(V.ndim))[::-1]))
            if tol is not None and np.all(np.abs(V) <= tol):
                continue
            out[C] = V
    return out


def distribution_from_potentials(
    potentials: dict[Any, Any], cardinalities: Any
) -> np.ndarray:
    """The distribution of a normalized potential: ``f(x) ∝ exp(Σ_C V_C(x))`` (Theorem 6).

    Inverse of :func:`normalized_potentials` (missing cliques are 0). Returns ``p`` of
    shape ``(|X|,)`` in the same mixed-radix order.
    """
    card = tuple(int(check_positive(k, "cardinalities", integer=True)) for k in cardinalities)
    if not card or any(k < 2 for k in card):
        raise ValueError("cardinalities must be a non-empty sequence of integers >= 2")
    n = len(card)
    require_memory(8.0 * math.prod(card), "the distribution table")
    L = np.zeros(card[::-1])
    for C, V in potentials.items():
        C = tuple(int(i) for i in np.atleast_1d(C))
        if not C or len(set(C)) != len(C) or min(C) < 0 or max(C) >= n:
            raise ValueError(f"potentials: bad clique {C!r} for {n} variables")
        order = np.argsort(C)
        C = tuple(np.asarray(C)[order])
        V = np.asarray(V, dtype=np.float64)
        want = tuple(card[i] - 1 for i in C)
        if V.shape == () and all(w == 1 for w in want):
            V = V.reshape(want)
        V = np.transpose(V, axes=tuple(order)) if V.ndim == len(C) else V
        if V.shape != want:
            raise ValueError(f"potentials[{C}] must have shape {want}, got {V.shape}")
        if not np.all(np.isfinite(V)):
            raise ValueError(f"potentials[{C}] must be finite")
        idx = [0] * n
        for i in C:
            idx[n - 1 - i] = slice(1, None)
        L[tuple(idx)] += np.transpose(V, axes=tuple(range(V.ndim))[::-1])
    # zeta transform: log f(x) - log f(0) = Σ_{B ⊆ supp x} V_B(x^B)
    for ax in range(n):
        sl0 = [slice(None)] * n
        sl0[ax] = slice(0, 1)
        sl1 = [slice(None)] * n
        sl1[ax] = slice(1, None)
        L[tuple(sl1)] += L[tuple(sl0)]
    L = L.ravel()
    L -= L.max()
    q = np.exp(L)
    return q / q.sum()


def ising_normalized_potentials(bm: BoltzmannMachine) -> dict[tuple[int, ...], float]:
    """Closed-form normalized potentials of a Boltzmann machine (reference: all spins -1).

    With ``s = (x + 1) / 2 ∈ {0, 1}``, ``b x + J x_i x_j`` regroups into
    ``V_i = 2 b_i - 2 Σ_{j ~ i} J_ij`` and ``V_ij = 4 J_ij``; all higher potentials
    vanish (appendix A's regrouping, done for the Ising energy).
    """
    if not isinstance(bm, BoltzmannMachine):
        raise ValueError("bm must be a BoltzmannMachine")
    n = bm.n
    row = np.bincount(bm.edges[:, 0], weights=bm.coupling, minlength=n)
    row += np.bincount(bm.edges[:, 1], weights=bm.coupling, minlength=n)
    out: dict[tuple[int, ...], float] = {(i,): float(2 * bm.bias[i] - 2 * row[i])
                                         for i in range(n)}
    for (i, j), J in zip(bm.edges, bm.coupling):
        out[(int(i), int(j))] = float(4 * J)
    return out


# ------------------------------------------------------------------- Ising: reference
def _check_ising(data: Any, edges: Any, n: int | None) -> tuple[np.ndarray, np.ndarray, int]:
    if n is not None:
        n = check_positive(n, "n", integer=True)
    s = check_spins(data, n, "data")
    n = s.shape[1]
    edges = check_edges(edges, n)
    return s, edges, n


def fit_auxiliary(
    data: Any, edges: Any, Q: Any, n: int | None = None, *, gtol: float = 1e-10
) -> dict[str, Any]:
    """Literal LAP step for one clique: the auxiliary MRF on ``A_Q``, fitted by exact ML.

    Plain numpy/scipy reference of :func:`fit_ising` (section 4.2, steps 1-3): the
    auxiliary MRF has the unary and pairwise terms that touch ``Q`` and a free table
    ``g(x_{A\\Q})`` (one parameter per pattern, the first fixed at 0); it is fitted by
    L-BFGS on the exact log-likelihood over all ``2^|A_Q|`` states of the empirical
    distribution of ``x_A``. Then ``θ_Q`` is pulled out.

    Returns
    -------
    dict with ``A`` (the 1-neighbourhood), ``bias`` (b_i for i in Q, sorted),
    ``coupling`` ({edge (i, j): J} for every edge touching Q, inner and boundary),
    ``loglik`` (average) and ``result`` (scipy's OptimizeResult).
    """
    s, edges, n = _check_ising(data, edges, n)
    q = _clique_list([Q], "Q")[0]
    if q[-1] >= n:
        raise ValueError(f"Q refers to node {int(q[-1])}, but n = {n}")
    A = one_neighbourhood(edges, q)
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

    res = scipy.optimize.minimize(negll, np.zeros(M.shape[1]), jac=True, method="L-BFGS-B",
                                  options={"maxiter": 20_000, "gtol": gtol, "ftol": 0.0,
                                           "maxcor": 50})
    theta = res.x
    k = len(q)
    coupling = {(int(edges[e, 0]), int(edges[e, 1])): float(theta[k + t])
                for t, e in enumerate(touch)}
    return {"A": A, "bias": theta[:k].copy(), "coupling": coupling,
            "loglik": float(-res.fun), "result": res}


# --------------------------------------------------------------------- Ising: batched
_WORKER: dict[str, Any] = {}


def _fit_chunk(data_t, indptr, indices, edge_ids, q_ptr, q_nodes, l2, tol, max_iter):
    return _k.fit_conditional(data_t, indptr, indices, edge_ids, q_ptr, q_nodes, l2, tol,
                              max_iter, _RIDGE)


def _init_worker(data_t, indptr, indices, edge_ids):  # pragma: no cover - in subprocess
    _WORKER.update(data_t=data_t, indptr=indptr, indices=indices, edge_ids=edge_ids)


def _worker_chunk(q_ptr, q_nodes, l2, tol, max_iter):  # pragma: no cover - in subprocess
    w = _WORKER
    return _fit_chunk(w["data_t"], w["indptr"], w["indices"], w["edge_ids"], q_ptr, q_nodes,
                      l2, tol, max_iter)


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


def _run_cliques(data_t, indptr, indices, edge_ids, q_ptr, q_nodes, l2, tol, max_iter,
                 n_jobs, scheduler):
    C = len(q_ptr) - 1
    N = data_t.shape[1]
    args = (l2, tol, max_iter)
    if scheduler is not None:
        from distributed import Client

        own = isinstance(scheduler, str)
        client = Client(scheduler) if own else scheduler
        if not isinstance(client, Client):
            raise ValueError("scheduler must be a Dask scheduler address or a "
                             "distributed.Client")
        try:
            workers = max(1, sum(client.nthreads().values()))
            parts = _chunks(q_ptr, q_nodes, min(C, 2 * workers))
            shared = client.scatter([data_t, indptr, indices, edge_ids], broadcast=True)
            futs = [client.submit(_fit_chunk, *shared, ptr, nodes, *args, pure=False)
                    for _, ptr, nodes in parts]
            results = client.gather(futs)
        finally:
            if own:
                client.close()
    else:
        work = C * min(N, 256)
        jobs = n_jobs if n_jobs is not None else (os.cpu_count() or 1)
        if jobs <= 1 or (n_jobs is None and work < 4_000_000) or C < 2 * jobs:
            return _fit_chunk(data_t, indptr, indices, edge_ids, q_ptr, q_nodes, *args)
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        parts = _chunks(q_ptr, q_nodes, jobs)
        # fork: workers inherit the compiled kernels and need no importable __main__
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init_worker,
                                 initargs=(data_t, indptr, indices, edge_ids)) as ex:
            futs = [ex.submit(_worker_chunk, ptr, nodes, *args) for _, ptr, nodes in parts]
            results = [f.result() for f in futs]
    # merge chunk results back into clique order
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
    return_info: bool = False,
) -> BoltzmannMachine | tuple[BoltzmannMachine, dict[str, Any]]:
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
    edges : array_like, shape (E, 2)
        The MRF's graph (2D grids, cubic lattices, chimera graphs, any graph with
        small 1-neighbourhoods).
    n : int, optional
        Number of spins (default ``data.shape[1]``).
    cliques : {"all", "maximal"}
        ``"all"``: every node and every edge is its own ``Q``; ``b_i`` comes from
        ``Q = {i}``, ``J_ij`` from ``Q = {i, j}``. ``"maximal"``: only the maximal
        cliques are fitted (section 4.5, Theorem 12) and a parameter shared by several
        maximal cliques (a bias, or an edge of two triangles) is their average.
    scheduler : str or distributed.Client, optional
        Run the clique fits on this Dask cluster (address or client). Default: local.
    n_jobs : int, optional
        Local worker processes. Default: all cores when the problem is large enough
        to pay for starting them, else in-process.
    l2 : float
        Optional ridge penalty ``l2/2 |θ_Q|^2`` on each averaged auxiliary
        log-likelihood (0: exact ML; use > 0 when the data separate some clique and
        its ML is infinite).
    tol : float
        Stop a clique's Newton iteration (after one last step) when half the squared
        Newton decrement (the predicted gain of average log-likelihood) is below ``tol``.
    max_iter : int
        Newton iterations per clique.
    return_info : bool
        Also return ``{"iterations", "converged", "n_cliques", "cliques"}``.

    Returns
    -------
    BoltzmannMachine on ``edges`` (and the info dict if asked).

    Warns
    -----
    RuntimeWarning
        If a clique fit did not converge, or an estimate exceeds 10 in magnitude: data
        that separate a clique (e.g. two spins always equal) have no finite ML.
    """
    s, edges, n = _check_ising(data, edges, n)
    if cliques not in ("all", "maximal"):
        raise ValueError(f"cliques must be 'all' or 'maximal', got {cliques!r}")
    l2 = check_positive(l2, "l2", allow_zero=True)
    tol = check_positive(tol, "tol")
    max_iter = check_positive(max_iter, "max_iter", integer=True)
    if n_jobs is not None:
        n_jobs = check_positive(n_jobs, "n_jobs", integer=True)
    E = len(edges)
    if cliques == "all":
        q_ptr = np.concatenate([np.arange(n + 1), n + 2 * np.arange(1, E + 1)]).astype(np.int64)
        q_nodes = np.concatenate([np.arange(n), edges.ravel()]).astype(np.int64)
    else:
        mc = maximal_cliques(edges, n)
        big = max(len(c) for c in mc)
        if big > _MAX_CLIQUE:
            raise ValueError(f"edges has a maximal clique of {big} nodes; LAP here "
                             f"enumerates 2^|Q| states and allows |Q| <= {_MAX_CLIQUE}")
        q_ptr, q_nodes = _pack([np.asarray(c, dtype=np.int64) for c in mc], n)
    indptr, indices, edge_ids = graphs.adjacency(edges, n)
    data_t = np.ascontiguousarray(s.T)
    bias_q, inner, eid, n_iter, conv = _run_cliques(
        data_t, indptr, indices, edge_ids, q_ptr, q_nodes, l2, tol, max_iter, n_jobs,
        scheduler)
    sizes = q_ptr[1:] - q_ptr[:-1]
    if cliques == "all":
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
    bad = int(np.sum(~conv))
    if bad:
        warnings.warn(f"LAP: {bad} of {len(conv)} clique fits did not converge in "
                      f"{max_iter} Newton steps (separable data has no finite ML; "
                      "consider l2 > 0 or more data)", RuntimeWarning, stacklevel=2)
    elif max(np.abs(bias).max(), np.abs(coupling).max(initial=0.0)) > _HUGE:
        warnings.warn(f"LAP: some estimates exceed {_HUGE} in magnitude: the data "
                      "separate a clique and its ML is at infinity (no finite ML); "
                      "consider l2 > 0 or more data", RuntimeWarning, stacklevel=2)
    bm = BoltzmannMachine(bias, edges, coupling)
    if return_info:
        return bm, {"iterations": n_iter, "converged": conv, "n_cliques": len(sizes),
                    "cliques": cliques}
    return bm


# ------------------------------------------------------------------------- Gaussian
def _check_gaussian(data: Any, edges: Any, n: int | None, assume_centered: bool):
    X = check_array(data, "data", ndim=2)
    if n is not None and X.shape[1] != check_positive(n, "n", integer=True):
        raise ValueError(f"data must have {n} columns (one per variable), got {X.shape[1]}")
    N, n = X.shape
    if N < 2:
        raise ValueError(f"data must have at least 2 samples, got {N}")
    edges = check_edges(edges, n)
    if not assume_centered:
        X = X - X.mean(axis=0)
    return X, edges, n


def _second_moments_on(X: np.ndarray, pattern: sp.csr_matrix) -> sp.csr_matrix:
    """Sample second moments ``D = XᵀX / N`` on the pattern only (symmetric CSR)."""
    up = sp.triu(pattern, format="coo")
    x_t = np.ascontiguousarray(X.T)
    vals = _k.pattern_gram(x_t, up.row.astype(np.int64), up.col.astype(np.int64))
    n = X.shape[1]
    D = sp.coo_matrix((vals, (up.row, up.col)), shape=(n, n))
    off = up.row != up.col
    D = D + sp.coo_matrix((vals[off], (up.col[off], up.row[off])), shape=(n, n))
    D = D.tocsr()
    D.sort_indices()
    return D


def fit_gaussian(
    data: Any,
    edges: Any,
    n: int | None = None,
    *,
    assume_centered: bool = True,
    sparse: bool = False,
) -> np.ndarray | sp.csr_array:
    """LAP estimate of a sparse precision matrix ``Σ^-1`` (section 6.1, eq. 13-14).

    Each non-zero ``(i, j)`` of the pattern (each edge, and each diagonal entry) is
    read off the inverse sample second-moment matrix of its 1-neighbourhood:
    ``A = {i, j} ∪ N_i ∪ N_j`` and ``(Σ^-1)_ij = (D_AA^-1)_ij`` (eq. 13); the diagonal
    uses ``A = {i} ∪ N_i``. ``D = (1/N) Σ_n x_n x_nᵀ`` as in the paper (zero-mean data).

    Parameters
    ----------
    data : array_like, shape (N, n)
    edges : array_like, shape (E, 2)
        The sparsity pattern of ``Σ^-1`` (off-diagonal non-zeros, ``i < j``).
    assume_centered : bool
        ``True`` (paper): ``D`` is the raw second moment. ``False``: centre first.
    sparse : bool
        Return a ``scipy.sparse.csr_array`` (for large ``n``) instead of a dense array.

    Returns
    -------
    (n, n) symmetric estimate, zero off the pattern.
    """
    X, edges, n = _check_gaussian(data, edges, n, assume_centered)
    N = X.shape[0]
    E = len(edges)
    q_ptr = np.concatenate([np.arange(n + 1), n + 2 * np.arange(1, E + 1)]).astype(np.int64)
    q_nodes = np.concatenate([np.arange(n), edges.ravel()]).astype(np.int64)
    indptr, indices, _ = graphs.adjacency(edges, n)
    a_ptr, a_nodes = _k.one_neighbourhoods(indptr, indices, q_ptr, q_nodes)
    amax = int(np.max(a_ptr[1:] - a_ptr[:-1]))
    if N < amax:
        raise ValueError(f"data has {N} samples but a 1-neighbourhood has {amax} variables; "
                         f"its sample covariance is singular (need N >= {amax})")
    B = sp.csr_matrix((np.ones(len(a_nodes)), a_nodes, a_ptr), shape=(len(q_ptr) - 1, n))
    pattern = (B.T @ B).tocsr()
    D = _second_moments_on(X, pattern)
    ii = np.concatenate([np.arange(n), edges[:, 0]]).astype(np.int64)
    jj = np.concatenate([np.arange(n), edges[:, 1]]).astype(np.int64)
    vals = _k.gaussian_entries(D.indptr.astype(np.int64), D.indices.astype(np.int64),
                               D.data, a_ptr, a_nodes, ii, jj)
    rows = np.concatenate([ii, edges[:, 1]])
    cols = np.concatenate([jj, edges[:, 0]])
    K = sp.csr_array((np.concatenate([vals, vals[n:]]), (rows, cols)), shape=(n, n))
    if sparse:
        K.sort_indices()
        return K
    require_memory(8.0 * n * n, "the dense precision matrix (use sparse=True)")
    return K.toarray()


def fit_gaussian_mle(
    data: Any,
    edges: Any,
    n: int | None = None,
    *,
    assume_centered: bool = True,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> np.ndarray:
    """Maximum-likelihood precision matrix under a known sparsity pattern.

    Dempster's covariance selection: minimize ``-log det K + tr(D K)`` over SPD ``K``
    with ``K_ij = 0`` off the pattern -- the "ML under the sparsity pattern" baseline
    of section 6.3 (Figure 8). The objective is convex and self-concordant; it is
    minimized by damped Newton over the free entries (the diagonal and the edges),
    with Hessian ``tr(Σ E_a Σ E_b)``, ``Σ = K^-1``, starting from ``diag(1 / D_ii)``,
    until half the squared Newton decrement is below ``tol``. Dense ``O(n^2)``
    memory and an ``(n + E)^2`` Hessian: meant for ``n + E`` up to a few thousand.
    """
    X, edges, n = _check_gaussian(data, edges, n, assume_centered)
    tol = check_positive(tol, "tol")
    max_iter = check_positive(max_iter, "max_iter", integer=True)
    d = n + len(edges)
    require_memory(8.0 * (3 * n * n + 3 * d * d), "covariance selection (dense Newton)")
    N = X.shape[0]
    D = X.T @ X / N
    ia = np.concatenate([np.arange(n), edges[:, 0]])
    ja = np.concatenate([np.arange(n), edges[:, 1]])
    c = np.where(ia == ja, 0.5, 1.0)  # E_a = c_a (e_i e_jᵀ + e_j e_iᵀ)

    def assemble(theta: np.ndarray) -> np.ndarray:
        K = np.zeros((n, n))
        K[ia, ja] = theta
        K[ja, ia] = theta
        return K

    def value(K: np.ndarray) -> tuple[float, np.ndarray | None]:
        try:
            R = np.linalg.cholesky(K)
        except np.linalg.LinAlgError:
            return np.inf, None
        return float(-2 * np.log(np.diag(R)).sum() + np.sum(D * K)), R

    theta = np.concatenate([1.0 / np.diag(D), np.zeros(len(edges))])
    f, R = value(assemble(theta))
    if R is None:
        raise ValueError("data: some variable has zero second moment")
    for _ in range(max_iter):
        Rinv = np.linalg.inv(R)
        S = Rinv.T @ Rinv  # Σ = K^-1
        g = 2 * c * (D[ia, ja] - S[ia, ja])
        I, J = ia[:, None], ja[:, None]
        Kb, Lb = ia[None, :], ja[None, :]
        H = 2 * np.outer(c, c) * (S[I, Lb] * S[J, Kb] + S[I, Kb] * S[J, Lb])
        try:
            step = -np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            step = -np.linalg.lstsq(H, g, rcond=None)[0]
        dec = float(-g @ step)
        if dec / 2 <= tol:
            theta = theta + step
            break
        t = 1.0
        while t > 1e-12:
            f_new, R_new = value(assemble(theta + t * step))
            if R_new is not None and f_new <= f - 0.25 * t * dec:
                break
            t *= 0.5
        else:  # pragma: no cover - no decrease at machine precision
            break
        theta = theta + t * step
        f, R = f_new, R_new
    else:
        warnings.warn("fit_gaussian_mle did not converge", RuntimeWarning, stacklevel=2)
    return assemble(theta)


def fit_gaussian_decomposable(
    data: Any, edges: Any, n: int | None = None, *, assume_centered: bool = True
) -> np.ndarray:
    """Maximum-likelihood precision of a decomposable (chordal) Gaussian model.

    What exact learning with a junction tree computes (section 6.3): for a chordal
    pattern with maximal cliques ``C`` and junction-tree separators ``S`` (with
    multiplicity), ``K = Σ_C [D_CC^-1]^0 - Σ_S [D_SS^-1]^0`` (Lauritzen 1996,
    Proposition 5.9), ``[.]^0`` padding with zeros. To learn a non-chordal pattern this
    way, pass a chordal completion (triangulation) of it -- the model has then more free
    entries than the true pattern, which is the paper's explanation of why LAP does
    better for few data (Figure 8). Needs ``N`` above the largest clique size.
    """
    import networkx as nx

    X, edges, n = _check_gaussian(data, edges, n, assume_centered)
    G = graphs.to_networkx(edges, n)
    if not nx.is_chordal(G):
        raise ValueError("edges must form a chordal graph (triangulate it first, e.g. "
                         "networkx.complete_to_chordal_graph)")
    cliques = [np.array(sorted(c), dtype=np.int64) for c in nx.chordal_graph_cliques(G)]
    N = X.shape[0]
    big = max(len(c) for c in cliques)
    if N <= big:
        raise ValueError(f"data has {N} samples but the largest clique has {big} variables; "
                         f"the decomposable ML needs N > {big}")
    # junction tree: maximum-weight spanning tree of the clique-intersection graph
    CG = nx.Graph()
    CG.add_nodes_from(range(len(cliques)))
    sets = [set(c.tolist()) for c in cliques]
    for a in range(len(cliques)):
        for b in range(a + 1, len(cliques)):
            w = len(sets[a] & sets[b])
            if w:
                CG.add_edge(a, b, weight=w)
    K = np.zeros((n, n))

    def add(idx: np.ndarray, sign: float) -> None:
        Xi = X[:, idx]
        K[np.ix_(idx, idx)] += sign * np.linalg.inv(Xi.T @ Xi / N)

    for cl in cliques:
        add(cl, 1.0)
    for a, b in nx.maximum_spanning_tree(CG).edges():
        add(np.array(sorted(sets[a] & sets[b]), dtype=np.int64), -1.0)
    return K


def laplacian_precision(
    rows: int, cols: int, *, return_factor: bool = False
) -> tuple[sp.csr_array, np.ndarray] | tuple[sp.csr_array, np.ndarray, sp.csr_array]:
    """The Laplacian pattern of Figure 7 (left): ``Σ^-1 = L Lᵀ`` on a ``rows x cols`` grid.

    ``L`` is the 5-point Dirichlet Laplacian (4 on the diagonal, -1 to grid
    neighbours), so ``L Lᵀ`` is SPD with a 13-point stencil. Returns the sparse
    precision, its pattern as an edge array (off-diagonal non-zeros, ``i < j``) and,
    if asked, ``L`` (a square-root factor for :func:`sample_gaussian`).
    """
    rows = check_positive(rows, "rows", integer=True)
    cols = check_positive(cols, "cols", integer=True)
    k = rows * cols
    g = graphs.square_grid(rows, cols) if k > 1 else np.zeros((0, 2), dtype=np.int64)
    L = sp.coo_array((np.concatenate([np.full(k, 4.0), -np.ones(2 * len(g))]),
                      (np.concatenate([np.arange(k), g[:, 0], g[:, 1]]),
                       np.concatenate([np.arange(k), g[:, 1], g[:, 0]]))), shape=(k, k)).tocsr()
    K = (L @ L.T).tocsr()
    K.sort_indices()
    if return_factor:
        return K, _pattern_edges(K), L
    return K, _pattern_edges(K)


def _pattern_edges(K: sp.spmatrix) -> np.ndarray:
    up = sp.triu(K, k=1, format="coo")
    keep = up.data != 0
    return graphs.from_pairs(np.stack([up.row[keep], up.col[keep]], axis=1).astype(np.int64))


def random_sparse_precision(
    n: int, degree: float, rng: Any, *, margin: float = 0.1
) -> tuple[sp.csr_array, np.ndarray]:
    """A random sparse SPD precision (Figure 7, right).

    A random graph with expected ``degree`` neighbours per variable, off-diagonal
    entries uniform on ``±[0.5, 1]``, diagonal set to ``Σ_j |K_ij| + margin``
    (strictly diagonally dominant, hence SPD). Returns ``(K, edges)``.
    """
    n = check_positive(n, "n", integer=True)
    degree = check_positive(degree, "degree")
    margin = check_positive(margin, "margin")
    rng = as_rng(rng)
    m = int(round(degree * n / 2))
    i = rng.integers(0, n, size=2 * m + 16)
    j = rng.integers(0, n, size=2 * m + 16)
    keep = i != j
    edges = graphs.from_pairs(np.stack([i[keep], j[keep]], axis=1))[:m]
    edges = graphs.from_pairs(edges) if len(edges) else edges
    vals = rng.uniform(0.5, 1.0, len(edges)) * rng.choice([-1.0, 1.0], len(edges))
    off = sp.coo_array((np.concatenate([vals, vals]),
                        (np.concatenate([edges[:, 0], edges[:, 1]]),
                         np.concatenate([edges[:, 1], edges[:, 0]]))), shape=(n, n))
    diag = np.abs(off).sum(axis=1) + margin
    K = (off + sp.diags_array(diag)).tocsr()
    K.sort_indices()
    return K, edges


def sample_gaussian(
    precision: Any, n_samples: int, rng: Any, *, factor: Any = None
) -> np.ndarray:
    """Zero-mean Gaussian samples ``(n_samples, n)`` with SPD precision ``K = Σ^-1``.

    With a square-root ``factor`` ``F`` (``K = F Fᵀ``, sparse or dense), ``x`` solves
    ``Fᵀ x = z`` by sparse LU, so ``Cov x = (F Fᵀ)^-1`` -- linear-time for the Laplacian
    pattern (``F = L`` from :func:`laplacian_precision`). Otherwise a dense Cholesky
    ``K = Rᵀ R`` and ``x = R^-1 z``.
    """
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    rng = as_rng(rng)
    if factor is not None:
        F = sp.csc_matrix(factor) if sp.issparse(factor) else sp.csc_matrix(
            check_array(factor, "factor", ndim=2))
        if F.shape[0] != F.shape[1]:
            raise ValueError("factor must be square")
        n = F.shape[0]
        z = rng.standard_normal((n, n_samples))
        from scipy.sparse.linalg import splu

        return np.ascontiguousarray(splu(F.T.tocsc()).solve(z).T)
    K = precision.toarray() if sp.issparse(precision) else check_array(
        precision, "precision", ndim=2)
    if K.shape[0] != K.shape[1] or not np.allclose(K, K.T):
        raise ValueError("precision must be a symmetric square matrix")
    n = K.shape[0]
    require_memory(8.0 * n * (n + n_samples), "Gaussian sampling")
    try:
        R = np.linalg.cholesky(K).T  # K = Rᵀ R
    except np.linalg.LinAlgError:
        raise ValueError("precision must be positive definite") from None
    z = rng.standard_normal((n, n_samples))
    import scipy.linalg

    return np.ascontiguousarray(scipy.linalg.solve_triangular(R, z, lower=False).T)


# --------------------------------------------------------------- junction tree (pgmpy)
def junction_tree_moments(bm: BoltzmannMachine) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``<x_i>`` and ``<x_i x_j>`` (each edge) by junction-tree belief propagation.

    The exact-inference baseline of Figure 5: pgmpy's ``BeliefPropagation``
    (triangulation, junction tree, message passing) on the model's factors; one call
    is one gradient evaluation of maximum-likelihood learning (eq. 5). Its cost grows
    like ``2^treewidth`` (treewidth ``J`` for a ``J x J`` lattice).
    """
    if not isinstance(bm, BoltzmannMachine):
        raise ValueError("bm must be a BoltzmannMachine")
    import logging

    logging.getLogger("pgmpy").setLevel(logging.ERROR)
    from pgmpy.factors.discrete import DiscreteFactor
    from pgmpy.inference import BeliefPropagation
    from pgmpy.models import DiscreteMarkovNetwork

    n = bm.n
    names = [f"x{i}" for i in range(n)]
    net = DiscreteMarkovNetwork()
    net.add_nodes_from(names)
    net.add_edges_from([(names[i], names[j]) for i, j in bm.edges])
    factors = [DiscreteFactor([names[i]], [2], np.exp([-bm.bias[i], bm.bias[i]]))
               for i in range(n)]
    for (i, j), J in zip(bm.edges, bm.coupling):
        factors.append(DiscreteFactor([names[i], names[j]], [2, 2],
                                      np.exp(J * np.array([1.0, -1.0, -1.0, 1.0]))))
    net.add_factors(*factors)
    bp = BeliefPropagation(net)
    bp.calibrate()
    beliefs = bp.get_clique_beliefs()
    home: dict[str, Any] = {}
    for clique in beliefs:
        for v in clique:
            home.setdefault(v, clique)
    spin = np.array([-1.0, 1.0])
    mean = np.empty(n)
    for i in range(n):
        f = beliefs[home[names[i]]].marginalize(
            [v for v in home[names[i]] if v != names[i]], inplace=False)
        f.normalize()
        mean[i] = f.values @ spin
    pair = np.empty(len(bm.edges))
    for e, (i, j) in enumerate(bm.edges):
        a, b = names[i], names[j]
        clique = next(c for c in beliefs if a in c and b in c)
        f = beliefs[clique].marginalize([v for v in clique if v not in (a, b)], inplace=False)
        f.normalize()
        vals = f.values if f.variables == [a, b] else f.values.T
        pair[e] = float(np.sum(vals * np.outer(spin, spin)))
    return mean, pair
