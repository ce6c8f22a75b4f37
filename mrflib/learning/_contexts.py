"""The data of the factor-graph pseudo-likelihood: distinct contexts, pooled over tied variables.

The pseudo-likelihood ``(1/N) Σ_μ Σ_i log P(x_i^μ | x_{-i}^μ)`` depends on the data only
through the counts of the local patterns ``(x_i, x_blanket(i))``. :class:`Contexts`
counts them once: a *context* is a variable and a state of its Markov blanket, with the
counts of the states of ``x_i`` seen with it, and the kernel
(:func:`mrflib.learning._table_learners_kernels.pl_objective`) computes each context's
conditional once.

Tied parameters (:class:`mrflib.learning.tying.Tie`, tables ``t = B φ``). Two variables
whose conditionals are the same function of ``φ`` are in one *class*: the same
cardinality, and their factors, each variable's listed in a canonical order (by the
factor's parameter-id table and the variable's axis in it, then the factor's index),
have entry by entry the same column of ``B`` (or the same constant 0) with the
variable on the same axis and the other variables of the scopes at corresponding
positions of the blanket (the blanket listed in order of first appearance in those
factors). Then ``P(x_i | x_blanket)`` at a pattern of class ``c`` is the same number
for every member, so the patterns of all members, blanket in canonical order, are
counted together and each pooled context is evaluated once through one
representative's table entries. The gradient in the tables lands on the representative's
entries only, but ``B^T`` of it, the gradient in ``φ``, is the unpooled one: the
objective costs what the number of distinct tied conditionals costs (on a Potts lattice
with tied couplings, a handful of classes: the interior, the edges, the corners), not
the number of variables. The classes are found by sorting and ``np.unique`` over the
(variable, factor) incidences; only the classes are looped over.

Without a tie, or when no two variables are tied, the contexts are counted variable by
variable, in variable order (pooling would only reorder the sums).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from mrflib._support.validation import require_memory
from mrflib.learning import _table_learners_kernels as _k
from mrflib.learning.tying import Tie

__all__ = ["Contexts"]

#: Pattern codes counted at once when the classes are counted (a chunk of members).
_CHUNK = 1 << 22


class Contexts:
    """The distinct contexts ``(i, x_blanket(i))`` of the data (a variable and a state of
    its Markov blanket), each with the counts of the states of ``x_i`` seen with it.

    One pass per variable: each row's local pattern ``(x_i, x_blanket)`` gets a
    mixed-radix code with ``x_i`` its lowest digit, counted by ``bincount`` (or the
    blanket codes sorted when the code space is large); the patterns sharing a blanket
    state form one context, whose conditional the kernel evaluates once. A context is
    stored as, for each factor holding ``i``, the flat position of its entry at
    ``x_i = 0`` and the stride of ``x_i`` (see :mod:`._table_learners_kernels`).

    With a :class:`~mrflib.learning.tying.Tie` in which some variables are tied, one pass
    per class of tied variables instead (see the module notes); the contexts then read
    only the tables of the classes' representatives, and ``rows`` holds their flat
    positions: the kernel takes ``flat[rows]`` (``rows`` is None otherwise). ``pool=False``
    counts variable by variable even then (the reference of the tests).
    """

    def __init__(self, lay: Any, x: np.ndarray, pool: bool = True) -> None:
        self.rows = None
        classes = _tied_classes(lay) if pool and isinstance(lay, Tie) else None
        if classes is not None:
            self._pooled(lay, x, classes)
            return
        card = lay.card
        vf = lay.structure.variable_factors()
        w, bases, strides, nstates, nfactors = [], [], [], [], []
        cols_of = [[i] + sorted({v for k in vf[i] for v in lay.scopes[k]} - {i})
                   for i in range(lay.structure.n)]
        _require_context_memory(x.shape[0], cols_of, [len(ks) for ks in vf], card)
        counted = _count_small(x, cols_of, card)
        strides_of = [[_stride(sh, a) for a in range(len(sh))] for sh in lay.shapes]
        for i in range(lay.structure.n):
            ks, cols = vf[i], cols_of[i]
            blanket, counts = counted[i] if i in counted else \
                _distinct_contexts(x, cols, card[cols])
            base, st = _entries(lay.scopes, strides_of, lay.offsets[ks], i, ks, cols[1:],
                                blanket)
            w.append(counts.ravel())
            bases.append(base.ravel())
            strides.append(np.tile(st, len(counts)))
            nstates.append(np.full(len(counts), card[i], dtype=np.int64))
            nfactors.append(np.full(len(counts), len(ks), dtype=np.int64))
        self.w = np.concatenate(w) / x.shape[0]
        self.wptr = _pointers(nstates)
        self.fptr = _pointers(nfactors)
        self.base = np.concatenate(bases)
        self.stride = np.concatenate(strides)

    def _pooled(self, lay: Tie, x: np.ndarray, classes: list) -> None:
        """The contexts of every class of tied variables, each through its first member's
        tables, which are laid out contiguously at ``self.rows``."""
        N, card = x.shape[0], lay.card
        _require_pooled_memory(N, classes, card)
        reps = sorted({int(k) for _, _, ks in classes for k in ks})
        sizes = lay.offsets[np.asarray(reps, dtype=np.int64) + 1] - lay.offsets[reps]
        at = dict(zip(reps, np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()))
        self.rows = np.concatenate([np.arange(lay.offsets[k], lay.offsets[k + 1])
                                    for k in reps] or [np.zeros(0, np.int64)])
        strides_of = {k: [_stride(lay.shapes[k], a) for a in range(len(lay.scopes[k]))]
                      for k in reps}
        w, bases, strides, nstates, nfactors = [], [], [], [], []
        for members, blankets, ks in classes:
            i = int(members[0])
            cols = np.column_stack([members, blankets])
            blanket, counts = _class_contexts(x, cols, card[cols[0]])
            offsets = np.asarray([at[int(k)] for k in ks], dtype=np.int64)
            base, st = _entries(lay.scopes, strides_of, offsets, i, ks,
                                blankets[0].tolist(), blanket)
            w.append(counts.ravel())
            bases.append(base.ravel())
            strides.append(np.tile(st, len(counts)))
            nstates.append(np.full(len(counts), card[i], dtype=np.int64))
            nfactors.append(np.full(len(counts), len(ks), dtype=np.int64))
        self.w = np.concatenate(w) / N
        self.wptr = _pointers(nstates)
        self.fptr = _pointers(nfactors)
        self.base = np.concatenate(bases)
        self.stride = np.concatenate(strides)

    def __call__(self, flat: np.ndarray, want_grad: bool = True) -> tuple[float, np.ndarray]:
        return _k.pl_objective(flat, self.wptr, self.w, self.fptr, self.base, self.stride,
                               want_grad)


def _entries(scopes: Any, strides_of: Any, offsets: np.ndarray, i: int, ks: Any,
             blanket_vars: list, blanket: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For variable ``i`` with factors ``ks`` (tables at ``offsets``) and its blanket
    ``blanket_vars`` in state ``blanket`` (digits ``(C, len(blanket_vars))``): the flat
    position of every factor's entry at ``x_i = 0`` ``(C, len(ks))`` and the stride of
    ``x_i`` in each; the entry of factor ``k`` is ``offset + Σ_v x_v stride_v``."""
    where = {v: c for c, v in enumerate(blanket_vars)}
    coef = np.zeros((len(where), len(ks)), dtype=np.int64)
    st = np.empty(len(ks), dtype=np.int64)
    for f, k in enumerate(ks):
        for v, sv in zip(scopes[k], strides_of[k]):
            if v == i:
                st[f] = sv
            else:
                coef[where[v], f] = sv
    return offsets + blanket @ coef, st


def _require_context_memory(N: int, cols_of: list, n_factors: list, card: np.ndarray
                            ) -> None:
    """Refuse before counting when the contexts could not fit: variable ``i`` has at most
    ``min(N, blanket states)`` contexts, each with its state counts, its factors' bases
    and strides, and the histogram of the counting pass (at most ``4 N`` codes)."""
    total = 0.0
    for cols, nf in zip(cols_of, n_factors):
        blanket = math.prod(float(c) for c in card[cols[1:]])
        q = int(card[cols[0]])
        total += min(N, blanket) * (4 * q + 4 * nf + 4) + min(4 * N, blanket * q)
    require_memory(8.0 * total, f"the pseudo-likelihood contexts of {len(cols_of)} "
                   f"variables over {N} rows")


def _pointers(sizes: list) -> np.ndarray:
    """Start of every block of the concatenated ``sizes`` arrays, and the end."""
    return np.concatenate([[0], np.cumsum(np.concatenate(sizes))]).astype(np.int64)


def _count_small(x: np.ndarray, cols_of: list, card: np.ndarray) -> dict:
    """Contexts (blanket digits ``(C, len(cols) - 1)``, state counts ``(C, card_i)``) of
    every variable whose code space is at most ``4 N``, counted in one numba pass."""
    N = x.shape[0]
    small = [i for i, cols in enumerate(cols_of)
             if np.sum(np.log2(card[cols].astype(np.float64))) < 62
             and math.prod(int(c) for c in card[cols]) <= 4 * N]
    if not small:
        return {}
    radices = [np.concatenate([[1], np.cumprod(card[cols_of[i]][:-1])]).astype(np.int64)
               for i in small]
    spaces = [math.prod(int(c) for c in card[cols_of[i]]) for i in small]
    cptr = np.concatenate([[0], np.cumsum([len(cols_of[i]) for i in small])]).astype(np.int64)
    off = np.concatenate([[0], np.cumsum(spaces)]).astype(np.int64)
    counts = _k.pattern_counts(x, cptr, np.concatenate([cols_of[i] for i in small]),
                               np.concatenate(radices), off)
    out = {}
    for t, i in enumerate(small):
        q = int(card[i])
        c = counts[off[t]:off[t + 1]].reshape(-1, q)  # code = x_i + q * blanket code
        rows = np.flatnonzero(c.any(axis=1))
        radix = radices[t][1:] // q
        out[i] = ((rows[:, None] // radix[None, :]) % card[cols_of[i][1:]][None, :], c[rows])
    return out


def _distinct_contexts(x: np.ndarray, cols: list, card: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Distinct blanket states ``x[:, cols[1:]]`` (sorted, as digits ``(C, len(cols) - 1)``)
    and the counts ``(C, card[0])`` of the states of ``x[:, cols[0]]`` seen with each: by
    a mixed-radix code of the blanket (a 1-d sort), or by rows when the code does not fit
    in int64."""
    q, cb = int(card[0]), card[1:]
    if np.sum(np.log2(cb.astype(np.float64))) >= 62:
        blanket, inv = np.unique(x[:, cols[1:]], axis=0, return_inverse=True)
    else:
        radix = np.concatenate([[1], np.cumprod(cb)]).astype(np.int64)[:len(cb)]
        codes, inv = np.unique(x[:, cols[1:]] @ radix, return_inverse=True)
        blanket = (codes[:, None] // radix[None, :]) % cb[None, :]
    counts = np.bincount(np.ravel(inv) * q + x[:, cols[0]], minlength=len(blanket) * q)
    return blanket, counts.reshape(len(blanket), q)


def _stride(shape: tuple, axis: int) -> int:
    return int(math.prod(shape[axis + 1:]))


# ------------------------------------------------------------------- tied variables
def _tied_classes(tie: Tie) -> list | None:
    """The classes of variables with the same conditional as a function of ``φ`` (see the
    module notes), as ``[(members, blankets, factors)]``: the member variables
    ``(n_c,)``, each one's blanket in canonical order ``(n_c, b)``, and the first
    member's factors; None when every class has one variable (nothing to pool)."""
    n, card = tie.structure.n, np.asarray(tie.card, dtype=np.int64)
    # the parameter ids and one factor group's tables (twice), then the incidences:
    # variable, key, factor and the scope's others, sorted (a copy), and their sort order
    m = sum(map(len, tie.scopes))
    width = max(map(len, tie.scopes), default=1) + 3
    require_memory(8.0 * (3 * float(tie.offsets[-1]) + 3 * m * width),
                   f"the classes of tied variables of {n} variables ({m} factor memberships)")
    var, key, fac, other = _incidences(tie)
    order = np.lexsort((fac, key, var))
    var, key, fac, other = var[order], key[order], fac[order], other[order]
    degree = np.bincount(var, minlength=n)
    start = np.concatenate([[0], np.cumsum(degree)[:-1]])
    classes = []
    for d in np.unique(degree).tolist():
        vs = np.flatnonzero(degree == d)
        seg = start[vs][:, None] + np.arange(d)
        others = other[seg].reshape(len(vs), -1)
        pos = _first_positions(others)
        sig = np.column_stack([card[vs], key[seg], pos])
        inv, first = _row_ids(sig)
        by_class = np.argsort(inv, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(inv))])
        for c, r in enumerate(first.tolist()):
            rows = by_class[bounds[c]:bounds[c + 1]]
            # the blanket's p-th variable is where position p first appears
            at = [int(np.argmax(pos[r] == p)) for p in range(int(pos[r].max(initial=-1)) + 1)]
            classes.append((vs[rows], others[rows][:, at], fac[seg[r]]))
    if len(classes) == n:
        return None
    return sorted(classes, key=lambda c: int(c[0][0]))


def _incidences(tie: Tie) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every (variable, factor) incidence, one row each: the variable, its key, the factor
    and the scope's other variables in order (``-1`` beyond a shorter scope). The key
    numbers the factor's parameter-id table with the variable's axis moved first: equal
    keys, equal tables as functions of ``φ`` and of the variable then the others in
    order (so the two ends of a symmetric pair table get one key)."""
    scopes = tie.scopes
    lens = np.fromiter(map(len, scopes), dtype=np.int64, count=len(scopes))
    flat = np.fromiter(itertools.chain.from_iterable(scopes), dtype=np.int64,
                       count=int(lens.sum()))
    ptr = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    width = max(int(lens.max(initial=1)) - 1, 0)
    ids = _parameter_ids(tie)
    card = np.asarray(tie.card, dtype=np.int64)
    blocks: dict[tuple, list] = {}  # tables by shape once the variable's axis is first
    for r in np.unique(lens[lens > 0]).tolist():
        ks = np.flatnonzero(lens == r)
        scope = flat[ptr[ks][:, None] + np.arange(r)]
        shape_of, first = _row_ids(card[scope])
        for s, shape in enumerate(card[scope[first]].tolist()):
            sel = np.flatnonzero(shape_of == s)
            size = math.prod(shape)
            tables = ids[tie.offsets[ks[sel]][:, None] + np.arange(size)]
            table, first = _row_ids(tables)  # few distinct tables: move the axes of those
            distinct = tables[first].reshape(len(first), *shape)
            for a in range(r):
                moved = np.moveaxis(distinct, 1 + a, 1).reshape(len(first), size)
                rest = np.delete(scope[sel], a, axis=1)
                pad = np.full((len(sel), width - (r - 1)), -1, dtype=np.int64)
                blocks.setdefault((shape[a], *shape[:a], *shape[a + 1:]), []).append(
                    (moved, scope[sel, a], ks[sel], np.hstack([rest, pad]), table))
    out: list[list] = [[], [], [], []]
    n_keys = 0
    for parts in blocks.values():
        moved = _row_ids(np.concatenate([p[0] for p in parts]))[0] + n_keys
        n_keys = int(moved.max()) + 1
        at = np.cumsum([0] + [len(p[0]) for p in parts])
        out[1] += [moved[at[j] + p[4]] for j, p in enumerate(parts)]
        for lst, t in ((out[0], 1), (out[2], 2), (out[3], 3)):
            lst += [p[t] for p in parts]
    if not out[0]:
        z = np.zeros(0, dtype=np.int64)
        return z, z, z, np.zeros((0, width), dtype=np.int64)
    return tuple(np.concatenate(lst) for lst in out)  # type: ignore[return-value]


def _parameter_ids(tie: Tie) -> np.ndarray:
    """The column of ``B`` each flat table entry holds (``-1``: the constant 0); ``B``
    has one non-zero, 1, per entry at most."""
    A = tie.A.tocsr()
    nnz = np.diff(A.indptr)
    if nnz.max(initial=0) > 1 or not np.all(A.data == 1.0):
        raise ValueError("a tie's map B must have one non-zero, 1, per table entry at most")
    ids = np.full(A.shape[0], -1, dtype=np.int64)
    ids[nnz == 1] = A.indices
    return ids


def _row_ids(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal rows of ``rows`` ``(m, L)`` numbered ``0, 1, ...`` (deterministically) and the
    first row of each number: by a 64-bit hash of each row, checked against the rows
    (a collision, never seen, falls back to sorting the rows by ``lexsort``), much faster
    than ``np.unique(rows, axis=0)``, which sorts rows as records."""
    m = rows.shape[0]
    if rows.shape[1] == 0 or m == 0:
        return np.zeros(m, dtype=np.int64), np.zeros(min(m, 1), dtype=np.int64)
    mix = np.random.default_rng(0).integers(1, 2**62, rows.shape[1]) | 1
    with np.errstate(over="ignore"):
        _, first, ids = np.unique(rows @ mix, return_index=True, return_inverse=True)
    ids = np.ravel(ids)
    if np.array_equal(rows, rows[first[ids]]):
        return ids, first
    order = np.lexsort(rows.T[::-1])
    ranked = rows[order]
    new = np.ones(m, dtype=bool)
    new[1:] = np.any(ranked[1:] != ranked[:-1], axis=1)
    ids = np.empty(m, dtype=np.int64)
    ids[order] = np.cumsum(new) - 1
    return ids, order[new]  # lexsort is stable: a group's first row comes first


def _first_positions(values: np.ndarray) -> np.ndarray:
    """For each row of ``values`` (``-1`` padding), the rank of every entry's value by its
    first appearance in the row (``0`` for the first distinct value, ...; ``-1`` for the
    padding): equal rows of ranks mean the same pattern of repeated variables."""
    m, L = values.shape
    if L == 0:
        return values.copy()
    order = np.argsort(values, axis=1, kind="stable")
    ranked = np.take_along_axis(values, order, axis=1)
    new = np.ones((m, L), dtype=bool)
    new[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    # a stable sort puts a value's first appearance first among its equals
    head = np.maximum.accumulate(np.where(new, np.arange(L), 0), axis=1)
    first_sorted = np.take_along_axis(order, head, axis=1)
    first = np.empty_like(first_sorted)
    np.put_along_axis(first, order, first_sorted, axis=1)
    is_first = (first == np.arange(L)) & (values >= 0)
    rank = np.cumsum(is_first, axis=1) - 1
    pos = np.take_along_axis(rank, first, axis=1)
    pos[values < 0] = -1
    return pos


def _class_contexts(x: np.ndarray, cols: np.ndarray, card: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The contexts of a class: the distinct blanket states (digits ``(C, b)``) over every
    row and member (row ``m`` of ``cols``: a member, then its blanket in canonical
    order, cardinalities ``card``) and the counts ``(C, card[0])`` of the member's
    states seen with each, by chunks of members (a mixed-radix code with the member's
    state its lowest digit, or rows when the code does not fit in int64)."""
    N, width = x.shape[0], cols.shape[1]
    q = int(card[0])
    coded = np.sum(np.log2(card.astype(np.float64))) < 62
    radix = np.concatenate([[1], np.cumprod(card[:-1])]).astype(np.int64)
    step = max(1, _CHUNK // (N * (width + 2)))
    keys, counts = [], []
    for lo in range(0, len(cols), step):
        pattern = x[:, cols[lo:lo + step]].reshape(-1, width)
        k, c = np.unique(pattern @ radix if coded else pattern, axis=None if coded else 0,
                         return_counts=True)
        keys.append(k)
        counts.append(c)
    key, count = keys[0], counts[0]
    if len(keys) > 1:
        key, inv = np.unique(np.concatenate(keys), axis=None if coded else 0,
                             return_inverse=True)
        count = np.bincount(np.ravel(inv), weights=np.concatenate(counts)).astype(np.int64)
    if coded:
        state, key = key % q, key // q
        blanket_code, inv = np.unique(key, return_inverse=True)
        blanket = (blanket_code[:, None] // (radix[None, 1:] // q)) % card[None, 1:]
    else:
        state = key[:, 0]
        blanket, inv = np.unique(key[:, 1:], axis=0, return_inverse=True)
    out = np.zeros((len(blanket), q), dtype=np.int64)
    out[np.ravel(inv), state] = count
    return blanket, out


def _require_pooled_memory(N: int, classes: list, card: np.ndarray) -> None:
    """Refuse before counting when the pooled contexts could not fit: class ``c`` has at
    most ``min(N n_c, blanket states)`` contexts, each with its state counts and its
    factors' bases and strides; a chunk of patterns, their codes and the sort's copies."""
    total = 0.0
    for members, blankets, ks in classes:
        b = math.prod(float(c) for c in card[blankets[0]]) if blankets.shape[1] else 1.0
        q = int(card[members[0]])
        total += min(N * len(members), b) * (4 * q + 4 * len(ks) + 4)
    width = max((1 + c[1].shape[1] for c in classes), default=1)
    require_memory(8.0 * (total + 4 * _CHUNK + (width + 2) * N), "the pseudo-likelihood "
                   f"contexts of {len(classes)} classes of tied variables over {N} rows")
