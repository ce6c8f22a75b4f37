"""The FactorGraph model: validation, log-weights, evidence, the Boltzmann-machine bridge."""

import pickle

import numpy as np
import pytest

from mrflib import BoltzmannMachine, FactorGraph, exact, graphs
from mrflib.models.factor_graph import all_states


def test_from_boltzmann_has_the_same_log_weights_and_log_partition():
    bm = BoltzmannMachine.random(graphs.square_grid(2, 3), 6, rng=0)
    fg = FactorGraph.from_boltzmann(bm)
    x = all_states(fg.cardinalities)
    np.testing.assert_allclose(fg.log_weight(x), bm.log_weight(2 * x - 1), atol=1e-12)
    assert np.logaddexp.reduce(fg.log_weight(x)) == pytest.approx(exact.log_partition(bm))


def test_condition_keeps_the_variables_and_gives_the_evidence_partition():
    fg = FactorGraph([2, 3, 2], [(0, 1), (1, 2), (2,)],
                     [np.log([[1, 2, 3], [4, 5, 6]]), np.log([[1, 0], [2, 1], [1, 3]]),
                      np.zeros(2)])
    x = all_states(fg.cardinalities)
    c = fg.condition({1: 2})
    assert c.n == fg.n and np.array_equal(c.cardinalities, fg.cardinalities)
    keep = x[:, 1] == 2
    assert np.logaddexp.reduce(c.log_weight(x)) == pytest.approx(
        np.logaddexp.reduce(fg.log_weight(x)[keep]))
    assert np.all(np.isneginf(c.log_weight(x[~keep])))


def test_immutable_and_picklable():
    fg = FactorGraph([2], [(0,)], [[0.0, 1.0]])
    with pytest.raises(AttributeError):
        fg.scopes = ()
    with pytest.raises(ValueError):
        fg.log_tables[0][0] = 1.0
    assert pickle.loads(pickle.dumps(fg)) == fg


@pytest.mark.parametrize("args, match", [
    (([2, 0], [(0,)], [[0, 0]]), "cardinalities"),
    (([2, 2], [(0, 0)], [np.zeros((2, 2))]), r"scopes\[0\]"),
    (([2, 2], [(0,)], [[np.nan, 0]]), "NaN"),
    (([2, 2], [(0,)], [[np.inf, 0]]), r"\+inf"),
    (([2, 2], [(0, 2)], [np.zeros((2, 2))]), "variable 2"),
    (([2, 2], [(0,)], [np.zeros(3)]), "shape"),
    (([2, 2], [(0,), (1,)], [np.zeros(2)]), "one table per scope"),
    (([2, 2], [(True,)], [np.zeros(2)]), "integer"),
])
def test_bad_input_is_named(args, match):
    with pytest.raises(ValueError, match=match):
        FactorGraph(*args)


def test_log_weight_checks_states():
    fg = FactorGraph([2, 3], [(0, 1)], [np.zeros((2, 3))])
    with pytest.raises(ValueError, match=r"states\[0, 1\] = 3"):
        fg.log_weight([[0, 3]])
    with pytest.raises(ValueError, match="evidence"):
        fg.condition({1: 5})


def test_auto_sums_by_the_junction_tree_past_2_14_states_and_samples_as_before():
    """On 2^16 joint states ``"auto"`` computes log Z and marginals on the junction tree
    (the faster engine there) but still samples and maximizes by enumeration, so a seed
    gives the draws it always gave."""
    from mrflib.models import lattices

    m = lattices.triangle_lattice(4, 4, 2, rng=0)
    assert np.prod(m.cardinalities) == 2**16
    for fn in (exact.marginals, exact.factor_marginals):
        auto, tree = fn(m), fn(m, method="junction-tree")
        assert all(np.array_equal(a, b) for a, b in zip(auto, tree))
    assert exact.log_partition(m) == exact.log_partition(m, method="junction-tree")
    np.testing.assert_allclose(exact.log_partition(m),
                               exact.log_partition(m, method="enumerate"), rtol=1e-12)
    assert np.array_equal(exact.sample(m, 50, rng=3),
                          exact.sample(m, 50, rng=3, method="enumerate"))
    assert np.array_equal(exact.map_assignment(m)[0],
                          exact.map_assignment(m, method="enumerate")[0])


def test_a_factor_sliced_at_evidence_keeps_what_it_does_not_hold():
    """``slice_factor`` fixes the observed variables a factor holds (scope without them, a
    view at their values) and returns a factor that holds none of them as it is; the
    conditioned model's tables are those slices, copied and read-only."""
    from mrflib.models.factor_graph import slice_factor

    table = np.arange(24.0).reshape(2, 3, 4)
    scope = (4, 1, 7)
    assert slice_factor(scope, table, {0: 1, 2: 0}) == (scope, table)
    got_scope, got = slice_factor(scope, table, {1: 2, 9: 0})
    assert got_scope == (4, 7) and np.shares_memory(got, table)
    np.testing.assert_array_equal(got, table[:, 2, :])
    model = FactorGraph([2] * 8, [(4, 1), (5, 6)], [np.zeros((2, 2)), np.ones((2, 2))])
    cond = model.condition({1: 1})
    assert cond.scopes[:2] == ((4,), (5, 6)) and cond.log_tables[1] is model.log_tables[1]
    assert not cond.log_tables[0].flags.writeable
    assert not np.shares_memory(cond.log_tables[0], model.log_tables[0])


# ------------------------------------------------------------------------- names
def _named():
    return FactorGraph([2, 3], [(0,), (0, 1)], [np.log([1.0, 3]), np.zeros((2, 3))],
                       names=["rain", "sky"], state_names=[["no", "yes"], ["sun", "fog", "dark"]])


def test_names_are_kept_as_tuples_and_resolved():
    fg = _named()
    assert fg.names == ("rain", "sky") and fg.state_names[1] == ("sun", "fog", "dark")
    assert fg.index("sky") == fg.index(1) == 1
    assert fg.state_index("sky", "dark") == fg.state_index(1, 2) == 2


def test_a_model_without_names_is_unchanged():
    fg = FactorGraph([2, 3], [(0, 1)], [np.zeros((2, 3))])
    assert fg.names is None and fg.state_names is None
    assert repr(fg) == "FactorGraph(n=2, factors=1, max_cardinality=3, max_scope=2)"
    assert pickle.loads(pickle.dumps(fg)) == fg


def test_names_survive_condition_copies_pickling_and_the_same_variables_operations():
    import copy

    from mrflib.learning.potentials import normalize
    from mrflib.models.image_noise import posterior

    fg = _named()
    for out in (fg.condition({"sky": "fog"}), fg.condition({1: 1}), copy.copy(fg),
                copy.deepcopy(fg), pickle.loads(pickle.dumps(fg)), normalize(fg)):
        assert out.names == fg.names and out.state_names == fg.state_names
    assert pickle.loads(pickle.dumps(fg)) == fg
    prior = FactorGraph([2, 2], [(0, 1)], [np.zeros((2, 2))], names=["p0", "p1"])
    assert posterior(prior, np.array([[0, 1]]), 2).names == ("p0", "p1")


def test_condition_by_name_equals_condition_by_index():
    fg = _named()
    assert fg.condition({"rain": "yes", "sky": "dark"}) == fg.condition({0: 1, 1: 2})


@pytest.mark.parametrize("kwargs, says", [
    (dict(names=["a"]), "names must hold 2"),
    (dict(names=["a", "a"]), "names must be distinct, got 'a' twice"),
    (dict(names=["a", 1]), r"names\[1\] must be a string"),
    (dict(names="ab"), "names must be a sequence"),
    (dict(state_names=[["x", "y"]]), "state_names must have one entry per variable"),
    (dict(state_names=[["x", "y"], ["x", "y"]]), r"state_names\[1\] must hold 3"),
    (dict(state_names=[["x", "x"], ["a", "b", "c"]]), r"state_names\[0\] must be distinct"),
    (dict(state_names=[["x", "y"], "abc"]), r"state_names\[1\] must be a sequence"),
])
def test_bad_names_are_value_errors_naming_the_argument(kwargs, says):
    with pytest.raises(ValueError, match=says):
        FactorGraph([2, 3], [(0, 1)], [np.zeros((2, 3))], **kwargs)


def test_unknown_names_are_value_errors_listing_close_names():
    fg = _named()
    with pytest.raises(ValueError, match=r"variable: unknown variable 'sk'.*\['sky'\]"):
        fg.index("sk")
    with pytest.raises(ValueError, match=r"state: unknown state 'fogg'.*\['fog'\]"):
        fg.state_index("sky", "fogg")
    with pytest.raises(ValueError, match="variable: variable 2 does not exist"):
        fg.index(2)
    with pytest.raises(ValueError, match="evidence: unknown state 'hail'"):
        fg.condition({"sky": "hail"})


def test_names_of_a_large_model_are_resolved():
    n = 20_000
    fg = FactorGraph(np.full(n, 2), [(i,) for i in range(n)], [np.zeros(2)] * n,
                     names=[f"v{i}" for i in range(n)], state_names=[("off", "on")] * n)
    assert fg.index(f"v{n - 1}") == n - 1 and fg.state_index(n - 1, "on") == 1
