"""Exact inference by enumerating every state: the reference of every other engine.

**Factor graphs.** The joint log-weight table ``Σ_k θ_k(x_{S_k})`` of a
:class:`~mrflib.models.factor_graph.FactorGraph` over all ``Π_i |X_i|`` states (axis ``i``
is variable ``i``) is built by broadcasting every factor, then ``log Z``, marginals, factor
marginals, the MAP state and samples are read off it (:func:`joint_log_table`,
:func:`log_partition`, :func:`marginals`, :func:`factor_marginals`, :func:`map_assignment`,
:func:`sample`). It is the reference the junction-tree engine
(:mod:`mrflib.inference.exact.elimination`) is tested against, and the fastest way on small
models.

**Boltzmann machines.** The ``2^n`` spin configurations of ``P(x) ∝ exp(Σ b_i x_i + Σ J_ij
x_i x_j)`` (eq. (3) of the GSMCI paper) are enumerated in the state order where bit ``k``
of a state's index is spin ``k`` (bit set means ``x_k = +1``), so spin 0 is the least
significant digit, as in the flat order of ``book/notation.md`` (:func:`states`,
:func:`index_to_states`, :func:`states_to_index`). The kernels split the spins into a low
block (``l`` spins) and a high block (``h = n - l`` spins) and write every log-weight as

.. math::  \\log w(x) = E_{hi}(x_{hi}) + E_{lo}(x_{lo}) + x_{hi}^T W_{hi,lo} x_{lo},

so all ``2^n`` log-weights come from one ``(2^h, h) (h, l) (l, 2^l)`` BLAS product,
and all first and second moments from a handful of products of the same size
(``O(2^n (l + h))`` work instead of ``O(2^n n^2)`` for ``X^T diag(p) X``).
Everything is done in log space with a log-sum-exp shift. A model whose log-weights
would pass the float range is enumerated with its parameters scaled by ``2^-k``
(:func:`mrflib.models.boltzmann.overflow_exponent`), the differences to the largest
log-weight scaled back by ``2^k`` before the exponential: its probabilities, moments and
samples stay exact and finite, and ``log Z`` is ``+inf`` (with a warning) only when it is
beyond the range. The front :mod:`mrflib.inference.exact` chooses this engine
(``method="enumerate"``, or ``"auto"`` up to 20 spins) and exports the machine's functions
(:func:`log_weights`, :func:`log_probabilities`, :func:`correlation_matrix`,
:func:`covariance_matrix`); the helpers without an underscore that are not in ``__all__``
are its kernels.

Both enumerations hold at most :data:`MAX_STATE_BYTES_FACTOR` bytes a state at their peak
and refuse, before allocating, a table that would not fit.

Precision: exact within the limit :mod:`mrflib.models.precision` states (and argues once
for every engine); beyond it :mod:`mrflib.inference.exact` warns before calling this engine.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from mrflib._support.validation import (
    as_rng,
    check_indices,
    check_instance,
    check_positive,
    check_spins,
    format_count,
    require_memory,
)
from mrflib.inference._factor_ops import expand, logsumexp, renormalize
from mrflib.models.boltzmann import (
    BoltzmannMachine,
    check_model,
    overflow_exponent,
    unscale_log_partition,
)
from mrflib.models.factor_graph import FactorGraph, flat_index, flat_states
from mrflib.models.precision import checked

__all__ = ["joint_log_table", "joint_probabilities", "log_partition", "marginals",
           "factor_marginals", "map_assignment", "sample",
           "states", "index_to_states", "states_to_index", "log_weights", "log_probabilities",
           "correlation_matrix", "covariance_matrix", "MAX_STATE_BYTES_FACTOR"]

#: Bytes per state an enumeration holds at its peak (three float64 tables of the states).
MAX_STATE_BYTES_FACTOR = 24


@checked
def joint_log_table(model: FactorGraph) -> np.ndarray:
    """Log-weights ``Σ_k θ_k(x_{S_k})`` of every state, refused before allocating when they
    would not fit.

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.

    Returns
    -------
    ndarray of float64, shape tuple(model.cardinalities)
        Axis ``i`` is variable ``i``; ``-inf`` where a state has zero weight.

    Raises
    ------
    ValueError
        When the table (24 bytes a state at the peak) does not fit in memory.
    """
    if not isinstance(model, FactorGraph):
        raise TypeError(f"model must be a FactorGraph, got {type(model).__name__}")
    shape = tuple(int(c) for c in model.cardinalities)
    total = math.prod(shape)
    require_memory(MAX_STATE_BYTES_FACTOR * total,
                   f"enumeration of the {format_count(total)} states of {model!r}")
    out = np.zeros(shape)
    target = range(model.n)
    for s, t in zip(model.scopes, model.log_tables):
        out += expand(t, s, target)
    return out


@checked
def log_partition(model: FactorGraph) -> float:
    """``log Z = log Σ_x exp Σ_k θ_k(x_{S_k})``.

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.

    Returns
    -------
    float
        The natural log of the partition function; ``-inf`` when every weight is zero.
    """
    lw = joint_log_table(model)
    return float(logsumexp(lw, tuple(range(lw.ndim))))


@checked
def joint_probabilities(model: FactorGraph) -> np.ndarray:
    """``P(x)`` of every state, shaped like :func:`joint_log_table`.

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.

    Returns
    -------
    ndarray of float64, shape tuple(model.cardinalities)
        The probabilities, axis ``i`` variable ``i``.

    Raises
    ------
    ValueError
        When ``Z = 0`` (every state has zero weight).
    """
    lw = joint_log_table(model)
    logz = logsumexp(lw, tuple(range(lw.ndim)))
    if logz == -np.inf:
        raise ValueError("model has Z = 0 (every state has zero weight): its distribution "
                         "is undefined")
    return renormalize(np.exp(lw - logz), float(logz))


@checked
def marginals(model: FactorGraph) -> list[np.ndarray]:
    """``P(x_i)`` for every variable.

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.

    Returns
    -------
    list of ndarray of float64
        One ``(|X_i|,)`` array per variable.
    """
    p = joint_probabilities(model)
    axes = range(p.ndim)
    return [p.sum(axis=tuple(a for a in axes if a != i)) for i in axes]


@checked
def factor_marginals(model: FactorGraph) -> list[np.ndarray]:
    """``P(x_{S_k})`` for every factor.

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.

    Returns
    -------
    list of ndarray of float64
        One array per factor, shaped like ``model.log_tables[k]`` (axes in scope order).
    """
    p = joint_probabilities(model)
    out = []
    for s in model.scopes:
        m = p.sum(axis=tuple(a for a in range(p.ndim) if a not in s))
        ordered = sorted(s)
        out.append(np.transpose(m, [ordered.index(v) for v in s]) if s else np.asarray(1.0))
    return out


@checked
def map_assignment(model: FactorGraph) -> tuple[np.ndarray, float]:
    """The first most probable state in C order and its log-weight.

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.

    Returns
    -------
    x : ndarray of int64, shape (n,)
        The state: among ties, the first in C order (variable 0 the slowest digit).
    log_weight : float
        Its log-weight ``Σ_k θ_k(x_{S_k})``.

    Raises
    ------
    ValueError
        When ``Z = 0`` (every state has zero weight).
    """
    lw = joint_log_table(model)
    flat = int(np.argmax(lw))
    if lw.flat[flat] == -np.inf:
        raise ValueError("model has Z = 0 (every state has zero weight): it has no most "
                         "probable state")
    x = np.array(np.unravel_index(flat, lw.shape), dtype=np.int64)
    return x, float(lw.flat[flat])


@checked
def sample(model: FactorGraph, n_samples: int, *, rng: Any) -> np.ndarray:
    """Exact i.i.d. samples by inverse CDF over the enumerated states (one uniform each).

    Parameters
    ----------
    model : FactorGraph
        The model; a ``TypeError`` names ``model`` otherwise.
    n_samples : int
        Number of samples, at least 1.
    rng : int or numpy.random.Generator
        Seed or generator of the uniforms; the same seed gives the same samples.

    Returns
    -------
    ndarray of int64, shape (n_samples, n)
        The samples, states ``0..|X_i|-1``.
    """
    check_instance(model, FactorGraph, "model")
    n_samples = int(check_positive(n_samples, "n_samples", integer=True))
    rng = as_rng(rng)
    require_memory(8.0 * n_samples * (model.n + 3), f"n_samples = {n_samples} samples of "
                   f"{model.n} variables")
    cdf = np.cumsum(joint_probabilities(model).ravel())
    u = rng.random(n_samples) * cdf[-1]
    idx = np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1)
    shape = tuple(int(c) for c in model.cardinalities)
    return np.stack(np.unravel_index(idx, shape), axis=1).astype(np.int64)


def check_enumerable(n: int, what: str = "exact enumeration") -> None:
    """Refuse (``ValueError`` naming ``what``) an enumeration of ``2^n`` states whose tables
    do not fit in memory."""
    require_memory(MAX_STATE_BYTES_FACTOR * 2.0**n, f"{what} of 2^{n} states")


def _check_bits(n: Any) -> int:
    """The number of spins of a flat-index table: ``0 <= n <= 62`` (indices are int64)."""
    n = check_positive(n, "n", integer=True, allow_zero=True)
    if n > 62:
        raise ValueError(f"n must be at most 62 (flat indices are int64), got {n}")
    return n


def index_to_states(index: Any, n: int) -> np.ndarray:
    """Spin configurations of flat state indices.

    Parameters
    ----------
    index : array_like of int
        Flat indices in ``0..2^n - 1`` (bit ``k`` is spin ``k``).
    n : int
        Number of spins, ``0 <= n <= 62``.

    Returns
    -------
    ndarray of int8, shape (len(index), n)
        The spins ``-1/+1``.
    """
    n = _check_bits(n)
    index = check_indices(index, 2**n, "index")
    return (2 * flat_states(index, np.full(n, 2)) - 1).astype(np.int8)


def states_to_index(x: Any, n: int | None = None) -> np.ndarray:
    """Flat state indices of spin configurations.

    Parameters
    ----------
    x : array_like of int, shape (M, n)
        Spins ``-1/+1``, at most 62 of them.
    n : int or None, default None
        Number of spins (``None``: ``x.shape[1]``).

    Returns
    -------
    ndarray of int64, shape (M,)
        The indices (bit ``k`` set where spin ``k`` is ``+1``).
    """
    s = check_spins(x, n, "x")
    if s.shape[1] > 62:
        raise ValueError(f"x has {s.shape[1]} spins; flat indices need at most 62")
    return flat_index(s > 0, np.full(s.shape[1], 2))


def states(n: int) -> np.ndarray:
    """All ``2^n`` configurations in flat index order.

    Parameters
    ----------
    n : int
        Number of spins, ``0 <= n <= 62``; refused (``ValueError``) when the table does not
        fit in memory.

    Returns
    -------
    ndarray of int8, shape (2^n, n)
        Row ``k``: the spins of index ``k``.
    """
    n = _check_bits(n)
    require_memory((18.0 * n + 16) * 2.0**n, f"the table of 2^{n} states (n={n})")
    return index_to_states(np.arange(2**n, dtype=np.int64), n)


def _split(n: int) -> tuple[int, int]:
    lo = n - n // 2
    return lo, n - lo


def _block_energy(X: np.ndarray, b: np.ndarray, W_upper: np.ndarray) -> np.ndarray:
    return X @ b + np.einsum("si,ij,sj->s", X, W_upper, X) if X.shape[1] else np.zeros(len(X))


def log_weight_table(bias: np.ndarray, edges: np.ndarray, coupling: np.ndarray
                     ) -> tuple[np.ndarray, int]:
    """All log-weights times ``2^-k`` as a ``(2^h, 2^l)`` matrix (row = high block, column
    = low block), and ``k`` (:func:`mrflib.models.boltzmann.overflow_exponent`; 0 in ordinary
    range)."""
    n = bias.shape[0]
    check_enumerable(n)
    k = overflow_exponent(bias, coupling)
    if k:
        bias, coupling = np.ldexp(bias, -k), np.ldexp(coupling, -k)
    lo, hi = _split(n)
    Xlo = states(lo).astype(np.float64)
    Xhi = states(hi).astype(np.float64)
    W = np.zeros((n, n))
    W[edges[:, 0], edges[:, 1]] = coupling  # upper triangle, i < j
    e_lo = _block_energy(Xlo, bias[:lo], W[:lo, :lo])
    e_hi = _block_energy(Xhi, bias[lo:], W[lo:, lo:])
    lw = (Xhi @ W[:lo, lo:].T) @ Xlo.T  # cross terms x_hi^T W_hi,lo x_lo
    lw += e_hi[:, None]
    lw += e_lo[None, :]
    return lw, k


def scaled_log_partition(lw: np.ndarray, k: int) -> float:
    """``2^-k log Z`` from log-weights times ``2^-k`` (one temporary of their size)."""
    shift = lw.max()
    tmp = lw - shift
    if k:
        with np.errstate(over="ignore"):  # far below the mode: -inf, weight 0
            tmp *= 2.0**k
    np.exp(tmp, out=tmp)
    return float(shift + np.log(tmp.sum()) / 2.0**k)


def normalize_in_place(lw: np.ndarray, k: int = 0) -> float:
    """Turn log-weights times ``2^-k`` into probabilities in place; return ``log Z``
    (``+inf`` with a warning beyond the float range)."""
    shift = lw.max()
    lw -= shift
    if k:
        with np.errstate(over="ignore"):  # far below the mode: -inf, weight 0
            lw *= 2.0**k
    np.exp(lw, out=lw)
    total = lw.sum()
    lw /= total
    return unscale_log_partition(float(shift + np.log(total) / 2.0**k), k)


def log_probabilities(model: BoltzmannMachine) -> np.ndarray:
    """``log P(x)`` of all ``2^n`` states, flat; ``-inf`` only where ``P(x)`` underflows.

    Holds at most two tables of ``2^n`` floats at a time (the divergences of
    :mod:`mrflib.inference.exact.divergence` compare two models by them).

    Parameters
    ----------
    model : BoltzmannMachine
        A machine of ``n`` spins, small enough to enumerate (a ``TypeError`` naming
        ``model`` for anything else).

    Returns
    -------
    ndarray of float64
        ``2^n`` log-probabilities in flat index order; ``-inf`` only where ``P(x)``
        underflows, also where the log-weights are beyond the float range
        (:func:`log_weights` is ``±inf`` there).

    Raises
    ------
    ValueError
        When the tables of an ``n`` would not fit in memory.
    """
    bm = check_model(model, "model")
    lw, k = log_weight_table(bm.bias, bm.edges, bm.coupling)
    lw = lw.ravel()
    if not k:
        lw -= scaled_log_partition(lw, k)
        return lw
    lw -= lw.max()  # then 2^k (lw - max) - log Σ exp(...): log 3 of three tied modes
    with np.errstate(over="ignore"):  # is below the last bit of the scaled log-weights
        lw *= 2.0**k
    lw -= scaled_log_partition(lw, 0)
    return lw


def moments_matrix(P: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Means and the full ``(n, n)`` second-moment matrix from the probability matrix."""
    lo, hi = _split(n)
    Xlo = states(lo).astype(np.float64)
    Xhi = states(hi).astype(np.float64)
    p_lo = P.sum(axis=0)
    p_hi = P.sum(axis=1)
    mean = np.concatenate([Xlo.T @ p_lo, Xhi.T @ p_hi])
    C = np.empty((n, n))
    C[:lo, :lo] = Xlo.T @ (p_lo[:, None] * Xlo)
    C[lo:, lo:] = Xhi.T @ (p_hi[:, None] * Xhi)
    cross = (Xhi.T @ P) @ Xlo  # (hi, lo)
    C[lo:, :lo] = cross
    C[:lo, lo:] = cross.T
    np.fill_diagonal(C, 1.0)
    return mean, C


def log_weights(model: BoltzmannMachine) -> np.ndarray:
    """Unnormalized log-probabilities of all ``2^n`` states.

    Parameters
    ----------
    model : BoltzmannMachine
        The model (a ``TypeError`` naming ``model`` otherwise).

    Returns
    -------
    ndarray of float64, shape (2^n,)
        In flat index order. A log-weight beyond the float range is ``±inf`` (its
        probability is still finite: see :func:`mrflib.inference.exact.probabilities`).

    Raises
    ------
    ValueError
        When the tables of an ``n`` would not fit in memory.
    """
    bm = check_model(model, "model")
    lw, k = log_weight_table(bm.bias, bm.edges, bm.coupling)
    if not k:
        return lw.ravel()
    with np.errstate(over="ignore"):
        return np.ldexp(lw.ravel(), k)


def enumerated_moments(bm: BoltzmannMachine) -> tuple[float, np.ndarray, np.ndarray]:
    """``log Z``, the means and the second moments (ones on the diagonal) of a checked
    machine, from one table of its ``2^n`` states: what the moment functions share."""
    P, k = log_weight_table(bm.bias, bm.edges, bm.coupling)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its callers return no log Z
        logz = normalize_in_place(P, k)
    mean, C = moments_matrix(P, bm.n)
    return logz, mean, C


@checked
def correlation_matrix(model: BoltzmannMachine) -> np.ndarray:
    """Exact second moments ``⟨x_i x_j⟩`` for all pairs, by enumeration.

    Parameters
    ----------
    model : BoltzmannMachine
        The model (a ``TypeError`` naming ``model`` otherwise).

    Returns
    -------
    ndarray of float64, shape (n, n)
        The second moments, ones on the diagonal.
    """
    _, _, C = enumerated_moments(check_model(model, "model"))
    return C


@checked
def covariance_matrix(model: BoltzmannMachine) -> np.ndarray:
    """Exact covariances ``⟨x_i x_j⟩ - ⟨x_i⟩⟨x_j⟩`` for all pairs, by enumeration.

    Parameters
    ----------
    model : BoltzmannMachine
        The model (a ``TypeError`` naming ``model`` otherwise).

    Returns
    -------
    ndarray of float64, shape (n, n)
        The covariances.
    """
    _, mean, C = enumerated_moments(check_model(model, "model"))
    return C - np.outer(mean, mean)

