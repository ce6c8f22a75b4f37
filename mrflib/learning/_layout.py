"""The parameter layout of a factor graph's learners and the data's factor marginals.

Every factor-graph learner of :mod:`mrflib.learning.table_learners` (ML, pseudo-likelihood,
LAP) and of :mod:`mrflib.learning.stochastic_learning` works on one flat parameter vector:
the entries of every factor's log table in the normalized-potential gauge (Mizrahi et al.,
Definition 5), mapped to the tables by a sparse matrix. :class:`Layout` builds that map once
per structure (:func:`flat_tables` gives any parameter map the flat-table layout, and
:func:`model_of` the model of flat tables); :func:`data_marginals` gives the data's factor
marginals, the sufficient statistics of eq. (5) of the LAP paper, by one counting pass
(:func:`factor_counts`; :func:`data_marginals_numpy` is its plain numpy reference).
:func:`check_structure` and :func:`check_data` check the learners' arguments. The public
front is :func:`mrflib.learning.parameter_layout.data_factor_marginals`.
"""

from __future__ import annotations

import math
from operator import attrgetter
from typing import Any

import numpy as np

from mrflib._support.threads import parallel_ok
from mrflib._support.validation import require_memory
from mrflib.inference.sampling.chains import pack
from mrflib.learning import _stochastic_learning_kernels as _sk
from mrflib.learning._layout_groups import layout_matrix, layout_size, layout_terms
from mrflib.learning.potentials import (
    clique_owners,
    factor_graph_potentials,
)
from mrflib.models._checks import check_states
from mrflib.models._factor_bulk import group_by, table_rows
from mrflib.models.factor_graph import FactorGraph

__all__ = ["Layout", "flat_tables", "model_of", "check_structure", "check_data",
           "data_marginals", "factor_counts", "data_marginals_numpy"]


class Layout:
    """The normalized parameterization of a structure: ``θ`` and the map ``t = A θ``.

    Parameters
    ----------
    structure : FactorGraph
        The scopes and cardinalities (its tables are not used).

    Attributes
    ----------
    structure, card, scopes, shapes, offsets
        The flat-table layout of the structure (:func:`flat_tables`).
    terms : list of tuple
        The cliques of ``θ`` in order, each a clique of some scope.
    owner : list of int
        The factor that holds each clique's potential.
    term_offsets : ndarray of int64
        Clique ``c``'s parameters at ``θ[term_offsets[c]:term_offsets[c + 1]]``.
    A : scipy.sparse.csr_matrix
        The map from ``θ`` to the flat tables.
    one_term_per_entry : bool
        Whether every table entry holds at most one entry of ``θ``.
    """

    def __init__(self, structure: FactorGraph) -> None:
        _require_layout_memory(structure)
        flat_tables(self, structure)
        if max(map(len, self.scopes), default=0) > 24:
            clique_owners(self.scopes)  # refuses the first scope of more than 24 variables
        terms = layout_terms(self.scopes, self.card)
        self.terms = terms["terms"]
        self.owner = terms["owner"].tolist()
        self.term_offsets = np.concatenate([[0], np.cumsum(terms["free"])]).astype(np.int64)
        self.A = layout_matrix(terms, self.offsets, self.term_offsets,
                               (int(self.offsets[-1]), self.n_params), _term_entries)
        # Every table entry holds at most one entry of θ (each factor owns only its whole
        # scope): then A θ is already normalize(A θ), bit for bit (its reference entries
        # are exact zeros, so Definition 5's differences give back θ exactly).
        self.one_term_per_entry = bool(np.all(np.diff(self.A.indptr) <= 1))

    @property
    def n_params(self) -> int:
        return int(self.term_offsets[-1])

    def tables(self, theta: np.ndarray) -> np.ndarray:
        return self.A @ theta

    def model(self, theta: np.ndarray) -> FactorGraph:
        return model_of(self, self.tables(theta))

    def theta(self, model: FactorGraph) -> np.ndarray:
        """``θ`` of a model over the same scopes (its normalized potentials)."""
        V = factor_graph_potentials(model)
        return np.concatenate([V[B][(slice(1, None),) * len(B)].ravel() for B in self.terms]
                              or [np.zeros(0)])


def flat_tables(lay: Any, structure: FactorGraph) -> None:
    """Give ``lay`` the flat-table layout of ``structure``: ``structure``, ``card``,
    ``scopes``, ``shapes`` and ``offsets`` (factor ``k``'s raveled table at
    ``offsets[k]:offsets[k + 1]``)."""
    lay.structure = structure
    lay.card = structure.cardinalities
    lay.scopes = structure.scopes
    lay.shapes = list(map(attrgetter("shape"), structure.log_tables))
    sizes = np.fromiter(map(attrgetter("size"), structure.log_tables), dtype=np.int64,
                        count=len(lay.shapes))
    lay.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    lay.shape_groups, lay.shape_where = group_by(lay.shapes)


def model_of(lay: Any, flat: np.ndarray) -> FactorGraph:
    """The factor graph over ``lay``'s scopes whose log tables are ``flat`` (every table
    raveled, in factor order at ``lay.offsets``)."""
    views: list[np.ndarray] = []
    for shape, idx in lay.shape_groups:  # the tables of one shape gathered at once
        block = flat[lay.offsets[idx][:, None] + np.arange(math.prod(shape))]
        views.extend(table_rows(block.reshape(len(idx), *shape)))
    return FactorGraph._from_checked(lay.card, lay.scopes,
                                     tuple(map(views.__getitem__, lay.shape_where)))


def _require_layout_memory(structure: FactorGraph) -> None:
    """Refuse before building it a layout that cannot fit: each factor's index grid
    (``np.indices``, 8 bytes per axis and entry) and the map ``A``, whose non-zeros are at
    most ``Π_v (2|X_v| - 1) - Π_v |X_v|`` per factor (every non-empty clique ``B`` of the
    scope fills the entries with ``x_B ≠ 0``), at about 48 bytes each (COO then CSR)."""
    counted = layout_size(structure.scopes, structure.cardinalities)
    need, nnz = counted if counted is not None else _layout_size_exact(structure)
    require_memory(need + 48 * nnz, f"the parameters of the structure ({nnz} entries of its "
                   "map from normalized potentials to tables)")


def _layout_size_exact(structure: FactorGraph) -> tuple[int, int]:
    """:func:`~mrflib.learning._layout_groups.layout_size` factor by factor in Python
    integers, for products beyond ``int64``."""
    need, nnz = 0, 0
    for s, t in zip(structure.scopes, structure.log_tables):
        cards = [int(structure.cardinalities[v]) for v in s]
        nnz += math.prod(2 * c - 1 for c in cards) - t.size
        need = max(need, 8 * len(s) * t.size)
    return need, nnz


def _term_entries(shape: tuple, axes: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The entries of a table of ``shape`` where the clique's ``axes`` are all non-zero
    (flat positions) and the position of each one's ``x_B - 1`` in the clique's block of
    ``θ`` (the potential broadcast over the table's other axes)."""
    grid = np.indices(shape).reshape(len(shape), -1)
    xB = grid[list(axes)]
    ok = np.all(xB > 0, axis=0)
    return np.flatnonzero(ok), np.ravel_multi_index(xB[:, ok] - 1,
                                                    [shape[a] - 1 for a in axes])


def check_structure(structure: Any, name: str = "structure") -> FactorGraph:
    """``structure`` if it is a FactorGraph, else a ``TypeError`` naming ``name``."""
    if not isinstance(structure, FactorGraph):
        raise TypeError(f"{name} must be a FactorGraph, got {type(structure).__name__}")
    return structure


def check_data(data: Any, structure: FactorGraph) -> np.ndarray:
    """The data of a learner on ``structure``: states of shape ``(N, n)``, ``N >= 1``, as
    ``int64``; a ``ValueError`` naming ``data`` otherwise."""
    x = check_states(data, structure.cardinalities, "data")
    if np.ndim(data) != 2:
        raise ValueError(f"data must have shape (N, {structure.n}), got {np.shape(data)}")
    if x.shape[0] == 0:
        raise ValueError("data must contain at least one sample (got 0 rows)")
    return x


def data_marginals(lay: Layout, x: np.ndarray) -> np.ndarray:
    """The data's factor marginals, flat as ``θ``'s tables: the counts of one pass over
    the rows by blocks of factors (:func:`factor_counts`), nothing of size ``N`` by the
    factor count. :func:`data_marginals_numpy` is the plain numpy reference."""
    # the states in their own integer type: no copy of a large data set to int64
    x = np.asarray(x)
    x = np.ascontiguousarray(x, dtype=x.dtype if x.dtype.kind in "iu" else np.int64)
    scopes = pack(lay.structure, np.zeros(0))[4:]
    return factor_counts(x, *scopes, int(lay.offsets[-1])) / x.shape[0]


def factor_counts(x: np.ndarray, fptr: np.ndarray, fvars: np.ndarray, fstride: np.ndarray,
                  offsets: np.ndarray, total: int) -> np.ndarray:
    """The counts of every factor's states over the rows of ``x`` (integers, C order), in
    the flat tables' layout (:func:`mrflib.inference.sampling.chains.pack`'s scopes), on
    every core when the work is large and the cores are idle."""
    work = float(x.shape[0]) * len(fvars)
    if parallel_ok(work):
        return _sk.factor_counts_blocked(x, fptr, fvars, fstride, offsets, total)
    counts = np.zeros(total, dtype=np.int64)
    _sk.count_factors(x, fptr, fvars, fstride, offsets, counts, 0, len(offsets))
    return counts


def data_marginals_numpy(lay: Layout, x: np.ndarray) -> np.ndarray:
    """Plain numpy reference of :func:`data_marginals`: one ``bincount`` per factor, so
    the temporaries are one column of ``N`` codes, never ``N`` by the factor count."""
    counts = np.empty(int(lay.offsets[-1]), dtype=np.int64)
    for k, s in enumerate(lay.scopes):
        local = (np.ravel_multi_index(tuple(x[:, v] for v in s), lay.shapes[k]) if s
                 else np.zeros(x.shape[0], dtype=np.int64))
        counts[lay.offsets[k]:lay.offsets[k + 1]] = np.bincount(
            local, minlength=int(lay.offsets[k + 1] - lay.offsets[k]))
    return counts / x.shape[0]
