"""Numba kernel of :mod:`mrflib.inference.approx.importance`: drawing states from a packed
proposal (the mixtures of conditionals of each step), with the log of each state's
proposal probability. The plain numpy reference is
:meth:`mrflib.inference.approx.importance.Proposal._sample_numpy`.

A step draws one variable from ``Σ_j w_j q_j(x_v | x_rest_j) / Σ_valid w_j`` over its
conditionals ``j``, ``q_j = exp((table_j[x_v, col_j] - message_j[col_j]) / w_j)``, where
``col_j`` is the flat index of the rest variables' values; a conditional whose message is
``-inf`` at ``col_j`` is left out (uniform when all are), a value that some conditional's
table holds at ``-inf`` gets no mass (renormalized over the others; uniform when none is
left), and the value is the first whose cumulative probability exceeds ``u`` times the
total.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["draw", "log_f"]


@njit(cache=True)
def _draw(u, x, logq, step_var, step_card, step_counted, step_ptr, node_table, node_msg,
          node_cols, node_weight, rest_ptr, rest_var, rest_stride, tables, msgs,
          scratch, banned):  # pragma: no cover - numba
    n = u.shape[0]
    for i in range(n):
        lq = 0.0
        for s in range(step_var.size):
            c = step_card[s]
            for a in range(c):
                scratch[a] = 0.0
                banned[a] = False
            mass = 0.0
            for j in range(step_ptr[s], step_ptr[s + 1]):
                col = 0
                for k in range(rest_ptr[j], rest_ptr[j + 1]):
                    col += x[i, rest_var[k]] * rest_stride[k]
                m = msgs[node_msg[j] + col]
                if m == -np.inf:
                    continue
                w = node_weight[j]
                mass += w
                base = node_table[j] + col
                r = node_cols[j]
                for a in range(c):
                    t = tables[base + a * r]
                    if t > -np.inf:
                        scratch[a] += w * math.exp((t - m) / w)
                    else:  # every completion has zero weight: no conditional may draw it
                        banned[a] = True
            total = 0.0
            if mass > 0.0:
                for a in range(c):
                    scratch[a] = 0.0 if banned[a] else scratch[a] / mass
                    total += scratch[a]
            if not total > 0.0:  # no conditional left: uniform (the weight is 0)
                for a in range(c):
                    scratch[a] = 1.0 / c
                total = 1.0
            target = u[i, s] * total
            cum = 0.0
            pick = c - 1
            for a in range(c):
                cum += scratch[a]
                if cum > target:
                    pick = a
                    break
            x[i, step_var[s]] = pick
            if step_counted[s]:
                lq += math.log(scratch[pick] / total) if scratch[pick] > 0.0 else -np.inf
        logq[i] = lq


def draw(u: np.ndarray, x: np.ndarray, packed: tuple) -> np.ndarray:
    """Draw the rows of ``x`` (``int64 (N, n)``, observed values already set) step by step
    with the uniforms ``u`` (``(N, steps)``); returns ``log q`` of each row (the counted
    steps only)."""
    logq = np.empty(u.shape[0])
    _draw(u, x, logq, *packed)
    return logq


@njit(cache=True)
def _log_f(x, const, fptr, fvars, fstrides, foff, ftables, out):  # pragma: no cover - numba
    for i in range(x.shape[0]):
        total = const
        for k in range(fptr.size - 1):
            idx = 0
            for a in range(fptr[k], fptr[k + 1]):
                idx += x[i, fvars[a]] * fstrides[a]
            total += ftables[foff[k] + idx]
            if total == -np.inf:
                break
        out[i] = total


def log_f(x: np.ndarray, const: float, packed: tuple) -> np.ndarray:
    """``const + Σ_k θ_k(x_{S_k})`` of each row of ``x`` (the factors packed as scopes'
    variables and strides, and their flat log tables)."""
    out = np.empty(x.shape[0])
    _log_f(x, float(const), *packed, out)
    return out
