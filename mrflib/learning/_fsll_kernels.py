"""Numba kernels of :mod:`mrflib.learning.fsll` (the full-span log-linear model).

Every kernel works on flat ``float64`` tables of size ``|X|`` in the mixed-radix
order of the design (``x_0`` the least significant digit). A *segment* is a run
of consecutive variables handled as one local transform: consecutive
power-of-two cardinalities merge into one Walsh-Hadamard segment (the Kronecker
product of Sylvester matrices is the Sylvester matrix of the product, with the
digits' bits concatenated), every other cardinality is its own eq. (5) segment.
A segment is described by ``(stride, k, walsh)``.

The public, validated entry points live in :mod:`mrflib.learning.fsll`; each kernel here
has a plain-numpy reference there that the tests compare against. Kernels run on one
thread (the machine this was built on is shared; threads lost there); the candidate scan
and the XOR-mix have threaded variants (``parallel=True``) cut into a fixed number of
chunks, so that their results do not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

# Chunks of the candidate scan. A fixed number (not the thread count) keeps the
# result bit-identical whatever the number of threads.
N_CHUNKS = 64
# Blocks below which a Walsh stage is parallelised inside the run instead.
_MIN_BLOCKS = 16
# Elements of a cache block of the Walsh-Hadamard transform (32 KiB of float64).
_BLOCK = 4096
# Sub-block of the candidate scan: a branch-free bound test, then exact work if any passes.
_SUB = 256


# --------------------------------------------------------------------------- transforms
@njit(cache=True, inline="always")
def _butterfly(a, i, step):
    u = a[i]
    v = a[i + step]
    a[i] = u + v
    a[i + step] = u - v


@njit(cache=True)
def _walsh_stage_blocks(a, step, n_blocks):
    # pairs (i, i + step) for i in [b * 2 step, b * 2 step + step)
    for b in prange(n_blocks):
        start = b * 2 * step
        for i in range(start, start + step):
            _butterfly(a, i, step)


@njit(cache=True)
def _walsh_stage_run(a, start, step):
    for i in prange(start, start + step):
        _butterfly(a, i, step)



@njit(cache=True)
def _walsh_inner(a, stride, hmax):
    # all stages h = 1, 2, ..., hmax inside cache-sized aligned blocks of 2 hmax stride
    block = 2 * hmax * stride
    nb = a.size // block
    for b in prange(nb):
        base = b * block
        h = 1
        while h <= hmax:
            step = h * stride
            for start in range(base, base + block, 2 * step):
                for i in range(start, start + step):
                    _butterfly(a, i, step)
            h *= 2


def walsh_segment(a: np.ndarray, stride: int, k: int) -> None:
    """In-place Walsh-Hadamard transform (eq. 4, 12) along one segment (self-inverse
    up to a factor ``k``; the Sylvester matrix is symmetric, so it is its own transpose).

    The first stages run inside cache-sized blocks, the rest as one pass per stage.
    """
    h = 1
    while 2 * (2 * h) * stride <= _BLOCK and 2 * h < k:
        h *= 2
    if 2 * h * stride <= _BLOCK and h < k:
        _walsh_inner(a, stride, h)
        h *= 2
    else:
        h = 1
    total = a.size
    while h < k:
        step = h * stride
        n_blocks = total // (2 * step)
        if n_blocks >= _MIN_BLOCKS:
            _walsh_stage_blocks(a, step, n_blocks)
        else:
            for b in range(n_blocks):
                _walsh_stage_run(a, b * 2 * step, step)
        h *= 2


@njit(cache=True)
def eq5_segment(a, stride, k, transpose):
    """In-place local transform of eq. (5) along one segment, in ``O(|X|)``.

    Forward (``transpose=False``): ``g'(0) = S``, ``g'(m) = 2 g(m) - S`` with
    ``S = sum_l g(l)``, i.e. ``sum_l g(l) phi_m(l)``. Transposed (the synthesis
    ``l(x) = sum_m theta(m) phi_m(x)``): ``l(x) = theta(0) - T + 2 theta(x) [x > 0]``
    with ``T = sum_{m>0} theta(m)``.
    """
    block = stride * k
    n_outer = a.size // block
    for o in prange(n_outer):
        base = o * block
        for j in range(stride):
            s = 0.0
            for m in range(k):
                s += a[base + m * stride + j]
            if not transpose:
                a[base + j] = s
                for m in range(1, k):
                    idx = base + m * stride + j
                    a[idx] = 2.0 * a[idx] - s
            else:
                a0 = a[base + j]
                c = a0 - (s - a0)
                a[base + j] = c
                for m in range(1, k):
                    idx = base + m * stride + j
                    a[idx] = c + 2.0 * a[idx]


# --------------------------------------------------------------------------- data
@njit(cache=True)
def accumulate(table, index, weight):
    """``table[index[s]] += weight`` for every sample (the empirical distribution)."""
    for s in range(index.size):
        table[index[s]] += weight


# --------------------------------------------------------------------------- candidates
@njit(cache=True, inline="always")
def delta_kl(d, t0, t1):
    """Eq. (19): KL(p_d||p_theta) - KL(p_d||p_theta0) along the line A_y, in terms of
    the dual coordinate moving from ``t0`` to ``t1``."""
    return 0.5 * (
        (1.0 + d) * (np.log1p(t0) - np.log1p(t1)) + (1.0 - d) * (np.log1p(-t0) - np.log1p(-t1))
    )


@njit(cache=True, inline="always")
def clip_dual(d, tau):
    if d > 1.0 - tau:
        return 1.0 - tau
    if d < -1.0 + tau:
        return -1.0 + tau
    return d


@njit(cache=True)
def _scan_chunk(dbar, tbar, lo_cost, hi_cost, h0, h1, champion, tau, use_bound):
    L = lo_cost.size
    champ = champion
    yb = -1
    ne = 0
    for h in range(h0, h1):
        hc = hi_cost[h]
        base = h * L
        for s0 in range(0, L, _SUB):
            s1 = min(s0 + _SUB, L)
            if use_bound:
                # eq. (21) without division or branches (vectorisable): does any candidate
                # of this sub-block pass r - (t0 - d)^2 / (1 - t0^2) < champ ?
                hits = 0
                for lo in range(s0, s1):
                    t0 = tbar[base + lo]
                    diff = t0 - dbar[base + lo]
                    hits += (hc + lo_cost[lo] - champ) * (1.0 - t0 * t0) < diff * diff
                if hits == 0:
                    continue
            for lo in range(s0, s1):
                y = base + lo
                t0 = tbar[y]
                d = dbar[y]
                r = hc + lo_cost[lo]
                if use_bound:
                    diff = t0 - d
                    if not (r - champ) * (1.0 - t0 * t0) < diff * diff:
                        continue
                if y == 0:
                    continue
                ne += 1
                dl = delta_kl(d, t0, clip_dual(d, tau)) + r
                if dl < champ:
                    champ = dl
                    yb = y
    return champ, yb, ne


@njit(cache=True)
def _reduce_chunks(champion, best_d, best_y, n_exact):
    bd = champion
    by = -1
    for c in range(best_d.size):
        if best_y[c] >= 0 and (best_d[c] < bd or (best_d[c] == bd and best_y[c] < by)):
            bd = best_d[c]
            by = best_y[c]
    return bd, by, n_exact.sum()


@njit(cache=True)
def _scan_serial(dbar, tbar, lo_cost, hi_cost, champion, tau, use_bound):
    H = hi_cost.size
    n_chunks = min(H, N_CHUNKS)
    best_d = np.empty(n_chunks)
    best_y = np.empty(n_chunks, dtype=np.int64)
    n_exact = np.zeros(n_chunks, dtype=np.int64)
    for c in range(n_chunks):
        best_d[c], best_y[c], n_exact[c] = _scan_chunk(
            dbar, tbar, lo_cost, hi_cost, c * H // n_chunks, (c + 1) * H // n_chunks,
            champion, tau, use_bound)
    return _reduce_chunks(champion, best_d, best_y, n_exact)


@njit(cache=True, parallel=True)
def _scan_parallel(dbar, tbar, lo_cost, hi_cost, champion, tau, use_bound):
    H = hi_cost.size
    n_chunks = min(H, N_CHUNKS)
    best_d = np.empty(n_chunks)
    best_y = np.empty(n_chunks, dtype=np.int64)
    n_exact = np.zeros(n_chunks, dtype=np.int64)
    for c in prange(n_chunks):
        bd, by, ne = _scan_chunk(
            dbar, tbar, lo_cost, hi_cost, c * H // n_chunks, (c + 1) * H // n_chunks,
            champion, tau, use_bound)
        best_d[c] = bd
        best_y[c] = by
        n_exact[c] = ne
    return _reduce_chunks(champion, best_d, best_y, n_exact)


def scan_append(dbar, tbar, lo_cost, hi_cost, champion, tau, use_bound, parallel=False):
    """Algorithm 2, lines 2-8: the best 'append' candidate over all ``y != 0``.

    ``r_y = hi_cost[y // L] + lo_cost[y % L]`` (eq. 7, with ``L = lo_cost.size``).
    A candidate whose lower bound (eq. 21) is not below the running champion is
    skipped without evaluating the logarithms of eq. (20). Returns
    ``(best_delta, best_y, n_exact)`` with ``best_y = -1`` if none beats ``champion``;
    ties go to the smallest ``y``. Active ``y`` (``theta_y != 0``) need no mask: their
    'append' value is their 'adjust' value plus ``r_y > 0``, which the caller has
    already put into ``champion``. The work is cut into a fixed number of chunks, each
    with its own running champion, so the serial and the threaded (``parallel=True``)
    scans give identical results.
    """
    f = _scan_parallel if parallel else _scan_serial
    return f(dbar, tbar, lo_cost, hi_cost, champion, tau, use_bound)


# --------------------------------------------------------------------------- updates
@njit(cache=True)
def _xor_range(tbar, yp, t, denom, sh, mask, q0, q1):
    for q in range(q0, q1):
        y = ((q >> sh) << (sh + 1)) | (q & mask)
        z = y ^ yp
        u = tbar[y]
        v = tbar[z]
        tbar[y] = (u + t * v) * denom
        tbar[z] = (v + t * u) * denom


@njit(cache=True, parallel=True)
def _xor_parallel(tbar, yp, t, denom, sh, mask):
    half = tbar.size // 2
    n_chunks = N_CHUNKS if half >= N_CHUNKS else 1
    for c in prange(n_chunks):
        _xor_range(tbar, yp, t, denom, sh, mask, c * half // n_chunks,
                   (c + 1) * half // n_chunks)


def xor_mix(tbar, yp, t, parallel=False):
    """In-place O(|X|) update of the dual vector after ``theta_{y'} += delta`` for an
    all-Walsh state space (``t = tanh(delta)``):
    ``tbar_y <- (tbar_y + t tbar_{y XOR y'}) / (1 + t tbar_{y'})``.

    Follows from ``exp(delta Phi) = cosh(delta) (1 + t Phi)`` and
    ``Phi_y Phi_y' = Phi_{y XOR y'}``; pairs ``{y, y XOR y'}`` are disjoint: ``y`` runs
    over the indices whose bit at the highest set bit of ``y'`` is clear.
    """
    yp = int(yp)
    denom = 1.0 / (1.0 + t * tbar[yp])
    sh = yp.bit_length() - 1
    mask = (1 << sh) - 1
    if parallel:
        _xor_parallel(tbar, yp, t, denom, sh, mask)
    else:
        _xor_range(tbar, yp, t, denom, sh, mask, 0, tbar.size // 2)


@njit(cache=True)
def mix_segment(w, stride, k, a, walsh):
    """In-place multiplication by ``phi_a`` of one segment, in the dual coordinates:
    ``w(m) <- <phi_m phi_a f>`` given ``w(m) = <phi_m f>``.

    Walsh: ``phi_m phi_a = phi_{m XOR a}``. Eq. (5), ``a > 0``: ``phi_0 phi_a = phi_a``,
    ``phi_a phi_a = phi_0``, and ``phi_m phi_a = -(phi_0 + phi_m + phi_a)`` otherwise.
    """
    block = stride * k
    n_outer = w.size // block
    for o in prange(n_outer):
        base = o * block
        for j in range(stride):
            if walsh:
                for m in range(k):
                    m2 = m ^ a
                    if m < m2:
                        i1 = base + m * stride + j
                        i2 = base + m2 * stride + j
                        tmp = w[i1]
                        w[i1] = w[i2]
                        w[i2] = tmp
            else:
                i0 = base + j
                ia = base + a * stride + j
                v0 = w[i0]
                va = w[ia]
                w[i0] = va
                w[ia] = v0
                for m in range(1, k):
                    if m != a:
                        idx = base + m * stride + j
                        w[idx] = -(v0 + va + w[idx])


@njit(cache=True)
def combine(tbar, w, t, denom):
    """``tbar <- (tbar + t w) / denom`` (the general incremental update)."""
    inv = 1.0 / denom
    for i in prange(tbar.size):
        tbar[i] = (tbar[i] + t * w[i]) * inv


@njit(cache=True, inline="always")
def _parity(v):
    v ^= v >> 32
    v ^= v >> 16
    v ^= v >> 8
    v ^= v >> 4
    v ^= v >> 2
    v ^= v >> 1
    return v & 1


@njit(cache=True)
def basis_sign(x, seg, seg_a):
    """``Phi_{y'}(x)`` in {-1, +1} for one flat state ``x`` (``seg_a`` = digits of y').

    ``seg = (stride, k, walsh)``: the record of the segments the variables are transformed
    in (:func:`mrflib.learning._fsll_tables.segment_arrays`)."""
    seg_stride, seg_k, seg_walsh = seg
    s = 1
    for g in range(seg_stride.size):
        a = seg_a[g]
        if a == 0:
            continue
        digit = (x // seg_stride[g]) % seg_k[g]
        if seg_walsh[g]:
            if _parity(digit & a):
                s = -s
        elif digit != a:
            s = -s
    return s


@njit(cache=True)
def algorithm3(p, delta, seg, seg_a):
    """Algorithm 3 (lines 10-11 of Algorithm 1): ``p(x) <- c_{Phi(x)} p(x)``, then normalise,
    with ``c_+ = exp(delta)``, ``c_- = 1 / c_+``; no exponential inside the loop."""
    cp = np.exp(delta)
    cm = 1.0 / cp
    total = 0.0
    for x in prange(p.size):
        if basis_sign(x, seg, seg_a) > 0:
            p[x] *= cp
        else:
            p[x] *= cm
        total += p[x]
    inv = 1.0 / total
    for x in prange(p.size):
        p[x] *= inv


@njit(cache=True)
def softmax_inplace(a):
    """``a <- exp(a - max a) / sum``; returns ``log sum exp(a)``."""
    m = -np.inf
    for i in range(a.size):
        if a[i] > m:
            m = a[i]
    total = 0.0
    for i in prange(a.size):
        a[i] = np.exp(a[i] - m)
        total += a[i]
    inv = 1.0 / total
    for i in prange(a.size):
        a[i] *= inv
    return m + np.log(total)
