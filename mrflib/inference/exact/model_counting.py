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
into a formula in conjunctive normal form (CNF) and hands it to Ganak (Sharma, Roy, Soos
& Meel, IJCAI 2019; the ``pyganak`` bindings, an optional dependency: ``pip install
"mrflib[counting]"``).

The encoding (the *direct* encoding of CSP into SAT, Walsh 2000):

* a binary variable is one Boolean ``b_v`` (state 1 is true);
* a variable of ``k > 2`` states is ``k`` Booleans ``b_{v,a}``, with one clause saying at
  least one holds and ``k(k-1)/2`` saying no two do, so that its models are in one-to-one
  correspondence with the variable's states; a variable of one state needs none;
* each zero entry ``x_{S_k} = a`` of a table forbids that assignment with one clause
  ``∨_{v ∈ S_k} (x_v ≠ a_v)``.

The count is an exact Python integer, so ``log Z`` is exact to float64 rounding whatever
its size (``log10 Z`` in the hundreds is no overflow). A table with no scope is a constant:
a zero one makes ``Z = 0``.

The counter cannot be interrupted; with ``time_limit`` it runs in a forked child
(:class:`mrflib._support.forked.Forked`) that is killed at the limit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from mrflib._support.forked import call_within
from mrflib._support.optional import importable, optional_import
from mrflib._support.validation import check_positive, require_memory
from mrflib.inference.exact._search_arguments import conditioned_model
from mrflib.models.factor_graph import as_factor_graph

__all__ = ["available", "constraint_scale", "counted_log_partition", "cnf_clauses",
           "clause_booleans", "model_count"]

#: Bytes a literal of the formula costs while it is built and handed over (a Python int in
#: a list, then the counter's own copy), for the memory check before the translation.
LITERAL_BYTES = 48


def available() -> bool:
    """Whether the exact model counter (``pyganak``) can be imported.

    Returns
    -------
    bool
        ``True`` when :func:`counted_log_partition` can run.
    """
    return importable("pyganak", "exact model counting", "counting")


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


def model_count(n_bool: int, clauses: list[list[int]]) -> int:
    """The number of models of a formula in conjunctive normal form, by Ganak (exact).

    Parameters
    ----------
    n_bool : int
        The number of Boolean variables, numbered from 1 (a Boolean in no clause doubles
        the count).
    clauses : list of list of int
        The clauses, as :func:`cnf_clauses` gives them (DIMACS literals; ``[]`` is the
        empty clause, which no assignment satisfies).

    Returns
    -------
    int
        The count, an exact Python integer.

    Raises
    ------
    ValueError
        When ``n_bool`` is not a non-negative integer, or a clause is not a sequence of
        integer literals ``±1..±n_bool`` (the first such clause is named).
    ImportError
        When ``pyganak`` is not installed (``pip install "mrflib[counting]"``).
    """
    n_bool = check_positive(n_bool, "n_bool", integer=True, allow_zero=True)
    _check_clauses(clauses, n_bool)
    if any(len(c) == 0 for c in clauses):
        return 0
    if n_bool == 0:
        return 1
    ganak = optional_import("pyganak", "exact model counting", "counting")
    counter = ganak.Counter(verbose=0, seed=0)
    counter.new_vars(n_bool)
    counter.add_clauses(clauses)
    return int(counter.count())


def counted_log_partition(model: Any, *, evidence: Mapping[Any, Any] | None = None,
                          time_limit: float | None = None) -> float:
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
        Seconds the count may take (``None``: no limit); past them the counter, which runs
        in a forked child, is killed.

    Returns
    -------
    float
        ``log Z`` (natural log; ``-inf`` when ``Z = 0``).

    Raises
    ------
    ValueError
        When the model is not a constraint model, or its formula would not fit in memory.
    ImportError
        When ``pyganak`` is not installed (``pip install "mrflib[counting]"``).
    TimeoutError
        When the count does not finish within ``time_limit``.
    """
    model, time_limit, deadline = conditioned_model(model, evidence, time_limit)
    scale = constraint_scale(model)
    if scale is None:
        raise ValueError("model must be a constraint model (every table one positive value "
                         "where it is not zero) for model counting; use "
                         "exact.log_partition or conditioning.conditioned_log_partition")
    optional_import("pyganak", "exact model counting", "counting")
    n_bool, clauses = cnf_clauses(model)
    if time_limit is None:
        count = model_count(n_bool, clauses)
    else:
        count = int(call_within(model_count, (n_bool, clauses), time_limit, "the model count",
                                deadline))
    return scale + math.log(count) if count > 0 else -math.inf
