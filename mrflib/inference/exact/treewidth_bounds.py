"""Lower bounds on the treewidth, cheap enough to refuse a hopeless model before any search.

Every elimination order of a graph of treewidth ``k`` makes a clique of ``k + 1``
variables, so a lower bound on ``k`` bounds the largest clique table of every order from
below (:func:`table_bound`): where even that table cannot fit, no order search can help.

Two bounds are combined (:func:`treewidth_lower_bound`, their maximum):

* the minor-min-width (:func:`minor_min_width`), strong
  on dense graphs; it is a smallest degree of a minor, so it never exceeds 5 on a planar
  graph (every planar graph, and every minor of one, has a vertex of degree 5 or less),
  however large its treewidth: a ``40 x 40`` lattice gets 5;
* a *bramble of crosses* (:func:`cross_bound`), strong on lattices. Take ``R`` vertex-
  disjoint paths (rows) and ``C`` vertex-disjoint paths (columns) such that every row
  meets every column. The crosses ``row ∪ column`` are connected and any two of them meet,
  so they form a bramble; a set of vertices that misses a row and a column misses their
  cross, so it must hold a vertex of every row or of every column: the bramble's order is
  at least ``min(R, C)``, and the treewidth at least ``min(R, C) - 1`` (Seymour and
  Thomas, *J. Comb. Theory B* 58, 1993: the treewidth is the largest order of a bramble
  minus one). The rows and columns are found by two maximum flows between opposite
  "sides" of the graph, guessed from breadth-first distances between four far-apart
  vertices; on an ``L x L`` lattice they are its rows and columns, and the bound is
  ``L - 1`` (the treewidth is ``L``). The property is checked on the paths found, so the
  bound holds on every graph, and is small where the guess does not fit the graph.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence

import numpy as np

__all__ = ["minor_min_width", "table_lower_bound", "cross_bound", "treewidth_lower_bound",
           "table_bound"]

#: Components with fewer variables than this get the minor-min-width alone (a bramble of
#: crosses of width ``k`` needs about ``k^2`` vertices, and small components fit anyway).
CROSS_MIN_NODES = 64


def minor_min_width(adj: list[set[int]], nodes: Sequence[int]) -> int:
    """A lower bound on the treewidth of the graph ``adj`` on ``nodes``: the minor-min-width
    (Gogate and Dechter, UAI 2004).

    Treewidth never grows when an edge is contracted, and is at least the smallest degree,
    so the largest smallest degree met while contracting a vertex of smallest degree into
    its neighbour of smallest degree bounds it from below (ties to the lower-numbered
    vertex).

    Parameters
    ----------
    adj, nodes
        As in :func:`~mrflib.inference.exact.elimination_cliques.components`: the
        interaction graph's neighbour sets, and the nodes.

    Returns
    -------
    int
        The lower bound.
    """
    inside = set(nodes)
    nbrs = {v: adj[v] & inside for v in inside}
    heap = [(len(s), v) for v, s in nbrs.items()]
    heapq.heapify(heap)
    bound = 0
    while heap and bound < len(nbrs) - 1:
        d, v = heapq.heappop(heap)
        if v not in nbrs or d != len(nbrs[v]):
            continue  # a stale entry
        bound = max(bound, d)
        near = nbrs.pop(v)
        if not near:
            continue
        u = min(near, key=lambda w: (len(nbrs[w]), w))
        for w in near:
            nbrs[w].discard(v)
            if w != u:
                nbrs[w].add(u)
                nbrs[u].add(w)
        for w in near:
            heapq.heappush(heap, (len(nbrs[w]), w))
    return bound


def table_lower_bound(adj: list[set[int]], logc: Sequence[float], nodes: Sequence[int]
                      ) -> float:
    """Log entries that the largest clique table of every order of ``nodes`` holds at
    least: a clique of :func:`minor_min_width` + 1 of them, the fewest states first.

    Parameters
    ----------
    adj : list of set of int
        Neighbour sets of the interaction graph
        (:func:`~mrflib.inference.exact.elimination_cliques.interaction_graph`).
    logc : sequence of float
        ``log |X_v|`` of every variable.
    nodes : sequence of int
        The nodes of the graph.

    Returns
    -------
    float
        The natural log of the number of entries.
    """
    width = minor_min_width(adj, nodes)
    return float(sum(sorted(logc[v] for v in nodes)[:width + 1]))


def _distances(adj: list[set[int]], local: dict[int, int], source: int) -> np.ndarray:
    """Breadth-first distances from ``source`` to the nodes ``local`` (by rank; ``-1``:
    not reached)."""
    dist = np.full(len(local), -1, dtype=np.int64)
    dist[local[source]] = 0
    queue = deque([source])
    while queue:
        v = queue.popleft()
        d = dist[local[v]] + 1
        for u in adj[v]:
            i = local.get(u)
            if i is not None and dist[i] < 0:
                dist[i] = d
                queue.append(u)
    return dist


def _farthest(dist: np.ndarray, among: np.ndarray | None = None) -> int:
    """The rank of the farthest node (of ``among``, if given; ties to the lowest rank)."""
    if among is None:
        return int(np.argmax(dist))
    return int(among[np.argmax(dist[among])])


def _disjoint_paths(adj: list[set[int]], nodes: list[int], local: dict[int, int],
                    sources: np.ndarray, sinks: np.ndarray) -> list[list[int]]:
    """As many vertex-disjoint paths (lists of ranks) from ``sources`` to ``sinks`` as a
    maximum flow finds (each vertex split into an in and an out node of capacity one)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    n = len(nodes)
    source, sink = 2 * n, 2 * n + 1
    rows, cols = [np.arange(n) * 2], [np.arange(n) * 2 + 1]  # v_in -> v_out
    for i, v in enumerate(nodes):
        out = [local[u] for u in adj[v] if u in local]
        rows.append(np.full(len(out), 2 * i + 1))
        cols.append(np.asarray(out, dtype=np.int64) * 2)
    rows += [np.full(len(sources), source), sinks * 2 + 1]
    cols += [sources * 2, np.full(len(sinks), sink)]
    r, c = np.concatenate(rows), np.concatenate(cols)
    graph = csr_matrix((np.ones(len(r), dtype=np.int32), (r, c)), shape=(2 * n + 2,) * 2)
    graph.sum_duplicates()
    graph.data[:] = 1
    flow = maximum_flow(graph, source, sink, method="dinic").flow.tocsr()
    flow.eliminate_zeros()
    nxt = {}
    indptr, indices, data = flow.indptr, flow.indices, flow.data
    for a in range(2 * n + 2):
        for k in range(indptr[a], indptr[a + 1]):
            if data[k] > 0:
                nxt.setdefault(a, []).append(int(indices[k]))
    paths = []
    for start in nxt.get(source, []):
        path, at = [], start
        while at != sink:
            if at % 2 == 0:
                path.append(at // 2)
            at = nxt[at].pop()
        paths.append(path)
    return paths


def _side(du: np.ndarray, dw: np.ndarray, uw: int) -> np.ndarray:
    """Ranks of the nodes on a shortest path between two nodes ``u`` and ``w`` (their
    distances ``du``, ``dw``, and ``uw`` between them)."""
    return np.flatnonzero((du >= 0) & (du + dw == uw))


def _largest_full_block(meets: np.ndarray) -> int:
    """``min(rows, columns)`` of a block of ``meets`` (rows x columns, true where the
    row meets the column) that is true everywhere, found by dropping the row or column
    with the most misses until none is left."""
    keep_r = np.ones(meets.shape[0], dtype=bool)
    keep_c = np.ones(meets.shape[1], dtype=bool)
    while keep_r.any() and keep_c.any():
        sub = ~meets[np.ix_(keep_r, keep_c)]
        if not sub.any():
            break
        miss_r, miss_c = sub.sum(axis=1), sub.sum(axis=0)
        if miss_r.max() >= miss_c.max():
            keep_r[np.flatnonzero(keep_r)[np.argmax(miss_r)]] = False
        else:
            keep_c[np.flatnonzero(keep_c)[np.argmax(miss_c)]] = False
    return int(min(keep_r.sum(), keep_c.sum()))


def cross_bound(adj: list[set[int]], nodes: Sequence[int]) -> int:
    """A lower bound on the treewidth of the connected graph ``adj`` on ``nodes`` from a
    bramble of crosses (see the module notes): ``min(R, C) - 1`` for the ``R`` rows and
    ``C`` columns found that all meet, ``0`` when none are found.

    Parameters
    ----------
    adj : list of set of int
        Neighbour sets (:func:`~mrflib.inference.exact.elimination_order.interaction_graph`).
    nodes : sequence of int
        The nodes of one connected component.

    Returns
    -------
    int
        A lower bound on the treewidth of the graph on ``nodes``.
    """
    nodes = sorted(nodes)
    if len(nodes) < CROSS_MIN_NODES:
        return 0
    local = {v: i for i, v in enumerate(nodes)}
    degree = np.fromiter((len(adj[v]) for v in nodes), dtype=np.int64, count=len(nodes))
    # four far-apart corners: a and b by a double sweep from a node of least degree, c and
    # d the two farthest apart of the nodes halfway between a and b
    d0 = _distances(adj, local, nodes[int(np.argmin(degree))])
    a = _farthest(d0)
    da = _distances(adj, local, nodes[a])
    b = _farthest(da)
    db = _distances(adj, local, nodes[b])
    middle = np.flatnonzero(np.abs(da - db) <= 1)
    if len(middle) < 2:
        return 0
    dm = _distances(adj, local, nodes[int(middle[0])])
    c = _farthest(dm, middle)
    dc = _distances(adj, local, nodes[c])
    d = _farthest(dc, middle)
    dd = _distances(adj, local, nodes[d])
    if len({a, b, c, d}) < 4:
        return 0
    # rows join the sides a-c and b-d, columns the sides c-b and d-a
    rows = _disjoint_paths(adj, nodes, local, _side(da, dc, int(da[c])),
                           _side(db, dd, int(db[d])))
    cols = _disjoint_paths(adj, nodes, local, _side(dc, db, int(dc[b])),
                           _side(dd, da, int(dd[a])))
    if not rows or not cols:
        return 0
    row_of = np.full(len(nodes), -1, dtype=np.int64)
    for r, path in enumerate(rows):
        row_of[path] = r
    meets = np.zeros((len(rows), len(cols)), dtype=bool)
    for k, path in enumerate(cols):
        hit = row_of[path]
        meets[hit[hit >= 0], k] = True
    return max(_largest_full_block(meets) - 1, 0)


def treewidth_lower_bound(adj: list[set[int]], nodes: Sequence[int]) -> int:
    """A lower bound on the treewidth of the graph ``adj`` on ``nodes`` (one connected
    component): the larger of the minor-min-width and :func:`cross_bound`.

    Parameters
    ----------
    adj : list of set of int
        Neighbour sets of the interaction graph.
    nodes : sequence of int
        The nodes of one connected component.

    Returns
    -------
    int
        Every elimination order of ``nodes`` has a clique of more than this many nodes
        minus one, i.e. of at least this bound plus one nodes.
    """
    return max(minor_min_width(adj, nodes), cross_bound(adj, nodes))


def table_bound(logc: Sequence[float], nodes: Sequence[int], width: int) -> float:
    """Log entries the largest clique table of every order holds at least, given that the
    treewidth of the graph on ``nodes`` is at least ``width``: a clique of ``width + 1`` of
    them, the fewest states first.

    Parameters
    ----------
    logc : sequence of float
        ``log |X_v|`` of every variable.
    nodes : sequence of int
        The nodes of one connected component.
    width : int
        A lower bound on its treewidth.

    Returns
    -------
    float
        The natural log of the number of entries.
    """
    return float(math.fsum(sorted(logc[v] for v in nodes)[:width + 1]))
