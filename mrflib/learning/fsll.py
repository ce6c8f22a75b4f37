"""The full-span log-linear (FSLL) model and its fast greedy learner.

Takabatake & Akaho, *Full-Span Log-Linear Model and Fast Learning Algorithm*
({cite}`fsll-takabatake-akaho`). For discrete variables ``x_i in [0, |X_i|)`` the model is

.. math::

    p_\\theta(x) = Z(\\theta)^{-1} \\exp \\sum_{y \\in X} \\theta_y \\Phi_y(x), \\qquad
    \\Phi_y(x) = \\prod_i \\phi^i_{y_i}(x_i)                                   \\quad (3)

with the local bases of eq. (4) (Walsh-Hadamard, ``|X_i| = 2^k``) or eq. (5) (otherwise);
every ``Phi_y`` takes the values ±1. It has ``|X| - 1`` free parameters (``theta_0 = 0``)
and so spans every positive distribution.

State order
-----------
A state ``x`` and a basis index ``y`` are both stored as one flat mixed-radix integer with
``x_0`` the least significant digit: ``index = x_0 + |X_0| (x_1 + |X_1| (x_2 + ...))``
(:func:`flat_index`, :func:`unflatten`). For binary variables bit ``i`` of the index is
``x_i``. Variables are numbered from 0, as in the paper.

What is beyond the paper
------------------------
The paper recomputes the dual vector ``theta_bar = <Phi_y>_p`` from ``p_theta`` by a full
transform after every step (``O(|X| log |X|)``). Because ``exp(delta Phi) = cosh(delta)
(1 + tanh(delta) Phi)`` for ±1-valued ``Phi``, changing one ``theta_{y'}`` by ``delta`` gives

.. math::

    \\bar\\theta_y \\leftarrow \\frac{\\bar\\theta_y + t\\,\\langle \\Phi_y \\Phi_{y'} \\rangle}
    {1 + t\\,\\bar\\theta_{y'}}, \\qquad t = \\tanh \\delta,

and for Walsh bases ``Phi_y Phi_{y'} = Phi_{y XOR y'}``, so the new dual vector is an
``O(|X|)`` XOR-mix of the old one (:func:`dual_update`). For eq. (5) variables the product
``phi_m phi_a`` is still a short combination (``-(phi_0 + phi_m + phi_a)``), so the update stays
``O(|X|)`` per variable on which ``y'`` depends. The learner then needs neither ``p_theta``
nor the ``r`` table during learning: two ``|X|`` tables instead of the paper's four.
``update="transform"`` runs the paper's scheme (Algorithm 3 on ``p``, then a fresh transform).
The tables over the ``|X|`` states, the transforms on them and the learner's two schemes are
:mod:`mrflib.learning._fsll_tables`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mrflib._support.validation import (
    check_array,
    check_indices,
    check_positive,
    check_real,
    is_choice,
    require_memory,
)
from mrflib.learning import _fsll_kernels as _k
from mrflib.learning._fsll_tables import (
    IncrementalDuals,
    TransformDuals,
    check_cardinalities,
    check_states,
    check_table,
    cost_tables,
    cost_weights,
    data_duals,
    dual_update_inplace,
    is_pow2,
    n_states,
    require_tables,
    segments,
    transform_inplace,
)
from mrflib.models import factor_graph

__all__ = [
    "Model",
    "append_delta",
    "append_lower_bound",
    "basis_function",
    "basis_matrix",
    "delta_kl",
    "dual",
    "dual_update",
    "fit",
    "flat_index",
    "local_basis",
    "memory_required",
    "probabilities",
    "regularization",
    "synthesize",
    "unflatten",
]

#: Dual targets are clipped to ``[-1 + TAU, 1 - TAU]``: a data moment ``d_y = ±1`` (a basis
#: function constant on the data) would otherwise ask for ``theta_y = ±inf``.
TAU = 1e-10
_UPDATES = ("incremental", "transform")
_MAX_BASIS_MATRIX = 2**14


# --------------------------------------------------------------------------- state order
def flat_index(states: Any, cardinalities: Any) -> np.ndarray:
    """Flat mixed-radix index of each state, ``x_0`` least significant.

    Parameters
    ----------
    states : array_like, shape (M, n)
        Integer states with ``0 <= x_i < |X_i|``.
    cardinalities : sequence of int
        ``|X_0|, ..., |X_{n-1}|``.

    Returns
    -------
    ndarray of int64, shape (M,)
        ``x_0 + |X_0| (x_1 + |X_1| (x_2 + ...))``.
    """
    cards = check_cardinalities(cardinalities)
    arr = check_states(states, cards, "states")
    return factor_graph.flat_index(arr, cards)


def unflatten(index: Any, cardinalities: Any) -> np.ndarray:
    """Inverse of :func:`flat_index`: the digits ``(M, n)`` of flat indices ``(M,)``.

    Parameters
    ----------
    index : int or array_like of int, shape (M,)
        Flat indices in ``[0, |X|)``.
    cardinalities : sequence of int
        ``|X_0|, ..., |X_{n-1}|``, each at least 2.

    Returns
    -------
    ndarray of int64, shape (M, n)
        The states: row ``m`` holds the digits ``x_0, ..., x_{n-1}`` of ``index[m]``.
    """
    cards = check_cardinalities(cardinalities)
    X = n_states(cards)
    idx = check_indices(index, X, "index")
    return factor_graph.flat_states(idx, cards)


# --------------------------------------------------------------------------- bases
def local_basis(k: int) -> np.ndarray:
    """Local basis functions of one variable with ``k`` values, as the matrix
    ``B[y, x] = phi_y(x)``.

    Eq. (4): the Sylvester Walsh-Hadamard matrix ``H_k`` if ``k`` is a power of two, so that
    ``phi_y(x) = (-1)^popcount(x & y)``; eq. (5) otherwise: ``phi_0 = 1`` and
    ``phi_j(l) = 1`` if ``l = j`` else ``-1`` (``j > 0``).

    Parameters
    ----------
    k : int
        The number of values, at least 2.

    Returns
    -------
    ndarray of float64, shape (k, k)
        ``B[y, x] = phi_y(x)``, entries ±1.
    """
    k = check_positive(k, "k", integer=True)
    if k < 2:
        raise ValueError(f"k must be >= 2, got {k}")
    require_memory(24.0 * k * k, f"local_basis(k={k}): a k x k matrix")
    if is_pow2(k):
        H = np.ones((1, 1))
        while H.shape[0] < k:
            H = np.block([[H, H], [H, -H]])
        return H
    B = -np.ones((k, k))
    B[0, :] = 1.0
    B[np.arange(1, k), np.arange(1, k)] = 1.0
    return B


def basis_matrix(cardinalities: Any) -> np.ndarray:
    """All global basis functions, ``Phi[y, x] = prod_i phi^i_{y_i}(x_i)`` (eq. 3), for small
    state spaces (the brute-force reference). Rows and columns use the flat order.

    Parameters
    ----------
    cardinalities : sequence of int
        ``|X_0|, ..., |X_{n-1}|``, each at least 2; at most
        2^14 states in all.

    Returns
    -------
    ndarray of float64, shape (|X|, |X|)
        ``Phi[y, x]``, entries ±1.
    """
    cards = check_cardinalities(cardinalities)
    X = n_states(cards)
    if X > _MAX_BASIS_MATRIX:
        raise ValueError(
            f"cardinalities give |X| = {X} states; basis_matrix is a brute-force reference "
            f"for |X| <= {_MAX_BASIS_MATRIX}"
        )
    M = np.ones((1, 1))
    for k in cards.tolist():  # x_0 least significant: the last factor of the Kronecker product
        M = np.kron(local_basis(k), M)
    return M


def basis_function(y: Any, cardinalities: Any) -> np.ndarray:
    """Values ``Phi_y(x)`` for every flat state ``x`` (eq. 3).

    Parameters
    ----------
    y : int or array_like of int, shape (n,)
        The basis function: a flat index in ``[0, |X|)`` or its digits ``y_0, ..., y_{n-1}``.
    cardinalities : sequence of int
        ``|X_0|, ..., |X_{n-1}|``, each at least 2.

    Returns
    -------
    ndarray of float64, shape (|X|,)
        ``Phi_y(x)`` in the flat order of ``x``, entries ±1.
    """
    cards = check_cardinalities(cardinalities)
    X = n_states(cards)
    require_tables(8 * X, "basis_function", X)
    if np.ndim(y) == 0:
        yd = unflatten(check_indices(y, X, "y"), cards)[0]
    else:
        yd = check_states(np.asarray(y)[None, :], cards, "y")[0]
    out = np.ones(1)
    for k, yi in zip(cards.tolist(), yd.tolist()):
        out = np.kron(local_basis(k)[yi], out)
    return out


# --------------------------------------------------------------------------- transforms
def dual(p: Any, cardinalities: Any, method: str = "fast") -> np.ndarray:
    """Dual coordinates ``theta_bar_y = <Phi_y>_p = sum_x p(x) Phi_y(x)`` for every ``y``.

    Eq. (8), computed dimension by dimension by eq. (10)-(12): the local transform along
    variable ``i`` is the fast Walsh-Hadamard transform for ``|X_i| = 2^k`` (consecutive such
    variables are done as one transform) and the ``O(|X_i|)`` form of eq. (5) otherwise,
    ``O(|X| log |X|)`` in all.

    Parameters
    ----------
    p : array_like, shape (|X|,)
        A function on states in the flat order (any real table, e.g. a distribution).
    cardinalities : sequence of int
        ``|X_0|, ..., |X_{n-1}|``, each at least 2.
    method : {"fast", "reference"}, default "fast"
        ``"reference"`` multiplies by :func:`basis_matrix` (small ``|X|`` only).

    Returns
    -------
    ndarray of float64, shape (|X|,)
        ``theta_bar_y`` in the flat order of ``y``.
    """
    cards = check_cardinalities(cardinalities)
    X = n_states(cards)
    if method == "reference":
        return basis_matrix(cards) @ check_table(p, X, "p")
    if method != "fast":
        raise ValueError(f"method must be 'fast' or 'reference', got {method!r}")
    require_tables(8 * X, "dual", X)
    out = np.array(check_table(p, X, "p"), dtype=np.float64, copy=True)
    transform_inplace(out, cards, transpose=False)
    return out


def synthesize(theta: Any, cardinalities: Any, method: str = "fast") -> np.ndarray:
    """The log-linear function ``l_theta(x) = sum_y theta_y Phi_y(x)`` of eq. (3) for every ``x``
    (the transposed transform).

    Parameters
    ----------
    theta : array_like of float, shape (|X|,), or dict
        The parameters: a dense table in the flat order of ``y``, or ``{y: theta_y}`` with
        flat indices ``y`` (the others 0), as :attr:`Model.theta`.
    cardinalities : sequence of int
        ``|X_0|, ..., |X_{n-1}|``, each at least 2.
    method : {"fast", "reference"}, default "fast"
        ``"reference"`` multiplies by the transpose of :func:`basis_matrix` (small ``|X|``
        only).

    Returns
    -------
    ndarray of float64, shape (|X|,)
        ``l_theta(x)`` in the flat order of ``x``.
    """
    cards = check_cardinalities(cardinalities)
    X = n_states(cards)
    if isinstance(theta, dict):
        require_tables(8 * X, "synthesize", X)
        dense = np.zeros(X)
        for y, v in theta.items():
            dense[check_indices(y, X, "theta (its keys)")[0]] = check_real(v, "theta")
    else:
        dense = np.array(check_table(theta, X, "theta"), dtype=np.float64, copy=True)
    if method == "reference":
        return basis_matrix(cards).T @ dense
    if method != "fast":
        raise ValueError(f"method must be 'fast' or 'reference', got {method!r}")
    transform_inplace(dense, cards, transpose=True)
    return dense


def probabilities(theta: Any, cardinalities: Any) -> np.ndarray:
    """The model distribution ``p_theta`` of eq. (3) over all flat states.

    Parameters
    ----------
    theta : array_like of float, shape (|X|,), or dict
        The parameters, as for :func:`synthesize`.
    cardinalities : sequence of int
        ``|X_0|, ..., |X_{n-1}|``, each at least 2.

    Returns
    -------
    ndarray of float64, shape (|X|,)
        ``p_theta(x)`` in the flat order of ``x``, summing to 1.
    """
    a = synthesize(theta, cardinalities)
    _k.softmax_inplace(a)
    return a


# --------------------------------------------------------------------------- costs
def regularization(y: Any, cardinalities: Any, n_samples: int) -> np.ndarray:
    """``r_y(N) = (ln N / 2 + sum_{i: y_i != 0} ln(n (|X_i| - 1))) / N``, eq. (7).

    The MDL cost of switching ``theta_y`` on.

    Parameters
    ----------
    y : int or array_like of int
        A flat index in ``[0, |X|)``, or an array of them.
    cardinalities : sequence of int
        ``|X_0|, ..., |X_{n-1}|``, each at least 2.
    n_samples : int
        ``N``, the number of data samples, at least 1.

    Returns
    -------
    float or ndarray of float64
        ``r_y(N)``: a float for one index, else one value per index.
    """
    cards = check_cardinalities(cardinalities)
    N = check_positive(n_samples, "n_samples", integer=True)
    digits = unflatten(check_indices(y, n_states(cards), "y"), cards)
    r = (0.5 * math.log(N) + (digits != 0) @ cost_weights(cards)) / N
    return r if np.ndim(y) else r[0]


def _duals(v: Any, name: str, closed: bool = False) -> np.ndarray:
    """Dual coordinates ``<Phi_y>``: finite, in ``(-1, 1)`` (``theta_bar_y`` of a model with
    finite ``theta``), or in ``[-1, 1]`` up to rounding when ``closed`` (a data moment)."""
    a = check_array(v, name)
    if np.any(np.abs(a) > 1 + 1e-9) if closed else np.any(np.abs(a) >= 1):
        raise ValueError(f"{name} must lie in {'[-1, 1]' if closed else '(-1, 1)'} "
                         "(a dual coordinate)")
    return a


def delta_kl(d: Any, t0: Any, t1: Any) -> np.ndarray:
    """Eq. (19): ``KL(p_d||p_theta) - KL(p_d||p_theta0)`` for ``theta`` on the line ``A_y``,
    with ``d = d_bar_y``, ``t0 = theta_bar_y(theta0)`` and ``t1 = theta_bar_y(theta)``.

    Parameters
    ----------
    d : float or array_like of float
        The data's dual coordinate ``d_bar_y``, in ``[-1, 1]``.
    t0 : float or array_like of float
        The current model's dual coordinate ``theta_bar_y(theta0)``, in ``(-1, 1)``.
    t1 : float or array_like of float
        The dual coordinate after the move, ``theta_bar_y(theta)``, in ``(-1, 1)``.

    Returns
    -------
    float or ndarray of float64
        The change of ``KL(p_d||p_theta)``, elementwise (broadcast) over the arguments.
    """
    d, t0, t1 = _duals(d, "d", True), _duals(t0, "t0"), _duals(t1, "t1")
    up = np.log1p(t0) - np.log1p(t1)
    down = np.log1p(-t0) - np.log1p(-t1)
    return 0.5 * ((1 + d) * up + (1 - d) * down)


def append_delta(d: Any, t0: Any, r: Any) -> np.ndarray:
    """Eq. (20): the cost change of appending ``theta_y`` at its optimum ``theta_bar_y = d_y``.

    Parameters
    ----------
    d : float or array_like of float
        The data's dual coordinate ``d_bar_y``, in ``[-1, 1]`` (clipped to
        ``±(1 - TAU)`` as the target).
    t0 : float or array_like of float
        The current model's dual coordinate ``theta_bar_y``, in ``(-1, 1)``.
    r : float or array_like of float
        The cost ``r_y`` of switching ``theta_y`` on (:func:`regularization`).

    Returns
    -------
    float or ndarray of float64
        The change of the cost of eq. (7), elementwise (broadcast) over the arguments.
    """
    d = _duals(d, "d", True)
    return delta_kl(d, t0, np.clip(d, -1 + TAU, 1 - TAU)) + check_array(r, "r")


def append_lower_bound(d: Any, t0: Any, r: Any) -> np.ndarray:
    """Eq. (21): ``-(t0 - d)^2 / (1 - t0^2) + r_y <= append_delta``, no logarithm needed.

    Parameters
    ----------
    d : float or array_like of float
        The data's dual coordinate ``d_bar_y``, in ``[-1, 1]``.
    t0 : float or array_like of float
        The current model's dual coordinate ``theta_bar_y``, in ``(-1, 1)``.
    r : float or array_like of float
        The cost ``r_y`` of switching ``theta_y`` on (:func:`regularization`).

    Returns
    -------
    float or ndarray of float64
        The lower bound of :func:`append_delta`, elementwise (broadcast).
    """
    d, t0, r = _duals(d, "d", True), _duals(t0, "t0"), check_array(r, "r")
    return r - (t0 - d) ** 2 / (1 - t0**2)


# --------------------------------------------------------------------------- dual update
def dual_update(
    theta_bar: np.ndarray,
    y: int,
    delta: float,
    cardinalities: Any,
    *,
    out: np.ndarray | None = None,
    scratch: np.ndarray | None = None,
) -> np.ndarray:
    """The dual vector after ``theta_y += delta``, in ``O(|X|)`` (no transform, no ``p``).

    With ``t = tanh(delta)``: ``theta_bar'_z = (theta_bar_z + t <Phi_z Phi_y>) / (1 + t
    theta_bar_y)``. For Walsh bases ``<Phi_z Phi_y> = theta_bar_{z XOR y}`` (an in-place XOR
    mix when every cardinality is a power of two); otherwise the product is formed variable by
    variable (eq. 5: ``phi_m phi_a = -(phi_0 + phi_m + phi_a)``), ``O(|X|)`` per variable on
    which ``y`` depends.

    Parameters
    ----------
    theta_bar : ndarray, shape (|X|,)
        Current dual vector (``theta_bar[0] = 1``).
    y : int
        Flat index of the changed parameter.
    delta : float
        The change of ``theta_y``.
    cardinalities : sequence of int
        ``|X_0|, ..., |X_{n-1}|``, each at least 2.
    out : ndarray or None, default None
        Where to write; ``out=theta_bar`` updates in place. ``None``: a new array.
    scratch : ndarray or None, default None
        An ``(|X|,)`` work array for the non-Walsh case (``None``: allocated here).

    Returns
    -------
    ndarray of float64, shape (|X|,)
        The new dual vector: ``out`` when given.
    """
    cards = check_cardinalities(cardinalities)
    X = n_states(cards)
    tb = check_array(theta_bar, "theta_bar", shape=(X,))
    if np.ndim(y) != 0:
        raise ValueError(f"y must be one flat index, got shape {np.shape(y)}")
    y = int(check_indices(y, X, "y")[0])
    delta = check_real(delta, "delta")
    if out is None:
        require_tables(8 * X, "dual_update", X)
        out = tb.copy()
    elif out is not tb:
        out[:] = tb
    if y == 0 or delta == 0.0:
        return out
    dual_update_inplace(out, y, math.tanh(delta), cards, scratch)
    return out


# --------------------------------------------------------------------------- learning
def memory_required(cardinalities: Any, update: str = "incremental") -> int:
    """Bytes of ``|X|``-sized tables :func:`fit` allocates.

    The paper keeps four tables (``p_theta``, ``theta_bar``, ``d_bar``, ``r``). Our default
    incremental learner keeps ``theta_bar`` and ``d_bar`` (plus one work table when some
    cardinality is not a power of two) and computes ``r_y`` from two small tables;
    ``update="transform"`` (the paper's scheme) also keeps ``p_theta``.

    Parameters
    ----------
    cardinalities : sequence of int
        ``|X_0|, ..., |X_{n-1}|``, each at least 2.
    update : {"incremental", "transform"}, default "incremental"
        The dual update of :func:`fit` whose tables are counted.

    Returns
    -------
    int
        Bytes of the ``|X|``-sized float64 tables (the data's own ``16 N`` bytes are not
        counted).
    """
    cards = check_cardinalities(cardinalities)
    if not is_choice(update, _UPDATES):
        raise ValueError(f"update must be one of {_UPDATES}, got {update!r}")
    X = n_states(cards)
    segs = segments(cards)
    all_walsh = len(segs) == 1 and segs[0][2]
    tables = 2 + (update == "transform") + (update == "incremental" and not all_walsh)
    return 8 * X * tables


@dataclass
class Model:
    """A learned FSLL model (the result of :func:`fit`).

    :func:`fit` builds it; its constructor takes the attributes below, in their order
    (the last seven optional).

    Attributes
    ----------
    cardinalities : tuple of int
        ``|X_i|`` for each variable.
    theta : dict
        ``{flat index y: theta_y}`` for the used basis functions (``theta_y != 0``).
    cost : float
        Final value of eq. (7), ``KL(p_d||p_theta) + r(theta, N)``.
    kl_data : float
        Final ``KL(p_d||p_theta)`` (tracked through eq. 19).
    n_samples : int
        ``N``, the number of data samples fitted.
    history : ndarray
        ``cost`` before the first step and after every step (non-increasing).
    moves : list of (kind, y, theta_y)
        Each accepted candidate: ``kind`` in {"append", "adjust", "remove"}.
    n_exact : int
        Candidates whose exact eq. (20) was evaluated (the others were skipped by eq. 21).
    n_candidates : int
        Append candidates considered, over all steps.
    update : str
        The dual update the fit ran with, ``"incremental"`` or ``"transform"``.
    converged : bool
        Whether the search stopped on line 8 of Algorithm 1 (no candidate lowers the cost
        by ``eps``) rather than at ``max_steps``.
    stop_reason : str
        Why the search stopped.
    seconds : float
        Wall time of :func:`fit`.

    Notes
    -----
    ``model`` (the model itself), ``n_steps``, ``converged``, ``stop_reason``,
    ``seconds`` and ``history`` are the result fields every learner of the library shares
    (:class:`mrflib.learning.fit_result.Fit`); here ``history`` is the cost after every step.
    """

    cardinalities: tuple[int, ...]
    theta: dict[int, float]
    cost: float
    kl_data: float
    n_samples: int
    history: np.ndarray
    moves: list[tuple[str, int, float]] = field(default_factory=list)
    n_exact: int = 0
    n_candidates: int = 0
    update: str = "incremental"
    converged: bool = True
    stop_reason: str = ""
    seconds: float = field(default=0.0, compare=False)

    @property
    def model(self) -> Model:
        """The learned model (this object): the result field shared with ``learning.Fit``."""
        return self

    @property
    def n_basis(self) -> int:
        """Number of used basis functions (``theta_y != 0``), '#Basis' of Table 1."""
        return len(self.theta)

    @property
    def n_steps(self) -> int:
        """Number of accepted moves (steps of Algorithm 1)."""
        return len(self.moves)

    def probabilities(self) -> np.ndarray:
        """``p_theta`` over all flat states (eq. 3).

        Returns
        -------
        ndarray of float64, shape (|X|,)
            :func:`probabilities` of ``theta``, in the flat order.
        """
        return probabilities(self.theta, self.cardinalities)

    def terms(self) -> list[tuple[tuple[int, ...], float]]:
        """``(digits of y, theta_y)`` for the used basis functions, sorted by ``y``.

        Returns
        -------
        list of tuple
            ``((y_0, ..., y_{n-1}), theta_y)`` per used basis function.
        """
        ys = sorted(self.theta)
        if not ys:
            return []
        digits = unflatten(np.array(ys, dtype=np.int64), self.cardinalities)
        return [(tuple(int(v) for v in d), self.theta[y]) for d, y in zip(digits, ys)]

    def orders(self) -> np.ndarray:
        """Order (number of variables ``Phi_y`` depends on) of each used basis function.

        Returns
        -------
        ndarray of int64, shape (n_basis,)
            The orders, in the order of :meth:`terms`.
        """
        return np.array([sum(v != 0 for v in d) for d, _ in self.terms()], dtype=np.int64)


def fit(
    data: Any,
    cardinalities: Any,
    *,
    eps: float = 1e-4,
    update: str = "incremental",
    max_steps: int = 100_000,
    use_bound: bool = True,
    parallel: bool = False,
) -> Model:
    """Learn an FSLL model by Algorithm 1 with the MDL cost of eq. (7).

    Each step evaluates every candidate in ``O(1)``: appending ``theta_y`` (eq. 20, skipped
    when the lower bound of eq. 21 cannot beat the current champion, Algorithm 2), adjusting
    or removing an active ``theta_y`` (eq. 19 with eq. 16); it stops when the best candidate
    lowers the cost by less than ``eps``.

    Parameters
    ----------
    data : array_like, shape (N, n)
        Integer samples, ``0 <= x_i < |X_i|``.
    cardinalities : sequence of int
        ``|X_i|`` for each variable (all ``>= 2``).
    eps : float, default 1e-4
        Threshold of line 8 of Algorithm 1 (the paper uses ``1e-4``).
    update : {"incremental", "transform"}, default "incremental"
        How the dual vector follows a step: ``"incremental"`` mixes it in
        ``O(|X|)`` (:func:`dual_update`); ``"transform"`` is the paper's scheme, Algorithm 3 on
        ``p_theta`` followed by a fresh :func:`dual` (``O(|X| log |X|)``).
    max_steps : int, default 100000
        Safety limit on the number of steps.
    use_bound : bool, default True
        Skip append candidates by eq. (21) (the result is the same either way).
    parallel : bool, default False
        Run the candidate scan and the all-Walsh dual update on numba's threads. The result
        is identical; it pays on an idle multi-core machine, and costs on a busy one.

    Returns
    -------
    Model
        The learned parameters, the final cost and how the search went.

    Notes
    -----
    The memory of the ``|X|``-sized tables (:func:`memory_required`) is checked before any
    is allocated. Targets ``d_y = ±1`` are clipped to ``±(1 - TAU)``, a finite stand-in for
    the infinite ``theta_y`` a zero-probability pattern would need (the paper assumes a
    positive ``p_d``).
    """
    t0 = time.perf_counter()
    cards = check_cardinalities(cardinalities)
    eps = check_positive(eps, "eps", allow_zero=True)
    max_steps = check_positive(max_steps, "max_steps", integer=True, allow_zero=True)
    if not is_choice(update, _UPDATES):
        raise ValueError(f"update must be one of {_UPDATES}, got {update!r}")
    arr = check_states(data, cards, "data")
    N = arr.shape[0]
    if N == 0:
        raise ValueError("data must contain at least one sample")
    X = n_states(cards)
    require_tables(memory_required(cards, update) + 16 * N, f"fsll.fit(update={update!r})", X)
    dbar, kl = data_duals(arr, cards)  # line 2
    del arr
    lo_cost, hi_cost = cost_tables(cards, N)  # line 3
    duals = (TransformDuals if update == "transform" else IncrementalDuals)(cards, parallel)
    search = _Search(dbar, lo_cost, hi_cost, use_bound, parallel, kl)
    converged, reason = False, f"max_steps = {max_steps} reached"
    for _ in range(max_steps):
        tbar = duals.current()  # line 6
        move, champion = search.best_move(tbar)  # line 7
        if move is None or -champion < eps:  # line 8
            converged = True
            reason = ("converged: no candidate move left" if move is None else
                      f"converged: best cost decrease {-champion:.3g} < eps {eps:g}")
            break
        delta = search.accept(move, champion, tbar)  # lines 10-11
        duals.step(move[1], delta)
    return Model(
        cardinalities=tuple(int(k) for k in cards),
        theta=search.theta,
        cost=search.cost,
        kl_data=search.kl,
        n_samples=N,
        history=np.array(search.history),
        moves=search.moves,
        n_exact=search.n_exact,
        n_candidates=search.n_candidates,
        update=update,
        converged=converged,
        stop_reason=reason,
        seconds=time.perf_counter() - t0,
    )


class _Search:
    """The greedy search of Algorithm 1-2 over append, adjust and remove candidates."""

    def __init__(self, dbar, lo_cost, hi_cost, use_bound, parallel, kl) -> None:
        self.dbar, self.lo_cost, self.hi_cost = dbar, lo_cost, hi_cost
        self.use_bound, self.parallel = use_bound, parallel
        self.theta: dict[int, float] = {}
        self.kl = self.cost = kl
        self.history = [kl]
        self.moves: list[tuple[str, int, float]] = []
        self.n_exact = self.n_candidates = 0

    def _active_move(self, tbar: np.ndarray) -> tuple[float, tuple | None]:
        """Best adjust or remove of an active ``theta_y`` (eq. 19 with eq. 16)."""
        champion, move = 0.0, None
        if not self.theta:
            return champion, move
        L = self.lo_cost.size
        ys = np.array(sorted(self.theta), dtype=np.int64)
        vals = np.array([self.theta[int(v)] for v in ys])
        t0 = tbar[ys]
        d = self.dbar[ys]
        r = self.hi_cost[ys // L] + self.lo_cost[ys % L]
        t_adj = np.clip(d, -1 + TAU, 1 - TAU)
        d_adj = delta_kl(d, t0, t_adj)
        t_rem = np.tanh(np.arctanh(t0) - vals)
        d_rem = delta_kl(d, t0, t_rem) - r
        for j in range(ys.size):
            if d_adj[j] < champion:
                champion, move = d_adj[j], ("adjust", int(ys[j]), t_adj[j])
            if d_rem[j] < champion:
                champion, move = d_rem[j], ("remove", int(ys[j]), t_rem[j])
        return champion, move

    def best_move(self, tbar: np.ndarray) -> tuple[tuple | None, float]:
        """Line 7 (Algorithm 2): active candidates first, then the append scan (eq. 20-21)."""
        champion, move = self._active_move(tbar)
        bd, by, ne = _k.scan_append(self.dbar, tbar, self.lo_cost, self.hi_cost, champion,
                                    TAU, self.use_bound, self.parallel)
        self.n_exact += int(ne)
        self.n_candidates += tbar.size - 1
        if by >= 0:
            champion = bd
            move = ("append", int(by), float(np.clip(self.dbar[by], -1 + TAU, 1 - TAU)))
        return move, champion

    def accept(self, move: tuple, champion: float, tbar: np.ndarray) -> float:
        """Lines 10-11: take the move, track KL and cost; returns the change of ``theta_y``."""
        kind, yp, t1 = move
        t0y, dy = float(tbar[yp]), float(self.dbar[yp])
        old = self.theta.get(yp, 0.0)
        new = 0.0 if kind == "remove" else old + math.atanh(t1) - math.atanh(t0y)
        self.kl += float(delta_kl(dy, t0y, t1))
        self.cost += float(champion)
        if kind == "remove":
            del self.theta[yp]
        else:
            self.theta[yp] = new
        self.history.append(self.cost)
        self.moves.append((kind, yp, new))
        return new - old
