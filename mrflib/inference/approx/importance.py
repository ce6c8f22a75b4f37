"""Importance sampling of the partition function: an unbiased estimate of ``Z`` and
probabilistic bounds on ``log Z`` (Liu, Fisher and Ihler, NIPS 2015, "Probabilistic
variational bounds for graphical models").

Draw ``x^1..x^N`` from a proposal ``q`` that gives mass to every state of positive weight;
the weights ``w_i = f(x^i) / q(x^i)`` (``f`` the model's unnormalized weight) have mean
``Z``, so ``Ẑ = (1/N) Σ_i w_i`` is an unbiased estimate of ``Z`` (its log, the reported
estimate, is biased low, by about half the squared relative standard error).

The weighted mini-bucket proposal. A forward pass of weighted mini-bucket
(:mod:`mrflib.inference.approx.wmb`) leaves, in each mini-bucket ``r`` of the variable
``x_v``, the table ``b_r = θ_r + Σ_children λ_c`` and its message
``λ_r = w_r log Σ_{x_v} exp(b_r / w_r)``. Each defines a conditional
``q_r(x_v | x_rest) = exp((b_r - λ_r) / w_r)`` on the variables eliminated after ``x_v``;
the proposal samples the variables in reverse elimination order, ``x_v`` from the mixture
``Σ_r w_r q_r(x_v | x_rest)``. By the arithmetic-geometric mean inequality the mixture is
at least ``Π_r q_r^{w_r}``, whose product over the buckets telescopes to ``f(x) / U``
(``U`` the pass's bound), so every weight is at most ``U``: ``w_i ∈ [0, U]``. That gives
two bounds that hold with probability at least ``1 - δ`` together
(:func:`probabilistic_bounds`): an empirical Bernstein bound on each side (Maurer and
Pontil 2009, their Theorem 4, weights scaled by ``U``), and on the lower side Markov's
inequality, ``P(Ẑ ≥ Z / δ') ≤ δ'`` (valid for any proposal). The upper bound is never
above ``U``, which is certified.

The mean-field proposal, where weighted mini-bucket cannot run (its first pass would not
end within the call's time, or its tables would not fit in memory): the product of naive
mean field's marginals (:mod:`mrflib.inference.approx.mean_field`), each mixed with
:data:`DEFENSIVE` of the uniform distribution so that no state of positive weight has zero
mass. Its weights are not bounded, so its lower bound is Markov's and its upper bound the
certified ``Σ_k max θ_k + Σ_v log |X_v|``.

Zeros. A mini-bucket table is ``-inf`` only where the model's weight is zero (a
relaxation adds support, never removes it), so the mini-bucket proposal gives mass to every
state of positive weight; a sample of weight zero (a state the relaxation allows and the
model does not) counts as a weight of 0. A value that one mini-bucket of the variable holds
at ``-inf`` (given the values drawn before) has zero weight in every completion, so the
mixture gives it no mass, even where the variable's other mini-buckets would: the draw is
renormalized over the values left. On pedigrees (linkage of UAI 2014), whose deterministic
tables split across mini-buckets, the plain mixture draws a state of zero weight 99% of the
time on linkage_15, this draw 19%. The proposal stays positive wherever the model is, so
``Ẑ`` stays unbiased, and the renormalization only raises ``q``, so every weight stays at
most ``U``. When the sampled variables leave a mini-bucket no state of positive mass (its
message is ``-inf`` there), or leave the variable no value, every completion has zero
weight: the mixture takes its other mini-buckets (uniform if none is left) and the
sample's weight is 0. Evidence is exact: observed variables are clamped, variables no
factor holds are summed out exactly (``log |X_v|`` each), and barren conditional
probability tables (a child no other factor holds, recursively, as the exact engine prunes
them for ``log Z``) are left out of the proposal's model, which has the same ``Z``; their
children are drawn from the tables after the rest, so that every variable of a sample is
drawn.

Samples come in batches of :data:`FIRST_BATCH`, doubling to :data:`LARGEST_BATCH`, all
drawn from one generator: the same ``rng`` and proposal give the same bits, and a time
limit only cuts the sequence of batches short (under a time limit the proposal's i-bound
depends on the time, as :func:`mrflib.inference.approx.wmb.growing_passes`' does).
"""

from __future__ import annotations

import collections
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mrflib._support.validation import as_rng, check_positive, check_real, require_memory
from mrflib.inference._reduction import Reduced
from mrflib.inference.approx import _importance_kernels as _kernels
from mrflib.inference.approx import _mini_buckets as mb
from mrflib.inference.approx import wmb
from mrflib.inference.approx.mean_field import mean_field
from mrflib.models.boltzmann import BoltzmannMachine
from mrflib.models.factor_graph import FactorGraph, as_factor_graph

__all__ = ["ImportanceResult", "Proposal", "wmb_proposal", "mean_field_proposal",
           "importance_sampling", "importance_estimates", "probabilistic_bounds",
           "default_proposal",
           "DELTA"]

#: The probability with which the bounds may fail, together (both sides).
DELTA = 0.05
#: Share of the mixture given to the uniform distribution in the mean-field proposal.
DEFENSIVE = 0.05
#: Samples of the first batch; each next batch doubles, up to :data:`LARGEST_BATCH`.
FIRST_BATCH = 64
LARGEST_BATCH = 8192
#: Share of a time limit the proposal may take (the rest draws samples): a tighter proposal
#: is worth more than more samples of a loose one.
PROPOSAL_SHARE = 0.5
#: Forward passes (moment matching and weights) of the mini-bucket proposal at most.
PROPOSAL_PASSES = 10


@dataclass(frozen=True)
class ImportanceResult:
    """An importance sampling estimate of ``log Z`` and its bounds.

    Attributes
    ----------
    log_partition : float
        ``log Ẑ``, the log of the mean weight (``-inf`` when every weight drawn is 0).
    lower, upper : float
        ``lower <= log Z <= upper`` with probability at least ``1 - delta``
        (:func:`probabilistic_bounds`); ``upper`` is at most ``log_upper_bound``.
    log_upper_bound : float
        The certified upper bound on ``log Z`` of the proposal (weighted mini-bucket's, or
        the trivial one of the mean-field proposal).
    delta : float
        The probability with which the bounds may fail.
    n_samples : int
        Samples drawn.
    standard_error : float
        The delta-method standard error of ``log Ẑ``: the weights' standard deviation over
        ``sqrt(n) Ẑ`` (``inf`` before two samples or with every weight 0).
    proposal : str
        ``"wmb"`` or ``"mean-field"``.
    ibound : int or None
        The mini-bucket proposal's i-bound.
    seconds : float
        Wall time since the call.
    details : dict
        The weights' effective sample size (``ess``) and share of zeros (``zero_share``);
        ``exact`` when the proposal is the model's distribution and nothing was drawn (the
        estimate is then ``log Z``, ``n_samples`` 0).
    """

    log_partition: float
    lower: float
    upper: float
    log_upper_bound: float
    delta: float
    n_samples: int
    standard_error: float
    proposal: str
    ibound: int | None
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)


class _Conditional:
    """One mini-bucket's conditional ``q_r(x_v | x_rest)``: its table ``b_r`` as
    ``(|X_v|, rest entries)``, its message over the rest, weight and rest variables."""

    __slots__ = ("table", "message", "weight", "rest", "strides")

    def __init__(self, table: np.ndarray, message: Any, weight: float, rest: tuple,
                 card: np.ndarray) -> None:
        self.table = table.reshape(table.shape[0], -1)
        self.message = np.asarray(message, dtype=np.float64).reshape(-1)
        self.weight = float(weight)
        self.rest = np.array(rest, dtype=np.int64)
        sizes = [int(card[v]) for v in rest]
        self.strides = np.array([math.prod(sizes[j + 1:]) for j in range(len(sizes))],
                                dtype=np.int64)

    @classmethod
    def of_node(cls, node: Any, nodes: list, card: np.ndarray) -> _Conditional:
        """A mini-bucket's ``q_r``."""
        return cls(mb.belief(node, nodes, False), node.fwd, node.weight, node.clique[1:],
                   card)

    @classmethod
    def of_cpt(cls, scope: tuple, table: np.ndarray, child: int, card: np.ndarray
               ) -> _Conditional:
        """A conditional probability table's ``p(child | the rest)`` (its log table sums
        to zero over the child)."""
        a = scope.index(child)
        rest = scope[:a] + scope[a + 1:]
        t = np.moveaxis(np.asarray(table, dtype=np.float64), a, 0)
        return cls(t, np.zeros(max(1, t[0].size)), 1.0, rest, card)

    def probabilities(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q_r(· | x_rest), valid, zero)`` for each sample (row of ``x``): ``(|X_v|, N)``
        probabilities, whether the message is finite there (else the column is 0), and
        where a valid column's table is ``-inf`` (no completion has positive weight)."""
        col = x[:, self.rest] @ self.strides if self.rest.size else np.zeros(len(x), np.int64)
        msg = self.message[col]
        valid = np.isfinite(msg)
        table = self.table[:, col]
        with np.errstate(invalid="ignore"):
            logq = (table - np.where(valid, msg, 0.0)) / self.weight
        return np.where(valid, np.exp(logq), 0.0), valid, valid & (table == -np.inf)


class Proposal:
    """A proposal of :func:`importance_sampling`: draws states and their log weights.

    Built by :func:`wmb_proposal` or :func:`mean_field_proposal`.

    Attributes
    ----------
    kind : str
        ``"wmb"`` or ``"mean-field"``.
    log_upper_bound : float
        A certified upper bound on ``log Z``.
    weight_bound : float
        ``log`` of a bound on every weight (``inf`` when the weights are unbounded).
    ibound : int or None
        The mini-bucket i-bound.
    exact : bool
        Whether the proposal is the model's distribution (every bucket one mini-bucket):
        its bound is then ``log Z`` and every weight ``Z``.
    """

    def __init__(self, model: FactorGraph, red: Reduced, kind: str, steps: list,
                 log_upper_bound: float, weight_bound: float, ibound: int | None,
                 exact: bool = False) -> None:
        self.model, self.red, self.kind, self.steps = model, red, kind, steps
        self.log_upper_bound, self.weight_bound, self.ibound = (
            log_upper_bound, weight_bound, ibound)
        self.exact = exact
        self.const = red.const + red.free_log
        self.cpts = _cpt_steps(red)
        self._factors = _pack_factors(red)
        self._packed = _pack(self.steps + self.cpts, len(self.steps), red.card)

    def sample(self, n: int, rng: np.random.Generator, whole: bool = True
               ) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` states and their log weights.

        The uniforms are ``rng.random((n, steps))``, one per sample and step, drawn in
        chunks of rows (the same stream whatever the chunks).

        Parameters
        ----------
        n : int
            Samples.
        rng : numpy.random.Generator
            The generator of the draws.
        whole : bool, default True
            Also draw the children of the pruned CPTs (without: they stay at 0, the
            weights are the same and the states incomplete).

        Returns
        -------
        x : ndarray of int64, shape (n, model.n)
            The states (observed variables at their values, free ones at 0).
        log_weights : ndarray, shape (n,)
            ``log f(x) - log q(x)``, ``log Z``'s constants included (``-inf`` for a state
            of zero weight).
        """
        steps = len(self.steps) + (len(self.cpts) if whole else 0)
        x = np.zeros((n, self.model.n), dtype=np.int64)
        for v, value in self.red.observed.items():
            x[:, v] = value
        logq = np.zeros(n)
        rows = max(1, SAMPLE_CHUNK // max(steps, 1))
        packed = _head(self._packed, steps)
        for a in range(0, n, rows):
            u = rng.random((min(rows, n - a), steps))
            logq[a:a + u.shape[0]] = _kernels.draw(u, x[a:a + u.shape[0]], packed)
        return x, self._log_weights(x, logq)

    def _log_weights(self, x: np.ndarray, logq: np.ndarray) -> np.ndarray:
        logf = _kernels.log_f(x, self.const, self._factors)
        with np.errstate(invalid="ignore"):
            return np.where(logf > -np.inf, logf - logq, -np.inf)

    def _sample_numpy(self, u: np.ndarray, x: np.ndarray) -> np.ndarray:
        """The numpy reference of the kernel: draws the rows of ``x`` with the uniforms
        ``u`` (``(N, steps)``, the first steps) and returns their log weights."""
        n = u.shape[0]
        logq = np.zeros(n)
        rows = np.arange(n)
        for k, (v, parts) in enumerate((self.steps + self.cpts)[:u.shape[1]]):
            p, mass, banned = 0.0, np.zeros(n), False
            for r in parts:
                q, valid, zero = r.probabilities(x)
                p = p + r.weight * q
                mass += r.weight * valid
                banned = banned | zero
            p = np.where(banned, 0.0, p / np.where(mass > 0, mass, 1.0))
            p = np.where((mass > 0) & (p.sum(axis=0) > 0), p, 1.0 / p.shape[0])
            c = np.cumsum(p, axis=0)
            xv = np.minimum(np.sum(c <= u[:, k] * c[-1], axis=0), p.shape[0] - 1)
            x[:, v] = xv
            if k < len(self.steps):  # a pruned CPT's p / p is 1: not in the weight
                with np.errstate(divide="ignore"):
                    logq += np.log(p[xv, rows] / c[-1])
        return self._log_weights(x, logq)


#: Uniforms drawn at once by :meth:`Proposal.sample` (rows of ``steps`` each).
SAMPLE_CHUNK = 2**20


def _pack(steps: list, counted: int, card: np.ndarray) -> tuple:
    """The steps' conditionals as the flat arrays of
    :func:`mrflib.inference.approx._importance_kernels.draw` (each table as
    ``(|X_v|, rest entries)`` in C order); the first ``counted`` steps count in ``log q``."""
    conds = [r for _, parts in steps for r in parts]
    step_ptr = np.cumsum([0] + [len(parts) for _, parts in steps]).astype(np.int64)
    sizes = np.array([r.table.size for r in conds], dtype=np.int64)
    msizes = np.array([r.message.size for r in conds], dtype=np.int64)
    rsizes = np.array([r.rest.size for r in conds], dtype=np.int64)
    require_memory(8.0 * (2 * sizes.sum() + msizes.sum()), "the importance proposal's tables")

    def cat(arrays: list, dtype: Any) -> np.ndarray:
        return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype)

    widest = int(card.max()) if card.size else 1  # the kernel's scratch rows, one a value
    return (np.array([v for v, _ in steps], dtype=np.int64),
            np.array([int(card[v]) for v, _ in steps], dtype=np.int64),
            np.arange(len(steps)) < counted, step_ptr,
            np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if conds
            else np.zeros(0, np.int64),
            np.concatenate([[0], np.cumsum(msizes)[:-1]]).astype(np.int64) if conds
            else np.zeros(0, np.int64),
            np.array([r.table.shape[1] for r in conds], dtype=np.int64),
            np.array([r.weight for r in conds], dtype=np.float64),
            np.cumsum(np.concatenate([[0], rsizes])).astype(np.int64),
            cat([r.rest for r in conds], np.int64), cat([r.strides for r in conds], np.int64),
            cat([r.table.reshape(-1) for r in conds], np.float64),
            cat([r.message for r in conds], np.float64),
            np.zeros(widest), np.zeros(widest, dtype=np.bool_))


def _pack_factors(red: Reduced) -> tuple:
    """The reduced model's factors as the flat arrays of
    :func:`mrflib.inference.approx._importance_kernels.log_f`."""
    scopes = [tuple(s) for s in red.scopes]
    strides = [math.prod(int(red.card[u]) for u in s[j + 1:]) for s in scopes
               for j in range(len(s))]
    sizes = np.array([np.size(t) for t in red.tables], dtype=np.int64)
    return (np.cumsum([0] + [len(s) for s in scopes]).astype(np.int64),
            np.array([v for s in scopes for v in s], dtype=np.int64),
            np.array(strides, dtype=np.int64),
            (np.cumsum(sizes) - sizes).astype(np.int64),
            np.concatenate([np.asarray(t, dtype=np.float64).reshape(-1) for t in red.tables])
            if red.tables else np.zeros(0))


def _head(packed: tuple, steps: int) -> tuple:
    """The packed arrays of the first ``steps`` steps (the conditionals stay whole)."""
    out = list(packed)
    out[0], out[1], out[2], out[3] = packed[0][:steps], packed[1][:steps], packed[2][:steps], \
        packed[3][:steps + 1]
    return tuple(out)


def _reduced(model: Any) -> tuple[FactorGraph, Reduced]:
    """The model, and the model with the evidence clamped and the barren conditional
    probability tables pruned (:class:`mrflib.inference._reduction.Reduced`: they
    sum to one, so ``Z`` is that of the rest, as the exact engine computes it)."""
    fg = as_factor_graph(model)
    return fg, Reduced(fg, barren=True)


def _wmb_run(fg: FactorGraph, red: Reduced, ibound: int | None, memory: float,
             order: list[int], first_stop: float, stop_at: float, passes: int
             ) -> tuple[float, float, list, int, bool, int]:
    """One mini-bucket run: ``(last pass's bound, lowest bound, steps, i-bound, exact,
    passes)`` (``exact``: every bucket one mini-bucket, so the bound is ``log Z``);
    :class:`~mrflib.inference.approx._mini_buckets.Late` when the first pass does not end
    by ``first_stop``; later passes end by ``stop_at``."""
    order, nodes, buckets, _ = mb.structure(red, fg.n, ibound, memory, order, first_stop)
    const = red.const + red.free_log
    exact = all(len(ids) == 1 for ids in buckets)
    best = last = math.inf
    for it in range(passes):
        try:
            if it == 0 and not exact:
                best = const + mb.unmatched_bound(nodes, buckets, first_stop)
            last = const + mb.forward(nodes, buckets, wmb.STEP_THETA, wmb.STEP_WEIGHTS,
                                      first_stop if it == 0 else stop_at)
        except mb.Late:
            if it == 0:
                raise
            # the tables of an abandoned pass are half-matched: run the last finished
            # pass's state again without matching, so that tables and messages agree
            last = const + mb.forward(nodes, buckets, 0.0, 0.0)
            break
        best = min(best, last)
        if not last > -math.inf or exact:
            break
        if it + 1 < passes:
            try:
                mb.backward(nodes, buckets, order, {}, stop_at)
            except mb.Late:
                break
    steps = [(order[t], [_Conditional.of_node(nodes[i], nodes, red.card) for i in buckets[t]])
             for t in range(len(buckets) - 1, -1, -1)]
    width = max((len(nd.clique) for nd in nodes), default=0)
    return last, best, steps, width, exact, it + 1


def _cpt_steps(red: Reduced) -> list:
    """The barren CPTs pruned from the model, sampled forward from their tables after the
    variables of the reduced model, roots first (they multiply ``Z`` by one, and a weight
    by ``p / p``)."""
    return [(child, [_Conditional.of_cpt(scope, table, child, red.card)])
            for scope, table, child in reversed(red.pruned)]


def wmb_proposal(model: FactorGraph | BoltzmannMachine, *, ibound: int | None = None,
                 memory: float | None = None, time_limit: float | None = None,
                 passes: int = PROPOSAL_PASSES, order: Any = None,
                 first_limit: float | None = None) -> Proposal:
    """The weighted mini-bucket proposal (see the module notes).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.
    ibound : int or None, default None
        The most variables of a mini-bucket (``None``: bounded by ``memory`` only).
    memory : float or None, default None
        Bytes of the largest mini-bucket table. Without ``ibound`` and with a
        ``time_limit``, budgets grow from :data:`mrflib.inference.approx.wmb.FIRST_MEMORY`
        while time remains and the run of the lowest bound is kept; otherwise one run at
        ``memory`` (default :data:`mrflib.inference.approx.wmb.DEFAULT_MEMORY`).
    time_limit : float or None, default None
        Seconds the proposal may take, the first pass of the first run excepted (see
        ``first_limit``).
    passes : int, default :data:`PROPOSAL_PASSES`
        Forward passes of a run at most.
    order : sequence of int or None, default None
        The elimination order (:func:`mrflib.inference.approx.wmb.elimination_order`;
        ``None``: computed).
    first_limit : float or None, default None
        Seconds, from the call, by which the first pass of the first run must end (its
        structure, its unmatched bound and its pass; ``None``: it always ends, so that a
        proposal exists). A caller with a hard deadline passes it here: a first pass that
        cannot end by then is abandoned (``TimeoutError``) rather than overrunning it.

    Returns
    -------
    Proposal
        Its weights are at most its pass's bound on ``Z``.

    Raises
    ------
    TimeoutError
        When the first run's first pass did not end by ``first_limit``.
    ValueError
        When the first run's tables would exceed the memory (the message gives their
        size), or a pass proved ``Z = 0``.
    """
    start = time.perf_counter()
    fg, red = _reduced(model)
    check_positive(passes, "passes", integer=True)
    wmb.check_budget(ibound, memory, time_limit)
    if first_limit is not None:
        check_positive(first_limit, "first_limit", allow_zero=True)
    first_stop = math.inf if first_limit is None else start + first_limit
    order = wmb.checked_order(red, order) or mb.mini_bucket_order(red, fg.n)
    if time_limit is None or ibound is not None or memory is not None:
        budgets = [float(memory or wmb.DEFAULT_MEMORY)]
    else:
        budgets = [float(wmb.FIRST_MEMORY) * wmb.GROWTH ** k for k in range(12)]
    chosen, best, last_width = None, math.inf, -1
    for k, budget in enumerate(budgets):
        stop_at = math.inf if time_limit is None else start + time_limit
        t0 = time.perf_counter()
        try:
            last, low, steps, width, exact, done = _wmb_run(
                fg, red, ibound, budget, order, first_stop if k == 0 else stop_at,
                min(stop_at, first_stop) if k == 0 else stop_at, passes)
        except mb.Late:
            break
        except ValueError:  # a budget past the memory (or a proof of Z = 0): said below
            if k == 0:
                raise
            break
        best = min(best, low)
        if chosen is None or last < chosen[0]:
            chosen = (last, steps, width, exact)
        if not last > -math.inf or width == last_width or exact:
            break
        last_width = width
        # as growing_passes: the next budget while a few passes of this one fit (its first
        # pass is abandoned at the limit, this run's proposal kept)
        per_pass = (time.perf_counter() - t0) / done
        if time_limit is not None and \
                per_pass * wmb.NEXT_COST > start + time_limit - time.perf_counter():
            break
    if chosen is None:
        raise TimeoutError(f"the first weighted mini-bucket pass did not end within "
                           f"first_limit = {first_limit} s")
    return Proposal(fg, red, "wmb", chosen[1], best, chosen[0], chosen[2], chosen[3])


def mean_field_proposal(model: FactorGraph | BoltzmannMachine, *,
                        time_limit: float | None = None) -> Proposal:
    """The mean-field proposal (see the module notes).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.
    time_limit : float or None, default None
        Seconds mean field may take.

    Returns
    -------
    Proposal
        Its weights are unbounded; its bound on ``log Z`` is the trivial one.
    """
    fg, red = _reduced(model)
    q = mean_field(fg, time_limit=time_limit, max_iter=100).marginals
    steps = []
    for v in red.active:
        c = int(red.card[v])
        qv = (1.0 - DEFENSIVE) * np.asarray(q[v], dtype=np.float64) + DEFENSIVE / c
        steps.append((v, [_Conditional(np.log(qv)[:, None], np.zeros(1), 1.0, (), red.card)]))
    top = (red.const + red.free_log + sum(float(np.max(t)) for t in red.tables if t.size)
           + sum(math.log(int(red.card[v])) for v in red.active))
    return Proposal(fg, red, "mean-field", steps, top, math.inf, None)


def probabilistic_bounds(log_weights: np.ndarray, log_weight_bound: float,
                         delta: float = DELTA) -> tuple[float, float]:
    """Bounds on ``log Z`` from importance weights, holding together with probability at
    least ``1 - delta``.

    The upper bound is the empirical Bernstein bound at ``delta / 2`` (``inf`` without a
    bound on the weights or before two samples); the lower bound the larger of Markov's
    (``log Ẑ + log(delta / 4)``) and the empirical Bernstein bound, each at ``delta / 4``.

    Parameters
    ----------
    log_weights : ndarray
        The log weights ``log f(x^i) - log q(x^i)`` (``-inf`` for zero).
    log_weight_bound : float
        The log of a bound on every weight (``inf``: none).
    delta : float, default :data:`DELTA`
        The probability with which the bounds may fail.

    Returns
    -------
    tuple of (float, float)
        ``(lower, upper)`` on ``log Z``.
    """
    delta = check_real(delta, "delta")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    lw = np.asarray(log_weights, dtype=np.float64)
    n = lw.size
    top = float(np.max(lw)) if n else -math.inf
    mean = var = 0.0
    est = -math.inf
    if top > -math.inf:
        s = np.exp(lw - top)  # the weights in units of exp(top), the largest 1
        mean = float(np.mean(s))
        var = float(np.var(s, ddof=1)) if n > 1 else 0.0
        est = top + math.log(mean)
    lower = est + math.log(delta / 4.0)  # Markov
    if n < 2 or not log_weight_bound < math.inf:
        return lower, log_weight_bound
    scale = top if top > -math.inf else 0.0
    with np.errstate(over="ignore", divide="ignore"):
        ln_up, ln_low = math.log(4.0 / delta), math.log(8.0 / delta)
        # upper: log(mean + sqrt(2 V ln / n) + 7 U ln / (3 (n - 1))), in log space
        spread = math.sqrt(2.0 * var * ln_up / n)
        first = scale + math.log(mean + spread) if mean + spread > 0 else -math.inf
        upper = float(np.logaddexp(first, log_weight_bound
                                   + math.log(7.0 * ln_up / (3.0 * (n - 1)))))
        rel = math.exp(min(log_weight_bound - scale, 700.0))
        low = mean - math.sqrt(2.0 * var * ln_low / n) - 7.0 * rel * ln_low / (3.0 * (n - 1))
        if low > 0:
            lower = max(lower, scale + math.log(low))
    return lower, min(upper, log_weight_bound)


def default_proposal(model: FactorGraph | BoltzmannMachine, *,
                     time_limit: float | None = None, ibound: int | None = None,
                     order: Any = None) -> Proposal:
    """The proposal :func:`importance_estimates` makes by default.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.
    time_limit : float or None, default None
        The whole call's seconds: the proposal takes :data:`PROPOSAL_SHARE` of them, except
        that the first mini-bucket pass may take all of them (``first_limit`` of
        :func:`wmb_proposal`); the mean-field proposal gets what is left of the share.
    ibound : int or None, default None
        The mini-bucket i-bound (``None``: grown within the time, or the default memory).
    order : sequence of int or None, default None
        The elimination order, as :func:`wmb_proposal` takes it.

    Returns
    -------
    Proposal
        :func:`wmb_proposal`'s, or :func:`mean_field_proposal`'s where that runs out of
        time or memory (or, without an ``ibound``, refuses the model).
    """
    start = time.perf_counter()
    share = None if time_limit is None else time_limit * PROPOSAL_SHARE
    try:
        # the first pass may use the whole call's time, never more: a mini-bucket proposal
        # is worth waiting for, but not past the caller's deadline
        return wmb_proposal(model, ibound=ibound, time_limit=share, order=order,
                            first_limit=time_limit)
    except (TimeoutError, MemoryError, ValueError) as err:
        if ibound is not None and not isinstance(err, (TimeoutError, MemoryError)):
            raise
        left = None if time_limit is None else \
            min(share, max(start + time_limit - time.perf_counter(), 0.0))
        return mean_field_proposal(model, time_limit=left)


def importance_estimates(model: FactorGraph | BoltzmannMachine, *, rng: Any,
                         n_samples: int | None = None, time_limit: float | None = None,
                         proposal: Proposal | None = None, ibound: int | None = None,
                         delta: float = DELTA, marginals: list | None = None,
                         order: Any = None) -> Iterator[ImportanceResult]:
    """:func:`importance_sampling` one batch at a time: the estimate after each.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.
    rng : numpy.random.Generator or int
        The seed of every draw (``None`` is refused).
    n_samples : int or None, default None
        Samples at most (``None``: until the ``time_limit``; one of the two is needed).
    time_limit : float or None, default None
        Seconds for the proposal and the samples; no batch starts once the time is spent,
        nor one expected to end past it, and a batch running at the deadline stops soon
        after it (the first batch always draws at least one sample).
    proposal : Proposal or None, default None
        The proposal (default: :func:`wmb_proposal` within :data:`PROPOSAL_SHARE` of the
        time, :func:`mean_field_proposal` where that refuses or runs out of time).
    ibound : int or None, default None
        The default proposal's i-bound.
    delta : float, default :data:`DELTA`
        The probability with which the bounds may fail.
    marginals : list or None, default None
        A list that, given, gets one array of weighted counts per variable (updated with
        each batch, relative to the largest weight so far; normalized, the self-normalized
        importance sampling marginals).
    order : sequence of int or None, default None
        The default proposal's elimination order (as :func:`wmb_proposal` takes it).

    Yields
    ------
    ImportanceResult
        The estimate and bounds after each batch.
    """
    start = time.perf_counter()
    gen = as_rng(rng)
    fg = as_factor_graph(model)
    if n_samples is None and time_limit is None:
        raise ValueError("importance sampling needs n_samples or time_limit (it would run "
                         "forever)")
    if n_samples is not None:
        check_positive(n_samples, "n_samples", integer=True)
    if time_limit is not None:
        check_positive(time_limit, "time_limit", allow_zero=True)
    delta = check_real(delta, "delta")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if proposal is not None and not isinstance(proposal, Proposal):
        raise TypeError(f"proposal must be a Proposal, got {type(proposal).__name__}")
    if proposal is None:
        proposal = default_proposal(fg, time_limit=time_limit, ibound=ibound, order=order)
    return _batches(fg, proposal, gen, n_samples, time_limit, delta, start, marginals)


def _batches(fg: FactorGraph, proposal: Proposal, gen: np.random.Generator,
             n_samples: int | None, time_limit: float | None, delta: float, start: float,
             marginals: list | None) -> Iterator[ImportanceResult]:
    if not proposal.log_upper_bound > -math.inf:  # Z = 0, certified: nothing to draw
        yield ImportanceResult(-math.inf, -math.inf, -math.inf, -math.inf, delta, 0, 0.0,
                               proposal.kind, proposal.ibound, time.perf_counter() - start)
        return
    if proposal.exact and marginals is None:  # every weight is Z: nothing to draw
        z = proposal.log_upper_bound
        yield ImportanceResult(z, z, z, z, delta, 0, 0.0, proposal.kind, proposal.ibound,
                               time.perf_counter() - start, {"exact": True})
        return
    if marginals is not None:
        marginals[:] = [np.zeros(int(c)) for c in fg.cardinalities]
    drawn: list[np.ndarray] = []
    n, size, top = 0, FIRST_BATCH, -math.inf
    stop_at = math.inf if time_limit is None else start + time_limit
    while n_samples is None or n < n_samples:
        t0 = time.perf_counter()
        m = size if n_samples is None else min(size, n_samples - n)
        require_memory(8.0 * m * (fg.n + 4), f"a batch of {m} importance samples")
        x, lw = _draw(proposal, m, gen, marginals is not None, stop_at)
        drawn.append(lw)
        n += lw.size
        if marginals is not None:
            top = _accumulate(marginals, x, lw, top)
        yield _result(np.concatenate(drawn), proposal, delta, start)
        if lw.size < m:  # cut at the deadline
            return
        took = time.perf_counter() - t0
        size = min(2 * size, LARGEST_BATCH)
        if time_limit is not None:
            left = start + time_limit - time.perf_counter()
            if left <= took * size / m:
                return


def _draw(proposal: Proposal, m: int, gen: np.random.Generator, whole: bool,
          stop_at: float) -> tuple[np.ndarray, np.ndarray]:
    """``proposal.sample(m, gen, whole)``, under a deadline in pieces of 1, 2, 4, ...
    rows with the clock read after each, so that a batch sized by a faster pass (or the
    first, sized by none) ends soon after ``stop_at`` with the rows drawn so far (at least
    one). The rows are those of one call: the uniforms are one stream whatever the pieces."""
    if stop_at == math.inf:
        return proposal.sample(m, gen, whole=whole)
    xs, lws, done, piece = [], [], 0, 1
    while done < m:
        x, lw = proposal.sample(min(piece, m - done), gen, whole=whole)
        xs.append(x)
        lws.append(lw)
        done += lw.size
        piece *= 2
        if time.perf_counter() > stop_at:
            break
    return np.concatenate(xs), np.concatenate(lws)


def _accumulate(counts: list, x: np.ndarray, lw: np.ndarray, top: float) -> float:
    """Add the batch's weights (relative to the largest so far) to the per-variable
    counts; returns the new largest log weight."""
    new = max(top, float(np.max(lw)))
    if not new > -math.inf:
        return top
    if top > -math.inf and new > top:
        scale = math.exp(top - new)
        for c in counts:
            c *= scale
    w = np.exp(lw - new)
    for v, c in enumerate(counts):
        c += np.bincount(x[:, v], weights=w, minlength=c.size)
    return new


def _result(lw: np.ndarray, proposal: Proposal, delta: float, start: float
            ) -> ImportanceResult:
    n = lw.size
    lower, upper = probabilistic_bounds(lw, proposal.weight_bound, delta)
    upper = min(upper, proposal.log_upper_bound)
    top = float(np.max(lw))
    if top > -math.inf:
        s = np.exp(lw - top)
        mean = float(np.mean(s))
        est = top + math.log(mean)
        se = float(np.std(s, ddof=1)) / (math.sqrt(n) * mean) if n > 1 else math.inf
        ess = float(np.sum(s)) ** 2 / float(np.sum(s * s))
    else:
        est, se, ess = -math.inf, math.inf, 0.0
    est = min(est, proposal.log_upper_bound)  # rounding only: every weight is below it
    lower = min(lower, upper)
    details = {"ess": ess, "zero_share": float(np.mean(np.isneginf(lw)))}
    return ImportanceResult(est, lower, upper, proposal.log_upper_bound, delta, n, se,
                            proposal.kind, proposal.ibound, time.perf_counter() - start,
                            details)


def importance_sampling(model: FactorGraph | BoltzmannMachine, *, rng: Any,
                        n_samples: int | None = None, time_limit: float | None = None,
                        proposal: Proposal | None = None, ibound: int | None = None,
                        delta: float = DELTA, order: Any = None) -> ImportanceResult:
    """An unbiased estimate of ``Z`` by importance sampling, and bounds on ``log Z``.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model, evidence applied.
    rng : numpy.random.Generator or int
        The seed of every draw.
    n_samples : int or None, default None
        Samples at most (``None``: until the ``time_limit``).
    time_limit : float or None, default None
        Seconds for the proposal and the samples.
    proposal : Proposal or None, default None
        As in :func:`importance_estimates`.
    ibound : int or None, default None
        As in :func:`importance_estimates`.
    delta : float, default :data:`DELTA`
        The probability with which the bounds may fail.
    order : sequence of int or None, default None
        As in :func:`importance_estimates`.

    Returns
    -------
    ImportanceResult
        The estimate after the last batch.
    """
    runs = importance_estimates(model, rng=rng, n_samples=n_samples, time_limit=time_limit,
                                proposal=proposal, ibound=ibound, delta=delta, order=order)
    return collections.deque(runs, maxlen=1)[0]  # the first batch always runs
