"""The mini-bucket tree and its passes, shared by the mini-bucket methods.

:mod:`mrflib.inference.approx.wmb` (the bound and marginals of weighted mini-bucket
elimination, where the method is described), :mod:`mrflib.inference.approx.importance`
(its proposal) and :mod:`mrflib.inference.approx.max_mini_bucket` (its max-product
heuristic) build one tree of mini-buckets (:func:`structure`: :class:`Node` objects, by
bucket, on a :func:`mini_bucket_order`) and run its passes: :func:`forward` (matching
each bucket, then the weighted power sums), :func:`unmatched_bound` (a forward pass that
matches nothing) and :func:`backward` (the beliefs); :func:`belief` is a mini-bucket's
belief. A pass past its hard deadline raises :class:`Late` (:func:`check_deadline`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from mrflib._support.validation import format_bytes, require_memory
from mrflib.inference._factor_ops import clique_sum, expand, reduce_to
from mrflib.inference._reduction import Reduced
from mrflib.inference.approx import _wmb_kernels as _kernels
from mrflib.inference.exact import elimination_order as eo

__all__ = ["Node", "mini_bucket_order", "Late", "check_deadline", "belief", "unmatched_bound",
           "forward", "backward", "structure"]


class Node:
    """A mini-bucket: the variable ``clique[0]`` it sums out, the rest ordered by
    elimination, its log table ``theta``, weight, messages and tree links.

    Parameters
    ----------
    clique : tuple of int
        The variable summed out, then the others in elimination order.
    children : list of int
        The ids of the mini-buckets whose messages it receives.

    Attributes
    ----------
    parent : int
        The id of the mini-bucket it sends its message to (``-1``: none, a root).
    weight : float
        Its Hölder weight ``w_r`` (the weights of a bucket's mini-buckets add up to one).
    theta : ndarray
        Its log table over ``clique`` (the sum of its factors, then reparameterized).
    fwd : ndarray
        Its forward message over ``clique[1:]``.
    bwd : ndarray or None
        Its parent's backward message over ``clique[1:]`` (``None`` before a backward
        pass).
    """

    __slots__ = ("clique", "theta", "weight", "children", "parent", "fwd", "bwd")

    def __init__(self, clique: tuple, children: list[int]) -> None:
        self.clique = clique
        self.children = children
        self.parent = -1
        self.weight = 1.0
        self.theta: np.ndarray = np.zeros(0)
        self.fwd: np.ndarray = np.zeros(0)
        self.bwd: np.ndarray | None = None


def _fits_with(mini: list, s: set, card: list, max_vars: float, max_entries: float) -> bool:
    """Whether the mini-bucket ``mini`` (``[scope, factors, children, entries]``) with the
    scope ``s`` added still fits: its entries grow by the new variables' only (a large
    bucket tries many mini-buckets for each item)."""
    new = s - mini[0]
    if len(mini[0]) + len(new) > max_vars:
        return False
    entries = mini[3]
    for v in new:
        entries *= card[v]
    return entries <= max_entries


def _partition(order: list[int], scopes: list[tuple], card: np.ndarray, max_vars: float,
               max_entries: float) -> tuple[list[Node], list[list[int]], list[list[int]]]:
    """The mini-bucket tree by scopes: each bucket's factors and incoming messages, largest
    first, go to the first mini-bucket whose union still fits (an item too large alone
    gets its own). Returns the nodes, each bucket's node ids and each node's factors."""
    pos = {v: t for t, v in enumerate(order)}
    cards = [int(c) for c in card]  # Python ints: exact products, no numpy scalars
    items: list[list[tuple]] = [[] for _ in order]
    for k, s in enumerate(scopes):
        items[min(pos[v] for v in s)].append((len(s), 0, k, set(s)))
    nodes: list[Node] = []
    buckets: list[list[int]] = []
    factors: list[list[int]] = []
    for t, v in enumerate(order):
        minis: list[list] = []  # [scope, factors, children, table entries]
        for _, kind, k, s in sorted(items[t], key=lambda it: (-it[0], it[1], it[2])):
            home = next((m for m in minis if _fits_with(m, s, cards, max_vars, max_entries)),
                        None)
            if home is None:
                home = [set(), [], [], 1]
                minis.append(home)
            for u in s - home[0]:
                home[3] *= cards[u]
            home[0] |= s
            (home[1] if kind == 0 else home[2]).append(k)
        ids = []
        for scope, fs, ch, _ in minis:
            clique = (v, *sorted(scope - {v}, key=pos.__getitem__))
            node = Node(clique, ch)
            i = len(nodes)
            for c in ch:
                nodes[c].parent = i
            nodes.append(node)
            factors.append(fs)
            ids.append(i)
            if len(clique) > 1:
                items[pos[clique[1]]].append((len(clique) - 1, 1, i, set(clique[1:])))
        for i in ids:
            nodes[i].weight = 1.0 / len(ids)
        buckets.append(ids)
    return nodes, buckets, factors


def mini_bucket_order(red: Reduced, n: int) -> list[int]:
    """A greedy min-fill order of each connected component (min-degree where the fill
    search gives up on a dense one): one heuristic, not the exact engine's best of several,
    since a mini-bucket tree is not limited by the order's width.

    Parameters
    ----------
    red : Reduced
        The reduced model.
    n : int
        The model's variables.

    Returns
    -------
    list of int
        The variables some factor of ``red`` holds, in elimination order.
    """
    adj = eo.interaction_graph(n, red.scopes)
    logc = np.log(red.card.astype(np.float64)).tolist()
    order: list[int] = []
    for comp in eo.components(adj, red.active):
        found = eo.greedy_order(adj, logc, comp, "min-fill")
        order += found if found is not None else eo.greedy_order(adj, logc, comp,
                                                                 "min-degree")
    return order


class Late(Exception):
    """A pass stopped at the hard deadline (its results are not used)."""


def check_deadline(stop_at: float) -> None:
    """Raise :class:`Late` once ``time.perf_counter()`` has passed ``stop_at``."""
    if time.perf_counter() > stop_at:
        raise Late


def _attach(nodes: list[Node], factors: list[list[int]], red: Reduced,
            stop_at: float = math.inf) -> None:
    """Each node's ``theta``: the sum of its factors over its clique."""
    for node, fs in zip(nodes, factors):
        check_deadline(stop_at)
        shape = tuple(int(red.card[v]) for v in node.clique)
        node.theta = clique_sum([red.tables[k] for k in fs], [red.scopes[k] for k in fs],
                                node.clique, shape)


def belief(node: Node, nodes: list[Node], backward: bool) -> np.ndarray:
    """``θ_r`` plus the children's forward messages (and with ``backward`` the parent's
    backward message): ``w_r`` times the log belief, unnormalized.

    Parameters
    ----------
    node : Node
        The mini-bucket.
    nodes : list of Node
        Every mini-bucket, by id.
    backward : bool
        Add the parent's backward message.

    Returns
    -------
    ndarray
        A log table over ``node.clique``.
    """
    b = node.theta.copy()
    for c in node.children:
        child = nodes[c]
        b += expand(child.fwd, child.clique[1:], node.clique)
    if backward and node.bwd is not None:
        b += node.bwd[np.newaxis]
    return b


def _match(ids: list[int], nodes: list[Node], step_theta: float, step_w: float) -> None:
    """Reparameterize a bucket's mini-buckets toward equal beliefs on ``x_v`` (their
    weighted geometric mean) and move their weights by the entropy gradient."""
    bels = [belief(nodes[i], nodes, True) / nodes[i].weight for i in ids]
    logm = [_kernels.log_marginal0(b) for b in bels]
    w = np.array([nodes[i].weight for i in ids])
    finite = np.logical_and.reduce([np.isfinite(m) for m in logm])
    avg = sum(wr * np.where(finite, m, 0.0) for wr, m in zip(w, logm)) / w.sum()
    for j, i in enumerate(ids):
        node = nodes[i]
        delta = np.where(finite, avg - np.where(finite, logm[j], 0.0), 0.0)
        shape = (-1,) + (1,) * (node.theta.ndim - 1)  # along x_v, the first axis
        node.theta += (step_theta * node.weight * delta).reshape(shape)
        node.theta[~finite] = -np.inf  # zero mass at x_v in the model: zero everywhere
        bels[j] += (step_theta * delta).reshape(shape)
        bels[j][~finite] = -np.inf
    if step_w:
        H = np.array([_kernels.conditional_entropy(b) for b in bels])
        new = w * np.exp(-step_w * w * (H - np.dot(w, H)))
        new /= new.sum()
        for wr, i in zip(new.tolist(), ids):
            nodes[i].weight = wr


def unmatched_bound(nodes: list[Node], buckets: list[list[int]],
                    stop_at: float = math.inf) -> float:
    """The message sum of a forward pass that matches nothing (the state is unchanged; the
    forward messages it leaves are those of the next pass once that has run).

    With the model's own tables and weights ``1 / R`` the bound is at most the trivial
    bound ``Σ_k max θ_k + Σ_v log |X_v|`` (per bucket,
    ``Π_r (Σ_x f_r^{1/w_r})^{w_r} <= |X| Π_r max f_r``, then by induction over the
    buckets). A matched pass has no such guarantee: before any backward message it moves
    ``θ`` by beliefs that treat every later variable as uniform, a poor guide where the
    later buckets' small weights make their power sums nearly maxima, and on a SAT-derived
    model it can more than double the bound. So a run's first reported bound is the lower
    of the two, and no reported bound exceeds the trivial one.

    Parameters
    ----------
    nodes : list of Node
        The mini-buckets, with the model's tables and their first weights.
    buckets : list of list of int
        Each bucket's node ids, in elimination order.
    stop_at : float, default inf
        The ``time.perf_counter()`` past which the pass is abandoned (``Late``).

    Returns
    -------
    float
        The bound's message sum (add the reduced model's constants).
    """
    return forward(nodes, buckets, 0.0, 0.0, stop_at)


def forward(nodes: list[Node], buckets: list[list[int]], step_theta: float,
            step_w: float, stop_at: float = math.inf) -> float:
    """One forward pass, matching each bucket's mini-buckets first (with step sizes
    ``step_theta`` for the tables and ``step_w`` for the weights; zero steps match
    nothing); :class:`Late` once ``stop_at`` has passed.

    Returns
    -------
    float
        The bound's message sum (add the reduced model's constants).
    """
    bound = 0.0
    for ids in buckets:
        check_deadline(stop_at)
        if len(ids) > 1 and (step_theta or step_w):
            _match(ids, nodes, step_theta, step_w)
        for i in ids:
            node = nodes[i]
            node.fwd = _kernels.power_lse(belief(node, nodes, False), node.weight)
            if node.parent < 0:
                bound += float(node.fwd)
    return bound


def backward(nodes: list[Node], buckets: list[list[int]], order: list[int],
             marg: dict[int, np.ndarray], stop_at: float = math.inf) -> None:
    """The backward pass: each child gets ``w_c log Σ_{parent \\ child} b_p - λ_c``, so its
    belief agrees with its parent's on their shared variables; ``marg[v]`` becomes the
    mean of bucket ``v``'s mini-bucket beliefs on ``x_v`` (``order[t]`` is bucket ``t``'s
    variable); :class:`Late` once ``stop_at`` has passed."""
    for t in range(len(buckets) - 1, -1, -1):
        check_deadline(stop_at)
        acc = 0.0
        for i in buckets[t]:
            node = nodes[i]
            big = belief(node, nodes, True)
            top = float(np.max(big))
            b = (big - top) / node.weight
            acc = acc + np.exp(_kernels.log_marginal0(b))
            for c in node.children:
                child = nodes[c]
                proj = reduce_to(b, node.clique, child.clique[1:])
                with np.errstate(invalid="ignore"):
                    msg = child.weight * proj + top * child.weight / node.weight - child.fwd
                child.bwd = np.where(np.isneginf(child.fwd), -np.inf, msg)
        p = acc / len(buckets[t])
        marg[order[t]] = p / p.sum()


def structure(red: Reduced, n: int, ibound: int | None, memory: float,
              order: list[int] | None = None, stop_at: float = math.inf
              ) -> tuple[list[int], list[Node], list[list[int]], list[list[int]]]:
    """The mini-bucket tree of ``red`` for an ``ibound`` (variables of a mini-bucket at
    most; ``None``: no limit) and ``memory`` (bytes of its table at most), its tables
    summed from the factors; refused before they are allocated when they would not fit
    in memory, and :class:`Late` once ``stop_at`` has passed.

    Parameters
    ----------
    red : Reduced
        The reduced model, whose factors the mini-buckets share out.
    n : int
        Variables of the model (for the order when none is given).
    ibound : int or None
        Variables of a mini-bucket at most.
    memory : float
        Bytes of a mini-bucket's table at most.
    order : list of int or None, default None
        The elimination order (``None``: :func:`mini_bucket_order`).
    stop_at : float, default inf
        The ``time.perf_counter()`` past which the construction is abandoned.

    Returns
    -------
    (order, nodes, buckets, factors)
        The order, the mini-buckets (:class:`Node`, with their tables and first
        weights), each bucket's node ids and each node's factors of ``red``.
    """
    if order is None:
        order = mini_bucket_order(red, n)
    max_vars = math.inf if ibound is None else ibound
    nodes, buckets, factors = _partition(order, red.scopes, red.card, max_vars, memory / 8)
    sizes = [math.prod(int(red.card[v]) for v in nd.clique) for nd in nodes]
    total = 8.0 * (2 * sum(sizes) + 4 * max(sizes, default=0))
    require_memory(total, f"the weighted mini-bucket tables (largest "
                   f"{format_bytes(8 * max(sizes, default=0))}, all {format_bytes(total)})")
    _attach(nodes, factors, red, stop_at)
    return order, nodes, buckets, factors
