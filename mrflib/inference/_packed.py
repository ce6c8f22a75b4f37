"""Flat arrays of a factor graph for the message-passing kernels (loopy BP, mean field).

The kernels take no model object: a factor graph is given as its tables concatenated in C
order and index arrays, so that a numba loop walks any factor of any arity. An *edge* is one
(factor, position-in-scope) pair; each edge owns a slot of ``|X_v|`` numbers in a flat
message array (``moff``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numba import njit

from mrflib._support.interpreted import interpret_small

__all__ = ["Packed", "advance", "pack"]


class Packed(NamedTuple):
    """A factor graph as flat arrays.

    ``tables[offsets[k]:offsets[k] + sizes[k]]`` is factor ``k``'s log table in C order;
    its edges are ``fptr[k]..fptr[k+1]-1``, edge ``e`` holding variable ``fvars[e]`` whose
    stride in the table is ``fstride[e]``; ``vedge[vptr[i]:vptr[i+1]]`` are the edges of
    variable ``i``; ``moff[e]`` is edge ``e``'s slot in a message array of ``n_slots``
    entries; ``card`` the cardinalities.
    """

    tables: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray
    fptr: np.ndarray
    fvars: np.ndarray
    fstride: np.ndarray
    vptr: np.ndarray
    vedge: np.ndarray
    moff: np.ndarray
    card: np.ndarray
    n_slots: int


def _int(values: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.int64).reshape(-1))


def pack(scopes: Sequence[tuple[int, ...]], tables: Sequence[np.ndarray],
         cardinalities: np.ndarray) -> Packed:
    """The :class:`Packed` arrays of factors ``(scopes, tables)`` over ``cardinalities``
    (every scope non-empty; tables shaped by their scopes' cardinalities)."""
    card = _int(cardinalities)
    n = len(card)
    sizes = _int([t.size for t in tables])
    offsets = _int(np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(sizes) else [])
    fptr = _int(np.concatenate([[0], np.cumsum([len(s) for s in scopes])]))
    fvars = _int([v for s in scopes for v in s])
    # math.prod: np.prod's dispatch per axis costs seconds on a model of a million factors
    fstride = _int([math.prod(t.shape[a + 1:]) for t in tables for a in range(t.ndim)])
    order = np.argsort(fvars, kind="stable")
    counts = np.bincount(fvars, minlength=n) if len(fvars) else np.zeros(n, dtype=np.int64)
    vptr = _int(np.concatenate([[0], np.cumsum(counts)]))
    edge_card = card[fvars] if len(fvars) else np.zeros(0, dtype=np.int64)
    moff = _int(np.concatenate([[0], np.cumsum(edge_card)[:-1]]) if len(fvars) else [])
    flat = (np.concatenate([np.ravel(t) for t in tables]) if len(tables)
            else np.zeros(0))
    return Packed(np.ascontiguousarray(flat, dtype=np.float64), offsets, sizes, fptr, fvars,
                  fstride, vptr, _int(order), moff, card, int(edge_card.sum()))


@njit(cache=True, inline="always")
def advance(xs: np.ndarray, n_s: int, fvars: np.ndarray, e0: int,
            card: np.ndarray) -> None:  # pragma: no cover - numba
    """Step ``xs``, the state of the scope whose variables are ``fvars[e0:e0 + n_s]``, to
    the next state in C order (the last variable changes fastest, as in the tables); after
    the last state it wraps to all zeros. The kernels walk a table entry by entry with it."""
    a = n_s - 1
    while a >= 0:
        xs[a] += 1
        if xs[a] < card[fvars[e0 + a]]:
            return
        xs[a] = 0
        a -= 1


interpret_small(globals())
