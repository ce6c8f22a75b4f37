"""A most probable state by toulbar2, run in a forked child whose solutions stream back.

toulbar2 (Allouche, de Givry, Schiex et al.; the ``pytoulbar2`` bindings, an optional
dependency: ``pip install "mrflib[mpe]"``) is a branch and bound over weighted constraint
networks, with soft arc consistency bounds, variable elimination and hybrid best-first
search; it won the MPE track of the UAI 2022 competition. This module hands it a
:class:`~mrflib.models.factor_graph.FactorGraph` in memory, no file written:

* the variables fixed by the model (one state, or a unary table with one entry of positive
  weight, as evidence makes them) are sliced out of every table and not given to toulbar2
  (a network that keeps their unary tables can crash toulbar2 1.4's preprocessing); a
  table left without a scope is a constant;
* each table ``θ_k`` becomes the costs ``c_k = max θ_k - θ_k`` (zeros of the table,
  ``θ = -inf``, are forbidden tuples: toulbar2's top cost), so that a state's total cost is
  ``Σ_k max θ_k - log-weight``;
* toulbar2 adds integer costs: each ``c_k`` is scaled by ``S`` and rounded to an integer,
  ``S`` the largest power of two under which the costs' total (every table's largest
  finite cost, summed) stays below :data:`COST_TOTAL` (``2^50``: integers exact in float64
  and far below toulbar2's top, ``~5 * 10^17``). The costs are handed over as those
  integers with ``resolution=0``, so no further rounding happens inside toulbar2.

The rounding is what separates toulbar2's proof from a proof on the model. With ``e_k(t)``
the rounding error of entry ``t`` of table ``k`` (its integer over ``S`` minus ``c_k(t)``,
at most ``1/(2S)`` in size) and ``L`` toulbar2's lower bound on every state's integer cost,
every state's log-weight is at most

.. math:: \\sum_k \\max \\theta_k - L / S + \\sum_k \\max_t e_k(t),

the certified upper bound this module returns. When toulbar2's search ends (it proved its
best state optimal in integer costs), ``L`` is that state's cost and the bound exceeds the
state's log-weight by ``Σ_k (max_t e_k(t) - e_k(x))``, at most ``m / S`` for ``m`` tables:
``5 * 10^-9`` on Promedas_11 of UAI 2014, whose log-weight -48.3 allows ``5 * 10^-8`` under
:data:`~mrflib.inference.approx.max_mini_bucket.OPTIMAL_RTOL`: the state is then proven
optimal on the model itself (``optimal``), not only on toulbar2's rounded costs. Where the
rounding leaves more than that tolerance (a log-weight near 0, or a table of huge range that
makes ``S`` small: wcsp_13 of UAI 2014), a state ``y`` at least as heavy as ``x`` has an
integer cost at most ``S Σ_k (max_t e_k(t) - min_t e_k(t))`` above ``x``'s, so toulbar2
enumerates every state within that much of its optimum (at most :data:`ENUMERATED_STATES`
of them, within the time left) and the heaviest of them on the model is its optimum, its
log-weight the bound (``details["enumerated"]``). When they are more (many states within a
hair of the optimum, as on wcsp_14 of UAI 2014), a second search runs on finer costs: a
state at least as heavy as ``x`` costs at most ``U = Σ_k max θ_k - log-weight(x)`` in every
table, so the entries that cost more are forbidden and the tables' largest costs left,
often far smaller in total, allow a larger scale; where that search's bound meets the
log-weight, ``x`` (or a heavier state it found) is the model's optimum
(``details["refined"]``). Otherwise ``optimal`` stays ``False`` though
``details["complete"]`` says the search ended.

The search runs in a forked child (:class:`mrflib._support.forked.Forked`): toulbar2 cannot
be interrupted from Python, keeps global state between networks and may crash; the child
is killed at the time limit and never outlives the caller. toulbar2 prints each new best
solution as it finds it (``showSolutions``); the child's standard output is a temporary
file, which :class:`Toulbar2Search` reads from where it stopped whenever
:meth:`~Toulbar2Search.poll` is called, so every solution found before a kill is the
caller's. Each state read is checked to have positive weight in the model before it is
reported (a state of zero weight is never returned).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from mrflib._support.forked import Forked
from mrflib._support.optional import importable, optional_import
from mrflib._support.validation import check_instance, check_positive, require_memory
from mrflib.inference._reduction import observed_states
from mrflib.inference.approx.max_mini_bucket import OPTIMAL_RTOL, bound_meets
from mrflib.inference.approx.result import MapResult
from mrflib.inference.exact._search_arguments import conditioned_model
from mrflib.models.factor_graph import FactorGraph, slice_factor

__all__ = ["available", "Toulbar2Search", "toulbar2_map", "COST_TOTAL"]

#: Largest total of the integer costs handed to toulbar2 (every table's largest finite
#: cost, summed): ``2^50``, exact in float64 and far below toulbar2's top cost.
COST_TOTAL = 2.0**50
#: toulbar2's random seed (its value heuristics break ties at random).
SEED = 1
#: States at most that the enumeration behind a proof on the model may list (see the
#: module notes).
ENUMERATED_STATES = 1000
#: Bytes a table entry costs on its way into toulbar2 (a Python float in the list handed
#: over, then toulbar2's own cost), for the memory check before the translation.
TUPLE_BYTES = 48
#: Seconds between two reads of the child's solutions in :func:`toulbar2_map`.
POLL_SECONDS = 0.1

_PURPOSE = "MAP by toulbar2"


def available() -> bool:
    """Whether toulbar2 (``pytoulbar2``) can be imported.

    Returns
    -------
    bool
        ``True`` when :func:`toulbar2_map` and :class:`Toulbar2Search` can run.
    """
    return importable("pytoulbar2", _PURPOSE, "mpe")


class _Network(NamedTuple):
    """The integer cost network of a model (see the module notes)."""

    cards: list[int]  # the cardinality of each variable given to toulbar2
    free: np.ndarray  # the model's index of each of them
    base: np.ndarray  # a state of the model: the fixed variables at their values
    scopes: list[list[int]]  # in toulbar2's numbering
    costs: list[np.ndarray]  # integers (as floats), inf for a forbidden tuple
    scale: float
    top: float  # Σ_k max θ_k, constants included
    rounding: float  # Σ_k max_t e_k(t)
    spread: float  # Σ_k (max_t e_k(t) - min_t e_k(t))


def _network(model: FactorGraph, cap: float | None = None) -> _Network:
    """The model's integer cost network; a table of no positive entry raises ``Z = 0``.
    With ``cap``, every entry of cost above it is forbidden too (the network of the states
    whose every table costs at most ``cap``: see :func:`_refined`)."""
    fixed = observed_states(model)
    free = np.array([v for v in range(model.n) if v not in fixed], dtype=np.int64)
    number = {int(v): i for i, v in enumerate(free.tolist())}
    base = np.zeros(model.n, dtype=np.int64)
    for v, x in fixed.items():
        base[v] = x
    top, kept = 0.0, []
    for scope, table in zip(model.scopes, model.log_tables):
        scope, table = slice_factor(scope, table, fixed)
        table = np.asarray(table, dtype=np.float64)
        finite = np.isfinite(table)
        if not finite.any():
            raise ValueError("the model has Z = 0 (a table has no entry of positive weight "
                             "once the fixed variables are clamped)")
        high = float(table[finite].max())
        top += high
        cost = np.where(finite, high - table, np.inf)
        if cap is not None:
            cost[cost > cap] = np.inf
        if scope and (not finite.all() or float(table.min()) != high or cap is not None):
            kept.append(([number[int(v)] for v in scope], cost))
    entries = sum(c.size for _, c in kept)
    require_memory(entries * TUPLE_BYTES, f"toulbar2's copy of {entries} table entries")
    total = sum(float(c[np.isfinite(c)].max()) for _, c in kept)
    scale = 2.0 ** math.floor(math.log2(COST_TOTAL / total)) if total > 0 else 1.0
    scopes, costs, rounding, spread = [], [], 0.0, 0.0
    for scope, c in kept:
        ok = np.isfinite(c)
        ints = np.where(ok, np.rint(c * scale), np.inf)
        err = ints[ok] / scale - c[ok]
        rounding += float(err.max())
        spread += float(err.max() - err.min())
        scopes.append(scope)
        costs.append(ints.ravel())
    cards = [int(model.cardinalities[v]) for v in free.tolist()]
    return _Network(cards, free, base, scopes, costs, scale, top, rounding, spread)


def _network_solver(tb2: Any, net: _Network, ubinit: float | None = None) -> Any:
    """A fresh toulbar2 network of ``net`` (its integer costs, resolution 0)."""
    cfn = tb2.CFN(ubinit, resolution=0, verbose=-1, seed=SEED)
    for i, card in enumerate(net.cards):
        cfn.AddVariable(f"x{i}", list(range(card)))
    for scope, costs in zip(net.scopes, net.costs):
        cfn.AddFunction(scope, costs.tolist())
    return cfn


def _solve(net: _Network, seconds: float | None, out: int, model: FactorGraph
           ) -> tuple[list[int] | None, bool, float, str]:  # pragma: no cover - forked
    """toulbar2 on ``net`` within ``seconds`` (``None``: no limit), each new solution
    printed to the file descriptor ``out``: the best state (toulbar2's numbering), whether
    the search ended, its lower bound on the integer cost, and how the state was proven the
    model's optimum where the rounding kept toulbar2's bound from proving it: by the
    enumeration of :func:`_enumerated` (``"enumerated"``), by the search on finer costs of
    :func:`_refined` (``"refined"``), or not (``""``)."""
    start = time.perf_counter()
    os.dup2(out, 1)  # toulbar2 prints its solutions on C++'s standard output
    tb2 = optional_import("pytoulbar2", _PURPOSE, "mpe")
    cfn = _network_solver(tb2, net)
    limit = 0 if seconds is None else max(1, math.floor(seconds))
    res = cfn.Solve(showSolutions=1, timeLimit=limit)
    complete = not bool(cfn.Option.limited)
    lower = float(cfn.GetDDualBound())
    values = None if res is None else [int(v) for v in res[0]]
    if not complete or values is None:
        return values, complete, lower, ""
    # an ended search proves that no state costs less than its best: its dual bound, last
    # updated during the search, can lag below that cost (Promedas_36)
    lower = max(lower, float(res[1]))
    x = net.base.copy()
    x[net.free] = values
    weight = float(model.log_weight(x))
    if bound_meets(net.top - lower / net.scale + net.rounding, weight):
        return values, complete, lower, ""
    left = None if seconds is None else seconds - (time.perf_counter() - start) - 1.0
    best = _enumerated(tb2, net, float(res[1]), model, left)
    if best is not None:
        return best, complete, lower, "enumerated"
    left = None if seconds is None else seconds - (time.perf_counter() - start) - 1.0
    best = _refined(tb2, net, model, values, weight, left)
    return (values, complete, lower, "") if best is None else (best, complete, lower, "refined")


def _enumerated(tb2: Any, net: _Network, cost: float, model: FactorGraph,
                seconds: float | None) -> list[int] | None:  # pragma: no cover - forked
    """The model's most probable state among every state whose integer cost is within the
    rounding's spread of the optimum ``cost`` (a state of larger cost weighs less than
    the optimum's state: see the module notes), or ``None`` when they are more than
    :data:`ENUMERATED_STATES` or do not come within ``seconds``."""
    if seconds is not None and seconds < 1.0:
        return None
    cfn = _network_solver(tb2, net, cost + math.floor(net.spread * net.scale) + 2.0)
    cfn.Solve(allSolutions=ENUMERATED_STATES + 1,
              timeLimit=0 if seconds is None else max(1, math.floor(seconds)))
    found = cfn.GetSolutions()
    if bool(cfn.Option.limited) or not found or len(found) > ENUMERATED_STATES:
        return None
    states = np.tile(net.base, (len(found), 1))
    states[:, net.free] = np.array([list(v) for _, v in found], dtype=np.int64)
    return [int(v) for v in states[int(np.argmax(model.log_weight(states))), net.free]]


def _refined(tb2: Any, net: _Network, model: FactorGraph, values: list[int], weight: float,
             seconds: float | None) -> list[int] | None:  # pragma: no cover - forked
    """The model's optimum proven by a second search on finer integer costs, or ``None``.

    A state at least as heavy as the optimum ``x`` found (``values``, log-weight
    ``weight``) costs at most ``U = top - weight`` in all, so at most ``U`` in every table:
    the entries that cost more are forbidden (:func:`_network` with ``cap``), and the total
    of the tables' largest costs left, often far below the first network's, allows a larger
    scale. The search on that network ends with its lower bound ``L'`` on the integer cost;
    every state either uses a forbidden entry (and weighs less than ``x``) or weighs at most
    ``top - L' / S' + rounding'``. The heavier of ``x`` and the second search's state is
    returned when that bound meets its log-weight. The cap is ``U`` widened by the proof's
    own tolerance: forbidding less is always sound."""
    if seconds is not None and seconds < 1.0:
        return None
    cap = (net.top - weight) * (1.0 + OPTIMAL_RTOL) + OPTIMAL_RTOL * max(1.0, abs(weight))
    try:
        fine = _network(model, cap)
    except ValueError:  # a table left without an entry: the rounding hides nothing then
        return None
    if fine.scale <= net.scale:
        return None
    ub = math.floor(cap * fine.scale + 0.5 * len(fine.costs)) + 2.0
    cfn = _network_solver(tb2, fine, ub)
    res = cfn.Solve(timeLimit=0 if seconds is None else max(1, math.floor(seconds)))
    if bool(cfn.Option.limited) or res is None:
        return None
    lower = max(float(cfn.GetDDualBound()), float(res[1]))
    x = fine.base.copy()
    x[fine.free] = [int(v) for v in res[0]]
    other = float(model.log_weight(x))
    if not bound_meets(fine.top - lower / fine.scale + fine.rounding, max(weight, other)):
        return None
    return [int(v) for v in x[fine.free]] if other > weight else values


class Toulbar2Search:
    """toulbar2 searching a most probable state of ``model`` in a forked child, its
    solutions read as they come (see the module notes).

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied.
    time_limit : float or None, default None
        Seconds the search may take (``None``: until it ends); toulbar2 stops itself at
        the whole second above, and :meth:`result` kills the child when it does not.

    Attributes
    ----------
    model : FactorGraph
        The model searched.
    state : ndarray of int64 or None
        The best state of positive weight read so far (``None`` before one).
    log_weight : float
        Its log-weight (``-inf`` before one).
    solutions : int
        The number of states read so far.
    scale : float
        The power of two by which the costs were scaled to integers.

    Raises
    ------
    ValueError
        For a bad ``time_limit``, when a table of the model has no entry of positive
        weight (the message says "Z = 0"), or when the tables' copy for toulbar2 would not
        fit in the memory available.
    ImportError
        When ``pytoulbar2`` is not installed (``pip install "mrflib[mpe]"``).
    """

    def __init__(self, model: FactorGraph, time_limit: float | None = None) -> None:
        check_instance(model, FactorGraph, "model")
        if time_limit is not None:
            time_limit = check_positive(time_limit, "time_limit")
        optional_import("pytoulbar2", _PURPOSE, "mpe")
        self.model = model
        self.state: np.ndarray | None = None
        self.log_weight = -math.inf
        self.solutions = 0
        self._net = _network(model)
        self.scale = self._net.scale
        self._file = tempfile.TemporaryFile()
        self._read = 0
        self._tail = b""
        self._head = False
        self._got: tuple[str, Any] | None = None
        self.child = Forked(_solve, (self._net, time_limit, self._file.fileno(), model))

    @property
    def pid(self) -> int | None:
        """The child's process id."""
        return self.child.pid

    def _full(self, values: list[int]) -> np.ndarray:
        x = self._net.base.copy()
        x[self._net.free] = values
        return x

    def _take(self, values: list[int]) -> np.ndarray | None:
        """The model's state of toulbar2's ``values`` when it weighs more than the best."""
        if len(values) != len(self._net.free):
            return None
        x = self._full(values)
        if np.any(x >= self.model.cardinalities) or np.any(x < 0):
            return None
        weight = float(self.model.log_weight(x))
        if not weight > self.log_weight:
            return None
        self.state, self.log_weight = x, weight
        return x

    def poll(self) -> list[tuple[np.ndarray, float]]:
        """The states toulbar2 printed since the last call, each of positive weight and
        heavier than the one before.

        Returns
        -------
        list of (ndarray of int64, float)
            Each state of the model (the fixed variables at their values) and its
            log-weight, in the order found.
        """
        with contextlib.suppress(OSError, ValueError):  # closed by stop
            while True:
                chunk = os.pread(self._file.fileno(), 1 << 20, self._read)
                if not chunk:
                    break
                self._read += len(chunk)
                self._tail += chunk
        *lines, self._tail = self._tail.split(b"\n")
        new = []
        for line in lines:
            if line.startswith(b"New solution:"):
                self._head = True
                continue
            if not self._head:
                continue
            self._head = False
            try:
                values = [int(v) for v in line.split()]
            except ValueError:
                continue
            self.solutions += 1
            x = self._take(values)
            if x is not None:
                new.append((x, self.log_weight))
        return new

    def done(self) -> bool:
        """Whether the child has ended (its result waits in :meth:`result`).

        Returns
        -------
        bool
            ``True`` once toulbar2 has returned, failed or crashed.
        """
        return self._got is not None or self.child.done()

    def result(self, wait: float = 0.0) -> MapResult | None:
        """toulbar2's final answer, waiting up to ``wait`` seconds for the child (any
        size, ``inf`` included).

        Parameters
        ----------
        wait : float, default 0.0
            Seconds to wait for the child's answer.

        Returns
        -------
        MapResult or None
            ``None`` while the child runs. Otherwise the best state read (or the one
            toulbar2 returned, if heavier), its log-weight, the certified upper bound (see
            the module notes; ``inf`` when the child failed or was killed, with
            ``details["failed"]`` saying why) and whether they meet; ``method`` is
            ``"toulbar2"``, ``details`` has ``complete`` (toulbar2's search ended),
            ``enumerated`` (the optimum found by enumeration, see the module notes),
            ``solutions`` and ``scale``. A search that ended without any state proves
            ``Z = 0``: ``log_weight`` is ``-inf``, the bound ``-inf`` and ``state``
            ``None``.
        """
        if self._got is None:
            self._got = self.child.result(wait=wait)
            if self._got is None:
                return None
        self.poll()
        kind, value = self._got
        details: dict[str, Any] = {"solutions": self.solutions, "scale": self._net.scale,
                                   "complete": False}
        upper = math.inf
        if kind == "error":
            details["failed"] = value
        else:
            values, complete, lower, proof = value
            if values is not None:
                self._take(values)
            details.update(complete=complete, enumerated=proof == "enumerated",
                           refined=proof == "refined")
            net = self._net
            upper = net.top - lower / net.scale + net.rounding
            if proof:  # the optimum itself
                upper = self.log_weight
            if complete and self.state is None:
                upper = -math.inf
        return MapResult(self.state, self.log_weight, max(upper, self.log_weight),
                         bound_meets(upper, self.log_weight), "toulbar2", math.nan, details)

    def stop(self) -> None:
        """Kill the child if it still runs, reap it and close the stream."""
        self.child.stop()
        self._file.close()


def toulbar2_map(model: Any, *, evidence: Mapping[Any, Any] | None = None,
                 time_limit: float | None = None,
                 report: Callable[[np.ndarray, float], object] | None = None) -> MapResult:
    """A most probable state by toulbar2 (see the module notes).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model (a ``TypeError`` otherwise).
    evidence : mapping or None, default None
        ``{variable: value}``: the answer is that of the model conditioned on it
        (:func:`~mrflib.models.factor_graph.with_evidence`).
    time_limit : float or None, default None
        Seconds the search may take (``None``: until toulbar2 ends, which may be never
        on a hard model); past them the child is killed and the best state read stands.
    report : callable or None, default None
        Called as ``report(state, log_weight)`` with each better state as it is read
        (every :data:`POLL_SECONDS`).

    Returns
    -------
    MapResult
        The best state of positive weight found (of the factor graph: ``int64`` states),
        its log-weight, a certified upper bound on every state's, ``optimal`` when they
        meet (toulbar2's search ended), ``method`` ``"toulbar2"``, the wall time, and
        ``details``: ``complete``, ``solutions``, ``scale`` (:class:`Toulbar2Search`).

    Raises
    ------
    ValueError
        For a bad ``time_limit``, when the model is proven to have ``Z = 0`` (no state of
        positive weight: the message says "Z = 0"), or when the tables' copy for toulbar2
        would not fit in memory.
    TimeoutError
        When no state of positive weight was found within ``time_limit``.
    RuntimeError
        When toulbar2 failed before finding any state.
    ImportError
        When ``pytoulbar2`` is not installed (``pip install "mrflib[mpe]"``).
    """
    start = time.perf_counter()
    fg, time_limit, deadline = conditioned_model(model, evidence, time_limit)
    if report is not None and not callable(report):
        raise ValueError(f"report must be callable or None, got {type(report).__name__}")
    search = Toulbar2Search(fg, time_limit)
    try:
        res = None
        while res is None:
            step = min(POLL_SECONDS, max(deadline - time.perf_counter(), 0.0))
            res = search.result(wait=step)
            for x, w in search.poll():
                if report is not None:
                    report(x, w)
            if res is None and time.perf_counter() >= deadline:
                break
    finally:
        search.stop()
    if res is None:
        res = MapResult(search.state, search.log_weight, math.inf, False, "toulbar2",
                        math.nan, {"solutions": search.solutions, "complete": False,
                                   "scale": search._net.scale, "stopped": "time limit"})
    if res.state is None:
        if "failed" in res.details:
            raise RuntimeError(f"toulbar2 failed: {res.details['failed']}")
        if res.details.get("complete"):
            raise ValueError("the model has Z = 0 (toulbar2's search ended without a state "
                             "of positive weight)")
        raise TimeoutError(f"toulbar2 found no state of positive weight within "
                           f"{time_limit:g} s")
    return dataclasses.replace(res, seconds=time.perf_counter() - start)
