"""Learning factor graphs: exact ML, pseudo-likelihood and LAP for any cliques.

Each estimator is checked against its own objective written plainly here and optimized
by scipy over the free tables, LAP against the literal auxiliary MRF, the Ising case
against the ±1 learners, and consistency as N grows.
"""

import math
import warnings

import numpy as np
import pytest
import scipy.optimize

from mrflib import BoltzmannMachine, FactorGraph, exact, graphs, learning
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.learning import _layout, existence, potentials, table_learners
from mrflib.models import lattices as factor_models
from mrflib.models.factor_graph import all_states


# ------------------------------------------------------------------ brute-force helpers
def _probabilities(model):
    X = all_states(model.cardinalities)
    lw = model.log_weight(X)
    p = np.exp(lw - lw.max())
    return X, p / p.sum()


def _sample(model, N, seed):
    X, p = _probabilities(model)
    return X[np.random.default_rng(seed).choice(len(X), N, p=p)]


def _factor_marginals(model):
    X, p = _probabilities(model)
    out = []
    for s, t in zip(model.scopes, model.log_tables):
        m = np.zeros(t.shape)
        np.add.at(m, tuple(X[:, v] for v in s), p)
        out.append(m)
    return out


def _with_tables(structure, theta):
    """The structure with every table entry free: ``theta`` is all tables, flattened."""
    tables, at = [], 0
    for t in structure.log_tables:
        tables.append(theta[at:at + t.size].reshape(t.shape))
        at += t.size
    return FactorGraph(structure.cardinalities, structure.scopes, tables)


def _plain_optimum(structure, objective):
    """Minimize ``objective(model)`` over all table entries (over-parameterized: the
    normalized potentials are still unique) by scipy with numerical gradients."""
    size = sum(t.size for t in structure.log_tables)
    res = scipy.optimize.minimize(lambda th: objective(_with_tables(structure, th)),
                                  np.zeros(size), method="BFGS", options={"gtol": 1e-9})
    return potentials.normalize(_with_tables(structure, res.x))


def _plain_negll(data):
    def f(model):
        X = all_states(model.cardinalities)
        lw = model.log_weight(X)
        return np.logaddexp.reduce(lw) - model.log_weight(data).mean()
    return f


def _plain_negpl(data):
    def f(model):
        total = 0.0
        for i in range(model.n):
            lw = []
            for v in range(int(model.cardinalities[i])):
                y = data.copy()
                y[:, i] = v
                lw.append(model.log_weight(y))
            lw = np.array(lw)  # (values of x_i, N)
            total += np.sum(lw[data[:, i], np.arange(len(data))]
                            - np.logaddexp.reduce(lw, axis=0))
        return -total / len(data)
    return f


def _max_diff(a, b):
    return max(float(np.max(np.abs(s - t))) for s, t in zip(a.log_tables, b.log_tables))


@pytest.fixture(scope="module")
def small():
    """A 3-state chain with a triangle: unary, pairwise and three-variable factors."""
    rng = np.random.default_rng(4)
    card = [3, 2, 3, 2]
    scopes = [(0,), (0, 1), (1, 2, 3), (2, 3)]
    tables = [rng.normal(0, 0.5, tuple(card[v] for v in s)) for s in scopes]
    model = FactorGraph(card, scopes, tables)
    return model, _sample(model, 400, 1)


# --------------------------------------------------------------------- normalization
def test_normalize_keeps_the_distribution_and_follows_definition_5():
    bm = BoltzmannMachine.random(graphs.square_grid(2, 3), 6, rng=0)
    fg = FactorGraph.from_boltzmann(bm)
    nf = potentials.normalize(fg)
    X = all_states(fg.cardinalities)
    assert np.ptp(nf.log_weight(X) - fg.log_weight(X)) < 1e-12
    for t in nf.log_tables:  # every factor owns only its whole scope here
        for ax in range(t.ndim):
            assert np.all(np.take(t, 0, axis=ax) == 0)
    closed = potentials.ising_normalized_potentials(bm)
    V = potentials.factor_graph_potentials(fg)
    for B, value in closed.items():
        assert V[B][(1,) * len(B)] == pytest.approx(value, abs=1e-12)
    assert potentials.normalize(nf) == nf


def test_normalize_is_gauge_invariant(small):
    model, _ = small
    h = np.array([0.3, -0.7])
    t = [np.array(x) for x in model.log_tables]
    t[1] = t[1] + h[None, :]       # move a function of x_1 from (1,2,3) to (0,1)
    t[2] = t[2] - h[:, None, None]
    t[3] = t[3] + 5.0              # and a constant
    other = FactorGraph(model.cardinalities, model.scopes, t)
    assert _max_diff(potentials.normalize(model), potentials.normalize(other)) < 1e-12


def test_normalize_refuses_zero_weights():
    fg = FactorGraph([2], [(0,)], [[0.0, -np.inf]])
    with pytest.raises(ValueError, match="positive"):
        potentials.normalize(fg)


# ---------------------------------------------------------------- objectives, kernels
def test_pseudo_likelihood_kernel_matches_the_numpy_reference(small):
    model, data = small
    assert table_learners.pseudo_log_likelihood(model, data) == pytest.approx(
        table_learners._pseudo_log_likelihood_numpy(model, data), abs=1e-12)
    assert table_learners.pseudo_log_likelihood(model, data) == pytest.approx(
        -_plain_negpl(data)(model), abs=1e-12)


def test_pseudo_likelihood_kernel_on_every_counting_path(small):
    """Few rows (blanket codes sorted, not counted in a table) and a blanket of 63
    binary variables (its code overflows int64: rows sorted) give the reference too."""
    model, data = small
    assert table_learners.pseudo_log_likelihood(model, data[:3]) == pytest.approx(
        table_learners._pseudo_log_likelihood_numpy(model, data[:3]), abs=1e-12)
    rng = np.random.default_rng(3)
    star = FactorGraph([2] * 64, [(0, j) for j in range(1, 64)],
                       [rng.normal(0, 0.3, (2, 2)) for _ in range(63)])
    x = rng.integers(0, 2, (7, 64))
    assert table_learners.pseudo_log_likelihood(star, x) == pytest.approx(
        table_learners._pseudo_log_likelihood_numpy(star, x), abs=1e-12)


def test_pseudo_likelihood_of_a_zero_probability_context_is_minus_inf():
    """A row whose every value of some ``x_i`` has zero weight (a -inf table row) has
    conditional 0/0: both paths gave NaN; its log-probability is -inf."""
    t = np.zeros((3, 2))
    t[0, :] = -np.inf
    model = FactorGraph([3, 2], [(0, 1), (1,)], [t, np.zeros(2)])
    data = np.array([[0, 0], [1, 1]])
    assert table_learners.pseudo_log_likelihood(model, data) == -np.inf
    assert table_learners._pseudo_log_likelihood_numpy(model, data) == -np.inf
    ok = data[1:]
    assert table_learners.pseudo_log_likelihood(model, ok) == pytest.approx(
        table_learners._pseudo_log_likelihood_numpy(model, ok), abs=1e-12)


def test_pseudo_likelihood_contexts_are_checked_before_counting():
    """Wide blankets make almost every row its own context for every variable (memory
    ``N * sum of factor memberships``, unchecked before): the request is made first and
    covers the measured peak."""
    import tracemalloc

    from mrflib._support.validation import memory_requests

    rng = np.random.default_rng(0)
    n, N = 12, 20000
    # a factor of three variables keeps the model off the pairwise kernel, which has no
    # contexts
    scopes = [(i, j) for i in range(n) for j in range(i + 1, n)] + [(0, 1, 2)]
    model = FactorGraph([6] * n, scopes, [np.zeros((6, 6))] * (len(scopes) - 1)
                        + [np.zeros((6, 6, 6))])
    data = rng.integers(0, 6, (N, n))
    with memory_requests() as log:
        tracemalloc.start()
        table_learners.pseudo_log_likelihood(model, data)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    asked = [b for what, b in log if "pseudo-likelihood contexts" in what]
    assert asked and peak <= asked[0], (peak, asked)


def test_fitted_tables_are_normalized_bit_for_bit():
    """Where each factor owns only its whole scope (a Potts lattice), A θ is returned
    without normalize: it must be exactly what normalize gives."""
    rng = np.random.default_rng(1)
    for model in (factor_models.potts_lattice(3, 3, 3, coupling=0.4, rng=0),
                  FactorGraph.from_boltzmann(BoltzmannMachine.random(
                      graphs.square_grid(2, 3), 6, rng=0))):
        lay = _layout.Layout(model)
        assert lay.one_term_per_entry
        for scale in (1e-3, 1.0, 1e3):
            fitted = lay.model(rng.normal(0, scale, lay.n_params))
            for a, b in zip(fitted.log_tables, potentials.normalize(fitted).log_tables):
                assert a.tobytes() == b.tobytes()
        fit = learning.fit(factor_gibbs.gibbs(model, 300, burn_in=5, rng=2), model, "mple")
        assert fit.model == potentials.normalize(fit.model)


def test_exact_log_likelihood_matches_enumeration(small):
    model, data = small
    assert exact.log_likelihood(model, data) == pytest.approx(
        -_plain_negll(data)(model), abs=1e-12)


# ------------------------------------------------------------------------ estimators
def test_mle_is_the_likelihood_optimum_and_matches_every_factor_marginal(small):
    model, data = small
    fit = learning.fit(data, model, "mle", tol=1e-10)
    assert isinstance(fit.model, FactorGraph) and fit.model.scopes == model.scopes
    assert fit.model == potentials.normalize(fit.model)
    for got, want in zip(_factor_marginals(fit.model),
                         table_learners.data_factor_marginals(model, data)):
        np.testing.assert_allclose(got, want, atol=1e-6)
    plain = _plain_optimum(model, _plain_negll(data))
    assert _max_diff(fit.model, plain) < 1e-4


@pytest.mark.parametrize("method", ["mle", "mple"])
def test_data_missing_a_factor_state_give_no_estimate(small, method):
    """A factor state the data never show (and, for pseudo-likelihood, one a sample meets
    on all but one variable): the estimate does not exist (that state's potential goes to
    -inf as the objective approaches its supremum), whatever the gradient at the stop."""
    model, data = small
    data = data.copy()
    k = next(k for k, s in enumerate(model.scopes) if len(s) == 2)
    i, j = model.scopes[k]
    hit = (data[:, i] == 1) & (data[:, j] == 1)
    data[hit, j] = 0
    with pytest.warns(RuntimeWarning, match=rf"does not exist.*factor {k} over \({i}, {j}\) "
                      r"in state \(1, 1\)"):
        fit = learning.fit(data, model, method)
    assert not fit.converged
    assert fit.stop_reason.startswith(f"the {method.upper()} does not exist")
    assert all(np.all(np.isfinite(t)) for t in fit.model.log_tables)


def test_pseudo_likelihood_counts_only_zero_states_a_sample_meets():
    """Data only in state (0, 0, 0) of a binary three-variable factor: all 7 other states
    are missing for ML, but only the 3 one change away enter the pseudo-likelihood."""
    s = FactorGraph([2, 2, 2], [(0, 1, 2)], [np.zeros((2, 2, 2))])
    lay = _layout.Layout(s)
    d = _layout.data_marginals(lay, np.zeros((5, 3), int))
    assert existence.unbounded(lay, d).startswith("7 factor state(s)")
    assert existence.unbounded(lay, d, True).startswith("3 factor state(s)")


def test_mple_is_the_pseudo_likelihood_optimum(small):
    model, data = small
    fit = learning.fit(data[:150], model, "mple", tol=1e-10)
    assert fit.converged
    plain = _plain_optimum(model, _plain_negpl(data[:150]))
    assert _max_diff(fit.model, plain) < 1e-4


def test_mle_has_the_highest_training_likelihood(small):
    model, data = small
    ll = {m: exact.log_likelihood(learning.fit(data, model, m).model, data)
          for m in table_learners.METHODS}
    assert ll["mle"] >= max(ll.values()) - 1e-12
    assert ll["mle"] >= exact.log_likelihood(model, data)


def _literal_lap(structure, data, k):
    """Section 4's three steps, plainly: the 1-neighbourhood A_Q, the auxiliary MRF on it
    (every factor meeting Q a free table, plus a free table g over A \\ Q) fitted by exact
    ML over all states of x_A, and the normalized potentials of the cliques k owns."""
    Q = set(structure.scopes[k])
    touching = [c for c, s in enumerate(structure.scopes) if Q & set(s)]
    A = sorted(set().union(*(structure.scopes[c] for c in touching)))
    rest = [v for v in A if v not in Q]
    pos = {v: a for a, v in enumerate(A)}
    card = structure.cardinalities[A]
    scopes = [tuple(pos[v] for v in structure.scopes[c]) for c in touching]
    scopes.append(tuple(pos[v] for v in rest))
    aux = FactorGraph(card, scopes, [np.zeros(tuple(card[list(s)])) for s in scopes])
    size = sum(t.size for t in aux.log_tables)
    X = all_states(card)
    p_emp = np.zeros(len(X))
    code = {tuple(r): i for i, r in enumerate(X)}
    for r in data[:, A]:
        p_emp[code[tuple(r)]] += 1 / len(data)

    def negll(th):
        lw = _with_tables(aux, th).log_weight(X)
        return np.logaddexp.reduce(lw) - p_emp @ lw

    res = scipy.optimize.minimize(negll, np.zeros(size), method="BFGS",
                                  options={"gtol": 1e-10})
    V = potentials.factor_graph_potentials(_with_tables(aux, res.x))
    owners = potentials.clique_owners(structure.scopes)
    return {B: V[tuple(pos[v] for v in B)] for B, owner in owners.items() if owner == k}


def test_lap_equals_the_literal_auxiliary_mrf_fit(small):
    model, data = small
    fit = learning.fit(data, model, "lap")
    assert fit.converged
    got = potentials.factor_graph_potentials(fit.model)
    owners = potentials.clique_owners(model.scopes)
    for k in sorted(set(owners.values())):
        for B, V in _literal_lap(model, data, k).items():
            np.testing.assert_allclose(got[B], V, atol=2e-5)


def test_lap_in_parallel_is_bit_identical(small):
    model, data = small
    a = learning.fit(data, model, "lap").model
    b = learning.fit(data, model, "lap", n_jobs=2).model
    assert a == b


def _lap_both_paths(model, data, **options):
    """Every factor's LAP output ``(k, potentials, iterations, ok)`` from the numba kernel
    (and its fitted potentials where its neighbours start) and from the numpy reference."""
    x = np.asarray(data, dtype=np.int64)
    owned = {}
    for B, k in potentials.clique_owners(model.scopes).items():
        owned.setdefault(k, []).append(B)
    args = (x, model.cardinalities, model.scopes, options.get("gauge", "reference"),
            options.get("l2", 0.0), 1e-12, 100, sorted(owned.items()))
    return table_learners._lap_chunk(*args), table_learners._lap_chunk_numpy(*args)


@pytest.mark.parametrize("gauge", potentials.GAUGES)
@pytest.mark.parametrize("which", ["small", "potts-3x3-q3", "triangles-3x3-q3", "ridge"])
def test_lap_kernel_matches_the_numpy_reference(small, which, gauge):
    """The batched numba fits (patterns of the rest of A_Q counted once, enumeration over
    x_Q) give the numpy reference's potentials (and, by the general kernel, its Newton
    steps)."""
    options = {"gauge": gauge}
    if which in ("small", "ridge"):
        model, data = small
        options["l2"] = 0.1 if which == "ridge" else 0.0
    else:
        model = (factor_models.potts_lattice(3, 3, 3, coupling=0.4, rng=3)
                 if which.startswith("potts") else
                 factor_models.triangle_lattice(3, 3, 3, scale=0.6, rng=3))
        data = _sample(model, 700, 5)
    got, want = _lap_both_paths(model, data, **options)
    _assert_lap_outputs_agree(model, got, want)


def _assert_lap_outputs_agree(model, got, want):
    """The general kernel's factors take the reference's Newton steps to 1e-10; the
    pairwise kernel's (chord steps near the optimum: its own step count) agree to 1e-8."""
    pairwise = {k: all(len(model.scopes[c]) <= 2 for c, s in enumerate(model.scopes)
                       if set(s) & set(model.scopes[k]))
                for k, *_ in got}
    for (k, a, it, ok, *_), (k0, b, it0, ok0) in zip(got, want):
        assert (k, ok) == (k0, ok0)
        assert pairwise[k] or it == it0
        assert a.keys() == b.keys()
        for B in a:
            np.testing.assert_allclose(a[B], b[B], rtol=0, atol=1e-8 if pairwise[k] else 1e-10)


def test_lap_neighbourhood_beyond_a_62_bit_code_takes_the_numpy_path():
    """A binary centre with 31 four-state leaves: its 1-neighbourhood has 2^63 joint
    states (no int64 code), so those factors go through the reference; a separate pair
    in the same chunk goes through the kernel; both as the reference alone."""
    rng = np.random.default_rng(1)
    card = [2] + [4] * 31 + [3, 3]
    scopes = [(0,)] + [(0, i) for i in range(1, 32)] + [(32, 33)]
    model = FactorGraph(card, scopes, [np.zeros(tuple(card[v] for v in s)) for s in scopes])
    data = np.column_stack([rng.integers(0, c, 20) for c in card])
    got, want = _lap_both_paths(model, data, l2=0.5)
    _assert_lap_outputs_agree(model, got, want)


def test_lap_refuses_an_auxiliary_model_too_large_before_allocating():
    """A factor over four 24-state variables next to a 4000-state one seen in 4000 states:
    331,776 states of the scope to enumerate for each of 4000 data patterns around it;
    refused with the size, by the kernel path and by the reference."""
    card = [24] * 4 + [4000]
    scopes = [(0, 1, 2, 3), (3, 4)]
    model = FactorGraph(card, scopes, [np.zeros(tuple(card[v] for v in s)) for s in scopes])
    data = np.column_stack([np.arange(4000) % 24] * 4 + [np.arange(4000)])
    for run in (lambda: learning.fit(data, model, "lap"), lambda: _lap_both_paths(model, data)):
        with pytest.raises(ValueError, match=r"auxiliary problem of factor 0 .*would need"):
            run()


# ---------------------------------------------------------------------- Ising bridge
@pytest.fixture(scope="module")
def ising():
    edges = graphs.square_grid(3, 3)
    bm = BoltzmannMachine.random(edges, 9, bias_scale=0.3, coupling_scale=0.4, rng=2)
    x = exact.sample(bm, 3000, rng=5)
    return edges, bm, x, ((x + 1) // 2).astype(np.int64)


@pytest.mark.parametrize("method, spin_kw, fg_kw", [
    ("mle", {}, {"tol": 1e-11}),
    ("mple", {"solver": "lbfgs", "tol": 1e-11}, {"tol": 1e-11}),
    ("lap", {}, {"gauge": "zero-sum"}),
])
def test_ising_data_give_the_estimates_of_the_spin_learners(ising, method, spin_kw, fg_kw):
    edges, bm, x, x01 = ising
    spin = learning.fit(x, edges, method, **spin_kw).model
    fg = learning.fit(x01, FactorGraph.from_boltzmann(bm), method, **fg_kw).model
    assert _max_diff(potentials.normalize(FactorGraph.from_boltzmann(spin)), fg) < 1e-8


def test_lap_gauges_differ_at_finite_n_but_both_are_lap(ising):
    """Reference-state LAP takes a bias's whole normalized potential from Q = {i}; the
    ±1 (zero-sum) LAP takes part of it from the edges' fits: different, both consistent."""
    edges, bm, x, x01 = ising
    st = FactorGraph.from_boltzmann(bm)
    ref = learning.fit(x01, st, "lap").model
    zs = learning.fit(x01, st, "lap", gauge="zero-sum").model
    truth = potentials.normalize(st)
    assert 1e-6 < _max_diff(ref, zs) < 0.2
    assert _max_diff(ref, truth) < 0.3 and _max_diff(zs, truth) < 0.3


# ------------------------------------------------------------------- consistency in N
def _errors(truth, sizes, seed):
    errs = {m: [] for m in table_learners.METHODS}
    target = potentials.normalize(truth)
    for N in sizes:
        data = _sample(truth, N, seed)
        for m in errs:
            fit = learning.fit(data, truth, m, l2=1e-6) if m == "lap" else \
                learning.fit(data, truth, m)
            errs[m].append(np.mean(np.concatenate(
                [np.abs(a - b).ravel() for a, b in zip(fit.model.log_tables,
                                                       target.log_tables)])))
    return errs


@pytest.mark.parametrize("truth", [
    factor_models.potts_lattice(3, 3, 3, coupling=0.4, rng=3),
    factor_models.triangle_lattice(3, 3, 2, scale=0.6, rng=3),
], ids=["potts-3x3-q3", "triangles-3x3"])
def test_estimation_error_shrinks_as_n_grows(truth):
    errs = _errors(truth, (500, 5_000, 50_000), seed=11)
    for m, e in errs.items():
        assert e[2] < e[1] < e[0], (m, e)
        assert e[2] < 0.5 * e[0], (m, e)


# ------------------------------------------------------------------- generators, input
def test_generators_shapes():
    p = factor_models.potts_lattice(3, 4, 4, rng=0)
    assert p.n == 12 and p.n_factors == 12 + len(graphs.square_grid(3, 4))
    assert all(t.shape == (4,) * len(s) for s, t in zip(p.scopes, p.log_tables))
    t = factor_models.triangle_lattice(3, 3, 3, rng=0)
    assert t.n_factors == 9 + 8 and t.log_tables[-1].shape == (3, 3, 3)
    assert factor_models.potts_lattice(3, 4, 4, rng=0) == p


def test_gibbs_matches_the_exact_factor_marginals():
    model = factor_models.potts_lattice(2, 2, 3, coupling=0.5, rng=1)
    x = factor_gibbs.gibbs(model, 20_000, burn_in=30, rng=2)
    assert np.array_equal(x, factor_gibbs.gibbs(model, 20_000, burn_in=30, rng=2))
    ref = factor_gibbs.gibbs_numpy(model, 20_000, burn_in=30, rng=2)
    assert np.mean(x != ref) < 1e-4  # the same draws (exp may differ in the last bit)
    got = table_learners.data_factor_marginals(model, x)
    for g, w in zip(got, _factor_marginals(model)):
        np.testing.assert_allclose(g, w, atol=0.02)


@pytest.mark.parametrize("bad, match", [
    (np.zeros((5, 3), dtype=np.int64), r"data must have shape \(N, 4\)"),
    (np.full((5, 4), 0.5), "data must contain integer"),
    (np.full((5, 4), 2), r"data\[0, 1\] = 2 is outside"),
    (np.zeros(4, dtype=np.int64), "data must have shape"),
    (np.zeros((0, 4), dtype=np.int64), "at least one sample"),
])
def test_bad_data_is_refused(small, bad, match):
    model, _ = small
    with pytest.raises(ValueError, match=match):
        learning.fit(bad, model, "mple")


def test_bad_options_are_refused(small):
    model, data = small
    for method in ("rm", np.array(["lap"]), ["mle"]):  # an array raised 'unhashable type'
        with pytest.raises(ValueError, match="method"):
            learning.fit(data, model, method)
    with pytest.raises(ValueError, match="Boltzmann machines only"):
        learning.fit(data, model, "mle", bias=False)
    for solver in (np.array(["a", "b"]), ["lbfgs"]):  # an array raised 'truth value ...'
        with pytest.raises(ValueError, match=r"options \['solver'\] apply to Boltzmann"):
            learning.fit(data, model, "mple", solver=solver)
    with pytest.raises(ValueError, match="unknown options"):
        learning.fit(data, model, "mle", gauge="zero-sum")
    with pytest.raises(ValueError, match="gauge"):
        learning.fit(data, model, "lap", gauge="mean")
    with pytest.raises(ValueError, match="init"):
        learning.fit(data, model, "mple", init=FactorGraph([2], [(0,)], [[0.0, 0.0]]))
    with pytest.raises(ValueError, match="scheduler 'nonsense'"):
        learning.fit(data, model, "lap", scheduler="nonsense")


def test_init_with_a_zero_weight_is_refused_by_name(small):
    """An ``init`` table with a -inf entry has no normalized potentials: the error names
    ``init`` (it named only "model")."""
    model, data = small
    tables = [t.copy() for t in model.log_tables]
    tables[1][0, 0] = -np.inf
    init = FactorGraph(model.cardinalities, model.scopes, tables)
    for method in ("mle", "mple"):
        with pytest.raises(ValueError, match="init must have finite log-tables"):
            learning.fit(data, model, method, init=init)


def test_init_at_the_optimum_stops_at_once(small):
    model, data = small
    first = learning.fit(data, model, "mple", tol=1e-9)
    again = learning.fit(data, model, "mple", tol=1e-6, init=first.model)
    assert again.n_steps <= 1 and _max_diff(first.model, again.model) < 1e-6
    assert first.history.shape[0] == first.params.shape[0]
    assert math.isfinite(first.seconds)


def test_a_variable_of_one_state_is_learned_by_every_method():
    """A cardinality-1 variable has no free potential: LAP raised numpy's 'cannot unravel
    if shape has zero entries'; all three methods now agree."""
    rng = np.random.default_rng(0)
    x = np.c_[np.zeros(40, int), rng.integers(0, 3, 40), rng.integers(0, 2, 40)]
    s = FactorGraph([1, 3, 2], [(0, 1), (1, 2), (0,)],
                    [np.zeros((1, 3)), np.zeros((3, 2)), np.zeros(1)])
    fits = [learning.fit(x, s, m).model for m in ("mle", "mple", "lap")]
    for other in fits[1:]:
        for a, b in zip(fits[0].log_tables, other.log_tables):
            np.testing.assert_allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("method", ["mle", "mple"])
def test_max_steps_bounds_the_steps_taken(method):
    """The quasi-Newton polish after L-BFGS added up to 50 steps beyond ``max_steps``
    (``max_steps=1`` ran 51 on a chain whose MLE does not exist); it now has only what
    ``max_steps`` leaves."""
    structure = FactorGraph([2, 2, 2], [(0, 1), (1, 2)], [np.zeros((2, 2))] * 2)
    data = np.array([[0, 0, 0], [1, 1, 1], [0, 0, 1]])  # the MLE does not exist
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for k in (1, 3):
            fit = learning.fit(data, structure, method, max_steps=k)
            assert fit.n_steps <= k and not fit.converged


def test_a_structure_whose_parameters_cannot_fit_is_refused_first(monkeypatch):
    """The map from normalized potentials to tables of one factor over 100^4 states has
    1.5e9 non-zeros (69 GiB): the layout is sized before np.indices and the sparse matrix
    are built (else a MemoryError), its bound covering the real count."""
    from mrflib._support import validation as _validation

    structure = FactorGraph([3] * 8, [tuple(range(8))], [np.zeros((3,) * 8)])
    data = np.zeros((4, 8), dtype=np.int64)
    lay = _layout.Layout(structure)
    assert lay.A.nnz <= 5**8 - 3**8  # the bound: Π(2c - 1) - Π c, 18 MB at 48 bytes each
    monkeypatch.setattr(_validation, "available_memory", lambda: 2**23)
    for method in table_learners.METHODS:
        with pytest.raises(ValueError, match=r"parameters of the structure .* would need"):
            learning.fit(data, structure, method)


@pytest.mark.parametrize("rows", [1, 2])
def test_lap_without_an_estimate_is_not_converged(small, rows):
    """With one or two samples some factor state is never seen: MLE, MPLE and LAP all
    have no estimate, and LAP says so instead of reporting its auxiliary fits as
    converged."""
    model, data = small
    for method in ("mple", "lap"):
        with pytest.warns(RuntimeWarning, match="does not exist"):
            fit = learning.fit(data[:rows], model, method)
        assert not fit.converged and "does not exist" in fit.stop_reason


def test_lap_with_an_unseen_state_or_a_constant_column_is_not_converged(small):
    model, data = small
    constant = data.copy()
    constant[:, 1] = 0
    unseen = data.copy()
    unseen[unseen[:, 0] == 2, 0] = 1  # state 2 of variable 0 never occurs
    for x in (constant, unseen):
        with pytest.warns(RuntimeWarning, match="does not exist"):
            fit = learning.fit(x, model, "lap")
        assert not fit.converged and fit.stop_reason.startswith("the LAP does not exist")
