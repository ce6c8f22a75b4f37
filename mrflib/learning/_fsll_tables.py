"""The tables of FSLL over the ``|X|`` states (:mod:`mrflib.learning.fsll`): their checks,
their layout, the in-place transforms on them and the tables its learner keeps.

A set of cardinalities is checked once (:func:`check_cardinalities`), and so are the states
and tables over it; consecutive power-of-two cardinalities form one Walsh-Hadamard segment
(:func:`segments`), which the transforms (:func:`transform_inplace`) and the ``O(|X|)`` dual
update (:func:`dual_update_inplace`) walk. The learner's tables follow: the data's dual
vector (:func:`data_duals`), the cost ``r_y`` as two small tables (:func:`cost_tables`) and
the model's dual vector, kept by the ``O(|X|)`` mix (:class:`IncrementalDuals`) or by the
paper's fresh transform (:class:`TransformDuals`).

They are apart from the model's formulas and the greedy search because they are the
numerical machinery under both: array layouts and in-place loops, with no equation of the
paper of their own.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mrflib._support.validation import check_array, integer_values, require_memory
from mrflib.learning import _fsll_kernels as _k
from mrflib.models.factor_graph import flat_strides

__all__ = ["is_pow2", "check_cardinalities", "require_tables", "n_states", "segments",
           "segment_arrays", "check_states", "check_table", "transform_inplace",
           "dual_update_inplace", "cost_weights", "cost_tables", "data_duals",
           "IncrementalDuals", "TransformDuals"]


def is_pow2(k: int) -> bool:
    """Whether ``k`` is a power of two (a variable of the Walsh bases of eq. (4))."""
    return k >= 1 and (k & (k - 1)) == 0


def check_cardinalities(cardinalities: Any) -> np.ndarray:
    """``cardinalities`` as a 1-d integer array, each at least 2, of at most ``2^62`` states in
    all (a ``ValueError`` naming them otherwise)."""
    arr = np.atleast_1d(np.asarray(cardinalities))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"cardinalities must be a non-empty 1-d sequence of integers, got {cardinalities!r}"
        )
    arr = integer_values(arr, f"cardinalities must be integers, got {cardinalities!r}")
    if np.any(arr < 2):
        raise ValueError(f"cardinalities must all be >= 2, got {arr.tolist()}")
    total = 1
    for k in arr.tolist():
        total *= k
        if total > 2**62:
            raise ValueError(f"cardinalities {arr.tolist()} give more than 2^62 states")
    return arr


def require_tables(nbytes: float, what: str, X: int) -> None:
    """Refuse tables over the ``|X|`` states before allocating them (names ``cardinalities``)."""
    require_memory(nbytes, f"{what} on the |X| = {X} states of these cardinalities")


def n_states(cards: np.ndarray) -> int:
    """``|X|``, the number of joint states of checked cardinalities."""
    return int(math.prod(cards.tolist()))


def _strides(cards: np.ndarray) -> np.ndarray:
    """The flat index's stride of each variable (``x_0`` least significant)."""
    return flat_strides(cards)


def segments(cards: np.ndarray) -> list[tuple[int, int, bool]]:
    """Runs of variables transformed together: ``(stride, k, walsh)``; consecutive
    power-of-two cardinalities merge into one Walsh-Hadamard segment."""
    segs: list[list] = []
    stride = 1
    for k in cards.tolist():
        w = is_pow2(k)
        if w and segs and segs[-1][2]:
            segs[-1][1] *= k
        else:
            segs.append([stride, k, w])
        stride *= k
    return [(int(s), int(k), bool(w)) for s, k, w in segs]


def segment_arrays(cards: np.ndarray):
    """The segments as the kernels' record ``(stride, k, walsh)`` of arrays."""
    segs = segments(cards)
    return (
        np.array([s for s, _, _ in segs], dtype=np.int64),
        np.array([k for _, k, _ in segs], dtype=np.int64),
        np.array([w for _, _, w in segs], dtype=np.bool_),
    )


def check_states(states: Any, cards: np.ndarray, name: str = "data") -> np.ndarray:
    """Integer states ``(samples, n)`` within the cardinalities ``cards`` (one column when
    ``n = 1`` may be 1-d); the ``ValueError`` names ``name`` and the first bad column."""
    arr = np.asarray(states)
    if arr.ndim == 1 and cards.size == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] != cards.size:
        raise ValueError(
            f"{name} must have shape (samples, {cards.size}) (one column per variable), "
            f"got {np.shape(states)}"
        )
    arr = integer_values(arr, f"{name} must contain integer states", allow_bool=True)
    if arr.size and (np.any(arr < 0) or np.any(arr >= cards[None, :])):
        col = int(np.argmax(np.any((arr < 0) | (arr >= cards[None, :]), axis=0)))
        raise ValueError(
            f"{name} column {col} must take values in [0, {int(cards[col])}) "
            f"(cardinalities {cards.tolist()})"
        )
    return arr


def check_table(p: Any, X: int, name: str) -> np.ndarray:
    """A finite table ``(|X|,)`` over the flat states, named ``name`` in errors."""
    return check_array(p, name, shape=(X,))


def transform_inplace(a: np.ndarray, cards: np.ndarray, transpose: bool) -> None:
    """The transform of eq. (10)-(12) on the table ``a`` in place, segment by segment
    (``transpose``: the transposed transform, which synthesizes ``l_theta``)."""
    for stride, k, walsh in segments(cards):
        if walsh:
            _k.walsh_segment(a, stride, k)  # symmetric: its own transpose
        else:
            _k.eq5_segment(a, stride, k, transpose)


def dual_update_inplace(tb, y, t, cards, scratch, parallel=False):
    """The dual vector ``tb`` after ``theta_y`` changes by ``atanh(t)``, in place (the mix of
    :func:`mrflib.learning.fsll.dual_update`); ``scratch`` an ``(|X|,)`` work array or
    ``None``, ``parallel`` the all-Walsh mix on numba's threads."""
    segs = segments(cards)
    if len(segs) == 1 and segs[0][2]:
        _k.xor_mix(tb, y, t, parallel)
        return
    if scratch is None:
        scratch = np.empty_like(tb)
    scratch[:] = tb
    for (stride, k, walsh), a in zip(segs, ((y // s) % k for s, k, _ in segs)):
        if a:
            _k.mix_segment(scratch, stride, k, int(a), walsh)
    _k.combine(tb, scratch, t, 1.0 + t * tb[y])


def cost_weights(cards: np.ndarray) -> np.ndarray:
    """``ln(n (|X_i| - 1))``, the cost of eq. (7) of each variable on which ``y`` depends."""
    n = cards.size
    return np.log(n * (cards - 1.0))


def cost_tables(cards: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
    """``r_y = hi[y // L] + lo[y % L]`` with ``L`` the product of the first few cardinalities."""
    w = cost_weights(cards)
    X = n_states(cards)
    target = min(X, 4096)
    m, L = 0, 1
    while L < target:
        L *= int(cards[m])
        m += 1

    def table(ks, ws):
        t = np.zeros(1)
        for k, wi in zip(ks, ws):
            c = np.full(int(k), wi)
            c[0] = 0.0
            t = (c[:, None] + t[None, :]).ravel()
        return t

    lo = table(cards[:m], w[:m]) / N
    hi = (0.5 * math.log(N) + table(cards[m:], w[m:])) / N
    return np.ascontiguousarray(lo), np.ascontiguousarray(hi)


def data_duals(arr: np.ndarray, cards: np.ndarray) -> tuple[np.ndarray, float]:
    """``d_bar = <Phi_y>_{p_d}`` for every ``y`` and ``KL(p_d || uniform)`` (line 2)."""
    N = arr.shape[0]
    X = n_states(cards)
    idx = arr @ _strides(cards)
    counts = np.unique(idx, return_counts=True)[1].astype(np.float64)
    kl = math.log(X) + float(np.sum(counts / N * np.log(counts / N)))
    dbar = np.zeros(X)
    _k.accumulate(dbar, idx, 1.0 / N)
    del idx
    transform_inplace(dbar, cards, transpose=False)
    dbar[0] = 1.0
    return dbar, kl


class IncrementalDuals:
    """``theta_bar`` kept up to date by the ``O(|X|)`` mix of
    :func:`mrflib.learning.fsll.dual_update` (our scheme)."""

    def __init__(self, cards: np.ndarray, parallel: bool) -> None:
        X = n_states(cards)
        self.cards, self.parallel = cards, parallel
        # the dual of the uniform distribution (e_0 for Walsh bases, eq. 5 has means)
        self.tbar = np.full(X, 1.0 / X)
        transform_inplace(self.tbar, cards, transpose=False)
        self.tbar[0] = 1.0
        segs = segments(cards)
        self.scratch = None if len(segs) == 1 and segs[0][2] else np.empty(X)

    def current(self) -> np.ndarray:
        return self.tbar

    def step(self, y: int, delta: float) -> None:
        dual_update_inplace(self.tbar, y, math.tanh(delta), self.cards, self.scratch,
                            self.parallel)


class TransformDuals:
    """The paper's scheme: ``p_theta`` by Algorithm 3, ``theta_bar`` by a fresh transform."""

    def __init__(self, cards: np.ndarray, parallel: bool) -> None:
        X = n_states(cards)
        self.cards = cards
        self.p = np.full(X, 1.0 / X)
        self.tbar = np.empty(X)
        self.seg = segment_arrays(cards)

    def current(self) -> np.ndarray:
        self.tbar[:] = self.p
        transform_inplace(self.tbar, self.cards, transpose=False)
        return self.tbar

    def step(self, y: int, delta: float) -> None:
        stride, k, _ = self.seg
        _k.algorithm3(self.p, delta, self.seg, ((y // stride) % k).astype(np.int64))
