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

A variable whose blanket states are few goes over its distinct contexts instead (a state
of its neighbours, with the counts of its own states seen with it; on the 256x256 q = 4
Potts lattice at N = 1,000, 246 contexts of a variable's 256 on average, 590 distinct
(state, context) patterns of the 1,000 rows). The data are fixed for a fit, so the part
of ``Σ log P(x_i | context)`` linear in the log-weights (the observed states' own
weights) is a fixed count per entry of ``w`` (:func:`context_fill`, once per fit):
an evaluation adds it variable by variable (:func:`_linear`) and its gradient by a
copy, and a context costs its conditional's normaliser, one logarithm, and the
gradient ``-seen P(v | context)`` of its rows. Variables of at most four states hold
their four weights in registers (:func:`pl_narrow_products`, :func:`pl_narrow_logs`);
wider ones walk their
contexts, sorted by blanket code, as a trie that recomputes only the rows of the
neighbours whose state changed (:func:`_by_contexts`).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from mrflib.inference.sampling._pairwise_kernels import column_max, times_row, widths

__all__ = ["ROW_BLOCK", "VARIABLE_BLOCK", "context_fill", "pl_narrow_logs",
           "pl_narrow_parallel", "pl_narrow_products", "pl_parallel", "pl_serial"]

#: Data rows whose conditionals are computed together.
ROW_BLOCK = 16
#: Variables a thread of :func:`pl_parallel` takes at a time.
VARIABLE_BLOCK = 128
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
            times_row(sc, w, base, c, nb, logs)
        if logs:  # the largest log-weight to 0, then exponentials
            column_max(sc, c, nb, tot)
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
def context_fill(fill, xt, nptr, nbr, noff, uoff, card, radix, space, chosen, hist, n_ctx,
                 cptr, qoff, soff, states, counts, lin, seen):  # pragma: no cover - numba
    """The distinct contexts of each ``chosen`` variable ``i`` in the rows (its blanket's
    states, coded ``Σ_k x_nbr[k] radix[k]`` below ``space[i]``), in two calls of this one
    kernel (a cold first call compiles one kernel, not one per pass); ``hist`` zeros of
    at least ``max(space[chosen] * card[chosen])``, left zero. One thread: once per fit, a
    small part of the fit's time, and a parallel region would cost more to compile than
    it saves.

    With ``fill`` false, ``n_ctx[i]``: the number of contexts of each chosen variable
    (the arrays after ``n_ctx`` are not read; empty ones do). With ``fill`` true, in
    ascending order of their blanket codes: the blanket's states of context ``c`` (its
    neighbours in list order) at ``states[soff[i] + (c - cptr[i]) * degree:][:degree]``,
    the counts of the variable's states seen with it at
    ``counts[qoff[i] + (c - cptr[i]) * card[i] + v]`` and ``seen[c]``, its rows; and
    ``lin`` (zeros on entry), how often each entry of the variable's rows is read at the
    observed state (the counts of the states summed over the contexts that read the row:
    the pseudo-likelihood's part linear in the log-weights, and its gradient)."""
    for i in range(card.shape[0]):
        if not chosen[i]:
            continue
        q = card[i]
        lo, hi = nptr[i], nptr[i + 1]
        d = hi - lo
        for r in range(xt.shape[1]):
            code = 0
            for k in range(lo, hi):
                code += xt[nbr[k], r] * radix[k]
            hist[code * q + xt[i, r]] += 1
        at = cptr[i] if fill else 0
        for code in range(space[i]):
            total = 0
            for v in range(q):
                total += hist[code * q + v]
            if total == 0:
                continue
            if not fill:
                for v in range(q):
                    hist[code * q + v] = 0
                at += 1
                continue
            s0 = soff[i] + (at - cptr[i]) * d
            q0 = qoff[i] + (at - cptr[i]) * q
            rest = code
            for k in range(lo, hi):
                cj = card[nbr[k]]
                states[s0 + k - lo] = rest % cj
                rest //= cj
            for v in range(q):
                n_v = hist[code * q + v]
                counts[q0 + v] = n_v
                hist[code * q + v] = 0
                lin[uoff[i] + v] += n_v
                for k in range(lo, hi):
                    lin[noff[k] + states[s0 + k - lo] * q + v] += n_v
            seen[at] = total
            at += 1
        if not fill:
            n_ctx[i] = at


@njit(cache=True, inline="always")
def _linear(i, w, logs, lin, uoff, size):  # pragma: no cover - numba
    """``Σ_e lin[e] log w[e]`` (``w`` itself with ``logs``) over variable ``i``'s rows
    (its block of ``w``, from ``uoff[i]`` to the next variable's): its contexts' observed
    log-weights, summed per variable so that the large sums of observed weights and of
    normalisers meet variable by variable, not as two totals whose rounding would
    swamp the objective's last digits."""
    end = uoff[i + 1] if i + 1 < uoff.shape[0] else size
    total = 0.0
    for e in range(uoff[i], end):
        n_e = lin[e]
        if n_e != 0.0:
            total += n_e * (w[e] if logs else np.log(w[e]))
    return total


@njit(cache=True)
def _by_contexts(i, w, logs, want_grad, nptr, noff, uoff, card, cptr, qoff, soff, states,
                 counts, seen, grad, sc, acc, path, base):  # pragma: no cover - numba
    """``-Σ_t seen[t] log Σ_v (the weights of v in context t)`` over variable ``i``'s
    distinct contexts, and its gradient added to ``grad``; the part linear in the
    log-weights (the observed states' own weights) is the caller's (:func:`context_fill`).

    The contexts are in ascending order of their blanket codes, the last neighbour the
    most significant digit, so consecutive contexts share the states of their last
    neighbours: the neighbours are the levels of a trie, level ``L`` (1 .. d) the
    neighbour ``hi - L``, and ``sc[L]`` is the product (with ``logs``, the sum) of the
    unary row and the rows of levels 1 .. L. A context recomputes the levels from its
    first state that differs from the previous context's, about one row a context
    instead of one per neighbour. The gradient goes up the same trie: ``acc[L]`` holds the
    summed gradient of the contexts under the current row of level ``L`` (level 0: the
    unary row), added to that row's entries and passed to level ``L - 1`` when the row
    changes (``path[L]`` the state, ``base[L]`` the
    row's start). A context with no state of positive weight makes the value ``-inf`` and
    adds no gradient: its counts are taken back from the linear part's."""
    c = card[i]
    u0 = uoff[i]
    lo, hi = nptr[i], nptr[i + 1]
    d = hi - lo
    value = 0.0
    for v in range(c):
        sc[0, v] = w[u0 + v]
        for L in range(d + 1):
            acc[L, v] = 0.0
    base[0] = u0
    for t in range(cptr[i], cptr[i + 1]):
        s0 = soff[i] + (t - cptr[i]) * d
        top = 1
        if t > cptr[i]:
            top = d + 1
            for L in range(1, d + 1):
                if states[s0 + d - L] != path[L]:
                    top = L
                    break
            if want_grad:  # the rows left: their gradients added, and passed up
                for L in range(d - 1, top - 1, -1):
                    b = base[L]
                    for v in range(c):
                        grad[b + v] += acc[L, v]
                        acc[L - 1, v] += acc[L, v]
                        acc[L, v] = 0.0
        for L in range(top, d + 1):
            s = states[s0 + d - L]
            path[L] = s
            b = noff[hi - L] + s * c
            base[L] = b
            if logs:
                for v in range(c):
                    sc[L, v] = sc[L - 1, v] + w[b + v]
            else:
                for v in range(c):
                    sc[L, v] = sc[L - 1, v] * w[b + v]
        n_t = seen[t]
        if logs:
            mx = sc[d, 0]
            for v in range(1, c):
                mx = max(mx, sc[d, v])
            dead = mx == -np.inf
            tot = 0.0
            if not dead:
                for v in range(c):
                    sc[d + 1, v] = np.exp(sc[d, v] - mx)
                    tot += sc[d + 1, v]
                value -= n_t * (mx + np.log(tot))
        else:
            tot = 0.0
            for v in range(c):
                sc[d + 1, v] = sc[d, v]
                tot += sc[d, v]
            dead = tot == 0.0
            if not dead:
                value -= n_t * np.log(tot)
        if dead:  # no state of positive weight: a zero-probability context
            value = -np.inf
        if want_grad:
            b = base[d]
            if dead:
                q0 = qoff[i] + (t - cptr[i]) * c
                for v in range(c):
                    sc[d + 1, v] = -float(counts[q0 + v])
            else:
                scale = -n_t / tot
                for v in range(c):
                    sc[d + 1, v] *= scale
            for v in range(c):
                grad[b + v] += sc[d + 1, v]
            if d > 0:
                for v in range(c):
                    acc[d - 1, v] += sc[d + 1, v]
    if want_grad and cptr[i + 1] > cptr[i]:
        for L in range(d - 1, 0, -1):
            b = base[L]
            for v in range(c):
                grad[b + v] += acc[L, v]
                acc[L - 1, v] += acc[L, v]
        if d > 0:
            for v in range(c):
                grad[u0 + v] += acc[0, v]
    return value


@njit(cache=True, inline="always")
def _add_row(grad, b, c, a0, a1, a2, a3):  # pragma: no cover - numba
    """``grad[b : b + c] += (a0, a1, a2, a3)[:c]`` for ``c <= 4`` states held in registers."""
    grad[b] += a0
    if c > 1:
        grad[b + 1] += a1
    if c > 2:
        grad[b + 2] += a2
    if c > 3:
        grad[b + 3] += a3


def _narrow(logs):  # pragma: no cover - numba
    """:func:`pl_narrow_products` (``logs`` false) or :func:`pl_narrow_logs`: the one
    source, ``logs`` a constant of each compiled kernel, so that a fit compiles the
    branch its weights take, not both."""

    def pl_narrow(first, last, w, want_grad, nptr, noff, uoff, card, cptr, qoff, soff,
                  states, counts, seen, lin, grad, values, kbase):
        """:func:`pl_serial` over variables ``first .. last - 1`` that all go over their
        contexts and have at most 4 states: :func:`_by_contexts` for so few states, plus
        the linear part by :func:`_linear` (inlined: no kernel of its own for a cold first
        call to compile). The weights of a variable's states in four scalars (registers),
        every context's rows multiplied afresh (a trie's rows in memory and a loop over a
        runtime number of states as short as this cost more than the products they
        save). The states beyond ``c`` have weight 0 (log-weight ``-inf``) and are never
        read from ``w`` or written to ``grad``; the unary row's gradient is summed in
        scalars and written once. ``kbase`` is scratch of at least the most neighbours of
        a variable."""
        for i in range(first, last):
            c = card[i]
            u0 = uoff[i]
            lo, hi = nptr[i], nptr[i + 1]
            d = hi - lo
            pad = -np.inf if logs else 0.0
            value = 0.0
            g0 = g1 = g2 = g3 = 0.0
            for t in range(cptr[i], cptr[i + 1]):
                s0 = soff[i] + (t - cptr[i]) * d
                a0 = w[u0]
                a1 = w[u0 + 1] if c > 1 else pad
                a2 = w[u0 + 2] if c > 2 else pad
                a3 = w[u0 + 3] if c > 3 else pad
                for k in range(d):
                    b = noff[lo + k] + states[s0 + k] * c
                    kbase[k] = b
                    if logs:
                        a0 += w[b]
                        if c > 1:
                            a1 += w[b + 1]
                        if c > 2:
                            a2 += w[b + 2]
                        if c > 3:
                            a3 += w[b + 3]
                    else:
                        a0 *= w[b]
                        if c > 1:
                            a1 *= w[b + 1]
                        if c > 2:
                            a2 *= w[b + 2]
                        if c > 3:
                            a3 *= w[b + 3]
                n_t = seen[t]
                tot = 0.0
                if logs:
                    mx = max(max(a0, a1), max(a2, a3))
                    dead = mx == -np.inf
                    if not dead:
                        a0 = np.exp(a0 - mx)
                        a1 = np.exp(a1 - mx)
                        a2 = np.exp(a2 - mx)
                        a3 = np.exp(a3 - mx)
                        tot = a0 + a1 + a2 + a3
                        value -= n_t * (mx + np.log(tot))
                else:
                    tot = a0 + a1 + a2 + a3
                    dead = tot == 0.0
                    if not dead:
                        value -= n_t * np.log(tot)
                if dead:  # no state of positive weight: a zero-probability context
                    value = -np.inf
                if want_grad:
                    if dead:  # its counts taken back from the linear part's
                        q0 = qoff[i] + (t - cptr[i]) * c
                        a0 = -float(counts[q0])
                        a1 = -float(counts[q0 + 1]) if c > 1 else 0.0
                        a2 = -float(counts[q0 + 2]) if c > 2 else 0.0
                        a3 = -float(counts[q0 + 3]) if c > 3 else 0.0
                    else:
                        scale = -n_t / tot
                        a0 *= scale
                        a1 *= scale
                        a2 *= scale
                        a3 *= scale
                    g0 += a0
                    g1 += a1
                    g2 += a2
                    g3 += a3
                    for k in range(d):
                        _add_row(grad, kbase[k], c, a0, a1, a2, a3)
            if want_grad:
                _add_row(grad, u0, c, g0, g1, g2, g3)
            values[i] = _linear(i, w, logs, lin, uoff, w.shape[0]) + value

    # its own name: the kernel's in reports, and its own cache file
    pl_narrow.__name__ = pl_narrow.__qualname__ = ("pl_narrow_logs" if logs
                                                   else "pl_narrow_products")
    return njit(cache=True)(pl_narrow)


#: :func:`_narrow` for exponentiated rows (a conditional is the product of its rows).
pl_narrow_products = _narrow(False)
#: :func:`_narrow` for log-weights (the sum of the rows, then one exponential a state).
pl_narrow_logs = _narrow(True)


@njit(cache=True)
def _scratch(cmax, dmax):  # pragma: no cover - numba
    """The row kernel's ``sc, base, tot, obs`` and the contexts' ``trie, acc, path``."""
    return (np.empty((cmax, ROW_BLOCK)), np.empty(max(ROW_BLOCK, dmax + 1), dtype=np.int64),
            np.empty(ROW_BLOCK), np.empty(ROW_BLOCK), np.empty((dmax + 2, cmax)),
            np.empty((dmax + 1, cmax)), np.empty(dmax + 1, dtype=np.int64))


@njit(cache=True)
def _one(i, xt, w, logs, want_grad, nptr, nbr, noff, uoff, card, chosen, cptr, qoff, soff,
         states, counts, seen, lin, grad, values, scratch):  # pragma: no cover - numba
    """Variable ``i``'s summed log-conditionals into ``values[i]`` (its gradient added
    into ``grad``): over its distinct contexts where ``chosen`` (the linear part by
    :func:`_linear`; at most 4 states by :func:`pl_narrow_products` or
    :func:`pl_narrow_logs`), else row by row;
    ``scratch`` is :func:`_scratch`'s."""
    sc, base, tot, obs, trie, acc, path = scratch
    if chosen[i] and card[i] <= 4 and logs:
        pl_narrow_logs(i, i + 1, w, want_grad, nptr, noff, uoff, card, cptr, qoff, soff,
                       states, counts, seen, lin, grad, values, base)
    elif chosen[i] and card[i] <= 4:
        pl_narrow_products(i, i + 1, w, want_grad, nptr, noff, uoff, card, cptr, qoff, soff,
                           states, counts, seen, lin, grad, values, base)
    elif chosen[i]:
        value = _linear(i, w, logs, lin, uoff, w.shape[0])
        values[i] = value + _by_contexts(i, w, logs, want_grad, nptr, noff, uoff, card, cptr,
                                         qoff, soff, states, counts, seen, grad, trie, acc,
                                         path, base)
    else:
        values[i] = _variable(i, xt, w, logs, want_grad, nptr, nbr, noff, uoff, card, grad,
                              sc, base, tot, obs)


@njit(cache=True, parallel=True)
def pl_parallel(xt, w, logs, want_grad, nptr, nbr, noff, uoff, card, chosen, cptr, qoff,
                soff, states, counts, seen, lin, grad, values):  # pragma: no cover - numba
    """Every variable's summed log-conditionals into ``values`` and their gradient with
    respect to ``w``'s log-weights into ``grad`` (on entry zeros, or the linear part of
    the chosen variables' contexts, :func:`context_fill`), the variables on all
    threads: a ``chosen`` variable over its distinct contexts (:func:`context_fill`; its
    value's linear part by :func:`_linear`), the others row by row (``xt``, the rows transposed,
    ``(n, N)``).

    The variables go in blocks of :data:`VARIABLE_BLOCK` (one scratch a block); called
    under ``numba.parallel_chunksize(1)`` the threads take one block at a time as each
    finishes its last, so a thread that shares its core with another process takes
    fewer blocks instead of holding the region up (a static split waits for the slowest
    thread). Each variable writes only its own slots, so the results are the same
    whichever thread takes which block."""
    cmax, dmax = widths(nptr, card)  # once: per variable it would cost O(n) each
    n = card.shape[0]
    n_blocks = (n + VARIABLE_BLOCK - 1) // VARIABLE_BLOCK
    for blk in prange(n_blocks):
        scratch = _scratch(cmax, dmax)
        for i in range(blk * VARIABLE_BLOCK, min(n, (blk + 1) * VARIABLE_BLOCK)):
            _one(i, xt, w, logs, want_grad, nptr, nbr, noff, uoff, card, chosen, cptr, qoff,
                 soff, states, counts, seen, lin, grad, values, scratch)


@njit(cache=True)
def pl_serial(xt, w, logs, want_grad, nptr, nbr, noff, uoff, card, chosen, cptr, qoff, soff,
              states, counts, seen, lin, grad, values):  # pragma: no cover - numba
    """:func:`pl_parallel` on one thread (the same operations, the same results)."""
    scratch = _scratch(*widths(nptr, card))
    for i in range(card.shape[0]):
        _one(i, xt, w, logs, want_grad, nptr, nbr, noff, uoff, card, chosen, cptr, qoff, soff,
             states, counts, seen, lin, grad, values, scratch)


@njit(cache=True, parallel=True)
def pl_narrow_parallel(w, logs, want_grad, nptr, noff, uoff, card, cptr, qoff, soff, states,
                       counts, seen, lin, grad, values, kbase
                       ):  # pragma: no cover - numba
    """:func:`pl_narrow_products` (or, with ``logs``, :func:`pl_narrow_logs`) over every
    variable, the blocks of :data:`VARIABLE_BLOCK` variables on all threads as
    :func:`pl_parallel`'s (the same operations, the same results): the kernels of the
    narrow path alone, without the row path and the trie, which would triple a cold
    first call's compilation. ``kbase`` is scratch, a row of at least the most neighbours
    of a variable per block."""
    n = card.shape[0]
    for blk in prange(kbase.shape[0]):
        first, last = blk * VARIABLE_BLOCK, min(n, (blk + 1) * VARIABLE_BLOCK)
        if logs:
            pl_narrow_logs(first, last, w, want_grad, nptr, noff, uoff, card, cptr, qoff,
                           soff, states, counts, seen, lin, grad, values, kbase[blk])
        else:
            pl_narrow_products(first, last, w, want_grad, nptr, noff, uoff, card, cptr,
                               qoff, soff, states, counts, seen, lin, grad, values,
                               kbase[blk])
