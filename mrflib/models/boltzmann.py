"""The pairwise Boltzmann machine with ±1 spins.

.. math::

    P(x) = \\frac{1}{Z} \\exp\\Big(\\sum_i b_i x_i + \\sum_{(i,j) \\in E} J_{ij} x_i x_j\\Big),
    \\qquad x \\in \\{-1, +1\\}^n,

eq. (3) of Yasuda & Uchizawa (GSMCI) and eq. (1) of Yasuda (SMCI learning), with
``b_i = w_i`` (bias) and ``J_ij = w_{i,j}`` (interaction).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from mrflib._support.deprecation import renamed_argument, warn_deprecated
from mrflib._support.validation import (
    as_rng,
    check_array,
    check_bias,
    check_coupling,
    check_edges,
    check_instance,
    check_nodes,
    check_positive,
    check_spins,
    require_memory,
)
from mrflib.models import graphs

__all__ = ["BoltzmannMachine", "check_model", "clamp", "overflow_exponent", "unscale_log_partition",
           "to_spins", "to_states"]

#: Sums of log-weights are kept below ``2^LOG_WEIGHT_MAX_EXPONENT`` (float64 ends at 2^1024).
LOG_WEIGHT_MAX_EXPONENT = 1000


class _Omitted:
    """The default of an ``rng`` whose omission is deprecated: the old seed 0 is used, with a
    :class:`FutureWarning` (``rng=0`` gives the same bits without one)."""

    def __repr__(self) -> str:
        return "<omitted>"


_OMITTED_RNG: Any = _Omitted()


def overflow_exponent(bias: np.ndarray, coupling: np.ndarray) -> int:
    """The smallest ``k >= 0`` with ``2^-k (Σ|b_i| + Σ|J_e|) < 2^1000``.

    Every log-weight ``Σ b_i x_i + Σ J_ij x_i x_j``, every partial sum of one and every
    message of variable elimination is bounded by ``Σ|b_i| + Σ|J_e|`` (plus ``log 2`` per
    summed spin). The engines work with the parameters times ``2^-k`` (exact: a power of
    two) and multiply differences of log-weights by ``2^k`` only after the log-sum-exp
    shift, so a model with parameters near the float maximum gives no ``inf - inf``.

    Parameters
    ----------
    bias : ndarray of float64, shape (n,)
        The biases ``b_i`` (not checked).
    coupling : ndarray of float64, shape (E,)
        The couplings ``J_e`` (not checked).

    Returns
    -------
    int
        The exponent ``k``: ``k = 0`` (no rescaling, bit-identical results) for every model
        of ordinary range.
    """
    with np.errstate(over="ignore"):
        total = float(np.add.reduce(np.abs(bias))) + float(np.add.reduce(np.abs(coupling)))
    if total < 2.0**LOG_WEIGHT_MAX_EXPONENT:  # (rounding of the sum: far inside the margin)
        return 0
    top = max(float(np.max(np.abs(bias), initial=0.0)),
              float(np.max(np.abs(coupling), initial=0.0)))
    terms = len(bias) + len(coupling) + 1
    bits = math.frexp(top)[1] + int(terms - 1).bit_length()  # the sum < top * terms < 2^bits
    return max(0, bits - LOG_WEIGHT_MAX_EXPONENT)


def to_spins(states: Any) -> np.ndarray:
    """Binary states ``0/1`` as spins ``int8`` ``-1/+1``.

    Parameters
    ----------
    states : array_like of int
        Binary states ``0/1`` of any shape (a factor graph's, state 0 = spin -1, as
        :meth:`~mrflib.models.factor_graph.FactorGraph.from_boltzmann` numbers them).
        Anything but integers 0 and 1 is a ``ValueError``.

    Returns
    -------
    ndarray of int8
        The spins ``2 s - 1``, same shape.
    """
    arr = np.asarray(states)
    if arr.dtype.kind not in "iu" or not np.all((arr == 0) | (arr == 1)):
        raise ValueError("states must contain only binary states 0 and 1")
    return (2 * arr.astype(np.int8) - 1).astype(np.int8)


def to_states(spins: Any) -> np.ndarray:
    """Spins ``-1/+1`` as the binary states ``int64`` ``0/1``.

    Parameters
    ----------
    spins : array_like of int or float
        Spins ``-1/+1`` of any shape; anything else is a ``ValueError``.

    Returns
    -------
    ndarray of int64
        The states of :meth:`~mrflib.models.factor_graph.FactorGraph.from_boltzmann` (spin -1
        is state 0), same shape.
    """
    arr = np.asarray(spins)
    if arr.dtype.kind not in "iuf" or not np.all((arr == 1) | (arr == -1)):
        raise ValueError("spins must contain only spins -1 and +1")
    return (arr > 0).astype(np.int64)


def unscale_log_partition(scaled: float, k: int) -> float:
    """``log Z`` from its value scaled by ``2^-k`` (see :func:`overflow_exponent`).

    Parameters
    ----------
    scaled : float
        ``2^-k log Z``, as an engine computed it.
    k : int
        The exponent of :func:`overflow_exponent`.

    Returns
    -------
    float
        ``log Z = 2^k scaled``. A ``log Z`` beyond the float range is returned as ``+inf``
        with a ``RuntimeWarning`` (the moments and samples of such a model are still finite
        and exact).
    """
    with np.errstate(over="ignore"):
        logz = float(np.ldexp(scaled, k))
    if np.isinf(logz) and np.isfinite(scaled):
        warnings.warn(f"log Z = {scaled:.6g} x 2^{k} is beyond the float range "
                      "(1.8e308); returning inf",
                      RuntimeWarning, stacklevel=3)
    return logz


class BoltzmannMachine:
    """A pairwise Boltzmann machine (PBM) on ±1 spins.

    Parameters
    ----------
    bias : array_like, shape (n,)
        Biases ``b_i`` (the papers' ``w_i`` or thresholds ``θ_i``).
    edges : array_like, shape (E, 2), or Graph
        Canonical edge array (``i < j``, sorted rows, no duplicates) or a
        :class:`mrflib.models.graphs.Graph` on ``n = len(bias)`` nodes (used as is).
    coupling : array_like, shape (E,)
        Couplings ``J_e`` for each edge row (the papers' ``w_{ij}``).

    Attributes
    ----------
    bias : ndarray of float64, shape (n,)
        The biases, read-only.
    graph : Graph
        The :class:`mrflib.models.graphs.Graph` of the machine.
    coupling : ndarray of float64, shape (E,)
        The couplings, one per edge row, read-only.
    n : int
        Number of spins.
    edges : ndarray of int64, shape (E, 2)
        The canonical edge array, ``graph.edges`` (read-only).
    params : ndarray of float64, shape (n + E,)
        All parameters as one vector ``concat(bias, coupling)`` (a new array).

    Notes
    -----
    Instances are treated as immutable: the arrays are copied and made read-only.
    Use :meth:`with_params` for a model with new parameters on the same graph.
    ``bm.graph`` is the :class:`mrflib.models.graphs.Graph` (``bm.edges`` its edge array).
    """

    __slots__ = ("bias", "graph", "coupling", "_weights")

    def __init__(self, bias: Any, edges: Any, coupling: Any) -> None:
        bias = check_bias(bias).copy()
        graph = graphs.as_graph(edges, bias.shape[0])
        coupling = check_coupling(coupling, graph.n_edges).copy()
        for a in (bias, coupling):
            a.flags.writeable = False
        self.bias = bias
        self.graph = graph
        self.coupling = coupling
        self._weights = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def random(
        cls,
        edges: Any,
        n: int,
        bias_scale: float = 0.2,
        coupling_scale: float = 0.3,
        *,
        rng: Any = _OMITTED_RNG,
    ) -> BoltzmannMachine:
        """Biases ~ U[-bias_scale, bias_scale], couplings ~ U[-coupling_scale, coupling_scale].

        The defaults are the generating models of the SMCI papers' experiments
        (GSMCI section 4: biases U[-0.2, 0.2], couplings U[-0.3, 0.3]).

        Parameters
        ----------
        edges : array_like of int, shape (E, 2), or Graph
            A canonical edge array or a :class:`mrflib.models.graphs.Graph` on ``n`` nodes.
        n : int
            Number of spins, positive.
        bias_scale : float, default 0.2
            Half-width of the biases' uniform range, ``>= 0``.
        coupling_scale : float, default 0.3
            Half-width of the couplings' uniform range, ``>= 0``.
        rng : numpy.random.Generator or int
            Generator or non-negative seed: the biases are drawn first, then the couplings
            in edge order. Omitting it is deprecated: seed 0 is used, with a
            :class:`FutureWarning`.

        Returns
        -------
        BoltzmannMachine
            The random machine.

        Raises
        ------
        ValueError
            If the parameters would need more memory than is available.
        """
        if rng is _OMITTED_RNG:
            warn_deprecated("BoltzmannMachine.random() without rng=",
                            "BoltzmannMachine.random(..., rng=<seed or Generator>)")
            rng = 0
        n = check_positive(n, "n", integer=True)
        require_memory(24.0 * n, f"BoltzmannMachine.random with n={n} nodes")
        edges = graphs.as_graph(edges, n)
        bias_scale = check_positive(bias_scale, "bias_scale", allow_zero=True)
        coupling_scale = check_positive(coupling_scale, "coupling_scale", allow_zero=True)
        rng = as_rng(rng)
        bias = rng.uniform(-bias_scale, bias_scale, size=n)
        coupling = rng.uniform(-coupling_scale, coupling_scale, size=edges.n_edges)
        return cls(bias, edges, coupling)

    @classmethod
    def from_01(cls, bias01: Any, edges: Any, coupling01: Any) -> BoltzmannMachine:
        """The same distribution written for ±1 spins from a {0, 1} parameterization.

        ``P(s) ∝ exp(Σ a_i s_i + Σ c_ij s_i s_j)`` with ``s_i ∈ {0, 1}`` (e.g. the LAP
        paper's Ising model, eq. (3), and the FSLL paper's eq. (1)) equals this model
        under ``s_i = (x_i + 1) / 2``: ``J_ij = c_ij / 4`` and
        ``b_i = a_i / 2 + Σ_j c_ij / 4``.

        Parameters
        ----------
        bias01 : array_like of float, shape (n,)
            The {0, 1} biases ``a_i``.
        edges : array_like of int, shape (E, 2)
            A canonical edge array on ``n`` nodes.
        coupling01 : array_like of float, shape (E,)
            The {0, 1} couplings ``c_ij``, one per edge row.

        Returns
        -------
        BoltzmannMachine
            The same distribution on ±1 spins.
        """
        bias01 = check_array(bias01, "bias01", ndim=1)
        edges = check_edges(edges, bias01.shape[0])
        coupling01 = check_array(coupling01, "coupling01", shape=(len(edges),))
        b = bias01 / 2.0
        np.add.at(b, edges[:, 0], coupling01 / 4.0)
        np.add.at(b, edges[:, 1], coupling01 / 4.0)
        return cls(b, edges, coupling01 / 4.0)

    def to_01(self) -> tuple[np.ndarray, np.ndarray]:
        """Inverse of :meth:`from_01`: the {0, 1} parameterization of the same distribution.

        Returns
        -------
        a : ndarray of float64, shape (n,)
            The {0, 1} biases ``a_i = 2 b_i - Σ_j 2 J_ij``.
        c : ndarray of float64, shape (E,)
            The {0, 1} couplings ``c_ij = 4 J_ij``.
        """
        c = 4.0 * self.coupling
        a = 2.0 * self.bias
        np.add.at(a, self.edges[:, 0], -2.0 * self.coupling)
        np.add.at(a, self.edges[:, 1], -2.0 * self.coupling)
        return a, c

    @classmethod
    def _from_checked(cls, bias: np.ndarray, graph: graphs.Graph, coupling: np.ndarray,
                      weights: np.ndarray | None = None) -> BoltzmannMachine:
        """Internal fast path for hot loops (a learner builds one machine per step).

        The caller guarantees what ``__init__`` would check: float64 ``bias (n,)`` with
        ``n = graph.n``, float64 ``coupling (E,)``, and, if given, ``weights`` equal to
        ``coupling[graph.edge_ids]``. The arrays are owned by the new machine and made
        read-only.
        """
        bm = object.__new__(cls)
        for a in (bias, coupling):
            a.flags.writeable = False
        bm.bias, bm.graph, bm.coupling = bias, graph, coupling
        bm._weights = weights
        return bm

    def with_params(self, theta: Any) -> BoltzmannMachine:
        """A model on the same graph with parameters ``theta = concat(bias, coupling)``.

        Parameters
        ----------
        theta : array_like of float, shape (n + E,)
            The biases, then the couplings in edge order (finite).

        Returns
        -------
        BoltzmannMachine
            A new machine on ``graph``.
        """
        theta = check_array(theta, "theta", shape=(self.n + len(self.edges),))
        return BoltzmannMachine(theta[: self.n], self.graph, theta[self.n:])

    def copy(self) -> BoltzmannMachine:
        """A machine with the same parameters and graph.

        Returns
        -------
        BoltzmannMachine
            A new machine equal to this one.
        """
        return BoltzmannMachine(self.bias, self.graph, self.coupling)

    # ------------------------------------------------------------------ properties
    @property
    def n(self) -> int:
        """Number of spins."""
        return self.graph.n

    @property
    def edges(self) -> np.ndarray:
        """The canonical ``(E, 2)`` edge array (read-only), ``self.graph.edges``."""
        return self.graph.edges

    @property
    def params(self) -> np.ndarray:
        """All parameters as one vector ``concat(bias, coupling)``."""
        return np.concatenate([self.bias, self.coupling])

    def adjacency(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CSR adjacency with weights: ``(indptr, indices, weights)`` (cached).

        Returns
        -------
        indptr : ndarray of int64, shape (n + 1,)
            Row pointers, those of ``graph.csr``.
        indices : ndarray of int64, shape (2E,)
            The neighbours of node ``i`` are ``indices[indptr[i]:indptr[i + 1]]``.
        weights : ndarray of float64, shape (2E,)
            The couplings to the neighbours of ``i`` are
            ``weights[indptr[i]:indptr[i + 1]]`` (read-only).
        """
        indptr, indices, eids = self.graph.csr
        if self._weights is None:
            weights = np.ascontiguousarray(self.coupling[eids], dtype=np.float64)
            weights.flags.writeable = False
            self._weights = weights
        return indptr, indices, self._weights

    def coupling_matrix(self) -> np.ndarray:
        """Dense symmetric ``(n, n)`` coupling matrix with a zero diagonal.

        Returns
        -------
        ndarray of float64, shape (n, n)
            ``W[i, j] = W[j, i] = J_ij`` for every edge, zero elsewhere.
        """
        W = np.zeros((self.n, self.n))
        i, j = self.edges[:, 0], self.edges[:, 1]
        W[i, j] = self.coupling
        W[j, i] = self.coupling
        return W

    # ------------------------------------------------------------------ evaluation
    def log_weight(self, x: Any) -> np.ndarray | float:
        """Unnormalized log-probability ``Σ b_i x_i + Σ J_ij x_i x_j``.

        Parameters
        ----------
        x : array_like, shape (n,) or (M, n)
            One configuration or ``M`` of them, spins ``-1/+1`` (checked).

        Returns
        -------
        float or ndarray of float64, shape (M,)
            ``x`` of shape ``(n,)`` gives a float, ``(M, n)`` an array ``(M,)``.
        """
        single = np.ndim(x) == 1
        s = check_spins(x, self.n, "x").astype(np.float64)
        i, j = self.edges[:, 0], self.edges[:, 1]
        lw = s @ self.bias + (s[:, i] * s[:, j]) @ self.coupling
        return float(lw[0]) if single else lw

    def local_field(self, x: Any) -> np.ndarray:
        """Local fields ``h_i = b_i + Σ_j J_ij x_j`` for each configuration, shape ``(M, n)``.

        Parameters
        ----------
        x : array_like, shape (n,) or (M, n)
            One configuration or ``M`` of them, spins ``-1/+1`` (checked).

        Returns
        -------
        ndarray of float64, shape (M, n)
            The local fields of each configuration (``M = 1`` for one configuration).
        """
        s = check_spins(x, self.n, "x").astype(np.float64)
        h = np.broadcast_to(self.bias, s.shape).copy()
        i, j = self.edges[:, 0], self.edges[:, 1]
        np.add.at(h.T, i, (s[:, j] * self.coupling).T)
        np.add.at(h.T, j, (s[:, i] * self.coupling).T)
        return h

    def __repr__(self) -> str:
        return f"BoltzmannMachine(n={self.n}, edges={len(self.edges)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BoltzmannMachine):
            return NotImplemented
        return (
            np.array_equal(self.bias, other.bias)
            and np.array_equal(self.edges, other.edges)
            and np.array_equal(self.coupling, other.coupling)
        )

    __hash__ = None  # type: ignore[assignment]


@renamed_argument("bm", "model")
def check_model(model: Any, name: str = "model") -> BoltzmannMachine:
    """Return ``model`` if it is a :class:`BoltzmannMachine`, else ``TypeError`` naming ``name``.

    Parameters
    ----------
    model : object
        The object to check.
    name : str, default "model"
        The argument named in the error message.

    Returns
    -------
    BoltzmannMachine
        ``model`` itself.

    Raises
    ------
    TypeError
        If ``model`` is not a :class:`BoltzmannMachine`.
    """
    return check_instance(model, BoltzmannMachine, name)


def clamp(model: BoltzmannMachine, nodes: Any, values: Any
          ) -> tuple[BoltzmannMachine, np.ndarray, float]:
    """Clamp spins ``x_nodes = values``; return the model of the free spins.

    A clamped spin adds ``J_ij x_j`` to the bias of each free neighbour ``i`` (the
    auxiliary fields of SMCI's sum regions and LAP's 1-neighbourhoods).

    Parameters
    ----------
    model : BoltzmannMachine
        The model (a ``TypeError`` naming ``model`` otherwise).
    nodes : array_like of int
        The clamped spins, distinct, in any order; at least one spin must stay free.
    values : array_like of int
        Their spins ``-1/+1``, in the order of ``nodes``.

    Returns
    -------
    free_model : BoltzmannMachine
        ``P(x_free | x_nodes) ∝ exp(free_model.log_weight)``.
    free : ndarray of int64
        The free nodes in increasing order (node ``free[a]`` is spin ``a`` of
        ``free_model``).
    constant : float
        The clamped spins' own energy, so that
        ``log P(x_nodes) = constant + log Z(free_model) - log Z(model)``.
    """
    model = check_model(model, "model")
    raw = np.atleast_1d(np.asarray(nodes))
    nodes = check_nodes(raw, model.n, "nodes")
    x = check_spins(np.atleast_1d(values), len(nodes), "values")[0].astype(np.float64)
    x = x[np.argsort(raw, kind="stable")]
    clamped = np.zeros(model.n, dtype=bool)
    clamped[nodes] = True
    val = np.zeros(model.n)
    val[nodes] = x
    free = np.flatnonzero(~clamped)
    if free.size == 0:
        raise ValueError("nodes must leave at least one spin free")
    i, j = model.edges[:, 0], model.edges[:, 1]
    bias = model.bias.astype(np.float64).copy()
    np.add.at(bias, i, np.where(clamped[j] & ~clamped[i], model.coupling * val[j], 0.0))
    np.add.at(bias, j, np.where(clamped[i] & ~clamped[j], model.coupling * val[i], 0.0))
    both = clamped[i] & clamped[j]
    constant = float(model.bias[nodes] @ x + model.coupling[both] @ (val[i[both]] * val[j[both]]))
    keep = ~clamped[i] & ~clamped[j]
    relabel = -np.ones(model.n, dtype=np.int64)
    relabel[free] = np.arange(free.size)
    sub_edges = np.stack([relabel[i[keep]], relabel[j[keep]]], axis=1)
    return BoltzmannMachine(bias[free], sub_edges, model.coupling[keep]), free, constant
