"""Exact ``log Z`` of a constraint model by an exact model counter (Ganak).

A *constraint model* is one whose every table holds a single positive value where it is
not zero: ``ψ_k(x) = c_k [x_{S_k} ∈ A_k]``. Its partition function is a scaled model count,

.. math::  Z = \\Bigl(\\prod_k c_k\\Bigr) \\; \\#\\{x : x_{S_k} \\in A_k \\ \\forall k\\},

the number of satisfying assignments of a constraint satisfaction problem. The UAI PR
sets encode satisfiability problems this way (the ``*.cnf`` models: circuits, planning,
random formulas). Where their treewidth is in the hundreds, the count is still within
reach of an exact model counter. Counters of this kind combine clause learning,
component caching and preprocessing, which the library's own conditioning search
(:mod:`mrflib.inference.exact.conditioning`) lacks. This module translates the model
into a formula in conjunctive normal form (CNF) and hands it to such a counter.

The encoding (the *direct* encoding of CSP into SAT, Walsh 2000):

* a binary variable is one Boolean ``b_v`` (state 1 is true);
* a variable of ``k > 2`` states is ``k`` Booleans ``b_{v,a}``, with one clause saying at
  least one holds and ``k(k-1)/2`` saying no two do, so that its models are in one-to-one
  correspondence with the variable's states; a variable of one state needs none;
* each zero entry ``x_{S_k} = a`` of a table forbids that assignment with one clause
  ``∨_{v ∈ S_k} (x_v ≠ a_v)``.

Two exact counters are used, each an optional dependency (``pip install
"mrflib[counting]"``), because neither is the faster on every formula:

* **Ganak** (Sharma, Roy, Soos & Meel, IJCAI 2019; the ``pyganak`` bindings), which runs
  Arjun's preprocessing first and then a tree decomposition of the formula
  (FlowCutter, with a fixed budget of steps);
* **d4** (Lagniez & Marquis, IJCAI 2017; the ``d4solver`` bindings, module ``py_d4``),
  guided by a tree decomposition of its own (``htd``) and VSIDS scores
  (:data:`D4_OPTIONS`). Its bindings run no preprocessing, so two simplifications that
  keep the count come first, when ``python-sat`` is installed: the formula's *backbone*
  (the literals true in every model, found by a SAT solver, :func:`backbone`) is fixed,
  and literals that the binary clauses make equivalent are merged into one (each merged
  Boolean is a function of the one kept). On the UAI 2014 planning encodings the first
  removes about half the Booleans, the second a further 14% on ``logistics.c`` (584 to
  503).

Measured here on the UAI 2014 SAT encodings (seconds, each counter alone): Ganak counts
the ISCAS circuits (``c1908``, ``c880``) in under a second, where d4 takes more than 30;
d4 counts ``log-4`` in 2.3 (Ganak 13.4), ``log-5`` in 7.1 (Ganak about 100),
``prob012.pddl`` in 5.7 (25), ``rb`` in 3.6 (22) and ``logistics.c`` in 14.4 (19.6);
neither counts ``rc`` or ``2bitadd_11`` within 30 s.
:func:`counted_log_partition` therefore races every installed counter, each in a forked
child, and takes the first answer (:func:`raced_count`).

The count is an exact Python integer, so ``log Z`` is exact to float64 rounding whatever
its size (``log10 Z`` in the hundreds is no overflow). A table with no scope is a constant:
a zero one makes ``Z = 0``.

The counters cannot be interrupted; with ``time_limit`` they run in forked children
(:class:`mrflib._support.forked.Forked`) that are killed at the limit.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse
import scipy.sparse.csgraph

from mrflib._support import c_stdout
from mrflib._support.forked import Forked, first_done, yield_processor
from mrflib._support.optional import importable, optional_import
from mrflib._support.validation import check_positive, require_memory
from mrflib.inference.exact._search_arguments import conditioned_model
from mrflib.models.factor_graph import as_factor_graph

__all__ = ["available", "constraint_scale", "counted_log_partition", "cnf_clauses",
           "clause_booleans", "model_count", "raced_count", "backbone", "installed",
           "COUNTERS"]

#: Bytes a literal of the formula costs while it is built and handed over (a Python int in
#: a list, then the counter's own copy), for the memory check before the translation.
LITERAL_BYTES = 48
#: The exact counters, by the name :func:`model_count` takes: the module each needs, and
#: the name it is reported under. In a race (:func:`raced_count`) the first installed one
#: keeps the caller's priority and the others yield the processor: d4, the faster on most
#: of the UAI 2014 encodings (see the module text), goes first.
COUNTERS = {"d4": ("py_d4", "d4"), "ganak": ("pyganak", "Ganak")}
#: d4's settings where they differ from its defaults: the ``htd`` tree decomposer and
#: VSIDS scores. Measured alone here, the backbone fixed (equivalent literals not yet
#: merged): ``logistics.c`` 21.7 s with the defaults (FlowCutter, VSADS), 13.4 with
#: ``htd``, 16.4 with both; ``log-5`` 27.6 with the defaults, 31.7 with ``htd`` alone, 9.5
#: with both. Without the backbone, the defaults took 92 s on ``logistics.c`` and more
#: than 150 on ``log-5``.
D4_OPTIONS = {("branching", "partialOrder", "treeDecompositionerMethod"): "htd",
              ("branching", "scoringMethodType"): "vsids"}
#: The SAT solver of ``python-sat`` that finds the backbone (CaDiCaL 1.5.3).
BACKBONE_SOLVER = "cadical153"


def available(counter: str | None = None) -> bool:
    """Whether an exact model counter can be imported.

    Parameters
    ----------
    counter : {"ganak", "d4"} or None, default None
        The counter (:data:`COUNTERS`); ``None``: any of them.

    Returns
    -------
    bool
        ``True`` when :func:`model_count` with that counter (with ``None``:
        :func:`counted_log_partition`) can run.

    Raises
    ------
    ValueError
        When ``counter`` names no counter.
    """
    if counter is None:
        return bool(installed())
    return _importable(_check_counter(counter))


def _check_counter(counter: Any) -> str:
    """``counter`` when it names a counter of :data:`COUNTERS`, else a ``ValueError``."""
    if not isinstance(counter, str) or counter not in COUNTERS:
        raise ValueError(f"counter must be one of {', '.join(map(repr, COUNTERS))}, "
                         f"got {counter!r}")
    return counter


def installed() -> list[str]:
    """The counters of :data:`COUNTERS` that can be imported.

    Returns
    -------
    list of str
        Their names, in the order of :data:`COUNTERS` (the order of a race).
    """
    return [c for c in COUNTERS if _importable(c)]


def _importable(counter: str) -> bool:
    """Whether the module of ``counter`` imports."""
    module, name = COUNTERS[counter]
    return importable(module, f"exact model counting by {name}", "counting")


def _import(counter: str) -> Any:
    """The module of ``counter`` (an ``ImportError`` that says how to install it)."""
    module, name = COUNTERS[counter]
    return optional_import(module, f"exact model counting by {name}", "counting")


def constraint_scale(model: Any) -> float | None:
    """``Σ_k log c_k`` when ``model`` is a constraint model, else ``None``.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model (a ``TypeError`` otherwise).

    Returns
    -------
    float or None
        The log of the product of every table's one positive value (a table with no
        positive entry, like a zero constant, contributes nothing here: it makes the count
        zero), or ``None`` when some table holds two different positive values (exact
        comparison of the log-values: a model is a constraint model or it is not).
    """
    model = as_factor_graph(model)
    scale = 0.0
    for table in model.log_tables:
        finite = np.asarray(table)[np.isfinite(table)]
        if finite.size == 0:
            continue
        top = float(finite.max())
        if float(finite.min()) != top:
            return None
        scale += top
    return scale


def _booleans(cards: np.ndarray) -> tuple[np.ndarray, int]:
    """The first Boolean of each variable (1-based) and the number of Booleans."""
    width = np.where(cards == 2, 1, np.where(cards == 1, 0, cards))
    first = np.concatenate([[1], 1 + np.cumsum(width)[:-1]]).astype(np.int64)
    return first, int(width.sum())


def _literal_not(card: int, first: int, state: int) -> int:
    """The literal ``x_v ≠ state`` of a variable of ``card`` states."""
    if card == 2:
        return -first if state == 1 else first
    return -(first + state)


def cnf_clauses(model: Any) -> tuple[int, list[list[int]]]:
    """The direct CNF encoding of a model's zeros (see the module text).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model (a ``TypeError`` otherwise); its values other than zero do not enter.

    Returns
    -------
    n_booleans : int
        The number of Boolean variables, numbered from 1.
    clauses : list of list of int
        The clauses, each a list of signed variable numbers (DIMACS literals), whose
        models are the states of positive weight. A zero table with no scope gives the
        empty clause ``[]`` (no model).

    Raises
    ------
    ValueError
        When the formula would not fit in the memory available (the size it needs is
        given).
    """
    model = as_factor_graph(model)
    cards = np.asarray(model.cardinalities, dtype=np.int64)
    first, n_bool = _booleans(cards)
    zeros = [int(np.count_nonzero(np.isneginf(t))) * max(len(s), 1)
             for s, t in zip(model.scopes, model.log_tables)]
    onehot = int(sum(c * (c - 1) // 2 * 2 + c for c in cards.tolist() if c > 2))
    require_memory((sum(zeros) + onehot) * LITERAL_BYTES, "the CNF encoding of the model")
    clauses: list[list[int]] = []
    for v in np.flatnonzero(cards > 2).tolist():
        lits = list(range(int(first[v]), int(first[v] + cards[v])))
        clauses.append(lits)
        clauses.extend([-a, -b] for i, a in enumerate(lits) for b in lits[i + 1:])
    for scope, table in zip(model.scopes, model.log_tables):
        table = np.asarray(table)
        bad = np.argwhere(np.isneginf(table))
        if len(bad) == 0:
            continue
        if len(scope) == 0:
            clauses.append([])
            continue
        # a variable of one state is never "not in its state": its literal is false
        vs = [int(v) for v in scope]
        clauses.extend([_literal_not(int(cards[v]), int(first[v]), int(a))
                        for v, a in zip(vs, row) if cards[v] > 1] for row in bad.tolist())
    return n_bool, clauses


def clause_booleans(clauses: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The Booleans some clause holds, and how often each occurs in the clauses: the
    sampling set of the approximate counter and the order of SampleSearch.

    Parameters
    ----------
    clauses : list of list of int
        DIMACS clauses, as :func:`cnf_clauses` gives them.

    Returns
    -------
    booleans : ndarray of int64
        The Booleans, ascending; the others (``1..n`` and in no clause) are free, each
        doubling the count.
    occurrences : ndarray of int64
        How many literals of the clauses name each.
    """
    lits = [abs(int(lit)) for c in clauses for lit in c]
    held, occurrences = np.unique(np.asarray(lits, dtype=np.int64), return_counts=True)
    return held, occurrences.astype(np.int64)


def _check_clauses(clauses: Any, n_bool: int) -> None:
    """Refuse ``clauses`` unless each is a sequence of integer literals ``±1..±n_bool``,
    naming the first clause that is not (one pass over the literals, in numpy)."""
    if isinstance(clauses, (str, bytes, np.ndarray)) or not hasattr(clauses, "__len__"):
        raise ValueError(f"clauses must be a list of clauses (lists of integer literals), "
                         f"got {type(clauses).__name__}")
    expected = f"a sequence of integer literals ±1..±{n_bool} (n_bool = {n_bool})"
    sizes = np.empty(len(clauses), dtype=np.int64)
    for i, c in enumerate(clauses):
        if isinstance(c, (str, bytes)) or not hasattr(c, "__len__"):
            raise ValueError(f"clauses[{i}] must be {expected}, got {c!r}")
        sizes[i] = len(c)
    flat = [lit for c in clauses for lit in c]
    try:
        lits = np.asarray(flat) if flat else np.zeros(0, dtype=np.int64)
    except (ValueError, TypeError):  # literals of uneven shapes: checked one by one below
        lits = np.zeros((0, 0))
    if lits.dtype.kind not in "iu" or lits.ndim != 1:
        bad = [not isinstance(lit, (int, np.integer)) or isinstance(lit, bool)
               or not 0 < abs(lit) <= n_bool for lit in flat]
    else:
        bad = (lits == 0) | (np.abs(lits) > n_bool)
    if np.any(bad):
        i = int(np.searchsorted(np.cumsum(sizes), int(np.argmax(bad)), side="right"))
        raise ValueError(f"clauses[{i}] must be {expected}, got {list(clauses[i])!r}")


def model_count(n_bool: int, clauses: list[list[int]], *, counter: str | None = None,
                time_limit: float | None = None) -> int:
    """The number of models of a formula in conjunctive normal form (exact).

    Parameters
    ----------
    n_bool : int
        The number of Boolean variables, numbered from 1 (a Boolean in no clause doubles
        the count).
    clauses : list of list of int
        The clauses, as :func:`cnf_clauses` gives them (DIMACS literals; ``[]`` is the
        empty clause, which no assignment satisfies).
    counter : {"ganak", "d4"} or None, default None
        The counter (see the module text); ``None`` races every installed one, each in a
        forked child, and takes the first answer (:func:`raced_count`; the one installed
        counter runs in-process, without a time limit).
    time_limit : float or None, default None
        Seconds the count may take (``None``: no limit); with a limit the counter runs in
        a forked child that is killed at it.

    Returns
    -------
    int
        The count, an exact Python integer.

    Raises
    ------
    ValueError
        When ``n_bool`` is not a non-negative integer, a clause is not a sequence of
        integer literals ``±1..±n_bool`` (the first such clause is named), ``counter``
        names no counter, or ``time_limit`` is not positive.
    ImportError
        When the counter is not installed (``pip install "mrflib[counting]"``).
    TimeoutError
        When the count does not finish within ``time_limit``.
    RuntimeError
        When the counter fails in its child (every counter, for ``None``).
    """
    n_bool = check_positive(n_bool, "n_bool", integer=True, allow_zero=True)
    _check_clauses(clauses, n_bool)
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    return _counted(n_bool, clauses, _counters(counter), time_limit)


def _counters(counter: Any) -> list[str]:
    """The counters ``counter`` asks for (``None``: every installed one), each importable
    (an ``ImportError`` that says how to install it otherwise)."""
    counters = installed() if counter is None else [_check_counter(counter)]
    if not counters:
        optional_import("pyganak", "exact model counting", "counting")
    for c in counters:
        _import(c)
    return counters


def _counted(n_bool: int, clauses: list[list[int]], counters: list[str],
             time_limit: float | None, deadline: float | None = None) -> int:
    """:func:`model_count` of checked arguments: in-process by the one counter without a
    time limit, else raced in forked children (:func:`raced_count`)."""
    if any(len(c) == 0 for c in clauses):
        return 0
    if n_bool == 0:
        return 1
    if len(counters) == 1 and time_limit is None:
        return _count(n_bool, clauses, counters[0])
    return raced_count(n_bool, clauses, counters, time_limit, deadline)


def raced_count(n_bool: int, clauses: list[list[int]], counters: list[str],
                time_limit: float | None = None, deadline: float | None = None) -> int:
    """The first answer of ``counters`` counting one formula, each in a forked child.

    The others are killed when one answers; a counter that fails leaves the race to the
    others. The first of ``counters`` runs at the caller's priority and the others yield
    the processor (:func:`~mrflib._support.forked.yield_processor`), so that on a machine
    busy with other work the likelier counter keeps its share. Arguments are not checked
    again: :func:`model_count` checks them.

    Parameters
    ----------
    n_bool : int
        The number of Boolean variables, at least 1.
    clauses : list of list of int
        The clauses, none empty.
    counters : list of str
        Names of :data:`COUNTERS`, each installed.
    time_limit : float or None, default None
        Seconds an answer may take (``None``: no limit).
    deadline : float or None, default None
        The :func:`time.perf_counter` time by which an answer must come, when it is not
        ``time_limit`` seconds from now (a limit set earlier).

    Returns
    -------
    int
        The count.

    Raises
    ------
    TimeoutError
        When no counter answers by the deadline.
    RuntimeError
        When every counter fails (each reason is given).
    """
    now = time.perf_counter()
    if deadline is None and time_limit is not None:
        deadline = now + time_limit
    limit = time_limit if deadline is None or time_limit is not None else deadline - now
    if deadline is not None and now >= deadline:
        # no counter is started past the deadline, however quick it would be
        raise TimeoutError(f"the model count did not finish within {limit:g} s")
    with contextlib.ExitStack() as stack:
        pending = []
        for i, c in enumerate(counters):
            child = Forked(_count, (n_bool, clauses, c, i > 0))
            stack.callback(child.stop)
            pending.append(child)
        names = {child: COUNTERS[c][1] for child, c in zip(pending, counters)}
        failures = []
        while pending:
            done = first_done(pending, math.inf if deadline is None else deadline)
            if done is None:
                raise TimeoutError(f"the model count did not finish within {limit:g} s")
            pending.remove(done)
            kind, value = done.result()
            if kind == "ok":
                return int(value)
            failures.append(f"{names[done]}: {value}")
        raise RuntimeError(f"the model count failed: {'; '.join(failures)}")


def _count(n_bool: int, clauses: list[list[int]], counter: str, yielding: bool = False
           ) -> int:
    """The count of :func:`model_count` by ``counter``, in-process (arguments checked, no
    empty clause, ``n_bool`` at least 1), after yielding the processor if ``yielding``."""
    if yielding:
        yield_processor()
    if counter == "d4":
        return _d4_count(n_bool, clauses)
    ganak = _import("ganak")
    solver = ganak.Counter(verbose=0, seed=0)
    solver.new_vars(n_bool)
    solver.add_clauses(clauses)
    return int(solver.count())


def _d4_count(n_bool: int, clauses: list[list[int]]) -> int:
    """d4's count, the backbone fixed and equivalent literals merged first where
    ``python-sat`` is installed (see the module text)."""
    py_d4 = _import("d4")
    free = 0
    if importable("pysat.solvers", "the backbone of a formula", "counting"):
        units = _backbone(n_bool, clauses)
        if units is None:
            return 0
        n_bool, clauses, free = _simplified(n_bool, clauses, units)
        if n_bool == 0:
            return 1 << free
    options = py_d4.dump_options_to_dict(py_d4.OptionDpllStyleMethod())
    for path, value in D4_OPTIONS.items():
        node = options
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    with c_stdout.silenced():  # d4 prints its statistics on C's standard output
        result = py_d4.Solver(clauses, n_bool, py_d4.load_options_from_dict(options)).count()
    return int(result.getResult()) << free


def backbone(n_bool: int, clauses: list[list[int]]) -> list[int] | None:
    """The backbone of a formula: the literals true in every one of its models.

    One SAT call finds a model, whose literals are the candidates; each candidate is then
    tried false, and either the formula has no such model (the literal is in the backbone
    and is added as a unit clause) or the model found rules out every candidate it
    contradicts (Janota, Lynce & Marques-Silva, AI Communications 2015, iterative
    algorithm with model filtering).

    Parameters
    ----------
    n_bool : int
        The number of Boolean variables, numbered from 1.
    clauses : list of list of int
        DIMACS clauses, as :func:`cnf_clauses` gives them.

    Returns
    -------
    list of int or None
        The backbone literals, by variable; ``None`` when the formula has no model. A
        Boolean in no clause is in no backbone.

    Raises
    ------
    ValueError
        As :func:`model_count` does for ``n_bool`` and ``clauses``.
    ImportError
        When ``python-sat`` is not installed (``pip install "mrflib[counting]"``).
    """
    n_bool = check_positive(n_bool, "n_bool", integer=True, allow_zero=True)
    _check_clauses(clauses, n_bool)
    _sat_solvers()
    if any(len(c) == 0 for c in clauses):
        return None
    return _backbone(n_bool, clauses)


def _backbone(n_bool: int, clauses: list[list[int]]) -> list[int] | None:
    """:func:`backbone`, arguments checked."""
    solvers = _sat_solvers()
    with solvers.Solver(name=BACKBONE_SOLVER, bootstrap_with=clauses) as sat:
        if not sat.solve():
            return None
        held = set(clause_booleans(clauses)[0].tolist())
        candidates = {abs(lit): lit for lit in sat.get_model() if abs(lit) in held}
        found = []
        for v in sorted(candidates):
            lit = candidates.get(v)
            if lit is None:
                continue
            if sat.solve(assumptions=[-lit]):
                for other in sat.get_model():
                    if candidates.get(abs(other)) == -other:
                        del candidates[abs(other)]
            else:
                found.append(lit)
                sat.add_clause([lit])
    return found


def _sat_solvers() -> Any:
    """``pysat.solvers`` (an ``ImportError`` that says how to install it)."""
    return optional_import("pysat.solvers", "the backbone of a formula", "counting")


def _simplified(n_bool: int, clauses: list[list[int]], units: list[int]
                ) -> tuple[int, list[list[int]], int]:
    """The formula with the literals ``units`` true and its equivalent literals merged (see
    the module text): the Booleans left in some clause renumbered from 1, the clauses, and
    the number of Booleans neither fixed, nor merged into another, nor in any clause left
    (each doubling the count)."""
    value = {abs(lit): lit > 0 for lit in units}
    rest = []
    for clause in clauses:
        if not any(value.get(abs(lit)) == (lit > 0) for lit in clause):
            rest.append([lit for lit in clause if abs(lit) not in value])
    same = _equivalent_literals(n_bool, rest)
    merged = []
    for clause in rest:
        lits = {int(same[lit]) for lit in clause}
        if not any(-lit in lits for lit in lits):  # a tautology holds in every model
            merged.append(sorted(lits))
    used = sorted({abs(lit) for clause in merged for lit in clause})
    number = {v: i + 1 for i, v in enumerate(used)}
    renumbered = [[number[lit] if lit > 0 else -number[-lit] for lit in clause]
                  for clause in merged]
    gone = int(np.count_nonzero(np.abs(same[1:n_bool + 1]) != np.arange(1, n_bool + 1)))
    return len(used), renumbered, n_bool - len(value) - gone - len(used)


def _equivalent_literals(n_bool: int, clauses: list[list[int]]) -> np.ndarray:
    """Each literal's representative among the literals equivalent to it, indexed by the
    literal itself (``same[lit]``, ``lit`` in ``±1..±n_bool``; entry 0 unused).

    Literals are equivalent when the binary clauses imply each from the other: a strongly
    connected component of the implication graph (``a ∨ b`` gives ``¬a → b`` and
    ``¬b → a``; Aspvall, Plass & Tarjan 1979). Each component's representative is its
    literal of the smallest variable, so that the complement's component is represented by
    the complement. The formula must be satisfiable (no component holds a literal and its
    complement).
    """
    pairs = np.asarray([c for c in clauses if len(c) == 2], dtype=np.int64).reshape(-1, 2)
    node = (lambda lit: np.where(lit > 0, lit - 1, n_bool - lit - 1))  # noqa: E731
    a, b = pairs[:, 0], pairs[:, 1]
    graph = scipy.sparse.csr_matrix(
        (np.ones(2 * len(pairs)), (node(np.concatenate([-a, -b])),
                                   node(np.concatenate([b, a])))),
        shape=(2 * n_bool, 2 * n_bool))
    n_parts, part = scipy.sparse.csgraph.connected_components(graph, directed=True,
                                                              connection="strong")
    lits = np.concatenate([np.arange(1, n_bool + 1), -np.arange(1, n_bool + 1)])
    first = np.lexsort((lits < 0, np.abs(lits)))[::-1]  # the last written wins: the first
    representative = np.empty(n_parts, dtype=np.int64)
    representative[part[first]] = lits[first]
    same = np.zeros(2 * n_bool + 1, dtype=np.int64)
    same[lits] = representative[part]  # negative indices: the complements, from the end
    return same


def counted_log_partition(model: Any, *, evidence: Mapping[Any, Any] | None = None,
                          time_limit: float | None = None, counter: str | None = None
                          ) -> float:
    """Exact ``log Z`` of a constraint model by model counting (see the module text).

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine
        The model (a ``TypeError`` otherwise); every table must hold one positive value
        where it is not zero (:func:`constraint_scale`).
    evidence : mapping or None, default None
        ``{variable: value}``: the answer is ``log Z`` of the model conditioned on it
        (:func:`~mrflib.models.factor_graph.with_evidence`).
    time_limit : float or None, default None
        Seconds the count may take (``None``: no limit); past them the counters, which
        then run in forked children, are killed.
    counter : {"ganak", "d4"} or None, default None
        The counter (:data:`COUNTERS`); ``None`` races every installed one
        (:func:`raced_count`).

    Returns
    -------
    float
        ``log Z`` (natural log; ``-inf`` when ``Z = 0``).

    Raises
    ------
    ValueError
        When the model is not a constraint model, its formula would not fit in memory, or
        ``counter`` names no counter.
    ImportError
        When no counter (or not the one asked for) is installed (``pip install
        "mrflib[counting]"``).
    TimeoutError
        When the count does not finish within ``time_limit``.
    RuntimeError
        When every counter fails.
    """
    model, time_limit, deadline = conditioned_model(model, evidence, time_limit)
    scale = constraint_scale(model)
    if scale is None:
        raise ValueError("model must be a constraint model (every table one positive value "
                         "where it is not zero) for model counting; use "
                         "exact.log_partition or conditioning.conditioned_log_partition")
    counters = _counters(counter)
    n_bool, clauses = cnf_clauses(model)
    count = _counted(n_bool, clauses, counters, time_limit,
                     None if time_limit is None else deadline)
    return scale + math.log(count) if count > 0 else -math.inf
