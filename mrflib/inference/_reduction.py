"""The reduction of a factor graph before elimination: observed variables clamped, barren
tables dropped.

As exact solvers do, an *observed* variable (one whose unary factor has a single finite
entry, as :meth:`~mrflib.models.factor_graph.FactorGraph.condition` makes, or a variable
with one state, :func:`observed_states`) is clamped and sliced out of every factor; a
factor normalized over a variable that no other factor holds (a conditional probability
table of an unobserved leaf) sums to one and may be dropped, recursively (barren
variables); a variable left without factors contributes ``log |X_v|``. :class:`Reduced`
is the model so reduced: the step the junction-tree engine
(:mod:`mrflib.inference.exact.elimination`) takes first, and the start of the mini-bucket,
belief-propagation and importance-sampling approximations, the samplers and the anytime
solver.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from mrflib.inference._factor_ops import logsumexp
from mrflib.models.factor_graph import FactorGraph, slice_factor

__all__ = ["CPT_TOLERANCE", "observed_states", "Reduced"]

#: A factor counts as a conditional probability table over ``c`` when ``|log Σ_{x_c} ψ| <=``
#: this for every configuration of its other variables (exported, and documented, as
#: :data:`mrflib.inference.exact.elimination.CPT_TOLERANCE`).
CPT_TOLERANCE = 1e-9


def observed_states(model: FactorGraph) -> dict[int, int]:
    """Variables fixed by the model: one state, or a unary factor with one finite entry
    (the first such factor of a variable gives its state).

    Parameters
    ----------
    model : FactorGraph
        The model (not checked).

    Returns
    -------
    dict of int to int
        ``{variable: state}`` of every fixed variable: what
        :meth:`~mrflib.models.factor_graph.FactorGraph.condition` leaves as evidence.
    """
    obs = {v: 0 for v in np.flatnonzero(model.cardinalities == 1).tolist()}
    unary = [k for k, s in enumerate(model.scopes) if len(s) == 1]
    if not unary:
        return obs
    # the unary tables at once: a model of thousands of them spends no call on each
    tables = [model.log_tables[k] for k in unary]
    sizes = np.fromiter((t.size for t in tables), dtype=np.int64, count=len(tables))
    starts = np.cumsum(sizes) - sizes
    finite = np.isfinite(np.concatenate(tables))
    counts = np.add.reduceat(finite, starts, dtype=np.int64)
    one = np.flatnonzero(counts == 1)
    at = np.flatnonzero(finite)[(np.cumsum(counts) - counts)[one]] - starts[one]
    for j, x in zip(one.tolist(), at.tolist()):
        v = model.scopes[unary[j]][0]
        if v not in obs:
            obs[v] = x
    return obs


def _is_cpt(table: np.ndarray, axis: int) -> bool:
    return bool(np.all(np.abs(logsumexp(table, axis)) <= CPT_TOLERANCE))


def _barren(scopes: list[tuple], tables: list[np.ndarray], n: int) -> list[tuple[int, int]]:
    """Factors to drop as barren CPTs, ``(factor, child)`` in the order they are dropped."""
    holders: list[set[int]] = [set() for _ in range(n)]
    for k, s in enumerate(scopes):
        for v in s:
            holders[v].add(k)
    dropped, work = [], list(range(len(scopes)))[::-1]
    alive = [True] * len(scopes)
    while work:
        k = work.pop()
        if not alive[k]:
            continue
        s = scopes[k]
        child = next((c for a, c in enumerate(s)
                      if len(holders[c]) == 1 and _is_cpt(tables[k], a)), None)
        if child is None:
            continue
        alive[k] = False
        dropped.append((k, child))
        for v in s:
            holders[v].discard(k)
            if len(holders[v]) == 1:
                work.append(next(iter(holders[v])))
    return dropped


class Reduced:
    """The model after evidence and (optionally) barren pruning.

    Parameters
    ----------
    model : FactorGraph
        The model (not checked).
    barren : bool
        Drop the barren conditional probability tables (for ``log Z`` and sampling).

    Attributes
    ----------
    card : ndarray of int
        The model's cardinalities.
    observed : dict of int to int
        The fixed variables (:func:`observed_states`), sliced out of every factor.
    const : float
        The log-weight of the factors sliced to constants.
    scopes, tables : list
        The factors left, each sliced at the observed values (a view of the model's
        table where nothing was sliced).
    origin : list of int
        The model's factor of each factor left.
    pruned : list of (tuple, ndarray, int)
        The dropped barren tables, ``(scope, table, child)`` in the order they were dropped.
    active : list of int
        The variables some factor left holds.
    free : list of int
        The variables no factor holds, neither observed nor the child of a dropped table.
    free_log : float
        ``Σ log |X_v|`` over ``free``: what they add to ``log Z``.
    """

    def __init__(self, model: FactorGraph, barren: bool) -> None:
        self.card = model.cardinalities
        self.observed = observed_states(model)
        self.const = 0.0
        scopes, tables, origin = [], [], []
        for k, (s, t) in enumerate(zip(model.scopes, model.log_tables)):
            s2, t2 = slice_factor(s, t, self.observed)
            if s2:
                scopes.append(s2)
                tables.append(t2)  # the table or a view of it: an array
                origin.append(k)
            else:
                self.const += float(t2)
        self.pruned: list[tuple[tuple, np.ndarray, int]] = []
        if barren:
            drop = _barren(scopes, tables, model.n)
            self.pruned = [(scopes[k], tables[k], c) for k, c in drop]
            gone = {k for k, _ in drop}
            keep = [k for k in range(len(scopes)) if k not in gone]
            scopes, tables, origin = ([x[k] for k in keep] for x in (scopes, tables, origin))
        self.scopes, self.tables, self.origin = scopes, tables, origin
        held = {v for s in scopes for v in s}
        summed = {c for _, _, c in self.pruned}  # children of dropped CPTs: they sum to one
        self.active = sorted(held)
        self.free = [v for v in range(model.n)
                     if v not in held and v not in self.observed and v not in summed]
        # each free variable multiplies Z by its number of states (a max by one)
        self.free_log = float(sum(math.log(self.card[v]) for v in self.free))

    def factor_tables(self, model: FactorGraph,
                      beliefs: Iterable[tuple[int, np.ndarray]]) -> list[np.ndarray]:
        """Tables shaped like ``model``'s factors from the beliefs ``(k, b_k)`` of reduced
        factors: each factor a point mass on its observed axes, its reduced factor's belief
        at the observed values (a factor sliced to a constant: the point mass alone)."""
        obs = self.observed
        at = lambda scope: tuple(obs[v] if v in obs else slice(None) for v in scope)  # noqa: E731
        out = []
        for s, t in zip(model.scopes, model.log_tables):
            full = np.zeros(t.shape)
            full[at(s)] = 1.0
            out.append(full)
        for k, b in beliefs:
            out[self.origin[k]][at(model.scopes[self.origin[k]])] = b
        return out
