"""Table operations shared by the exact factor-graph engines.

Tables are numpy arrays whose axes are variables (a scope). A *log table* has ``-inf`` for
a zero weight; a :class:`Scaled` table is the same weights in linear space, ``exp(log_scale)
* values`` with ``values`` at most one and, where positive, at least ``exp(-span)``.
Messages stay :class:`Scaled` from step to step when no product of a clique's inputs can
underflow (their spans add up to at most :data:`LINEAR_SPAN`, or to at most
:func:`lifted_span` once the inputs are :func:`lifted` off the bottom of the floats), so
they are neither exponentiated nor logged again; otherwise the clique is summed in log
space. A linear clique is walked by the numba kernel
(:func:`~mrflib.inference._elimination_kernels.product_sums`), or, when it is large and has
a matrix-product structure, contracted by ``opt_einsum`` (pairwise products, BLAS
``tensordot`` where it applies; see :func:`contracted`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import opt_einsum
from opt_einsum.parser import convert_interleaved_input

from mrflib.inference import _elimination_kernels as _kernels

__all__ = ["expand", "logsumexp", "logsumexp_numpy", "draw_categorical", "normalize_log",
           "renormalize", "renormalize_all", "RENORMALIZE_LOG_Z",
           "KERNEL_MIN_SIZE", "clique_sum", "clique_sum_numpy", "clique_eliminate",
           "clique_eliminate_numpy", "clique_marginals", "contracted", "gemm_width", "Scaled",
           "scaled", "as_log", "lifted", "lifted_span", "c_order", "eliminate", "marginals_onto",
           "divide", "reduce_to"]

#: Tables with at least this many entries are reduced by the numba kernel.
KERNEL_MIN_SIZE = 4096
#: Linear-space cliques of at least this many entries are contracted by ``opt_einsum``
#: (pairwise products and BLAS ``tensordot``) rather than walked by the numba kernel.
EINSUM_MIN_SIZE = 2**16
#: ... and whose variables outside its largest input (not counting one over all but the
#: first variable: a downward message) have at least this many joint states, so a BLAS
#: product over the first variable is at least this wide.
EINSUM_MIN_WIDTH = 8
EINSUM_PATH = "auto"
#: Transposed results of at least this many entries are copied to C order in tiles
#: (:func:`c_order`), of at least :data:`PERMUTED_COPY_BLOCK` entries on each side.
PERMUTED_COPY_MIN = 4096
PERMUTED_COPY_BLOCK = 64
#: Kernel layouts remembered (:func:`_layout`, :func:`_ostrides`): a plan's steps at most.
LAYOUT_CACHE = 8192
#: :func:`clique_eliminate` sums in linear space when the inputs' spans (largest minus
#: smallest finite log entry) add up to at most this: every product of exponentials,
#: each input shifted by its maximum, is then at least ``e^-700``, a normal float
#: (the smallest is about ``e^-708``), so nothing underflows.
LINEAR_SPAN = 700.0


def expand(table: np.ndarray, scope: Sequence[int], target: Sequence[int]) -> np.ndarray:
    """A view of ``table`` (axes = ``scope``) broadcastable over the axes ``target``.

    ``scope`` must be a subset of ``target``; its axes are moved into ``target``'s order and
    every variable of ``target`` outside ``scope`` becomes an axis of length one.
    """
    where = {v: i for i, v in enumerate(scope)}
    perm = [where[v] for v in target if v in where]
    t = np.transpose(table, perm) if perm != sorted(perm) else table
    shape = [table.shape[where[v]] if v in where else 1 for v in target]
    return t.reshape(shape)


def logsumexp_numpy(a: np.ndarray, axis: int | tuple[int, ...]) -> np.ndarray:
    """``log Σ exp(a)`` over ``axis``; ``-inf`` where every term is ``-inf`` (no NaN)."""
    if isinstance(axis, tuple) and not axis:
        return a
    m = np.max(a, axis=axis, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(a - m), axis=axis))
    return out + np.squeeze(m, axis=axis)


def logsumexp(a: np.ndarray, axis: int | tuple[int, ...]) -> np.ndarray:
    """``log Σ exp(a)`` over ``axis`` (an int or a tuple of ints); ``-inf`` where every
    term is ``-inf``. Tables of at least :data:`KERNEL_MIN_SIZE` entries go to the numba
    kernel (two streaming passes, no temporary of the table's size), smaller ones to
    :func:`logsumexp_numpy`."""
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    if not axes:
        return a
    if a.size < KERNEL_MIN_SIZE:
        return logsumexp_numpy(a, axes)
    a = np.ascontiguousarray(a, dtype=np.float64)
    axes = {int(d) % a.ndim for d in axes}
    kept = [d for d in range(a.ndim) if d not in axes]
    out_shape = tuple(a.shape[d] for d in kept)
    ostride = np.zeros(a.ndim, dtype=np.int64)
    step = 1
    for d in reversed(kept):
        ostride[d] = step
        step *= a.shape[d]
    out = np.empty(step)
    # neighbouring axes the output walks as one merge into one (the table has no other
    # strides): longer inner loops, fewer odometer steps, the same entries in order
    shape, _, ostrides = _kernels.merge_axes(np.asarray(a.shape, dtype=np.int64),
                                             np.empty((0, a.ndim), dtype=np.int64),
                                             ostride[None, :])
    _kernels.logsumexp_reduce(a.ravel(), shape, ostrides[0], out)
    return out.reshape(out_shape)


def _inputs(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
            clique: Sequence[int], shape: Sequence[int]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kernels' layout of ``tables`` (axes = ``scopes``, each a subset of ``clique``):
    their entries end to end, where each starts, and each one's stride along every axis of
    the clique (``0`` on an axis it does not hold)."""
    arrays = [np.ascontiguousarray(t, dtype=np.float64) for t in tables]
    offsets, strides, shp = _layout(tuple(map(tuple, scopes)), tuple([a.shape for a in arrays]),
                                    tuple(clique), tuple(map(int, shape)))
    values = np.concatenate([a.ravel() for a in arrays]) if arrays else np.zeros(1)
    return values, offsets, strides, shp


@functools.lru_cache(maxsize=LAYOUT_CACHE)
def _layout(scopes: tuple, shapes: tuple, clique: tuple, shape: tuple
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(offsets, strides, shape)`` of :func:`_inputs`, which depend on the scopes and
    shapes only: a plan's passes ask for the same ones at every call, so they are made
    once (read-only, as the kernels only read them)."""
    pos = {v: d for d, v in enumerate(clique)}
    strides = np.zeros((len(scopes), len(clique)), dtype=np.int64)
    offsets = np.zeros(len(scopes), dtype=np.int64)
    start = 0
    for k, (s, sh) in enumerate(zip(scopes, shapes)):
        offsets[k] = start
        step = 1
        for v, m in zip(reversed(s), reversed(sh)):
            strides[k, pos[v]] = step
            step *= m
        start += step
    shp = np.asarray(shape, dtype=np.int64)
    for a in (offsets, strides, shp):
        a.flags.writeable = False
    return offsets, strides, shp


def clique_sum_numpy(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
                     clique: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """``Σ_k tables[k]`` over the axes ``clique`` (numpy broadcasting; the reference of
    :func:`clique_sum`)."""
    acc = np.zeros(tuple(shape))
    for t, s in zip(tables, scopes):
        acc += expand(t, s, clique)
    return acc


def clique_sum(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
               clique: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """``Σ_k tables[k]`` over the axes ``clique`` (shape ``shape``), written in one pass
    by the numba kernel (no per-input pass over the table)."""
    values, offsets, strides, shp = _inputs(tables, scopes, clique, shape)
    out = np.empty(int(np.prod(shp)))
    _kernels.clique_build(values, offsets, strides, shp, out)
    return out.reshape(tuple(shape))


def clique_eliminate_numpy(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
                           clique: Sequence[int], shape: Sequence[int],
                           maximize: bool = False) -> np.ndarray:
    """The reference of :func:`clique_eliminate`: build the table, then reduce axis 0."""
    acc = clique_sum_numpy(tables, scopes, clique, shape)
    return acc.max(axis=0) if maximize else logsumexp_numpy(acc, 0)


def clique_eliminate(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
                     clique: Sequence[int], shape: Sequence[int],
                     maximize: bool = False) -> np.ndarray:
    """``log Σ_{x_0} exp Σ_k tables[k]`` (or ``max_{x_0}``) over the first variable of
    ``clique``, a table over the others, without making the clique table: in linear space
    (:func:`eliminate`) when no product can underflow (see :data:`LINEAR_SPAN`), else in
    log space (each cell's ``shape[0]`` entries summed from the inputs and reduced at
    once)."""
    if not maximize and tables:
        return as_log(eliminate(tables, scopes, clique, shape))
    return _log_eliminate(tables, scopes, clique, shape, bool(maximize))


def _log_eliminate(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
                   clique: Sequence[int], shape: Sequence[int], maximize: bool) -> np.ndarray:
    """The log-space kernel of :func:`clique_eliminate` (each cell's ``shape[0]`` entries
    summed from the log tables and reduced at once, with a shift by their maximum)."""
    values, offsets, strides, shp = _inputs(tables, scopes, clique, shape)
    out = np.empty(int(np.prod(shp[1:])))
    _kernels.clique_eliminate(values, offsets, strides, shp, maximize, out)
    return out.reshape(tuple(shape[1:]))


def clique_marginals(tables: Sequence[np.ndarray], scopes: Sequence[Sequence[int]],
                     clique: Sequence[int], shape: Sequence[int],
                     targets: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """``log Σ exp Σ_k tables[k]`` onto each scope of ``targets`` (subsets of ``clique``,
    axes in the target's order): :func:`marginals_onto` in log space."""
    return [as_log(m) for m in marginals_onto(tables, scopes, clique, shape, targets)]


def reduce_to(table: np.ndarray, clique: Sequence[int], target: Sequence[int]) -> np.ndarray:
    """``log Σ exp table`` (axes ``clique``) onto ``target``'s axes, in its order: the
    log-sum-exp of a log table over the variables of ``clique`` not in ``target`` (a
    subset of ``clique``), its axes transposed to ``target``'s order."""
    keep = set(target)
    m = logsumexp(table, tuple(a for a, v in enumerate(clique) if v not in keep))
    kept = [v for v in clique if v in keep]
    return np.transpose(m, [kept.index(v) for v in target])


# --------------------------------------------------------------------------- scaled tables
class Scaled(NamedTuple):
    """A nonnegative table ``exp(log_scale) * values`` kept in linear space: ``values``
    has largest entry one and smallest positive entry ``exp(-span)``, ``span <=``
    :data:`LINEAR_SPAN` (zeros are zero weights)."""

    values: np.ndarray
    log_scale: float
    span: float


def scaled(table: np.ndarray) -> Scaled | None:
    """The :class:`Scaled` form of the log table ``table``, or ``None`` when no entry is
    finite or its span exceeds :data:`LINEAR_SPAN`."""
    table = np.asarray(table, dtype=np.float64)
    lin = np.empty(table.shape)
    hi, span = _kernels.linear_table(table.ravel(), lin.reshape(-1))
    return Scaled(lin, float(hi), float(span)) if span <= LINEAR_SPAN else None


def as_log(x: Scaled | np.ndarray) -> np.ndarray:
    """The log table of ``x`` (a log table is returned as is)."""
    if not isinstance(x, Scaled):
        return x
    with np.errstate(divide="ignore"):
        return np.log(x.values) + x.log_scale


def _from_sums(out: np.ndarray, log_scale: float, shape: tuple,
               extent: tuple[float, float] | None = None) -> Scaled | np.ndarray:
    """``exp(log_scale) * out`` (``out`` nonnegative sums of products, each at least
    ``exp(-LINEAR_SPAN)`` or zero) as a :class:`Scaled` table, or as a log table when its
    span exceeds :data:`LINEAR_SPAN` or every entry is zero (``extent``: ``out``'s
    :func:`~mrflib.inference._elimination_kernels.extent`, when already known)."""
    hi, lo = _kernels.extent(out) if extent is None else extent
    if hi > 0.0:
        log_hi = math.log(hi)
        span = log_hi - math.log(lo)
        if span <= LINEAR_SPAN:
            out *= 1.0 / hi
            return Scaled(out.reshape(shape), log_scale + log_hi, span)
    with np.errstate(divide="ignore"):
        return (np.log(out) + log_scale).reshape(shape)


def _all_scaled(inputs: Sequence[Scaled | np.ndarray], size: int) -> list[Scaled] | None:
    """Every input as a :class:`Scaled` table (log tables converted) when no product of
    them, nor a sum of ``size`` such products, leaves the normal floats; else ``None``.

    Spans adding up to at most :data:`LINEAR_SPAN` need nothing more (each input's
    largest entry one: every product is at least ``e^-700``). Up to
    :func:`lifted_span` more, the inputs are :func:`lifted` so that their products lie
    between ``e^-700`` and ``e^lift``, a range the sums still fit above."""
    out, total, most = [], 0.0, lifted_span(size)
    for x in inputs:
        x = x if isinstance(x, Scaled) else scaled(x)
        if x is None:
            return None
        total += x.span
        if total > most:
            return None
        out.append(x)
    if not out:
        return None
    return out if total <= LINEAR_SPAN else lifted(out, total - LINEAR_SPAN)


def lifted_span(size: int) -> float:
    """The largest sum of spans whose products (of a clique of ``size`` entries)
    :func:`lifted` keeps normal: ``LINEAR_SPAN`` below, and ``LINEAR_SPAN - log size``
    above (``size`` products each at most ``e^lift`` then sum to at most ``e^700``, well
    under the largest float, about ``e^709.8``)."""
    return LINEAR_SPAN + max(0.0, LINEAR_SPAN - math.log(max(size, 1)))


def lifted(inputs: list[Scaled], lift: float) -> list[Scaled]:
    """``inputs`` (spans ``s_k`` adding up to ``S``) with input ``k``'s values multiplied
    by ``exp(lift * s_k / S)`` and its log scale lowered by as much (the same weights).

    A product of any of them then lies between ``exp(-(1 - lift/S) Σ s_k) >= e^-(S -
    lift)`` and ``exp(lift)``, a partial product as well as the whole: the numba kernel's
    running products and ``opt_einsum``'s intermediates never leave the normal floats when
    ``S - lift <=`` :data:`LINEAR_SPAN`. ``values`` may then exceed one; the sums'
    :func:`_from_sums` scales them back."""
    total = math.fsum(x.span for x in inputs)
    out = []
    for x in inputs:
        h = lift * x.span / total
        out.append(Scaled(x.values * math.exp(h), x.log_scale - h, x.span) if h > 0 else x)
    return out


@functools.lru_cache(maxsize=LAYOUT_CACHE)
def _ostrides(clique: tuple, shape: tuple, targets: tuple
              ) -> tuple[np.ndarray, np.ndarray, int, tuple, int]:
    """Where each target's entries start in one output vector, their strides along the
    clique's axes (``0`` on a summed axis), the vector's length, the targets' shapes and
    the clique's entries (read-only; made once per clique and targets, as
    :func:`_layout`)."""
    pos = {v: d for d, v in enumerate(clique)}
    ostrides = np.zeros((len(targets), len(clique)), dtype=np.int64)
    ooffsets = np.zeros(len(targets), dtype=np.int64)
    start = 0
    for r, s in enumerate(targets):
        ooffsets[r] = start
        step = 1
        for v in reversed(s):
            ostrides[r, pos[v]] = step
            step *= int(shape[pos[v]])
        start += step
    ooffsets.flags.writeable = False
    ostrides.flags.writeable = False
    shapes = tuple(tuple(int(shape[pos[v]]) for v in s) for s in targets)
    return ooffsets, ostrides, start, shapes, math.prod(shape)


def _linear_sums(lin: list[Scaled], scopes: Sequence[Sequence[int]], clique: Sequence[int],
                 shape: Sequence[int], targets: Sequence[Sequence[int]]) -> list:
    """The sums of the clique's linear products onto each target (see
    :func:`~mrflib.inference._elimination_kernels.product_sums`), as :func:`_from_sums`."""
    log_scale = math.fsum(x.log_scale for x in lin)
    ooffsets, ostrides, total, shapes, size = _ostrides(
        tuple(clique), tuple(map(int, shape)), tuple(map(tuple, targets)))
    if contracted([x.values.size for x in lin], scopes, clique, shape, len(targets)):
        sums = _contract_all(lin, scopes, clique, shape, targets)
        # a target asked for twice (children with one separator) is one table: a Hugin
        # quotient reads it and never writes it
        shaped = dict(zip(map(tuple, targets), shapes))
        made = {s: _from_sums(x.reshape(-1), log_scale, shaped[s]) for s, x in sums.items()}
        return [made[tuple(t)] for t in targets]
    values, offsets, strides, shp = _inputs([x.values for x in lin], scopes, clique, shape)
    out = np.zeros(total)
    _kernels.product_sums(values, offsets, strides, shp, ooffsets, ostrides, out)
    return [_from_sums(out[o:o + math.prod(sh)], log_scale, sh)
            for o, sh in zip(ooffsets.tolist(), shapes)]


def contracted(sizes: Sequence[int], scopes: Sequence[Sequence[int]], clique: Sequence[int],
               shape: Sequence[int], targets: int) -> bool:
    """Whether a linear clique's sums onto ``targets`` targets are contracted by
    ``opt_einsum`` rather than walked by the numba kernel (``sizes``: the inputs'
    entries): at least :data:`EINSUM_MIN_SIZE` entries and a :func:`gemm_width` of at
    least :data:`EINSUM_MIN_WIDTH`, unless one target is summed from two or more inputs
    over all of ``clique[1:]``. Those are multiplied entry by entry, which BLAS cannot
    speed: ``opt_einsum`` writes a table per product where the kernel streams them all in
    one pass (DBN_12 of the UAI 2014 set: 21 messages over one clique of 2^21 entries, 96
    ms against 57)."""
    if math.prod(int(c) for c in shape) < EINSUM_MIN_SIZE:
        return False
    rest = set(clique[1:])
    if targets == 1 and sum(rest <= set(s) for s in scopes) >= 2:
        return False
    return gemm_width(sizes, scopes, clique, shape) >= EINSUM_MIN_WIDTH


def gemm_width(sizes: Sequence[int], scopes: Sequence[Sequence[int]], clique: Sequence[int],
               shape: Sequence[int]) -> int:
    """The joint states of the clique's variables (but the first) outside its largest
    input (``sizes``: the inputs' entries), that input chosen among those not over all of
    ``clique[1:]``; a linear clique of at least :data:`EINSUM_MIN_SIZE` entries is
    contracted by ``opt_einsum`` when this is at least :data:`EINSUM_MIN_WIDTH`."""
    rest = set(clique[1:])
    big = [(z, k) for k, (z, s) in enumerate(zip(sizes, scopes)) if not rest <= set(s)]
    if not big:
        return 1
    held = set(scopes[max(big)[1]])
    return math.prod(int(c) for v, c in zip(clique[1:], shape[1:]) if v not in held)


def _contract_all(lin: list[Scaled], scopes: Sequence[Sequence[int]], clique: Sequence[int],
                  shape: Sequence[int], targets: Sequence[Sequence[int]]
                  ) -> dict[tuple, np.ndarray]:
    """The sums onto each distinct target by :func:`_contract`, largest first; a target
    inside one already summed is summed from it (a variable's marginal from a separator's),
    each a new array."""
    done: dict[tuple, np.ndarray] = {}
    for s in sorted({tuple(t) for t in targets}, key=len, reverse=True):
        sup = next((u for u in done if set(s) <= set(u)), None)
        if sup is None:
            done[s] = _contract(lin, scopes, clique, shape, s)
            continue
        kept = [v for v in sup if v in s]
        part = done[sup].sum(axis=tuple(i for i, v in enumerate(sup) if v not in s))
        done[s] = np.ascontiguousarray(np.transpose(part, [kept.index(v) for v in s]),
                                       dtype=np.float64)
    return done


def _contract(lin: list[Scaled], scopes: Sequence[Sequence[int]], clique: Sequence[int],
              shape: Sequence[int], target: Sequence[int]) -> np.ndarray:
    """``Σ Π_k lin[k]`` onto ``target`` by ``opt_einsum`` (its path, intermediates of at
    most the clique table's entries; a variable no input holds counts its states), a new
    C-contiguous array."""
    args: list = []
    for x, s in zip(lin, scopes):
        args += [x.values, list(s)]
    held = {v for s in scopes for v in s}
    for v, c in zip(clique, shape):
        if v not in held:
            args += [np.ones(int(c)), [v]]
    size = math.prod(int(c) for c in shape)
    subscripts, operands = convert_interleaved_input([*args, list(target)])
    out = _expression(subscripts, tuple(x.shape for x in operands), size)(*operands)
    if out.flags.c_contiguous and out.dtype == np.float64 and not any(
            np.may_share_memory(out, x.values) for x in lin):
        return out  # einsum's own new array: a copy would cost a pass and fresh pages
    return c_order(out)


def c_order(x: np.ndarray) -> np.ndarray:
    """A C-contiguous float64 copy of ``x``; a transposed contiguous array of at least
    :data:`PERMUTED_COPY_MIN` entries is copied in tiles by
    :func:`~mrflib.inference._elimination_kernels.permuted_copy` (the same entries, several
    times faster than numpy on many short axes)."""
    if x.dtype == np.float64 and x.size >= PERMUTED_COPY_MIN:
        memory = np.transpose(x, np.argsort(x.strides, kind="stable")[::-1])
        if memory.flags.c_contiguous:
            out = np.empty(x.size)
            _kernels.permuted_copy(memory.reshape(-1), np.asarray(x.shape, dtype=np.int64),
                                   np.asarray(x.strides, dtype=np.int64) // 8, out,
                                   PERMUTED_COPY_BLOCK)
            return out.reshape(x.shape)
    return np.array(x, dtype=np.float64, order="C")


@functools.lru_cache(maxsize=LAYOUT_CACHE)
def _expression(subscripts: str, shapes: tuple, size: int) -> Callable:
    """``opt_einsum``'s contraction of ``subscripts`` on arrays of ``shapes``, its path
    found once (the path search took a quarter of a small model's marginals when it ran at
    every call; the same path gives the same sums)."""
    return opt_einsum.contract_expression(subscripts, *shapes, optimize=EINSUM_PATH,
                                          memory_limit=size)


def eliminate(inputs: Sequence[Scaled | np.ndarray], scopes: Sequence[Sequence[int]],
              clique: Sequence[int], shape: Sequence[int]) -> Scaled | np.ndarray:
    """``Σ_{x_0} Π_k inputs[k]`` over the first variable of ``clique``: in linear space
    (a :class:`Scaled` table, or a log table when its span is too wide) when no product
    can underflow (see :func:`_all_scaled`), else by the log-space kernel (a log table)."""
    lin = _all_scaled(inputs, math.prod(shape))
    if lin is not None:
        return _linear_sums(lin, scopes, clique, shape, [tuple(clique[1:])])[0]
    return _log_eliminate([as_log(x) for x in inputs], scopes, clique, shape, False)


def marginals_onto(inputs: Sequence[Scaled | np.ndarray], scopes: Sequence[Sequence[int]],
                   clique: Sequence[int], shape: Sequence[int],
                   targets: Sequence[Sequence[int]]) -> list[Scaled | np.ndarray]:
    """``Σ Π_k inputs[k]`` onto each scope of ``targets`` (subsets of ``clique``, axes in
    the target's order), in one pass in linear space when no product can underflow, else
    from the clique table made in log space (log tables)."""
    lin = _all_scaled(inputs, math.prod(shape))
    if lin is not None:
        return _linear_sums(lin, scopes, clique, shape, targets)
    acc = clique_sum([as_log(x) for x in inputs], scopes, clique, shape)
    return [reduce_to(acc, clique, s) for s in targets]


def divide(a: Scaled | np.ndarray, b: Scaled | np.ndarray, shift: float = 0.0
           ) -> Scaled | np.ndarray:
    """``a / b · exp(-shift)``, zero where ``b`` is zero (a Hugin update: there ``a`` is
    zero too). Two :class:`Scaled` tables divide in linear space: ``a <= 1`` and ``b >=
    exp(-LINEAR_SPAN)`` where positive, so the quotient neither overflows nor underflows."""
    if isinstance(a, Scaled) and isinstance(b, Scaled):
        q = np.empty(a.values.size)
        found = _kernels.divide_extent(np.ascontiguousarray(a.values).reshape(-1),
                                       np.ascontiguousarray(b.values).reshape(-1), q)
        return _from_sums(q, a.log_scale - b.log_scale - shift, a.values.shape, found)
    la, lb = as_log(a), as_log(b)
    with np.errstate(invalid="ignore"):
        return np.where(np.isneginf(lb), -np.inf, la - shift - lb)


#: Probabilities ``exp(log w - log Z)`` are exact to about ``|log Z| * eps``: past this
#: ``|log Z|`` (``2^10 eps``, 2e-13) the rounding of ``log Z`` shows (at ``log Z = 1e12``
#: marginals summed to 1.00005, at ``1e17`` to 2, ``log 2`` lost in ``log Z``'s last bit),
#: so :func:`renormalize` divides them by their sum.
RENORMALIZE_LOG_Z = 2.0**10


def renormalize(p: np.ndarray, log_z: float) -> np.ndarray:
    """``p``, probabilities computed as ``exp(log w - log_z)``, divided in place by their
    sum when ``|log_z| >`` :data:`RENORMALIZE_LOG_Z` (below, ``p`` is left as is, bit for
    bit), so that they sum to one whatever the magnitude of the log-weights."""
    if abs(log_z) > RENORMALIZE_LOG_Z:
        total = p.sum()
        if total > 0:
            p /= total
    return p


#: numpy sums an array of at most this many entries left to right (past it, eight
#: running sums), so :func:`renormalize_all` sums such arrays together, column by column,
#: to the same floats.
LEFT_TO_RIGHT = 7


def renormalize_all(ps: Sequence[np.ndarray], log_z: float) -> list[np.ndarray]:
    """:func:`renormalize` of each of ``ps`` (new arrays where they change), the arrays of
    one length up to :data:`LEFT_TO_RIGHT` entries summed and divided together: a call
    per array cost 1.2 ms on a network of 890 binary variables, a third of its compiled
    passes' time. The floats are those of :func:`renormalize` one array at a time."""
    ps = list(ps)
    if abs(log_z) <= RENORMALIZE_LOG_Z:
        return ps
    by_length: dict[int, list[int]] = {}
    for i, p in enumerate(ps):
        by_length.setdefault(p.size, []).append(i)
    for length, idx in by_length.items():
        if length > LEFT_TO_RIGHT or len(idx) == 1:
            for i in idx:
                ps[i] = renormalize(ps[i], log_z)
            continue
        block = np.stack([ps[i].ravel() for i in idx])
        total = block[:, 0].copy()
        for j in range(1, length):
            total += block[:, j]
        ok = total > 0
        block[ok] /= total[ok, None]
        for i, row in zip(idx, block):
            ps[i] = row.reshape(ps[i].shape)
    return ps


def normalize_log(a: np.ndarray) -> np.ndarray:
    """``exp(a - logsumexp(a))``: the probabilities of log-weights ``a`` (all axes)."""
    total = logsumexp(a, tuple(range(a.ndim)))
    return np.exp(a - total)


def draw_categorical(logits: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One draw per row of the unnormalized log-probabilities ``logits (M, K)``.

    ``u (M,)`` are uniforms in ``[0, 1)``; the draw is the first ``j`` whose cumulative
    weight exceeds ``u`` times the row's total (inverse CDF), so a zero weight is never drawn.
    """
    m = np.max(logits, axis=1, keepdims=True)
    m[~np.isfinite(m)] = 0.0
    cdf = np.cumsum(np.exp(logits - m), axis=1)
    target = u * cdf[:, -1]
    idx = np.sum(cdf <= target[:, None], axis=1)
    return np.minimum(idx, logits.shape[1] - 1).astype(np.int64)
