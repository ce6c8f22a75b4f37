"""The MAP reduction (``mrflib.inference.approx.map_reduction``) against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _random_factor_graphs import zeroed_model

from mrflib import FactorGraph
from mrflib.inference.approx import map_reduction, map_search
from mrflib.inference.approx.result import MapIncumbent
from mrflib.models.factor_graph import all_states


def random_model(seed: int) -> FactorGraph:
    return zeroed_model(seed, most_evidence=2)


def brute_max(model: FactorGraph) -> float:
    return float(np.max(model.log_weight(all_states(model.cardinalities))))


def part_max(part: FactorGraph) -> tuple[np.ndarray, float]:
    states = all_states(part.cardinalities)
    lw = part.log_weight(states)
    return states[int(np.argmax(lw))], float(np.max(lw))


@pytest.mark.parametrize("max_entries", [0, 4, map_reduction.REDUCTION_ENTRIES])
@pytest.mark.parametrize("seed", range(30))
def test_reduction_keeps_the_maximum(seed, max_entries):
    """The constant plus the parts' maxima is the model's maximum, the expanded state of the
    parts' maxima weighs exactly that, and exact_parts finds it; Z = 0 is never claimed
    where a state of positive weight exists."""
    model = random_model(seed)
    best = brute_max(model)
    red = map_reduction.reduce_map(model, max_entries=max_entries)
    if red.infeasible:
        assert best == -np.inf
        return
    if best == -np.inf:  # arc consistency does not always prove Z = 0: the parts do
        assert red.constant + sum(part_max(p)[1] for p in red.parts) == -np.inf
        return
    got = [part_max(p) for p in red.parts]
    total = red.constant + sum(v for _, v in got)
    assert total == pytest.approx(best, abs=1e-9)
    x = red.expand([s for s, _ in got])
    assert model.log_weight(x) == pytest.approx(best, abs=1e-9)
    y = map_reduction.exact_parts(red)
    assert model.log_weight(y) == pytest.approx(best, abs=1e-9)
    # any state of positive weight projects onto the parts, and comes back no worse
    states = all_states(model.cardinalities)
    lw = model.log_weight(states)
    z = states[int(np.flatnonzero(lw > -np.inf)[-1])]
    back = red.expand(red.project(z))
    assert model.log_weight(back) >= model.log_weight(z) - 1e-9


def test_disconnected_model_splits_into_parts():
    """Two models side by side: at least two parts, and the maximum is the sum."""
    a, b = random_model(2), random_model(4)
    card = np.concatenate([a.cardinalities, b.cardinalities])
    scopes = list(a.scopes) + [tuple(v + a.n for v in s) for s in b.scopes]
    model = FactorGraph(card, scopes, list(a.log_tables) + list(b.log_tables))
    red = map_reduction.reduce_map(model, max_entries=0)
    held = [v for p in red.variables for v in p.tolist()]
    assert len(held) == len(set(held))
    assert len(red.parts) >= 2
    assert not set(red.variables[0].tolist()) & set(red.variables[1].tolist())
    x = map_reduction.exact_parts(red)
    assert model.log_weight(x) == pytest.approx(brute_max(a) + brute_max(b), abs=1e-9)


def test_reduction_that_fixes_everything():
    """Evidence and zeros that leave one state: no part left, the constant is its weight."""
    # x0 observed at 1; the table of (x0, x1) allows x1 = 2 only then; x2 = x1 - 1
    t01 = np.full((2, 3), -np.inf)
    t01[0, :] = 0.0
    t01[1, 2] = 0.5
    t12 = np.full((3, 2), -np.inf)
    t12[1, 0] = t12[2, 1] = -0.25
    t12[0, 0] = 3.0
    model = FactorGraph([2, 3, 2], [(0, 1), (1, 2)], [t01, t12]).condition({0: 1})
    red = map_reduction.reduce_map(model, max_entries=0)
    assert red.parts == () and red.fixed == 3
    assert red.constant == pytest.approx(0.25)
    x = map_reduction.exact_parts(red)
    assert x.tolist() == [1, 2, 1]
    assert model.log_weight(x) == pytest.approx(brute_max(model))


def test_zero_proven_by_propagation():
    """Evidence that no row supports empties a domain: Z = 0, and nothing to expand."""
    t = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    model = FactorGraph([2, 2], [(0, 1)], [t]).condition({0: 0, 1: 1})
    red = map_reduction.reduce_map(model)
    assert red.infeasible and red.parts == ()
    with pytest.raises(ValueError, match="Z = 0"):
        red.expand([])
    with pytest.raises(ValueError, match="Z = 0"):
        map_reduction.exact_parts(red)


def noisy_or_chain(k: int) -> FactorGraph:
    """Parents p_1..p_k, a deterministic OR chain a_1..a_k over them (a_i = a_{i-1} or p_i),
    its last link observed 1; the first parent gains 1 when on, each other costs more."""
    n = 2 * k
    scopes, tables = [], []
    for i in range(k):
        scopes.append((i,))
        tables.append(np.array([0.0, 1.0 if i == 0 else -1.0 - 0.1 * i]))
    for i in range(k):
        a, p = k + i, i
        if i == 0:
            t = np.full((2, 2), -np.inf)  # a_0 = p_0
            t[0, 0] = t[1, 1] = 0.0
            scopes.append((p, a))
        else:
            t = np.full((2, 2, 2), -np.inf)  # (a_{i-1}, p_i, a_i)
            for u in range(2):
                for q in range(2):
                    t[u, q, u | q] = 0.0
            scopes.append((a - 1, p, a))
        tables.append(t)
    return FactorGraph([2] * n, scopes, tables).condition({n - 1: 1})


def test_local_search_on_parts_leaves_a_blocked_start():
    """On an OR chain whose last link is observed on, the start with the last parent on
    alone is a local maximum of the model (turning the first parent on breaks the link
    a_0 = p_0, the last one off breaks the observed link), but not of the reduced parts,
    where the chain is one factor: the search turns the first parent on and the last off,
    the maximum."""
    k = 6
    model = noisy_or_chain(k)
    start = np.zeros(2 * k, dtype=np.int64)
    start[k - 1] = start[2 * k - 1] = 1
    stuck = map_search.local_search(model, start)
    assert stuck.log_weight == model.log_weight(start) < brute_max(model)
    red = map_reduction.reduce_map(model)
    x = map_reduction.local_search_parts(red, start)
    assert model.log_weight(x) == pytest.approx(brute_max(model))


def test_deadline_stops_the_reduction():
    """A deadline of 0 stops a reduction of more steps than one look at the clock; bad
    deadlines are refused."""
    model = noisy_or_chain(2 * map_reduction.CLOCK_STEPS)
    with pytest.raises(TimeoutError):
        map_reduction.reduce_map(model, deadline=0.0)
    assert not map_reduction.reduce_map(model, deadline=None).infeasible
    for bad in (-1.0, "1", True, complex(1, 0)):
        with pytest.raises(ValueError, match="deadline"):
            map_reduction.reduce_map(model, deadline=bad)


def test_bad_arguments():
    model = random_model(2)
    for bad in (-1, 1.5, True, "8", None):
        with pytest.raises(ValueError, match="max_entries"):
            map_reduction.reduce_map(model, max_entries=bad)
    with pytest.raises(TypeError, match="model"):
        map_reduction.reduce_map("model")
    with pytest.raises(TypeError, match="red"):
        map_reduction.exact_parts(model)
    with pytest.raises(TypeError, match="red"):
        map_reduction.local_search_parts(model, np.zeros(model.n, dtype=np.int64))
    red = map_reduction.reduce_map(model, max_entries=0)
    with pytest.raises(ValueError, match="one state per part"):
        red.expand([np.zeros(1, dtype=np.int64)] * (len(red.parts) + 1))
    with pytest.raises(ValueError, match="shape"):
        red.project(np.zeros(model.n + 1, dtype=np.int64))


# ------------------------------------------- steps of approx.map_assignment's "auto"
def no_limit(share: float) -> None:
    return None


@pytest.mark.parametrize("k", [2, 3, 5])
def test_reduced_steps_solve_an_or_chain(k):
    """The reduction with max-product on its parts leaves the maximum in the incumbent; on
    the parts of a reduction that eliminates nothing, the propagated moves find a state of
    positive weight and the dual branch and bound proves the maximum."""
    model = noisy_or_chain(k)
    best = brute_max(model)
    inc = MapIncumbent(model, math.inf)
    assert map_reduction.solve_reduced(model, inc, no_limit, 0.2) is None
    assert inc.value == pytest.approx(best) and inc.upper == inc.value and inc.done()
    assert inc.details["reduction"]["fixed"] >= 1
    red = map_reduction.reduce_map(model, max_entries=0)
    assert red.parts
    inc = MapIncumbent(model, math.inf)
    map_reduction.dual_on_parts(red, inc, no_limit, 0.8)  # no state yet: nothing to do
    assert inc.state is None and inc.upper == math.inf
    map_reduction.moves_on_parts(red, inc, no_limit, 0.3, None)
    assert -math.inf < inc.value <= best + 1e-9
    assert inc.method == "propagated moves on the reduced parts"
    map_reduction.dual_on_parts(red, inc, no_limit, 0.8)
    assert inc.value == pytest.approx(best) and inc.done()
    assert inc.upper >= best - 1e-9


def test_reduced_steps_out_of_time_and_at_z_zero():
    """A reduction out of its share of the time fixes nothing and says so; one that proves
    Z = 0 raises naming it."""
    model = noisy_or_chain(2 * map_reduction.CLOCK_STEPS)
    inc = MapIncumbent(model, math.inf)
    red = map_reduction.solve_reduced(model, inc, lambda s: 0.0, 0.2)
    assert red.fixed == 0 and red.parts == ()
    assert "did not end" in inc.details["reduction"]
    t = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    zero = FactorGraph([2, 2], [(0, 1)], [t]).condition({0: 0, 1: 1})
    with pytest.raises(ValueError, match="Z = 0"):
        map_reduction.solve_reduced(zero, MapIncumbent(zero, math.inf), no_limit, 0.2)


def test_incumbent_keeps_the_heaviest_state_and_the_lowest_bound():
    model = noisy_or_chain(2)
    states = all_states(model.cardinalities)
    lw = model.log_weight(states)
    order = np.argsort(lw, kind="stable")
    inc = MapIncumbent(model, 10.0)
    inc.offer(None, "bound only", 5.0)
    assert inc.state is None and inc.upper == 5.0 and inc.value == -math.inf
    inc.offer(states[order[-1]], "best", 7.0)
    inc.offer(states[order[0]], "worst", 6.0)
    assert inc.method == "best" and inc.value == lw[order[-1]] and inc.upper == 5.0
    assert inc.state.dtype == np.int64 and not inc.done()
    inc.offer(None, "proof", float(lw[order[-1]]))
    assert inc.done()


def test_reduced_steps_name_a_bad_argument():
    model = noisy_or_chain(2)
    red = map_reduction.reduce_map(model, max_entries=0)
    inc = MapIncumbent(model, math.inf)
    for step in (map_reduction.moves_on_parts, map_reduction.dual_on_parts):
        extra = (None,) if step is map_reduction.moves_on_parts else ()
        with pytest.raises(TypeError, match="red must be a MapReduction"):
            step(model, inc, no_limit, 0.5, *extra)
        with pytest.raises(TypeError, match="best must be a MapIncumbent"):
            step(red, {"value": 0.0}, no_limit, 0.5, *extra)
        with pytest.raises(TypeError, match="left must be callable"):
            step(red, inc, 0.5, 0.5, *extra)
    with pytest.raises(TypeError, match="model must be a FactorGraph"):
        map_reduction.solve_reduced(red, inc, no_limit, 0.5)
    with pytest.raises(TypeError, match="best must be a MapIncumbent"):
        map_reduction.solve_reduced(model, None, no_limit, 0.5)
