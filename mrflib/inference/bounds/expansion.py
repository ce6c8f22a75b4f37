"""Partition-graph expansion of the higher-order bounds (Leisink & Kappen, section 4).

The moments ``<dH^n>`` of eq. (18) are sums over *partition graphs*: loopless multigraphs
with ``n`` edges whose vertices all have degree >= 2, one per way the ``2n`` indices of
``(1/2 sum_ij w_ij d_i d_j)^n`` coincide. This module is the multigraph library behind
:mod:`mrflib.inference.bounds`:

- generation of the connected graphs edge by edge, up to isomorphism, by a canonical
  labelling (individualization-refinement) that also counts automorphisms;
- the counts of every graph, connected or not (products of connected components);
- exact treewidth and an optimal elimination order (subset recursion);
- a disk cache of the generated graphs (versioned, checksummed, written atomically);
- einsum plans that contract one graph's free index sum (eq. 19) at cost ``N^pi``;
- the corrected moments ``M'_c`` of Table 1 on the vertices, and the moments of eq. (18)
  from the connected graphs' cumulants.

The public names are re-exported by :mod:`mrflib.inference.bounds` (``bounds.partition_graphs``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from mrflib._support.files import atomic_write
from mrflib._support.validation import check_array, check_positive

__all__ = [
    "MAX_GRAPH_ORDER",
    "central_moment_polynomials",
    "corrected_moment_polynomials",
    "corrected_moments",
    "PartitionGraph",
    "partition_graphs",
    "connected_partition_graphs",
    "partition_graph_cache_path",
]

#: Highest order of the partition graphs (generating order 10 takes seconds, 11 minutes).
MAX_GRAPH_ORDER = 11


class PartitionGraph(NamedTuple):
    """One partition (section 4): a loopless multigraph with ``order`` edges.

    ``edges`` lists one ``(u, v)`` pair (``u < v``) per coupling ``w_uv`` of the partition,
    parallel edges repeated; vertices are ``0..n_vertices-1``, each of degree ≥ 2
    (``M'_1 = 0`` kills the others). ``count`` is the number of ways the ``2n`` indices of
    ``(½ Σ_ij w_ij δ_i δ_j)^n`` can coincide into this pattern, so that

    ``⟨ΔH^n⟩ = 2^{-n} Σ_G count(G) Σ_{free indices} Π_edges w Π_vertices M'_{deg}``

    with every index running freely over ``0..N-1`` (the corrected moments make the
    free sums exact).

    Attributes
    ----------
    edges : tuple of (int, int)
        One ``(u, v)`` pair (``u < v``) per coupling ``w_uv`` of the partition, parallel
        edges repeated.
    count : int
        The number of ways the ``2n`` indices coincide into this pattern.
    """

    edges: tuple[tuple[int, int], ...]
    count: int

    @property
    def order(self) -> int:
        """``n``, the number of edges (the power of ``ΔH``)."""
        return len(self.edges)

    @property
    def n_vertices(self) -> int:
        """The number of vertices (distinct indices)."""
        return 1 + max(v for e in self.edges for v in e)

    @property
    def degrees(self) -> tuple[int, ...]:
        """The degree of each vertex ``0..n_vertices-1`` (parallel edges counted)."""
        deg = [0] * self.n_vertices
        for u, v in self.edges:
            deg[u] += 1
            deg[v] += 1
        return tuple(deg)

    @property
    def connected(self) -> bool:
        """Whether the multigraph is connected (the connected ones give the cumulants)."""
        return len(_components(self.edges, self.n_vertices)) == 1

    @property
    def clique_size(self) -> int:
        """``π``: the largest clique of an optimal elimination (treewidth + 1)."""
        return _treewidth(self.edges, self.n_vertices) + 1

    @property
    def coefficient(self) -> float:
        """``count / 2^order``: the weight of the free index sum in ``⟨ΔH^n⟩``."""
        return self.count / 2.0 ** self.order

    def to_networkx(self):
        """The partition as a :class:`networkx.MultiGraph`.

        Returns
        -------
        networkx.MultiGraph
            Vertices ``0..n_vertices-1``, one edge per entry of ``edges``.
        """
        import networkx as nx

        g = nx.MultiGraph()
        g.add_nodes_from(range(self.n_vertices))
        g.add_edges_from(self.edges)
        return g


def _components(edges, V) -> list[set[int]]:
    parent = list(range(V))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for u, v in edges:
        parent[find(u)] = find(v)
    comps: dict[int, set[int]] = {}
    for a in range(V):
        comps.setdefault(find(a), set()).add(a)
    return list(comps.values())


def _treewidth(edges, V) -> int:
    """Exact treewidth (see :func:`_elimination_order`)."""
    return _elimination_order(tuple(edges), V)[0]


@cache
def _elimination_order(edges: tuple, V: int) -> tuple[int, tuple[int, ...]]:
    """Exact treewidth and an optimal elimination order of a (multi)graph.

    Subset recursion ``TW(S) = min_v max(TW(S − v), |Q(S − v, v)|)`` where ``Q(S, v)`` are
    the vertices outside ``S ∪ {v}`` reachable from ``v`` through ``S``: the neighbours of
    ``v`` when it is eliminated after ``S``. Fine for the ≤ 11 vertices of partition graphs.
    """
    adj = [0] * V
    for u, v in edges:
        adj[u] |= 1 << v
        adj[v] |= 1 << u

    def q(S: int, v: int) -> int:
        seen = 1 << v
        frontier = 1 << v
        out = 0
        while frontier:
            nb = 0
            f = frontier
            while f:
                low = f & -f
                nb |= adj[low.bit_length() - 1]
                f ^= low
            nb &= ~seen
            seen |= nb
            out |= nb & ~S
            frontier = nb & S
        return bin(out).count("1")

    @cache
    def tw(S: int) -> tuple[int, int]:
        if S == 0:
            return -1, -1
        best, arg = V, -1
        s = S
        while s:
            low = s & -s
            v = low.bit_length() - 1
            rest = S ^ low
            val = max(tw(rest)[0], q(rest, v))
            if val < best:
                best, arg = val, v
            s ^= low
        return best, arg

    order = []
    S = (1 << V) - 1
    while S:
        v = tw(S)[1]
        order.append(v)
        S ^= 1 << v
    return tw((1 << V) - 1)[0], tuple(reversed(order))


def _refine(A, colors):
    V = len(A)
    ncells = len(set(colors))
    while True:
        sig = [
            (colors[v], tuple(sorted((colors[u], A[v][u]) for u in range(V) if A[v][u])))
            for v in range(V)
        ]
        uniq = {s: i for i, s in enumerate(sorted(set(sig)))}
        new = [uniq[s] for s in sig]
        if len(uniq) == ncells:
            return new
        colors, ncells = new, len(uniq)


def _canon(A) -> tuple[tuple, int]:
    """Canonical form and automorphism count of a multigraph adjacency matrix.

    Individualization-refinement without pruning: every leaf of the search tree is a
    labelling; the lexicographically smallest adjacency form is canonical and the number
    of leaves reaching it is the order of the automorphism group.
    """
    V = len(A)
    best = None
    count = 0
    stack = [_refine(A, [0] * V)]
    while stack:
        colors = stack.pop()
        if len(set(colors)) == V:
            inv = [0] * V
            for v, c in enumerate(colors):
                inv[c] = v
            form = tuple(A[inv[i]][inv[j]] for i in range(V) for j in range(i + 1, V))
            if best is None or form < best:
                best, count = form, 1
            elif form == best:
                count += 1
            continue
        sizes = Counter(colors)
        target = min(c for c, s in sizes.items() if s > 1)
        for v in range(V):
            if colors[v] == target:
                new = [2 * c for c in colors]
                new[v] = 2 * target - 1
                stack.append(_refine(A, new))
    return (V, best), count


def _from_form(form) -> list[list[int]]:
    V, upper = form
    A = [[0] * V for _ in range(V)]
    it = iter(upper)
    for i in range(V):
        for j in range(i + 1, V):
            A[i][j] = A[j][i] = next(it)
    return A


def _form_edges(form) -> tuple[tuple[int, int], ...]:
    A = _from_form(form)
    V = len(A)
    return tuple((i, j) for i in range(V) for j in range(i + 1, V) for _ in range(A[i][j]))


def _deficit(A) -> int:
    return sum(max(0, 2 - sum(row)) for row in A)


def _generate_connected(max_order: int) -> dict[int, list[tuple[tuple, int]]]:
    """Connected loopless multigraphs with min degree 2, ``order = 2..max_order`` edges.

    Grown one edge at a time keeping connectivity; a graph with ``k`` edges is kept only
    if its degree deficit ``Σ_v max(0, 2 − deg v)`` can still be filled by the
    ``max_order − k`` edges left (every connected subgraph of a target graph passes).
    """
    level = {(2, (1,)): 2}
    out: dict[int, list[tuple[tuple, int]]] = {}
    for k in range(1, max_order + 1):
        out[k] = sorted((f, a) for f, a in level.items() if _deficit(_from_form(f)) == 0)
        if k == max_order:
            break
        nxt: dict[tuple, int] = {}
        for form in level:
            A = _from_form(form)
            V = len(A)
            cands = [(u, v) for u in range(V) for v in range(u + 1, V)]
            if V < max_order:
                cands += [(u, V) for u in range(V)]
            for u, v in cands:
                if v == V:
                    B = [row + [0] for row in A] + [[0] * (V + 1)]
                else:
                    B = [row[:] for row in A]
                B[u][v] += 1
                B[v][u] += 1
                if _deficit(B) > 2 * (max_order - k - 1):
                    continue
                f, a = _canon(B)
                if f not in nxt:
                    nxt[f] = a
        level = nxt
    out.pop(1, None)
    return out


CACHE_VERSION = 2


def partition_graph_cache_path() -> Path:
    """Where the generated partition graphs are cached.

    Generating all graphs up to order 9 takes about a second; the file is a small JSON
    holding a format version and a SHA-256 checksum of its content, written atomically.
    A file that fails either check (truncated, edited, corrupted, older format) is
    regenerated with a :class:`RuntimeWarning`, never trusted.

    Returns
    -------
    pathlib.Path
        The cache file in ``$MRFLIB_CACHE_DIR`` if set, else in ``$XDG_CACHE_HOME/mrflib``
        (``~/.cache/mrflib``); the file need not exist.
    """
    root = os.environ.get("MRFLIB_CACHE_DIR")
    if root:
        base = Path(root)
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mrflib"
    return base / f"partition_graphs_v{CACHE_VERSION}.json"


def _digest(connected: Any) -> str:
    text = json.dumps(connected, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _valid_form(form: tuple, aut: Any, order: int) -> bool:
    """A cached (form, |Aut|) pair is a multigraph with ``order`` edges, degrees >= 2."""
    V, upper = form
    if not (isinstance(V, int) and V >= 2 and len(upper) == V * (V - 1) // 2):
        return False
    if not all(isinstance(x, int) and x >= 0 for x in upper):
        return False
    A = _from_form(form)
    return (isinstance(aut, int) and aut >= 1 and sum(upper) == order
            and _deficit(A) == 0 and len(_components(_form_edges(form), V)) == 1)


def _load_cache(path: Path, order: int) -> dict[int, list[tuple[tuple, int]]] | None:
    """The cached connected graphs if the file exists, is intact and reaches ``order``."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        warnings.warn(f"partition-graph cache {path} is unreadable ({err}); regenerating",
                      RuntimeWarning, stacklevel=4)
        return None
    try:
        ok = (raw["version"] == CACHE_VERSION and raw["sha256"] == _digest(raw["connected"]))
        data = {int(k): [((v[0], tuple(v[1])), v[2]) for v in vals]
                for k, vals in raw["connected"].items()} if ok else None
        ok = ok and all(_valid_form(f, a, k) for k, vals in data.items() for f, a in vals)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        ok, data = False, None
    if not ok:
        warnings.warn(f"partition-graph cache {path} failed its version or checksum check "
                      "(corrupted, truncated or from another version); regenerating",
                      RuntimeWarning, stacklevel=4)
        return None
    if raw.get("max_order", 0) < order:
        return None
    return data


def _save_cache(path: Path, data: dict[int, list[tuple[tuple, int]]], max_order: int) -> None:
    """Write the cache atomically (temporary file in the same folder, then rename)."""
    connected = {str(k): [[f[0], list(f[1]), a] for f, a in v] for k, v in data.items()}
    payload = {"version": CACHE_VERSION, "max_order": max_order,
               "sha256": _digest(connected), "connected": connected}
    try:
        atomic_write(path, json.dumps(payload).encode())
    except OSError:  # pragma: no cover - read-only home: keep it in memory
        pass


_CONNECTED: dict[int, list[tuple[tuple, int]]] = {}


def _connected_forms(order: int) -> list[tuple[tuple, int]]:
    """(canonical form, |Aut|) of the connected graphs with ``order`` edges (cached)."""
    if order in _CONNECTED:
        return _CONNECTED[order]
    path = partition_graph_cache_path()
    data = _load_cache(path, order)
    if data is None:
        max_order = max(order, 9)
        data = _generate_connected(max_order)
        _save_cache(path, data, max_order)
    _CONNECTED.update(data)
    return _CONNECTED[order]


def _count_connected(form, aut: int) -> int:
    A = _from_form(form)
    n = sum(map(sum, A)) // 2
    denom = aut
    for i in range(len(A)):
        for j in range(i + 1, len(A)):
            denom *= math.factorial(A[i][j])
    return (2**n * math.factorial(n)) // denom


def check_graph_order(order: Any) -> int:
    """``order`` as a positive int, refused beyond :data:`MAX_GRAPH_ORDER`.

    Parameters
    ----------
    order : int
        The order to check.

    Returns
    -------
    int
        ``order``, once checked.
    """
    order = check_positive(order, "order", integer=True)
    if order > MAX_GRAPH_ORDER:
        raise ValueError(f"order must be at most {MAX_GRAPH_ORDER} for partition graphs (there "
                         f"are too many beyond), got {order}; use method='enumerate'")
    return order


def connected_partition_graphs(order: int) -> list[PartitionGraph]:
    """The connected partition graphs with ``order`` edges (they give the cumulants).

    Parameters
    ----------
    order : int
        Positive, at most :data:`MAX_GRAPH_ORDER`.

    Returns
    -------
    list of PartitionGraph
        One per isomorphism class; empty for ``order < 2``.
    """
    order = check_graph_order(order)
    if order < 2:
        return []
    return [PartitionGraph(_form_edges(f), _count_connected(f, a))
            for f, a in _connected_forms(order)]


@cache
def _all_partition_graphs(order: int) -> tuple[PartitionGraph, ...]:
    out = []
    # multisets of connected components whose orders add up to `order`
    pool = [(k, i) for k in range(2, order + 1) for i in range(len(_connected_forms(k)))]

    def rec(start: int, left: int, chosen: list):
        if left == 0:
            out.append(list(chosen))
            return
        for idx in range(start, len(pool)):
            k, _ = pool[idx]
            if k <= left:
                chosen.append(pool[idx])
                rec(idx, left - k, chosen)
                chosen.pop()

    rec(0, order, [])
    graphs = []
    for comps in out:
        edges: list[tuple[int, int]] = []
        offset = 0
        denom = 1
        for k, i in comps:
            form, aut = _connected_forms(k)[i]
            for u, v in _form_edges(form):
                edges.append((u + offset, v + offset))
            offset += form[0]
            denom *= (2**k * math.factorial(k)) // _count_connected(form, aut)
        for r in Counter(comps).values():
            denom *= math.factorial(r)
        count = (2**order * math.factorial(order)) // denom
        graphs.append(PartitionGraph(tuple(edges), count))
    return tuple(graphs)


def partition_graphs(order: int) -> list[PartitionGraph]:
    """All partition graphs of ``⟨ΔH^order⟩`` (section 4, Tables 2-3), with their counts.

    Loopless multigraphs with ``order`` edges, every vertex of degree ≥ 2, connected or
    not, one per isomorphism class; ``count`` as in :class:`PartitionGraph`. The connected
    ones are generated once and cached on disk (:func:`partition_graph_cache_path`);
    disconnected ones are products of connected ones.

    Parameters
    ----------
    order : int
        Positive, at most :data:`MAX_GRAPH_ORDER`.

    Returns
    -------
    list of PartitionGraph
        ``(edges, count)`` named tuples (they unpack as
        ``for edges, count in partition_graphs(5)``); empty for ``order < 2``.
    """
    order = check_graph_order(order)
    if order < 2:
        return []
    return list(_all_partition_graphs(order))


# ----------------------------------------------------------------- evaluation (eq. 19)
_PLANS: dict[tuple, tuple] = {}
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _plan(edges: tuple[tuple[int, int], ...]):
    """Variable-elimination plan of one connected partition graph (eq. 19).

    Factors: one ``(N, N)`` matrix ``w^k`` per pair joined by ``k`` parallel edges, with the
    corrected moment ``M'_deg`` of each vertex multiplied into the first pair holding it.
    Vertices are summed out in an optimal (treewidth) order; each step is one
    ``numpy.einsum`` over the factors holding the vertex, along a greedy pairwise path
    (BLAS ``tensordot``), so a graph of clique size ``π`` costs ``O(N^π)``.
    """
    if edges in _PLANS:
        return _PLANS[edges]
    mult = Counter(edges)
    pairs = sorted(mult)
    V = 1 + max(v for e in pairs for v in e)
    deg = [0] * V
    for (u, v), k in mult.items():
        deg[u] += k
        deg[v] += k
    attach: list[list[tuple[int, int]]] = [[] for _ in pairs]  # (side, degree)
    done = [False] * V
    for p, (u, v) in enumerate(pairs):
        for side, x in enumerate((u, v)):
            if not done[x]:
                attach[p].append((side, deg[x]))
                done[x] = True
    recipe = [(mult[pr], attach[p]) for p, pr in enumerate(pairs)]
    factors = {p: tuple(pr) for p, pr in enumerate(pairs)}  # factor id -> its vertices
    n0 = 48
    steps = []
    next_id = len(pairs)
    for v in _elimination_order(tuple(pairs), V)[1]:
        ids = [f for f, vs in factors.items() if v in vs]
        if not ids:
            continue
        out_vars = sorted({x for f in ids for x in factors[f]} - {v})
        subs = (",".join("".join(_LETTERS[x] for x in factors[f]) for f in ids) + "->"
                + "".join(_LETTERS[x] for x in out_vars))
        dummy = [np.ones((n0,) * len(factors[f])) for f in ids]
        path = np.einsum_path(subs, *dummy, optimize="greedy")[0] if len(ids) > 1 else False
        steps.append((tuple(ids), subs, path, next_id))
        for f in ids:
            del factors[f]
        factors[next_id] = tuple(out_vars)
        next_id += 1
    _PLANS[edges] = (recipe, steps, tuple(factors))
    return _PLANS[edges]


def graph_value(
    edges: tuple[tuple[int, int], ...], Wp: list[np.ndarray], kap: np.ndarray
) -> float:
    """``Σ_{free indices} Π_edges w Π_vertices M'_deg`` of one connected partition graph.

    The free index sum of eq. (19), contracted along the graph's elimination plan.

    Parameters
    ----------
    edges : tuple of (int, int)
        The graph's ``edges`` (:class:`PartitionGraph`).
    Wp : list of numpy.ndarray, each of shape (N, N)
        ``Wp[k]`` is the elementwise power ``w^k`` (``Wp[0]`` all ones), up to the
        largest edge multiplicity.
    kap : numpy.ndarray, shape (c_max + 1, N)
        ``kap[c]``: the corrected moments ``M'_c`` of every spin (Table 1), up to the
        largest vertex degree.

    Returns
    -------
    float
        The value of the sum.
    """
    recipe, steps, final = _plan(edges)
    tensors: dict[int, Any] = {}
    for p, (k, att) in enumerate(recipe):
        op = Wp[k]
        for side, d in att:
            op = op * (kap[d][:, None] if side == 0 else kap[d][None, :])
        tensors[p] = op
    for ids, subs, path, new in steps:
        ops = [tensors.pop(f) for f in ids]
        tensors[new] = np.einsum(subs, *ops, optimize=path)
    value = 1.0
    for f in final:
        value *= float(tensors[f])
    return value


# ============================================================================ Table 1
def _poly_mul(a: list[int], b: list[int]) -> list[int]:
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


def _poly_add(a: list[int], b: list[int]) -> list[int]:
    n = max(len(a), len(b))
    return [(a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(n)]


@cache
def _central_polys(c_max: int) -> tuple[tuple[int, ...], ...]:
    # M_c = ((1 + m)(1 - m)^c + (1 - m)(-1 - m)^c) / 2, integer coefficients in m
    out = []
    for c in range(c_max + 1):
        up = [1]
        dn = [1]
        for _ in range(c):
            up = _poly_mul(up, [1, -1])
            dn = _poly_mul(dn, [-1, -1])
        tot = _poly_add(_poly_mul([1, 1], up), _poly_mul([1, -1], dn))
        coef = [x // 2 for x in tot]
        while len(coef) > 1 and coef[-1] == 0:
            coef.pop()
        out.append(tuple(coef))
    return tuple(out)


@cache
def _cumulant_polys(c_max: int) -> tuple[tuple[int, ...], ...]:
    # κ_1 = m, κ_{c+1} = (1 - m²) dκ_c/dm (κ_c = d^{c-1} tanh h / dh^{c-1}); M'_1 = 0
    out = [(0,), (0,)]
    kappa = [0, 1]
    for _ in range(2, c_max + 1):
        deriv = [k * kappa[k] for k in range(1, len(kappa))] or [0]
        kappa = _poly_mul([1, 0, -1], deriv)
        out.append(tuple(kappa))
    return tuple(out[: c_max + 1])


#: Largest moment order of Table 1's polynomials: their integer coefficients grow like
#: ``c! 2^c`` and leave float64 beyond about 150.
MAX_MOMENT_ORDER = 100


def _check_c_max(c_max: Any) -> int:
    c_max = check_positive(c_max, "c_max", integer=True, allow_zero=True)
    if c_max > MAX_MOMENT_ORDER:
        raise ValueError(f"c_max must be at most {MAX_MOMENT_ORDER}, got {c_max}")
    return c_max


def central_moment_polynomials(c_max: int) -> list[np.ndarray]:
    """Integer coefficients (increasing powers of ``m``) of ``M_c = ⟨(s − m)^c⟩``, Table 1.

    ``s = ±1`` with ``P(s = 1) = (1 + m)/2``.

    Parameters
    ----------
    c_max : int
        Highest moment, in ``[0, MAX_MOMENT_ORDER]``.

    Returns
    -------
    list of numpy.ndarray of object (Python int)
        Entry ``c`` holds the coefficients of ``M_c``, ``c = 0..c_max``.
    """
    c_max = _check_c_max(c_max)
    return [np.array(p, dtype=object) for p in _central_polys(c_max)]


def corrected_moment_polynomials(c_max: int) -> list[np.ndarray]:
    """Integer coefficients of the corrected moments ``M'_c`` of Table 1, ``c = 0..c_max``.

    ``M'_c`` is ``M_c`` minus all products of corrected moments whose subscripts add up to
    ``c`` (Table 1's caption) -- that is, the ``c``-th cumulant of ``s`` (``M'_1 = 0``
    because ``s − m`` is centred). Computed as ``κ_{c+1} = (1 − m²) dκ_c/dm``.

    Parameters
    ----------
    c_max : int
        Highest moment, in ``[0, MAX_MOMENT_ORDER]``.

    Returns
    -------
    list of numpy.ndarray of object (Python int)
        Entry ``c`` holds the coefficients of ``M'_c`` in increasing powers of ``m``,
        ``c = 0..c_max``.
    """
    c_max = _check_c_max(c_max)
    return [np.array(p, dtype=object) for p in _cumulant_polys(max(c_max, 1))][: c_max + 1]


def corrected_moments(m: Any, c_max: int) -> np.ndarray:
    """``M'_c(m_i)`` for ``c = 0..c_max`` (Table 1's corrected moments at the means).

    Parameters
    ----------
    m : array_like, shape (n,)
        The spins' means.
    c_max : int
        Highest moment, in ``[0, MAX_MOMENT_ORDER]``.

    Returns
    -------
    numpy.ndarray of float64, shape (c_max + 1, n)
        Row ``c`` holds ``M'_c(m_i)`` of every spin; rows 0 and 1 are 0.
    """
    m = check_array(m, "m", ndim=1)
    c_max = _check_c_max(c_max)
    out = np.zeros((c_max + 1, m.shape[0]))
    polys = _cumulant_polys(max(c_max, 1))
    for c in range(2, c_max + 1):
        coef = np.array(polys[c], dtype=np.float64)
        out[c] = np.polynomial.polynomial.polyval(m, coef)
    return out


def _moments_from_cumulants(kappa: np.ndarray) -> np.ndarray:
    order = kappa.shape[0] - 1
    M = np.zeros(order + 1)
    M[0] = 1.0
    for n in range(1, order + 1):
        M[n] = sum(math.comb(n - 1, k - 1) * kappa[k] * M[n - k] for k in range(1, n + 1))
    return M


def dh_moments_graphs(W: np.ndarray, m: np.ndarray, order: int) -> np.ndarray:
    """``⟨ΔH^n⟩``, ``n = 0..order``, by eq. (18)-(19).

    Cumulants are sums over the connected partition graphs of their free index sums with
    the corrected moments on the vertices; the moments follow from the cumulants.

    Parameters
    ----------
    W : numpy.ndarray, shape (n, n)
        The symmetric coupling matrix ``w`` with a zero diagonal.
    m : numpy.ndarray, shape (n,)
        Means solving the mean-field equations (17): not checked (eq. 18 assumes it).
    order : int
        Highest moment, at most :data:`MAX_GRAPH_ORDER`.

    Returns
    -------
    numpy.ndarray of float64, shape (order + 1,)
        ``[1, ⟨ΔH⟩ (= 0), ⟨ΔH²⟩, ...]``.
    """
    kap = corrected_moments(m, order)
    Wp = [np.ones_like(W)] + [W**p for p in range(1, order + 1)]
    kappa = np.zeros(order + 1)
    for k in range(2, order + 1):
        total = 0.0
        for edges, count in connected_partition_graphs(k):
            total += count * graph_value(edges, Wp, kap)
        kappa[k] = total / 2.0**k
    return _moments_from_cumulants(kappa)
