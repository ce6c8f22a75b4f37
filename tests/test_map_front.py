"""The MAP front ``approx.map_assignment`` and the max mini-bucket bound, against brute force.

Random small factor graphs with zeros and evidence (``_random_factor_graphs``) are solved by
enumeration; every method's state must weigh what it says, at most the optimum and at least
its start, with positive weight; every bound must lie above the optimum; ``optimal`` only on
true optima; ``"exact"`` always optimal. Also Boltzmann machines in their own domain, bad
arguments by name, ``Z = 0`` by name, and ``solve --task MPE`` reporting its bound and
stopping once an answer meets it.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from _random_factor_graphs import random_factor_graph

from mrflib import BoltzmannMachine, FactorGraph, exact, io
from mrflib.inference import approx
from mrflib.inference.approx import max_mini_bucket as mmb
from mrflib.io import anytime
from mrflib.io.solve import main as solve_main

METHODS = ["exact", "search", "mini-bucket", "branch-and-bound", "wmb", "auto"]
TOL = 1e-9


def brute_max(model: FactorGraph) -> float:
    return max(float(model.log_weight(np.array(x)))
               for x in itertools.product(*[range(int(c)) for c in model.cardinalities]))


def small(seed: int) -> FactorGraph:
    rng = np.random.default_rng(seed)
    return random_factor_graph(rng, n=6, n_factors=8, evidence=seed % 3)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method", METHODS)
def test_every_method_against_brute_force(seed, method):
    model = small(seed)
    best = brute_max(model)
    r = approx.map_assignment(model, method, rng=seed if seed % 2 else None,
                              time_limit=None if seed < 3 else 30.0)
    value = float(model.log_weight(r.state))
    assert r.state.dtype == np.int64 and r.state.shape == (model.n,)
    assert value == r.log_weight and value > -math.inf
    assert value <= best + TOL
    assert r.upper_bound >= best - TOL
    assert r.optimal == (r.upper_bound - value <= TOL * max(1.0, abs(value)))
    if r.optimal:
        assert value == pytest.approx(best, abs=TOL)
    if method == "branch-and-bound":  # the search ends on these models: a proof
        assert r.optimal and r.details["complete"]
    if method == "exact":
        assert r.optimal and r.upper_bound == r.log_weight
        assert value == pytest.approx(best, abs=TOL)
    elif method != "auto":
        assert value >= r.details["start_log_weight"]
    assert r.seconds >= 0 and isinstance(r.method, str)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ibound", [1, 2, 3, None])
def test_max_mini_bucket_bounds_the_optimum(seed, ibound):
    model = small(seed)
    best = brute_max(model)
    r = mmb.max_mini_bucket(model, ibound=ibound)
    assert r.upper_bound >= best - TOL
    assert r.upper_bound <= mmb.trivial_upper_bound(model) + TOL  # matching only tightens
    if r.exact:
        assert r.upper_bound == pytest.approx(best, abs=TOL)
        assert float(model.log_weight(r.state)) == pytest.approx(best, abs=TOL)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ibound", [1, 2, None])
def test_branch_and_bound_finds_the_optimum_or_proves_none_better(seed, ibound):
    model = small(seed)
    best = brute_max(model)
    r = mmb.branch_and_bound(model, ibound=ibound)
    assert r.complete and r.log_weight == pytest.approx(best, abs=TOL)
    assert float(model.log_weight(r.state)) == r.log_weight
    above = mmb.branch_and_bound(model, ibound=ibound, lower=best)
    assert above.complete and above.state is None and above.log_weight == -math.inf


def test_branch_and_bound_stops_at_its_deadline():
    """A deadline of zero stops the search at its first look at the clock: incomplete."""
    rng = np.random.default_rng(2)
    pairs = list(itertools.combinations(range(40), 2))
    dense = FactorGraph([3] * 40, pairs, [rng.normal(size=(3, 3)) for _ in pairs])
    r = mmb.branch_and_bound(dense, memory=2**12, deadline=0.0)
    assert not r.complete


@pytest.mark.parametrize("kwargs, name", [({"lower": math.nan}, "lower"),
                                          ({"deadline": -1.0}, "deadline"),
                                          ({"ibound": 0}, "ibound"),
                                          ({"order": [0, 0]}, "order")])
def test_branch_and_bound_bad_arguments_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        mmb.branch_and_bound(small(0), **kwargs)


def test_optimal_only_on_true_optima():
    """A chain is solved by the mini-buckets at any i-bound of 2 (one mini-bucket per
    bucket): optimal. A frustrated dense model where the bound stays loose is not."""
    rng = np.random.default_rng(0)
    chain = FactorGraph([3] * 8, [(i, i + 1) for i in range(7)],
                        [rng.normal(size=(3, 3)) for _ in range(7)])
    r = approx.map_assignment(chain, "mini-bucket")
    assert r.optimal and r.log_weight == pytest.approx(brute_max(chain), abs=TOL)
    pairs = list(itertools.combinations(range(9), 2))
    dense = FactorGraph([2] * 9, pairs, [rng.normal(scale=2.0, size=(2, 2)) for _ in pairs])
    r = approx.map_assignment(dense, "search")
    assert not r.optimal and r.upper_bound > brute_max(dense) + 1e-6


def test_bound_meets():
    assert mmb.bound_meets(1.0, 1.0) and mmb.bound_meets(1e6 * (1 + 1e-10), 1e6)
    assert not mmb.bound_meets(1.0 + 1e-6, 1.0)
    assert not mmb.bound_meets(-math.inf, -math.inf)


def test_boltzmann_machine_in_its_own_domain():
    rng = np.random.default_rng(3)
    n = 6
    edges = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    bm = BoltzmannMachine(rng.normal(size=n), edges, rng.normal(size=len(edges)))
    _, best = exact.map_assignment(bm)
    for method in METHODS:
        r = approx.map_assignment(bm, method)
        assert r.state.dtype == np.int8 and set(np.unique(r.state)) <= {-1, 1}
        assert float(bm.log_weight(r.state)) == pytest.approx(r.log_weight, abs=1e-9)
        assert r.log_weight <= best + TOL and r.upper_bound >= best - TOL
    assert approx.map_assignment(bm, "exact").log_weight == pytest.approx(best, abs=TOL)


def test_evidence_is_the_conditioned_models_answer():
    """``evidence=`` (by index, and by name on a named model) gives the answer of the model
    conditioned on it; a Boltzmann machine's evidence and state are spins."""
    model = random_factor_graph(np.random.default_rng(5), n=6, zeros=0.1, max_card=3)
    ev = {1: 0, 4: int(model.cardinalities[4]) - 1}
    want = approx.map_assignment(model.condition(ev), "exact")
    got = approx.map_assignment(model, "exact", evidence=ev)
    np.testing.assert_array_equal(got.state, want.state)
    assert got.log_weight == want.log_weight
    names = [f"v{i}" for i in range(model.n)]
    named = FactorGraph(model.cardinalities, model.scopes, model.log_tables, names=names)
    by_name = approx.map_assignment(named, "exact", evidence={"v1": 0, "v4": ev[4]})
    np.testing.assert_array_equal(by_name.state, want.state)
    bm = BoltzmannMachine.random(np.array([[0, 1], [1, 2]]), 3, rng=0)
    r = approx.map_assignment(bm, "exact", evidence={0: 1})
    assert r.state.dtype == np.int8 and r.state[0] == 1


@pytest.mark.parametrize("kwargs, exc, name", [
    ({"method": "nope"}, ValueError, "method"),
    ({"method": ["exact"]}, ValueError, "method"),
    ({"time_limit": -1.0}, ValueError, "time_limit"),
    ({"time_limit": "soon"}, (ValueError, TypeError), "time_limit"),
    ({"time_limit": math.nan}, ValueError, "time_limit"),
    ({"rng": "seed"}, (ValueError, TypeError), "rng"),
])
def test_bad_arguments_named(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        approx.map_assignment(small(0), **kwargs)


@pytest.mark.parametrize("junk", [None, 3, "model", np.zeros(3)])
def test_a_non_model_is_a_type_error(junk):
    with pytest.raises(TypeError, match="model"):
        approx.map_assignment(junk)


@pytest.mark.parametrize("kwargs, name", [({"ibound": 0}, "ibound"), ({"memory": -1}, "memory"),
                                          ({"deadline": -1}, "deadline"),
                                          ({"order": [0]}, "order")])
def test_max_mini_bucket_bad_arguments_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        mmb.max_mini_bucket(small(0), **kwargs)


def _zero_models():
    """Evidence of probability zero, a factor zero everywhere, and a contradiction the
    mini-buckets and search must find (x0 = x1, x1 = x2, x0 != x2 on two states)."""
    eq = np.where(np.eye(2) > 0, 0.0, -np.inf)
    ne = np.where(np.eye(2) > 0, -np.inf, 0.0)
    tri = FactorGraph([2, 2, 2], [(0, 1), (1, 2), (0, 2)], [eq, eq, ne])
    pair = FactorGraph([2, 2], [(0, 1)], [eq])
    dead = FactorGraph([2, 2], [(0, 1), (0,)], [eq, np.full(2, -np.inf)])
    return [pair.condition({0: 0, 1: 1}), dead, tri]


@pytest.mark.parametrize("which", range(3))
@pytest.mark.parametrize("method", METHODS)
def test_zero_partition_function_is_named(which, method):
    with pytest.raises(ValueError, match="Z = 0"):
        approx.map_assignment(_zero_models()[which], method)


def _solve(tmp_path, model, limit, monkeypatch, quick):
    if not quick:
        monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
        monkeypatch.setattr(anytime, "HOPELESS_FACTOR", 0.0)
    io.write_uai(model, tmp_path / "m.uai")
    out = tmp_path / "m.MPE"
    assert solve_main([str(tmp_path / "m.uai"), "--task", "MPE", "--time-limit", str(limit),
                       "--out", str(out)]) == 0
    return io.read_answer(out).value


@pytest.mark.parametrize("quick", [False, True])
def test_solve_reports_the_bound_and_stops_when_optimal(tmp_path, monkeypatch, capsys, quick):
    """On a chain the max mini-buckets are exact (or the exact engine answers at once):
    every answer line names its log-weight and upper bound, and the solver says optimal
    and stops long before a limit of 600 s."""
    rng = np.random.default_rng(1)
    chain = FactorGraph([3] * 10, [(i, i + 1) for i in range(9)],
                        [rng.normal(size=(3, 3)) for _ in range(9)])
    got = _solve(tmp_path, chain, 600, monkeypatch, quick)
    err = capsys.readouterr().err
    assert float(chain.log_weight(got)) == pytest.approx(exact.map_assignment(chain)[1])
    lines = [ln for ln in err.splitlines() if "answer " in ln and "wrote" in ln]
    assert lines and all(", upper bound " in ln for ln in lines)
    assert "optimal: the log-weight" in err
    assert "did not finish in time" not in err


def test_solve_answers_carry_a_bound_above_the_optimum(tmp_path, monkeypatch, capsys):
    """With exact inference ruled out the bounds on stderr lie above the optimum, every
    answer written has positive weight, and the mini-buckets or the branch and bound over
    them prove the last answer optimal long before the limit."""
    for seed in range(4):
        model = small(seed)
        best = brute_max(model)
        got = _solve(tmp_path, model, 600, monkeypatch, False)
        err = capsys.readouterr().err
        bounds = [float(ln.split(", upper bound ")[1].split(";")[0].split(",")[0])
                  for ln in err.splitlines() if ", upper bound " in ln]
        assert bounds and min(bounds) >= best - 1e-6
        assert float(model.log_weight(got)) == pytest.approx(best, abs=TOL)
        assert "optimal: the log-weight" in err


@pytest.mark.parametrize("seed", range(6))
def test_auto_proves_on_the_reduced_parts_by_the_dual_branch_and_bound(monkeypatch, seed):
    """Where neither the exact engine nor max-product on the reduced parts may run,
    ``"auto"`` under a time limit answers by the reduced parts' propagated moves and their
    branch and bound over the dual bound: a most probable state, of positive weight,
    proven optimal."""
    from mrflib.inference.approx import map_reduction

    monkeypatch.setattr(approx, "_exact_fits", lambda fg, clock: (False, "ruled out"))
    monkeypatch.setattr(map_reduction, "exact_parts", lambda red, seconds=None: None)
    reduce_map = map_reduction.reduce_map  # no elimination: parts are left to search
    monkeypatch.setattr(map_reduction, "reduce_map",
                        lambda fg, deadline=None: reduce_map(fg, max_entries=0))
    rng = np.random.default_rng(seed)
    model = random_factor_graph(rng, n=7, n_factors=9, max_card=3, evidence=2)
    best = brute_max(model)
    r = approx.map_assignment(model, "auto", time_limit=30.0)
    assert model.log_weight(r.state) == pytest.approx(best, abs=TOL) and best > -np.inf
    assert r.optimal and r.upper_bound >= best - TOL
    assert r.details["reduction"]["parts"]
    assert "dual branch and bound on the reduced parts" in [t["step"]
                                                            for t in r.details["tried"]]


def test_front_holds_no_step_on_the_reduced_parts():
    """The MAP steps on the reduced parts live beside the searches they run
    (``map_reduction``), so the front and that module stay under the house limit of 800
    lines a module."""
    from pathlib import Path

    for mod in (approx, approx.map_reduction):
        assert len(Path(mod.__file__).read_text().splitlines()) <= 800, mod.__name__
    assert not [n for n in vars(approx) if n in ("_Best", "_map_reduced", "_map_dual_parts",
                                                 "_map_search_parts")]
