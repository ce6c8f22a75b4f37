"""Test models on factor graphs: Potts lattices, lattices of triangle cliques, and a sampler.

The generators build :class:`~mrflib.models.factor_graph.FactorGraph` models whose cliques go
beyond the ±1 pairwise Ising model (``q``-state variables, factors over three variables),
the models LAP's Theorem 10 covers (individually parameterized cliques of any size); the
learners, the book and the benchmarks draw their data from them. :func:`gibbs` samples any
positive factor graph (exact samples of small models come from :mod:`mrflib.inference.exact`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.validation import as_rng, check_positive, check_real, is_choice, require_memory
from mrflib.models import _lattices_kernels as _k
from mrflib.models import graphs
from mrflib.models.factor_graph import MAX_LOG_WEIGHT, FactorGraph, _check_states

__all__ = ["COUPLINGS", "potts_lattice", "triangle_lattice", "triangle_cliques", "gibbs",
           "gibbs_numpy"]


def _check_scales(total: float, names: str) -> None:
    """Refuse scales whose tables' log-weights could add up past ``MAX_LOG_WEIGHT`` (1e308
    would overflow ``rng.uniform`` itself) before anything is drawn."""
    if not total <= MAX_LOG_WEIGHT:
        raise ValueError(f"{names}: the log-weights they allow add up to {total:.3g} over the "
                         f"lattice, beyond {MAX_LOG_WEIGHT:g} (log Z would overflow float64)")


#: How :func:`potts_lattice` draws its couplings ``J_ij``.
COUPLINGS = ("ferromagnetic", "mixed")


def potts_lattice(
    rows: int, cols: int, q: int, *, coupling: float = 0.5, field_scale: float = 0.2,
    rng: Any = 0, couplings: str = "ferromagnetic",
) -> FactorGraph:
    """A ``q``-state Potts model on the ``rows x cols`` square lattice, with random fields.

    ``log P(x) = Σ_i h_i(x_i) + Σ_(ij) J_ij [x_i = x_j] - log Z``: one unary factor per
    variable (``h_i`` uniform on ``[-field_scale, field_scale]``, in node order), then one
    pairwise factor per edge of :func:`mrflib.models.graphs.square_grid` (edge order) with
    ``J_ij`` uniform on ``[0, 2 coupling]`` (``couplings="ferromagnetic"``, mean
    ``coupling``) or on ``[-coupling, coupling]`` (``"mixed"``: frustrated, as a benchmark
    of exact inference wants).
    """
    if not is_choice(couplings, COUPLINGS):
        raise ValueError(f"couplings must be one of {COUPLINGS}, got {couplings!r}")
    rows = check_positive(rows, "rows", integer=True)
    cols = check_positive(cols, "cols", integer=True)
    q = check_positive(q, "q", integer=True)
    if q < 2:
        raise ValueError(f"q must be at least 2, got {q}")
    coupling = check_real(coupling, "coupling")
    field_scale = check_positive(field_scale, "field_scale", allow_zero=True)
    rng = as_rng(rng)
    n = rows * cols
    edges = graphs.square_grid(rows, cols)
    _check_scales(n * field_scale + len(edges) * 2.0 * abs(coupling), "coupling and field_scale")
    require_memory(8.0 * (n * q + len(edges) * q * q), f"the tables of a Potts lattice of "
                   f"rows x cols = {rows} x {cols} variables with q = {q} states")
    fields = rng.uniform(-field_scale, field_scale, (n, q))
    low = 0.0 if couplings == "ferromagnetic" else -coupling
    J = rng.uniform(low, low + 2.0 * coupling, len(edges))
    scopes = [(i,) for i in range(n)] + [(int(i), int(j)) for i, j in edges]
    tables = list(fields) + [Jk * np.eye(q) for Jk in J]
    return FactorGraph(np.full(n, q, dtype=np.int64), scopes, tables)


def triangle_cliques(rows: int, cols: int) -> list[tuple[int, int, int]]:
    """The triangles of the ``rows x cols`` lattice with one diagonal per cell.

    Cell ``(r, c)`` (nodes row-major) gives ``(a, b, d)`` and ``(a, d, e)`` with ``a``
    its top-left, ``b`` top-right, ``e`` bottom-left and ``d`` bottom-right node: the
    triangular lattice on a square grid, ``2 (rows - 1)(cols - 1)`` triangles.
    """
    rows = check_positive(rows, "rows", integer=True)
    cols = check_positive(cols, "cols", integer=True)
    require_memory(200.0 * rows * cols, f"the triangles of a rows x cols = {rows} x {cols} "
                   "lattice")
    out = []
    for r in range(rows - 1):
        for c in range(cols - 1):
            a, b = r * cols + c, r * cols + c + 1
            e, d = a + cols, b + cols
            out += [(a, b, d), (a, d, e)]
    return out


def triangle_lattice(
    rows: int, cols: int, q: int = 2, *, scale: float = 0.5, field_scale: float = 0.2,
    rng: Any = 0,
) -> FactorGraph:
    """A lattice of triangle cliques with free three-variable tables.

    One unary factor per variable (entries uniform on ``[-field_scale, field_scale]``),
    then one factor per triangle of :func:`triangle_cliques` whose ``q^3`` log-table
    entries are uniform on ``[-scale, scale]``: every clique is individually
    parameterized, so LAP's Theorem 10 applies with cliques of three variables.
    """
    q = check_positive(q, "q", integer=True)
    if q < 2:
        raise ValueError(f"q must be at least 2, got {q}")
    scale = check_positive(scale, "scale", allow_zero=True)
    field_scale = check_positive(field_scale, "field_scale", allow_zero=True)
    rng = as_rng(rng)
    tri = triangle_cliques(rows, cols)
    n = rows * cols
    _check_scales(n * field_scale + len(tri) * scale, "scale and field_scale")
    require_memory(8.0 * (n * q + len(tri) * q**3), f"the tables of a triangle lattice of "
                   f"rows x cols = {rows} x {cols} variables with q = {q} states")
    scopes = [(i,) for i in range(n)] + tri
    tables = list(rng.uniform(-field_scale, field_scale, (n, q)))
    tables += list(rng.uniform(-scale, scale, (len(tri), q, q, q)))
    return FactorGraph(np.full(n, q, dtype=np.int64), scopes, tables)


def _plan(model: FactorGraph) -> tuple:
    """Packed scopes, strides and incidence of a model, for :func:`_k.gibbs_sweep`."""
    strides = [[int(np.prod(t.shape[a + 1:])) for a in range(t.ndim)] for t in model.log_tables]
    sizes = [t.size for t in model.log_tables]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    fptr = np.concatenate([[0], np.cumsum([len(s) for s in model.scopes])]).astype(np.int64)
    fvars = np.array([v for s in model.scopes for v in s], dtype=np.int64)
    fstride = np.array([d for st in strides for d in st], dtype=np.int64)
    vf = model.variable_factors()
    vptr = np.concatenate([[0], np.cumsum([len(f) for f in vf])]).astype(np.int64)
    vfac = np.array([k for f in vf for k in f], dtype=np.int64)
    vstride = np.array([strides[k][model.scopes[k].index(i)] for i, f in enumerate(vf)
                        for k in f], dtype=np.int64)
    tables = np.concatenate([np.ravel(t) for t in model.log_tables])
    return tables, vptr, vfac, vstride, fptr, fvars, fstride, offsets


def _start(model, n_samples, sweeps, rng, init):
    if not isinstance(model, FactorGraph):
        raise ValueError(f"model must be a FactorGraph, got {type(model).__name__}")
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    sweeps = check_positive(sweeps, "sweeps", integer=True, allow_zero=True)
    rng = as_rng(rng)
    card = model.cardinalities
    require_memory(8.0 * (float(n_samples) + float(card.max())) * (2 * model.n + 4),
                   f"n_samples = {n_samples} Gibbs chains of {model.n} variables")
    if init is None:
        x = np.floor(rng.random((n_samples, model.n)) * card).astype(np.int64)
    else:
        x = _check_states(init, card, "init").copy()
        if x.shape[0] != n_samples:
            raise ValueError(f"init must have {n_samples} rows, got {x.shape[0]}")
    return x, sweeps, rng


def _in_support(model: FactorGraph, x: np.ndarray) -> np.ndarray:
    """``x``, if every chain ended in a state of positive weight; else a ``ValueError``
    (a conditional with every state at zero weight: ``Z = 0``, or an impossible ``init``
    the chain cannot leave), never zero-weight states returned as samples."""
    with np.errstate(invalid="ignore"):
        stuck = np.flatnonzero(model.log_weight(x) == -np.inf) if len(x) else []
    if len(stuck):
        raise ValueError(f"model: {len(stuck)} of {len(x)} Gibbs chains ended in a state of "
                         f"zero weight (chain {int(stuck[0])}: {x[stuck[0]].tolist()}); every "
                         "state they reached had a conditional without a state of positive "
                         "weight (Z = 0, or an init the chains cannot leave)")
    return x


def gibbs(
    model: FactorGraph, n_samples: int, *, sweeps: int = 100, rng: Any = 0,
    init: Any = None,
) -> np.ndarray:
    """``n_samples`` independent Gibbs chains of a factor graph, ``sweeps`` sweeps each.

    Each chain starts at a uniform random state (or ``init``) and updates the variables
    in order ``0..n-1``, each from its conditional ``P(x_i | x_rest) ∝
    exp(Σ_{k ∋ i} θ_k(x_{S_k}))`` (numba kernel; :func:`gibbs_numpy` is its reference).
    Returns the final states, ``int64 (n_samples, n)``: approximately independent draws of
    ``P`` when ``sweeps`` exceeds the mixing time. Zero weights (``-inf``) are allowed
    as long as every conditional keeps a state of positive weight.
    """
    x, sweeps, rng = _start(model, n_samples, sweeps, rng, init)
    plan = _plan(model)
    card = np.ascontiguousarray(model.cardinalities, dtype=np.int64)
    for _ in range(sweeps):
        u = rng.random((model.n, n_samples))
        _k.gibbs_sweep(x, u, plan[0], *plan[1:], card)
    return _in_support(model, x)


def gibbs_numpy(
    model: FactorGraph, n_samples: int, *, sweeps: int = 100, rng: Any = 0,
    init: Any = None,
) -> np.ndarray:
    """Plain numpy reference of :func:`gibbs` (the same draws; vectorized over chains)."""
    x, sweeps, rng = _start(model, n_samples, sweeps, rng, init)
    card = model.cardinalities
    vf = model.variable_factors()
    flat = [np.ravel(t) for t in model.log_tables]
    for _ in range(sweeps):
        u = rng.random((model.n, n_samples))
        for i in range(model.n):
            c = int(card[i])
            score = np.zeros((n_samples, c))
            for k in vf[i]:
                t = model.log_tables[k]
                stride = int(np.prod(t.shape[model.scopes[k].index(i) + 1:]))
                idx = np.ravel_multi_index(tuple(x[:, v] for v in model.scopes[k]), t.shape)
                score += flat[k][(idx - x[:, i] * stride)[:, None]
                                 + stride * np.arange(c)[None, :]]
            cdf = np.cumsum(np.exp(score - score.max(axis=1, keepdims=True)), axis=1)
            x[:, i] = np.minimum((cdf < (u[i] * cdf[:, -1])[:, None]).sum(axis=1), c - 1)
    return _in_support(model, x)
