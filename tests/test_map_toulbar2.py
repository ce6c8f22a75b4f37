"""MAP by toulbar2 (``mrflib.inference.approx.map_toulbar2``) against brute force, and
``solve --task MPE`` with toulbar2 beside its own search.

Random small models with zeros and evidence, 2-4 states a variable, are solved by
enumeration: toulbar2's state has positive weight, weighs what it says, is the optimum
when its search ends, and its bound lies above the optimum. Also the states streamed as they
come, ``Z = 0`` by name, bad arguments by name, and the solver picking an optimal answer on
a shipped problem. Skipped without ``pytoulbar2``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from _random_factor_graphs import random_factor_graph

from mrflib import BoltzmannMachine, FactorGraph, datasets, io
from mrflib.inference import approx
from mrflib.inference.approx import map_toulbar2
from mrflib.io import anytime
from mrflib.io.solve import main as solve_main

pytest.importorskip("pytoulbar2")

TOL = 1e-9


def brute(model: FactorGraph) -> tuple[float, int]:
    """The largest log-weight and how many states have positive weight."""
    values = [float(model.log_weight(np.array(x)))
              for x in itertools.product(*[range(int(c)) for c in model.cardinalities])]
    return max(values), sum(v > -math.inf for v in values)


def small(seed: int) -> FactorGraph:
    rng = np.random.default_rng(seed)
    model = random_factor_graph(rng, n=7, n_factors=9, zeros=0.3, max_card=4, max_scope=3,
                                evidence=seed % 3)
    # 2-4 states a variable: a one-state variable is fixed, like evidence
    card = np.maximum(model.cardinalities, 2)
    tables = [np.pad(t, [(0, int(card[v] - t.shape[i])) for i, v in enumerate(s)],
                     constant_values=-np.inf) if s else t
              for s, t in zip(model.scopes, model.log_tables)]
    return FactorGraph(card, model.scopes, tables)


@pytest.mark.parametrize("seed", range(12))
def test_against_brute_force(seed):
    model = small(seed)
    best, _ = brute(model)
    seen = []
    r = map_toulbar2.toulbar2_map(model, time_limit=60.0,
                                  report=lambda x, w: seen.append((x.copy(), w)))
    value = float(model.log_weight(r.state))
    assert r.state.dtype == np.int64 and r.state.shape == (model.n,)
    assert value == r.log_weight and value > -math.inf
    assert r.details["complete"] and r.optimal and r.method == "toulbar2"
    assert value == pytest.approx(best, abs=TOL)
    assert r.upper_bound >= best - TOL and r.upper_bound - value <= TOL * max(1, abs(value))
    # each state streamed has positive weight and is heavier than the one before
    weights = [w for _, w in seen]
    assert all(w > -math.inf for w in weights) and weights == sorted(set(weights))
    assert all(float(model.log_weight(x)) == w for x, w in seen)


@pytest.mark.parametrize("seed", range(6))
def test_evidence_argument_and_the_front(seed):
    model = small(seed + 100)
    evidence = {0: 1, 3: 0}
    conditioned = model.condition(evidence)
    best, count = brute(conditioned)
    if count == 0:
        with pytest.raises(ValueError, match="Z = 0"):
            map_toulbar2.toulbar2_map(model, evidence=evidence)
        return
    r = map_toulbar2.toulbar2_map(model, evidence=evidence)
    assert r.state[0] == 1 and r.state[3] == 0
    assert r.log_weight == pytest.approx(best, abs=TOL) and r.optimal
    front = approx.map_assignment(model, "toulbar2", evidence=evidence, time_limit=30.0)
    assert front.method == "toulbar2" and front.optimal
    assert front.log_weight == pytest.approx(best, abs=TOL)


def test_a_boltzmann_machine_answers_in_spins():
    bm = BoltzmannMachine.random(np.array([[0, 1], [0, 3], [1, 2], [2, 3]]), 4, rng=3)
    r = approx.map_assignment(bm, "toulbar2", time_limit=30.0)
    exact = approx.map_assignment(bm, "exact")
    assert set(np.unique(r.state)) <= {-1, 1}
    assert r.optimal and r.log_weight == pytest.approx(exact.log_weight, abs=TOL)


def test_large_costs_keep_the_proof():
    """Tables of very different magnitudes: the scale stays below the integer limit and
    the state found is still the optimum, proven on the model."""
    rng = np.random.default_rng(0)
    scopes = [(i, i + 1) for i in range(9)]
    tables = [rng.normal(scale=10.0 ** (k % 5), size=(3, 3)) for k in range(9)]
    model = FactorGraph([3] * 10, scopes, tables)
    r = map_toulbar2.toulbar2_map(model)
    assert r.optimal and r.log_weight == pytest.approx(brute(model)[0], rel=1e-12)
    assert r.details["scale"] * sum(float(np.ptp(t)) for t in tables) <= map_toulbar2.COST_TOTAL


def _zero_models() -> list[FactorGraph]:
    eq = np.where(np.eye(2) > 0, 0.0, -np.inf)
    ne = np.where(np.eye(2) > 0, -np.inf, 0.0)
    tri = FactorGraph([2, 2, 2], [(0, 1), (1, 2), (0, 2)], [eq, eq, ne])
    dead = FactorGraph([2, 2], [(0, 1), (0,)], [eq, np.full(2, -np.inf)])
    pair = FactorGraph([2, 2], [(0, 1)], [eq]).condition({0: 0, 1: 1})
    return [tri, dead, pair]


@pytest.mark.parametrize("which", range(3))
def test_zero_partition_function_is_named(which):
    with pytest.raises(ValueError, match="Z = 0"):
        map_toulbar2.toulbar2_map(_zero_models()[which])
    with pytest.raises(ValueError, match="Z = 0"):
        approx.map_assignment(_zero_models()[which], "toulbar2")


def test_a_model_without_free_variables_and_a_constant():
    model = FactorGraph([2, 3], [(0,), (1,), ()], [np.array([0.0, -np.inf]),
                                                   np.array([-np.inf, 1.0, -np.inf]),
                                                   np.array(2.5)])
    r = map_toulbar2.toulbar2_map(model)
    assert r.state.tolist() == [0, 1] and r.log_weight == 3.5 and r.optimal


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"time_limit": -1.0}, "time_limit"),
    ({"time_limit": "5"}, "time_limit"),
    ({"time_limit": math.nan}, "time_limit"),
    ({"report": 3}, "report"),
    ({"evidence": [1, 2]}, "evidence"),
])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        map_toulbar2.toulbar2_map(small(0), **kwargs)


def test_a_model_of_another_type_is_refused():
    with pytest.raises(TypeError, match="model"):
        map_toulbar2.toulbar2_map(np.zeros(3))
    with pytest.raises(TypeError, match="model"):
        map_toulbar2.Toulbar2Search("m.uai")


def test_the_search_streams_and_stops():
    """A search polled until it ends reads every state toulbar2 printed; stopped, its
    child is gone."""
    model = small(5)
    search = map_toulbar2.Toulbar2Search(model, time_limit=30.0)
    try:
        res = search.result(wait=math.inf)
        assert res is not None and res.optimal and search.done()
        assert search.solutions >= 1 and res.details["solutions"] == search.solutions
        assert float(model.log_weight(res.state)) == res.log_weight
    finally:
        search.stop()
    assert not search.child.proc.is_alive()


def test_solve_mpe_runs_toulbar2_and_picks_an_optimal_answer(tmp_path, monkeypatch, capsys):
    """``solve --task MPE`` on a shipped problem with exact inference ruled out: toulbar2
    starts at once, the answer written is optimal (the exact MAP state's log-weight) and
    the solver says so and stops long before the limit."""
    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    monkeypatch.setattr(anytime, "HOPELESS_FACTOR", 0.0)
    problem = datasets.uai_problem("Promedus_24")
    model = problem.model
    io.write_uai(model, tmp_path / "m.uai")
    out = tmp_path / "m.MPE"
    assert solve_main([str(tmp_path / "m.uai"), "--task", "MPE", "--time-limit", "600",
                       "--out", str(out)]) == 0
    err = capsys.readouterr().err
    state = io.read_answer(out).value
    best = map_toulbar2.toulbar2_map(model).log_weight
    assert float(model.log_weight(state)) == pytest.approx(best, abs=TOL)
    assert "toulbar2 (branch and bound on the model's costs" in err
    assert "optimal: the log-weight" in err
    lines = [ln for ln in err.splitlines() if "answer " in ln and "wrote" in ln]
    assert lines and all(", log-weight " in ln for ln in lines)


def test_solve_works_as_before_without_toulbar2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(map_toulbar2, "available", lambda: False)
    monkeypatch.setattr("mrflib.io.anytime_mpe.toulbar2_available", lambda: False)
    rng = np.random.default_rng(1)
    chain = FactorGraph([3] * 10, [(i, i + 1) for i in range(9)],
                        [rng.normal(size=(3, 3)) for _ in range(9)])
    io.write_uai(chain, tmp_path / "m.uai")
    out = tmp_path / "m.MPE"
    assert solve_main([str(tmp_path / "m.uai"), "--task", "MPE", "--time-limit", "60",
                       "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "toulbar2" not in err and "optimal: the log-weight" in err


def test_missing_toulbar2_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pytoulbar2", None)
    assert not map_toulbar2.available()
    with pytest.raises(ImportError, match=r"mrflib\[mpe\]"):
        map_toulbar2.toulbar2_map(small(0))


@pytest.mark.parametrize("seed", range(4))
def test_coarse_integer_costs_are_proven_by_enumeration(seed):
    """A table of range 10^12 leaves toulbar2 a scale near 10^3, whose rounding exceeds
    the tolerance of a proof: the states within the rounding's spread of its optimum are
    enumerated and the model's best of them is returned, proven optimal."""
    rng = np.random.default_rng(seed)
    n = 8
    scopes = [(0,)] + [(i, i + 1) for i in range(n - 1)]
    tables = [np.array([0.0, -1e12])] + [rng.normal(scale=0.3, size=(2, 2))
                                         for _ in range(n - 1)]
    model = FactorGraph([2] * n, scopes, tables)
    r = map_toulbar2.toulbar2_map(model)
    assert r.details["scale"] < 1e4 and r.details["complete"]
    assert r.details["enumerated"] and r.optimal
    assert r.log_weight == pytest.approx(brute(model)[0], abs=TOL)
    assert r.upper_bound == r.log_weight


@pytest.mark.parametrize("seed", range(3))
def test_many_near_ties_are_proven_by_a_search_on_finer_costs(seed):
    """Too many states within the rounding's spread for the enumeration (2^11 all but tied
    under a scale near 10^3): the entries dearer than the optimum's whole cost are
    forbidden, the rest scaled finer, and a second search proves the optimum on the
    model."""
    rng = np.random.default_rng(seed)
    n = 12
    scopes = [(0,)] + [(i, i + 1) for i in range(1, n - 1)] + [(1, n - 1)]
    tables = [np.array([0.0, -1e12])] + [rng.normal(scale=1e-5, size=(2, 2))
                                         for _ in range(n - 1)]
    model = FactorGraph([2] * n, scopes, tables)
    r = map_toulbar2.toulbar2_map(model)
    assert r.details["scale"] < 1e4 and r.details["complete"]
    assert not r.details["enumerated"] and r.details["refined"] and r.optimal
    assert r.log_weight == pytest.approx(brute(model)[0], abs=1e-12)
    assert r.upper_bound == r.log_weight
