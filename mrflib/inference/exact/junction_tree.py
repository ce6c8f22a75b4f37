"""Exact inference on graphs of small treewidth: variable elimination on a junction tree.

For the pairwise ±1 model ``P(x) ∝ exp(Σ b_i x_i + Σ J_ij x_i x_j)`` (eq. (3) of the GSMCI
paper, eq. (1) of the SMCI-learning paper) the spins are summed out one at a time in an
*elimination order*. Eliminating ``v`` multiplies every factor that touches ``v`` into a
table over the clique ``S_v = {v} ∪ N_v`` (``N_v``: the neighbours of ``v`` not yet
eliminated, fill edges included) and sums ``v`` out, leaving a message over ``N_v``:

.. math::  m_v(x_{N_v}) = \\log \\sum_{x_v = \\pm 1} \\exp\\Big(x_v \\big(b_v +
           \\sum_{u \\in N_v} J_{vu} x_u\\big) + \\sum_{c \\to v} m_c(x_{N_c})\\Big).

The message goes to the first-eliminated node of ``N_v`` (its parent); the cliques and
these parent links form a junction tree, whose largest clique has ``treewidth + 1``
spins. The sum of the roots' messages is ``log Z``. Everything is in log space
(log-sum-exp), so every finite model gives finite answers.

* ``log Z``: one upward pass, ``O(Σ_v 2^{|S_v|})`` work.
* Node means and edge moments: a downward (Hugin) pass that gives each clique its
  marginal; every edge lies in the clique of its first-eliminated end.
* Exact samples: forward filtering (the upward pass) then backward sampling,
  ``P(x_v = +1 | x_{N_v}) = σ(table_v(+1, x_{N_v}) - table_v(-1, x_{N_v}))`` in reverse
  elimination order.

The order comes from the one order search of the library,
:func:`mrflib.inference.exact.elimination_order.best_order` (factor graphs use it too), on the
graph with two states per spin: the best of the node order itself, (reverse)
Cuthill-McKee, min-degree and min-fill, scored by the largest clique table; a
``rows x cols`` lattice gets width ``min(rows, cols)``.
Precision: exact within the limit :mod:`mrflib.models.precision` states (and argues once
for every engine); beyond it :mod:`mrflib.inference.exact` warns before calling this engine.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import numpy as np

from mrflib._support.deprecation import renamed_argument
from mrflib._support.validation import (
    as_rng,
    check_bias,
    check_coupling,
    check_edges,
    check_indices,
    check_positive,
    format_bytes,
    require_memory,
)
from mrflib.inference.exact import _elimination_order_kernels as _ek
from mrflib.inference.exact import _junction_tree_kernels as _k
from mrflib.inference.exact import elimination_order as eo
from mrflib.inference.exact import treewidth_bounds as tb
from mrflib.inference.exact.elimination_order import Plan, connect_neighbours
from mrflib.models import graphs
from mrflib.models.boltzmann import (
    BoltzmannMachine,
    check_model,
    overflow_exponent,
    unscale_log_partition,
)
from mrflib.models.precision import checked

__all__ = ["JunctionTree", "plan", "log_partition", "moments", "sample", "condition",
           "MAX_WIDTH"]

#: Widths beyond this are refused without further search (a table of 2^63 entries).
MAX_WIDTH = 62
#: Graphs up to this many nodes get their cliques from a compiled kernel on an adjacency
#: bit matrix, as factor graphs get their orders.
_DENSE_MAX_NODES = eo.DENSE_MAX_NODES
_LOG2 = math.log(2.0)


# --------------------------------------------------------------------------- orders
def _neighbour_sets(edges: np.ndarray, n: int) -> list[set]:
    indptr, indices, _ = graphs.adjacency(edges, n)
    return [set(indices[indptr[i]:indptr[i + 1]].tolist()) for i in range(n)]


def _eliminate(nbrs: list[set], order: list[int], limit: int) -> tuple[list, int]:
    """Neighbour sets at elimination time, or ``(None, size)`` once a clique exceeds ``limit``."""
    adj = [set(s) for s in nbrs]
    out = []
    for v in order:
        nb = adj[v]
        if len(nb) + 1 > limit:
            return None, len(nb) + 1
        out.append(nb)
        connect_neighbours(adj, v)
    return out, max((len(s) + 1 for s in out), default=1)


def _dense_of_edges(edges: np.ndarray, n: int) -> np.ndarray | None:
    """The adjacency bit matrix of the compiled order kernels straight from the (checked)
    edge list; ``None`` beyond ``eo.DENSE_MAX_NODES`` nodes."""
    if n > _DENSE_MAX_NODES:
        return None
    return _ek.bit_matrix(n, np.concatenate([edges[:, 0], edges[:, 1]]),
                          np.concatenate([edges[:, 1], edges[:, 0]]))


def _clique_sizes(nbrs: list[set], dense: np.ndarray | None, order: list[int], limit: int
                  ) -> tuple[list[int] | None, int]:
    """Neighbours of each node when eliminated in ``order`` and the largest clique, or
    ``(None, size)`` at the first clique beyond ``limit`` (as :func:`_eliminate`)."""
    if dense is None:
        cliques, size = _eliminate(nbrs, order, limit)
        return (None if cliques is None else [len(c) for c in cliques]), size
    sizes = np.zeros(len(order), dtype=np.int64)
    done = _ek.clique_sizes_dense(dense.copy(), np.asarray(order, dtype=np.int64), limit,
                                  sizes)
    if done < len(order):
        return None, int(sizes[done]) + 1
    return sizes.tolist(), int(sizes.max(initial=0)) + 1


def elimination_order(edges: Any, n: int, order: Any = None) -> tuple[list[int], str, int]:
    """The elimination order, the heuristic that found it, and its treewidth.

    The search of factor graphs, :func:`mrflib.inference.exact.elimination_order.best_order`,
    on the graph with two states per spin: per connected component the best of the
    natural node order, (reverse) Cuthill-McKee and the greedy criteria (min-weight, which
    is min-degree here, and min-fill), by the largest clique, then the total table size.

    Parameters
    ----------
    edges : array_like of int, shape (E, 2)
        The graph's edges ``i < j``, checked.
    n : int
        Number of nodes.
    order : array_like of int or None, default None
        An order to use instead of searching: a permutation of ``0..n-1``.

    Returns
    -------
    order : list of int
        The elimination order.
    heuristic : str
        The heuristic(s) that won, ``+``-joined over the components (``"given"`` for a
        given ``order``).
    treewidth : int
        The order's largest clique minus one.

    Raises
    ------
    ValueError
        When no order of treewidth at most :data:`MAX_WIDTH` is found (with a lower bound
        on the treewidth).
    """
    edges = check_edges(edges, n)
    return _elimination_order(edges, n, order, _dense_of_edges(edges, n))


def _elimination_order(edges: np.ndarray, n: int, order: Any, dense: np.ndarray | None
                       ) -> tuple[list[int], str, int]:
    """:func:`elimination_order` of checked ``edges`` and their adjacency bit matrix (or
    ``None`` beyond ``eo.DENSE_MAX_NODES``)."""
    nbrs = _neighbour_sets(edges, n)
    if order is not None:
        order = check_indices(order, n, "order").tolist()
        if sorted(order) != list(range(n)):
            raise ValueError(f"order must be a permutation of 0..{n - 1}")
        _, size = _clique_sizes(nbrs, dense, order, MAX_WIDTH + 1)
        return order, "given", size - 1
    logc = [_LOG2] * n
    full, names, width = [], set(), 0
    for comp in eo.components(nbrs, range(n)):
        found = eo.best_order(nbrs, logc, comp, (MAX_WIDTH + 1) * _LOG2)
        if found.order is None:  # (no order within MAX_WIDTH: a proved bound says how far)
            _refuse_width(tb.treewidth_lower_bound(nbrs, comp), exact=False)
        full += found.order
        names.add(found.heuristic)
        width = max(width, found.width)
    return full, "+".join(sorted(names)), width


def _refuse_width(width: int, exact: bool = True) -> None:
    """Refuse a graph whose order has treewidth ``width`` (``exact``), or of which no
    order within :data:`MAX_WIDTH` was found, ``width`` being a lower bound."""
    need = 8 * 2.0 ** (width + 1)
    if exact:
        raise ValueError(f"the junction tree has treewidth {width}: its largest clique table "
                         f"would need {format_bytes(need)} of memory (limit: treewidth "
                         f"{MAX_WIDTH})")
    raise ValueError(f"no elimination order of treewidth at most {MAX_WIDTH} was found "
                     f"(treewidth >= {width}: its largest clique table would need at least "
                     f"{format_bytes(need)} of memory)")


def _scopes(edges: np.ndarray, n: int, order: np.ndarray, pos: np.ndarray, width: int,
            dense: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Clique sizes and the concatenated cliques ``(order[t], N_t sorted by position)`` of
    eliminating ``order`` (compiled on the bit matrix ``dense``, which it changes)."""
    if dense is not None:
        scope = np.empty((n, width + 1), dtype=np.int64)
        sizes = np.empty(n, dtype=np.int64)
        _ek.scopes_dense(dense, order, pos, scope, sizes)
        return sizes, scope[np.arange(width + 1) < sizes[:, None]]
    cliques, _ = _eliminate(_neighbour_sets(edges, n), order.tolist(), MAX_WIDTH + 1)
    scopes = [np.concatenate([[v], sorted(nb, key=pos.__getitem__)]).astype(np.int64)
              for v, nb in zip(order.tolist(), cliques)]
    return np.array([len(c) for c in scopes], dtype=np.int64), np.concatenate(scopes)


# --------------------------------------------------------------------------- plan
class JunctionTree(Plan):
    """The elimination plan of a graph: order, cliques, junction tree, lookup tables.

    The plan depends on the graph only; :meth:`calibrate` and :meth:`sample` take the
    parameters, so a learner builds it once.

    Parameters
    ----------
    edges : array_like of int, shape (E, 2)
        The graph's edges ``i < j``, checked.
    n : int
        Number of nodes, at least 1.
    order : array_like of int or None, default None
        An elimination order to use (a permutation of ``0..n-1``); ``None`` searches one
        (``elimination_order``).

    Attributes
    ----------
    n : int
        Number of spins.
    edges : ndarray of int64, shape (E, 2)
        The checked edges.
    order : ndarray of int64, shape (n,)
        Elimination order (spin ``order[t]`` is summed out at step ``t``).
    treewidth : int
        Largest clique size minus one for this order (an upper bound on the graph's
        treewidth; ``min(rows, cols)`` for a lattice).
    heuristic : str
        The ordering heuristic that won.
    cliques : list of ndarray
        ``S_t = (order[t], N_t)`` for each step.
    max_clique : int
        Spins in the largest clique (``treewidth + 1``).
    msg_entries : int
        ``Σ_t 2^{|S_t| - 1}``, the entries of all messages.
    table_entries : int
        ``Σ_t 2^{|S_t|}``, the work of one pass (the order's cost among equal widths).
    scope_nodes, scope_ptr, parent, children, child_ptr, msg_off : ndarray of int64
        The flat arrays the compiled passes walk: the cliques (concatenated, cut at
        ``scope_ptr``), each step's parent step (``-1``: a root), its children (cut at
        ``child_ptr``) and the offset of its message.
    child_map, maps, edge_id, edge_q, edge_ptr : ndarray of int64
        The index maps from a child's message to its parent's clique, and each edge's
        clique and position in it.
    tree : tuple of ndarray
        Those arrays in the kernels' order (``_junction_tree_kernels.TREE``).

    Raises
    ------
    ValueError
        When the order's treewidth is beyond :data:`MAX_WIDTH`, or its tables do not fit
        in memory.
    """

    def __init__(self, edges: Any, n: int, order: Any = None) -> None:
        n = int(check_positive(n, "n", integer=True))
        edges = check_edges(edges, n)
        dense = _dense_of_edges(edges, n)
        order, self.heuristic, width = _elimination_order(edges, n, order, dense)
        if width > MAX_WIDTH:
            _refuse_width(width)
        self.n, self.edges, self.treewidth = n, edges, int(width)
        self.order = np.asarray(order, dtype=np.int64)
        pos = np.empty(n, dtype=np.int64)
        pos[self.order] = np.arange(n)
        sizes, self.scope_nodes = _scopes(edges, n, self.order, pos, int(width), dense)
        self.msg_entries = int(np.sum(2.0 ** (sizes - 1)))
        self.table_entries = 2 * self.msg_entries  # work of one pass, in table entries
        self.max_clique = int(sizes.max())
        require_memory(self.memory_bytes(), self._what())
        self._build(pos, sizes)

    # ------------------------------------------------------------------ construction
    def _what(self, sampling: bool = False) -> str:
        return (f"the junction tree of treewidth {self.treewidth} (largest clique table "
                f"2^{self.max_clique} entries{', with sampling tables' if sampling else ''})")

    def memory_bytes(self, sampling: bool = False) -> float:
        """Peak bytes of a calibration (messages, two clique tables, temporaries).

        Parameters
        ----------
        sampling : bool, default False
            Count the log-odds tables that sampling keeps beside the messages.

        Returns
        -------
        float
            The bytes.
        """
        tables = 2.0 ** self.max_clique * 3 + 2.0 ** (self.max_clique - 1) * 2
        maps = 3 * 2.0 ** (self.max_clique // 2 + 1) * self.n
        return 8.0 * ((2 if sampling else 1) * self.msg_entries + tables + maps)

    def _build(self, pos: np.ndarray, sizes: np.ndarray) -> None:
        n = self.n
        self.scope_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.scope_ptr[1:])
        # a clique's message goes to its first-eliminated other spin (its parent)
        second = self.scope_nodes[np.minimum(self.scope_ptr[:-1] + 1, self.scope_ptr[-1] - 1)]
        self.parent = np.where(sizes > 1, pos[second], -1).astype(np.int64)
        self.msg_off = np.concatenate([[0], np.cumsum(2 ** (sizes - 1))[:-1]]).astype(np.int64)
        has = self.parent >= 0  # children of each parent, in elimination order
        self.children = np.flatnonzero(has)[np.argsort(self.parent[has], kind="stable")]
        self.child_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.parent[has], minlength=n), out=self.child_ptr[1:])
        psize = sizes[self.parent[self.children]] if len(self.children) else sizes[:0]
        lens = 2 ** (psize // 2) + 2 ** (psize - psize // 2)
        self.child_map = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
        self.maps = np.zeros(max(1, int(lens.sum())), dtype=np.int64)
        _k.fill_maps(self.scope_ptr, pos[self.scope_nodes], self.parent, self.children,
                     self.child_map, self.maps)
        # each edge (i, j) belongs to the clique of its first-eliminated end
        rows = np.arange(len(self.edges))
        first = np.where(pos[self.edges[:, 0]] < pos[self.edges[:, 1]], 0, 1)
        step = pos[self.edges[rows, first]]
        eorder = np.argsort(step, kind="stable")
        self.edge_id = eorder.astype(np.int64)
        self.edge_q = np.zeros(len(eorder), dtype=np.int64)
        _k.edge_positions(self.scope_ptr, self.scope_nodes, step[eorder],
                          self.edges[rows, 1 - first][eorder], self.edge_q)
        self.edge_ptr = np.searchsorted(step[eorder], np.arange(n + 1)).astype(np.int64)
        self.tree = tuple(getattr(self, name) for name in _k.TREE)  # the kernels' record

    @property
    def max_table_bytes(self) -> int:
        """Bytes of the largest clique table (float64), as in
        :class:`~mrflib.inference.exact.elimination.EliminationPlan`."""
        return 8 * 2 ** self.max_clique

    @property
    def total_bytes(self) -> int:
        """Bytes of all clique tables (float64): ``8 * table_entries``."""
        return 8 * self.table_entries

    @property
    def cliques(self) -> list[np.ndarray]:
        """``S_t = (order[t], N_t)`` for each step, one ``int64`` array each (copies).
        """
        return np.split(self.scope_nodes.copy(), self.scope_ptr[1:-1])

    def __repr__(self) -> str:
        return (f"JunctionTree(n={self.n}, treewidth={self.treewidth}, "
                f"heuristic={self.heuristic!r})")

    # ------------------------------------------------------------------ inference
    def _params(self, bias: Any, coupling: Any) -> tuple[np.ndarray, np.ndarray, int]:
        """The parameters validated as the model constructor does (finite, real, one per
        node and per edge), scaled by ``2^-k`` with ``k`` from :func:`overflow_exponent`."""
        b = check_bias(bias, self.n)
        J = check_coupling(coupling, len(self.edges))
        k = overflow_exponent(b, J)
        if k:
            b, J = np.ldexp(b, -k), np.ldexp(J, -k)
        return b, J, k

    def _upward(self, b, J, k: int, want_logodds: bool):
        msgs = np.empty(self.msg_entries)
        logodds = np.empty(self.msg_entries if want_logodds else 1)
        table = np.empty(1 << self.max_clique)
        logz = _k.upward(self.tree, b, J, msgs, logodds, want_logodds, table, 2.0**k)
        return float(logz), msgs, logodds, table

    def log_partition(self, bias: Any, coupling: Any) -> float:
        """``log Z`` by one upward pass (``+inf`` with a warning beyond the float range):
        :meth:`log_partition_scaled`, scaled back.

        Parameters
        ----------
        bias, coupling
            As in :meth:`calibrate`.

        Returns
        -------
        float
            The natural log of the partition function.
        """
        return unscale_log_partition(*self.log_partition_scaled(bias, coupling))

    def log_partition_scaled(self, bias: Any, coupling: Any) -> tuple[float, int]:
        """``(2^-k log Z, k)``, finite for every finite model.

        Parameters
        ----------
        bias, coupling
            The parameters, as in :meth:`calibrate`.

        Returns
        -------
        scaled_log_z : float
            ``2^-k log Z``.
        k : int
            The exponent of :func:`mrflib.models.boltzmann.overflow_exponent` (0 for models of
            ordinary range).
        """
        b, J, k = self._params(bias, coupling)
        return self._upward(b, J, k, False)[0], k

    def calibrate(self, bias: Any, coupling: Any) -> tuple[float, np.ndarray, np.ndarray]:
        """``log Z`` and the moments by an upward and a downward pass.

        Parameters
        ----------
        bias : array_like of float, shape (n,)
            Biases ``b_i``: finite reals (checked as the model constructor checks them).
        coupling : array_like of float, shape (E,)
            Couplings ``J_ij``, one per row of ``edges``: finite reals.

        Returns
        -------
        log_z : float
            The natural log of the partition function (``+inf`` with a warning beyond the
            float range).
        mean : ndarray of float64, shape (n,)
            ``<x_i>``.
        pair : ndarray of float64, shape (E,)
            ``<x_i x_j>`` of each edge.
        """
        b, J, k = self._params(bias, coupling)
        logz, msgs, _, table = self._upward(b, J, k, False)
        half = 1 << (self.max_clique - 1)
        mean, pair = np.empty(self.n), np.empty(len(self.edges))
        _k.downward(self.tree, b, J, msgs, table, np.empty_like(table), np.empty(half),
                    np.empty(half), mean, pair, 2.0**k)
        return unscale_log_partition(logz, k), mean, pair

    def sample(self, bias: Any, coupling: Any, n_samples: int, *, rng: Any) -> np.ndarray:
        """Exact i.i.d. samples (forward filtering, backward sampling).

        Uniforms are drawn from ``rng`` in blocks of ``(rows, n)`` (row ``s``, column
        ``t`` decides spin ``order[t]`` of sample ``s``): the same seed gives the same
        samples, whatever the block size.

        Parameters
        ----------
        bias, coupling
            The parameters, as in :meth:`calibrate`.
        n_samples : int
            Number of samples, at least 1.
        rng : int or numpy.random.Generator
            Seed or generator of the uniforms.

        Returns
        -------
        ndarray of int8, shape (n_samples, n)
            The samples, spins ``-1/+1``.

        Raises
        ------
        ValueError
            When the samples and the sampling tables do not fit in memory.
        """
        b, J, k = self._params(bias, coupling)
        n_samples = int(check_positive(n_samples, "n_samples", integer=True))
        rng = as_rng(rng)
        require_memory(float(n_samples) * self.n + 8 * 2**20,
                       f"n_samples = {n_samples} samples of {self.n} spins")
        require_memory(self.memory_bytes(True) + n_samples * self.n, self._what(True))
        _, _, logodds, _ = self._upward(b, J, k, True)
        out = np.empty((n_samples, self.n), dtype=np.int8)
        block = max(1, min(n_samples, 2**18 // self.n))
        work = np.empty((self.n, block), dtype=np.int8)
        for start in range(0, n_samples, block):
            u = rng.random((min(block, n_samples - start), self.n))
            w = work[:, :len(u)]
            _k.sample(self.tree, logodds, np.ascontiguousarray(u.T), w, 2.0**k)
            out[start:start + len(u)] = w.T
        return out


# --------------------------------------------------------------------------- model level
_CACHE: OrderedDict = OrderedDict()


def plan(bm_or_edges: Any, n: int | None = None) -> JunctionTree:
    """The (cached) :class:`JunctionTree` of a machine's graph or of ``edges`` on ``n`` nodes.

    Its ``order``, ``treewidth`` and ``heuristic`` say what the engine will do. The last
    eight plans are kept, by graph.

    Parameters
    ----------
    bm_or_edges : BoltzmannMachine or array_like of int, shape (E, 2)
        A model (its graph), or an edge list.
    n : int or None, default None
        Number of nodes of an edge list (``None``: one more than its largest node);
        ignored for a model.

    Returns
    -------
    JunctionTree
        The plan.
    """
    if isinstance(bm_or_edges, BoltzmannMachine):
        edges, n = bm_or_edges.edges, bm_or_edges.n
    else:
        n = graphs.num_nodes(bm_or_edges, n)
        edges = check_edges(bm_or_edges, n)
    key = (n, np.asarray(edges, dtype=np.int64).tobytes())
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    jt = JunctionTree(edges, n)
    _CACHE[key] = jt
    while len(_CACHE) > 8:
        _CACHE.popitem(last=False)
    return jt


@renamed_argument("bm", "model")
@checked
def log_partition(model: BoltzmannMachine) -> float:
    """``log Z`` of ``model`` by variable elimination (junction-tree engine).

    Parameters
    ----------
    model : BoltzmannMachine
        The model (a ``TypeError`` naming ``model`` otherwise).

    Returns
    -------
    float
        The natural log of the partition function (``+inf`` with a warning beyond the
        float range).
    """
    model = check_model(model, "model")
    return plan(model).log_partition(model.bias, model.coupling)


@renamed_argument("bm", "model")
@checked
def moments(model: BoltzmannMachine) -> tuple[float, np.ndarray, np.ndarray]:
    """``log Z`` and the moments of ``model`` (junction-tree engine).

    Parameters
    ----------
    model : BoltzmannMachine
        The model (a ``TypeError`` naming ``model`` otherwise).

    Returns
    -------
    log_z : float
        The natural log of the partition function.
    mean : ndarray of float64, shape (n,)
        ``<x_i>``.
    pair : ndarray of float64, shape (E,)
        ``<x_i x_j>`` per edge.
    """
    model = check_model(model, "model")
    return plan(model).calibrate(model.bias, model.coupling)


@renamed_argument("bm", "model")
@checked
def sample(model: BoltzmannMachine, n_samples: int, *, rng: Any) -> np.ndarray:
    """Exact samples of ``model`` (junction-tree engine).

    Parameters
    ----------
    model : BoltzmannMachine
        The model (a ``TypeError`` naming ``model`` otherwise).
    n_samples : int
        Number of samples, at least 1.
    rng : int or numpy.random.Generator
        Seed or generator; the same seed gives the same samples.

    Returns
    -------
    ndarray of int8, shape (n_samples, n)
        The samples, spins ``-1/+1``.
    """
    model = check_model(model, "model")
    return plan(model).sample(model.bias, model.coupling, n_samples, rng=rng)


@renamed_argument("bm", "model")
def condition(model: BoltzmannMachine, nodes: Any, values: Any
              ) -> tuple[BoltzmannMachine, np.ndarray, float]:
    """Clamp spins ``x_nodes = values``; return the model of the free spins.

    A clamped spin adds ``J_ij x_j`` to the bias of each free neighbour ``i`` (the
    auxiliary fields of SMCI's sum regions and LAP's 1-neighbourhoods).

    Parameters
    ----------
    model : BoltzmannMachine
        The model (a ``TypeError`` naming ``model`` otherwise).
    nodes : array_like of int
        The clamped spins, distinct, in any order; at least one spin must stay free.
    values : array_like of int
        Their spins ``-1/+1``, in the order of ``nodes``.

    Returns
    -------
    free_model : BoltzmannMachine
        ``P(x_free | x_nodes) ∝ exp(free_model.log_weight)``.
    free : ndarray of int64
        The free nodes in increasing order (node ``free[a]`` is spin ``a`` of
        ``free_model``).
    constant : float
        The clamped spins' own energy, so that
        ``log P(x_nodes) = constant + log Z(free_model) - log Z(model)``.
    """
    from mrflib._support.validation import check_nodes, check_spins

    model = check_model(model, "model")
    raw = np.atleast_1d(np.asarray(nodes))
    nodes = check_nodes(raw, model.n, "nodes")
    x = check_spins(np.atleast_1d(values), len(nodes), "values")[0].astype(np.float64)
    x = x[np.argsort(raw, kind="stable")]
    clamped = np.zeros(model.n, dtype=bool)
    clamped[nodes] = True
    val = np.zeros(model.n)
    val[nodes] = x
    free = np.flatnonzero(~clamped)
    if free.size == 0:
        raise ValueError("nodes must leave at least one spin free")
    i, j = model.edges[:, 0], model.edges[:, 1]
    bias = model.bias.astype(np.float64).copy()
    np.add.at(bias, i, np.where(clamped[j] & ~clamped[i], model.coupling * val[j], 0.0))
    np.add.at(bias, j, np.where(clamped[i] & ~clamped[j], model.coupling * val[i], 0.0))
    both = clamped[i] & clamped[j]
    constant = float(model.bias[nodes] @ x + model.coupling[both] @ (val[i[both]] * val[j[both]]))
    keep = ~clamped[i] & ~clamped[j]
    relabel = -np.ones(model.n, dtype=np.int64)
    relabel[free] = np.arange(free.size)
    sub_edges = np.stack([relabel[i[keep]], relabel[j[keep]]], axis=1)
    return BoltzmannMachine(bias[free], sub_edges, model.coupling[keep]), free, constant
