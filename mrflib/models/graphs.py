"""Graphs: the validated, immutable ``Graph``, edge arrays and neighbourhood regions.

Conventions (``book/notation.md``): nodes are ``0..n-1``; every edge row is
``(i, j)`` with ``i < j``; rows are sorted lexicographically; no duplicates.
The graph families (:func:`square_grid`, :func:`chimera`, ...) and :func:`from_pairs`,
which build edge arrays, are :mod:`mrflib.models.graph_families`; they are re-exported here.

The neighbourhood regions follow eq. (5) of Yasuda & Uchizawa, "A generalization
of spatial Monte Carlo integration" (GSMCI): ``N_0(T) = T``,
``N_k(T)`` the k-th nearest neighbours of ``T`` and
``R_k(T) = N_0(T) ∪ ... ∪ N_k(T)``. (The paper numbers nodes from 1; we from 0.)
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numba import njit, types
from numba.experimental import structref

if TYPE_CHECKING:
    import networkx as nx

from mrflib._support.validation import check_edges, check_nodes, check_positive, require_memory
from mrflib.models._graph_kernels import one_neighbourhoods
from mrflib.models.graph_families import (
    chimera,
    complete,
    cubic,
    from_pairs,
    king_grid,
    random_graph,
    square_grid,
)

__all__ = [
    "Graph",
    "Csr",
    "Structure",
    "as_graph",
    "square_grid",
    "king_grid",
    "random_graph",
    "complete",
    "chimera",
    "cubic",
    "from_pairs",
    "num_nodes",
    "adjacency",
    "neighbours",
    "N_k",
    "R_k",
    "boundary",
    "to_networkx",
]


def num_nodes(edges: Any, n: int | None = None) -> int:
    """The number of nodes: ``n`` if given (checked), else ``max label + 1``.

    Parameters
    ----------
    edges : array_like of int, shape (E, 2), or Graph
        A canonical edge array (checked) or a :class:`Graph`.
    n : int or None, default None
        Number of nodes, positive and above every label; ``None`` to take the largest
        label + 1 (then ``edges`` must not be empty).

    Returns
    -------
    int
        The number of nodes.
    """
    if isinstance(edges, Graph):
        return as_graph(edges, n).n
    edges = check_edges(edges, n)
    if n is not None:
        return int(check_positive(n, "n", integer=True))
    if len(edges) == 0:
        raise ValueError("n must be given when edges is empty")
    return int(edges.max()) + 1


class Csr(NamedTuple):
    """Compressed sparse row adjacency of a :class:`Graph` (a record numba kernels accept).

    The neighbours of node ``i`` are ``indices[indptr[i]:indptr[i + 1]]`` (sorted) and
    ``edge_ids[p]`` is the edge row joining ``i`` to ``indices[p]``.

    Attributes
    ----------
    indptr : ndarray of int64, shape (n + 1,)
        Row pointers into ``indices``.
    indices : ndarray of int64, shape (2E,)
        The neighbours of every node, node by node, each node's sorted.
    edge_ids : ndarray of int64, shape (2E,)
        ``edge_ids[p]`` is the edge row joining the node to ``indices[p]``.
    """

    indptr: np.ndarray
    indices: np.ndarray
    edge_ids: np.ndarray


@structref.register
class StructureType(types.StructRef):
    """The numba type of :class:`Structure` (one type: read-only C-contiguous int64 fields).

    Parameters
    ----------
    fields : sequence of (str, numba type)
        The field names and their numba types.
    """

    def preprocess_fields(self, fields):
        """Drop literal types from the fields, so that every record has the one type.

        Parameters
        ----------
        fields : sequence of (str, numba type)
            The field names and their numba types.

        Returns
        -------
        tuple of (str, numba type)
            The fields, each type made non-literal.
        """
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


_FIELDS = (("indptr", 1), ("indices", 1), ("edge_ids", 1), ("edges", 2), ("edge_pos", 2))
_STRUCTURE_TYPE = StructureType([(name, types.Array(types.int64, ndim, "C", readonly=True))
                                 for name, ndim in _FIELDS])


class Structure(structref.StructRefProxy):
    """The structure of a :class:`Graph` as one record for the numba kernels.

    The kernels take it as one argument ``g`` and read its fields by name
    (``g.indptr``); parameters (bias, couplings, CSR weights) and data stay separate
    arguments, only the graph goes here. It is a numba structref: one pointer to pass,
    so a call costs what passing two arrays costs (a ``NamedTuple`` of five arrays costs
    about 2 us more per call, which a learner pays at every step); its numba type is
    fixed, so every kernel compiles once and caches on disk (``cache=True``). In Python
    the fields are the read-only arrays themselves; it pickles (to process pools and
    Dask workers) by its arrays. ``n = len(indptr) - 1`` and ``E = len(edges)``.

    Parameters
    ----------
    indptr, indices, edge_ids, edges, edge_pos : array_like of int
        The fields below, in this order; each is copied unless it is already a read-only
        C-contiguous int64 array of the field's dimension (a wrong dimension is a
        ``ValueError``).

    Attributes
    ----------
    indptr : (n + 1,) int64
        The neighbours of node ``i`` are ``indices[indptr[i]:indptr[i + 1]]``, sorted.
    indices : (2E,) int64
        The neighbours of every node, node by node.
    edge_ids : (2E,) int64
        ``edge_ids[p]`` is the edge row joining ``i`` to ``indices[p]``.
    edges : (E, 2) int64
        The canonical edge array (``edges[e, 0] < edges[e, 1]``).
    edge_pos : (E, 2) int64
        :attr:`Graph.edge_pos`: the position of each end among the other's neighbours.
    """

    def __new__(cls, indptr, indices, edge_ids, edges, edge_pos):
        arrays = [_frozen(a, ndim, name) for a, (name, ndim)
                  in zip((indptr, indices, edge_ids, edges, edge_pos), _FIELDS)]
        self = _new_structure(*arrays)
        self.__dict__.update((name, a) for (name, _), a in zip(_FIELDS, arrays))
        return self

    def __reduce__(self):
        return Structure, tuple(getattr(self, name) for name, _ in _FIELDS)

    def __repr__(self) -> str:
        return f"Structure(n={len(self.indptr) - 1}, edges={len(self.edges)})"


structref.define_boxing(StructureType, Structure)


def _frozen(a: Any, ndim: int, name: str) -> np.ndarray:
    """``a`` as a read-only C-contiguous int64 array (copied unless it already is one)."""
    arr = np.asarray(a)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if arr.dtype != np.int64 or not arr.flags.c_contiguous or arr.flags.writeable:
        arr = np.array(arr, dtype=np.int64, order="C")
        arr.flags.writeable = False
    return arr


@njit(cache=True)
def _new_structure(indptr, indices, edge_ids, edges, edge_pos):  # pragma: no cover - numba
    s = structref.new(_STRUCTURE_TYPE)
    s.indptr = indptr
    s.indices = indices
    s.edge_ids = edge_ids
    s.edges = edges
    s.edge_pos = edge_pos
    return s


def _read_only(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.flags.writeable = False


def _grid_shape(graph: Graph) -> tuple[int, int] | None:
    """:meth:`Graph.grid_shape`, computed."""
    edges, n = graph.edges, graph.n
    if len(edges) == 0:
        return None
    cols = int((edges[:, 1] - edges[:, 0]).max())
    if cols < 1 or n % cols:
        return None
    rows = n // cols
    expected = square_grid(rows, cols)
    if expected.shape != edges.shape or not np.array_equal(expected, edges):
        return None
    return rows, cols


class Graph:
    """An undirected simple graph on nodes ``0..n-1``: validated once, immutable, cached.

    Parameters
    ----------
    n : int
        Number of nodes, positive.
    edges : array_like, shape (E, 2)
        Canonical edge array (``i < j``, rows sorted, no duplicates; ``shared`` design
        conventions), labels below ``n``; checked, copied and made read-only.

    Attributes
    ----------
    n : int
        Number of nodes.
    edges : ndarray of int64, shape (E, 2)
        The read-only canonical edge array.
    n_edges : int
        Number of edges ``E``.
    csr : Csr
        The compressed sparse row adjacency (cached, read-only arrays).
    indptr, indices, edge_ids : ndarray of int64
        The fields of :attr:`csr`.
    degree : ndarray of int64, shape (n,)
        Node degrees.
    edge_pos : ndarray of int64, shape (E, 2)
        The position of each end of every edge among the other end's neighbours.
    structure : Structure
        The record the numba kernels take.

    Notes
    -----
    The edge array is copied and made read-only; the CSR adjacency, the edge positions
    and the neighbour lists are computed on first use and kept. ``numpy.asarray(g)`` is
    the edge array, so a ``Graph`` goes wherever an edge array is accepted. Build one
    with :func:`as_graph` from an edge array or another ``Graph``.
    """

    __slots__ = ("n", "edges", "__dict__")

    def __init__(self, n: int, edges: Any) -> None:
        n = int(check_positive(n, "n", integer=True))
        edges = check_edges(edges, n).copy()
        _read_only(edges)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "edges", edges)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Graph is immutable")

    def __reduce__(self):
        # pickled as (n, edges); the cached structures are rebuilt on first use
        return Graph, (self.n, self.edges)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.edges if dtype is None else self.edges.astype(dtype)
        return out.copy() if copy and out is self.edges else out

    def __repr__(self) -> str:
        return f"Graph(n={self.n}, edges={len(self.edges)})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        return self.n == other.n and np.array_equal(self.edges, other.edges)

    __hash__ = None  # type: ignore[assignment]

    @property
    def n_edges(self) -> int:
        """Number of edges ``E``."""
        return int(self.edges.shape[0])

    def _csr_bytes(self) -> float:
        """Peak bytes of building :attr:`csr` (0 once built): the row pointers and degree
        counts (``16 n``) and the sort of both edge directions (measured: under ``100 E``)."""
        return 0.0 if "csr" in self.__dict__ else 16.0 * (self.n + 1) + 100.0 * len(self.edges)

    @cached_property
    def csr(self) -> Csr:
        """The :class:`Csr` adjacency (cached, read-only arrays)."""
        require_memory(self._csr_bytes(), f"the adjacency of a graph with n={self.n} nodes")
        n, edges = self.n, self.edges
        E = len(edges)
        src = np.concatenate([edges[:, 0], edges[:, 1]])
        dst = np.concatenate([edges[:, 1], edges[:, 0]])
        eid = np.concatenate([np.arange(E), np.arange(E)]).astype(np.int64)
        order = np.lexsort((dst, src))
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        out = Csr(indptr, np.ascontiguousarray(dst[order]), np.ascontiguousarray(eid[order]))
        _read_only(*out)
        return out

    @property
    def indptr(self) -> np.ndarray:
        """``(n + 1,)`` int64: the row pointers of :attr:`csr`."""
        return self.csr.indptr

    @property
    def indices(self) -> np.ndarray:
        """``(2E,)`` int64: the neighbours of every node, node by node (:attr:`csr`)."""
        return self.csr.indices

    @property
    def edge_ids(self) -> np.ndarray:
        """``(2E,)`` int64: the edge row joining a node to each neighbour (:attr:`csr`)."""
        return self.csr.edge_ids

    @cached_property
    def degree(self) -> np.ndarray:
        """Node degrees, ``(n,)`` int64."""
        d = np.diff(self.csr.indptr)
        _read_only(d)
        return d

    @cached_property
    def edge_pos(self) -> np.ndarray:
        """``(E, 2)``: ``[e, 0]`` is the position of ``j`` among the neighbours of ``i`` for
        ``e = (i, j)``, ``[e, 1]`` that of ``i`` among the neighbours of ``j``."""
        indptr, _, eids = self.csr
        pos = np.empty((self.n_edges, 2), dtype=np.int64)
        local = np.arange(len(eids)) - np.repeat(indptr[:-1], np.diff(indptr))
        owner = np.repeat(np.arange(self.n), np.diff(indptr))
        side = (self.edges[eids, 1] == owner).astype(np.int64)
        pos[eids, side] = local
        _read_only(pos)
        return pos

    @cached_property
    def structure(self) -> Structure:
        """The :class:`Structure` record the numba kernels take (cached, read-only)."""
        indptr, indices, edge_ids = self.csr
        return Structure(indptr, indices, edge_ids, self.edges, self.edge_pos)

    def memo(self, key: str, compute: Any) -> Any:
        """``compute(self)``, computed on the first call for ``key`` and kept with the graph.

        For structure another module derives from the graph alone (e.g. the sampler's
        colour-ordered adjacency): it lives as long as the graph, no global cache.

        Parameters
        ----------
        key : str
            The name the value is kept under.
        compute : callable
            ``compute(graph)`` returns the value; called once per ``key``.

        Returns
        -------
        object
            The kept value for ``key``.
        """
        store = self.__dict__.setdefault("_memo", {})
        if key not in store:
            store[key] = compute(self)
        return store[key]

    def grid_shape(self) -> tuple[int, int] | None:
        """``(rows, cols)`` when this graph is a :func:`square_grid`, else ``None``.

        Kept with the graph (the samplers ask at every call).

        Returns
        -------
        tuple of (int, int) or None
            ``(rows, cols)`` when the edges are those of :func:`square_grid` ``(rows, cols)``
            (node ``r * cols + c``), else ``None``; paths count as ``(n, 1)``.
        """
        return self.memo("square-grid-shape", _grid_shape)

    def neighbours(self) -> list[np.ndarray]:
        """List of sorted neighbour arrays, one per node (views of the CSR arrays).

        Returns
        -------
        list of ndarray of int64
            ``n`` read-only arrays, the sorted neighbours of each node.

        Raises
        ------
        ValueError
            If the lists would need more memory than is available.
        """
        # a list slot and an array view per node: 8 + 112 bytes (measured 121 per node)
        require_memory(128.0 * self.n + self._csr_bytes(),
                       f"the neighbour lists of a graph with n={self.n} nodes")
        indptr, indices, _ = self.csr
        return [indices[indptr[i]:indptr[i + 1]] for i in range(self.n)]

    def closed_neighbourhoods(self, q_ptr: np.ndarray, q_nodes: np.ndarray
                              ) -> tuple[np.ndarray, np.ndarray]:
        """``Q ∪ ∂Q`` for many node sets at once, packed as CSR ``(q_ptr, q_nodes)``.

        The one implementation of the closed 1-neighbourhood (a numba kernel): the LAP
        1-neighbourhood ``A_Q`` (Definition 7 of Mizrahi et al.) and the regions
        ``R_k``, ``N_k`` and ``∂A`` below are all built from it.

        Parameters
        ----------
        q_ptr : ndarray of int64, shape (m + 1,)
            Set ``s`` is ``q_nodes[q_ptr[s]:q_ptr[s + 1]]``.
        q_nodes : ndarray of int64
            The nodes of all ``m`` sets, packed.

        Returns
        -------
        a_ptr : ndarray of int64, shape (m + 1,)
            Row pointers of the closed neighbourhoods.
        a_nodes : ndarray of int64
            The sorted sets ``Q ∪ ∂Q``, packed likewise.
        """
        return one_neighbourhoods(self.structure, q_ptr, q_nodes)

    def _closure(self, A: np.ndarray) -> np.ndarray:
        q_ptr = np.array([0, A.size], dtype=np.int64)
        return self.closed_neighbourhoods(q_ptr, np.ascontiguousarray(A, dtype=np.int64))[1]

    def regions(self, T: Any, k: int, name: str = "T") -> list[np.ndarray]:
        """``[R_0(T), R_1(T), ..., R_k(T)]`` of eq. (5) of the GSMCI paper, each sorted.

        Parameters
        ----------
        T : array_like of int
            A non-empty set of distinct nodes in ``0..n-1``.
        k : int
            The largest region index, ``>= 0``.
        name : str, default "T"
            The argument named in error messages.

        Returns
        -------
        list of ndarray of int64
            ``k + 1`` sorted node arrays, ``R_0(T) = T`` first.
        """
        T = check_nodes(T, self.n, name)
        if T.size == 0:
            raise ValueError(f"{name} must contain at least one node")
        k = check_positive(k, "k", integer=True, allow_zero=True)
        out = [T]
        for _ in range(k):
            out.append(out[-1] if out[-1].size == self.n else self._closure(out[-1]))
        return out

    def R_k(self, T: Any, k: int) -> np.ndarray:
        """The region ``R_k(T) = N_0(T) ∪ ... ∪ N_k(T)`` (GSMCI eq. 5), sorted.

        Parameters
        ----------
        T : array_like of int
            A non-empty set of distinct nodes in ``0..n-1``.
        k : int
            The region index, ``>= 0``.

        Returns
        -------
        ndarray of int64
            The sorted nodes of ``R_k(T)``.
        """
        return self.regions(T, k)[-1]

    def N_k(self, T: Any, k: int, name: str = "T") -> np.ndarray:
        """The k-th nearest-neighbour region ``N_k(T) = R_k(T) \\ R_{k-1}(T)``, sorted.

        Parameters
        ----------
        T : array_like of int
            A non-empty set of distinct nodes in ``0..n-1``.
        k : int
            The region index, ``>= 0``; ``N_0(T) = T``.
        name : str, default "T"
            The argument named in error messages.

        Returns
        -------
        ndarray of int64
            The sorted nodes of ``N_k(T)``.
        """
        r = self.regions(T, k, name)
        return r[0] if k == 0 else np.setdiff1d(r[-1], r[-2], assume_unique=True)

    def boundary(self, A: Any) -> np.ndarray:
        """The first-nearest-neighbour region ``∂A = N_1(A)`` (GSMCI eq. 8), sorted.

        Parameters
        ----------
        A : array_like of int
            A non-empty set of distinct nodes in ``0..n-1``.

        Returns
        -------
        ndarray of int64
            The sorted nodes adjacent to ``A`` and not in it.
        """
        return self.N_k(A, 1, "A")


#: The last few graphs built from edge arrays, by content: the same edges give the same
#: (immutable) Graph, so its cached structures serve every machine built on them.
_RECENT: OrderedDict = OrderedDict()
_RECENT_SIZE = 16
_RECENT_LOCK = threading.Lock()


def _content_key(edges: Any, n: Any) -> tuple | None:
    arr = np.asarray(edges)
    plain_n = n is None or (isinstance(n, (int, np.integer)) and not isinstance(n, bool))
    if arr.dtype != np.int64 or arr.ndim != 2 or not plain_n:
        return None
    digest = hashlib.blake2b(np.ascontiguousarray(arr).tobytes(), digest_size=16).digest()
    return (None if n is None else int(n), arr.shape, digest)


def as_graph(edges_or_graph: Any, n: int | None = None) -> Graph:
    """The :class:`Graph` of an edge array (validated here, once) or a ``Graph`` itself.

    An edge array equal to one of the last 16 converted (with the same ``n``) gives back
    that same ``Graph``.

    Parameters
    ----------
    edges_or_graph : array_like of int, shape (E, 2), or Graph
        A canonical edge array (checked) or a :class:`Graph` (returned as it is).
    n : int or None, default None
        Number of nodes. ``None`` takes the largest label + 1 of an edge array; for a
        ``Graph`` it is checked against ``graph.n`` when given.

    Returns
    -------
    Graph
        The validated, immutable graph.
    """
    if isinstance(edges_or_graph, Graph):
        if n is not None and int(check_positive(n, "n", integer=True)) != edges_or_graph.n:
            raise ValueError(f"n = {n} does not match the graph's {edges_or_graph.n} nodes")
        return edges_or_graph
    key = _content_key(edges_or_graph, n)
    with _RECENT_LOCK:
        if key is not None and key in _RECENT:
            _RECENT.move_to_end(key)
            return _RECENT[key]
    graph = Graph(num_nodes(edges_or_graph, n), edges_or_graph)
    if key is not None:
        with _RECENT_LOCK:
            _RECENT[key] = graph
            while len(_RECENT) > _RECENT_SIZE:
                _RECENT.popitem(last=False)
    return graph


def adjacency(edges: Any, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compressed sparse row adjacency (the :attr:`Graph.csr` of ``edges``).

    Parameters
    ----------
    edges : array_like of int, shape (E, 2), or Graph
        A canonical edge array or a :class:`Graph`.
    n : int
        Number of nodes (may be ``None`` for a ``Graph`` or a non-empty edge array, as in
        :func:`as_graph`).

    Returns
    -------
    indptr : (n + 1,) int64
    indices : (2E,) int64
        Neighbours of node ``i`` are ``indices[indptr[i]:indptr[i + 1]]``, sorted.
    edge_ids : (2E,) int64
        The row of ``edges`` that joins ``i`` to each of those neighbours.
    """
    return tuple(as_graph(edges, n).csr)


def neighbours(edges: Any, n: int | None = None) -> list[np.ndarray]:
    """List of sorted neighbour arrays, one per node.

    Parameters
    ----------
    edges : array_like of int, shape (E, 2), or Graph
        A canonical edge array or a :class:`Graph`.
    n : int or None, default None
        Number of nodes, as in :func:`as_graph`.

    Returns
    -------
    list of ndarray of int64
        ``n`` read-only arrays, the sorted neighbours of each node.
    """
    return as_graph(edges, n).neighbours()


def N_k(edges: Any, n: int | None, T: Any, k: int) -> np.ndarray:
    """The k-th nearest-neighbour region ``N_k(T)`` of eq. (5) (GSMCI paper), sorted.

    ``N_0(T) = T``; ``N_k(T)`` holds the nodes adjacent to ``N_{k-1}(T)`` that are not
    in ``R_{k-1}(T)``.

    Parameters
    ----------
    edges, n
        The graph, as in :func:`as_graph`.
    T, k
        As in :meth:`Graph.N_k`.

    Returns
    -------
    ndarray of int64
        The sorted nodes of ``N_k(T)``.
    """
    return as_graph(edges, n).N_k(T, k)


def R_k(edges: Any, n: int | None, T: Any, k: int) -> np.ndarray:
    """The region ``R_k(T) = N_0(T) ∪ ... ∪ N_k(T)`` of eq. (5) (GSMCI paper), sorted.

    Parameters
    ----------
    edges, n
        The graph, as in :func:`as_graph`.
    T, k
        As in :meth:`Graph.R_k`.

    Returns
    -------
    ndarray of int64
        The sorted nodes of ``R_k(T)``.
    """
    return as_graph(edges, n).R_k(T, k)


def boundary(edges: Any, n: int | None, A: Any) -> np.ndarray:
    """The first-nearest-neighbour region ``∂A`` of a node set ``A`` (GSMCI eq. 8), sorted.

    Parameters
    ----------
    edges, n
        The graph, as in :func:`as_graph`.
    A
        As in :meth:`Graph.boundary`.

    Returns
    -------
    ndarray of int64
        The sorted nodes adjacent to ``A`` and not in it.
    """
    return as_graph(edges, n).boundary(A)


def to_networkx(edges: Any, n: int | None = None) -> nx.Graph:
    """The graph as a :class:`networkx.Graph` with nodes ``0..n-1``.

    Parameters
    ----------
    edges : array_like of int, shape (E, 2), or Graph
        A canonical edge array or a :class:`Graph`.
    n : int or None, default None
        Number of nodes, as in :func:`as_graph` (isolated nodes are kept).

    Returns
    -------
    networkx.Graph
        A new graph with nodes ``0..n-1`` and the given edges.

    Raises
    ------
    ValueError
        If the networkx graph would need more memory than is available.
    """
    import networkx as nx

    graph = as_graph(edges, n)
    require_memory(500.0 * (graph.n + len(graph.edges)), f"to_networkx with n={graph.n} nodes")
    g = nx.Graph()
    g.add_nodes_from(range(graph.n))
    g.add_edges_from(map(tuple, graph.edges.tolist()))
    return g
