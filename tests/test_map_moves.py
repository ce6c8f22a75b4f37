"""Propagated moves (``mrflib.inference.approx.map_moves``) against brute force, on the
reduced parts, and the first MPE answer of ``solve`` when the search kernels load slowly."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from _random_factor_graphs import colouring, zeroed_model

from mrflib import FactorGraph, io
from mrflib.inference.approx import _state_search, map_moves, map_reduction, map_search
from mrflib.io import anytime, anytime_mpe
from mrflib.io import solve as solve_cli
from mrflib.models.factor_graph import all_states

SEEDS = range(40)


def feasible_model(seed: int) -> tuple[FactorGraph, np.ndarray, np.ndarray] | None:
    """A small random model with zeros (and evidence on every third seed), its states and
    their log-weights; ``None`` when it has no state of positive weight."""
    model = zeroed_model(seed, most_evidence=2)
    states = all_states(model.cardinalities)
    lw = model.log_weight(states)
    if not np.any(lw > -np.inf):
        return None
    return model, states, lw


@pytest.mark.parametrize("seed", SEEDS)
def test_a_move_is_repaired_exactly_when_a_state_allows_it(seed):
    """Every move (v, a) from a state of positive weight gives a state of positive weight
    with x_v = a exactly when brute force finds one."""
    got = feasible_model(seed)
    if got is None:
        return
    model, states, lw = got
    x = states[int(np.flatnonzero(lw > -np.inf)[0])]
    moves = map_moves._Moves(model, math.inf, None)
    for v in range(model.n):
        for a in range(int(model.cardinalities[v])):
            z = moves.repair.state(x, v, a)
            exists = bool(np.any(lw[states[:, v] == a] > -np.inf))
            assert (z is not None) == exists, (v, a)
            if z is not None:
                assert z[v] == a and model.log_weight(z) > -np.inf
                assert moves.repair.log_weight(z) == pytest.approx(model.log_weight(z))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_search_only_improves_and_stays_feasible(seed):
    """From every third state of positive weight: the result weighs at least the start and
    at most the maximum, has positive weight, each reported state is strictly better than
    the one before and weighs what is reported, and the last one reported is the result."""
    got = feasible_model(seed)
    if got is None:
        return
    model, states, lw = got
    top = float(lw.max())
    for i in np.flatnonzero(lw > -np.inf)[::3].tolist():
        seen: list[float] = []

        def report(x, value, seen=seen, start=lw[i]):
            assert value == pytest.approx(model.log_weight(x))
            assert value > (seen[-1] if seen else start)
            seen.append(value)

        r = map_moves.propagated_moves(model, states[i], kicks=3, rng=seed, report=report)
        assert lw[i] <= r.log_weight <= top + 1e-9
        assert r.log_weight == pytest.approx(model.log_weight(r.state))
        assert model.log_weight(r.state) > -np.inf
        assert not seen or seen[-1] == pytest.approx(r.log_weight)


def noisy_or_chain(k: int) -> FactorGraph:
    """Parents p_0..p_{k-1}, each with a prior preferring it off, and OR links
    a_j = a_{j-1} or p_j (a_0 = p_0) held by deterministic tables, the last link observed
    on: at least one parent must be on."""
    n = 2 * k
    scopes: list[tuple[int, ...]] = [(p,) for p in range(k)]
    tables: list[np.ndarray] = [np.array([0.0, -1.0 - 0.1 * p]) for p in range(k)]
    for j in range(k):
        a = k + j
        if j == 0:
            t = np.full((2, 2), -np.inf)
            t[0, 0] = t[1, 1] = 0.0
            scopes.append((0, a))
        else:
            t = np.full((2, 2, 2), -np.inf)
            for u in range(2):
                for q in range(2):
                    t[u, q, u | q] = 0.0
            scopes.append((a - 1, j, a))
        tables.append(t)
    return FactorGraph([2] * n, scopes, tables).condition({n - 1: 1})


def test_a_move_leaves_what_conditional_modes_cannot():
    """On the OR chain, the start with the last parent on is a local maximum of
    conditional modes on the model itself (any one change breaks a link); one propagated
    move turns the first parent on, the links follow, and the last parent goes off: the
    maximum, without any reduction."""
    k = 6
    model = noisy_or_chain(k)
    start = np.zeros(2 * k, dtype=np.int64)
    start[k - 1] = start[2 * k - 1] = 1
    top = float(np.max(model.log_weight(all_states(model.cardinalities))))
    assert map_search.local_search(model, start).log_weight < top
    r = map_moves.propagated_moves(model, start)
    assert r.log_weight == pytest.approx(top)
    assert r.local_maximum


def test_same_seed_same_state_and_no_rng_draws_nothing():
    model = noisy_or_chain(8)
    start = map_search.feasible_state(model)
    a = map_moves.propagated_moves(model, start, kicks=5, rng=3)
    b = map_moves.propagated_moves(model, start, kicks=5, rng=3)
    assert np.array_equal(a.state, b.state) and a.perturbations == b.perturbations == 5
    c = map_moves.propagated_moves(model, start, kicks=5)  # no rng: no kick
    assert c.perturbations == 0


def test_bad_arguments():
    model = noisy_or_chain(3)
    start = map_search.feasible_state(model)
    with pytest.raises(ValueError, match="init"):
        map_moves.propagated_moves(model, np.zeros(model.n, dtype=np.int64))
    with pytest.raises(ValueError, match="kicks"):
        map_moves.propagated_moves(model, start, kicks=-1, rng=0)
    with pytest.raises(ValueError, match="deadline"):
        map_moves.propagated_moves(model, start, deadline=-1.0)
    with pytest.raises(TypeError, match="report"):
        map_moves.propagated_moves(model, start, report=3)
    with pytest.raises(TypeError, match="red"):
        map_reduction.propagated_moves_parts(model, start)


@pytest.mark.parametrize("start_by_score", [False, True])
@pytest.mark.parametrize("seed", SEEDS)
def test_moves_on_the_reduced_parts(seed, start_by_score):
    """On the reduced parts, from a state of positive weight or from the parts' states by
    score: the result has positive weight, at most the maximum, at least the start; the
    reported log-weights only rise and are the model's."""
    got = feasible_model(seed)
    if got is None:
        return
    model, states, lw = got
    red = map_reduction.reduce_map(model)
    start = None if start_by_score else states[int(np.flatnonzero(lw > -np.inf)[-1])]
    seen: list[float] = []

    def report(x, value):
        assert value == pytest.approx(model.log_weight(x))
        assert not seen or value > seen[-1]
        seen.append(value)

    x = map_reduction.propagated_moves_parts(red, start, deadline=0.2, rng=seed,
                                             report=report)
    value = model.log_weight(x)
    assert -np.inf < value <= lw.max() + 1e-9
    if start is not None:
        assert value >= model.log_weight(start) - 1e-9


def test_solve_mpe_first_answer_survives_a_slow_kernel_load(tmp_path, monkeypatch, capsys):
    """The first call of the search kernel made slow (as loading it on a loaded machine
    is): the first answer written is still a state of positive weight, found by search,
    where the trivial state has zero weight."""
    n = 8
    scopes = [(v, v + 1) for v in range(n - 1)]
    differ = np.where(np.eye(2) > 0, -np.inf, 0.0)  # neighbours differ
    model = FactorGraph([2] * n, scopes, [differ] * (n - 1))
    path = tmp_path / "m.uai"
    io.write_uai(model, path)
    run = _state_search.Search.run
    calls: list[int] = []

    def slow_first(self, stop):
        if not calls:
            time.sleep(1.5 * anytime.FIRST_ANSWER_SECONDS)
        calls.append(1)
        return run(self, stop)

    monkeypatch.setattr(_state_search.Search, "run", slow_first)
    monkeypatch.setattr(_state_search, "SEARCH_CHUNK", 8)  # a search of several chunks
    out = tmp_path / "m.MPE"
    assert solve_cli.main([str(path), "--task", "MPE", "--time-limit", "4",
                           "--out", str(out)]) == 0
    err = capsys.readouterr().err
    first = next(line for line in err.splitlines() if "answer 1: " in line)
    assert "search from" in first and "log-weight -inf" not in first, err
    assert model.log_weight(io.read_answer(out).value) > -np.inf


def test_solve_mpe_answers_on_reduced_parts_only_improve(tmp_path, monkeypatch, capsys):
    """``solve --task MPE`` on a 3-colouring grid with evidence, the exact engines kept
    out: the reduction leaves a part, the propagated moves run on it, and every answer
    written has positive weight and a log-weight strictly above the one before. toulbar2
    is left out: its proof would end these steps first."""
    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    monkeypatch.setattr(anytime, "HOPELESS_FACTOR", 0.0)
    monkeypatch.setattr(anytime_mpe, "EXACT_PARTS_SHARE", 0.0)
    monkeypatch.setattr(anytime_mpe, "toulbar2_available", lambda: False)
    model = colouring(8, 8, seed=3).condition({0: 0, 63: 1})
    path = tmp_path / "m.uai"
    io.write_uai(model, path)
    out = tmp_path / "m.MPE"
    assert solve_cli.main([str(path), "--task", "MPE", "--time-limit", "3",
                           "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "reduced for MAP" in err and "propagated moves on the reduced parts" in err, err
    written = [float(line.split("log-weight ")[1].split(",")[0])
               for line in err.splitlines() if "answer " in line and ": " in line
               and "log-weight " in line and "not written" not in line]
    assert written and all(math.isfinite(w) for w in written), err
    assert all(b > a for a, b in zip(written, written[1:])), err
    assert model.log_weight(io.read_answer(out).value) == pytest.approx(written[-1])
