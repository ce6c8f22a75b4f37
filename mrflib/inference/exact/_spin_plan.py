"""The pairwise binary backend of the elimination engine: a Boltzmann machine's plan.

The pairwise ±1 model ``P(x) ∝ exp(Σ b_i x_i + Σ J_ij x_i x_j)`` (eq. (3) of the GSMCI
paper, eq. (1) of the SMCI-learning paper) is the factor graph of one unary table
``[-b_i, b_i]`` per spin and one pairwise table ``J_ij [[1, -1], [-1, 1]]`` per edge
(:meth:`~mrflib.models.factor_graph.FactorGraph.from_boltzmann`, state 0 is spin -1), and
the engine of :mod:`mrflib.inference.exact.elimination` sums it. Eliminating ``v`` sends
to the first-eliminated spin of ``N_v`` (its neighbours not yet eliminated, fill edges
included) the message

.. math::  m_v(x_{N_v}) = \\log \\sum_{x_v = \\pm 1} \\exp\\Big(x_v \\big(b_v +
           \\sum_{u \\in N_v} J_{vu} x_u\\big) + \\sum_{c \\to v} m_c(x_{N_c})\\Big),

the roots' messages add up to ``log Z``, a downward (Hugin) pass gives every clique its
marginal, and backward sampling draws ``x_v`` from ``P(x_v | x_{N_v})`` in reverse order:
``O(Σ_v 2^{|N_v| + 1})`` work, exponential in the treewidth only. What a machine adds to
the factor graph's engine is here:

* **the order**: :func:`elimination_order`, the library's one order search
  (:func:`mrflib.inference.exact.elimination_order.best_order`) on two states per spin, per
  connected component: the best of the node order itself, (reverse) Cuthill-McKee,
  min-degree and min-fill, scored by the largest clique table; a ``rows x cols`` lattice
  gets width ``min(rows, cols)``. Every seeded result follows from it, so a plan keeps it
  (``tests/data/junction_tree_plans.json`` pins it).
* **the plan of a graph** (:class:`SpinPlan`, cached by :func:`plan`), whose methods take
  the parameters: the tables are written straight into the plan
  (:meth:`~mrflib.inference.exact.elimination_plan.EliminationPlan.with_tables`: a
  machine's finite two-state tables never reduce), so a learner's steps plan nothing.
* **the moments** ``<x_i>`` and ``<x_i x_j>``, from the marginals of each spin and each
  edge's table in one downward pass.
* **the samples' uniforms**: drawn as ``rng.random((rows, n))``, column ``t`` deciding the
  spin eliminated at step ``t``, which is ``+1`` when ``u < P(x = +1 | the spins
  eliminated after it)``; the engine draws state 0 when its weight is at least ``u'``
  times the total, so it is handed ``u' = 1 - u`` (exact for the doubles of
  ``Generator.random``): a draw can differ only where ``u`` is within an ulp of the
  probability.
* **parameters beyond the float range**: scaled by ``2^-k``
  (:func:`~mrflib.models.boltzmann.overflow_exponent`) and summed in log space with the
  scale put back inside each log-sum-exp, ``m + log Σ exp(2^k (a - m)) / 2^k``: every
  table and message is the true one times ``2^-k``, so every finite model gives finite
  moments and samples (and ``log Z`` is ``+inf`` with a warning only beyond the range).

Precision: that of the elimination engine it runs on, argued once for every engine in
:mod:`mrflib.models.precision`.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import numpy as np

from mrflib._support.pages import small_pages
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
from mrflib.inference.exact import _compiled_passes
from mrflib.inference.exact import elimination_order as eo
from mrflib.inference.exact import treewidth_bounds as tb
from mrflib.inference.exact.elimination_plan import EliminationPlan
from mrflib.models import graphs
from mrflib.models.boltzmann import (
    BoltzmannMachine,
    overflow_exponent,
    unscale_log_partition,
)
from mrflib.models.factor_graph import FactorGraph

__all__ = ["SpinPlan", "plan", "elimination_order", "MAX_WIDTH"]

#: Widths beyond this are refused without further search (a table of 2^63 entries).
MAX_WIDTH = 62
_LOG2 = math.log(2.0)


# --------------------------------------------------------------------------- orders
def _neighbour_sets(edges: np.ndarray, n: int) -> list[set]:
    """Each node's neighbours, as sets built in the order the plans were pinned with (a
    set's iteration order, which breaks the greedy criteria's ties, depends on it)."""
    indptr, indices, _ = graphs.adjacency(edges, n)
    return [set(indices[indptr[i]:indptr[i + 1]].tolist()) for i in range(n)]


def elimination_order(edges: Any, n: int, order: Any = None) -> tuple[list[int], str, int]:
    """The elimination order of a machine's graph, the heuristic that found it, and its
    treewidth.

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
    n = int(check_positive(n, "n", integer=True))
    edges = check_edges(edges, n)
    nbrs = _neighbour_sets(edges, n)
    logc = [_LOG2] * n
    if order is not None:
        order = check_indices(order, n, "order").tolist()
        if sorted(order) != list(range(n)):
            raise ValueError(f"order must be a permutation of 0..{n - 1}")
        cliques, _, _ = eo.order_cliques(nbrs, order, logc)
        return order, "given", max((len(c) for c in cliques), default=1) - 1
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


# --------------------------------------------------------------------------- plan
class SpinPlan(EliminationPlan):
    """The elimination plan of a Boltzmann machine's graph, for any of its parameters.

    The :class:`~mrflib.inference.exact.elimination_plan.EliminationPlan` of the factor
    graph of a machine on the graph, eliminated in :func:`elimination_order`'s order. It
    depends on the graph only: :meth:`calibrate`, :meth:`log_partition` and :meth:`sample`
    take the parameters, so a learner builds it once.

    Parameters
    ----------
    edges : array_like of int, shape (E, 2)
        The graph's edges ``i < j``, checked.
    n : int
        Number of nodes, at least 1.
    order : array_like of int or None, default None
        An elimination order to use (a permutation of ``0..n-1``); ``None`` searches one
        (:func:`elimination_order`).

    Attributes
    ----------
    edges : ndarray of int64, shape (E, 2)
        The checked edges.
    order : ndarray of int64, shape (n,)
        Elimination order (spin ``order[t]`` is summed out at step ``t``).
    heuristic, treewidth, cliques, max_table_bytes, total_bytes
        Those of :class:`~mrflib.inference.exact.elimination_plan.EliminationPlan`: the
        treewidth is an upper bound on the graph's (``min(rows, cols)`` for a lattice).

    Raises
    ------
    ValueError
        When the order's treewidth is beyond :data:`MAX_WIDTH`, or its tables do not fit
        in memory.
    """

    def __init__(self, edges: Any, n: int, order: Any = None) -> None:
        n = int(check_positive(n, "n", integer=True))
        edges = check_edges(edges, n)
        order, heuristic, width = elimination_order(edges, n, order)
        if width > MAX_WIDTH:
            _refuse_width(width)
        # (a machine's finite tables of two states never reduce: any parameters plan alike)
        structure = FactorGraph.from_boltzmann(BoltzmannMachine(np.zeros(n), edges,
                                                                np.zeros(len(edges))))
        super().__init__(structure, order=order)
        self.edges, self.heuristic = edges, heuristic
        self.order = np.asarray(self.order, dtype=np.int64)
        # the pairwise tables (reduced factors n.., in edge order), and those of each step
        self._pairwise = np.arange(len(self.red.tables)) >= n
        self._edge_factors = [[k for k in ks if k >= n] for ks in self.assigned]
        self._position = np.empty(n, dtype=np.int64)
        self._position[self.order] = np.arange(n)

    def __repr__(self) -> str:
        return (f"SpinPlan(n={self.n}, treewidth={self.treewidth}, "
                f"heuristic={self.heuristic!r})")

    def memory_bytes(self, upward_only: bool | None = None) -> float:
        """Peak bytes of a calibration: the upward messages, the downward messages alive
        at once (a step's are made when its parent's belief is, and freed once it has
        used them: on a lattice, a few) and a clique table with its temporaries; of the
        compiled passes of a small plan, every message twice.

        The factor graphs' estimate counts every downward message alive at once, twice
        what a lattice's calibration holds (a 19 x 19 lattice's peak is 300 MiB).

        Parameters
        ----------
        upward_only : bool or None, default None
            Count one upward pass that frees its messages, as
            :meth:`EliminationPlan.memory_bytes` does.

        Returns
        -------
        float
            The bytes.
        """
        if upward_only:
            return super().memory_bytes(True)
        size = [8.0 * math.prod(s[1:]) for s in self.shapes]
        alive, down = 0.0, 0.0
        for t in range(len(size) - 1, -1, -1):
            alive += sum(size[c] for c in self.children[t])
            down = max(down, alive)
            if self.parent[t] >= 0:
                alive -= size[t]
        if self.total_bytes <= 8 * _compiled_passes.MAX_ENTRIES:
            down = max(down, self.message_bytes)
        return self.message_bytes + down + 4.0 * self.max_table_bytes

    # ------------------------------------------------------------------ parameters
    def _params(self, bias: Any, coupling: Any) -> tuple[np.ndarray, np.ndarray, int]:
        """The parameters validated as the model constructor does (finite, real, one per
        node and per edge), scaled by ``2^-k`` with ``k`` from :func:`overflow_exponent`."""
        b = check_bias(bias, self.n)
        J = check_coupling(coupling, len(self.edges))
        k = overflow_exponent(b, J)
        if k:
            b, J = np.ldexp(b, -k), np.ldexp(J, -k)
        return b, J, k

    def _tabled(self, b: np.ndarray, J: np.ndarray) -> EliminationPlan:
        """This plan over the tables of the parameters ``b``, ``J``: ``[-b_i, b_i]`` and
        ``J [[1, -1], [-1, 1]]``, those of :meth:`FactorGraph.from_boltzmann`, written into
        one array."""
        n, E = self.n, len(J)
        flat = np.empty(2 * n + 4 * E)
        unary = flat[:2 * n].reshape(n, 2)
        pair = flat[2 * n:].reshape(E, 4)
        np.negative(b, out=unary[:, 0])
        unary[:, 1] = b
        pair[:, 0] = pair[:, 3] = J
        np.negative(J, out=pair[:, 1])
        pair[:, 2] = pair[:, 1]
        return self.with_tables(list(unary) + list(pair.reshape(E, 2, 2)), flat)

    # ------------------------------------------------------------------ inference
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
        jt = self._tabled(b, J)
        if k:
            return _tempered_upward(jt, 2.0**k)[0], k
        with small_pages():
            fast = _compiled_passes.summed_log_partition(jt)
            return (jt.upward(keep=False)[0] if fast is None else fast), 0

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
        jt = self._tabled(b, J)
        if k:
            logz, mean, pair = _tempered_moments(jt, 2.0**k)
            return unscale_log_partition(logz, k), mean, pair
        n, E = self.n, len(self.edges)
        with small_pages():
            fast = _compiled_passes.scaled_marginals(jt, self._pairwise)
            if fast is None:
                logz, msgs = jt.upward()
                spins, edges = np.empty((n, 2)), np.empty((E, 4))
                for t, beliefs in jt.beliefs(msgs, self._targets):
                    spins[t] = np.exp(beliefs[0])
                    for f, b in zip(self._edge_factors[t], beliefs[1:]):
                        edges[f - n] = np.exp(b).ravel()
            else:  # each table scaled by a factor of its own, which the ratios cancel
                logz, spins, edges = fast.summed_log_z, fast.marg.reshape(n, 2), fast.fmarg
                edges = edges.reshape(E, 4)
        mean = np.empty(n)
        mean[self.order] = (spins[:, 1] - spins[:, 0]) / (spins[:, 0] + spins[:, 1])
        pair = (edges[:, 0] - edges[:, 1] - edges[:, 2] + edges[:, 3]) / edges.sum(axis=1)
        return float(logz), mean, pair

    def _targets(self, t: int) -> list[tuple[int, ...]]:
        """The beliefs the downward pass gives of step ``t``: its spin, then its edges."""
        return [self.cliques[t][:1]] + [self.red.scopes[k] for k in self._edge_factors[t]]

    def sample(self, bias: Any, coupling: Any, n_samples: int, *, rng: Any) -> np.ndarray:
        """Exact i.i.d. samples (forward filtering, backward sampling).

        Uniforms are drawn from ``rng`` in blocks of ``(rows, n)`` (row ``s``, column
        ``t`` decides spin ``order[t]`` of sample ``s``: ``+1`` when below its probability
        given the spins eliminated after it): the same seed gives the same samples,
        whatever the block size.

        Parameters
        ----------
        bias, coupling
            The parameters, as in :meth:`calibrate`.
        n_samples, rng
            As in :func:`mrflib.inference.exact.elimination.sample`.

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
        n = self.n
        require_memory(float(n_samples) * n + 8 * 2**20,
                       f"n_samples = {n_samples} samples of {n} spins")
        block = max(1, min(n_samples, 2**22 // n))
        # the upward messages and the log tables made of them, a clique table with its
        # temporaries, then a block's uniforms (drawn and transposed), its spins and the
        # kernel's rows
        require_memory(2.0 * self.message_bytes + 4.0 * self.max_table_bytes
                       + n_samples * n + (17.0 * n + 24) * block,
                       f"{self._what()}, with its sampling tables")
        jt = self._tabled(b, J)
        with small_pages():
            if k:
                msgs = _tempered_upward(jt, 2.0**k)[1]
            else:
                fast = _compiled_passes.upward_log_messages(jt)
                msgs = jt.upward()[1] if fast is None else fast[1]
            tables = _compiled_passes.sampling_tables(jt, msgs)
        del msgs
        out = np.empty((n_samples, n), dtype=np.int8)
        for start in range(0, n_samples, block):
            u = rng.random((min(block, n_samples - start), n))
            x = np.empty((n, len(u)), dtype=np.int8)
            # spin v reads the uniform of its elimination step, flipped
            _compiled_passes.backward_sample(tables, np.ascontiguousarray(u.T), x, 2.0**k,
                                             self._position)
            out[start:start + len(u)] = x.T
        out *= 2
        out -= 1
        return out


# --------------------------------------------------------------------------- scaled passes
def _tempered_logsumexp(a: np.ndarray, axes: tuple[int, ...], inv: float) -> np.ndarray:
    """``2^-k log Σ exp(2^k a)`` over ``axes`` of log-values ``a`` times ``2^-k``
    (``inv = 2^k``): the shifted differences are scaled back before the exponential, so
    nothing overflows."""
    m = np.max(a, axis=axes, keepdims=True)
    with np.errstate(over="ignore", under="ignore"):
        s = np.sum(np.exp((a - m) * inv), axis=axes)
    return np.squeeze(m, axis=axes) + np.log(s) / inv


def _tempered_upward(jt: EliminationPlan, inv: float) -> tuple[float, list[np.ndarray]]:
    """The upward pass of a plan whose tables are the model's times ``1 / inv``: its
    messages (log tables, as scaled) and ``2^-k log Z``."""
    msgs: list[np.ndarray] = []
    logz = 0.0
    for t in range(len(jt.cliques)):
        msgs.append(_tempered_logsumexp(jt.clique_table(t, msgs), (0,), inv))
        if jt.parent[t] < 0:
            logz += float(msgs[t])
    return logz, msgs


def _tempered_moments(jt: EliminationPlan, inv: float) -> tuple[float, np.ndarray, np.ndarray]:
    """``(2^-k log Z, <x_i>, <x_i x_j>)`` of a plan whose tables are the model's times
    ``1 / inv``: the upward pass, then the Hugin pass on whole clique tables."""
    logz, msgs = _tempered_upward(jt, inv)
    n = jt.n
    mean, pair = np.empty(n), np.empty(len(jt.red.tables) - n)
    down: list[np.ndarray | None] = [None] * len(msgs)
    for t in range(len(msgs) - 1, -1, -1):
        clique = list(jt.cliques[t])
        table = jt.clique_table(t, msgs)
        if jt.parent[t] >= 0:
            table = table + down[t][None]
        for c in jt.children[t]:
            keep = set(jt.cliques[c][1:])  # (in the clique's order: by elimination step)
            axes = tuple(a for a, w in enumerate(clique) if w not in keep)
            down[c] = _tempered_logsumexp(table, axes, inv) - msgs[c]
        down[t] = None
        with np.errstate(over="ignore", under="ignore"):
            q = np.exp((table - table.max()) * inv)
        q /= q.sum()
        p = q.reshape(2, -1).sum(axis=1)
        mean[clique[0]] = p[1] - p[0]
        for f in jt.assigned[t]:
            if f >= n:
                ends = [clique.index(w) for w in jt.red.scopes[f]]
                r = q.sum(axis=tuple(a for a in range(len(clique)) if a not in ends))
                pair[f - n] = r[0, 0] - r[0, 1] - r[1, 0] + r[1, 1]
    return logz, mean, pair


# --------------------------------------------------------------------------- model level
_CACHE: OrderedDict = OrderedDict()


def plan(bm_or_edges: Any, n: int | None = None) -> SpinPlan:
    """The (cached) :class:`SpinPlan` of a machine's graph or of ``edges`` on ``n`` nodes.

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
    SpinPlan
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
    found = SpinPlan(edges, n)
    _CACHE[key] = found
    while len(_CACHE) > 8:
        _CACHE.popitem(last=False)
    return found
