"""Normalized potentials of a discrete distribution (Mizrahi et al., Definition 5, Theorem 6).

Möbius inversion from a distribution to its canonical potentials and back, the closed
form for a Boltzmann machine, and the same for a :class:`~mrflib.models.factor_graph.FactorGraph`
factor by factor (:func:`factor_graph_potentials`, :func:`normalize`), which is how the
factor-graph learners identify their parameters. Re-exported by :mod:`mrflib.learning.lap`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np

from mrflib._support.deprecation import renamed_argument
from mrflib._support.validation import check_array, check_positive, require_memory
from mrflib.learning._clique_groups import (
    Group,
    block_index,
    clique_blocks,
    gather,
    normalized_tables,
    scope_groups,
    stack_tables,
    subset_positions,
)
from mrflib.models.boltzmann import BoltzmannMachine, check_model
from mrflib.models.factor_graph import FactorGraph

__all__ = [
    "normalize",
    "factor_graph_potentials",
    "clique_owners",
    "normalized_potentials",
    "distribution_from_potentials",
    "ising_normalized_potentials",
    "clique_term",
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
        significant). For ±1 spins from :func:`mrflib.inference.exact.probabilities`, state 0 is
        spin -1 (bit cleared) and 1 is spin +1, so the reference configuration is all
        spins -1.
    cardinalities : sequence of int or None, default None
        ``|X_i|`` for each variable, each at least 2, their product ``|X|``; ``None``:
        all 2.
    tol : float or None, default None
        Drop cliques whose potential is within ``tol`` of 0 everywhere (``None``: keep
        every clique).

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

    Inverse of :func:`normalized_potentials` (missing cliques are 0).

    Parameters
    ----------
    potentials : dict
        ``clique -> array``: a clique is a tuple of distinct variables (in any order, the
        array's axes following it), its array of shape ``(|X_i| - 1 for i in clique)``,
        ``V_C(x_C)`` at ``x_i = 1..|X_i|-1`` (entry ``x_i - 1``), as
        :func:`normalized_potentials` returns.
    cardinalities : sequence of int
        ``|X_i|`` for each variable, each at least 2; not empty.

    Returns
    -------
    ndarray of float64, shape (|X|,)
        The probabilities ``p``, in the mixed-radix order of :func:`normalized_potentials`
        (``x_0`` least significant).
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


@renamed_argument("bm", "model")
def ising_normalized_potentials(model: BoltzmannMachine) -> dict[tuple[int, ...], float]:
    """Closed-form normalized potentials of a Boltzmann machine (reference: all spins -1).

    With ``s = (x + 1) / 2 ∈ {0, 1}``, ``b x + J x_i x_j`` regroups into
    ``V_i = 2 b_i - 2 Σ_{j ~ i} J_ij`` and ``V_ij = 4 J_ij``; all higher potentials
    vanish (appendix A's regrouping, done for the Ising energy).

    Parameters
    ----------
    model : BoltzmannMachine
        The machine.

    Returns
    -------
    dict
        ``(i,) -> V_i`` for every node and ``(i, j) -> V_ij`` for every edge, as floats.
    """
    bm = check_model(model, "model")
    n = bm.n
    row = np.bincount(bm.edges[:, 0], weights=bm.coupling, minlength=n)
    row += np.bincount(bm.edges[:, 1], weights=bm.coupling, minlength=n)
    out: dict[tuple[int, ...], float] = {(i,): float(2 * bm.bias[i] - 2 * row[i])
                                         for i in range(n)}
    for (i, j), J in zip(bm.edges, bm.coupling):
        out[(int(i), int(j))] = float(4 * J)
    return out


# ------------------------------------------------------------------ factor graphs
GAUGES = ("reference", "zero-sum")


def clique_term(table: np.ndarray, in_clique: Any, gauge: str = "reference") -> np.ndarray:
    """The part of a log-table that is a function of exactly the axes ``in_clique``.

    ``gauge="reference"`` gives the normalized potential of Definition 5 (state 0 the
    reference): ``V_B = Σ_{D ⊆ B} (-1)^{|B \\ D|} t(x^D)``, with the axes outside ``B``
    at state 0; it vanishes where some ``x_i = 0``, ``i ∈ B``. ``gauge="zero-sum"``
    gives the same inversion with the state-0 slice replaced by the average over the
    axis (the ANOVA decomposition): for two states and ``t = b x + J x y`` in spins
    ``x, y = ±1`` its terms are ``b x`` and ``J x y``, the ±1 parameters. Either way
    ``t = Σ_B term_B`` over all subsets ``B`` of the axes, and each term is unique.

    Parameters
    ----------
    table : ndarray of float
        A log-table, one axis per variable of its scope.
    in_clique : sequence of bool
        One flag per axis of ``table``: whether the axis is in ``B``.
    gauge : {"reference", "zero-sum"}, default "reference"
        The gauge of the term, as above (any other value gives the zero-sum term).

    Returns
    -------
    ndarray of float64
        The term over the axes of ``B`` (in table order), full cardinalities.
    """
    mask = [bool(b) for b in in_clique]
    out = np.asarray(table, dtype=np.float64)
    for ax, inside in enumerate(mask):
        ref = (out[(slice(None),) * ax + (slice(0, 1),)] if gauge == "reference"
               else out.mean(axis=ax, keepdims=True))
        out = out - ref if inside else ref
    return out.reshape([c for c, inside in zip(out.shape, mask) if inside])


def clique_owners(scopes: Any) -> dict[tuple[int, ...], int]:
    """Each clique (non-empty subset of a scope, sorted) and the factor storing it.

    A clique's normalized potential is stored in the table of the smallest factor whose
    scope holds it (ties: the first such factor): a unary factor holds its variable's
    potential, a pairwise factor the potential of its pair, and a pairwise model without
    unary factors keeps each variable's potential in its first pairwise factor.

    Parameters
    ----------
    scopes : sequence of tuple of int
        The factors' scopes: distinct non-negative variables, at most 24 per scope.

    Returns
    -------
    dict
        ``clique (sorted tuple) -> index of its owner in scopes``, for every clique.
    """
    if isinstance(scopes, (str, bytes)) or not isinstance(scopes, (Sequence, np.ndarray)):
        raise ValueError(f"scopes must be a sequence of tuples of variables, got {scopes!r}")
    scopes = tuple(_check_scope(s, k) for k, s in enumerate(scopes))
    blocks = clique_blocks(scope_groups(scopes), with_terms=False)
    keys = [list(map(tuple, b.variables.tolist())) for b in blocks]
    which, within = block_index(blocks)
    size = np.array([blocks[i].variables.shape[1] for i in range(len(blocks))])[which]
    # a smaller owner first, then its cliques by size and lexicographically (block rows are
    # numbered in lexicographic order)
    owner = gather(blocks, "owner")
    o = np.lexsort((within, size, owner, gather(blocks, "owner_arity")))
    return {keys[i][c]: k for i, c, k in
            zip(which[o].tolist(), within[o].tolist(), owner[o].tolist())}


def _check_scope(scope: Any, k: int) -> tuple[int, ...]:
    """``scopes[k]``: distinct non-negative integer variables, at most 24 of them."""
    where = f"scopes[{k}]"
    if isinstance(scope, (str, bytes)) or not isinstance(scope, (Sequence, np.ndarray)):
        raise ValueError(f"{where} must be a tuple of variable indices, got {scope!r}")
    out = []
    for v in scope:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{where} must contain non-negative integer variables, got {v!r}")
        out.append(int(v))
    if len(set(out)) != len(out) or len(out) > 24:
        raise ValueError(f"{where} must hold at most 24 distinct variables, got {scope!r}")
    return tuple(out)


def _subsets(scope: tuple[int, ...]):
    """``(B sorted, mask over the scope's axes, axis permutation to sorted order)``."""
    for pos in subset_positions(len(scope)):
        order = sorted(pos, key=lambda a: scope[a])
        B = tuple(scope[a] for a in order)
        mask = [a in pos for a in range(len(scope))]
        yield B, mask, [pos.index(a) for a in order]


def _check_factor_model(model: Any, name: str = "model", *, tables: bool = True
                        ) -> FactorGraph:
    """``model``, a FactorGraph with positive weights (``tables``: checked here) and
    factors over at most 24 variables."""
    if not isinstance(model, FactorGraph):
        raise TypeError(f"{name} must be a FactorGraph, got {type(model).__name__}")
    if tables and any(np.isneginf(t).any() for t in model.log_tables):
        _refuse_zero_weights(name)
    if max(map(len, model.scopes), default=0) > 24:
        raise ValueError(f"{name} has a factor over more than 24 variables; its 2^|scope| "
                         "cliques are too many to list")
    return model


def _refuse_zero_weights(name: str) -> None:
    raise ValueError(f"{name} has zero weights (-inf entries): normalized potentials "
                     "exist only for positive distributions (Theorem 6)")


def _stacked_groups(model: Any, name: str = "model") -> list[Group]:
    """The checked ``model``'s factors stacked by group (:func:`stack_tables`); its
    zero weights are looked for in the stacks, a numpy call per group."""
    _check_factor_model(model, name, tables=False)
    groups = stack_tables(model)
    if any(np.isneginf(grp.tables).any() for grp in groups):
        _refuse_zero_weights(name)
    return groups


def factor_graph_potentials(
    model: FactorGraph, *, gauge: str = "reference"
) -> dict[tuple[int, ...], np.ndarray]:
    """Normalized potentials ``V_B`` of a factor graph's distribution (Definition 5).

    ``log P(x) = const + Σ_B V_B(x_B)`` over the cliques ``B`` (non-empty subsets of
    the scopes); by Theorem 6 the ``V_B`` do not depend on how the model spreads them
    over its factors. Computed factor by factor with :func:`clique_term`.

    Parameters
    ----------
    model : FactorGraph
        A model with positive weights (no ``-inf`` log-table entry) and factors over at
        most 24 variables.
    gauge : {"reference", "zero-sum"}, default "reference"
        ``"reference"``: Definition 5, state 0 the reference; ``"zero-sum"``: the ANOVA
        terms of :func:`clique_term`.

    Returns
    -------
    dict
        ``B (sorted tuple) -> array`` over ``B``'s variables in sorted order, full
        cardinalities (entries with some ``x_i = 0`` are 0 in the reference gauge).
    """
    if gauge not in GAUGES:
        _check_factor_model(model)
        raise ValueError(f"gauge must be one of {GAUGES}, got {gauge!r}")
    if gauge == "reference":
        blocks = clique_blocks(_stacked_groups(model))
        which, within = block_index(blocks)
        o = np.lexsort((gather(blocks, "first_subset"), gather(blocks, "first")))
        keys = [list(map(tuple, b.variables.tolist())) for b in blocks]
        return {keys[i][c]: blocks[i].potential[c]
                for i, c in zip(which[o].tolist(), within[o].tolist())}
    # the zero-sum gauge keeps the per-factor loop: a mean over an axis of a stacked array
    # need not add its terms in the order of the same mean over one table
    model = _check_factor_model(model)
    out: dict[tuple[int, ...], np.ndarray] = {}
    for s, t in zip(model.scopes, model.log_tables):
        for B, mask, perm in _subsets(s):
            V = np.transpose(clique_term(t, mask, gauge), perm)
            out[B] = out[B] + V if B in out else V
    return out


def tables_from_potentials(
    cardinalities: np.ndarray, scopes: tuple, potentials: dict[tuple[int, ...], np.ndarray]
) -> FactorGraph:
    """The factor graph holding each ``potentials[B]`` in the table of its owner
    (:func:`clique_owners`), broadcast over the owner's other axes."""
    owners = clique_owners(scopes)
    tables = [np.zeros(tuple(int(cardinalities[v]) for v in s)) for s in scopes]
    for B, V in potentials.items():
        k = owners[B]
        s = scopes[k]
        axes = [s.index(v) for v in B]
        order = np.argsort(axes)
        shape = [1] * len(s)
        for a in axes:
            shape[a] = int(cardinalities[s[a]])
        tables[k] += np.transpose(V, order).reshape(shape)
    for t in tables:
        t.flags.writeable = False
    return FactorGraph._from_checked(cardinalities, tuple(scopes), tuple(tables))


def normalize(model: FactorGraph) -> FactorGraph:
    """The same distribution with normalized potentials (Definition 5, state 0 the
    reference), each stored in the table of its owner (:func:`clique_owners`).

    Two models over the same scopes and cardinalities give the same distribution iff
    their normalized tables are equal (Theorem 6; the constant goes into ``Z``), so
    fits can be compared entry by entry. A factor that owns only its whole scope gets
    a table that is 0 wherever one of its variables is at state 0 (Definition 5
    exactly); a factor owning smaller cliques too (say a pairwise factor holding a
    variable's potential in a model without unary factors) holds their sum. Every
    learner of :func:`mrflib.learning.learners.fit` on a factor graph returns such tables.
    Zero weights (``-inf``) are refused: the normalized potential needs ``P > 0``.

    Parameters
    ----------
    model : FactorGraph
        A model with positive weights and factors over at most 24 variables.

    Returns
    -------
    FactorGraph
        The same scopes, cardinalities and names, with normalized tables.
    """
    groups = _stacked_groups(model)
    return FactorGraph._from_checked(model.cardinalities, model.scopes,
                                     normalized_tables(model, groups), model.names,
                                     model.state_names)
