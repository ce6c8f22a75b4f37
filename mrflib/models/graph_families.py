"""Graph families: the canonical edge arrays of lattices, Chimera, complete and random graphs,
and of any node pairs.

Conventions (``book/notation.md``): nodes are ``0..n-1``; every edge row is ``(i, j)`` with
``i < j``; rows are sorted lexicographically; no duplicates. Square grids number nodes
row-major.

A family only builds an edge array. The validated, immutable
:class:`~mrflib.models.graphs.Graph` that holds one, with its adjacency and neighbourhood
regions, is :mod:`mrflib.models.graphs`, which re-exports every function here:
``graphs.square_grid`` is the path the library and the book call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.validation import as_rng, check_positive, require_memory

__all__ = ["square_grid", "king_grid", "random_graph", "complete", "chimera", "cubic",
           "from_pairs"]


def _sorted_unique(pairs: np.ndarray) -> np.ndarray:
    pairs = np.sort(np.asarray(pairs, dtype=np.int64).reshape(-1, 2), axis=1)
    if pairs.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    # lexsort and drop repeats: the rows np.unique(pairs, axis=0) gives, without its sort
    # of row records (seconds for the half million edges of a photograph's lattice)
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    keep = np.ones(len(pairs), dtype=bool)
    keep[1:] = np.any(pairs[1:] != pairs[:-1], axis=1)
    return np.ascontiguousarray(pairs[keep])


def from_pairs(pairs: Any) -> np.ndarray:
    """Normalize any iterable of node pairs into the canonical edge array.

    Parameters
    ----------
    pairs : iterable of pairs of int, or array_like of int, shape (E, 2)
        Node pairs in any order, either end first, repeats allowed. Labels must be
        non-negative integers; self-loops ``(i, i)`` are refused. ``None`` and strings are
        refused.

    Returns
    -------
    ndarray of int64, shape (E', 2)
        The canonical edge array: each pair ordered ``i < j``, rows sorted and duplicates
        removed (``(0, 2)`` for no pairs).
    """
    if pairs is None or isinstance(pairs, (str, bytes)):
        raise ValueError(f"pairs must be a collection of node pairs, got {pairs!r}")
    arr = np.asarray(list(pairs) if not isinstance(pairs, np.ndarray) else pairs)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype.kind not in "iu":
        raise ValueError(f"pairs must be integer node pairs of shape (E, 2), got {arr.shape}")
    if np.any(arr[:, 0] == arr[:, 1]):
        raise ValueError("pairs must not contain self-loops (i, i)")
    if np.any(arr < 0):
        raise ValueError("pairs must contain non-negative node labels")
    return _sorted_unique(arr)


def square_grid(rows: int, cols: int) -> np.ndarray:
    """Edges of a ``rows x cols`` square lattice with open boundaries.

    Node ``r * cols + c`` sits at row ``r``, column ``c`` (row-major).

    Parameters
    ----------
    rows : int
        Number of rows, positive.
    cols : int
        Number of columns, positive.

    Returns
    -------
    ndarray of int64, shape (E, 2)
        The canonical edge array, ``E = rows (cols - 1) + (rows - 1) cols``.

    Raises
    ------
    ValueError
        If the edge array would need more memory than is available.
    """
    rows = check_positive(rows, "rows", integer=True)
    cols = check_positive(cols, "cols", integer=True)
    require_memory(160.0 * rows * cols, f"square_grid(rows={rows}, cols={cols})")
    idx = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    right = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1)
    down = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], axis=1)
    return _sorted_unique(np.concatenate([right, down]))


def king_grid(rows: int, cols: int) -> np.ndarray:
    """Edges of a ``rows x cols`` king's-move lattice: the square lattice plus both diagonals.

    Every inner node has 8 neighbours (the squares a chess king reaches); open boundaries.
    Node ``r * cols + c`` sits at row ``r``, column ``c`` (row-major), as in
    :func:`square_grid`, whose edges are a subset of these.

    Parameters
    ----------
    rows : int
        Number of rows, positive.
    cols : int
        Number of columns, positive.

    Returns
    -------
    ndarray of int64, shape (E, 2)
        The canonical edge array.

    Raises
    ------
    ValueError
        If the edge array would need more memory than is available.
    """
    rows = check_positive(rows, "rows", integer=True)
    cols = check_positive(cols, "cols", integer=True)
    require_memory(400.0 * rows * cols, f"king_grid(rows={rows}, cols={cols})")
    idx = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    diag = np.stack([idx[:-1, :-1].ravel(), idx[1:, 1:].ravel()], axis=1)
    anti = np.stack([idx[:-1, 1:].ravel(), idx[1:, :-1].ravel()], axis=1)
    return _sorted_unique(np.concatenate([square_grid(rows, cols), diag, anti]))


def cubic(L: int) -> np.ndarray:
    """Edges of an ``L x L x L`` simple cubic lattice with open boundaries.

    Node ``(x * L + y) * L + z`` sits at ``(x, y, z)``.

    Parameters
    ----------
    L : int
        Side length, positive.

    Returns
    -------
    ndarray of int64, shape (E, 2)
        The canonical edge array, ``E = 3 L^2 (L - 1)``.

    Raises
    ------
    ValueError
        If the edge array would need more memory than is available.
    """
    L = check_positive(L, "L", integer=True)
    require_memory(240.0 * L**3, f"cubic(L={L})")
    idx = np.arange(L**3, dtype=np.int64).reshape(L, L, L)
    parts = [
        np.stack([idx[:-1].ravel(), idx[1:].ravel()], axis=1),
        np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1),
        np.stack([idx[:, :, :-1].ravel(), idx[:, :, 1:].ravel()], axis=1),
    ]
    return _sorted_unique(np.concatenate(parts))


def complete(n: int) -> np.ndarray:
    """Edges of the complete graph on ``n`` nodes (the SK / fully connected model).

    Parameters
    ----------
    n : int
        Number of nodes, positive.

    Returns
    -------
    ndarray of int64, shape (n (n - 1) / 2, 2)
        Every pair ``(i, j)``, ``i < j``, in lexicographic order.

    Raises
    ------
    ValueError
        If the edge array would need more memory than is available.
    """
    n = check_positive(n, "n", integer=True)
    require_memory(56.0 * n * (n - 1) / 2 + 2.0 * n * n, f"complete(n={n})")
    i, j = np.triu_indices(n, k=1)
    return np.ascontiguousarray(np.stack([i, j], axis=1).astype(np.int64))


def random_graph(n: int, p: float, *, rng: Any) -> np.ndarray:
    """Erdős–Rényi graph: each of the ``n(n-1)/2`` pairs is joined with probability ``p``.

    This is the random-graph setting of the GSMCI paper's experiments (section 4,
    p = 0.2 and 0.4).

    Parameters
    ----------
    n : int
        Number of nodes, positive.
    p : float
        Edge probability, in ``[0, 1]``.
    rng : numpy.random.Generator or int
        Generator or non-negative seed. The draw uses one uniform per pair in
        :func:`complete` order, so the same seed gives the same graph.

    Returns
    -------
    ndarray of int64, shape (E, 2)
        The canonical edge array of the kept pairs.

    Raises
    ------
    ValueError
        If the pairs would need more memory than is available.
    """
    n = check_positive(n, "n", integer=True)
    p = check_positive(p, "p", allow_zero=True)
    if p > 1:
        raise ValueError(f"p must be a probability in [0, 1], got {p}")
    rng = as_rng(rng)
    require_memory(80.0 * n * (n - 1) / 2 + 2.0 * n * n, f"random_graph(n={n})")
    pairs = complete(n) if n > 1 else np.zeros((0, 2), dtype=np.int64)
    keep = rng.random(len(pairs)) < p
    return np.ascontiguousarray(pairs[keep])


def chimera(m: int, n: int, t: int = 4) -> np.ndarray:
    """Edges of the Chimera graph C(m, n, t): an ``m x n`` grid of K_{t,t} unit cells.

    Node ``((i * n + j) * 2 + u) * t + k`` is shore ``u`` (0: vertical, 1: horizontal),
    position ``k`` of the cell in row ``i``, column ``j`` (the D-Wave numbering).
    Vertical-shore nodes couple to the same position in the cell below, horizontal-shore
    nodes to the cell on the right.

    Parameters
    ----------
    m : int
        Number of rows of unit cells, positive.
    n : int
        Number of columns of unit cells, positive.
    t : int, default 4
        Shore size: each unit cell is ``K_{t,t}``, positive.

    Returns
    -------
    ndarray of int64, shape (E, 2)
        The canonical edge array on ``2 m n t`` nodes.

    Raises
    ------
    ValueError
        If the edge array would need more memory than is available.
    """
    m = check_positive(m, "m", integer=True)
    n = check_positive(n, "n", integer=True)
    t = check_positive(t, "t", integer=True)
    require_memory(256.0 * m * n * t * t, f"chimera(m={m}, n={n}, t={t})")

    def node(i, j, u, k):
        return ((i * n + j) * 2 + u) * t + k

    ii, jj, kk, ll = np.meshgrid(np.arange(m), np.arange(n), np.arange(t), np.arange(t),
                                 indexing="ij")
    intra = np.stack([node(ii, jj, 0, kk).ravel(), node(ii, jj, 1, ll).ravel()], axis=1)
    ii, jj, kk = np.meshgrid(np.arange(m), np.arange(n), np.arange(t), indexing="ij")
    down = ii < m - 1
    vert = np.stack([node(ii, jj, 0, kk)[down], node(ii + 1, jj, 0, kk)[down]], axis=1)
    right = jj < n - 1
    horiz = np.stack([node(ii, jj, 1, kk)[right], node(ii, jj + 1, 1, kk)[right]], axis=1)
    return _sorted_unique(np.concatenate([intra, vert, horiz]))
