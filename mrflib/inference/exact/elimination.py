"""Exact inference on discrete factor graphs by variable elimination on a junction tree.

For ``P(x) = (1/Z) Π_k ψ_k(x_{S_k})`` (the LAP paper's eq. (1); natural-log tables
``θ_k = log ψ_k`` of a :class:`~mrflib.models.factor_graph.FactorGraph`) the engine

1. **reduces** the model as exact solvers do: an *observed* variable (one whose unary factor
   has a single finite entry, as :meth:`~mrflib.models.factor_graph.FactorGraph.condition` makes,
   or a variable with one
   state) is clamped and sliced out of every factor; for ``log Z`` and sampling, a factor
   normalized over a variable that no other factor holds (a conditional probability table
   of an unobserved leaf: ``log Σ_{x_c} ψ = 0`` for every configuration of the others) sums
   to one and is dropped, recursively (barren variables); a variable left without factors
   contributes ``log |X_v|`` (:class:`mrflib.inference._reduction.Reduced`, the first step of
   the approximations too);
2. **plans** an elimination order (:mod:`mrflib.inference.exact.elimination_order`) on what is left,
   one
   tree per connected component, and refuses before allocating a plan that does not fit;
3. **eliminates**: step ``t`` sums (or maximizes) ``v_t`` out of the clique table
   ``ψ_t(x_{C_t}) = Σ_{k → t} θ_k + Σ_{c → t} m_c``, the factors assigned to it (those whose
   first-eliminated variable is ``v_t``) plus its children's messages, and sends
   ``m_t(x_{N_t}) = log Σ_{x_{v_t}} exp ψ_t`` to its parent, the step of the first-eliminated
   variable of ``N_t``. The roots' messages add up to ``log Z`` (sum-product) or the largest
   log-weight (max-product, then back-tracking gives the MAP state). A downward (Hugin) pass
   gives every clique its marginal; forward filtering then backward sampling of
   ``P(x_{v_t} | x_{N_t}) ∝ exp ψ_t`` in reverse order gives exact samples.

Tables are in log space. A clique is never made for a message or a marginal: its entries
are summed from the inputs onto the outputs (:mod:`mrflib.inference._factor_ops`), in linear space
when no product of the inputs, each scaled to largest entry one, can underflow (their
spans add up to at most 700 nats), otherwise by a log-sum-exp with a shift. Messages stay in
linear space with a log scale (:class:`~mrflib.inference._factor_ops.Scaled`) from step to step
while
they can: a numba kernel walks a clique in one pass, ``opt_einsum`` contracts a large one
with a matrix-product structure. So ``log Z = ±4600`` and tables full of ``-inf`` are
exact; a model with ``Z = 0`` gives ``log Z = -inf`` (never NaN).

Precision: exact within the limit :mod:`mrflib.models.precision` states (and argues once
for every engine); beyond it :mod:`mrflib.inference.exact` warns before calling this engine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.pages import small_pages
from mrflib._support.validation import (
    as_rng,
    check_instance,
    check_positive,
    require_memory,
)
from mrflib.inference import _reduction
from mrflib.inference._factor_ops import (
    RENORMALIZE_LOG_Z,
    as_log,
    draw_categorical,
    renormalize,
    renormalize_all,
)
from mrflib.inference.exact import _compiled_passes
from mrflib.inference.exact.elimination_plan import (
    REPORT_LOG_ENTRIES,
    SEARCH_LARGE_ENTRIES,
    SEARCH_MIN_ENTRIES,
    EliminationPlan,
    clique_tree,
    upward_peak_bytes,
)
from mrflib.models.factor_graph import FactorGraph
from mrflib.models.precision import checked, magnitude

__all__ = ["EliminationPlan", "plan", "log_partition", "upward_peak_bytes", "marginals",
           "marginals_and_log_partition", "factor_marginals", "clique_tree",
           "map_assignment", "sample", "CPT_TOLERANCE", "REPORT_LOG_ENTRIES",
           "SEARCH_MIN_ENTRIES", "SEARCH_LARGE_ENTRIES"]

#: A factor counts as a conditional probability table over ``c`` when ``|log Σ_{x_c} ψ| <=``
#: this for every configuration of its other variables (the reduction's test of a barren
#: table, :mod:`mrflib.inference._reduction`).
CPT_TOLERANCE = _reduction.CPT_TOLERANCE


# --------------------------------------------------------------------------- tasks
def plan(model: FactorGraph, *, barren: bool = False, check: bool = True,
         upward_only: bool = False, search: bool = True,
         anneal: int | None = None, give_up: float | None = None) -> EliminationPlan:
    """The :class:`EliminationPlan` of ``model``.

    With ``check`` a plan that does not fit in the available memory is refused
    (``ValueError`` with its sizes); without, it is returned with ``fits`` false, its
    treewidth and table sizes (lower bounds, and ``order`` ``None``, when no order with a
    clique table below :data:`REPORT_LOG_ENTRIES` entries was found).

    Parameters
    ----------
    model : FactorGraph
        The model.
    barren : bool, default False
        Drop barren CPTs, as :func:`log_partition` and :func:`sample` do.
    check : bool, default True
        Refuse a plan that does not fit in memory.
    upward_only : bool, default False
        Size the plan for one upward pass, as :func:`log_partition` needs.
    search : bool, default True
        A plan that does not fit, or holds more than :data:`SEARCH_LARGE_ENTRIES` table
        entries, tries the randomized order search and its refinement, seconds of work,
        before it is refused or returned.
    anneal : int or None, default None
        A seed: an order that still does not fit has its contraction tree annealed too,
        about a minute more.
    give_up : float or None, default None
        Log entries of a largest clique table past which no order is searched
        (:func:`mrflib.inference.exact.sliced.give_up`).

    Returns
    -------
    EliminationPlan
        The plan.
    """
    return EliminationPlan(model, barren=barren, check=check, upward_only=upward_only,
                           search=search, anneal=anneal, give_up=give_up)


@checked
@small_pages()
def log_partition(model: FactorGraph, jt: EliminationPlan | None = None) -> float:
    """``log Z``: evidence clamped, barren CPTs dropped, one upward sum-product pass that
    frees each message once it is used.

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    jt : EliminationPlan or None, default None
        A plan of ``model`` to use; ``None`` makes one (barren CPTs dropped, sized for one
        upward pass).

    Returns
    -------
    float
        The natural log of the partition function; ``-inf`` when ``Z = 0``.
    """
    if jt is None:
        jt = plan(model, barren=True, upward_only=True)
    fast = _compiled_passes.log_partition(jt)
    return jt.upward(keep=False)[0] if fast is None else fast


def _calibrated(model: FactorGraph, jt: EliminationPlan | None = None,
                zero_ok: bool = False) -> tuple[EliminationPlan, list, float, float]:
    """The plan, its upward messages, ``log Z`` and the magnitude of the log values the
    beliefs went through (the largest ``|log Z|`` of a component, or the sum of the tables'
    largest ``|log-weight|``, which bounds every message), for :func:`renormalize`.
    ``Z = 0`` is refused unless ``zero_ok``."""
    jt = plan(model) if jt is None else jt
    logz, msgs = jt.upward()
    if logz == -np.inf and not zero_ok:
        raise ValueError("model has Z = 0 (every state has zero weight, e.g. impossible "
                         "evidence): its marginals are undefined")
    roots = [abs(float(as_log(m))) for t, m in enumerate(msgs) if jt.parent[t] < 0]
    tables = magnitude(jt.red.tables)
    return jt, msgs, logz, max(roots + [tables])


def _point_mass(card: int, value: int) -> np.ndarray:
    out = np.zeros(card)
    out[value] = 1.0
    return out


@checked
def marginals(model: FactorGraph, jt: EliminationPlan | None = None) -> list[np.ndarray]:
    """``P(x_i)`` for every variable.

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    jt : EliminationPlan or None, default None
        A plan of ``model`` to use; ``None`` makes one.

    Returns
    -------
    list of ndarray of float64
        One ``(|X_i|,)`` array per variable (observed: a point mass; in no factor:
        uniform).

    Raises
    ------
    ValueError
        When ``Z = 0`` (e.g. impossible evidence): the marginals are undefined.
    """
    return marginals_and_log_partition(model, jt)[0]


@checked
@small_pages()
def marginals_and_log_partition(model: FactorGraph, jt: EliminationPlan | None = None,
                                zero_ok: bool = False) -> tuple[list[np.ndarray] | None, float]:
    """:func:`marginals` and ``log Z`` from the same calibration.

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    jt : EliminationPlan or None, default None
        A plan of ``model`` to use; ``None`` makes one.
    zero_ok : bool, default False
        A model with ``Z = 0`` gives ``(None, -inf)`` instead of a ``ValueError``.

    Returns
    -------
    marginals : list of ndarray of float64 or None
        One ``(|X_i|,)`` array per variable; ``None`` when ``Z = 0`` and ``zero_ok``.
    log_z : float
        The natural log of the partition function.
    """
    card = check_instance(model, FactorGraph, "model").cardinalities
    require_memory(8 * sum(card.tolist()), f"the marginals of {model.n} variables "
                   f"({sum(card.tolist())} states in all)")
    jt = plan(model) if jt is None else jt
    fast = _compiled_passes.marginals(jt)
    if fast is None:
        jt, msgs, logz, scale = _calibrated(model, jt, zero_ok)
        if logz == -np.inf:
            return None, logz
        found = ((jt.order[t], np.exp(b))
                 for t, (b,) in jt.beliefs(msgs, lambda t: [jt.cliques[t][:1]]))
    else:
        logz, roots, found = fast
        scale = max([abs(r) for r in roots], default=0.0)
        if scale <= RENORMALIZE_LOG_Z:  # only past it does the scale change an answer
            scale = max(scale, magnitude(jt.red.tables))
    out: list = [None] * model.n
    for v, x in jt.observed.items():
        out[v] = _point_mass(int(card[v]), x)
    found = list(found)
    for (v, _), p in zip(found, renormalize_all([p for _, p in found], scale)):
        out[v] = p
    for v, c in enumerate(card.tolist()):
        if out[v] is None:  # in no factor: uniform
            out[v] = np.full(c, 1.0 / c)
    return out, logz


@checked
@small_pages()
def factor_marginals(model: FactorGraph) -> list[np.ndarray]:
    """``P(x_{S_k})`` for every factor.

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).

    Returns
    -------
    list of ndarray of float64
        One array per factor, shaped like ``model.log_tables[k]`` (axes in scope order).

    Raises
    ------
    ValueError
        When ``Z = 0`` (e.g. impossible evidence).
    """
    jt, msgs, _, scale = _calibrated(model)
    wanted = lambda t: [jt.red.scopes[k] for k in jt.assigned[t]]  # noqa: E731
    return jt.red.factor_tables(model, ((k, renormalize(np.exp(m), scale))
                                        for t, ms in jt.beliefs(msgs, wanted)
                                        for k, m in zip(jt.assigned[t], ms)))


@checked
@small_pages()
def map_assignment(model: FactorGraph, jt: EliminationPlan | None = None,
                   zero_ok: bool = False) -> tuple[np.ndarray | None, float]:
    """A most probable state (max-product on the same tree, then back-tracking) and its
    log-weight.

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    jt : EliminationPlan or None, default None
        A plan of ``model`` to use; ``None`` makes one.
    zero_ok : bool, default False
        A model whose every state has zero weight gives ``(None, -inf)`` instead of a
        ``ValueError``.

    Returns
    -------
    x : ndarray of int64, shape (n,) or None
        A most probable state; ``None`` when ``Z = 0`` and ``zero_ok``.
    log_weight : float
        Its log-weight ``Σ_k θ_k(x_{S_k})``.
    """
    jt = plan(model) if jt is None else jt
    best, msgs = jt.upward(maximize=True)
    if best == -np.inf and zero_ok:
        return None, best
    if best == -np.inf:
        raise ValueError("model has Z = 0 (every state has zero weight, e.g. impossible "
                         "evidence): it has no most probable state")
    x = np.zeros(model.n, dtype=np.int64)
    for v, val in jt.observed.items():
        x[v] = val
    for t in range(len(jt.order) - 1, -1, -1):
        clique = jt.cliques[t]
        x[clique[0]] = int(np.argmax(jt.clique_rows(t, msgs, x[None])[0]))
    return x, float(best)


@checked
@small_pages()
def sample(model: FactorGraph, n_samples: int, *, rng: Any) -> np.ndarray:
    """Exact i.i.d. samples: forward filtering (the upward pass), backward sampling in
    reverse elimination order, then the dropped CPTs forward.

    Uniforms come from ``rng`` in blocks of ``(rows, n)`` (column ``i`` decides variable
    ``i``): the same seed gives the same samples.

    Parameters
    ----------
    model : FactorGraph
        The model (a ``TypeError`` naming ``model`` otherwise).
    n_samples : int
        Number of samples, at least 1.
    rng : int or numpy.random.Generator
        Seed or generator of the uniforms.

    Returns
    -------
    ndarray of int64, shape (n_samples, n)
        The samples, states ``0..|X_i|-1``.

    Raises
    ------
    ValueError
        When ``Z = 0`` (the model cannot be sampled), or the plan and the samples do not
        fit in memory.
    """
    check_instance(model, FactorGraph, "model")
    n_samples = int(check_positive(n_samples, "n_samples", integer=True))
    rng = as_rng(rng)
    jt = plan(model, barren=True)
    require_memory(jt.memory_bytes() + 24.0 * n_samples * model.n,
                   f"n_samples = {n_samples} samples of {model.n} variables with "
                   f"{jt._what()}")
    fast = _compiled_passes.upward_log_messages(jt)
    logz, msgs = jt.upward() if fast is None else fast
    if logz == -np.inf:
        raise ValueError("model has Z = 0 (every state has zero weight, e.g. impossible "
                         "evidence): it cannot be sampled")
    tables = _compiled_passes.sampling_tables(jt, msgs)  # the rows are read in log space
    del msgs, fast
    out = np.empty((n_samples, model.n), dtype=np.int64)
    block = max(1, min(n_samples, 2**22 // model.n))
    for start in range(0, n_samples, block):
        u = rng.random((min(block, n_samples - start), model.n))
        out[start:start + len(u)] = _backward_sample(jt, tables, u).T
    return out


def _backward_sample(jt: EliminationPlan, tables: _compiled_passes.SamplingTables,
                     u: np.ndarray) -> np.ndarray:
    """The states of the rows of uniforms ``u`` (column ``i`` decides variable ``i``),
    node-major: evidence, variables in no factor, the plan's steps backward, then the
    dropped tables forward."""
    red = jt.red
    x = np.zeros(u.shape[::-1], dtype=np.int64)
    for v, val in jt.observed.items():
        x[v] = val
    for v in red.free:
        x[v] = np.minimum((u[:, v] * red.card[v]).astype(np.int64), red.card[v] - 1)
    _compiled_passes.backward_sample(tables, np.ascontiguousarray(u.T), x)
    for scope, table, child in reversed(red.pruned):
        a = scope.index(child)
        moved = np.moveaxis(table, a, -1)
        logits = moved[tuple(x[w] for w in scope if w != child)]
        logits = np.broadcast_to(logits, (x.shape[1], table.shape[a]))
        x[child] = draw_categorical(logits, u[:, child])
    return x
