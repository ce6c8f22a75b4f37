"""The parameter layout of a factor graph's learners computed for whole groups of terms.

:class:`mrflib.learning._layout.Layout` lists the clique terms of the normalized
parameterization (every clique ``B`` of a scope, stored by its owner, the smallest factor
holding it, ties the first: :func:`mrflib.learning.potentials.clique_owners`), ordered by
owner, then size, then variables, and maps ``θ`` to the flat tables by a sparse matrix
whose non-zeros put entry ``x_B - 1`` of each term's block at the owner's table entries
with ``x_B ≠ 0``. Here the cliques come from the grouped incidences of
:mod:`mrflib.learning._clique_groups` and the terms that share an owner's table shape and
clique axes fill their entries with one numpy expression, giving the same term order, the
same owners and offsets and the same matrix as term by term.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from mrflib.learning._clique_groups import (
    clique_blocks,
    factor_arrays,
    gather,
    scope_groups,
    subset_positions,
)
from mrflib.models._factor_bulk import scope_products

_EMPTY = np.zeros(0, np.int64)


def layout_terms(scopes: tuple, card: np.ndarray) -> dict:
    """The terms of the layout, by owner, size, then variables: ``terms`` (list of tuples),
    ``owner`` (``int64``), ``free`` (``Π_{v ∈ B} (|X_v| - 1)`` each), and, for the map,
    ``groups`` (the scope groups) and each term's ``group`` and ``subset`` number there."""
    groups = scope_groups(scopes, card)
    blocks = clique_blocks(groups, with_terms=False)
    width = max((b.variables.shape[1] for b in blocks), default=0)
    padded = np.concatenate([np.pad(b.variables, ((0, 0), (0, width - b.variables.shape[1])),
                                    constant_values=-1) for b in blocks]
                            or [np.zeros((0, width), np.int64)])
    size = np.concatenate([np.full(len(b.owner), b.variables.shape[1]) for b in blocks]
                          or [_EMPTY])
    owner = gather(blocks, "owner")
    order = np.lexsort([padded[:, j] for j in reversed(range(width))] + [size, owner])
    free = np.concatenate([np.prod(card[b.variables] - 1, axis=1) for b in blocks]
                          or [_EMPTY])
    return {"terms": _term_tuples(scopes, groups, blocks, order), "owner": owner[order],
            "free": free[order], "groups": groups,
            "group": gather(blocks, "owner_group")[order],
            "subset": gather(blocks, "owner_subset")[order]}


def _term_tuples(scopes: tuple, groups: list, blocks: list, order: np.ndarray) -> list:
    """The cliques of ``blocks`` (listed block after block) as tuples of their sorted
    variables, in ``order``; a clique that is its owner's whole scope, given sorted, is
    that scope's tuple itself (equal, and no new object for it)."""
    in_order = np.array([grp.order == tuple(range(len(grp.order))) for grp in groups]
                        + [False])
    whole = [(b.owner_subset == 2 ** b.owner_arity - 2) & in_order[b.owner_group]
             for b in blocks]
    out = np.empty(len(order), dtype=object)
    at = np.empty(len(order), dtype=np.int64)
    at[order] = np.arange(len(order))
    start = 0
    for b, same in zip(blocks, whole):
        here = at[start:start + len(same)]
        start += len(same)
        if same.any():
            out[here[same]] = np.fromiter(map(scopes.__getitem__, b.owner[same].tolist()),
                                          dtype=object, count=int(same.sum()))
        if not same.all():
            rows = b.variables[~same].tolist()
            out[here[~same]] = np.fromiter(map(tuple, rows), dtype=object, count=len(rows))
    return out.tolist()


def layout_matrix(terms: dict, offsets: np.ndarray, term_offsets: np.ndarray,
                  shape: tuple[int, int],
                  entries_of: Callable[[tuple, tuple], tuple[np.ndarray, np.ndarray]]
                  ) -> sp.csr_matrix:
    """The map ``A`` (``shape``) from ``θ`` to the flat tables: term ``t`` of owner ``k``
    puts ``θ[term_offsets[t] + c]`` at table entry ``offsets[k] + r`` for each ``(r, c)``
    of ``entries_of(table shape, clique axes)``, entries listed term by term."""
    groups, group, subset = terms["groups"], terms["group"], terms["subset"]
    rows, cols, tid = [], [], []
    step = int(subset.max()) + 1 if len(subset) else 1
    key = group * step + subset
    o = np.argsort(key, kind="stable")
    starts = np.flatnonzero(np.r_[True, key[o][1:] != key[o][:-1]]) if len(o) else _EMPTY
    cache: dict = {}
    for a, b in zip(starts.tolist(), np.r_[starts[1:], len(o)].tolist()):
        t = o[a:b]  # terms of one owner group and clique position: ascending
        grp = groups[int(group[t[0]])]
        pos = subset_positions(len(grp.shape))[int(subset[t[0]])]
        axes = (grp.shape, tuple(ax for ax in grp.order if ax in pos))
        if axes not in cache:
            cache[axes] = entries_of(*axes)
        r, c = cache[axes]
        rows.append((offsets[terms["owner"][t]][:, None] + r[None, :]).ravel())
        cols.append((term_offsets[t][:, None] + c[None, :]).ravel())
        tid.append(np.repeat(t, len(r)))
    if rows:
        term_order = np.argsort(np.concatenate(tid), kind="stable")
        r = np.concatenate(rows)[term_order]
        c = np.concatenate(cols)[term_order]
    else:
        r = c = np.zeros(0, np.int64)
    return sp.csr_matrix((np.ones(len(r)), (r, c)), shape=shape)


def layout_size(scopes: tuple, card: np.ndarray) -> tuple[int, int] | None:
    """``(largest index grid in bytes, non-zeros of A)`` of the layout's memory bound,
    exact integers: ``8 |S| Π|X_v|`` at most and ``Σ (Π (2|X_v| - 1) - Π |X_v|)``; ``None``
    when the products could overflow ``int64`` (the caller counts factor by factor)."""
    arity, flat, offsets = factor_arrays(scopes)
    if not len(arity):
        return 0, 0
    which = np.repeat(np.arange(len(arity)), arity)
    c = card[flat]
    if np.bincount(which, weights=np.log2(2.0 * c), minlength=len(arity)).max() > 50:
        return None
    size = scope_products(c, arity, offsets)
    double = scope_products(2 * c - 1, arity, offsets)
    need = int((8 * arity * size).max())
    return need, sum((double - size).tolist())  # Python ints: no overflow in the sum
