"""The dual bound (``map_dual``) and the branch and bound of the reduced parts over it
(``map_reduction.dual_branch_and_bound_parts``) against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _random_factor_graphs import zeroed_model

from mrflib import FactorGraph
from mrflib.inference.approx import map_dual, map_reduction, max_mini_bucket
from mrflib.models.factor_graph import all_states


def brute(model: FactorGraph) -> np.ndarray:
    return model.log_weight(all_states(model.cardinalities))


@pytest.mark.parametrize("seed", range(40))
def test_dual_bound_holds_and_keeps_every_weight(seed):
    """The bound is at least the largest log-weight, at any number of sweeps; the
    reparameterized model weighs every state as the model does (zeros included)."""
    model = zeroed_model(seed, most_evidence=2)
    lw = brute(model)
    for sweeps in (1, 200):
        r = map_dual.dual_bound(model, max_sweeps=sweeps)
        assert r.upper_bound >= np.max(lw) - 1e-9
        assert r.sweeps <= sweeps and r.state.shape == (model.n,)
        again = brute(r.model)
        assert np.array_equal(np.isneginf(again), np.isneginf(lw))
        fin = np.isfinite(lw)
        np.testing.assert_allclose(again[fin], lw[fin], atol=1e-9)


def test_dual_bound_is_exact_on_a_tree():
    """On a chain the local polytope is tight: the converged bound is the maximum."""
    rng = np.random.default_rng(3)
    n = 6
    scopes = [(v,) for v in range(n)] + [(v, v + 1) for v in range(n - 1)]
    tables = [rng.normal(size=3) for _ in range(n)] + [rng.normal(size=(3, 3))
                                                        for _ in range(n - 1)]
    model = FactorGraph(np.full(n, 3), scopes, tables)
    r = map_dual.dual_bound(model, max_sweeps=5000, tolerance=0.0)
    assert r.upper_bound == pytest.approx(float(np.max(brute(model))), abs=1e-6)
    assert model.log_weight(r.state) == pytest.approx(r.upper_bound, abs=1e-6)


def test_dual_bound_arguments():
    model = zeroed_model(2)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_sweeps"):
            map_dual.dual_bound(model, max_sweeps=bad)
    with pytest.raises(ValueError, match="deadline"):
        map_dual.dual_bound(model, deadline=-1.0)
    with pytest.raises(ValueError, match="lower"):
        map_dual.dual_bound(model, lower=math.nan)
    r = map_dual.dual_bound(model, deadline=0.0)  # one sweep at most: still a bound
    assert r.upper_bound >= np.max(brute(model)) - 1e-9


def reduced(seed: int):
    model = zeroed_model(seed, most_evidence=2)
    # no elimination: parts are left for the search
    return model, map_reduction.reduce_map(model, max_entries=0)


@pytest.mark.parametrize("seed", range(40))
def test_parts_search_finds_and_proves_the_maximum(seed):
    """Without a deadline every part's search ends: the state is a most probable one, of
    positive weight, and the bound meets it."""
    model, red = reduced(seed)
    lw = brute(model)
    if red.infeasible:
        assert np.max(lw) == -np.inf
        return
    if np.max(lw) == -np.inf:  # arc consistency does not always prove Z = 0
        with pytest.raises(ValueError, match="no state of positive weight"):
            map_reduction.dual_branch_and_bound_parts(red)
        return
    seen = []
    r = map_reduction.dual_branch_and_bound_parts(
        red, report=lambda x, v: seen.append(float(model.log_weight(x))))
    assert r.optimal
    assert model.log_weight(r.state) == pytest.approx(np.max(lw), abs=1e-9)
    assert r.log_weight == pytest.approx(np.max(lw), abs=1e-9)
    assert r.upper_bound >= np.max(lw) - 1e-9
    assert max_mini_bucket.bound_meets(r.upper_bound, r.log_weight)
    assert seen == sorted(seen) and len(set(seen)) == len(seen)  # only improvements


@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_parts_search_under_a_deadline(seed):
    """From a given state, under a deadline of zero: never below the start, of positive
    weight, a bound above the maximum, and optimal only where it is the maximum."""
    model, red = reduced(seed)
    lw = brute(model)
    if red.infeasible or np.max(lw) == -np.inf:
        return
    start = all_states(model.cardinalities)[int(np.argmin(np.where(lw > -np.inf, lw, np.inf)))]
    r = map_reduction.dual_branch_and_bound_parts(red, start, deadline=0.0)
    value = float(model.log_weight(r.state))
    assert value >= model.log_weight(start) - 1e-9 and value > -np.inf
    assert r.upper_bound >= np.max(lw) - 1e-9
    if r.optimal:
        assert value == pytest.approx(np.max(lw), abs=1e-9)


def test_parts_search_arguments():
    with pytest.raises(TypeError, match="MapReduction"):
        map_reduction.dual_branch_and_bound_parts(zeroed_model(2))
    _, red = reduced(2)
    with pytest.raises(TypeError, match="report"):
        map_reduction.dual_branch_and_bound_parts(red, report=3)
    dead = map_reduction.MapReduction(2, -math.inf, (), (), 0, 0)
    with pytest.raises(ValueError, match="Z = 0"):
        map_reduction.dual_branch_and_bound_parts(dead)


def test_dual_kernels_walk_tables_with_the_shared_odometer():
    """The dual's kernels step a table's entries with :func:`inference._packed.advance`,
    the odometer of every packed kernel, compiled into them and cached."""
    from mrflib.inference import _packed
    from mrflib.inference.approx import _map_dual_kernels as k

    assert k.advance is _packed.advance
    assert not [n for n in vars(k) if n.startswith("_next")]
    model = zeroed_model(4)
    map_dual.dual_bound(model)
    assert k.sweep.signatures and k.bound.signatures
    assert type(k.sweep._cache).__name__ != "NullCache"  # cache=True kept
