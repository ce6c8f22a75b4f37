"""Exact log Z of constraint models by model counting
(:mod:`mrflib.inference.exact.model_counting`) against enumeration: random constraint
models with variables of 1 to 4 states, constants, Z = 0, evidence, the refusal of a model
with graded weights, and the deadline."""

from __future__ import annotations

import math
import os
import time

import numpy as np
import pytest
from _random_factor_graphs import constraint_model as _constraint
from _random_factor_graphs import zeroed_model

from mrflib import FactorGraph
from mrflib._support import forked
from mrflib.inference.exact import enumeration, model_counting
from mrflib.inference.exact.conditioning import conditioned_log_partition

pytest.importorskip("pyganak")


def _same(got: float, want: float) -> bool:
    return (got == want == -math.inf) or math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("counter", [None, "d4", "ganak"])
@pytest.mark.parametrize("seed", range(60))
def test_constraint_models_match_enumeration(seed, counter):
    if counter is not None and not model_counting.available(counter):
        pytest.skip(f"{counter} is not installed")
    model = _constraint(zeroed_model(seed), np.random.default_rng(seed))
    assert model_counting.constraint_scale(model) is not None
    assert _same(model_counting.counted_log_partition(model, counter=counter),
                 enumeration.log_partition(model))


def test_variables_of_one_to_four_states_and_constants():
    rng = np.random.default_rng(3)
    cards = [1, 4, 2, 3, 4]
    scopes = [(), (0, 1), (1, 2, 3), (3, 4), (1, 4), ()]
    tables = []
    for s in scopes:
        t = np.full([cards[v] for v in s], rng.normal())
        t[rng.random(t.shape) < 0.3] = -np.inf
        tables.append(t)
    tables[0] = np.array(0.7)
    model = FactorGraph(cards, scopes, tables)
    assert _same(model_counting.counted_log_partition(model),
                 enumeration.log_partition(model))
    n_bool, clauses = model_counting.cnf_clauses(model)
    assert n_bool == 4 + 1 + 3 + 4  # one-hot for 3 and 4 states, one Boolean for 2, none for 1


def test_a_zero_constant_makes_z_zero():
    model = FactorGraph([2, 2], [(0, 1), ()], [np.zeros((2, 2)), np.array(-np.inf)])
    assert model_counting.counted_log_partition(model) == -math.inf
    assert model_counting.cnf_clauses(model)[1] == [[]]


def test_evidence_conditions_the_count():
    model = _constraint(zeroed_model(4), np.random.default_rng(0))
    for v in range(model.n):
        for a in range(int(model.cardinalities[v])):
            got = model_counting.counted_log_partition(model, evidence={v: a})
            want = enumeration.log_partition(model.condition({v: a}))
            assert _same(got, want), (v, a)


def test_graded_weights_are_refused_by_name():
    model = FactorGraph([2, 2], [(0, 1)], [np.array([[0.0, 1.0], [-np.inf, 0.0]])])
    assert model_counting.constraint_scale(model) is None
    with pytest.raises(ValueError, match="model must be a constraint model"):
        model_counting.counted_log_partition(model)


def test_the_counters_are_available():
    assert model_counting.available()
    assert model_counting.installed() == [c for c in model_counting.COUNTERS
                                          if model_counting.available(c)]


def test_bad_time_limit_and_model_type():
    model = FactorGraph([2], [(0,)], [np.zeros(2)])
    with pytest.raises(ValueError, match="time_limit"):
        model_counting.counted_log_partition(model, time_limit=-1.0)
    with pytest.raises(TypeError):
        model_counting.counted_log_partition("model")


def test_the_count_runs_in_a_child_under_a_limit():
    rng = np.random.default_rng(1)
    model = _constraint(zeroed_model(7), rng)
    assert _same(model_counting.counted_log_partition(model, time_limit=60.0),
                 enumeration.log_partition(model))


def _hard_model() -> FactorGraph:
    """A formula no counter finishes at once: 120 variables of random 3-SAT near the
    threshold."""
    rng = np.random.default_rng(5)
    n = 120
    scopes, tables = [], []
    for _ in range(500):
        s = tuple(int(v) for v in rng.choice(n, size=3, replace=False))
        t = np.zeros((2, 2, 2))
        t[tuple(int(b) for b in rng.integers(0, 2, size=3))] = -np.inf
        scopes.append(s)
        tables.append(t)
    return FactorGraph(np.full(n, 2), scopes, tables)


def test_a_count_past_its_limit_is_a_timeout():
    # the limit is far below the fork's own start-up
    with pytest.raises(TimeoutError, match="did not finish within"):
        model_counting.counted_log_partition(_hard_model(), time_limit=1e-9)


def test_a_race_past_its_deadline_is_a_timeout():
    n_bool, clauses = model_counting.cnf_clauses(_hard_model())
    with pytest.raises(TimeoutError, match=r"did not finish within -?\d"):
        model_counting.raced_count(n_bool, clauses, model_counting.installed(),
                                   deadline=time.perf_counter() - 1.0)


@pytest.mark.parametrize("time_limit", [0.0, -1.0, math.nan])
def test_the_count_and_the_conditioning_search_refuse_a_bad_limit_alike(time_limit):
    """The model count and the conditioning search read their model, evidence and time
    limit the same way: one refusal, word for word, of a limit that is not positive."""
    model = _constraint(zeroed_model(4), np.random.default_rng(2))
    said = []
    for search in (model_counting.counted_log_partition, conditioned_log_partition):
        with pytest.raises(ValueError, match="time_limit") as err:
            search(model, evidence={0: 1}, time_limit=time_limit)
        said.append(str(err.value))
    assert said[0] == said[1]


def test_the_count_and_the_conditioning_search_condition_alike():
    """Given evidence, both answer ``log Z`` of the same conditioned model."""
    model = _constraint(zeroed_model(5), np.random.default_rng(3))
    evidence = {1: 0, 3: 1}
    want = enumeration.log_partition(model.condition(evidence))
    assert _same(model_counting.counted_log_partition(model, evidence=evidence), want)
    assert _same(conditioned_log_partition(model, evidence=evidence,
                                           time_limit=60.0).log_partition, want)


def _formula(seed: int, n_bool: int = 9, n_clauses: int = 12, width: int = 3
             ) -> list[list[int]]:
    """A random formula over Booleans 1..7 (so that ``n_bool = 9`` leaves two free)."""
    rng = np.random.default_rng(seed)
    return [[int(b) * int(rng.choice([-1, 1]))
             for b in rng.choice(np.arange(1, 8), width, replace=False)]
            for _ in range(n_clauses)]


def _models(n_bool: int, clauses: list[list[int]]) -> list[int]:
    """Every satisfying assignment, as bits of an int (Boolean ``v`` is bit ``v - 1``)."""
    return [x for x in range(2 ** n_bool)
            if all(any(((x >> (abs(lit) - 1)) & 1) == (lit > 0) for lit in c) for c in clauses)]


COUNTERS = [c for c in model_counting.COUNTERS if model_counting.available(c)]


#: (clause width, number of clauses) of the formula of each seed: 3-SAT, then unit clauses
#: (a large backbone), then many binary clauses.
SHAPES = [(3, 12)] * 4 + [(1, 3), (2, 20)]


@pytest.mark.parametrize("counter", [*COUNTERS, None])
@pytest.mark.parametrize("seed", range(len(SHAPES)))
def test_model_count_of_a_formula_matches_enumeration(seed, counter):
    """:func:`model_count` of a random formula, Booleans in no clause included, by each
    counter and by the race of all: the number of its satisfying assignments, by
    enumeration."""
    width, n_clauses = SHAPES[seed]
    clauses = _formula(seed, n_clauses=n_clauses, width=width)
    want = len(_models(9, clauses))
    assert model_counting.model_count(9, clauses, counter=counter) == want
    assert model_counting.model_count(9, clauses + [[]], counter=counter) == 0
    assert model_counting.model_count(9, [], counter=counter) == 2 ** 9


@pytest.mark.parametrize("seed", range(40))
def test_fixing_the_backbone_and_merging_equivalent_literals_keeps_the_count(seed):
    """The formula d4 counts (the backbone fixed, equivalent literals merged, the rest
    renumbered) times two to the Booleans it frees has the models of the formula, on
    formulas of mostly binary clauses (chains of equivalences, their complements, units)."""
    pytest.importorskip("pysat")
    rng = np.random.default_rng(seed)
    n_bool = int(rng.integers(2, 11))
    clauses = [[int(v) * int(rng.choice([-1, 1]))
                for v in rng.choice(np.arange(1, n_bool + 1), min(w, n_bool), replace=False)]
               for w in rng.choice([1, 2, 2, 2, 3], int(rng.integers(0, 25))).tolist()]
    want = len(_models(n_bool, clauses))
    units = model_counting.backbone(n_bool, clauses)
    assert (units is None) == (want == 0)
    if units is not None:
        m, rest, free = model_counting._simplified(n_bool, clauses, units)
        assert len(_models(m, rest)) * 2 ** free == want
    if model_counting.available("d4"):
        assert model_counting.model_count(n_bool, clauses, counter="d4") == want


def test_equivalent_literals_share_a_representative():
    """``x1 ≡ x3`` and ``x2 ≡ ¬x3`` (four binary clauses): 1 and 3 are represented by 1, 2
    by -1, and each complement by the complement; 4 stands alone."""
    same = model_counting._equivalent_literals(4, [[-1, 3], [1, -3], [2, 3], [-2, -3]])
    assert [int(same[lit]) for lit in (1, 2, 3, 4, -1, -2, -3, -4)] == [1, -1, 1, 4,
                                                                        -1, 1, -1, -4]


@pytest.mark.parametrize("counter", COUNTERS)
def test_a_formula_without_models_counts_zero(counter):
    clauses = [[1, 2], [-1, 2], [1, -2], [-1, -2], [3]]
    assert model_counting.model_count(4, clauses, counter=counter) == 0


@pytest.mark.parametrize("seed", range(8))
def test_the_backbone_is_what_every_model_holds(seed):
    """:func:`backbone` against enumeration: the literals true in every model of a random
    formula (Booleans in no clause in none), ``None`` without a model."""
    pytest.importorskip("pysat")
    clauses = _formula(seed, n_clauses=6 + seed, width=2 + seed % 2)
    models = _models(9, clauses)
    got = model_counting.backbone(9, clauses)
    if not models:
        assert got is None
        return
    held = {abs(lit) for c in clauses for lit in c}
    want = [v if models[0] >> (v - 1) & 1 else -v for v in sorted(held)
            if len({x >> (v - 1) & 1 for x in models}) == 1]
    assert got == want
    assert model_counting.backbone(9, clauses + [[]]) is None


def test_a_failed_counter_leaves_the_race_to_the_others(monkeypatch):
    """The race answers with the counter that answers; when every counter fails, the
    error gives each one's reason."""
    real = model_counting._count

    def failing(n_bool, clauses, counter, yielding=False):
        if counter == "d4":
            raise RuntimeError("d4 broke")
        return real(n_bool, clauses, counter, yielding)

    clauses = _formula(1)
    want = len(_models(9, clauses))
    monkeypatch.setattr(model_counting, "_count", failing)
    assert model_counting.raced_count(9, clauses, ["d4", "ganak"]) == want

    def broken(n_bool, clauses, counter, yielding=False):
        raise RuntimeError(f"{counter} broke")

    monkeypatch.setattr(model_counting, "_count", broken)
    with pytest.raises(RuntimeError, match="d4: d4 broke; Ganak: ganak broke"):
        model_counting.raced_count(9, clauses, ["d4", "ganak"])


def test_the_race_keeps_the_first_counters_priority(monkeypatch):
    """The first counter of a race runs at the caller's priority, the others yield."""

    def niceness(n_bool, clauses, counter, yielding=False):
        if yielding:
            model_counting.yield_processor()
        if counter == "ganak":
            raise RuntimeError("the other answers")
        return os.nice(0)

    monkeypatch.setattr(model_counting, "_count", niceness)
    parent = os.nice(0)
    assert model_counting.raced_count(3, [[1]], ["d4", "ganak"]) == parent
    assert model_counting.raced_count(3, [[1]], ["ganak", "d4"]) == min(
        parent + forked.LOW_NICENESS, 19)


@pytest.mark.parametrize("counter", COUNTERS)
def test_the_counters_print_nothing(counter, capfd):
    """d4 prints its statistics on C's standard output whatever its verbosity: the count
    sends them to ``/dev/null``, and what Python printed before still arrives."""
    print("before", flush=False)
    assert model_counting.model_count(9, _formula(2), counter=counter) > 0
    print("after")
    out, _ = capfd.readouterr()
    assert out == "before\nafter\n"


@pytest.mark.parametrize("counter, words", [
    ("x", "counter must be one of 'd4', 'ganak'"), (3, "counter must be one of"),
    ("Ganak", "got 'Ganak'")])
def test_an_unknown_counter_is_refused_by_name(counter, words):
    with pytest.raises(ValueError, match=words):
        model_counting.model_count(3, [[1]], counter=counter)
    with pytest.raises(ValueError, match=words):
        model_counting.available(counter)


@pytest.mark.parametrize("n_bool, clauses, words", [
    (3, [[1], [0]], "clauses[1]"), (3, [[4]], "clauses[0]"), (-1, [], "n_bool"),
    (3, [[1.0]], "clauses[0]"), (3, "1 2", "clauses"), (3, [[1], [[1], [2, 3]]], "clauses[1]")])
def test_model_count_refuses_bad_literals_by_clause(n_bool, clauses, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[")):
        model_counting.model_count(n_bool, clauses)


def test_the_race_runs_within_a_forked_child():
    """The solver counts in a forked child, where the race forks again."""
    model = _constraint(zeroed_model(11), np.random.default_rng(4))
    child = forked.Forked(model_counting.counted_log_partition, (model,))
    try:
        kind, value = child.result(wait=120.0)
    finally:
        child.stop()
    assert kind == "ok", value
    assert _same(value, enumeration.log_partition(model))
