"""The passes of a small junction tree in two compiled calls, and backward sampling in one.

On a model whose clique tables are small (milliseconds of work), the Python passes of
:class:`~mrflib.inference.exact.elimination_plan.EliminationPlan` spend most of their time
between the kernels: about 35 µs of interpreter work per step and pass, against microseconds
of sums (Promedus_30 of the UAI 2014 set: 290 steps, 20 ms for its marginals, of which the
sums take a few). Here the whole upward pass is one numba call and the whole downward pass
another (:mod:`mrflib.inference.exact._compiled_passes_kernels`). They run the same kernel on the
same tables in the same order, so ``log Z`` and the marginals are the very floats the
Python passes give; where a Python pass would leave linear space (a clique whose inputs
span more than :data:`~mrflib.inference._factor_ops.LINEAR_SPAN` in log), or ``Z = 0``, the
compiled pass gives up (``None``) and the caller runs the Python one.

Taken by plans whose tables hold at most :data:`MAX_ENTRIES` entries in all (a fraction
of a second: a pass reports its start to a progress reporter, then is done), unless the
cliques that the Python passes contract with ``opt_einsum`` (large ones with a
matrix-product structure, see :func:`~mrflib.inference._factor_ops.contracted`) hold more
than :data:`CONTRACTED_PER_STEP` entries per step of the plan: there BLAS's speed on those
cliques outweighs the interpreter's time between steps. Where a plan has no such clique,
the compiled passes give the Python passes' floats to the bit; where it has a few, the
kernel sums those cliques in its own order, not ``opt_einsum``'s, and the last bits may
differ (by at most 2.3e-15 in a marginal on the UAI 2014 problems). The downward pass also
gives, where asked, the marginals of chosen factors (a Boltzmann machine's edges: its
moments ``<x_i x_j>``); those extra outputs of a clique's walk may change the order of its
sums, so the variables' marginals of such a call may differ in their last bits.

Backward sampling (:func:`backward_sample`, on the log tables of any calibrated plan,
:func:`sampling_tables`) draws every step for all samples of a block in one call: the rows
of the clique tables ``ψ_t(·, x_{N_t})`` summed from the same log tables in the same order
as :meth:`~mrflib.inference.exact.elimination_plan.EliminationPlan.clique_rows`, and drawn
as :func:`~mrflib.inference._factor_ops.draw_categorical` draws them (in the Python loop per
step it replaces, a 12 x 12 lattice's 10,000 samples took 0.17 s; here 0.02 s).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from mrflib._support.interpreted import run_small
from mrflib._support.progress import ticker
from mrflib.inference._factor_ops import (
    EINSUM_MIN_SIZE,
    LINEAR_SPAN,
    Scaled,
    contracted,
)
from mrflib.inference.exact import _compiled_passes_kernels as _kernels

__all__ = ["MAX_ENTRIES", "CONTRACTED_PER_STEP", "log_partition", "summed_log_partition",
           "Marginals",
           "scaled_marginals", "marginals", "retable",
           "upward_log_messages", "SamplingTables", "sampling_tables", "backward_sample"]

#: Most clique-table entries, in all, of a plan whose passes are compiled.
MAX_ENTRIES = 2**24
#: Most entries, per step of the plan, in the cliques the Python passes would contract with
#: ``opt_einsum``, for the plan to be compiled. Measured on the UAI 2014 problems: plans at
#: 217 to 2,068 entries per step (Pedigree_12, Promedus_16, 27, 28, 34) answer 1.7 to 2.2
#: times faster compiled; plans at 4,617 and more (Alchemy_11, CSP_12, Segmentation) 1.4 to
#: 2.3 times slower.
CONTRACTED_PER_STEP = 3000


class _Layout(NamedTuple):
    """A plan as the kernels read it (see
    :mod:`~mrflib.inference.exact._compiled_passes_kernels`), and the walks of its cliques
    (:func:`~mrflib.inference.exact._compiled_passes_kernels.walks`), made once: the upward
    pass's under ``None``, the downward pass's under the factors it gives the marginals of."""

    tree: tuple  # card, cl_ptr, cl_var, parent, ch_ptr, ch_idx, as_ptr, as_idx, fs_ptr, fs_var
    ftab: np.ndarray
    ft_ptr: np.ndarray
    msg_pos: np.ndarray
    roots: list[int]
    walks: dict
    entries: int  # the cliques' tables in all: the passes' work


def _walks(lay: _Layout, fm_pos: np.ndarray | None = None) -> tuple:
    """The upward walks of ``lay`` (``fm_pos`` ``None``), or its downward walks giving the
    factors of ``fm_pos``; made on first use and kept with the layout, which the plans of
    other tables share (:func:`retable`)."""
    key = None if fm_pos is None else fm_pos.tobytes()
    found = lay.walks.get(key)
    if found is None:
        found = _kernels.walks(*lay.tree, lay.ft_ptr, lay.msg_pos,
                               np.zeros(len(lay.ft_ptr), dtype=np.int64) if fm_pos is None
                               else fm_pos, fm_pos is not None)
        lay.walks[key] = found
    return found


def _ragged(lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(ptr, items)``: ``lists[i]`` is ``items[ptr[i]:ptr[i + 1]]``."""
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=ptr[1:])
    items = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64, count=ptr[-1])
    return ptr, items


def _layout(jt: Any) -> _Layout | None:
    """The kernels' layout of ``jt`` (made once per plan), or ``None`` when its passes are
    not compiled (see the module's text)."""
    cached = getattr(jt, "_compiled_layout", False)
    if cached is not False:
        return cached
    out = None
    sizes = [math.prod(s) for s in getattr(jt, "shapes", ())]
    if (jt.order is not None and sizes and sum(sizes) <= MAX_ENTRIES
            and sum(z for t, z in enumerate(sizes)
                    if z >= EINSUM_MIN_SIZE and _contracted(jt, t, sizes))
            <= CONTRACTED_PER_STEP * len(sizes)):
        red = jt.red
        ft_ptr = np.zeros(len(red.tables) + 1, dtype=np.int64)
        np.cumsum([t.size for t in red.tables], out=ft_ptr[1:])
        ftab = np.concatenate(red.tables, axis=None).astype(np.float64, copy=False)
        msg_pos = np.empty(len(sizes) + 1, dtype=np.int64)
        msg_pos[0] = ft_ptr[-1]
        np.cumsum([z // s[0] for z, s in zip(sizes, jt.shapes)], out=msg_pos[1:])
        msg_pos[1:] += ft_ptr[-1]
        tree = (np.ascontiguousarray(red.card, dtype=np.int64), *_ragged(jt.cliques),
                np.asarray(jt.parent, dtype=np.int64), *_ragged(jt.children),
                *_ragged(jt.assigned), *_ragged(red.scopes))
        out = _Layout(tree, ftab, ft_ptr, msg_pos, [t for t, p in enumerate(jt.parent) if p < 0],
                      {}, sum(sizes))
    jt._compiled_layout = out
    return out


def _contracted(jt: Any, t: int, sizes: list[int]) -> bool:
    """Whether the Python passes contract step ``t`` by ``opt_einsum`` (see
    :func:`~mrflib.inference._factor_ops.contracted`): its inputs are the factors assigned
    to it and its children's messages (a downward message, over all but the first
    variable, never counts)."""
    if sizes[t] < EINSUM_MIN_SIZE:
        return False
    red = jt.red
    kids = jt.children[t]
    scopes = [red.scopes[k] for k in jt.assigned[t]] + [jt.cliques[c][1:] for c in kids]
    inputs = ([red.tables[k].size for k in jt.assigned[t]]
              + [sizes[c] // jt.shapes[c][0] for c in kids])
    return contracted(inputs, scopes, jt.cliques[t], jt.shapes[t], 1)


def _root_log(pool: np.ndarray, at: int, log_scale: float) -> float:
    """``float(as_log(m))`` of a root's one-entry message ``m``, as the Python pass takes it
    (numpy's ``log``, whose last bit may differ from the kernels' ``math.log``)."""
    with np.errstate(divide="ignore"):
        return float((np.log(pool[at:at + 1]) + log_scale)[0])


def _started(what: str) -> None:
    """Report a compiled pass as it starts, as the Python pass reports its first step (a
    compiled pass is one call: the next line a caller would see is the next pass's)."""
    ticker(what, 1)(0)


def _upward(lay: _Layout) -> tuple | None:
    _started("upward pass")
    ok, pool, fac_ls, fac_span, msg_ls, msg_span, msg_lh = run_small(
        _kernels.upward, lay.entries, *lay.tree, lay.ftab, lay.ft_ptr, lay.msg_pos,
        int(lay.msg_pos[-1] + lay.msg_pos[-1] - lay.msg_pos[0]), LINEAR_SPAN, _walks(lay))
    return (pool, fac_ls, fac_span, msg_ls, msg_span, msg_lh) if ok else None


def _upward_value(jt: Any) -> tuple[_Layout, tuple, float, list[float]] | None:
    """The compiled upward pass of the plan ``jt``: its layout, the pass's arrays, ``log Z``
    and the log value of each root (in the order of ``roots``); ``None`` as
    :func:`log_partition`."""
    lay = _layout(jt)
    up = None if lay is None else _upward(lay)
    if up is None:
        return None
    pool, msg_ls = up[0], up[3]
    value = jt.red.const + jt.red.free_log
    roots = []
    for t in lay.roots:
        roots.append(_root_log(pool, int(lay.msg_pos[t]), float(msg_ls[t])))
        value += roots[-1]
    return lay, up, value, roots


def log_partition(jt: Any) -> float | None:
    """``log Z`` of the plan ``jt`` by the compiled upward pass, or ``None`` (not compiled
    here, or a step the Python pass would take in log space)."""
    found = _upward_value(jt)
    return None if found is None else found[2]


def _summed(jt: Any, lay: _Layout, up: tuple) -> float:
    """:func:`summed_log_partition` of the upward pass ``up`` of ``jt`` (layout ``lay``)."""
    pool, fac_ls, msg_lh = up[0], up[1], up[5]
    terms = [jt.red.const, jt.red.free_log, *fac_ls.tolist(), *msg_lh.tolist()]
    with np.errstate(divide="ignore"):
        terms += [float(np.log(pool[int(lay.msg_pos[t])])) for t in lay.roots]
    return math.fsum(terms)


def summed_log_partition(jt: Any) -> float | None:
    """:func:`log_partition` as one sum of the terms that make it, rounded once
    (``math.fsum``): every factor's log scale, every step's own (``msg_lh``) and the log of
    each root's scaled value; ``None`` as :func:`log_partition`.

    The roots' log scales add the same terms but round at every step, where a message's
    log scale is as large as its log values: about half an ulp of those at each step, which
    on a 9 x 9 lattice makes ``log Z`` wander by 3 ulps as the parameters move by 1e-7 (a
    line search's steps near an optimum), against a third of an ulp here: the same ``log Z``
    to a few ulps, smooth in the parameters, as a learner's line search needs it."""
    lay = _layout(jt)
    up = None if lay is None else _upward(lay)
    return None if up is None else _summed(jt, lay, up)


class Marginals(NamedTuple):
    """The marginals of the compiled downward pass, each table scaled to largest entry one,
    with its log scale (before the root's log value is taken off).

    ``marg[marg_pos[t]:marg_pos[t + 1]]`` is the marginal of step ``t``'s variable, log
    scale ``marg_ls[t]``; ``fmarg[fm_pos[k]:fm_pos[k + 1]]`` that of the reduced factor
    ``k`` (empty unless asked for), axes in its scope's order, log scale ``fmarg_ls[k]``;
    ``shift[t]`` is the log value of the root ``t`` (0 for other steps), ``log_z`` and
    ``roots`` those of :func:`log_partition`, ``summed_log_z`` that of
    :func:`summed_log_partition`."""

    log_z: float
    summed_log_z: float
    roots: list[float]
    shift: np.ndarray
    marg: np.ndarray
    marg_ls: np.ndarray
    marg_pos: np.ndarray
    fmarg: np.ndarray
    fmarg_ls: np.ndarray
    fm_pos: np.ndarray


def scaled_marginals(jt: Any, factors: Sequence[bool] | None = None) -> Marginals | None:
    """The :class:`Marginals` of the plan ``jt`` by the compiled passes: every variable's,
    and each reduced factor ``k``'s with ``factors[k]``; or ``None`` as
    :func:`log_partition`.

    Asking for factors adds outputs to the downward pass's walk of each clique, whose order
    of summation may then differ: the variables' marginals may differ in their last bits
    from those of a call without."""
    found = _upward_value(jt)
    if found is None:
        return None
    lay, up, value, roots = found
    pool, fac_ls, fac_span, msg_ls, msg_span, _ = up
    T = len(jt.cliques)
    shift = np.zeros(T)
    shift[lay.roots] = roots
    if value == -np.inf:
        return None  # a factor zero at the evidence: the Python pass says so
    card = lay.tree[0]
    marg_pos = np.zeros(T + 1, dtype=np.int64)
    np.cumsum(card[np.asarray(jt.order, dtype=np.int64)], out=marg_pos[1:])
    fm_pos = np.zeros(len(lay.ft_ptr), dtype=np.int64)
    if factors is not None:
        np.cumsum(np.diff(lay.ft_ptr) * np.asarray(factors, dtype=bool), out=fm_pos[1:])
    _started("downward pass")
    ok, marg, marg_ls, fmarg, fmarg_ls = run_small(
        _kernels.downward, lay.entries, *lay.tree, lay.ft_ptr, lay.msg_pos, pool, fac_ls,
        fac_span, msg_ls, msg_span, shift, int(lay.msg_pos[-1]), marg_pos, fm_pos, LINEAR_SPAN,
        _walks(lay, fm_pos))
    if not ok:
        return None
    return Marginals(value, _summed(jt, lay, up), roots, shift, marg, marg_ls, marg_pos, fmarg,
                     fmarg_ls, fm_pos)


def marginals(jt: Any) -> tuple[float, list[float], list[tuple[int, np.ndarray]]] | None:
    """``(log Z, the roots' log values, [(variable, P(x_v) before renormalize), ...])`` of
    the plan ``jt`` by the compiled passes, one entry per step; or ``None`` as
    :func:`log_partition`."""
    m = scaled_marginals(jt)
    if m is None:
        return None
    reps = np.diff(m.marg_pos)
    with np.errstate(divide="ignore"):
        p = np.exp(np.log(m.marg) + np.repeat(m.marg_ls, reps) - np.repeat(m.shift, reps))
    at = m.marg_pos.tolist()
    return m.log_z, m.roots, [(v, p[at[t]:at[t + 1]]) for t, v in enumerate(jt.order)]


def retable(jt: Any, new: Any, flat: np.ndarray | None = None) -> None:
    """Give ``new``, the plan ``jt`` over other tables
    (:meth:`~mrflib.inference.exact.elimination_plan.EliminationPlan.with_tables`), ``jt``'s
    layout with its tables (``flat``: them concatenated, where the caller has them)."""
    lay = _layout(jt)
    if lay is not None:
        if flat is None:
            flat = np.concatenate(new.red.tables, axis=None).astype(np.float64, copy=False)
        lay = lay._replace(ftab=np.ascontiguousarray(flat, dtype=np.float64))
    new._compiled_layout = lay


def upward_log_messages(jt: Any) -> tuple[float, list[np.ndarray]] | None:
    """``(log Z, the upward messages as log tables)`` of the plan ``jt`` by the compiled
    upward pass (the log tables of the Python pass's :class:`~mrflib.inference._factor_ops.Scaled`
    messages, ``log values + log scale``), or ``None`` as :func:`log_partition`."""
    found = _upward_value(jt)
    if found is None:
        return None
    lay, (pool, _, _, msg_ls, _, _), value, _ = found
    at = lay.msg_pos.tolist()
    msgs = []
    with np.errstate(divide="ignore"):
        for t, shape in enumerate(jt.shapes):
            msgs.append((np.log(pool[at[t]:at[t + 1]]) + float(msg_ls[t])).reshape(shape[1:]))
    return value, msgs


class SamplingTables(NamedTuple):
    """What backward sampling reads of a calibrated plan: every log table its steps sum,
    end to end (the reduced factors', then the upward messages'), the cliques, and each
    step's inputs (the factors assigned to it, then its children's messages: the order of
    :meth:`~mrflib.inference.exact.elimination_plan.EliminationPlan.clique_rows`), each an
    offset, its stride along the eliminated variable, and its other variables' positions in
    the clique and strides."""

    pool: np.ndarray
    order: np.ndarray
    card: np.ndarray
    cl_ptr: np.ndarray
    cl_var: np.ndarray
    in_ptr: np.ndarray
    in_off: np.ndarray
    in_vstride: np.ndarray
    dim_ptr: np.ndarray
    dim_pos: np.ndarray
    dim_stride: np.ndarray


def sampling_tables(jt: Any, msgs: list) -> SamplingTables:
    """The :class:`SamplingTables` of the plan ``jt`` and its upward messages ``msgs``
    (log tables, or :class:`~mrflib.inference._factor_ops.Scaled`, taken as their log
    tables)."""
    red = jt.red
    sizes = [t.size for t in red.tables] + [math.prod(s[1:]) for s in jt.shapes]
    offs = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offs[1:])
    pool = np.empty(int(offs[-1]))
    at = offs.tolist()
    for k, table in enumerate(red.tables):
        pool[at[k]:at[k + 1]] = np.ravel(table)
    K = len(red.tables)
    with np.errstate(divide="ignore"):
        for t, m in enumerate(msgs):
            out = pool[at[K + t]:at[K + t + 1]]
            if isinstance(m, Scaled):
                np.log(m.values.reshape(-1), out=out)
                out += m.log_scale
            else:
                out[:] = np.ravel(m)
    in_ptr, in_off, vstride, dim_ptr, dim_pos, dim_stride = [0], [], [], [0], [], []
    card = red.card.tolist()
    for t, clique in enumerate(jt.cliques):
        where = {w: q for q, w in enumerate(clique)}
        inputs = [(at[k], red.scopes[k]) for k in jt.assigned[t]]
        inputs += [(at[K + c], jt.cliques[c][1:]) for c in jt.children[t]]
        for off, scope in inputs:
            step, strides = 1, {}
            for w in reversed(scope):
                strides[w] = step
                step *= card[w]
            in_off.append(off)
            vstride.append(strides.pop(clique[0], 0))
            dim_pos.extend(where[w] for w in strides)
            dim_stride.extend(strides.values())
            dim_ptr.append(len(dim_pos))
        in_ptr.append(len(in_off))
    as_int = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
    cl_ptr, cl_var = _ragged(jt.cliques)
    return SamplingTables(pool, as_int(jt.order), as_int(red.card), cl_ptr, cl_var,
                          as_int(in_ptr), as_int(in_off), as_int(vstride), as_int(dim_ptr),
                          as_int(dim_pos), as_int(dim_stride))


def backward_sample(tables: SamplingTables, u: np.ndarray, x: np.ndarray,
                    inv: float = 1.0, rows: np.ndarray | None = None) -> None:
    """Draw the plan's variables of each sample in reverse elimination order, in place.

    Variable ``v`` of sample ``s`` is the first state ``j`` whose cumulative weight
    ``Σ_{i <= j} exp(inv (ψ_t(i, x_{N_t}) - max))`` exceeds ``u[v, s]`` times the row's
    total, as :func:`~mrflib.inference._factor_ops.draw_categorical` draws it from
    :meth:`~mrflib.inference.exact.elimination_plan.EliminationPlan.clique_rows` (the same
    sums of the same log tables, in the same order; only the last bit of ``exp`` may
    differ, numba's against numpy's).

    Parameters
    ----------
    tables : SamplingTables
        The calibrated plan (:func:`sampling_tables`).
    u : ndarray of float64, shape (n, M)
        Uniforms in ``[0, 1)``, one row per variable (node-major); with ``rows``, variable
        ``v`` compares ``1 - u[rows[v]]``.
    x : ndarray of int64, shape (n, M)
        States, node-major: the variables outside the plan's order (observed, or in no
        factor) are read, those of the order written.
    inv : float, default 1.0
        The log tables' scale (a power of two: tables given times ``2^-k``, ``inv = 2^k``).
    rows : ndarray of int64 or None, default None
        The row of ``u`` of each variable, whose uniform is then taken as one minus it (a
        caller whose uniforms decide ``u < P(state 1)`` in its own order); ``None``: row
        ``v``, as it is.
    """
    flip = rows is not None
    if rows is None:
        rows = np.arange(x.shape[0], dtype=np.int64)
    _kernels.backward_sample(*tables, u, rows, flip, x, float(inv))
