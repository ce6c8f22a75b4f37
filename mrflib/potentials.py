"""Normalized potentials of a discrete distribution (Mizrahi et al., Definition 5, Theorem 6).

Möbius inversion from a distribution to its canonical potentials and back, and the closed
form for a Boltzmann machine. Re-exported by :mod:`mrflib.lap`.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any

import numpy as np

from ._validation import check_array, check_positive, require_memory
from .model import BoltzmannMachine, check_model

__all__ = [
    "normalized_potentials",
    "distribution_from_potentials",
    "ising_normalized_potentials",
]


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
    if not isinstance(potentials, dict):
        raise ValueError(f"potentials must be a dict clique -> table, got {potentials!r}")
    require_memory(8.0 * math.prod(card), f"the distribution table of cardinalities {card}")
    L = np.zeros(card[::-1])
    for C, V in potentials.items():
        C = tuple(int(i) for i in np.atleast_1d(C))
        if not C or len(set(C)) != len(C) or min(C) < 0 or max(C) >= n:
            raise ValueError(f"potentials: bad clique {C!r} for {n} variables")
        order = np.argsort(C)
        C = tuple(np.asarray(C)[order])
        V = check_array(V, f"potentials[{C}]")
        want = tuple(card[i] - 1 for i in C)
        if V.shape == () and all(w == 1 for w in want):
            V = V.reshape(want)
        V = np.transpose(V, axes=tuple(order)) if V.ndim == len(C) else V
        if V.shape != want:
            raise ValueError(f"potentials[{C}] must have shape {want}, got {V.shape}")
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
    bm = check_model(bm)
    n = bm.n
    row = np.bincount(bm.edges[:, 0], weights=bm.coupling, minlength=n)
    row += np.bincount(bm.edges[:, 1], weights=bm.coupling, minlength=n)
    out: dict[tuple[int, ...], float] = {(i,): float(2 * bm.bias[i] - 2 * row[i])
                                         for i in range(n)}
    for (i, j), J in zip(bm.edges, bm.coupling):
        out[(int(i), int(j))] = float(4 * J)
    return out
