"""pgmpy's bundled expert Bayesian networks (asia, alarm, ...), each an
:class:`ExpertNetwork`: read offline from the pgmpy wheel, put in a fixed topological order,
with exact ancestral samples, joint tables and ancestral subsets.

Variable ``i`` is column ``i`` of samples and digit ``i`` of the flat state index (``x_0``
least significant, the order of :mod:`mrflib.learning.fsll`). Reading a network needs
pgmpy (``pip install "mrflib[datasets]"``); nothing is downloaded.

A network is a data source of its own, apart from the papers' artificial data sets of
:mod:`mrflib.io.datasets`, which re-exports every name here (``datasets.expert_network``
is the path the book calls).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from mrflib._support.optional import optional_import
from mrflib._support.validation import as_rng, check_positive, is_choice, require_memory
from mrflib.io._tables import values_on
from mrflib.models.factor_graph import FactorGraph

__all__ = [
    "EXPERT_NETWORKS",
    "MAX_JOINT_STATES",
    "ExpertNetwork",
    "expert_network",
    "pgmpy_model",
    "pgmpy_network_file",
]

#: pgmpy's discrete networks used by the book (all bundled inside the pgmpy wheel).
EXPERT_NETWORKS = ("asia", "cancer", "earthquake", "survey", "sachs", "child", "alarm")
#: The largest joint table :meth:`ExpertNetwork.joint` builds (states).
MAX_JOINT_STATES = 2**26


@dataclass(frozen=True)
class ExpertNetwork:
    """A discrete Bayesian network, variables in a fixed topological order.

    Parameters
    ----------
    name, variables, cardinalities, parents, cpds, states
        The attributes below, in this order (``states`` defaults to ``()``: no names).

    Attributes
    ----------
    name : str
        The network's name.
    variables : tuple of str
        Variable names; variable ``i`` is column ``i`` of samples and digit ``i`` of the
        flat state index (``x_0`` least significant, the order of :mod:`mrflib.learning.fsll`).
    cardinalities : tuple of int
        Number of states of each variable.
    parents : tuple of tuple of int
        Indices of each variable's parents (all smaller than the variable's own index).
    cpds : tuple of ndarray
        ``cpds[i][c, k] = P(x_i = k | parents in configuration c)`` with
        ``c = sum_j x_{parents[j]} prod_{l<j} |X_{parents[l]}|`` (first parent least
        significant); shape ``(prod of parent cardinalities, |X_i|)``.
    states : tuple of tuple of str
        The names of each variable's values.
    n : int
        Number of variables.
    n_states : int
        Number of joint states, the product of the cardinalities.
    n_edges : int
        Number of arcs (parent-child pairs).
    """

    name: str
    variables: tuple[str, ...]
    cardinalities: tuple[int, ...]
    parents: tuple[tuple[int, ...], ...]
    cpds: tuple[np.ndarray, ...]
    states: tuple[tuple[str, ...], ...] = ()

    @property
    def n(self) -> int:
        """Number of variables."""
        return len(self.variables)

    @property
    def n_states(self) -> int:
        """Number of joint states, the product of the cardinalities (exact)."""
        return int(np.prod(np.array(self.cardinalities, dtype=object)))

    @property
    def n_edges(self) -> int:
        """Number of arcs (parent-child pairs)."""
        return int(sum(len(p) for p in self.parents))

    def to_factor_graph(self) -> FactorGraph:
        """The network as a :class:`~mrflib.models.factor_graph.FactorGraph` on the same variables.

        One factor per variable ``i``, scope ``(last parent, ..., first parent, i)`` and
        table ``log P(x_i | parents)`` (``-inf`` where the probability is 0): the layout of
        ``cpds`` read in C order.

        Returns
        -------
        FactorGraph
            Its log-weights are the joint log-probabilities (``log Z = 0``); its names are
            ``variables`` and ``states``.
        """
        scopes, tables = [], []
        for i, par in enumerate(self.parents):
            scope = (*par[::-1], i)
            with np.errstate(divide="ignore"):
                tables.append(np.log(self.cpds[i]).reshape([self.cardinalities[v]
                                                            for v in scope]))
            scopes.append(scope)
        return FactorGraph(self.cardinalities, scopes, tables, names=self.variables,
                           state_names=self.states or None)

    def _configuration(self, x: np.ndarray, i: int) -> np.ndarray:
        conf = np.zeros(x.shape[0], dtype=np.int64)
        stride = 1
        for v in self.parents[i]:
            conf += x[:, v].astype(np.int64) * stride
            stride *= self.cardinalities[v]
        return conf

    def sample(self, n_samples: int, *, rng: Any) -> np.ndarray:
        """Exact i.i.d. samples by ancestral sampling: ``int8 (n_samples, n)``.

        Needs no joint table.

        Parameters
        ----------
        n_samples : int
            Number of samples, positive.
        rng : numpy.random.Generator or int
            Generator or non-negative seed: one uniform per sample and variable, drawn
            variable by variable in the network's order; ``x_i`` is the first value whose
            cumulative conditional probability exceeds it.

        Returns
        -------
        ndarray of int8, shape (n_samples, n)
            The samples, column ``i`` the state index of variable ``i``.
        """
        n_samples = check_positive(n_samples, "n_samples", integer=True)
        rng = as_rng(rng)
        # the samples, the rows of cumulative tables, their comparison, uniforms, indices
        require_memory(n_samples * (self.n + 9.0 * max(self.cardinalities) + 56.0),
                       f"ExpertNetwork.sample: n_samples = {n_samples} samples of "
                       f"{self.n} variables")
        x = np.zeros((n_samples, self.n), dtype=np.int8)
        for i in range(self.n):
            rows = np.cumsum(self.cpds[i], axis=1)[self._configuration(x, i)]
            u = rng.random(n_samples) * rows[:, -1]
            x[:, i] = np.minimum((u[:, None] >= rows).sum(axis=1), self.cardinalities[i] - 1)
        return x

    def joint(self, max_states: int = MAX_JOINT_STATES) -> np.ndarray:
        """The exact joint ``p*(x) = prod_i P(x_i | parents)`` over all states, flat order.

        For a large network take the marginal of an ancestral subset
        (:meth:`ancestral_subset`), whose joint is the product of its own conditional tables.

        Parameters
        ----------
        max_states : int, default MAX_JOINT_STATES
            The most joint states allowed, positive (``2^26`` by default).

        Returns
        -------
        ndarray of float64, shape (n_states,)
            The joint distribution, ``x_0`` the least significant digit.

        Raises
        ------
        ValueError
            Before allocating, for a network with more than ``max_states`` states or whose
            table does not fit in memory.
        """
        max_states = check_positive(max_states, "max_states", integer=True)
        size = self.n_states
        if size > max_states:
            raise ValueError(
                f"network {self.name!r} has {size} states, more than max_states={max_states} "
                f"(its joint would need {size * 16} bytes); use ancestral_subset()"
            )
        require_memory(16.0 * size, f"the joint table of {self.name!r} ({size} states)")
        p = np.ones(1)
        for i in range(self.n):
            # p has axes (x_{i-1}, ..., x_0) in C order, i.e. x_0 least significant.
            shape = (1,) + tuple(self.cardinalities[:i][::-1])
            p = (self._cpd_on_axes(i) * p.reshape(shape)).reshape(-1)
        return p / p.sum()

    def _cpd_on_axes(self, i: int) -> np.ndarray:
        """``P(x_i | parents)`` broadcast on the axes ``(x_i, x_{i-1}, ..., x_0)``."""
        cards = self.cardinalities
        par = self.parents[i]
        t = self.cpds[i].reshape(tuple(cards[v] for v in par[::-1]) + (cards[i],))
        # axes (x_i, last parent, ..., first parent): the target axis of x_v is i - v,
        # increasing along this order, so inserting unit axes puts every parent in place.
        t = np.moveaxis(t, -1, 0)
        shape = [1] * (i + 1)
        shape[0] = cards[i]
        for v in par:
            shape[i - v] = cards[v]
        return t.reshape(shape)

    def ancestral_subset(self, variables: Any) -> ExpertNetwork:
        """The sub-network on the ancestral closure of ``variables`` (names or indices).

        An ancestrally closed set's marginal is the product of its own conditional tables,
        so the result's :meth:`joint` is the exact marginal of the full network.

        Parameters
        ----------
        variables : str or int or sequence of str or int
            Variable names or indices ``0..n-1``.

        Returns
        -------
        ExpertNetwork
            The sub-network, variables in this network's order (named ``"name[k]"`` when
            it keeps ``k < n`` variables).
        """
        start = [self._index(v) for v in np.atleast_1d(np.asarray(variables, dtype=object))]
        return self._restrict(sorted(self._closure(start)))

    def largest_ancestral_subset(self, max_states: int) -> ExpertNetwork:
        """A large, densely connected ancestrally closed subset with at most ``max_states``
        states.

        Greedy and deterministic: repeatedly add the ancestral closure of the variable whose
        closure brings the most arcs per nat of added state space (arcs / log of the added
        states), among those that keep the set within ``max_states`` (ties: the earliest
        variable); stop when nothing fits. Arcs rather than variables are counted so that a
        network with many roots (alarm) yields a connected piece, not a set of roots.

        Parameters
        ----------
        max_states : int
            The most joint states of the subset, positive; smaller than every root's
            cardinality is a ``ValueError``.

        Returns
        -------
        ExpertNetwork
            The sub-network (as :meth:`ancestral_subset` builds it).
        """
        max_states = check_positive(max_states, "max_states", integer=True)
        keep: set[int] = set()
        size = 1
        while True:
            best, best_score = None, -1.0
            for v in range(self.n):
                if v in keep:
                    continue
                add = self._closure([v]) - keep
                grow = int(np.prod([self.cardinalities[u] for u in add]))
                if size * grow > max_states:
                    continue
                score = sum(len(self.parents[u]) for u in add) / np.log(grow)
                if score > best_score:
                    best, best_score = add, score
            if best is None:
                break
            keep |= best
            size *= int(np.prod([self.cardinalities[u] for u in best]))
        if not keep:
            raise ValueError(f"max_states={max_states} is smaller than every root's cardinality")
        return self._restrict(sorted(keep))

    def _closure(self, start: list[int]) -> set[int]:
        keep: set[int] = set()
        todo = list(start)
        while todo:
            v = todo.pop()
            if v not in keep:
                keep.add(v)
                todo.extend(self.parents[v])
        return keep

    def _index(self, v: Any) -> int:
        if isinstance(v, str):
            if v not in self.variables:
                raise ValueError(f"variables must be names of {self.name!r}, got {v!r}")
            return self.variables.index(v)
        if (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                and 0 <= int(v) < self.n):
            return int(v)
        raise ValueError(f"variables must be names or indices 0..{self.n - 1}, got {v!r}")

    def _restrict(self, keep: list[int]) -> ExpertNetwork:
        new = {v: k for k, v in enumerate(keep)}
        return ExpertNetwork(
            name=f"{self.name}[{len(keep)}]" if len(keep) < self.n else self.name,
            variables=tuple(self.variables[v] for v in keep),
            cardinalities=tuple(self.cardinalities[v] for v in keep),
            parents=tuple(tuple(new[u] for u in self.parents[v]) for v in keep),
            cpds=tuple(self.cpds[v] for v in keep),
            states=tuple(self.states[v] for v in keep) if self.states else (),
        )


def pgmpy_network_file(name: str) -> Any:
    """The path of a network file bundled in the installed pgmpy wheel.

    pgmpy >= 1.0 deprecates ``pgmpy.utils.get_example_model`` for
    ``pgmpy.example_models.load_model``, which downloads from the Hugging Face hub; the
    bundled ``pgmpy/utils/example_models/<name>.bif.gz`` files are read here directly, so
    nothing needs the network.

    Parameters
    ----------
    name : str
        One of :data:`EXPERT_NETWORKS`.

    Returns
    -------
    importlib.resources.abc.Traversable
        The bundled ``<name>.bif.gz`` (a ``ValueError`` if pgmpy does not ship it; an
        ``ImportError`` naming the extra if pgmpy is not installed).
    """
    from importlib.resources import files

    if not is_choice(name, EXPERT_NETWORKS):
        raise ValueError(f"name must be one of {EXPERT_NETWORKS}, got {name!r}")
    optional_import("pgmpy", f"datasets.expert_network({name!r})", "datasets")
    path = files("pgmpy") / "utils" / "example_models" / f"{name}.bif.gz"
    if not path.is_file():
        raise ValueError(f"pgmpy does not bundle {name}.bif.gz (looked in {path})")
    return path


def pgmpy_model(name: str) -> Any:
    """The bundled network ``name`` as a pgmpy ``DiscreteBayesianNetwork`` (read offline).

    Parameters
    ----------
    name : str
        One of :data:`EXPERT_NETWORKS`.

    Returns
    -------
    pgmpy.models.DiscreteBayesianNetwork
        The network as pgmpy's BIF reader builds it.
    """
    import gzip
    import logging

    path = pgmpy_network_file(name)
    readwrite = optional_import("pgmpy.readwrite", f"datasets.expert_network({name!r})",
                                "datasets")
    logging.getLogger("pgmpy").setLevel(logging.ERROR)
    with gzip.open(path) as f:
        text = f.read().decode("utf-8")
    return readwrite.BIFReader(string=text).get_model()


def expert_network(name: str) -> ExpertNetwork:
    """One of pgmpy's bundled expert Bayesian networks (:data:`EXPERT_NETWORKS`).

    Parsed once per process (the tables are read-only). Variables are put in networkx's
    lexicographic topological order of the DAG, so the order is fixed by the network alone;
    each conditional table comes from the network's ``TabularCPD`` (layout: see
    :class:`ExpertNetwork`).

    Parameters
    ----------
    name : str
        One of :data:`EXPERT_NETWORKS`.

    Returns
    -------
    ExpertNetwork
        The network (the same object on every call in a process).
    """
    if not is_choice(name, EXPERT_NETWORKS):  # before the cache, which hashes name
        raise ValueError(f"name must be one of {EXPERT_NETWORKS}, got {name!r}")
    return _expert_network(name)


@functools.cache
def _expert_network(name: str) -> ExpertNetwork:
    import networkx as nx

    model = pgmpy_model(name)
    order = list(nx.lexicographical_topological_sort(model))
    pos = {v: i for i, v in enumerate(order)}
    cards, parents, cpds, states = [], [], [], []
    for v in order:
        cpd = model.get_cpds(v)
        par = sorted(cpd.variables[1:], key=pos.__getitem__)
        # the parents in our order, last parent first and v last, flattened with the first
        # parent least significant (C order of reversed axes)
        t = values_on(cpd, [*par[::-1], v])
        table = t.reshape(-1, t.shape[-1])
        cards.append(int(t.shape[-1]))
        parents.append(tuple(pos[u] for u in par))
        table = table / table.sum(axis=1, keepdims=True)
        table.setflags(write=False)
        cpds.append(table)
        states.append(tuple(str(s) for s in cpd.state_names[v]))
    return ExpertNetwork(name, tuple(order), tuple(cards), tuple(parents), tuple(cpds),
                         tuple(states))
