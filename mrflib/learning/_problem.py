"""The problem every learner of :func:`mrflib.learning.learners.fit` works on: the data and
the graph, validated once, with the data's moments and the structures the methods share
(:class:`Problem`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from mrflib._support.validation import check_positive, check_spins, is_choice
from mrflib.learning import _flow, _local
from mrflib.learning import _learners_kernels as _k
from mrflib.models.boltzmann import BoltzmannMachine, check_model
from mrflib.models.graphs import as_graph

__all__ = ["Problem", "problem_from_model"]


class Problem:
    """Validated data and graph, with the structures every method needs.

    ``x`` are the data (int8 spins), ``n`` the spins, ``graph`` the validated
    :class:`~mrflib.models.graphs.Graph`, ``edges``, ``E`` and the edge ends ``ei``,
    ``ej``, ``data_mean`` and ``data_pair`` the data's moments; the moments, the local
    objectives and the 1-SMCI pattern counts are computed on first use and cached.
    """

    def __init__(self, data, edges, n=None):
        if isinstance(edges, BoltzmannMachine):  # a machine as the structure: its graph
            edges, n = edges.graph, edges.n if n is None else n
        if n is not None:
            n = check_positive(n, "n", integer=True)
        arr = np.asarray(data)
        if n is None:
            if arr.ndim != 2:
                raise ValueError(f"data must have shape (N, n), got {arr.shape}")
            n = arr.shape[1]
        self.x = check_spins(data, n, "data")
        if self.x.shape[0] == 0:
            raise ValueError("data must contain at least one configuration")
        self.n = n
        self.graph = as_graph(edges, n)  # validated once; its CSR is cached
        self.edges = self.graph.edges
        self.E = self.edges.shape[0]
        self.ei = np.ascontiguousarray(self.edges[:, 0])
        self.ej = np.ascontiguousarray(self.edges[:, 1])
        self._local = {}

    @functools.cached_property
    def _moments(self) -> tuple[np.ndarray, np.ndarray]:
        """``(data_mean, data_pair)`` from exact integer sums in one pass, on first use:
        only the moment-matching methods read them, so a local method's first fit
        compiles no moment kernel."""
        s1, s2 = _k.data_moments(self.x, self.graph.structure)
        return s1 / self.x.shape[0], s2 / self.x.shape[0]

    @property
    def data_mean(self) -> np.ndarray:
        """The data's means ``<x_i>`` (n,)."""
        return self._moments[0]

    @property
    def data_pair(self) -> np.ndarray:
        """The data's pair moments ``<x_i x_j>`` (E,), edge by edge."""
        return self._moments[1]

    def smci1(self):
        """1-SMCI moments on these data from pattern counts (compressed once, cached)."""
        if "1-smci" not in self._local:
            self._local["1-smci"] = _local.Smci1Moments(self.x, self.graph)
        return self._local["1-smci"]

    def local(self, method):
        """The local objective of ``method`` on these data (compressed once, then cached)."""
        if not is_choice(method, self._local):
            self._local[method] = _local.LocalObjective(self.x, self.graph, method)
        return self._local[method]

    def solver_objective(self, method):
        """What L-BFGS maximises: the local objective, for MPF bounded above ``K = n e^200``
        (:class:`mrflib.learning._flow.BoundedFlow`: the same optimum, finite for every model)."""
        local = self.local(method)
        return _flow.BoundedFlow(local) if method == "mpf" else local

    def split(self, theta):
        return theta[: self.n], theta[self.n :]

    def model(self, theta):
        b, j = self.split(theta)
        return BoltzmannMachine(b.copy(), self.graph, j.copy())

    def trusted_model(self, theta):
        """The machine at ``theta`` on the problem's :class:`~mrflib.models.graphs.Graph`.

        The gradient loops build one machine per step; the graph was validated once in
        ``__init__`` and is shared, so the machine is built by the model's unchecked
        constructor with its CSR weights filled in.
        """
        b, j = self.split(theta)
        b, j = b.copy(), j.copy()
        w = j[self.graph.edge_ids]
        w.flags.writeable = False
        return BoltzmannMachine._from_checked(b, self.graph, j, weights=w)


def problem_from_model(model: Any, data: Any) -> Problem:
    """The problem of ``data`` on the graph and spins of the machine ``model``."""
    bm = check_model(model, "model")
    return Problem(data, bm.edges, bm.n)
