"""A factor graph packed as the flat arrays the Gibbs kernels read
(:mod:`mrflib.inference.sampling._chains_kernels`): its log-tables joined in factor order
(:func:`flat_tables`) and its scopes as index arrays, by variable and by factor, with each
variable's stride in each table (:func:`pack`).

The packing is apart from the sampler of :mod:`mrflib.inference.sampling.chains`, which
imports it, because more than the sampler reads it: the pairwise sampler, SMCI's kernels,
the table learners, the MAP search and the point estimates take a model in this layout, and
a learner packs the structure once per fit and flattens only the tables at each step.
"""

from __future__ import annotations

import itertools
import operator

import numpy as np

from mrflib.models.factor_graph import FactorGraph

__all__ = ["pack", "flat_tables"]


def pack(model: FactorGraph, tables: np.ndarray | None = None) -> tuple:
    """The model as flat arrays for the kernels of :mod:`mrflib.inference.sampling._chains_kernels`.

    Parameters
    ----------
    model : FactorGraph
    tables : numpy.ndarray or None, default None
        The model's log-tables raveled and joined in factor order (:func:`flat_tables`),
        when the caller has them; ``None``: flattened here.

    Returns
    -------
    tuple of numpy.ndarray
        ``(tables, vptr, vfac, vstride, fptr, fvars, fstride, offsets)``: the flat
        tables, each variable's factors and its stride in each (CSR), each factor's
        variables and strides (CSR) and each table's offset in ``tables``.
    """
    card = np.asarray(model.cardinalities, dtype=np.int64)
    arity = np.fromiter(map(len, model.scopes), dtype=np.int64, count=len(model.scopes))
    fptr = np.zeros(len(arity) + 1, dtype=np.int64)
    np.cumsum(arity, out=fptr[1:])
    fvars = np.fromiter(itertools.chain.from_iterable(model.scopes), dtype=np.int64,
                        count=int(fptr[-1]))
    # C-order strides from the cardinalities: the product of the later variables' states
    # within each scope, a reversed cumulative product per factor (no loop over factors)
    fstride = _scope_strides(card[fvars], fptr)
    sizes = np.ones(len(arity), dtype=np.int64)  # a table's size: its first stride times
    first = fptr[:-1][arity > 0]                  # its first variable's states
    sizes[arity > 0] = fstride[first] * card[fvars[first]]
    offsets = (np.cumsum(sizes) - sizes).astype(np.int64)
    # each variable's factors in increasing order: a stable sort of the scope entries
    by_var = np.argsort(fvars, kind="stable")
    vptr = np.zeros(len(card) + 1, dtype=np.int64)
    np.cumsum(np.bincount(fvars, minlength=len(card)), out=vptr[1:])
    vfac = np.repeat(np.arange(len(arity), dtype=np.int64), arity)[by_var]
    vstride = fstride[by_var]
    if tables is None:
        tables = flat_tables(model, int(sizes.sum()))
    return tables, vptr, vfac, vstride, fptr, fvars, fstride, offsets


def flat_tables(model: FactorGraph, total: int | None = None) -> np.ndarray:
    """The log-tables raveled and joined in factor order (the kernels' ``tables``).

    Parameters
    ----------
    model : FactorGraph
    total : int or None, default None
        The tables' total size when the caller knows it.

    Returns
    -------
    numpy.ndarray of float64, shape (sum of the tables' sizes,)
        The joined tables.
    """
    tables = model.log_tables
    if not tables:
        return np.zeros(0)
    # a model keeps its tables as C-contiguous float64 arrays, so their buffers joined are
    # the flat tables: one C-level pass instead of a numpy call per factor
    flat = np.frombuffer(b"".join(tables), dtype=np.float64).copy()
    if total is None:
        total = sum(map(operator.attrgetter("size"), tables))
    if flat.size != total:  # pragma: no cover
        flat = np.concatenate([np.ravel(t) for t in tables]).astype(np.float64)
    return flat


def _scope_strides(cards: np.ndarray, fptr: np.ndarray) -> np.ndarray:
    """The C-order stride of every scope entry: the product of the cardinalities
    ``cards`` that follow it within its factor (factor ``k`` holds entries
    ``fptr[k]:fptr[k+1]``)."""
    total = len(cards)
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    # an exclusive running product from each factor's end (Hillis-Steele doubling within
    # the factors; exact in int64, a table's size being bounded far below 2^63)
    rev = cards[::-1]
    factor_of = np.repeat(np.arange(len(fptr) - 1), np.diff(fptr))[::-1]
    starts = np.flatnonzero(np.r_[True, factor_of[1:] != factor_of[:-1]])
    depth = np.arange(total) - np.repeat(starts, np.diff(np.r_[starts, total]))
    out = np.where(depth >= 1, np.r_[1, rev[:-1]], 1).astype(np.int64)
    step = 1
    while step <= int(depth.max()):
        shifted = np.ones(total, dtype=np.int64)
        shifted[step:] = out[:-step]
        out = np.where(depth >= step, out * shifted, out)
        step *= 2
    return out[::-1].copy()
