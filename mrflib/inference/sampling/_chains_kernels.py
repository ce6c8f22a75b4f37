"""Numba kernels of the factor-graph Gibbs sampler (:mod:`mrflib.inference.sampling.chains`).

The sweep's plain numpy reference is :func:`mrflib.inference.sampling.chains.gibbs_numpy` (the same
uniforms, the same order of operations). A model is packed as flat arrays (see
:func:`mrflib.inference.sampling.chains.pack`): ``vfac[vptr[i]:vptr[i+1]]`` are the factors holding
variable ``i`` and ``vstride`` the stride of ``x_i`` in each; ``fvars[fptr[k]:fptr[k+1]]``
is factor ``k``'s scope, ``fstride`` its strides and ``offsets[k]`` its place in the flat
``tables``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from mrflib.inference._packed import advance

#: Chains swept together by :func:`gibbs_sweep` (a few cache lines of uniforms per variable).
CHAIN_BLOCK = 16


@njit(cache=True)
def _largest(card):  # pragma: no cover - numba
    """``card.max()`` as a loop (numba's ``max`` compiles its generic reduction, over a
    second on a kernel's first call), with its error on an empty array."""
    if card.shape[0] == 0:
        raise ValueError("zero-size array to reduction operation maximum which has no "
                         "identity")
    top = card[0]
    for i in range(1, card.shape[0]):
        if card[i] > top:
            top = card[i]
    return top


@njit(cache=True)
def conditional_scores(x, r0, nb, i, score, base, tables, vptr, vfac, vstride, fptr, fvars,
                       fstride, offsets, card):  # pragma: no cover - numba
    """``score[b, v] = Σ_{k ∋ i} θ_k(x_{S_k})`` with ``x_i = v``, for chains ``r0 + b``,
    ``b < nb``: the log of the conditional ``P(x_i = v | x_rest)`` up to a constant, each
    chain's factors added in the order ``vfac`` lists them. ``base`` (length ``nb`` or more)
    is work space. A factor's index arrays are read once for the ``nb`` chains."""
    c = card[i]
    for b in range(nb):
        for v in range(c):
            score[b, v] = 0.0
    for f in range(vptr[i], vptr[i + 1]):
        k = vfac[f]
        s = vstride[f]
        for b in range(nb):
            base[b] = offsets[k] - x[r0 + b, i] * s
        for a in range(fptr[k], fptr[k + 1]):
            va = fvars[a]
            sa = fstride[a]
            for b in range(nb):
                base[b] += x[r0 + b, va] * sa
        for b in range(nb):
            t = base[b]
            for v in range(c):
                score[b, v] += tables[t + v * s]


@njit(cache=True)
def gibbs_sweep(x, u, tables, vptr, vfac, vstride, fptr, fvars, fstride, offsets, card,
                free):  # pragma: no cover - numba
    """One sequential sweep of the variables ``free`` (in that order) of every chain, in
    place; ``u (n, chains)`` the uniforms (row ``i`` decides variable ``i``).

    The draw is the first state whose cumulative weight exceeds ``u`` times the total, so a
    state of zero weight is never drawn.
    """
    chains = x.shape[0]
    cmax = int(_largest(card))
    score = np.empty((CHAIN_BLOCK, cmax))
    base = np.empty(CHAIN_BLOCK, dtype=np.int64)
    # Chains in blocks, each block swept variable by variable: every chain still sees its
    # variables in the order ``free`` with its own uniforms and adds its factors' terms in
    # the same order (the same draws, bit for bit, as chain by chain), but a factor's index
    # arrays are read once for the block and ``u[i, block]`` contiguously; chain by chain,
    # each read of ``u`` was a cache miss on a large model.
    for r0 in range(0, chains, CHAIN_BLOCK):
        nb = min(CHAIN_BLOCK, chains - r0)
        for j in range(free.shape[0]):
            i = free[j]
            c = card[i]
            conditional_scores(x, r0, nb, i, score, base, tables, vptr, vfac, vstride, fptr,
                               fvars, fstride, offsets, card)
            for b in range(nb):
                mx = score[b, 0]
                for v in range(1, c):
                    if score[b, v] > mx:
                        mx = score[b, v]
                tot = 0.0
                for v in range(c):
                    tot += np.exp(score[b, v] - mx)
                    score[b, v] = tot
                target = u[i, r0 + b] * tot
                pick = 0
                while pick < c - 1 and score[b, pick] <= target:
                    pick += 1
                x[r0 + b, i] = pick


@njit(cache=True)
def repair_sweep(x, u, tables, vptr, vfac, vstride, fptr, fvars, fstride, offsets, card,
                 free, bad):  # pragma: no cover - numba
    """One min-conflicts sweep of every chain, in place: each variable of ``free`` takes,
    among its states that leave the fewest of its factors at zero weight, one drawn in
    proportion to the finite log-weights (``u`` as in :func:`gibbs_sweep`). ``bad[r]``
    becomes the number of factors at zero weight in chain ``r`` after the sweep."""
    chains = x.shape[0]
    cmax = int(_largest(card))
    score = np.empty(cmax)
    zeros = np.empty(cmax, dtype=np.int64)
    for r in range(chains):
        for j in range(free.shape[0]):
            i = free[j]
            c = card[i]
            for v in range(c):
                score[v] = 0.0
                zeros[v] = 0
            for f in range(vptr[i], vptr[i + 1]):
                k = vfac[f]
                base = offsets[k]
                for a in range(fptr[k], fptr[k + 1]):
                    base += x[r, fvars[a]] * fstride[a]
                base -= x[r, i] * vstride[f]
                for v in range(c):
                    t = tables[base + v * vstride[f]]
                    if t == -np.inf:
                        zeros[v] += 1
                    else:
                        score[v] += t
            least = zeros[0]
            for v in range(1, c):
                least = min(least, zeros[v])
            mx = -np.inf
            for v in range(c):
                if zeros[v] == least and score[v] > mx:
                    mx = score[v]
            tot = 0.0
            for v in range(c):
                if zeros[v] == least:
                    tot += np.exp(score[v] - mx)
                score[v] = tot
            target = u[i, r] * tot
            pick = 0
            while pick < c - 1 and (zeros[pick] != least or score[pick] <= target):
                pick += 1
            x[r, i] = pick
        n_bad = 0
        for k in range(offsets.shape[0]):
            base = offsets[k]
            for a in range(fptr[k], fptr[k + 1]):
                base += x[r, fvars[a]] * fstride[a]
            if tables[base] == -np.inf:
                n_bad += 1
        bad[r] = n_bad


@njit(cache=True, inline="always")
def _add_normalized(score, size, row, start):  # pragma: no cover - numba
    """``row[start:start + size] += exp(score) / Σ exp(score)`` over ``score[:size]``
    (overwriting ``score``); ``False``, adding nothing, when every score is ``-inf``."""
    mx = -np.inf
    for s in range(size):
        if score[s] > mx:
            mx = score[s]
    if mx == -np.inf:
        return False
    tot = 0.0
    for s in range(size):
        score[s] = np.exp(score[s] - mx)
        tot += score[s]
    for s in range(size):
        row[start + s] += score[s] / tot
    return True


@njit(cache=True)
def conditional_sums(x, batch, n_batches, tables, vptr, vfac, vstride, fptr, fvars, fstride,
                     offsets, card, state_ptr):  # pragma: no cover - numba
    """Σ over the rows of each batch of ``P(x_i = v | x_rest)`` (the 1-SMCI terms of every
    variable, the GSMCI paper's eq. (7) with ``k = 1``), ``(n_batches, Σ_i |X_i|)``, variable
    ``i``'s states at ``state_ptr[i]:state_ptr[i+1]``. A row whose conditional of some
    variable has no state of positive weight returns that row's index (else ``-1``)."""
    M, n = x.shape
    out = np.zeros((n_batches, state_ptr[n]))
    score = np.empty((1, int(_largest(card))))
    base = np.empty(1, dtype=np.int64)
    for r in range(M):
        b = batch[r]
        for i in range(n):
            c = card[i]
            conditional_scores(x, r, 1, i, score, base, tables, vptr, vfac, vstride, fptr,
                               fvars, fstride, offsets, card)
            if not _add_normalized(score[0], c, out[b], state_ptr[i]):
                return out, r
    return out, -1


@njit(cache=True)
def factor_conditional_sums(x, batch, n_batches, tables, fptr, fvars, fstride, offsets,
                            card, targets, nptr, nfac, nstride, out_ptr,
                            max_states):  # pragma: no cover - numba
    """Σ over the rows of each batch of ``P(x_S | x_rest)`` for the scope ``S`` of each
    factor ``targets[j]`` (1-SMCI of the factor scopes), ``(n_batches, out_ptr[-1])``, the
    states of ``S`` at ``out_ptr[j]:out_ptr[j+1]`` in C order (the table's flat order).

    ``nfac[nptr[j]:nptr[j+1]]`` are the factors meeting ``S`` and ``nstride[p, a]`` the
    stride in neighbour ``p``'s table of the ``a``-th variable of ``S`` (0 if it does not
    hold it). Returns the sums and the first row whose conditional of some scope has no
    state of positive weight (else ``-1``).
    """
    M = x.shape[0]
    xt = np.ascontiguousarray(x.T)
    out = np.zeros((n_batches, out_ptr[targets.shape[0]]))
    score = np.empty(max_states)
    digit = np.empty(fptr.shape[0], dtype=np.int64)
    base = np.empty(nfac.shape[0], dtype=np.int64)
    width = 0
    for j in range(targets.shape[0]):
        width = max(width, nptr[j + 1] - nptr[j])
    delta = np.empty((width, max_states), dtype=np.int64)
    bad = M
    # Scope by scope, row by row: a neighbour's offset for each state of S (``delta``) is
    # the same in every row, so it is computed once per scope; each row then adds its
    # neighbours' entries in the same order as a row-by-row walk would (the same sums).
    for j in range(targets.shape[0]):
        k = targets[j]
        lo, hi = fptr[k], fptr[k + 1]
        size = out_ptr[j + 1] - out_ptr[j]
        p0, p1 = nptr[j], nptr[j + 1]
        for a in range(hi - lo):
            digit[a] = 0
        for s in range(size):  # the states of S in C order (last variable fastest)
            for p in range(p0, p1):
                d = 0
                for a in range(hi - lo):
                    d += digit[a] * nstride[p, a]
                delta[p - p0, s] = d
            advance(digit, hi - lo, fvars, lo, card)
        for r in range(min(M, bad)):
            for p in range(p0, p1):  # each neighbour at x, S's part removed
                c = nfac[p]
                idx = offsets[c]
                for a in range(fptr[c], fptr[c + 1]):
                    idx += xt[fvars[a], r] * fstride[a]
                for a in range(hi - lo):
                    idx -= xt[fvars[lo + a], r] * nstride[p, a]
                base[p - p0] = idx
            for s in range(size):
                tot = 0.0
                for p in range(p1 - p0):
                    tot += tables[base[p] + delta[p, s]]
                score[s] = tot
            if not _add_normalized(score, size, out[batch[r]], out_ptr[j]):
                bad = r  # the first such row of this scope; later scopes look before it
                break
    return out, (bad if bad < M else -1)
