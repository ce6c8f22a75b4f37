"""Exact log Z of constraint models by model counting
(:mod:`mrflib.inference.exact.model_counting`) against enumeration: random constraint
models with variables of 1 to 4 states, constants, Z = 0, evidence, the refusal of a model
with graded weights, and the deadline."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _random_factor_graphs import constraint_model as _constraint
from _random_factor_graphs import zeroed_model

from mrflib import FactorGraph
from mrflib.inference.exact import enumeration, model_counting
from mrflib.inference.exact.conditioning import conditioned_log_partition

pytest.importorskip("pyganak")


def _same(got: float, want: float) -> bool:
    return (got == want == -math.inf) or math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("seed", range(60))
def test_constraint_models_match_enumeration(seed):
    model = _constraint(zeroed_model(seed), np.random.default_rng(seed))
    assert model_counting.constraint_scale(model) is not None
    assert _same(model_counting.counted_log_partition(model),
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


def test_the_counter_is_available():
    assert model_counting.available()


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


def test_a_count_past_its_limit_is_a_timeout():
    # a formula no counter finishes at once: 120 variables of random 3-SAT near the
    # threshold; the limit is far below the fork's own start-up
    rng = np.random.default_rng(5)
    n = 120
    scopes, tables = [], []
    for _ in range(500):
        s = tuple(int(v) for v in rng.choice(n, size=3, replace=False))
        t = np.zeros((2, 2, 2))
        t[tuple(int(b) for b in rng.integers(0, 2, size=3))] = -np.inf
        scopes.append(s)
        tables.append(t)
    model = FactorGraph(np.full(n, 2), scopes, tables)
    with pytest.raises(TimeoutError, match="did not finish within"):
        model_counting.counted_log_partition(model, time_limit=1e-9)


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


@pytest.mark.parametrize("seed", range(4))
def test_model_count_of_a_formula_matches_enumeration(seed):
    """:func:`model_count` of a random 3-SAT formula, Booleans in no clause included: the
    number of its satisfying assignments, by enumeration."""
    rng = np.random.default_rng(seed)
    n_bool = 9
    clauses = [[int(b) * int(rng.choice([-1, 1])) for b in rng.choice(np.arange(1, 8), 3,
                                                                        replace=False)]
               for _ in range(12)]
    want = sum(all(any(((x >> (abs(lit) - 1)) & 1) == (lit > 0) for lit in c) for c in clauses)
               for x in range(2 ** n_bool))
    assert model_counting.model_count(n_bool, clauses) == want
    assert model_counting.model_count(n_bool, clauses + [[]]) == 0


@pytest.mark.parametrize("n_bool, clauses, words", [
    (3, [[1], [0]], "clauses[1]"), (3, [[4]], "clauses[0]"), (-1, [], "n_bool"),
    (3, [[1.0]], "clauses[0]"), (3, "1 2", "clauses"), (3, [[1], [[1], [2, 3]]], "clauses[1]")])
def test_model_count_refuses_bad_literals_by_clause(n_bool, clauses, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[")):
        model_counting.model_count(n_bool, clauses)
