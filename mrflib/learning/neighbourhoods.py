"""Neighbourhoods and cliques of LAP (Mizrahi, de Freitas & Tenorio, section 4).

The 1-neighbourhood ``A_Q`` of a clique (Definition 7), maximal cliques (section 4.5),
the path-connected pairs of a marginal (Definition 8, Proposition 9) and the packed
clique lists the LAP kernels take. Re-exported by :mod:`mrflib.learning.lap`.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from mrflib._support.validation import check_edges, check_nodes, check_positive
from mrflib.models import graphs

__all__ = [
    "one_neighbourhood",
    "one_neighbourhoods",
    "maximal_cliques",
    "path_connected_pairs",
]


def clique_list(cliques: Any, name: str = "cliques") -> list[np.ndarray]:
    """Cliques as a list of sorted distinct int64 arrays (an (E, 2) edge array is allowed)."""
    if isinstance(cliques, np.ndarray) and cliques.ndim == 2:
        arr = cliques
        if arr.dtype.kind not in "iu":
            raise ValueError(f"{name} must contain integer node labels")
        items = list(arr)
    else:
        try:
            items = list(cliques)
        except TypeError:
            raise ValueError(f"{name} must be an iterable of node collections") from None
    out = []
    for c in items:
        a = np.atleast_1d(np.asarray(c))
        if a.ndim != 1 or a.size == 0 or a.dtype.kind not in "iu":
            raise ValueError(f"{name}: every clique must be a non-empty collection of "
                             f"integer node labels, got {c!r}")
        a = np.unique(a.astype(np.int64))
        if a.size != np.asarray(c).size:
            raise ValueError(f"{name}: clique {c!r} repeats a node")
        if a[0] < 0:
            raise ValueError(f"{name}: node labels must be non-negative, got {c!r}")
        out.append(a)
    return out


def one_neighbourhood(cliques: Any, Q: Any) -> np.ndarray:
    """The 1-neighbourhood ``A_Q`` of a clique ``Q`` (Definition 7).

    ``A_Q = ∪_{C ∩ Q ≠ ∅} C`` (together with ``Q`` itself): every node of a clique of the
    family that meets ``Q``.

    Parameters
    ----------
    cliques : (E, 2) edge array or iterable of node collections
        The clique family of the MRF. For a pairwise model the edges suffice (the
        singletons add nothing to the union).
    Q : int or collection of int
        The clique whose 1-neighbourhood is wanted.

    Returns
    -------
    ndarray of int64, shape (|A_Q|,)
        The nodes of ``A_Q``, sorted.

    Examples
    --------
    The running example of the paper (Figure 1, 3x3 lattice, nodes 1..9 there,
    0..8 here): ``Q = {7, 8}`` has ``A_Q = {4, 5, 7, 8, 9}``.

    >>> from mrflib import graphs
    >>> one_neighbourhood(graphs.square_grid(3, 3), [6, 7]).tolist()
    [3, 4, 6, 7, 8]
    """
    family = clique_list(cliques)
    q = clique_list([Q], "Q")[0]
    n = 1 + max([int(q[-1])] + [int(c[-1]) for c in family])
    # the nodes sharing a clique with Q are Q's closed neighbourhood in the primal graph
    pairs = [np.asarray(list(combinations(c.tolist(), 2)), dtype=np.int64).reshape(-1, 2)
             for c in family if c.size > 1]
    edges = graphs.from_pairs(np.concatenate(pairs)) if pairs else np.zeros((0, 2), np.int64)
    return graphs.Graph(n, edges).R_k(q, 1)


def one_neighbourhoods(edges: Any, n: int, cliques: Any) -> list[np.ndarray]:
    """``A_Q`` for many cliques of a pairwise graph at once (numba kernel).

    Same result as :func:`one_neighbourhood` for each clique, for an edge-list graph.

    Parameters
    ----------
    edges : array_like of int, shape (E, 2), or Graph
        The pairwise graph.
    n : int
        Number of nodes.
    cliques : (E, 2) edge array or iterable of node collections
        The cliques ``Q`` whose 1-neighbourhoods are wanted, nodes below ``n``.

    Returns
    -------
    list of ndarray of int64
        ``A_Q`` of each clique, in the order of ``cliques``, each sorted.
    """
    graph = graphs.as_graph(edges, n)
    q_ptr, q_nodes = pack(clique_list(cliques), graph.n)
    a_ptr, a_nodes = graph.closed_neighbourhoods(q_ptr, q_nodes)
    return [a_nodes[a_ptr[c]:a_ptr[c + 1]] for c in range(len(q_ptr) - 1)]


def pack(cliques: list[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.array([len(c) for c in cliques], dtype=np.int64)
    q_ptr = np.zeros(len(cliques) + 1, dtype=np.int64)
    np.cumsum(sizes, out=q_ptr[1:])
    q_nodes = (np.concatenate(cliques).astype(np.int64) if cliques
               else np.zeros(0, dtype=np.int64))
    if q_nodes.size and q_nodes.max() >= n:
        raise ValueError(f"cliques refer to node {int(q_nodes.max())}, but n = {n}")
    return q_ptr, q_nodes


def maximal_cliques(edges: Any, n: int) -> list[tuple[int, ...]]:
    """Maximal cliques of the graph (section 4.5), sorted tuples in sorted order.

    Triangle-free graphs (square and cubic lattices, chimera graphs) are recognised
    with one sparse product: their maximal cliques are the edges and the isolated
    nodes. Other graphs go through networkx's Bron-Kerbosch.

    Parameters
    ----------
    edges : array_like of int, shape (E, 2)
        The graph's edges (``i < j``, rows sorted).
    n : int
        Number of nodes (an isolated node is a maximal clique of its own).

    Returns
    -------
    list of tuple of int
        Every maximal clique as a sorted tuple of nodes, the list sorted.
    """
    edges = check_edges(edges, n)
    n = check_positive(n, "n", integer=True)
    deg = np.bincount(edges.ravel(), minlength=n)
    isolated = [(int(i),) for i in np.flatnonzero(deg == 0)]
    if len(edges) == 0:
        return isolated
    A = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n)).tocsr()
    A = A + A.T
    triangles = (A @ A).multiply(A).sum()
    if triangles == 0:
        found = [tuple(int(v) for v in e) for e in edges]
    else:
        import networkx as nx

        found = [tuple(sorted(int(v) for v in c))
                 for c in nx.find_cliques(graphs.to_networkx(edges, n)) if len(c) > 1]
    return sorted(found + isolated)


def path_connected_pairs(
    edges: Any, n: int, A: Any, *, include_edges: bool = False
) -> np.ndarray:
    """Pairs of ``A`` joined by a path through ``S \\ A`` (Definition 8, the set ``H``).

    By Proposition 9 the marginal MRF on ``A`` has an edge between ``i`` and ``j`` iff
    they are neighbours in the full MRF or ``{i, j} ∈ H``. As in the paper's running
    example (``H = {{4, 9}, {5, 9}}``, Figure 3), pairs that are already edges of the
    full MRF are left out unless ``include_edges``.

    Parameters
    ----------
    edges : array_like of int, shape (E, 2)
        The full MRF's graph (``i < j``, rows sorted).
    n : int
        Number of nodes ``S``.
    A : array_like of int
        The nodes of the marginal, below ``n``.
    include_edges : bool, default False
        Keep the pairs that are already edges of the full MRF.

    Returns
    -------
    ndarray of int64, shape (|H|, 2)
        The pairs as a canonical edge array (``i < j``, sorted rows).
    """
    edges = check_edges(edges, n)
    n = check_positive(n, "n", integer=True)
    A = check_nodes(A, n, "A")
    inA = np.zeros(n, dtype=bool)
    inA[A] = True
    outside = edges[~inA[edges[:, 0]] & ~inA[edges[:, 1]]]
    G = sp.coo_matrix((np.ones(len(outside)), (outside[:, 0], outside[:, 1])), shape=(n, n))
    _, label = connected_components(G, directed=False)
    touch: dict[int, set[int]] = {}
    for i, j in edges:
        if inA[i] != inA[j]:
            a, b = (i, j) if inA[i] else (j, i)
            touch.setdefault(int(label[b]), set()).add(int(a))
    pairs = {p for members in touch.values() for p in combinations(sorted(members), 2)}
    if not include_edges:
        pairs -= {(int(i), int(j)) for i, j in edges}
    return graphs.from_pairs(sorted(pairs)) if pairs else np.zeros((0, 2), dtype=np.int64)


def all_cliques(edges: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every node and every edge as its own clique, packed as ``(q_ptr, q_nodes)``."""
    E = len(edges)
    q_ptr = np.concatenate([np.arange(n + 1), n + 2 * np.arange(1, E + 1)]).astype(np.int64)
    q_nodes = np.concatenate([np.arange(n), edges.ravel()]).astype(np.int64)
    return q_ptr, q_nodes
