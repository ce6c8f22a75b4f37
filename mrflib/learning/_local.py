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

from mrflib._support.threads import PARALLEL_WORK, parallel_ok, user_sets_numba
from mrflib.learning import _learners_kernels as _k

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
    graph : mrflib.models.graphs.Graph
        The validated graph (edges and cached CSR adjacency).
    method : {"mple", "rm", "mpf"}

    Attributes
    ----------
    mode : {"patterns", "rows"}
        What the data were compressed into.
    n_terms : int
        Stored patterns (or distinct rows) the evaluations run over.
    """

    def __init__(self, x, graph, method):
        _check_method(method)
        self.g = graph.structure
        self.kind = KIND[method]
        self.n = x.shape[1]
        self.E = graph.n_edges
        N = x.shape[0]
        deg = graph.degree
        cap = np.minimum(N, 2.0 ** (np.minimum(deg, 62) + 1))
        pattern_work = float(np.dot(cap, deg + 1))
        too_wide = deg.size > 0 and deg.max() > MAX_PATTERN_DEGREE
        if too_wide or pattern_work >= N * (self.n + 2 * self.E):
            self._compress_rows(x)
        else:
            self._compress_patterns(x, cap.astype(np.int64))

    def _compress_patterns(self, x, cap):
        gptr = self.g.indptr + np.arange(self.n + 1)
        gnodes = np.empty(gptr[-1], dtype=np.int64)
        gnodes[gptr[:-1]] = np.arange(self.n)  # bit 0: the node itself, then its neighbours
        gnodes[np.setdiff1d(np.arange(gptr[-1]), gptr[:-1])] = self.g.indices
        self.codes, self.weights, self.poff, size = compress(x, gptr, gnodes, cap)
        self.patterns = (self.codes, self.weights, self.poff)  # the kernels' record
        self.mode = "patterns"
        self.n_terms = int(self.codes.size)
        self.work = float(np.dot(size, np.diff(self.g.indptr) + 1))
        self._serial = self.work < PARALLEL_WORK and not user_sets_numba()

    def _compress_rows(self, x):
        rows, counts = np.unique(x, axis=0, return_counts=True)
        self.rows = np.ascontiguousarray(rows, dtype=np.int8)
        self.weights = counts / x.shape[0]
        self.mode = "rows"
        self.n_terms = int(rows.shape[0])
        self.work = float(rows.shape[0]) * (self.n + 3 * self.E)

    def _split(self, theta):
        theta = np.asarray(theta, dtype=np.float64)
        return np.ascontiguousarray(theta[: self.n]), np.ascontiguousarray(theta[self.n:])

    def __call__(self, theta, want_value=True, shift=0.0):
        """``(value, d/db, d/dJ)`` at ``theta = (bias, coupling)`` (averaged over the data).

        ``shift`` (MPF only) multiplies every term by ``exp(-shift)``
        (:func:`mrflib.learning._learners_kernels._phi`); 0 gives the plain objective.
        """
        b, j = self._split(theta)
        shift = float(shift)
        if self.mode == "rows":
            return _k.local_objective_gradient(self.rows, self.weights, self.g, b, j,
                                               self.kind, want_value, shift)
        # small work and no thread count from the user: serial, without asking the load
        parallel = not self._serial and parallel_ok(self.work)
        kern = _k.pattern_objective_parallel if parallel else _k.pattern_objective
        return kern(self.patterns, self.g, b, j, self.kind, shift)

    def max_exponent(self, theta):
        """The largest MPF exponent ``max(-x_i h_i)`` over the data at ``theta``."""
        b, j = self._split(theta)
        if self.mode == "rows":
            return float(_k.mpf_max_exponent_rows(self.rows, self.g, b, j))
        return float(_k.mpf_max_exponent(self.patterns, self.g, b, j))


def compress(x, gptr, gnodes, cap):
    """Distinct patterns of the node groups ``gnodes[gptr[g]:gptr[g + 1]]`` in the spins
    ``x`` (N, n), with their frequencies; ``cap[g]`` bounds group ``g``'s count.

    Returns ``(codes, weights, poff, size)``: group ``g``'s patterns are
    ``codes[poff[g]:poff[g + 1]]`` (bit q: member q is +1).
    """
    G = gptr.shape[0] - 1
    cap_off = np.zeros(G + 1, dtype=np.int64)
    np.cumsum(cap, out=cap_off[1:])
    xt = _k.transpose(x)
    work = float(x.shape[0]) * gnodes.size
    if parallel_ok(work):
        kern = _k.local_patterns_parallel
    elif np.all(2 ** np.diff(gptr).astype(np.float64) <= 2 * x.shape[0]):
        kern = _k.local_patterns_counted  # every group's patterns counted: no sort
    else:
        kern = _k.local_patterns
    codes, counts, size = kern(xt, gptr, gnodes, cap_off)
    keep = np.arange(cap_off[-1]) - np.repeat(cap_off[:-1], cap) < np.repeat(size, cap)
    poff = np.zeros(G + 1, dtype=np.int64)
    np.cumsum(size, out=poff[1:])
    return codes[keep], counts[keep] / x.shape[0], poff, size


class Smci1Moments:
    """1-SMCI moment estimates on fixed samples (eq. (14)-(17) of Yasuda 2018) from
    node and edge-boundary pattern counts: every evaluation costs
    ``sum_i K_i deg(i) + sum_e K_e |boundary(e)|``, independent of the sample count.

    ``available`` is false where the patterns would not be fewer than the samples
    (dense graphs); the caller then uses :func:`mrflib.inference.smci.moments`.
    """

    def __init__(self, x, graph):
        N, n = x.shape
        self.g = graph.structure
        deg = graph.degree
        gptr, gnodes, geid, n_first = _k.edge_boundaries(self.g)
        self.boundaries = (gptr, geid, n_first)
        bsize = np.diff(gptr)
        ncap = np.minimum(N, 2.0 ** np.minimum(deg, 62))
        ecap = np.minimum(N, 2.0 ** np.minimum(bsize, 62))
        work = float(np.dot(ncap, deg) + np.dot(ecap, bsize))
        self.available = bool(
            (deg.size == 0 or deg.max() <= MAX_PATTERN_DEGREE)
            and (bsize.size == 0 or bsize.max() <= MAX_PATTERN_DEGREE)
            and work < N * (n + 4 * graph.n_edges))
        if not self.available:
            return
        ngptr = self.g.indptr.copy()  # node groups: the neighbours only, code bit q + 1
        ncodes, nweights, npoff, _ = compress(x, ngptr, self.g.indices,
                                              ncap.astype(np.int64))
        self.nodes = (ncodes << 1, nweights, npoff)  # the kernel reads neighbour q at bit q + 1
        self.pairs = compress(x, gptr, gnodes, ecap.astype(np.int64))[:3]

    def __call__(self, bias, coupling):
        """``(mean (n,), pair (E,))`` at the given parameters."""
        b = np.ascontiguousarray(bias, dtype=np.float64)
        j = np.ascontiguousarray(coupling, dtype=np.float64)
        return _k.smci1_moments(self.nodes, self.pairs, self.boundaries, self.g, b, j)


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
