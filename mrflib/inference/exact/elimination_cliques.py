"""The cliques of variable elimination, the ground of every order search.

Summing out ``v`` in the interaction (moral) graph of ``P(x) ∝ Π_k ψ_k(x_{S_k})`` (two
variables adjacent when a factor holds both) makes a table over the clique ``C = {v} ∪ N_v``
and joins the neighbours ``N_v`` into a clique (the fill edges); an order's cliques and their
tables' sizes are its cost (Koller and Friedman, *Probabilistic Graphical Models*, sec. 9.4).
Here: the graph (:func:`interaction_graph`, :func:`components`), one elimination
(:func:`connect_neighbours`), the cliques of an order (:func:`order_cliques`) and the record
of an order found (:class:`Order`), which the greedy search of
:mod:`mrflib.inference.exact.elimination_order` and the contraction search of
:mod:`mrflib.inference.exact.contraction_search` both give.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Order", "interaction_graph", "components", "connect_neighbours", "order_cliques"]


class Order(NamedTuple):
    """An elimination order and its cost (``order`` is ``None`` when none fit the limit).

    Attributes
    ----------
    order : list of int or None
        The elimination order; ``None`` when no candidate fit the limit.
    heuristic : str
        The heuristic(s) that found it.
    log_max_table : float
        Log of the largest clique table's entries (where it stopped, when stopped).
    total_entries : float
        Entries of all clique tables (``inf`` when stopped).
    width : int
        Largest clique minus one (the stopping clique's, when stopped).
    cliques : list of list of int or None
        The order's cliques (:func:`order_cliques`), kept so a plan need not eliminate
        again; ``None`` when not computed.
    """

    order: list[int] | None
    heuristic: str
    log_max_table: float  # log of the largest clique table's entries (where it stopped)
    total_entries: float  # entries of all clique tables (inf when stopped)
    width: int  # largest clique minus one (the stopping clique's, when stopped)
    # the order's cliques (:func:`order_cliques`), kept so a plan need not eliminate again
    cliques: list[list[int]] | None = None


def interaction_graph(n: int, scopes: Iterable[Sequence[int]]) -> list[set[int]]:
    """Neighbour sets of the interaction (moral) graph: two variables are adjacent when
    some factor holds both.

    Parameters
    ----------
    n : int
        Number of variables.
    scopes : iterable of sequence of int
        The factors' variables.

    Returns
    -------
    list of set of int
        ``adj[v]``: the neighbours of ``v`` (never ``v`` itself).
    """
    adj: list[set[int]] = [set() for _ in range(n)]
    for s in scopes:
        for v in s:
            adj[v].update(s)
    for v in range(n):
        adj[v].discard(v)
    return adj


def components(adj: list[set[int]], nodes: Sequence[int]) -> list[list[int]]:
    """Connected components of the graph on ``nodes``.

    Parameters
    ----------
    adj : list of set of int
        Neighbour sets of the interaction graph (:func:`interaction_graph`).
    nodes : sequence of int
        The nodes; edges to other nodes are ignored.

    Returns
    -------
    list of list of int
        The components, each a sorted node list, ordered by smallest node.
    """
    # a plain search: the graphs are sets already, and building a sparse matrix for
    # scipy's labelling cost more than the search on the small models that call this most
    inside = set(nodes)
    seen: set[int] = set()
    out = []
    for root in sorted(inside):
        if root in seen:
            continue
        seen.add(root)
        comp, stack = [root], [root]
        while stack:
            for u in adj[stack.pop()]:
                if u in inside and u not in seen:
                    seen.add(u)
                    comp.append(u)
                    stack.append(u)
        out.append(sorted(comp))
    return out


def connect_neighbours(adj: Any, v: int) -> None:
    """Eliminate ``v`` from the neighbour sets ``adj``: its neighbours become a clique (the
    fill edges) and forget ``v``.

    Parameters
    ----------
    adj : list of set of int or dict of int to set of int
        Neighbour sets, changed in place (``adj[v]`` itself is left as it was).
    v : int
        The variable eliminated.
    """
    nb = adj[v]
    for u in nb:
        a = adj[u]
        a.discard(v)
        a |= nb
        a.discard(u)

#: ``log`` of the largest float: a table of more entries has a total of ``inf``.
_LOG_FLOAT_MAX = math.log(np.finfo(np.float64).max)


def order_cliques(adj: list[set[int]], order: Sequence[int], logc: Sequence[float],
                  limit: float = math.inf) -> tuple[list[list[int]] | None, float, float]:
    """Eliminate in ``order``: its cliques, the log of its largest table and the entries of
    all tables.

    Parameters
    ----------
    adj : list of set of int
        Neighbour sets of the interaction graph (:func:`interaction_graph`).
    order : sequence of int
        The elimination order; neighbours outside it are ignored.
    logc : sequence of float
        ``log |X_v|`` of every variable.
    limit : float, default inf
        Log entries of a clique table past which elimination stops.

    Returns
    -------
    cliques : list of list of int or None
        ``cliques[t]`` is ``[order[t], *N_t]`` with ``N_t`` sorted by elimination position;
        ``None`` at the first clique whose log table size exceeds ``limit``.
    log_max_table : float
        The log entries of the largest table (0 for an empty order); when stopped, those
        of the clique that stopped it.
    total : float
        The entries of all tables (``inf`` past the float range); when stopped, the number
        of variables of the clique that stopped it.
    """
    pos = {v: t for t, v in enumerate(order)}
    local = {v: {u for u in adj[v] if u in pos} for v in order}
    out, biggest, total = [], -math.inf, 0.0
    for v in order:
        nb = local[v]
        size = logc[v] + sum(logc[u] for u in nb)
        biggest = max(biggest, size)
        if size > limit + 1e-9:
            return None, size, float(len(nb) + 1)
        # a table past float's range (no limit given): the total is beyond any memory
        total += math.exp(size) if size < _LOG_FLOAT_MAX else math.inf
        out.append([v, *sorted(nb, key=pos.__getitem__)])
        connect_neighbours(local, v)
    return out, (biggest if out else 0.0), total
