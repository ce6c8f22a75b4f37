"""Gibbs sampling of discrete factor graphs: evidence, zero weights, many chains.

A sweep visits the unobserved variables ``0..n-1`` in order and redraws each from its
conditional ``P(x_i | x_rest) ∝ exp(Σ_{k ∋ i} θ_k(x_{S_k}))`` (a numba kernel;
:func:`gibbs_numpy` is its plain reference, the same uniforms in the same order). The
uniforms are drawn per sweep as ``rng.random((n, n_chains))`` (row ``i`` decides variable
``i``), so the result depends only on the seed.

A model whose factors all hold at most two variables (Potts, clock, any pairwise model with
fields, zero weights and evidence) is swept by the pairwise kernels of
:mod:`mrflib.inference.sampling._pairwise` instead, chosen by that structure alone: colour class by
colour class, each update drawing from a counter-based stream of its chain (one key per
chain drawn from ``rng``), so again the result depends only on the seed, not on the
threads; :func:`gibbs_numpy` follows the same path. The distribution is the same; the
bits differ from the general kernel's.

Zero weights (``-inf`` log entries: hard constraints, deterministic conditional tables) are
allowed. A chain never draws a state of zero weight given the rest, so a chain that starts
in a state of positive weight stays in the support; a chain is therefore never started
outside it. The uniform random start (or ``init``) of each chain that has zero weight is
replaced by an exact sample of the model where its junction tree fits
(:func:`mrflib.inference.exact.elimination.sample`; it proves ``Z = 0`` otherwise), else repaired by
min-conflicts sweeps (:func:`mrflib.inference.sampling._chains_kernels.repair_sweep`). Evidence
clamps
the observed variables (:meth:`~mrflib.models.factor_graph.FactorGraph.condition`); they are never
updated.

:func:`estimate_marginals` turns samples into marginals with standard errors by batch
means over chains (``batch_ids``); :func:`gibbs_marginals` does both, within a time
limit if asked. Exact i.i.d. samples of models that fit are :func:`mrflib.inference.exact.sample`.

The kernels read the model packed as flat arrays: ``pack`` and ``flat_tables`` of
:mod:`mrflib.inference.sampling._packing`, which the learners, SMCI and the MAP search reach
through this module too.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from mrflib._support.validation import as_rng, check_instance, check_positive, require_memory
from mrflib.inference._reduction import observed_states
from mrflib.inference.exact import elimination
from mrflib.inference.sampling import _chains_kernels as _k
from mrflib.inference.sampling import _pairwise
from mrflib.inference.sampling._counts import check_counts
from mrflib.inference.sampling._packing import flat_tables, pack
from mrflib.models._checks import check_states
from mrflib.models.factor_graph import FactorGraph

__all__ = ["gibbs", "advance", "sweep_order", "gibbs_numpy", "estimate_marginals",
           "gibbs_marginals", "timed_gibbs", "sweep_seconds", "EXACT_START_BYTES",
           "REPAIR_SWEEPS", "N_BATCHES", "SECONDS_PER_UPDATE", "SECONDS_PER_ENTRY"]

#: A zero-weight start is replaced by an exact sample when the junction tree's tables take
#: at most this many bytes; beyond, by min-conflicts repair sweeps.
EXACT_START_BYTES = 2.0**27
#: Min-conflicts sweeps tried before a start of positive weight is given up.
REPAIR_SWEEPS = 200
#: Batches of the batch-means standard errors (fewer when there are fewer rows).
N_BATCHES = 32
#: Seconds one chain's update of one variable is taken to cost when chains are sized to a
#: time limit, on top of :data:`SECONDS_PER_ENTRY` per table entry it reads: about three
#: times what a 30x30 Potts lattice measures on a loaded 2-core machine (0.4 us and 3 ns),
#: so that the sized chains fit their share of the limit on a slower one.
SECONDS_PER_UPDATE = 1e-6
SECONDS_PER_ENTRY = 1e-8


def _conditioned(model: Any, evidence: Any) -> tuple[FactorGraph, np.ndarray, dict]:
    """The model with ``evidence`` applied, the variables a sweep updates and the
    observed ones ``{variable: value}`` (evidence, one state, or one finite unary entry)."""
    if not isinstance(model, FactorGraph):
        raise TypeError(f"model must be a FactorGraph, got {type(model).__name__}")
    if evidence is not None:
        if not isinstance(evidence, Mapping):
            raise ValueError("evidence must be a mapping {variable: value} or None, got "
                             f"{type(evidence).__name__}")
        if evidence:
            model = model.condition(evidence)
    observed = observed_states(model)
    free = np.array([i for i in range(model.n) if i not in observed], dtype=np.int64)
    return model, free, observed


def _zero_rows(model: FactorGraph, x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.flatnonzero(model.log_weight(x) == -np.inf) if len(x) else np.zeros(0, int)


def _exact_starts(model: FactorGraph, count: int, rng: np.random.Generator
                  ) -> np.ndarray | None:
    """``count`` exact samples when the junction tree fits in :data:`EXACT_START_BYTES`
    (``ValueError`` when ``Z = 0``), else ``None``."""
    try:
        jt = elimination.plan(model, barren=True)
    except ValueError:  # refused for memory: too wide for an exact start
        return None
    if jt.memory_bytes() > EXACT_START_BYTES:
        return None
    try:
        return elimination.sample(model, count, rng=rng)
    except ValueError as err:
        raise ValueError("model has Z = 0 (every state has zero weight, e.g. impossible "
                         "evidence or contradictory constraints): it cannot be sampled"
                         ) from err


def _repair(model: FactorGraph, x: np.ndarray, free: np.ndarray, rng: np.random.Generator,
            plan: tuple) -> np.ndarray:
    """Min-conflicts sweeps on the rows ``x`` until each has positive weight."""
    card = np.ascontiguousarray(model.cardinalities, dtype=np.int64)
    bad = np.ones(len(x), dtype=np.int64)
    for _ in range(REPAIR_SWEEPS):
        u = rng.random((model.n, len(x)))
        _k.repair_sweep(x, u, plan[0], *plan[1:], card, free, bad)
        if not bad.any():
            return x
    raise ValueError(f"model: no state of positive weight found for {int(np.sum(bad > 0))} "
                     f"of {len(x)} Gibbs chains after {REPAIR_SWEEPS} min-conflicts sweeps "
                     "(the model may have Z = 0; its junction tree is too wide to decide "
                     "exactly); give init, a state of positive weight per chain")


def _start(model: FactorGraph, free: np.ndarray, observed: dict, n_chains: int,
           init: Any, rng: np.random.Generator, plan: tuple) -> np.ndarray:
    """The chains' first states: ``init`` or uniform, observed values set, and every state
    of zero weight replaced (exact sample or repair) or refused (``init``)."""
    card = model.cardinalities
    if init is None:
        x = np.floor(rng.random((n_chains, model.n)) * card).astype(np.int64)
    else:
        x = check_states(init, card, "init").copy()
        if x.shape[0] != n_chains:
            raise ValueError(f"init must have n_chains = {n_chains} rows, got {x.shape[0]}")
    for v, val in observed.items():
        if init is not None and np.any(x[:, v] != val):
            r = int(np.flatnonzero(x[:, v] != val)[0])
            raise ValueError(f"init[{r}, {v}] = {int(x[r, v])} contradicts the observed "
                             f"value {val} of variable {v}")
        x[:, v] = val
    # without a zero weight in the tables every state has positive weight
    zero = _zero_rows(model, x) if np.isneginf(plan[0]).any() else np.zeros(0, dtype=int)
    if len(zero) and init is not None:
        raise ValueError(f"init: {len(zero)} of {len(x)} rows have zero weight (row "
                         f"{int(zero[0])}: {x[zero[0]].tolist()}); a chain must start in a "
                         "state of positive weight")
    if len(zero):
        exact = _exact_starts(model, len(zero), rng)
        x[zero] = exact if exact is not None else _repair(model, x[zero], free, rng, plan)
    return x


def _schedule(burn_in: int, thin: int, per_chain: int) -> np.ndarray:
    """``record[s]``: the slot sweep ``s + 1`` records into, or ``-1``; the first sample
    is taken after ``max(burn_in, 1)`` sweeps, then one every ``thin``."""
    first = max(burn_in, 1)
    record = np.full(first + (per_chain - 1) * thin, -1, dtype=np.int64)
    record[first - 1::thin] = np.arange(per_chain)
    return record


def _setup(model, n_samples, burn_in, thin, n_chains, init, evidence, rng):
    model, free, observed = _conditioned(model, evidence)
    n_samples, burn_in, thin, n_chains, per_chain = check_counts(n_samples, burn_in, thin,
                                                                 n_chains)
    rng = as_rng(rng)
    # the recorded states, the chains, their uniforms and the packed structure, all
    # linear in the variables (8 bytes an entry)
    require_memory(8.0 * (per_chain * n_chains + 3.0 * n_chains + 2.0) * model.n
                   + 16.0 * sum(t.size for t in model.log_tables),
                   f"gibbs(n_samples={n_samples}, n_chains={n_chains}) on {model.n} variables")
    plan = pack(model)
    x = _start(model, free, observed, n_chains, init, rng, plan)
    return model, free, x, _schedule(burn_in, thin, per_chain), per_chain, rng, plan


def gibbs(
    model: FactorGraph, n_samples: int, *, burn_in: int, thin: int = 1,
    n_chains: int | None = None, init: Any = None, evidence: Mapping | None = None,
    rng: Any,
) -> np.ndarray:
    """Draw ``n_samples`` states of a factor graph by Gibbs sampling.

    ``n_chains`` chains (default: one per sample) start from uniformly random states (or
    ``init``; a state of zero weight is replaced, see the module's notes), run ``burn_in``
    sweeps (at least one), then each records a state every ``thin`` sweeps until
    ``n_samples`` are collected. Rows are ordered by recording time, then chain: row
    ``t * n_chains + c`` is chain ``c``'s ``t``-th sample (as
    :func:`mrflib.inference.sampling.gibbs`).

    Parameters
    ----------
    model : FactorGraph
        The model to sample.
    n_samples, burn_in, thin, n_chains
        As in :func:`mrflib.inference.sampling.gibbs`: states to draw, sweeps discarded
        first (keyword-only: choose it), sweeps between a chain's samples (default 1), and
        chains (at most ``n_samples``; default one per sample).
    init : array_like, shape (n_chains, n), optional
        Starting states, each of positive weight and agreeing with the evidence.
        Default: uniformly random.
    evidence : mapping or None, default None
        ``{variable: value}``: observed variables, clamped (never updated).
    rng : numpy.random.Generator or int
        The source of the starts and the uniforms.

    Returns
    -------
    ndarray of int64, shape (n_samples, n)
        The samples, row ``t * n_chains + c`` chain ``c``'s ``t``-th.

    Raises
    ------
    ValueError
        On bad input, and when ``Z = 0`` (no state of positive weight), or when none is
        found for a model too wide for the exact engine to decide.
    """
    model, free, x, record, per_chain, rng, plan = _setup(
        model, n_samples, burn_in, thin, n_chains, init, evidence, rng)
    card = np.ascontiguousarray(model.cardinalities, dtype=np.int64)
    out = _pairwise_run(plan, card, x, free, record, per_chain, rng, final=False)
    if out is not None:
        return out.reshape(-1, model.n)[:n_samples]
    out = np.empty((per_chain, len(x), model.n), dtype=np.int64)
    for slot in record:
        _sweep(x, rng, plan, card, free)
        if slot >= 0:
            out[slot] = x
    return out.reshape(-1, model.n)[:n_samples]


def _pairwise_run(plan: tuple, card: np.ndarray, x: np.ndarray, free: np.ndarray,
                  record: np.ndarray, n_slots: int, rng: np.random.Generator,
                  pairwise: _pairwise.Pairwise | None = None, reference: bool = False,
                  final: bool = True) -> np.ndarray | None:
    """The sweeps of ``record`` on a model whose factors all hold at most two variables,
    by the pairwise kernels (:mod:`mrflib.inference.sampling._pairwise`; ``reference``: their numpy
    twin), chains in place (``final`` false: ``x`` may be left as it was, for a caller
    that reads only the records), the records returned; ``None`` for any other model. One
    key per chain is drawn from ``rng``: it seeds the chain's counter-based stream."""
    pw = pairwise if pairwise is not None else _pairwise.structure(*plan[4:], card)
    if pw is None:
        return None
    w, logs = _pairwise.weights(pw, plan[0])
    keys = rng.integers(0, 2**64, size=len(x), dtype=np.uint64)
    order = _pairwise.sweep_order(pw, free)
    if reference:
        return _pairwise.run_numpy(pw, w, logs, x, order, keys, record, n_slots)
    return _pairwise.run(pw, w, logs, x, order, keys, record, n_slots, final)


def _sweep(x: np.ndarray, rng: np.random.Generator, plan: tuple, card: np.ndarray,
           free: np.ndarray) -> None:
    """One sweep of the chains ``x`` in place: the uniforms ``rng.random((n, chains))``
    (row ``i`` decides variable ``i``), then the kernel."""
    u = rng.random((x.shape[1], x.shape[0]))
    _k.gibbs_sweep(x, u, plan[0], *plan[1:], card, free)


def sweep_order(model: FactorGraph) -> np.ndarray:
    """The variables a sweep of :func:`gibbs` or :func:`advance` updates, in its order.

    Parameters
    ----------
    model : FactorGraph
        The model (no evidence: condition it first to clamp variables).

    Returns
    -------
    ndarray of int64
        The unobserved variables (a variable with one state, or one finite unary entry, is
        observed and never updated): colour class by colour class, each in index order, where
        every factor holds at most two variables; in index order otherwise.
    """
    model, free, _ = _conditioned(model, None)
    plan = pack(model)
    pw = _pairwise.structure(*plan[4:], np.ascontiguousarray(model.cardinalities,
                                                             dtype=np.int64))
    return free if pw is None else _pairwise.sweep_order(pw, free)


def advance(model: FactorGraph, chains: Any, n_sweeps: int, *, rng: Any,
            structure: tuple | None = None) -> np.ndarray:
    """Advance persistent Gibbs chains by ``n_sweeps`` sweeps of every variable, in place.

    The lean step of persistent chains (a learner's PCD or SMCI-PCD): no evidence, no
    schedule, no search for a start, so a call costs its sweeps and one pass over the
    tables. The draws are those :func:`gibbs` makes from ``init=chains`` (the same uniforms
    in the same order): ``advance(model, x, s, rng=g)`` leaves in ``x`` what
    ``gibbs(model, len(x), burn_in=s, init=x, rng=g)[-len(x):]`` returns, for chains of
    positive weight.

    Parameters
    ----------
    model : FactorGraph
        The model whose conditionals the sweeps draw from.
    chains : int64 array (M, n), C-contiguous
        States of positive weight (a chain of zero weight may stay there); updated in
        place.
    n_sweeps : int
        Sweeps of every variable (``0``: nothing is drawn).
    rng : numpy.random.Generator or int
        The source of the uniforms.
    structure : tuple or None, default None
        ``pack(model)[1:]`` of a model with the same scopes and cardinalities, kept by a
        caller that advances the chains under a sequence of models, so that only the
        tables are flattened per call.

    Returns
    -------
    ndarray
        ``chains`` itself.
    """
    if not isinstance(model, FactorGraph):
        raise TypeError(f"model must be a FactorGraph, got {type(model).__name__}")
    n_sweeps = check_positive(n_sweeps, "n_sweeps", integer=True, allow_zero=True)
    if (not isinstance(chains, np.ndarray) or chains.dtype != np.int64 or chains.ndim != 2
            or chains.shape[1] != model.n or not chains.flags.c_contiguous
            or not chains.flags.writeable):
        raise ValueError(f"chains must be a writeable C-contiguous int64 array of shape "
                         f"(M, {model.n}), got {type(chains).__name__} "
                         f"{getattr(chains, 'dtype', '')} {np.shape(chains)}")
    if chains.size and (chains.min() < 0 or np.any(chains >= model.cardinalities)):
        raise ValueError("chains must hold states 0..cardinality-1 of each variable")
    rng = as_rng(rng)
    if structure is None:
        plan = pack(model)
    else:
        plan = (flat_tables(model),) + tuple(structure)
    return advance_packed(chains, n_sweeps, rng, plan,
                          np.ascontiguousarray(model.cardinalities, dtype=np.int64))


def advance_packed(chains: np.ndarray, n_sweeps: int, rng: np.random.Generator, plan: tuple,
                   card: np.ndarray, pairwise: _pairwise.Pairwise | None = None
                   ) -> np.ndarray:
    """:func:`advance` on a model given as its :func:`pack`, nothing checked.

    For callers that keep the tables flat (a learner's steps) and whose chains are valid
    by construction.

    Parameters
    ----------
    chains : numpy.ndarray of int64, shape (M, n), C-contiguous
        The chains' states; updated in place.
    n_sweeps : int
        Sweeps of every variable.
    rng : numpy.random.Generator
        The source of the uniforms.
    plan : tuple
        :func:`pack` of the model (tables flattened in factor order).
    card : numpy.ndarray of int64, shape (n,)
        The model's cardinalities.
    pairwise : Pairwise or None, default None
        The model's pairwise structure (``mrflib.inference.sampling._pairwise.structure``), kept by
        a
        caller that advances chains under many models of one structure; else derived from
        ``plan`` when the model is pairwise.

    Returns
    -------
    numpy.ndarray
        ``chains`` itself.
    """
    free = np.arange(chains.shape[1], dtype=np.int64)
    if n_sweeps and _pairwise_run(plan, card, chains, free, np.full(n_sweeps, -1, np.int64),
                                  0, rng, pairwise) is not None:
        return chains
    for _ in range(n_sweeps):
        _sweep(chains, rng, plan, card, free)
    return chains


def advance_site_major(chains: np.ndarray, n_sweeps: int, rng: np.random.Generator,
                       plan: tuple, card: np.ndarray, pairwise: _pairwise.Pairwise
                       ) -> np.ndarray:
    """:func:`advance_packed` of a pairwise model on chains held site-major, in place.

    The layout of the pairwise kernels for a fixed number of states
    (:func:`mrflib.inference.sampling._pairwise.site_major`): persistent chains kept in it
    cost no conversion per call. The draws are those of :func:`advance_packed` on the
    same chains in rows.

    Parameters
    ----------
    chains : numpy.ndarray of uint8, shape (n, M), C-contiguous
        Row ``i``: the states of variable ``i`` in every chain; updated in place.
    n_sweeps : int
        Sweeps of every variable.
    rng : numpy.random.Generator
        The source of the chains' keys.
    plan : tuple
        :func:`pack` of the model (tables flattened in factor order).
    card : numpy.ndarray of int64, shape (n,)
        The model's cardinalities.
    pairwise : Pairwise
        The model's pairwise structure (``_pairwise.structure``).

    Returns
    -------
    numpy.ndarray
        ``chains`` itself.
    """
    if not n_sweeps:
        return chains
    w, logs = _pairwise.weights(pairwise, plan[0])
    keys = rng.integers(0, 2**64, size=chains.shape[1], dtype=np.uint64)
    order = _pairwise.sweep_order(pairwise, np.arange(chains.shape[0], dtype=np.int64))
    return _pairwise.run_site_major(pairwise, w, logs, chains, order, keys, n_sweeps)


def gibbs_numpy(
    model: FactorGraph, n_samples: int, *, burn_in: int, thin: int = 1,
    n_chains: int | None = None, init: Any = None, evidence: Mapping | None = None,
    rng: Any,
) -> np.ndarray:
    """Plain numpy reference of :func:`gibbs` (the same draws; vectorized over chains).

    Parameters
    ----------
    model : FactorGraph
        As in :func:`gibbs`.
    n_samples : int
        As in :func:`gibbs`.
    burn_in : int
        As in :func:`gibbs`.
    thin : int, default 1
        As in :func:`gibbs`.
    n_chains : int or None, default None
        As in :func:`gibbs`.
    init : array_like, shape (n_chains, n), optional
        As in :func:`gibbs`.
    evidence : mapping or None, default None
        As in :func:`gibbs`.
    rng : numpy.random.Generator or int
        As in :func:`gibbs`.

    Returns
    -------
    ndarray of int64, shape (n_samples, n)
        The samples :func:`gibbs` returns for the same arguments.
    """
    model, free, x, record, per_chain, rng, plan = _setup(
        model, n_samples, burn_in, thin, n_chains, init, evidence, rng)
    out = _pairwise_run(plan, np.ascontiguousarray(model.cardinalities, dtype=np.int64), x,
                        free, record, per_chain, rng, reference=True)
    if out is not None:
        return out.reshape(-1, model.n)[:n_samples]
    card = model.cardinalities
    vf = model.variable_factors()
    flat = [np.ravel(t) for t in model.log_tables]
    M = len(x)
    out = np.empty((per_chain, M, model.n), dtype=np.int64)
    for slot in record:
        u = rng.random((model.n, M))
        for i in free.tolist():
            c = int(card[i])
            score = np.zeros((M, c))
            for k in vf[i]:
                t = model.log_tables[k]
                stride = int(np.prod(t.shape[model.scopes[k].index(i) + 1:]))
                idx = np.ravel_multi_index(tuple(x[:, v] for v in model.scopes[k]), t.shape)
                score += flat[k][(idx - x[:, i] * stride)[:, None]
                                 + stride * np.arange(c)[None, :]]
            cdf = np.cumsum(np.exp(score - score.max(axis=1, keepdims=True)), axis=1)
            x[:, i] = np.minimum((cdf <= (u[i] * cdf[:, -1])[:, None]).sum(axis=1), c - 1)
        if slot >= 0:
            out[slot] = x
    return out.reshape(-1, model.n)[:n_samples]


# --------------------------------------------------------------------------- estimates
def batch_ids(n_samples: int, n_chains: int, n_batches: int = N_BATCHES) -> np.ndarray:
    """The batch of each row of :func:`gibbs`'s output (row ``t * n_chains + c``), for
    batch means.

    I.i.d. samples (``n_chains = n_samples``) make every grouping valid.

    Parameters
    ----------
    n_samples : int
        Rows of the output (positive).
    n_chains : int
        Chains that produced them (positive).
    n_batches : int, default 32
        Batches wanted (:data:`N_BATCHES`).

    Returns
    -------
    numpy.ndarray of int, shape (n_samples,)
        The batch of each row: whole chains, grouped into ``n_batches``
        (``n_chains >= n_batches``), or each chain cut into consecutive runs of its
        samples (fewer chains).
    """
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    n_chains = check_positive(n_chains, "n_chains", integer=True)
    rows = np.arange(n_samples)
    c, t = rows % n_chains, rows // n_chains
    if n_chains >= n_batches:
        return c * n_batches // n_chains
    per_chain = -(-n_samples // n_chains)
    cuts = max(1, min(per_chain, -(-n_batches // n_chains)))
    return c * cuts + t * cuts // per_chain


def _nonempty_batches(sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray,
                                                                      np.ndarray]:
    """The batches that hold rows: their sums and their counts as floats."""
    keep = counts > 0
    return sums[keep], counts[keep].astype(np.float64)


def batch_mean(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The mean over all rows from per-batch sums (the mean of
    :func:`batch_standard_errors`, without its errors).

    Parameters
    ----------
    sums : numpy.ndarray, shape (B, ...)
        Per-batch sums.
    counts : numpy.ndarray, shape (B,)
        Rows in each batch (empty batches are left out).

    Returns
    -------
    numpy.ndarray of float64, shape (...)
        The mean over all rows.
    """
    sums, counts = _nonempty_batches(sums, counts)
    return sums.sum(axis=0) / counts.sum()


def batch_standard_errors(sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """Mean and batch-means standard error from per-batch sums.

    ``se² = B/(B-1) Σ_b (n_b/N)² (m_b - m)²`` (batches of unequal sizes).

    Parameters
    ----------
    sums : numpy.ndarray, shape (B, ...)
        Per-batch sums.
    counts : numpy.ndarray, shape (B,)
        Rows in each batch (empty batches are left out).

    Returns
    -------
    mean : numpy.ndarray of float64, shape (...)
        The mean over all rows.
    standard_error : numpy.ndarray of float64, shape (...)
        Its batch-means standard error; ``nan`` with fewer than two batches.
    """
    sums, counts = _nonempty_batches(sums, counts)
    N = counts.sum()
    mean = sums.sum(axis=0) / N
    B = len(counts)
    if B < 2:
        return mean, np.full(mean.shape, np.nan)
    shape = (B,) + (1,) * (sums.ndim - 1)
    dev = sums / counts.reshape(shape) - mean
    var = B / (B - 1) * np.sum((counts.reshape(shape) / N) ** 2 * dev**2, axis=0)
    return mean, np.sqrt(var)


def estimate_marginals(samples: Any, cardinalities: Any, *, n_chains: int | None = None
                       ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Empirical marginals (plain Monte Carlo) of states and their batch-means standard
    errors.

    Parameters
    ----------
    samples : array_like of int, shape (N, n)
        States, ``0..cardinality-1`` per variable.
    cardinalities : array_like of int, shape (n,)
        The variables' numbers of states.
    n_chains : int or None, default None
        Chains of the rows as given to :func:`gibbs`; ``None``: i.i.d. rows.

    Returns
    -------
    marginals : list of numpy.ndarray
        One ``(|X_i|,)`` array of frequencies per variable.
    standard_errors : list of numpy.ndarray
        Their batch-means standard errors, same shapes.
    """
    card = np.asarray(cardinalities, dtype=np.int64)
    x = check_states(samples, card, "samples")
    N = len(x)
    n_chains = N if n_chains is None else check_positive(n_chains, "n_chains", integer=True)
    batch = batch_ids(N, min(n_chains, N))
    B = int(batch.max()) + 1
    counts = np.bincount(batch, minlength=B)
    means, ses = [], []
    for i, c in enumerate(card.tolist()):
        sums = np.bincount(batch * c + x[:, i], minlength=B * c).reshape(B, c)
        m, s = batch_standard_errors(sums.astype(np.float64), counts)
        means.append(m)
        ses.append(s)
    return means, ses


def gibbs_marginals(
    model: FactorGraph, *, n_samples: int, burn_in: int, n_chains: int | None = None,
    thin: int = 1, evidence: Mapping | None = None, time_limit: float | None = None,
    rng: Any,
) -> dict:
    """Marginals of a factor graph by Gibbs sampling, with batch-means standard errors.

    Without ``time_limit`` it is :func:`gibbs` then :func:`estimate_marginals`. With it,
    the chains run in rounds and stop when the next round would pass the limit (at least
    one round is run, so ``0`` gives one round), so the number of samples, not the seed
    alone, decides the bits. Without ``n_chains`` the chains are then as many as burn in
    within a quarter of the limit at the conservative cost of :func:`sweep_seconds` (at
    least :data:`N_BATCHES`, at most ``n_samples``), and each round takes at most a tenth
    of the limit at that cost.

    Parameters
    ----------
    model : FactorGraph
        The model to sample.
    n_samples : int
        Samples wanted (fewer when ``time_limit`` cuts the rounds short).
    burn_in : int
        Sweeps discarded before the first sample.
    n_chains : int or None, default None
        Chains, as in :func:`gibbs`; ``None``: see above.
    thin : int, default 1
        Sweeps between successive samples of one chain.
    evidence : mapping or None, default None
        ``{variable: value}``: observed variables, clamped.
    time_limit : float or None, default None
        Seconds the sampling may take; ``None``: no limit.
    rng : numpy.random.Generator or int
        The source of the starts and the uniforms.

    Returns
    -------
    dict
        ``{"marginals", "standard_errors", "n_samples", "burn_in", "seconds"}``: the
        marginals and standard errors as :func:`estimate_marginals` gives them, the
        samples used, ``burn_in`` the sweeps run before the first sample (fewer than asked
        when the limit cut it short) and the seconds taken.
    """
    start = time.perf_counter()
    if time_limit is None:
        x = gibbs(model, n_samples, burn_in=burn_in, thin=thin, n_chains=n_chains,
                  evidence=evidence, rng=rng)
        chains, burned = (len(x) if n_chains is None else n_chains), burn_in
    else:
        x, chains, burned = timed_gibbs(model, n_samples, burn_in=burn_in,
                                        time_limit=time_limit, rng=rng, thin=thin,
                                        n_chains=n_chains, evidence=evidence, start=start)
    means, ses = estimate_marginals(x, model.cardinalities, n_chains=chains)
    return {"marginals": means, "standard_errors": ses, "n_samples": len(x),
            "burn_in": burned, "seconds": time.perf_counter() - start}


def sweep_seconds(model: FactorGraph) -> float:
    """A conservative estimate of the seconds one Gibbs sweep of one chain takes.

    Parameters
    ----------
    model : FactorGraph

    Returns
    -------
    float
        :data:`SECONDS_PER_UPDATE` per variable plus :data:`SECONDS_PER_ENTRY` per table
        entry the sweep reads (each variable of a factor reads its own states' entries).
    """
    check_instance(model, FactorGraph, "model")
    entries = sum(int(model.cardinalities[v]) for s in model.scopes for v in s)
    return SECONDS_PER_UPDATE * model.n + SECONDS_PER_ENTRY * entries


def _chains_within(sweep: float, n_samples: int, burn_in: int, limit: float) -> int:
    """Chains whose burn-in takes at most a quarter of ``limit`` seconds at ``sweep``
    seconds a chain and sweep: between ``min(n_samples, N_BATCHES)`` (enough for the batch
    means) and ``n_samples`` (one chain per sample, the default without a limit). The
    count depends on the model and the limit only, never on a clock, so the same seed and
    limit start the same chains."""
    fit = 0.25 * limit / max(sweep * max(burn_in, 1), 1e-300)
    return int(max(min(n_samples, N_BATCHES), min(n_samples, fit)))


def timed_gibbs(model: FactorGraph, n_samples: int, *, burn_in: int, time_limit: float,
                rng: Any, thin: int = 1, n_chains: int | None = None,
                evidence: Mapping[Any, Any] | None = None, start: float | None = None
                ) -> tuple[np.ndarray, int, int]:
    """Samples of :func:`gibbs` within a time limit: rounds continuing the same chains.

    The burn-in runs in pieces of at most ten sweeps while half the limit lasts (a long
    burn-in of many chains would otherwise overrun a short limit alone), then the samples
    in rounds of at most a tenth of the limit at the conservative cost of
    :func:`sweep_seconds`, until the next round would pass the limit (at least one round
    is run, so ``0`` gives one round). The number of samples, not the seed alone, then
    decides the bits. Without ``n_chains`` the chains are as many as burn in within a
    quarter of the limit at that cost (at least :data:`N_BATCHES`, at most ``n_samples``).
    :func:`gibbs_marginals` and :func:`mrflib.inference.smci.regions.marginals` sample
    through it under a ``time_limit``.

    Parameters
    ----------
    model : FactorGraph
        The model to sample.
    n_samples : int
        Samples wanted (fewer when the limit cuts the rounds short).
    burn_in : int
        Sweeps discarded before the first sample (fewer when the limit cuts them short).
    time_limit : float
        Seconds the sampling may take, counted from ``start``.
    rng : numpy.random.Generator or int
        The source of the starts and the uniforms.
    thin : int, default 1
        Sweeps between successive samples of one chain.
    n_chains : int or None, default None
        Chains, as in :func:`gibbs`; ``None``: see above.
    evidence : mapping or None, default None
        ``{variable: value}``: observed variables, clamped.
    start : float or None, default None
        The :func:`time.perf_counter` time the limit counts from (a caller that did work
        of its own first gives its own start); ``None``: now.

    Returns
    -------
    samples : ndarray of int64, shape (N, n)
        The samples, ``N <= n_samples``.
    n_chains : int
        The chains run.
    burn_in : int
        The sweeps run before the first sample.
    """
    start = time.perf_counter() if start is None else start
    limit = check_positive(time_limit, "time_limit", allow_zero=True)
    n_samples, _, _, chains, _ = check_counts(n_samples, burn_in, thin, n_chains)
    rng = as_rng(rng)
    sweep = sweep_seconds(model)
    if n_chains is None:  # one chain per sample would make a short limit's burn-in alone
        chains = _chains_within(sweep, n_samples, burn_in, limit)  # overrun it many times
    piece = max(1, min(burn_in, 10))
    x = gibbs(model, chains, burn_in=piece, n_chains=chains, evidence=evidence, rng=rng)
    burned = piece
    while burned < burn_in and time.perf_counter() - start < 0.5 * limit:
        step = min(piece, burn_in - burned)
        x = gibbs(model, chains, burn_in=step, n_chains=chains, init=x, evidence=evidence,
                  rng=rng)
        burned += step
    # a round of at most a tenth of the limit (at the conservative cost), so that the
    # first one, which always runs, cannot overrun it
    affordable = int(min(64.0, 0.1 * limit / max(chains * sweep * thin, 1e-300)))
    per_round = chains * max(1, min(affordable, -(-n_samples // chains) // 8))
    got = [gibbs(model, per_round, burn_in=thin, thin=thin, n_chains=chains, init=x,
                 evidence=evidence, rng=rng)]
    done = per_round
    while done < n_samples:
        spent = time.perf_counter() - start
        if spent * (done + per_round) / done > limit:
            break
        take = min(per_round, n_samples - done)
        take = -(-take // chains) * chains
        got.append(gibbs(model, take, burn_in=thin, thin=thin, n_chains=chains,
                         init=got[-1][-chains:], evidence=evidence, rng=rng))
        done += take
    x = np.concatenate(got)[:n_samples]
    return x, chains, burned
