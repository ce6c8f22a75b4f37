"""Validation of a factor graph's scopes and tables for whole groups of factors at once.

:class:`~mrflib.models.factor_graph.FactorGraph` checks every factor: its scope (integer
variables in range, distinct), its table (the scope's shape, real numbers, no NaN, no
``+inf``) and the tables' magnitudes (their largest ``|log-weight|`` add up to at most
:data:`~mrflib.models.factor_graph.MAX_LOG_WEIGHT`). Factor by factor that is a few Python
steps and numpy calls per factor, most of the time of building a lattice of a million
factors. :func:`check_factors` makes the same checks with a few numpy calls per group of
factors whose scopes have one shape (their tables converted and stacked into one
``(K, *shape)`` float64 array by one call), and gives the same stored objects: scopes as
tuples of ``int``, tables as read-only C-ordered ``float64`` arrays holding the values of
``np.asarray(table, dtype=float64)`` (rows of one fresh stacked copy per group, never the
caller's memory).

It answers only for models it accepts: on anything the bulk checks do not accept (a bad
factor, or an input form they do not handle, such as a scope of ``bool`` variables), it
returns ``None`` and the constructor checks factor by factor, which names the first
offending ``scopes[k]`` or ``log_tables[k]`` with its usual message.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import chain
from operator import attrgetter
from typing import Any

import numpy as np

from mrflib._support.validation import check_array

__all__ = ["check_factors", "group_by", "scope_products", "table_rows"]

#: Containers a scope may be for the bulk check (others go factor by factor).
_SCOPE_TYPES = (tuple, list, range, np.ndarray)
#: Table dtypes whose conversion to float64 the bulk check makes (kinds: float, signed and
#: unsigned integer, bool); others (complex, object, strings...) go factor by factor.
_TABLE_KINDS = "fiub"


def check_factors(card: np.ndarray, scopes: Sequence, log_tables: Sequence,
                  max_entries: int, max_log_weight: float) -> tuple[tuple, tuple] | None:
    """``(scopes, tables)`` as :class:`~mrflib.models.factor_graph.FactorGraph` stores
    them, when every factor passes its checks (a table of at most ``max_entries`` entries,
    magnitudes adding up to at most ``max_log_weight`` in factor order); ``None`` when
    some factor or input form needs the factor-by-factor check."""
    n, F = len(card), len(scopes)
    parsed = _scope_arrays(scopes, n)
    if parsed is None:
        return None
    out_scopes, arity, flat, offsets = parsed
    which = np.repeat(np.arange(F), arity)
    # the table sizes the scopes ask for, refused by their logarithm before any conversion
    logs = np.bincount(which, weights=np.log2(card[flat].astype(float)), minlength=F)
    if F and logs.max() > math.log2(max_entries) - 1e-6:
        return None
    arrays = _table_arrays(log_tables)
    if arrays is None:
        return None
    if not all(dt.kind in _TABLE_KINDS for dt in set(map(attrgetter("dtype"), arrays))):
        return None
    # each table's size is its scope's before anything is stacked (a broadcast view of
    # the wrong shape may stand for more entries than memory holds)
    want = scope_products(card[flat], arity, offsets)
    if np.any(np.fromiter(map(attrgetter("size"), arrays), np.int64, count=F) != want):
        return None
    magnitudes = np.zeros(F)
    views: list[np.ndarray] = []
    parts = []
    for shape, idx in _shape_groups(card, flat, offsets, arity):
        stacked = _stacked_group(arrays, idx, shape)
        if stacked is None:
            return None
        magnitudes[idx] = _largest_finite(stacked)
        views.extend(table_rows(stacked))
        parts.append(idx)
    with np.errstate(over="ignore"):  # a sum past float64 is refused, without a warning
        total = float(np.cumsum(magnitudes)[-1]) if F else 0.0
    if not total <= max_log_weight:
        return None
    where = np.empty(F, dtype=np.int64)
    where[np.concatenate(parts or [np.zeros(0, np.int64)])] = np.arange(F)
    return out_scopes, tuple(map(views.__getitem__, where.tolist()))


def scope_products(values: np.ndarray, arity: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``Π_{v in scope k} values[v]`` for every scope ``k`` (``int64``; 1 for an empty
    scope), ``values`` given per variable slot of the flat scopes at ``offsets``."""
    out = np.ones(len(arity), dtype=np.int64)
    for j in range(int(arity.max()) if len(arity) else 0):  # each scope's j-th variable
        has = np.flatnonzero(arity > j)
        out[has] *= values[offsets[has] + j]
    return out


def group_by(keys: list) -> tuple[list[tuple[Any, np.ndarray]], list[int]]:
    """The positions of equal hashable ``keys``: ``[(key, positions ascending), ...]`` in
    order of first appearance, and where each position lands when the groups' items are
    listed one group after the other (``items[where[k]]`` is item ``k``)."""
    number = {key: i for i, key in enumerate(dict.fromkeys(keys))}
    code = np.fromiter(map(number.__getitem__, keys), dtype=np.int64, count=len(keys))
    order = np.argsort(code, kind="stable")
    bounds = np.cumsum(np.bincount(code, minlength=len(number)))[:-1]
    where = np.empty(len(keys), dtype=np.int64)
    where[order] = np.arange(len(keys))
    return list(zip(number, np.split(order, bounds))), where.tolist()


def table_rows(stacked: np.ndarray) -> list[np.ndarray]:
    """The tables of a stack ``(K, *shape)``, made read-only: its rows (0-d arrays for a
    stack of 0-d tables, never numpy scalars)."""
    stacked.flags.writeable = False
    if stacked.ndim > 1:
        return list(stacked)
    return [stacked[i:i + 1].reshape(()) for i in range(len(stacked))]


def _scope_arrays(scopes: Any, n: int) -> tuple[tuple, np.ndarray, np.ndarray,
                                                  np.ndarray] | None:
    """``(scopes as tuples of int, arity (F,), variables flat, offsets (F + 1,))`` when
    every scope holds distinct integer variables in ``0..n-1``, else ``None``."""
    F = len(scopes)
    if isinstance(scopes, np.ndarray):
        if scopes.ndim != 2 or scopes.dtype.kind not in "iu":
            return None
        items = scopes.ravel().tolist()  # Python ints, exact also for uint64
        arity = np.full(F, scopes.shape[1], dtype=np.int64)
        reuse = False
    else:
        kinds = set(map(type, scopes))
        if not kinds <= set(_SCOPE_TYPES):
            return None
        try:  # a 0-d array has no length; a 2-d one yields rows, refused by type below
            arity = np.fromiter(map(len, scopes), dtype=np.int64, count=F)
            items = list(chain.from_iterable(scopes))
        except TypeError:
            return None
        types = set(map(type, items))
        if not all(t is int or issubclass(t, np.integer) for t in types):
            return None
        reuse = kinds <= {tuple} and types <= {int}
    try:
        flat = np.array(items, dtype=np.int64)
    except OverflowError:  # beyond int64: out of range anyway
        return None
    if flat.size and (flat.min() < 0 or flat.max() >= n):
        return None
    offsets = np.zeros(F + 1, dtype=np.int64)
    np.cumsum(arity, out=offsets[1:])
    for r in np.unique(arity).tolist():
        if r > 1:
            idx = np.flatnonzero(arity == r)
            S = np.sort(flat[offsets[idx][:, None] + np.arange(r)], axis=1)
            if np.any(S[:, 1:] == S[:, :-1]):
                return None
    if reuse:  # already tuples of int: kept as they are
        out = tuple(scopes)
    else:
        items = flat.tolist()
        bounds = offsets.tolist()
        out = tuple(tuple(items[a:b]) for a, b in zip(bounds[:-1], bounds[1:]))
    return out, arity, flat, offsets


def _table_arrays(log_tables: Sequence) -> list[np.ndarray] | None:
    """The tables as arrays: plain arrays as given, anything else converted as the
    factor-by-factor check converts it (``None`` if a conversion fails)."""
    arrays = list(log_tables)
    if set(map(type, arrays)) <= {np.ndarray}:
        return arrays
    for k, t in enumerate(arrays):
        if type(t) is not np.ndarray:
            try:
                arrays[k] = check_array(t, f"log_tables[{k}]", dtype=np.float64,
                                        finite=False)
            except Exception:  # the factor-by-factor check says what is wrong
                return None
    return arrays


def _shape_groups(card: np.ndarray, flat: np.ndarray, offsets: np.ndarray,
                  arity: np.ndarray):
    """Yield ``(shape, factors)``: the factors (ascending) whose scopes' cardinalities
    are ``shape``, one group per shape."""
    for r in np.unique(arity).tolist():
        idx = np.flatnonzero(arity == r)
        if r == 0:
            yield (), idx
            continue
        C = card[flat[offsets[idx][:, None] + np.arange(r)]]
        if np.all(C == C[0]):  # one shape (all variables alike, say)
            yield tuple(C[0].tolist()), idx
            continue
        radix = int(card.max()) + 1
        if r * math.log2(radix) < 62:  # each shape one int64 number: a 1-d unique
            _, first, code = np.unique(C @ radix ** np.arange(r, dtype=np.int64),
                                       return_index=True, return_inverse=True)
            shapes = C[first]
        else:
            shapes, code = np.unique(C, axis=0, return_inverse=True)
        code = code.ravel()
        order = np.argsort(code, kind="stable")
        bounds = np.cumsum(np.bincount(code, minlength=len(shapes)))[:-1]
        for shape, part in zip(shapes.tolist(), np.split(order, bounds)):
            yield tuple(shape), idx[part]


def _stacked_group(arrays: list, idx: np.ndarray, shape: tuple) -> np.ndarray | None:
    """The tables ``idx``, whose scopes' cardinalities are ``shape``, converted to float64
    and stacked into a fresh ``(K, *shape)`` array; ``None`` unless each has ``shape`` and
    holds no NaN or ``+inf`` (their dtypes are real numbers, checked by the caller)."""
    try:
        stacked = np.array([arrays[i] for i in idx.tolist()], dtype=np.float64)
    except ValueError:  # tables of different shapes
        return None
    if stacked.shape != (len(idx), *shape):
        return None
    if np.isnan(stacked).any() or np.isposinf(stacked).any():
        return None
    return stacked


def _largest_finite(stacked: np.ndarray) -> np.ndarray:
    """Each table's largest finite ``|log-weight|`` (0 if none), as
    :func:`mrflib.models.precision.magnitude` takes it."""
    a = np.abs(stacked)
    a[~np.isfinite(a)] = 0.0
    return a.reshape(len(a), -1).max(axis=1, initial=0.0)
