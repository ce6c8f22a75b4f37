"""Normalized potentials of a factor graph computed for whole groups of factors at once.

:func:`mrflib.learning.potentials.normalize` needs, for every factor, the clique terms of its
table (Definition 5 of Mizrahi et al., state 0 the reference), their sums over the factors
sharing a clique, and each sum added into the table of the clique's owner (the smallest
factor holding it, ties the first). Factors of the same arity, table shape and variable
order (the permutation sorting their scope) need the same array operations, so they are
stacked into one ``(K, *shape)`` array and each clique term of all ``K`` tables is one numpy
expression. The floating-point operations are those of the factor-by-factor definition,
entry by entry and in the same order, so the results are bit-identical to it:

* a clique term is :func:`~mrflib.learning.potentials.clique_term`'s sequence of
  subtractions, axis by axis in table order (:func:`reference_terms`);
* a clique's potential ``V_B`` is its first containing factor's term plus the others' in
  factor order (the ``q``-th additions of all cliques are one vectorized step);
* an owner's table starts at zero and receives its cliques' potentials in the order in which
  the cliques first appear (factor order, then subset order within a factor).

The cost is a numpy call per group, subset and addition rank, plus a few sorts of the
``(factor, clique)`` incidences, instead of Python steps per factor and per clique.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from itertools import chain, combinations

import numpy as np

from mrflib._support.validation import require_memory
from mrflib.models.factor_graph import FactorGraph

_EMPTY = np.zeros(0, np.int64)


@dataclass
class Group:
    """Factors ``index`` (ascending) of one arity, table shape and variable order."""

    index: np.ndarray  # (K,) factor indices
    scopes: np.ndarray  # (K, r) variables in table order
    shape: tuple[int, ...]
    order: tuple[int, ...]  # the table axes by increasing variable (the same for all K)
    tables: np.ndarray | None = None  # (K, *shape)


@dataclass
class Cliques:
    """The cliques of one size (and, with potentials, one shape in sorted order).

    ``variables[c]`` is clique ``c`` (sorted variables; ``c`` follows their lexicographic
    order), ``potential[c]`` its ``V_B`` over them, full cardinalities; it first appears in
    factor ``first[c]`` as its subset number ``first_subset[c]``; its owner is factor
    ``owner[c]`` (of arity ``owner_arity[c]``, in group ``owner_group[c]``), where it is
    subset number ``owner_subset[c]``.
    """

    variables: np.ndarray
    potential: np.ndarray | None
    first: np.ndarray
    first_subset: np.ndarray
    owner: np.ndarray
    owner_arity: np.ndarray
    owner_group: np.ndarray
    owner_subset: np.ndarray


@functools.lru_cache(maxsize=32)
def subset_positions(r: int) -> tuple[tuple[int, ...], ...]:
    """The non-empty subsets of ``range(r)``, by size then lexicographically: the order in
    which :func:`mrflib.learning.potentials.factor_graph_potentials` visits a scope's."""
    return tuple(pos for size in range(1, r + 1) for pos in combinations(range(r), size))


def reference_terms(tables: np.ndarray, mask: list[bool]) -> np.ndarray:
    """:func:`~mrflib.learning.potentials.clique_term` (reference gauge) of every table of
    the stack ``tables (K, *shape)`` over the axes where ``mask`` is true (table order),
    with the same subtractions entry by entry."""
    out = tables
    for ax, inside in enumerate(mask, start=1):
        ref = out[(slice(None),) * ax + (slice(0, 1),)]
        out = out - ref if inside else ref
    keep = [c for c, inside in zip(out.shape[1:], mask) if inside]
    return out.reshape([len(tables), *keep])


def run_starts(rows: np.ndarray) -> np.ndarray:
    """Where each run of equal consecutive rows (or entries) of ``rows`` starts."""
    if len(rows) == 0:
        return _EMPTY
    diff = rows[1:] != rows[:-1]
    new = diff.any(axis=1) if diff.ndim > 1 else diff
    return np.flatnonzero(np.r_[True, new])


def row_ids(rows: np.ndarray) -> tuple[np.ndarray, int]:
    """Ids of the distinct rows of the integer array ``rows (M, b)``, numbered in their
    lexicographic order, one per row; and how many there are."""
    if len(rows) == 0 or rows.shape[1] == 0:
        return np.zeros(len(rows), np.int64), min(len(rows), 1)
    o = np.lexsort(rows.T[::-1])
    new = np.zeros(len(rows), np.int64)
    new[run_starts(rows[o])] = 1
    ids = np.empty(len(rows), np.int64)
    ids[o] = np.cumsum(new) - 1
    return ids, int(new.sum())


def ranks(keys: np.ndarray) -> np.ndarray:
    """Each entry's position within its run of equal consecutive ``keys``."""
    start = run_starts(keys)
    return np.arange(len(keys)) - np.repeat(start, np.diff(np.r_[start, len(keys)]))


def factor_arrays(scopes: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(arity (F,), all variables flat, offsets (F + 1,))`` of a tuple of scopes."""
    arity = np.fromiter(map(len, scopes), dtype=np.int64, count=len(scopes))
    flat = np.fromiter(chain.from_iterable(scopes), dtype=np.int64, count=int(arity.sum()))
    offsets = np.zeros(len(scopes) + 1, np.int64)
    np.cumsum(arity, out=offsets[1:])
    return arity, flat, offsets


def scope_groups(scopes: tuple, card: np.ndarray | None = None) -> list[Group]:
    """The factors grouped by arity, variable order and (given ``card``) table shape,
    ordered by their first factor."""
    arity, flat, offsets = factor_arrays(scopes)
    groups = []
    for r in np.unique(arity).tolist():
        idx = np.flatnonzero(arity == r)
        S = flat[offsets[idx][:, None] + np.arange(r)]
        pattern = np.argsort(S, axis=1, kind="stable")
        shape = card[S] if card is not None else np.zeros_like(S)
        ids, m = row_ids(np.concatenate([shape, pattern], axis=1))
        o = np.argsort(ids, kind="stable")
        for part in np.split(o, np.cumsum(np.bincount(ids, minlength=m))[:-1]):
            groups.append(Group(idx[part], S[part], tuple(int(c) for c in shape[part[0]]),
                                tuple(int(a) for a in pattern[part[0]])))
    groups.sort(key=lambda grp: int(grp.index[0]))
    return groups


def stack_tables(model: FactorGraph) -> list[Group]:
    """:func:`scope_groups` of ``model`` with each group's tables stacked."""
    _require_memory(model)
    groups = scope_groups(model.scopes, model.cardinalities)
    for grp in groups:
        # one array call (np.stack takes Python steps per table); float64 tables kept as is
        grp.tables = np.array([model.log_tables[k] for k in grp.index.tolist()])
    return groups


def _require_memory(model: FactorGraph) -> None:
    """Refuse before stacking: the stacked and the output tables, and every factor's clique
    terms (``Π (|X_v| + 1) - 1`` entries per factor, held twice while gathered)."""
    arity, flat, _ = factor_arrays(model.scopes)
    which = np.repeat(np.arange(len(arity)), arity)
    logc = np.log(model.cardinalities[flat].astype(float))
    size = np.exp(np.bincount(which, weights=logc, minlength=len(arity)))
    terms = np.exp(np.bincount(which, weights=np.log1p(np.exp(logc)), minlength=len(arity)))
    require_memory(16.0 * (size.sum() + terms.sum()), "the normalized potentials of a "
                   f"factor graph of {len(arity)} factors")


def _incidences(groups: list[Group], with_terms: bool) -> dict[tuple, list]:
    """Every (factor, clique) pair gathered by clique size and sorted-order shape, as lists
    of arrays ``[variables, factor, subset number, factor arity, group, terms]``."""
    blocks: dict[tuple, list] = {}
    for g, grp in enumerate(groups):
        r, K = len(grp.shape), len(grp.index)
        for j, pos in enumerate(subset_positions(r)):
            order = [a for a in grp.order if a in pos]
            parts = blocks.setdefault((len(pos), tuple(grp.shape[a] for a in order)),
                                      [[] for _ in range(6)])
            for lst, item in zip(parts, (grp.scopes[:, order], grp.index, np.full(K, j),
                                         np.full(K, r), np.full(K, g))):
                lst.append(item)
            if with_terms:
                V = reference_terms(grp.tables, [a in pos for a in range(r)])
                parts[5].append(np.transpose(V, [0, *(1 + pos.index(a) for a in order)]))
    return blocks


def _cliques(parts: list) -> Cliques:
    """The cliques of one block of incidences; with terms, each clique's potential: its
    terms summed in factor order, the ``q``-th addition of every clique in one step."""
    rows, k, j, r, g = (np.concatenate(p) for p in parts[:5])
    cid, _ = row_ids(rows)
    o = np.lexsort((k, cid))  # each clique's incidences in factor order
    first = o[run_starts(cid[o])]
    own = np.lexsort((k, r, cid))
    own = own[run_starts(cid[own])]
    P = None
    if parts[5]:
        V = np.concatenate(parts[5])
        del parts[5][:]
        P = V[first]
        rank = ranks(cid[o])
        by_rank = o[np.argsort(rank, kind="stable")]
        ends = np.cumsum(np.bincount(rank))
        for a, b in zip(ends[:-1], ends[1:]):
            inc = by_rank[a:b]  # at most one incidence of each clique
            P[cid[inc]] = P[cid[inc]] + V[inc]
    return Cliques(rows[first], P, k[first], j[first], k[own], r[own], g[own], j[own])


def clique_blocks(groups: list[Group], with_terms: bool = True) -> list[Cliques]:
    """All cliques of the factors of ``groups``, by size and shape, and (``with_terms``:
    the groups' tables are stacked) their normalized potentials."""
    return [_cliques(parts) for parts in _incidences(groups, with_terms).values()]


def gather(blocks: list[Cliques], name: str) -> np.ndarray:
    """The field ``name`` of every block, concatenated."""
    return np.concatenate([getattr(b, name) for b in blocks] or [_EMPTY])


def block_index(blocks: list[Cliques]) -> tuple[np.ndarray, np.ndarray]:
    """For every clique of :func:`gather`'s order, its block and its index in the block."""
    which = np.concatenate([np.full(len(b.owner), i) for i, b in enumerate(blocks)] or [_EMPTY])
    within = np.concatenate([np.arange(len(b.owner)) for b in blocks] or [_EMPTY])
    return which, within


def _owned_steps(blocks: list[Cliques]):
    """Yield ``(group, block, subset, owners, cliques)``: cliques of ``blocks[block]``
    that are their owners' ``q``-th (in order of first appearance) and subset number
    ``subset`` of them, owners distinct and all in ``group``; by increasing ``q``."""
    owner, grp, sub = (gather(blocks, n) for n in ("owner", "owner_group", "owner_subset"))
    which, within = block_index(blocks)
    o = np.lexsort((gather(blocks, "first_subset"), gather(blocks, "first"), owner))
    rank = np.empty(len(o), np.int64)
    rank[o] = ranks(owner[o])
    step = np.lexsort((sub, grp, rank))
    starts = run_starts(np.stack([rank, grp, sub], axis=1)[step])
    for a, b in zip(starts.tolist(), np.r_[starts[1:], len(step)].tolist()):
        sel = step[a:b]
        yield int(grp[sel[0]]), int(which[sel[0]]), int(sub[sel[0]]), owner[sel], within[sel]


def normalized_tables(model: FactorGraph, groups: list[Group]) -> tuple[np.ndarray, ...]:
    """The log tables of :func:`mrflib.learning.potentials.normalize` (read-only) from the
    stacked ``groups`` of ``model``: each clique potential added into its owner's table,
    which starts at 0, in the order in which the owner's cliques first appear."""
    blocks = clique_blocks(groups)
    local = np.zeros(model.n_factors, np.int64)
    for grp in groups:
        local[grp.index] = np.arange(len(grp.index))
    tables = [np.zeros((len(grp.index), *grp.shape)) for grp in groups]
    for g, i, j, owners, cliques in _owned_steps(blocks):
        grp = groups[g]
        pos = subset_positions(len(grp.shape))[j]
        order = [a for a in grp.order if a in pos]
        V = np.transpose(blocks[i].potential[cliques], [0, *(1 + np.argsort(order))])
        shape = [grp.shape[a] if a in pos else 1 for a in range(len(grp.shape))]
        rows = local[owners]
        tables[g][rows] = tables[g][rows] + V.reshape([len(rows), *shape])
    views: list[np.ndarray] = []
    for T in tables:
        T.flags.writeable = False
        views.extend(T if T.ndim > 1 else (T[i:i + 1].reshape(()) for i in range(len(T))))
    where = np.empty(model.n_factors, np.int64)
    where[np.concatenate([grp.index for grp in groups] or [_EMPTY])] = np.arange(len(where))
    return tuple(map(views.__getitem__, where.tolist()))
