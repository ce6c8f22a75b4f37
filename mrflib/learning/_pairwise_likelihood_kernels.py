"""Numba kernel of the pseudo-likelihood of pairwise factor graphs
(:mod:`mrflib.learning._pairwise_likelihood`).

The model is the flat array ``w`` of :class:`mrflib.inference.sampling._pairwise.Pairwise`:
variable ``i``'s unary row at ``uoff[i]`` and, for the ``k``-th entry of its neighbour list,
a table oriented for ``i`` whose row of the neighbour's state ``s`` starts at
``noff[k] + s * card[i]``. ``w`` holds exponentiated rows (``logs`` false: a conditional is
the product of its rows) or log-weights (``logs`` true: their sum, then one exponential per
state). Every entry of ``w`` belongs to exactly one variable's rows, so the gradient of a
variable's conditionals lands in slots no other variable writes: the variables run in
parallel with no reduction, and each variable's rows are summed in row order.

The data rows of a variable are taken in blocks of :data:`ROW_BLOCK`, the block's index the
innermost loop (``sc[v, b]``), so that the compiler makes the products vector loops
whatever the cardinality. With exponentiated rows the log-conditionals of the observed
states are multiplied together and their logarithm taken once per underflow-safe run
(one logarithm per many rows instead of one per row).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from mrflib.inference.sampling._pairwise_kernels import widths

__all__ = ["ROW_BLOCK", "blanket_radix", "context_counts", "context_fill", "pl_parallel",
           "pl_serial"]

#: Data rows whose conditionals are computed together.
ROW_BLOCK = 16
#: A running product of probabilities is flushed to its logarithm below this.
_FLUSH = 1e-200
#: A probability below this is taken to its logarithm alone (the running product of ones
#: above it stays above ``_FLUSH * _ALONE``, far from float64's underflow).
_ALONE = 1e-100


@njit(cache=True)
def _variable(i, xt, w, logs, want_grad, nptr, nbr, noff, uoff, card, grad, sc, base,
              tot, obs):  # pragma: no cover - numba
    """``Σ_r log P(x_i = xt[i, r] | the rest of row r)``, its gradient added to ``grad``
    (the rows of ``i``); ``sc (cmax, ROW_BLOCK)``, ``base``, ``tot``, ``obs`` scratch
    (``obs[b]``: 1, or 0 for a row whose conditional has no state of positive weight,
    which adds no gradient)."""
    c = card[i]
    u0 = uoff[i]
    lo, hi = nptr[i], nptr[i + 1]
    N = xt.shape[1]
    value = 0.0
    prod = 1.0
    for r0 in range(0, N, ROW_BLOCK):
        nb = min(ROW_BLOCK, N - r0)
        for v in range(c):
            wv = w[u0 + v]
            for b in range(nb):
                sc[v, b] = wv
        for k in range(lo, hi):
            o = noff[k]
            j = nbr[k]
            for b in range(nb):
                base[b] = o + xt[j, r0 + b] * c
            if logs:
                for v in range(c):
                    for b in range(nb):
                        sc[v, b] += w[base[b] + v]
            else:
                for v in range(c):
                    for b in range(nb):
                        sc[v, b] *= w[base[b] + v]
        if logs:  # the largest log-weight to 0, then exponentials
            for b in range(nb):
                tot[b] = sc[0, b]
            for v in range(1, c):
                for b in range(nb):
                    tot[b] = max(tot[b], sc[v, b])
            for b in range(nb):
                mx = tot[b]
                if mx == -np.inf:  # no state of positive weight: a zero-probability row
                    value = -np.inf
                    for v in range(c):
                        sc[v, b] = 0.0
                    tot[b] = 1.0
                    obs[b] = 0.0
                    continue
                value += sc[xt[i, r0 + b], b] - mx
                obs[b] = 1.0
                t = 0.0
                for v in range(c):
                    sc[v, b] = np.exp(sc[v, b] - mx)
                    t += sc[v, b]
                tot[b] = t
                value -= np.log(t)
        else:
            for b in range(nb):
                tot[b] = sc[0, b]
            for v in range(1, c):
                for b in range(nb):
                    tot[b] += sc[v, b]
            for b in range(nb):
                t = tot[b]
                obs[b] = 1.0
                if t == 0.0:  # no state of positive weight: a zero-probability row
                    value = -np.inf
                    tot[b] = 1.0
                    obs[b] = 0.0
                    continue
                p = sc[xt[i, r0 + b], b] / t
                if p < _ALONE:
                    value += np.log(p)
                else:
                    prod *= p
                    if prod < _FLUSH:
                        value += np.log(prod)
                        prod = 1.0
        if want_grad:
            for b in range(nb):
                tot[b] = -1.0 / tot[b]
            for v in range(c):
                for b in range(nb):
                    sc[v, b] *= tot[b]
            for b in range(nb):  # a zero-probability row adds no gradient (obs 0)
                sc[xt[i, r0 + b], b] += obs[b]
            for v in range(c):
                s = 0.0
                for b in range(nb):
                    s += sc[v, b]
                grad[u0 + v] += s
            for k in range(lo, hi):
                o = noff[k]
                j = nbr[k]
                for b in range(nb):
                    at = o + xt[j, r0 + b] * c
                    for v in range(c):
                        grad[at + v] += sc[v, b]
    return value + np.log(prod)


@njit(cache=True)
def blanket_radix(nptr, nbr, card, chosen, radix, space):  # pragma: no cover - numba
    """The mixed radix of each chosen variable's blanket codes (its neighbours in list
    order, the first the lowest digit) and the size of its code space."""
    for i in range(card.shape[0]):
        if chosen[i]:
            r = 1
            for k in range(nptr[i], nptr[i + 1]):
                radix[k] = r
                r *= card[nbr[k]]
            space[i] = r


@njit(cache=True, parallel=True)
def context_counts(xt, nptr, nbr, card, radix, space, chosen, n_ctx
                   ):  # pragma: no cover - numba
    """``n_ctx[i]``: the distinct blanket states of each ``chosen`` variable ``i`` in the
    rows (blanket code ``Σ_k x_nbr[k] radix[k]`` below ``space[i]``)."""
    for i in prange(card.shape[0]):
        if not chosen[i]:
            continue
        seen = np.zeros(space[i], dtype=np.uint8)
        for r in range(xt.shape[1]):
            code = 0
            for k in range(nptr[i], nptr[i + 1]):
                code += xt[nbr[k], r] * radix[k]
            seen[code] = 1
        total = 0
        for code in range(space[i]):
            total += seen[code]
        n_ctx[i] = total


@njit(cache=True, parallel=True)
def context_fill(xt, nptr, nbr, card, radix, space, chosen, cptr, qoff, soff, states,
                 counts):  # pragma: no cover - numba
    """Each chosen variable's contexts, in ascending order of their blanket codes: the
    blanket's states of context ``c`` (its neighbours in list order) at
    ``states[soff[i] + (c - cptr[i]) * degree:][:degree]`` and the counts of the
    variable's states seen with it at ``counts[qoff[i] + (c - cptr[i]) * card[i] + v]``."""
    for i in prange(card.shape[0]):
        if not chosen[i]:
            continue
        q = card[i]
        hist = np.zeros(space[i] * q, dtype=np.int32)
        for r in range(xt.shape[1]):
            code = 0
            for k in range(nptr[i], nptr[i + 1]):
                code += xt[nbr[k], r] * radix[k]
            hist[code * q + xt[i, r]] += 1
        at = cptr[i]
        for code in range(space[i]):
            seen = 0
            for v in range(q):
                seen += hist[code * q + v]
            if seen == 0:
                continue
            rest = code
            d = nptr[i + 1] - nptr[i]
            for k in range(nptr[i], nptr[i + 1]):
                cj = card[nbr[k]]
                states[soff[i] + (at - cptr[i]) * d + k - nptr[i]] = rest % cj
                rest //= cj
            for v in range(q):
                counts[qoff[i] + (at - cptr[i]) * q + v] = hist[code * q + v]
            at += 1


@njit(cache=True)
def _by_contexts(i, w, lws, logs, want_grad, nptr, nbr, noff, uoff, card, cptr, qoff,
                 soff, states, counts, grad, sc, kbase):  # pragma: no cover - numba
    """:func:`_variable` over variable ``i``'s distinct contexts: each conditional once,
    weighted by the counts of the states seen with it. The log-conditional of a seen state
    is its summed log-weights (``lws``, the logs of ``w``) less the log of the total, one
    logarithm a context. The indices are unsigned: a signed one is tested for a negative
    value on every read."""
    c = card[i]
    u0 = uoff[i]
    lo, hi = nptr[i], nptr[i + 1]
    value = 0.0
    d = hi - lo
    for t in range(cptr[i], cptr[i + 1]):
        s0 = soff[i] + (t - cptr[i]) * d
        for k in range(lo, hi):
            kbase[np.uint64(k - lo)] = noff[k] + states[np.uint64(s0 + k - lo)] * c
        q0 = qoff[i] + (t - cptr[i]) * c
        for v in range(c):
            sc[np.uint64(v), np.uint64(0)] = w[np.uint64(u0 + v)]
        for k in range(lo, hi):
            b = kbase[np.uint64(k - lo)]
            if logs:
                for v in range(c):
                    sc[np.uint64(v), np.uint64(0)] += w[np.uint64(b + v)]
            else:
                for v in range(c):
                    sc[np.uint64(v), np.uint64(0)] *= w[np.uint64(b + v)]
        seen = 0.0
        for v in range(c):
            n_v = counts[np.uint64(q0 + v)]
            if n_v > 0:
                seen += n_v
                s = lws[np.uint64(u0 + v)]
                for k in range(lo, hi):
                    s += lws[np.uint64(kbase[np.uint64(k - lo)] + v)]
                value += n_v * s
        if logs:
            mx = sc[np.uint64(0), np.uint64(0)]
            for v in range(1, c):
                mx = max(mx, sc[np.uint64(v), np.uint64(0)])
            if mx == -np.inf:  # no state of positive weight: a zero-probability context
                value = -np.inf
                continue
            tot = 0.0
            for v in range(c):
                sc[np.uint64(v), np.uint64(0)] = np.exp(sc[np.uint64(v), np.uint64(0)] - mx)
                tot += sc[np.uint64(v), np.uint64(0)]
            value -= seen * (mx + np.log(tot))
        else:
            tot = 0.0
            for v in range(c):
                tot += sc[np.uint64(v), np.uint64(0)]
            if tot == 0.0:
                value = -np.inf
                continue
            value -= seen * np.log(tot)
        if want_grad:
            scale = seen / tot
            for v in range(c):
                uv = np.uint64(v)
                sc[uv, np.uint64(0)] = counts[np.uint64(q0 + v)] - scale * sc[uv, np.uint64(0)]
            for v in range(c):
                grad[np.uint64(u0 + v)] += sc[np.uint64(v), np.uint64(0)]
            for k in range(lo, hi):
                b = kbase[np.uint64(k - lo)]
                for v in range(c):
                    grad[np.uint64(b + v)] += sc[np.uint64(v), np.uint64(0)]
    return value


@njit(cache=True)
def _scratch(cmax, dmax):  # pragma: no cover - numba
    return (np.empty((cmax, ROW_BLOCK)), np.empty(max(ROW_BLOCK, dmax), dtype=np.int64),
            np.empty(ROW_BLOCK), np.empty(ROW_BLOCK))


@njit(cache=True, parallel=True)
def pl_parallel(xt, w, lws, logs, want_grad, nptr, nbr, noff, uoff, card, chosen, cptr, qoff,
                soff, states, counts, grad, values):  # pragma: no cover - numba
    """Every variable's summed log-conditionals into ``values`` and their gradient with
    respect to ``w``'s log-weights into ``grad`` (zeros on entry), the variables on all
    threads: a ``chosen`` variable over its distinct contexts (:func:`context_fill`), the
    others row by row (``xt``, the rows transposed, ``(n, N)``)."""
    cmax, dmax = widths(nptr, card)  # once: per variable it would cost O(n) each
    for i in prange(card.shape[0]):
        sc, base, tot, obs = _scratch(cmax, dmax)
        if chosen[i]:
            values[i] = _by_contexts(i, w, lws, logs, want_grad, nptr, nbr, noff, uoff, card,
                                     cptr, qoff, soff, states, counts, grad, sc, base)
        else:
            values[i] = _variable(i, xt, w, logs, want_grad, nptr, nbr, noff, uoff, card,
                                  grad, sc, base, tot, obs)


@njit(cache=True)
def pl_serial(xt, w, lws, logs, want_grad, nptr, nbr, noff, uoff, card, chosen, cptr, qoff,
              soff, states, counts, grad, values):  # pragma: no cover - numba
    """:func:`pl_parallel` on one thread (the same operations, the same results)."""
    sc, base, tot, obs = _scratch(*widths(nptr, card))
    for i in range(card.shape[0]):
        if chosen[i]:
            values[i] = _by_contexts(i, w, lws, logs, want_grad, nptr, nbr, noff, uoff, card,
                                     cptr, qoff, soff, states, counts, grad, sc, base)
        else:
            values[i] = _variable(i, xt, w, logs, want_grad, nptr, nbr, noff, uoff, card,
                                  grad, sc, base, tot, obs)
