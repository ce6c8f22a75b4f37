"""Stochastic learners of factor graphs (1-SMCI, CD, PCD, SMCI-PCD), tied parameters and
the L2 ridge of every factor-graph learner.

The learners that draw are checked against the exact MLE of small models (their error
falls as the chains and steps grow), 1-SMCI against its defining equations (the data's
factor marginals equal the 1-SMCI estimates on the data at its fixed point) and the ±1
learners; the kernels against their numpy references; tied fits against the form of the
truth.
"""

import numpy as np
import pytest

from mrflib import BoltzmannMachine, FactorGraph, exact, learning
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.inference.smci import regions as smci_factor_graph
from mrflib.learning import _stochastic_learning_kernels as _k
from mrflib.learning import stochastic_learning
from mrflib.learning._layout import Layout, data_marginals
from mrflib.learning.tying import Tie
from mrflib.models import lattices


def _max_error(fit, reference):
    return max(float(np.max(np.abs(a - b)))
               for a, b in zip(fit.model.log_tables, reference.model.log_tables))


@pytest.fixture(scope="module")
def potts():
    """A 2x3 Potts lattice of 3 states, its data and their exact MLE."""
    truth = lattices.potts_lattice(2, 3, 3, coupling=0.4, rng=0)
    data = exact.sample(truth, 3000, rng=1)
    return truth, data, learning.fit(data, truth, "mle")


@pytest.fixture(scope="module")
def triangles():
    """A lattice of 6 binary variables in 4 triangle factors, data and exact MLE."""
    truth = lattices.triangle_lattice(2, 3, 2, scale=0.5, rng=2)
    data = exact.sample(truth, 3000, rng=3)
    return truth, data, learning.fit(data, truth, "mle")


def _groups(model):
    """One field table for every variable, one Potts coupling per edge direction."""
    return ["field" if len(s) == 1 else ("h" if s[1] == s[0] + 1 else "v")
            for s in model.scopes]


# ------------------------------------------------------------------------- kernels
def test_factor_counts_kernel_matches_the_numpy_reference(triangles):
    truth, data, _ = triangles
    lay = Layout(truth)
    _, _, _, _, fptr, fvars, fstride, offsets = factor_gibbs.pack(truth)
    counts = _k.factor_counts(data, fptr, fvars, fstride, offsets, int(lay.offsets[-1]))
    assert np.array_equal(counts / len(data),
                          stochastic_learning._factor_marginals_numpy(lay, data))


def test_advance_makes_the_draws_of_gibbs_from_the_same_start(potts):
    truth, data, _ = potts
    start = np.ascontiguousarray(data[:50])
    want = factor_gibbs.gibbs(truth, 50, burn_in=3, init=start, n_chains=50, rng=7)
    got = factor_gibbs.advance(truth, start.copy(), 3, rng=7)
    assert np.array_equal(got, want)
    packed = factor_gibbs.pack(truth)[1:]
    assert np.array_equal(factor_gibbs.advance(truth, start.copy(), 3, rng=7,
                                               structure=packed), want)


def test_gibbs_memory_check_is_linear_in_the_variables():
    """40,000 variables and one chain need a few megabytes, which the memory check must
    allow (a check quadratic in the variables would ask for 25.6 GB)."""
    model = FactorGraph(np.full(40_000, 2), [(0,)], [np.array([0.0, 1.0])])
    x = factor_gibbs.gibbs(model, 1, burn_in=1, rng=0)
    assert x.shape == (1, 40_000)


def test_advance_refuses_bad_chains(potts):
    truth, data, _ = potts
    for bad in (data[:, :3].copy(), data.astype(np.int32), np.full((2, truth.n), 3)):
        with pytest.raises(ValueError, match="chains"):
            factor_gibbs.advance(truth, bad, 1, rng=0)


# --------------------------------------------------------------- convergence to the MLE
@pytest.mark.parametrize("method, kw", [
    ("pcd", dict(n_chains=1000)),
    ("smci-pcd", dict(samples=slice(1000))),
    ("smci-pcd", dict(estimator="mci")),
    ("cd", dict(k=5, n_chains=1000)),
])
@pytest.mark.parametrize("which", ["potts", "triangles"])
def test_learners_that_draw_approach_the_exact_mle(method, kw, which, request):
    """Few chains and steps leave the fit far from the MLE; 1000 chains and 1500 steps of
    the constant schedule bring every entry within 0.15 of it, for every seed tried (0.02
    to 0.08 seen). (The averaged schedule's rule: ``test_stochastic_stopping.py``.)"""
    truth, data, mle = request.getfixturevalue(which)
    if "samples" in kw:  # S_0: the first 1000 data rows
        kw = dict(samples=data[kw["samples"]])
    short = learning.fit(data, truth, method, rng=0, max_steps=20, learning_rate=0.5,
                         schedule="constant", **kw)
    fit = learning.fit(data, truth, method, rng=0, max_steps=1500, learning_rate=0.5,
                       record=False, schedule="constant", **kw)
    assert _max_error(fit, mle) < 0.15 < _max_error(short, mle)
    assert not fit.converged and "max_steps = 1500 reached" in fit.stop_reason


@pytest.mark.parametrize("which", ["potts", "triangles"])
def test_one_smci_solves_its_moment_equations(which, request):
    """1-SMCI learning's fixed point: the data's factor marginals equal the 1-SMCI
    estimates with the data as sample set (eq. (26)) on every parameter (``A^T``: the
    estimates of different scopes need not agree on the entries no parameter holds);
    an estimator close to the MLE."""
    truth, data, mle = request.getfixturevalue(which)
    fit = learning.fit(data, truth, "1-smci", learning_rate=2.0, tol=1e-7)
    assert fit.converged and fit.stop_reason.startswith("converged")
    est = smci_factor_graph.factor_marginals(fit.model, data, method="1-smci")
    lay = Layout(truth)
    gap = lay.A.T @ (data_marginals(lay, data) - np.concatenate([np.ravel(m) for m in est]))
    assert np.max(np.abs(gap)) < 1e-6
    assert _max_error(fit, mle) < 0.25


def test_ising_models_agree_with_the_spin_learners():
    """Through FactorGraph.from_boltzmann, PCD on the factor graph and the ±1 PCD both
    approach the exact MLE of the Boltzmann machine."""
    rng = np.random.default_rng(4)
    edges = np.array([[0, 1], [0, 2], [1, 2], [1, 3], [2, 3]])
    bm = BoltzmannMachine(rng.uniform(-0.3, 0.3, 4), edges, rng.uniform(-0.5, 0.5, 5))
    spins = exact.sample(bm, 3000, rng=5)
    mle = learning.fit(spins, bm, "mle").model
    fg = FactorGraph.from_boltzmann(bm)
    states = (spins > 0).astype(np.int64)
    fit = learning.fit(states, fg, "pcd", rng=6, max_steps=1500, learning_rate=0.5,
                       n_chains=1000, record=False).model.to_boltzmann()
    spin = learning.fit(spins, bm, "pcd", rng=6, max_steps=1500, n_chains=1000,
                        record=False).model
    for got in (fit, spin):
        assert np.max(np.abs(got.coupling - mle.coupling)) < 0.05
        assert np.max(np.abs(got.bias - mle.bias)) < 0.05
    one = learning.fit(states, fg, "1-smci", learning_rate=2.0).model.to_boltzmann()
    spin_one = learning.fit(spins, bm, "1-smci").model
    assert np.max(np.abs(one.coupling - spin_one.coupling)) < 0.05


# --------------------------------------------------------------------------- seeds
@pytest.mark.parametrize("method", ["cd", "pcd", "smci-pcd"])
def test_a_seed_fixes_every_bit(potts, method):
    truth, data, _ = potts
    runs = [learning.fit(data, truth, method, rng=seed, max_steps=15, n_chains=200)
            if method != "smci-pcd" else
            learning.fit(data, truth, method, rng=seed, max_steps=15)
            for seed in (11, 11, 12)]
    assert np.array_equal(runs[0].params, runs[1].params)
    assert not np.array_equal(runs[0].params, runs[2].params)
    if method != "cd":
        assert np.array_equal(runs[0].chains, runs[1].chains)


# ------------------------------------------------------------------ tied and ridge
def test_tied_potts_fits_recover_the_truth_form():
    """Data of a Potts lattice with one J per edge direction: every learner finds the
    two couplings; the untied MLE's tables are asymmetric, the symmetric tie's are not."""
    truth = lattices.potts_lattice(3, 3, 3, coupling=0.5, rng=0)
    groups = _groups(truth)
    J = {"h": 0.7, "v": 0.3}
    tables = [np.zeros(3) if g == "field" else J[g] * np.eye(3) for g in groups]
    truth = FactorGraph(truth.cardinalities, truth.scopes, tables)
    data = exact.sample(truth, 3000, rng=1)
    tie = Tie(truth, groups, form={"h": "potts", "v": "potts"})
    for method, kw in (("mle", {}), ("mple", {}), ("1-smci", dict(learning_rate=1.0)),
                       ("pcd", dict(max_steps=600, learning_rate=0.5, n_chains=1000)),
                       ("smci-pcd", dict(max_steps=600, learning_rate=0.5))):
        phi = learning.fit(data, truth, method, tie=tie, rng=2, **kw).params[-1]
        assert abs(phi[2] - 0.7) < 0.1 and abs(phi[3] - 0.3) < 0.1, (method, phi)
    sym = Tie(truth, range(len(truth.scopes)), form="symmetric")
    fit = learning.fit(data, truth, "mle", tie=sym)
    for s, t in zip(truth.scopes, fit.model.log_tables):
        if len(s) == 2:
            assert np.allclose(t, t.T, atol=1e-12)


def test_tie_maps_parameters_to_tables():
    model = FactorGraph([3, 3, 3], [(0,), (0, 1), (1, 2)],
                        [np.zeros(3), np.zeros((3, 3)), np.zeros((3, 3))])
    tie = Tie(model, ["u", "pair", "pair"], form={"pair": "symmetric"})
    assert tie.n_params == 2 + 5 and list(tie.shares) == [1, 1] + [2] * 5
    table = tie.model(np.arange(1.0, 8.0)).log_tables[1]
    assert table[0, 0] == 0 and np.array_equal(table, table.T)
    assert len(np.unique(table)) == 6
    potts = Tie(model, ["u", "pair", "pair"], form={"pair": "potts"})
    assert np.array_equal(potts.model(np.array([0, 0, 1.5])).log_tables[2], 1.5 * np.eye(3))
    free = Tie(model, ["u", "a", "b"])
    assert free.n_params == 2 + 8 + 8


@pytest.mark.parametrize("method", ["mle", "mple", "1-smci", "pcd"])
def test_l2_shrinks_the_parameters(potts, method):
    truth, data, _ = potts
    kw = dict(rng=3, max_steps=300, learning_rate=0.5) if method in ("1-smci", "pcd") else {}
    norms = [np.linalg.norm(learning.fit(data, truth, method, l2=l2, **kw).params[-1])
             for l2 in (0.0, 0.01, 0.1)]
    assert norms[0] > norms[1] > norms[2]


def test_l2_mle_is_the_penalized_optimum(potts):
    """At the ridge MLE, the likelihood's gradient A^T(p̂ - p) equals l2 θ."""
    truth, data, _ = potts
    fit = learning.fit(data, truth, "mle", l2=0.05)
    lay = Layout(truth)
    p = np.concatenate([np.ravel(m) for m in exact.factor_marginals(fit.model)])
    grad = lay.A.T @ (data_marginals(lay, data) - p)
    assert np.allclose(grad, 0.05 * fit.params[-1], atol=1e-6)


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad, match", [
    (np.full((5, 6), 3), r"data\[0, 0\] = 3 is outside"),
    (np.full((5, 6), np.nan), "data"),
    (np.zeros((5, 4), dtype=np.int64), "data"),
])
@pytest.mark.parametrize("method", ["1-smci", "pcd", "smci-pcd"])
def test_bad_data_is_refused(potts, bad, match, method):
    truth, _, _ = potts
    with pytest.raises(ValueError, match=match):
        learning.fit(bad, truth, method, rng=0)


def test_bad_options_are_refused(potts):
    truth, data, _ = potts
    cases = [
        (dict(method="pcd", kappa=2), "unknown options"),
        (dict(method="cd", extension_rate=2), "unknown options"),
        (dict(method="smci-pcd", estimator="s2-smci"), "estimator"),
        (dict(method="pcd", n_chains=5, extension_rate=1), "either n_chains"),
        (dict(method="pcd", learning_rate=-1.0), "learning_rate"),
        (dict(method="pcd", l2=-1.0), "l2"),
        (dict(method="mle", l2=np.nan), "l2"),
        (dict(method="lap", tie=[0] * len(truth.scopes)), "'lap' takes no tie"),
        (dict(method="mle", tie=[0, 1]), "one label per factor"),
        (dict(method="mle", tie=[[0]] * len(truth.scopes)), "hashable"),
        (dict(method="mle", tie=[0] * len(truth.scopes)), "same table shape"),
        (dict(method="mle", tie=Tie(lattices.potts_lattice(2, 2, 3, rng=0), None)), "made for"),
        (dict(method="pcd", tie=_groups(truth), init=truth), "init with a tie"),
        (dict(method="smci-pcd", samples=np.zeros((0, 6), dtype=np.int64)), "samples"),
        (dict(method="pcd", progress="yes"), "progress"),
    ]
    for kw, match in cases:
        with pytest.raises(ValueError, match=match):
            learning.fit(data, truth, rng=0, max_steps=2, **kw)
    with pytest.raises(ValueError, match="'potts' of group 'field'"):
        Tie(truth, _groups(truth), form={"field": "potts"})
    with pytest.raises(ValueError, match="form must be one of"):
        Tie(truth, _groups(truth), form="ising")
    with pytest.raises(ValueError, match="no factor has"):
        Tie(truth, _groups(truth), form={"diagonal": "potts"})
    with pytest.raises(TypeError, match="structure must be a FactorGraph"):
        Tie(np.zeros(3), None)
