"""Local objectives of the learners (MPLE, RM, MPF) evaluated from local-pattern counts.

Each objective is ``(1/N) sum_mu sum_i phi(u_i)`` with ``u_i = x_i h_i`` and the local
field ``h_i = b_i + sum_j J_ij x_j`` (eq. (7) of Yasuda 2018 for MPLE), so it depends on
the data only through how often each local configuration ``(x_i, x_N(i))`` occurs: on a
lattice at most ``2^5`` patterns per node however large N is. :class:`LocalObjective`
compresses the data once, then every evaluation costs ``sum_i K_i deg(i)`` operations
(``K_i`` the distinct patterns of node ``i``), independent of N, in memory linear in
nodes + edges. Where the patterns would not be fewer than the samples (dense graphs,
degree above 61), it evaluates over the distinct data rows instead.

:func:`local_terms_numpy` is the plain-numpy per-sample reference (sparse, also linear
in memory) that the tests compare against.
"""

from __future__ import annotations

import numpy as np

from mrflib import _learning_kernels as _k
from mrflib._threads import parallel_ok

__all__ = ["KIND", "LOCAL_METHODS", "LocalObjective", "local_terms_numpy"]

LOCAL_METHODS = ("mple", "rm", "mpf")
KIND = {"mple": _k.MPLE, "rm": _k.RM, "mpf": _k.MPF}
#: Largest degree whose pattern (own spin + neighbours) fits one int64 code.
MAX_PATTERN_DEGREE = 61


def _check_method(method: str) -> None:
    if method not in LOCAL_METHODS:
        raise ValueError(f"method must be one of {LOCAL_METHODS}, got {method!r}")


class LocalObjective:
    """Objective and raw gradient of a local method on fixed data.

    Parameters
    ----------
    x : int8 array (N, n)
        Validated spins.
    edges : int array (E, 2)
        Validated edges.
    indptr, indices, eids : int64 arrays
        CSR adjacency of :func:`mrflib.graphs.adjacency`.
    method : {"mple", "rm", "mpf"}

    Attributes
    ----------
    mode : {"patterns", "rows"}
        What the data were compressed into.
    n_terms : int
        Stored patterns (or distinct rows) the evaluations run over.
    """

    def __init__(self, x, edges, indptr, indices, eids, method):
        _check_method(method)
        self.kind = KIND[method]
        self.n = x.shape[1]
        self.E = edges.shape[0]
        self.ei = np.ascontiguousarray(edges[:, 0], dtype=np.int64)
        self.ej = np.ascontiguousarray(edges[:, 1], dtype=np.int64)
        self.indptr, self.indices, self.eids = indptr, indices, eids
        N = x.shape[0]
        deg = np.diff(indptr)
        cap = np.minimum(N, 2.0 ** (np.minimum(deg, 62) + 1))
        pattern_work = float(np.dot(cap, deg + 1))
        too_wide = deg.size > 0 and deg.max() > MAX_PATTERN_DEGREE
        if too_wide or pattern_work >= N * (self.n + 2 * self.E):
            self._compress_rows(x)
        else:
            self._compress_patterns(x, cap.astype(np.int64))

    def _compress_patterns(self, x, cap):
        N = x.shape[0]
        cap_off = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(cap, out=cap_off[1:])
        xt = np.ascontiguousarray(x.T)
        kern = (_k.local_patterns_parallel if parallel_ok(x.size * 5.0)
                else _k.local_patterns)
        codes, counts, size = kern(xt, self.indptr, self.indices, cap_off)
        keep = np.arange(cap_off[-1]) - np.repeat(cap_off[:-1], cap) < np.repeat(size, cap)
        self.codes = codes[keep]
        self.weights = counts[keep] / N
        self.poff = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(size, out=self.poff[1:])
        self.mode = "patterns"
        self.n_terms = int(self.codes.size)
        self.work = float(np.dot(size, np.diff(self.indptr) + 1))

    def _compress_rows(self, x):
        rows, counts = np.unique(x, axis=0, return_counts=True)
        self.rows = np.ascontiguousarray(rows, dtype=np.int8)
        self.weights = counts / x.shape[0]
        self.mode = "rows"
        self.n_terms = int(rows.shape[0])
        self.work = float(rows.shape[0]) * (self.n + 3 * self.E)

    def __call__(self, theta, want_value=True):
        """``(value, d/db, d/dJ)`` at ``theta = (bias, coupling)`` (averaged over the data)."""
        theta = np.asarray(theta, dtype=np.float64)
        b = np.ascontiguousarray(theta[: self.n])
        j = np.ascontiguousarray(theta[self.n:])
        if self.mode == "rows":
            return _k.local_objective_gradient(
                self.rows, self.weights, b, j, self.ei, self.ej, self.indptr, self.indices,
                self.eids, self.kind, want_value)
        kern = (_k.pattern_objective_parallel if parallel_ok(self.work)
                else _k.pattern_objective)
        return kern(self.codes, self.weights, self.poff, b, j, self.indptr, self.eids,
                    self.kind)


def _phi_numpy(u, method):
    """``phi(u)`` and ``phi'(u)`` in overflow-safe forms (the numba kernels' formulas)."""
    from scipy.special import expit

    if method == "mple":  # log P(x_i | rest) = -log(1 + exp(-2u))
        return -np.logaddexp(0.0, -2.0 * u), 2.0 * expit(-2.0 * u)
    if method == "rm":  # -g(exp(2u))^2, g(r) = 1/(1 + r)
        s = expit(-2.0 * u)
        return -s * s, 4.0 * s * s * (1.0 - s)
    t = np.exp(-u)  # MPF: -exp(-u)
    return -t, t


def local_terms_numpy(x, bias, coupling, edges, method):
    """Per-sample numpy evaluation of a local objective and its raw gradient.

    Sparse (memory ``O(N (n + E))``): the local fields are one sparse matrix product.
    Returns ``(value, d/db (n,), d/dJ (E,))`` averaged over the N rows of ``x``.
    """
    import scipy.sparse as sp

    _check_method(method)
    N, n = x.shape
    xf = x.astype(np.float64)
    ei, ej = edges[:, 0], edges[:, 1]
    W = sp.coo_matrix((np.concatenate([coupling, coupling]),
                       (np.concatenate([ei, ej]), np.concatenate([ej, ei]))),
                      shape=(n, n)).tocsr()
    h = np.asarray((W @ xf.T).T) + bias
    with np.errstate(over="ignore"):
        val, dphi = _phi_numpy(xf * h, method)
    g = xf * dphi
    gj = (g[:, ei] * xf[:, ej] + g[:, ej] * xf[:, ei]).sum(axis=0) / N
    return float(val.sum() / N), g.sum(axis=0) / N, gj
