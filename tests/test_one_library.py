"""One library: the same script runs on a Boltzmann machine and on its factor graph.

:func:`run` calls ``exact``, ``approx``, ``smci``, ``sampling`` and ``learning.fit`` with
one argument order (functions of a model take ``(model, data)``, learners
``(data, structure)``) on a
:class:`BoltzmannMachine` and on ``FactorGraph.from_boltzmann(bm)``; the answers have the
same types, configurations are in each model's own domain (spins, states), and where the
mathematics says so the numbers agree.
"""

import numpy as np
import pytest

from mrflib import approx, exact, graphs, learning, sampling, smci
from mrflib.inference.approx.result import ApproxResult
from mrflib.inference.exact.elimination_order import Plan
from mrflib.learning.fit_result import Fit
from mrflib.models.boltzmann import BoltzmannMachine, to_spins, to_states
from mrflib.models.factor_graph import FactorGraph


def run(model, data):
    """Every public entry point, called the same way whatever the model."""
    return dict(
        log_partition=exact.log_partition(model),
        log_partition_jt=exact.log_partition(model, method="junction-tree"),
        moments=exact.moments(model),
        probabilities=exact.probabilities(model),
        log_likelihood=exact.log_likelihood(model, data),
        kl_data_model=exact.kl_data_model(model, data),
        kl_model=exact.kl_model(model, model),
        sample=exact.sample(model, 40, rng=0),
        map_assignment=exact.map_assignment(model),
        plan=exact.plan(model),
        marginals=exact.marginals(model),
        factor_marginals=exact.factor_marginals(model),
        mci=smci.moments(model, data, "mci"),
        smci1=smci.moments(model, data, "1-smci"),
        gibbs=sampling.gibbs(model, 30, burn_in=5, rng=0),
        sweep=sampling.sweep(model, data[:5], 2, rng=0),
        sweep_order=sampling.sweep_order(model),
        lbp=approx.marginals(model, "lbp"),
        approx_gibbs=approx.marginals(model, "gibbs", n_samples=200, rng=0),
        lbp_log_partition=approx.log_partition(model, "lbp"),
        bounds=approx.log_partition_bounds(model, time_limit=5),
        fit_mle=learning.fit(data, model, "mle", rng=0),
        objective_mple=learning.objective(model, data, "mple"),
        fit_mple=learning.fit(data, model, "mple", rng=0, progress=False),
    )


@pytest.fixture(scope="module")
def both():
    bm = BoltzmannMachine.random(graphs.square_grid(3, 3), 9, 0.3, 0.4, rng=3)
    fg = FactorGraph.from_boltzmann(bm)
    spins = exact.sample(bm, 400, rng=1)
    return bm, fg, spins, run(bm, spins), run(fg, to_states(spins))


def _shape(value):
    """The type structure of an answer: containers by their element types."""
    if isinstance(value, tuple | list):
        return type(value), tuple(_shape(v) for v in value[:2])
    if isinstance(value, np.ndarray):
        return np.ndarray, value.ndim
    if isinstance(value, float | np.floating):
        return float
    return type(value)


def test_same_types_back(both):
    _, _, _, a, b = both
    for key in a:
        if key in ("moments", "mci", "smci1"):  # (means, pairs) arrays, (marginals) lists
            assert type(a[key]) is type(b[key]) is tuple and len(a[key]) == len(b[key]) == 2
            continue
        if key in ("lbp", "approx_gibbs"):
            assert isinstance(a[key], ApproxResult) and isinstance(b[key], ApproxResult)
            assert _shape(a[key].marginals) == _shape(b[key].marginals)
            continue
        if key == "plan":  # one type, whose every attribute both kinds answer
            assert isinstance(a[key], Plan) and isinstance(b[key], Plan)
            for name in ("n", "order", "heuristic", "treewidth", "cliques", "max_table_bytes",
                         "total_bytes", "fits", "treewidth_lower_bound"):
                assert type(getattr(a[key], name)) is type(getattr(b[key], name)) or (
                    name == "order" and len(a[key].order) == len(b[key].order)), name
            continue
        assert _shape(a[key]) == _shape(b[key]), key
    assert isinstance(a["fit_mle"], Fit) and isinstance(b["fit_mple"], Fit)


def test_configurations_in_each_models_domain(both):
    bm, fg, _, a, b = both
    assert a["sample"].dtype == np.int8 and set(np.unique(a["sample"])) <= {-1, 1}
    assert b["sample"].dtype == np.int64 and set(np.unique(b["sample"])) <= {0, 1}
    for key in ("sample", "gibbs", "sweep"):
        assert np.all(np.isfinite(bm.log_weight(a[key])))
        assert np.all(np.isfinite(fg.log_weight(b[key])))
    x, logw = a["map_assignment"]
    assert bm.log_weight(x) == pytest.approx(logw, abs=1e-12)
    np.testing.assert_array_equal(to_states(x), b["map_assignment"][0])
    assert logw == pytest.approx(b["map_assignment"][1], abs=1e-12)


def test_equal_numbers_where_the_maths_says_so(both):
    bm, fg, spins, a, b = both
    for key in ("log_partition", "log_partition_jt", "log_likelihood", "kl_data_model",
                "lbp_log_partition", "objective_mple"):
        assert a[key] == pytest.approx(b[key], abs=1e-12), key
    assert a["kl_model"] == b["kl_model"] == 0.0
    # a 3 x 3 lattice is solved exactly: both bounds are log Z
    np.testing.assert_allclose(a["bounds"], [a["log_partition"]] * 2, atol=1e-12)
    np.testing.assert_allclose(b["bounds"], [b["log_partition"]] * 2, atol=1e-12)
    np.testing.assert_allclose(a["probabilities"], b["probabilities"], atol=1e-15)
    assert a["plan"].treewidth == b["plan"].treewidth
    for u, v in zip(a["marginals"], b["marginals"]):
        np.testing.assert_allclose(u, v, atol=1e-13)
    for u, v in zip(a["lbp"].marginals, b["lbp"].marginals):  # the same messages
        np.testing.assert_allclose(u, v, atol=1e-12)
    for key in ("moments", "mci", "smci1"):
        mean, pair = a[key]
        marg, fmarg = b[key]
        np.testing.assert_allclose([m[1] - m[0] for m in marg], mean, atol=1e-12)
        pairwise = [t for s, t in zip(fg.scopes, fmarg) if len(s) == 2]
        np.testing.assert_allclose([t[0, 0] + t[1, 1] - t[0, 1] - t[1, 0] for t in pairwise],
                                   pair, atol=1e-12)
    # the same family (every binary pairwise table is biases and couplings): the same
    # likelihood at the maximum, and the same pseudo-likelihood maximizer
    for key in ("fit_mle", "fit_mple"):
        la = exact.log_likelihood(a[key].model, spins)
        lb = exact.log_likelihood(b[key].model, to_states(spins))
        assert la == pytest.approx(lb, abs=1e-6), key


def test_spin_state_round_trips():
    bm = BoltzmannMachine.random(graphs.square_grid(2, 3), 6, 0.5, 0.7, rng=2)
    back = FactorGraph.from_boltzmann(bm).to_boltzmann()
    np.testing.assert_array_equal(back.edges, bm.edges)
    np.testing.assert_array_equal(back.bias, bm.bias)
    np.testing.assert_array_equal(back.coupling, bm.coupling)
    x = exact.sample(bm, 20, rng=4)
    np.testing.assert_array_equal(to_spins(to_states(x)), x)
    with pytest.raises(ValueError, match="states"):
        to_spins([[0, 2]])
    with pytest.raises(ValueError, match="spins"):
        to_states([[0, 1]])


def test_to_boltzmann_of_a_general_pairwise_table():
    """Any binary pairwise factor graph (tables not of the Ising form) has the same
    distribution as its Boltzmann machine."""
    rng = np.random.default_rng(5)
    scopes = [(0,), (2, 1), (0, 1), (1, 0), (2,)]
    tables = [rng.normal(size=(2,) * len(s)) for s in scopes]
    fg = FactorGraph([2, 2, 2], scopes, tables)
    bm = fg.to_boltzmann()
    np.testing.assert_allclose(exact.probabilities(bm), exact.probabilities(fg), atol=1e-14)
    with pytest.raises(ValueError, match="binary pairwise"):
        FactorGraph([3, 2], [(0, 1)], [np.zeros((3, 2))]).to_boltzmann()


def test_non_pairwise_factor_graph_is_refused_by_name():
    fg = FactorGraph([2, 3, 2], [(0, 1, 2)], [np.zeros((2, 3, 2))])
    x = np.array([[0, 2, 1], [1, 0, 0]])
    marg, fmarg = smci.moments(fg, x, "mci")
    np.testing.assert_allclose(marg[1], [0.5, 0, 0.5])
    assert fmarg[0].shape == (2, 3, 2) and fmarg[0].sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="binary pairwise.*'mci' takes any"):
        smci.moments(fg, x, "1-smci")
    marg, fmarg = exact.moments(fg)
    assert fmarg[0].shape == (2, 3, 2)
    assert exact.probabilities(fg).shape == (12,)


def test_probabilities_in_flat_order_variable_0_least_significant():
    fg = FactorGraph([2, 3], [(0,), (1,)], [np.log([1.0, 3.0]), np.log([1.0, 2.0, 5.0])])
    p = exact.probabilities(fg)
    # index = x_0 + 2 x_1
    expect = np.outer([1, 2, 5], [1, 3]).ravel() / 32
    np.testing.assert_allclose(p, expect)
