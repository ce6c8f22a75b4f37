"""LAP for Gaussian MRFs (Mizrahi et al., section 6, eq. 13-14) and its baselines.

:func:`fit_gaussian` estimates a sparse precision matrix from the 1-neighbourhood
covariances; :func:`fit_gaussian_mle` and :func:`fit_gaussian_decomposable` are the
maximum-likelihood estimates under the same pattern (the baseline of Figure 8);
:func:`laplacian_precision`, :func:`random_sparse_precision` and :func:`sample_gaussian`
generate the data of Figure 7. Re-exported by :mod:`mrflib.learning.lap`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from mrflib._support.validation import (
    as_rng,
    check_array,
    check_edges,
    check_positive,
    require_memory,
)
from mrflib.learning import _lap_kernels as _k
from mrflib.learning.neighbourhoods import all_cliques
from mrflib.models import graphs

__all__ = [
    "fit_gaussian",
    "fit_gaussian_mle",
    "fit_gaussian_decomposable",
    "laplacian_precision",
    "random_sparse_precision",
    "sample_gaussian",
]


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
    data : array_like of float, shape (N, n)
        The samples, one per row, ``N >= 2``.
    edges : array_like of int, shape (E, 2)
        The sparsity pattern of ``Σ^-1`` (off-diagonal non-zeros, ``i < j``).
    n : int or None, default None
        Number of variables (``None``: ``data.shape[1]``; else it must equal it).
    assume_centered : bool, default True
        ``True`` (paper): ``D`` is the raw second moment. ``False``: centre first.
    sparse : bool, default False
        Return a ``scipy.sparse.csr_array`` (for large ``n``) instead of a dense array.

    Returns
    -------
    ndarray of float64 or scipy.sparse.csr_array, shape (n, n)
        The symmetric estimate, zero off the pattern.
    """
    X, edges, n = _check_gaussian(data, edges, n, assume_centered)
    N = X.shape[0]
    q_ptr, q_nodes = all_cliques(edges, n)
    a_ptr, a_nodes = graphs.as_graph(edges, n).closed_neighbourhoods(q_ptr, q_nodes)
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

    Parameters
    ----------
    data : array_like of float, shape (N, n)
        The samples, one per row, ``N >= 2``.
    edges : array_like of int, shape (E, 2)
        The sparsity pattern of ``Σ^-1`` (off-diagonal non-zeros, ``i < j``).
    n : int or None, default None
        Number of variables (``None``: ``data.shape[1]``; else it must equal it).
    assume_centered : bool, default True
        ``True`` (paper): ``D`` is the raw second moment. ``False``: centre first.
    tol : float, default 1e-10
        Stop when half the squared Newton decrement is at most ``tol``.
    max_iter : int, default 200
        Newton iterations at most; a ``RuntimeWarning`` says when they run out.

    Returns
    -------
    ndarray of float64, shape (n, n)
        The symmetric ML precision, zero off the pattern.
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

    Parameters
    ----------
    data : array_like of float, shape (N, n)
        The samples, one per row, more than the largest clique's size.
    edges : array_like of int, shape (E, 2)
        A chordal pattern (off-diagonal non-zeros, ``i < j``); a non-chordal one is
        a ``ValueError``.
    n : int or None, default None
        Number of variables (``None``: ``data.shape[1]``; else it must equal it).
    assume_centered : bool, default True
        ``True`` (paper): ``D`` is the raw second moment. ``False``: centre first.

    Returns
    -------
    ndarray of float64, shape (n, n)
        The symmetric ML precision, zero off the pattern.
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
    neighbours), so ``L Lᵀ`` is SPD with a 13-point stencil.

    Parameters
    ----------
    rows : int
        Grid rows, at least 1.
    cols : int
        Grid columns, at least 1.
    return_factor : bool, default False
        Also return ``L`` (a square-root factor for :func:`sample_gaussian`).

    Returns
    -------
    K : scipy.sparse.csr_array, shape (rows * cols, rows * cols)
        The sparse precision ``L Lᵀ``.
    edges : ndarray of int64, shape (E, 2)
        Its pattern as an edge array (off-diagonal non-zeros, ``i < j``).
    L : scipy.sparse.csr_array, shape (rows * cols, rows * cols)
        The Laplacian, only with ``return_factor=True``.
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
    n: int, degree: float, *, rng: Any, margin: float = 0.1
) -> tuple[sp.csr_array, np.ndarray]:
    """A random sparse SPD precision (Figure 7, right).

    A random graph with expected ``degree`` neighbours per variable, off-diagonal
    entries uniform on ``±[0.5, 1]``, diagonal set to ``Σ_j |K_ij| + margin``
    (strictly diagonally dominant, hence SPD).

    Parameters
    ----------
    n : int
        Number of variables, at least 1.
    degree : float
        Expected number of neighbours per variable, positive.
    rng : Generator or int
        The random graph and entries; the same seed gives the same matrix.
    margin : float, default 0.1
        Positive excess of each diagonal entry over its row's off-diagonal sum.

    Returns
    -------
    K : scipy.sparse.csr_array, shape (n, n)
        The precision matrix.
    edges : ndarray of int64, shape (E, 2)
        Its pattern (off-diagonal non-zeros, ``i < j``).
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
    precision: Any, n_samples: int, *, rng: Any, factor: Any = None
) -> np.ndarray:
    """Zero-mean Gaussian samples ``(n_samples, n)`` with SPD precision ``K = Σ^-1``.

    With a square-root ``factor`` ``F`` (``K = F Fᵀ``, sparse or dense), ``x`` solves
    ``Fᵀ x = z`` by sparse LU, so ``Cov x = (F Fᵀ)^-1`` -- linear-time for the Laplacian
    pattern (``F = L`` from :func:`laplacian_precision`). Otherwise a dense Cholesky
    ``K = Rᵀ R`` and ``x = R^-1 z``.

    Parameters
    ----------
    precision : array_like of float or scipy sparse matrix, shape (n, n)
        The symmetric positive definite ``K``; not read when ``factor`` is given.
    n_samples : int
        Number of samples, at least 1.
    rng : Generator or int
        The standard normal draws ``z``; the same seed gives the same samples.
    factor : array_like of float or scipy sparse matrix or None, default None
        A square ``F`` with ``K = F Fᵀ``; ``None``: the dense Cholesky of ``precision``.

    Returns
    -------
    ndarray of float64, shape (n_samples, n)
        The samples, one per row.
    """
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    rng = as_rng(rng)
    if factor is not None:
        F = sp.csc_matrix(factor) if sp.issparse(factor) else sp.csc_matrix(
            check_array(factor, "factor", ndim=2))
        if F.shape[0] != F.shape[1]:
            raise ValueError("factor must be square")
        n = F.shape[0]
        require_memory(24.0 * n * n_samples + 64.0 * F.nnz,
                       f"sample_gaussian: n_samples = {n_samples} samples of {n} variables")
        z = rng.standard_normal((n, n_samples))
        from scipy.sparse.linalg import splu

        return np.ascontiguousarray(splu(F.T.tocsc()).solve(z).T)
    K = precision.toarray() if sp.issparse(precision) else check_array(
        precision, "precision", ndim=2)
    if K.shape[0] != K.shape[1] or not np.allclose(K, K.T):
        raise ValueError("precision must be a symmetric square matrix")
    n = K.shape[0]
    require_memory(8.0 * n * n + 24.0 * n * n_samples,
                   f"sample_gaussian: n_samples = {n_samples} samples of {n} variables")
    try:
        R = np.linalg.cholesky(K).T  # K = Rᵀ R
    except np.linalg.LinAlgError:
        raise ValueError("precision must be positive definite") from None
    z = rng.standard_normal((n, n_samples))
    import scipy.linalg

    return np.ascontiguousarray(scipy.linalg.solve_triangular(R, z, lower=False).T)
