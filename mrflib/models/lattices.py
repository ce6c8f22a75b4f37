"""Test models on factor graphs: Potts lattices and lattices of triangle cliques.

The generators build :class:`~mrflib.models.factor_graph.FactorGraph` models whose cliques go
beyond the ±1 pairwise Ising model (``q``-state variables, factors over three variables),
the models LAP's Theorem 10 covers (individually parameterized cliques of any size); the
learners, the book and the benchmarks draw their data from them (exact samples of small
models from :mod:`mrflib.inference.exact`, Gibbs samples of any from
:mod:`mrflib.inference.sampling.chains`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.deprecation import warn_deprecated
from mrflib._support.validation import as_rng, check_positive, is_choice, require_memory
from mrflib.models import graphs
from mrflib.models.factor_graph import MAX_LOG_WEIGHT, FactorGraph

__all__ = ["COUPLINGS", "potts_lattice", "triangle_lattice", "triangle_cliques"]


class _Omitted:
    """The default of an ``rng`` whose omission is deprecated: the old seed 0 is used, with a
    :class:`FutureWarning` (``rng=0`` gives the same bits without one)."""

    def __repr__(self) -> str:
        return "<omitted>"


_OMITTED_RNG: Any = _Omitted()


def _seed(rng: Any, func: str) -> Any:
    """``rng``, or the old default seed 0 with a :class:`FutureWarning` when it was omitted."""
    if rng is _OMITTED_RNG:
        warn_deprecated(f"{func}() without rng=", f"{func}(..., rng=<seed or Generator>)",
                        stacklevel=4)
        return 0
    return rng


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
    rng: Any = _OMITTED_RNG, couplings: str = "ferromagnetic",
) -> FactorGraph:
    """A ``q``-state Potts model on the ``rows x cols`` square lattice, with random fields.

    ``log P(x) = Σ_i h_i(x_i) + Σ_(ij) J_ij [x_i = x_j] - log Z``: one unary factor per
    variable (``h_i`` uniform on ``[-field_scale, field_scale]``, in node order), then one
    pairwise factor per edge of :func:`mrflib.models.graphs.square_grid` (edge order).

    Parameters
    ----------
    rows : int
        Number of lattice rows, positive.
    cols : int
        Number of lattice columns, positive.
    q : int
        Number of states of every variable, at least 2.
    coupling : float, default 0.5
        ``>= 0``: the mean of the couplings ``J_ij`` (``"ferromagnetic"``) or the
        half-width of their range (``"mixed"``).
    field_scale : float, default 0.2
        ``>= 0``: the fields ``h_i`` are uniform on ``[-field_scale, field_scale]``.
    rng : numpy.random.Generator or int
        Generator or non-negative seed: the fields are drawn first, then the couplings.
        Omitting it is deprecated: seed 0 is used, with a :class:`FutureWarning`.
    couplings : {"ferromagnetic", "mixed"}, default "ferromagnetic"
        ``J_ij`` uniform on ``[0, 2 coupling]`` (``"ferromagnetic"``, mean ``coupling``) or
        on ``[-coupling, coupling]`` (``"mixed"``: frustrated, as a benchmark of exact
        inference wants).

    Returns
    -------
    FactorGraph
        ``rows * cols`` variables of ``q`` states; the unary factors in node order, then the
        pairwise factors in edge order.

    Raises
    ------
    ValueError
        If the scales let the log-weights add up past float64's range, or the tables would
        need more memory than is available.
    """
    rng = _seed(rng, "potts_lattice")
    if not is_choice(couplings, COUPLINGS):
        raise ValueError(f"couplings must be one of {COUPLINGS}, got {couplings!r}")
    rows = check_positive(rows, "rows", integer=True)
    cols = check_positive(cols, "cols", integer=True)
    q = check_positive(q, "q", integer=True)
    if q < 2:
        raise ValueError(f"q must be at least 2, got {q}")
    # the couplings' mean (ferromagnetic) or half-width (mixed): a negative one is no range
    coupling = check_positive(coupling, "coupling", allow_zero=True)
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
    scopes = list(zip(range(n))) + list(zip(edges[:, 0].tolist(), edges[:, 1].tolist()))
    tables = list(fields) + list(J[:, None, None] * np.eye(q))
    return FactorGraph(np.full(n, q, dtype=np.int64), scopes, tables)


def triangle_cliques(rows: int, cols: int) -> list[tuple[int, int, int]]:
    """The triangles of the ``rows x cols`` lattice with one diagonal per cell.

    Cell ``(r, c)`` (nodes row-major) gives ``(a, b, d)`` and ``(a, d, e)`` with ``a``
    its top-left, ``b`` top-right, ``e`` bottom-left and ``d`` bottom-right node: the
    triangular lattice on a square grid.

    Parameters
    ----------
    rows : int
        Number of lattice rows, positive.
    cols : int
        Number of lattice columns, positive.

    Returns
    -------
    list of tuple of (int, int, int)
        The ``2 (rows - 1)(cols - 1)`` triangles, cell by cell in row-major order.
    """
    rows = check_positive(rows, "rows", integer=True)
    cols = check_positive(cols, "cols", integer=True)
    require_memory(200.0 * rows * cols, f"the triangles of a rows x cols = {rows} x {cols} "
                   "lattice")
    a = (np.arange(rows - 1)[:, None] * cols + np.arange(cols - 1)[None, :]).ravel()
    b, e = a + 1, a + cols
    d = b + cols
    cells = np.stack([np.stack([a, b, d], axis=1), np.stack([a, d, e], axis=1)], axis=1)
    return list(map(tuple, cells.reshape(-1, 3).tolist()))


def triangle_lattice(
    rows: int, cols: int, q: int = 2, *, scale: float = 0.5, field_scale: float = 0.2,
    rng: Any = _OMITTED_RNG,
) -> FactorGraph:
    """A lattice of triangle cliques with free three-variable tables.

    One unary factor per variable (entries uniform on ``[-field_scale, field_scale]``),
    then one factor per triangle of :func:`triangle_cliques` whose ``q^3`` log-table
    entries are uniform on ``[-scale, scale]``: every clique is individually
    parameterized, so LAP's Theorem 10 applies with cliques of three variables.

    Parameters
    ----------
    rows : int
        Number of lattice rows, positive.
    cols : int
        Number of lattice columns, positive.
    q : int, default 2
        Number of states of every variable, at least 2.
    scale : float, default 0.5
        ``>= 0``: the triangle tables' log-entries are uniform on ``[-scale, scale]``.
    field_scale : float, default 0.2
        ``>= 0``: the unary log-entries are uniform on ``[-field_scale, field_scale]``.
    rng : numpy.random.Generator or int
        Generator or non-negative seed: the unary tables are drawn first, then the
        triangles'. Omitting it is deprecated: seed 0 is used, with a
        :class:`FutureWarning`.

    Returns
    -------
    FactorGraph
        ``rows * cols`` variables of ``q`` states; the unary factors in node order, then one
        factor per triangle of :func:`triangle_cliques`.

    Raises
    ------
    ValueError
        If the scales let the log-weights add up past float64's range, or the tables would
        need more memory than is available.
    """
    rng = _seed(rng, "triangle_lattice")
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
