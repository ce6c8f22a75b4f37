"""States of positive probability (``mrflib.inference.approx.map_search``) against brute force."""

from __future__ import annotations

import numpy as np
import pytest
from _random_factor_graphs import colouring, zeroed_model

from mrflib import FactorGraph
from mrflib.inference.approx import map_search
from mrflib.models.factor_graph import all_states


def random_model(seed: int) -> FactorGraph:
    return zeroed_model(seed)


def weights(model: FactorGraph) -> tuple[np.ndarray, np.ndarray]:
    states = all_states(model.cardinalities)
    return states, model.log_weight(states)


@pytest.mark.parametrize("seed", range(40))
def test_feasible_state_iff_one_exists(seed):
    """A state of positive weight whenever one exists, ``None`` exactly when none does;
    with a preferred start too, which is returned as it is when it has positive weight."""
    model = random_model(seed)
    _, lw = weights(model)
    exists = bool(np.any(lw > -np.inf))
    rng = np.random.default_rng(seed)
    start = rng.integers(0, model.cardinalities)
    for x in (map_search.feasible_state(model), map_search.feasible_state(model, start)):
        assert (x is not None) == exists
        if exists:
            assert x.dtype == np.int64 and x.shape == (model.n,)
            assert model.log_weight(x) > -np.inf
    if model.log_weight(start) > -np.inf:
        np.testing.assert_array_equal(map_search.feasible_state(model, start), start)


def local_maximum(model: FactorGraph, x: np.ndarray) -> bool:
    """No change of one variable raises the log-weight."""
    value = model.log_weight(x)
    for v in range(model.n):
        for a in range(int(model.cardinalities[v])):
            y = x.copy()
            y[v] = a
            if model.log_weight(y) > value:
                return False
    return True


@pytest.mark.parametrize("seed", range(40))
def test_local_search_never_lowers_and_ends_at_a_local_maximum(seed):
    model = random_model(seed)
    states, lw = weights(model)
    feasible = states[lw > -np.inf]
    if not len(feasible):
        return
    init = feasible[np.random.default_rng(seed).integers(len(feasible))]
    r = map_search.local_search(model, init)
    assert r.log_weight >= model.log_weight(init)
    assert r.log_weight == model.log_weight(r.state) <= lw.max()
    assert r.local_maximum and local_maximum(model, r.state)
    p = map_search.local_search(model, init, perturbations=5, block=2, rng=seed)
    assert p.log_weight >= r.log_weight and p.local_maximum
    assert p.perturbations == 5 and local_maximum(model, p.state)
    q = map_search.local_search(model, init, perturbations=5, block=2, rng=seed)
    np.testing.assert_array_equal(p.state, q.state)  # same seed, same state


@pytest.mark.parametrize("seed", range(3))
def test_colouring_grids_are_solved_with_the_preferred_values_first(seed):
    """On 3-colouring grids (many valid states), from a valid state with ten variables
    changed so that they break constraints: a valid state that keeps nearly all the
    preferred values, then a local maximum."""
    model = colouring(30, 30, seed)
    rng = np.random.default_rng(seed)
    start = (np.add.outer(np.arange(30), np.arange(30)) % 2).ravel()
    changed = rng.choice(np.flatnonzero(np.arange(model.n) % 30 < 29), 10, replace=False)
    start[changed] = start[changed + 1]  # equal to its right neighbour
    assert model.log_weight(start) == -np.inf
    x = map_search.feasible_state(model, start, deadline=10.0)
    assert model.log_weight(x) > -np.inf
    assert np.mean(x == start) > 0.95
    r = map_search.local_search(model, x)
    assert r.local_maximum and r.log_weight >= model.log_weight(x)


def test_a_proof_of_no_state_and_a_deadline():
    """Four mutually different variables of three states: the search proves ``Z = 0``
    (a pigeonhole that arc consistency alone does not see); with a deadline of 0 on a
    search too large for one chunk it raises TimeoutError."""
    differ = np.where(np.eye(3) > 0, -np.inf, 0.0)
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    model = FactorGraph([3] * 4, pairs, [differ] * len(pairs))
    assert map_search.feasible_state(model) is None
    assert map_search.feasible_state(model, deadline=0.0) is None  # one chunk is enough
    n = 40  # a clique of 40 that must take 39 colours: no arc consistency, a huge tree
    differ = np.where(np.eye(39) > 0, -np.inf, 0.0)
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    model = FactorGraph([39] * n, pairs, [differ] * len(pairs))
    with pytest.raises(TimeoutError):
        map_search.feasible_state(model, deadline=0.0)


def test_a_constant_zero_and_variables_in_no_factor():
    model = FactorGraph([2, 3], [(), (0,)], [np.array(-np.inf), np.array([0.0, 1.0])])
    assert map_search.feasible_state(model) is None
    model = FactorGraph([2, 3], [(0,)], [np.array([0.0, -np.inf])])
    np.testing.assert_array_equal(map_search.feasible_state(model), [0, 0])
    np.testing.assert_array_equal(map_search.feasible_state(model, [1, 2]), [0, 2])


@pytest.mark.parametrize(("call", "match"), [
    (lambda m: map_search.feasible_state(m, [0]), "start"),
    (lambda m: map_search.feasible_state(m, [[0, 0]]), "start"),
    (lambda m: map_search.feasible_state(m, [0, 5]), "start"),
    (lambda m: map_search.feasible_state(m, deadline=-1), "deadline"),
    (lambda m: map_search.feasible_state(m, deadline="1"), "deadline"),
    (lambda m: map_search.local_search(m, [1, 0]), "init"),
    (lambda m: map_search.local_search(m, [0, 0.5]), "init"),
    (lambda m: map_search.local_search(m, [0, 0], deadline=np.nan), "deadline"),
    (lambda m: map_search.local_search(m, [0, 0], max_sweeps=0), "max_sweeps"),
    (lambda m: map_search.local_search(m, [0, 0], perturbations=-1), "perturbations"),
    (lambda m: map_search.local_search(m, [0, 0], perturbations=2), "rng"),
    (lambda m: map_search.local_search(m, [0, 0], perturbations=2, rng="x"), "rng"),
    (lambda m: map_search.local_search(m, [0, 0], block=0), "block"),
])
def test_bad_arguments_are_named(call, match):
    model = FactorGraph([2, 3], [(0,), (0, 1)], [np.array([0.0, -np.inf]), np.zeros((2, 3))])
    with pytest.raises(ValueError, match=match):
        call(model)
