"""The conditional of an SMCI sum region given each sample's boundary,
``P(x_T | s_∂A)`` summed over ``A \\ T`` (:mod:`mrflib.inference.smci.regions`), by three
engines: a contraction of the factor slices in linear space (:func:`einsum_rho`), a dense log
table over the region (:func:`dense_rho`), and the exact engine on the region conditioned on
each distinct boundary (:func:`exact_rho`).

Each engine gathers the factors of ``F(A)`` at the rows' boundary values and sums a block of
rows at once. Which one a region takes, by its states and the span of its tables, is
decided in :mod:`~mrflib.inference.smci.regions`; the engines are apart from it because they
are table arithmetic on one region, with no estimator, target list or standard error.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import opt_einsum

from mrflib.inference import exact
from mrflib.inference._factor_ops import LINEAR_SPAN, logsumexp
from mrflib.models.factor_graph import FactorGraph

__all__ = ["BLOCK_ENTRIES", "dense_rho", "einsum_plan", "einsum_rho", "exact_rho"]

#: Entries of one dense block of region tables (rows x region states).
BLOCK_ENTRIES = 2**21


def _slices(model: FactorGraph, rows: np.ndarray, region: tuple, factors: list
            ) -> list[tuple[np.ndarray, list[int]]]:
    """Each factor of ``F(A)`` at the rows' boundary values: ``(part, axes)`` with
    ``part (m or 1, ...)`` over the region positions ``axes`` (increasing)."""
    pos = {v: a for a, v in enumerate(region)}
    out = []
    for k in factors:
        scope, t = model.scopes[k], model.log_tables[k]
        inner = sorted((a for a, v in enumerate(scope) if v in pos), key=lambda a: pos[scope[a]])
        outer = [a for a, v in enumerate(scope) if v not in pos]
        moved = np.transpose(t, outer + inner)
        part = moved[tuple(rows[:, scope[a]] for a in outer)] if outer else moved[None]
        out.append((part, [pos[scope[a]] for a in inner]))
    return out


def _zero_row(start: int, region: tuple) -> ValueError:
    return ValueError(f"samples[{start}] has zero weight under the model (its region "
                      f"{list(region)} has no state of positive weight given the rest)")


def dense_rho(model: FactorGraph, x: np.ndarray, region: tuple, factors: list,
              n_target: int) -> np.ndarray:
    """``P(x_T | s_∂A)`` for each row of ``x`` (``(M,) + X_T``), with ``T`` the first
    ``n_target`` variables of ``region``, from a dense log table over ``A`` per row."""
    card = model.cardinalities
    shape = tuple(int(card[v]) for v in region)
    out = np.empty((len(x),) + shape[:n_target])
    block = max(1, BLOCK_ENTRIES // math.prod(shape))
    axes = tuple(range(1, len(region) + 1))
    for start in range(0, len(x), block):
        rows = x[start:start + block]
        table = np.zeros((len(rows),) + shape)
        for part, where in _slices(model, rows, region, factors):
            view = [part.shape[0]] + [1] * len(region)
            for a in where:
                view[1 + a] = shape[a]
            table += np.reshape(part, view)
        log_z = logsumexp(table, axes)
        if np.any(log_z == -np.inf):
            raise _zero_row(start + int(np.flatnonzero(np.ravel(log_z) == -np.inf)[0]), region)
        p = np.exp(table - np.reshape(log_z, (-1,) + (1,) * len(region)))
        out[start:start + len(rows)] = p.sum(axis=tuple(range(1 + n_target, 1 + len(region))))
    return out


def einsum_plan(model: FactorGraph, region: tuple, factors: list, n_target: int
                ) -> tuple[str, list, int] | None:
    """The contraction of the region's factor slices (a batch axis first) onto the target,
    its path and largest intermediate per row, or ``None`` when a product of the slices,
    each scaled to largest entry one, could underflow (their spans add up past
    :data:`~mrflib.inference._factor_ops.LINEAR_SPAN`)."""
    span = 0.0
    for k in factors:
        t = model.log_tables[k]
        fin = t[np.isfinite(t)]
        span += float(fin.max() - fin.min()) if fin.size else 0.0
    if span > LINEAR_SPAN:
        return None
    card = model.cardinalities
    pos = {v: a for a, v in enumerate(region)}
    batch = opt_einsum.get_symbol(len(region))
    terms, shapes = [], []
    for k in factors:
        where = sorted(pos[v] for v in model.scopes[k] if v in pos)
        terms.append(batch + "".join(opt_einsum.get_symbol(a) for a in where))
        shapes.append((1,) + tuple(int(card[region[a]]) for a in where))
    for a in range(n_target):  # a target variable no factor holds still indexes the output
        terms.append(opt_einsum.get_symbol(a))
        shapes.append((int(card[region[a]]),))
    expr = ",".join(terms) + "->" + batch + "".join(map(opt_einsum.get_symbol,
                                                        range(n_target)))
    path, largest = _path(expr, tuple(shapes))
    return expr, path, largest


@functools.lru_cache(maxsize=4096)
def _path(expr: str, shapes: tuple) -> tuple[tuple, int]:
    """The contraction order of ``expr`` and its largest intermediate (targets of the same
    shape of neighbourhood, as on a lattice, share one search)."""
    path, info = opt_einsum.contract_path(expr, *shapes, shapes=True)
    return tuple(tuple(step) for step in path), int(info.largest_intermediate)


@functools.lru_cache(maxsize=4096)
def _expression(expr: str, shapes: tuple, path: tuple) -> Any:
    return opt_einsum.contract_expression(expr, *shapes, optimize=list(path))


def einsum_rho(model: FactorGraph, x: np.ndarray, region: tuple, factors: list,
               n_target: int, plan: tuple) -> np.ndarray:
    """As :func:`dense_rho`, by contracting the factor slices in linear space (each
    shifted to largest entry one per row) along ``plan``, a block of rows at a time."""
    expr, path, largest = plan
    card = model.cardinalities
    ones = [np.ones(int(card[region[a]])) for a in range(n_target)]
    out = np.empty((len(x),) + tuple(int(card[v]) for v in region[:n_target]))
    block = max(1, BLOCK_ENTRIES // max(largest, 1))
    for start in range(0, len(x), block):
        rows = x[start:start + block]
        ops = []
        for part, _ in _slices(model, rows, region, factors):
            flat = part.reshape(part.shape[0], -1)
            top = flat.max(axis=1)
            top[top == -np.inf] = 0.0
            ops.append(np.exp(part - top.reshape((-1,) + (1,) * (part.ndim - 1))))
        ops = [np.broadcast_to(o, (len(rows),) + o.shape[1:]) for o in ops] + ones
        p = _expression(expr, tuple(o.shape for o in ops), path)(*ops)
        total = p.reshape(len(rows), -1).sum(axis=1)
        if np.any(total == 0):
            raise _zero_row(start + int(np.flatnonzero(total == 0)[0]), region)
        out[start:start + len(rows)] = p / total.reshape((-1,) + (1,) * n_target)
    return out


def exact_rho(model: FactorGraph, x: np.ndarray, region: tuple, boundary: tuple,
              factors: list, n_target: int) -> np.ndarray:
    """As :func:`dense_rho`, by the exact engine on the region conditioned on each
    distinct boundary configuration of the rows (for regions too large to tabulate)."""
    card = model.cardinalities
    pos = {v: a for a, v in enumerate(region)}
    keys, inverse = (np.unique(x[:, list(boundary)], axis=0, return_inverse=True)
                     if boundary else (np.zeros((1, 0), dtype=np.int64),
                                       np.zeros(len(x), dtype=np.int64)))
    at = {v: j for j, v in enumerate(boundary)}
    target_shape = tuple(int(card[v]) for v in region[:n_target])
    rho = np.empty((len(keys),) + target_shape)
    for r, key in enumerate(keys):
        scopes, tables = [], []
        for k in factors:
            scope, t = model.scopes[k], model.log_tables[k]
            sl = tuple(int(key[at[v]]) if v not in pos else slice(None) for v in scope)
            scopes.append(tuple(pos[v] for v in scope if v in pos))
            tables.append(t[sl])
        scopes.append(tuple(range(n_target)))
        tables.append(np.zeros(target_shape))
        sub = FactorGraph([int(card[v]) for v in region], scopes, tables)
        try:
            rho[r] = exact.factor_marginals(sub)[-1]
        except ValueError as err:
            raise ValueError(f"samples: a row has zero weight under the model, or the sum "
                             f"region {list(region)} is too large ({err})") from err
    return rho[np.ravel(inverse)]
