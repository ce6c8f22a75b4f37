"""The pairwise kernels of learning: the pseudo-likelihood and its gradient, and 1-SMCI of
the factor scopes, against the general kernels, their numpy references and enumeration
(q = 2, 3, 5; lattices and random graphs; fields, zero weights, all-zero tables and
log-weights), their threads, and the fits they serve against the general path's."""

import json
import subprocess
import sys

import numpy as np
import pytest

from mrflib import FactorGraph, learning
from mrflib.inference import exact
from mrflib.inference.sampling import _pairwise
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.inference.smci import _pairwise_scopes as ps
from mrflib.inference.smci import _pairwise_scopes_kernels as psk
from mrflib.inference.smci import regions
from mrflib.learning import _pairwise_likelihood as ppl
from mrflib.learning import _pairwise_likelihood_kernels as pplk
from mrflib.learning import stochastic_learning
from mrflib.learning._contexts import Contexts
from mrflib.learning._layout import Layout, data_marginals
from mrflib.models import lattices
from mrflib.models.factor_graph import all_states


def _random_pairwise(seed, card, p_edge=0.6, scale=0.8, zeros=0.0):
    """A random graph's pairwise model with fields, zero weights where asked (one planted
    state keeps positive weight) and one pair carried by two factors."""
    rng = np.random.default_rng(seed)
    n = len(card)
    planted = [int(rng.integers(c)) for c in card]
    scopes = [(i,) for i in range(n)]
    tables = [rng.normal(scale=scale, size=c) for c in card]
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < p_edge:
                s = (i, j) if rng.random() < 0.5 else (j, i)
                t = rng.normal(scale=scale, size=(card[s[0]], card[s[1]]))
                t[rng.random(t.shape) < zeros] = -np.inf
                t[planted[s[0]], planted[s[1]]] = 0.0
                scopes.append(s)
                tables.append(t)
    scopes.append(scopes[-1][::-1])
    tables.append(rng.normal(scale=scale, size=tables[-1].shape[::-1]))
    return FactorGraph(card, scopes, tables)


def _big_field(model):
    """The model with a field spanning 700 in log-weight: the kernels add logs."""
    c = int(model.cardinalities[0])
    field = np.zeros(c)
    field[1] = -700.0
    return FactorGraph(model.cardinalities, list(model.scopes) + [(0,)],
                       list(model.log_tables) + [field])


def _models():
    out = {f"lattice q={q}": lattices.potts_lattice(3, 3, q, coupling=0.6,
                                                     couplings="mixed", rng=q)
           for q in (2, 3, 5)}
    out["random graph q=2..5"] = _random_pairwise(1, [2, 3, 5, 3, 2, 4, 5])
    out["random graph, zeros"] = _random_pairwise(2, [3, 3, 2, 5, 4, 3], zeros=0.3)
    lat = lattices.potts_lattice(2, 3, 3, rng=0)
    out["all-zero tables"] = FactorGraph(lat.cardinalities, lat.scopes,
                                         [np.zeros_like(t) for t in lat.log_tables])
    out["log-weights"] = _big_field(_random_pairwise(3, [3, 4, 3, 2, 3]))
    out["isolated variable"] = FactorGraph([3, 2, 4], [(0, 1), (2,)],
                                           [np.arange(6.0).reshape(3, 2), np.ones(4)])
    return out


MODELS = _models()


def _data(model, N=60, seed=0):
    return np.ascontiguousarray(exact.sample(model, N, rng=seed), dtype=np.int64)


def _pw(model):
    packed = factor_gibbs.pack(model)
    return _pairwise.structure(*packed[4:], np.asarray(model.cardinalities, dtype=np.int64)), \
        packed


# ------------------------------------------------------------------ pseudo-likelihood
@pytest.mark.parametrize("name", list(MODELS))
def test_pseudo_likelihood_matches_the_contexts_and_the_numpy_reference(name):
    model = MODELS[name]
    x = _data(model)
    flat = factor_gibbs.flat_tables(model)
    pl = ppl.objective(model, x)
    assert pl is not None
    value, grad = pl(flat)
    general = Contexts(Layout(model), x)(flat)
    reference = ppl._pseudo_log_likelihood_numpy(pl.pw, flat, x)
    assert value == pytest.approx(general[0], abs=1e-12)
    assert value == pytest.approx(reference[0], abs=1e-12)
    np.testing.assert_allclose(grad, general[1], atol=1e-13)
    np.testing.assert_allclose(grad, reference[1], atol=1e-13)


CONTEXT_MODELS = dict(MODELS, **{"log-weights q=5": _big_field(MODELS["lattice q=5"])})


def _points(model, seed, count=3):
    """The model's own tables, then ``count - 1`` random points of its family (zeros
    kept: an entry of weight zero stays zero)."""
    flat = factor_gibbs.flat_tables(model)
    rng = np.random.default_rng(seed)
    return [flat] + [np.where(np.isfinite(flat), rng.normal(scale=1.5, size=flat.size),
                              flat) for _ in range(count - 1)]


@pytest.mark.parametrize("name", list(CONTEXT_MODELS))
def test_pseudo_likelihood_over_contexts_equals_the_rows_and_the_references(name):
    """Every variable over its distinct contexts (the four-state registers for q <= 4,
    the trie beyond), against every variable row by row, the numpy reference and the
    general contexts, at the model and at random points: value and gradient to rounding."""
    model = CONTEXT_MODELS[name]
    x = _data(model, 80, 5)
    pw, _ = _pw(model)
    by_ctx, by_row = ppl.PairwisePL(pw, x, contexts=True), ppl.PairwisePL(pw, x, contexts=False)
    assert by_ctx.chosen.all() and not by_row.chosen.any()
    # each variable's rows are one block of the weights (the linear part sums blocks)
    owner = np.repeat(np.arange(len(pw.card)), np.diff(pw.nptr))
    end = np.append(pw.uoff[1:], pw.size)
    assert np.all((pw.noff >= pw.uoff[owner]) & (pw.noff < end[owner]))
    general = Contexts(Layout(model), x)
    for flat in _points(model, 7):
        value, grad = by_ctx(flat)
        for other in (by_row(flat), general(flat),
                      ppl._pseudo_log_likelihood_numpy(pw, flat, x)):
            assert value == pytest.approx(other[0], rel=1e-12, abs=1e-12)
            np.testing.assert_allclose(grad, other[1], rtol=1e-10, atol=1e-12)
        assert by_ctx(flat, want_grad=False)[0] == value


@pytest.mark.parametrize("q", [2, 3, 4, 5])
def test_pseudo_likelihood_over_contexts_against_enumeration(q):
    """The value over contexts against the enumerated conditionals of every sample, on a
    lattice and on a random graph, with fields; the gradient against central differences
    of the enumerated value."""
    from mrflib.learning import table_learners
    for model in (lattices.potts_lattice(3, 3, q, coupling=0.7, couplings="mixed", rng=q),
                  _random_pairwise(10 + q, [q] * 6)):
        x = _data(model, 50, q)
        pw, _ = _pw(model)
        pl = ppl.PairwisePL(pw, x, contexts=True)
        flat = factor_gibbs.flat_tables(model)
        value, grad = pl(flat)
        assert value == pytest.approx(
            table_learners._pseudo_log_likelihood_numpy(model, x), abs=1e-11)
        for e in np.random.default_rng(q).choice(flat.size, 6, replace=False):
            h = np.zeros(flat.size)
            h[e] = 1e-5
            up, down = pl(flat + h, False)[0], pl(flat - h, False)[0]
            assert grad[e] == pytest.approx((up - down) / 2e-5, abs=1e-6)


def _forbidding(q):
    """A variable of ``q`` states whose every state a neighbour's state 1 forbids."""
    rng = np.random.default_rng(q)
    pair = rng.normal(size=(q, 3))
    pair[:, 1] = -np.inf
    return FactorGraph([q, 3, 2], [(0, 1), (0, 2), (1,)],
                       [pair, rng.normal(size=(q, 2)), rng.normal(size=3)])


@pytest.mark.parametrize("name", ["random graph, zeros", "q=3 forbidden", "q=5 forbidden"])
@pytest.mark.parametrize("big_field", [False, True])
def test_pseudo_likelihood_over_contexts_of_zero_probability(name, big_field):
    """Contexts in which zeros forbid every state (four-state registers and the trie;
    weights and log-weights): the value is -inf and they add no gradient, as row by row."""
    model = MODELS.get(name) or _forbidding(int(name[2]))
    model = _big_field(model) if big_field else model
    rng = np.random.default_rng(4)
    x = np.stack([rng.integers(0, c, 80) for c in model.cardinalities], axis=1)
    pw, _ = _pw(model)
    flat = factor_gibbs.flat_tables(model)
    assert _pairwise.weights(pw, flat)[1] == big_field
    v_ctx, g_ctx = ppl.PairwisePL(pw, x, contexts=True)(flat)
    v_row, g_row = ppl.PairwisePL(pw, x, contexts=False)(flat)
    assert v_ctx == v_row == -np.inf
    np.testing.assert_allclose(g_ctx, g_row, atol=1e-12)


def test_pseudo_likelihood_mixes_contexts_and_rows():
    """Variables with few blanket states go by their distinct contexts, the others row by
    row, in one evaluation: both paths meet the contexts of the general kernel."""
    model = MODELS["lattice q=5"]
    x = _data(model, 60, 8)
    pl = ppl.objective(model, x)
    assert pl.chosen.any() and not pl.chosen.all()
    flat = factor_gibbs.flat_tables(model)
    value, grad = pl(flat)
    general = Contexts(Layout(model), x)(flat)
    assert value == pytest.approx(general[0], abs=1e-12)
    np.testing.assert_allclose(grad, general[1], atol=1e-13)


def test_pseudo_likelihood_of_rows_of_zero_weight_is_minus_infinity():
    """A row whose state some zero forbids: -inf, as the contexts give, and the gradient
    of the other rows."""
    model = MODELS["random graph, zeros"]
    rng = np.random.default_rng(4)
    x = np.stack([rng.integers(0, c, 80) for c in model.cardinalities], axis=1)
    flat = factor_gibbs.flat_tables(model)
    value, grad = ppl.objective(model, x)(flat)
    general = Contexts(Layout(model), x)(flat)
    assert value == general[0] == -np.inf
    np.testing.assert_allclose(grad, general[1], atol=1e-13)


def test_pseudo_likelihood_against_enumerated_conditionals():
    """Each conditional from the weights of every value of the variable, the rest held
    (table_learners's per-sample reference)."""
    from mrflib.learning import table_learners
    for name in ("lattice q=5", "random graph q=2..5", "log-weights"):
        model = MODELS[name]
        x = _data(model, 40, 1)
        assert table_learners.pseudo_log_likelihood(model, x) == pytest.approx(
            table_learners._pseudo_log_likelihood_numpy(model, x), abs=1e-11)


def test_pseudo_likelihood_kernels_give_the_same_bits_on_any_threads():
    model = lattices.potts_lattice(6, 7, 3, coupling=0.5, rng=1)
    x = _data(model, 300, 2)
    pl = ppl.objective(model, x)
    pw = pl.pw
    assert pl.chosen.any()
    outs = []
    for kernel in (pplk.pl_serial, pplk.pl_parallel):
        w, logs = _pairwise.weights(pw, factor_gibbs.flat_tables(model))
        grad, values = np.zeros(pw.size), np.zeros(len(pw.card))
        kernel(pl.xt, w, logs, True, pw.nptr, pw.nbr, pw.noff, pw.uoff, pw.card, pl.chosen,
               pl.cptr, pl.qoff, pl.soff, pl.states, pl.counts, pl.seen, pl.lin, grad, values)
        outs.append((grad, values))
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])


#: A fresh interpreter's fits of two models whose variables all go over their contexts
#: with at most four states, then the specialisations each kernel of the module holds.
_NARROW_FITS = """
import json
import numpy as np
from mrflib import BoltzmannMachine, graphs, learning
from mrflib.learning import _pairwise_likelihood_kernels as k
from mrflib.models import lattices
from mrflib.models.factor_graph import as_factor_graph
rng = np.random.default_rng(1)
potts = lattices.potts_lattice(4, 4, 3, rng=0)
learning.fit(rng.integers(0, 3, (400, 16)), potts, "mple", max_steps=3, record=False)
bm = as_factor_graph(BoltzmannMachine.random(graphs.square_grid(3, 3), 9, rng=0))
learning.fit(rng.integers(0, 2, (300, 9)), bm, "mple", max_steps=3, record=False)
from mrflib.inference.sampling import _checkerboard, _pairwise_kernels
colouring = [_checkerboard.two_colouring, _pairwise_kernels.greedy_colouring]
print(json.dumps({name: len(f.signatures) for name, f in vars(k).items()
                  if hasattr(f, "signatures")}
                 | {"colouring": sum(len(f.signatures) for f in colouring)}))
"""


def test_a_narrow_fit_compiles_the_narrow_kernels_alone_once():
    """A first fit whose variables all go over their contexts with at most four states
    (a q = 3 lattice, then a Boltzmann machine's factor graph) compiles neither the row
    path nor the trie's nor the sweeps' colouring, and one specialisation of each kernel
    it calls serves both models: a cold first call pays for the code it runs."""
    out = subprocess.run([sys.executable, "-c", _NARROW_FITS], capture_output=True,
                         text=True, check=True)
    signatures = json.loads(out.stdout.splitlines()[-1])
    for unused in ("_variable", "_by_contexts", "_one", "_scratch", "pl_serial",
                   "pl_parallel", "colouring"):  # no sweeps: no colours
        assert signatures[unused] == 0, unused
    for once in ("context_fill",):  # both its passes, one specialisation
        assert signatures[once] == 1, once
    evaluations = [signatures[name] for name in ("pl_narrow_products", "pl_narrow_logs",
                                                 "pl_narrow_parallel")]
    assert max(evaluations) == 1 and sum(evaluations) >= 1


@pytest.mark.parametrize("name", list(MODELS) + ["lattice 6x7 q=3"])
def test_the_context_counts_give_the_data_marginals_bit_for_bit(name):
    """Where every variable goes over its contexts, the marginals the existence test reads
    come from their counts: the very floats of a pass over the rows."""
    model = MODELS.get(name) or lattices.potts_lattice(6, 7, 3, rng=4)
    x = _data(model, 500, 1)
    pl = ppl.objective(model, x)
    lay = Layout(model)
    got = pl.data_marginals(int(lay.offsets[-1]))
    if not pl.chosen.all():
        assert got is None
        return
    assert np.array_equal(got, data_marginals(lay, x))


def test_structures_with_a_wider_factor_keep_the_contexts():
    tri = lattices.triangle_lattice(2, 3, 2, scale=0.5, rng=2)
    assert ppl.objective(tri, _data(tri, 10)) is None


@pytest.mark.parametrize("name", ["lattice q=3", "random graph q=2..5"])
def test_mple_reaches_the_general_paths_optimum(name, monkeypatch):
    model = MODELS[name]
    x = _data(model, 300, 3)
    kw = dict(tol=1e-10, l2=0.05)  # a ridge: an optimum whatever states the data miss
    fast = learning.fit(x, model, "mple", **kw)
    monkeypatch.setattr(ppl, "objective", lambda *a: None)
    general = learning.fit(x, model, "mple", **kw)
    assert fast.converged and general.converged
    for a, b in zip(fast.model.log_tables, general.model.log_tables):
        np.testing.assert_allclose(a, b, atol=1e-5)


# ---------------------------------------------------------------- 1-SMCI of the scopes
def _general_scopes(model, x):
    """The general kernel's 1-SMCI of every scope (flattened), whatever the zeros."""
    batch, counts = regions._batches(len(x), None)
    est = regions._factors_order_one(model, x, batch, counts, None,
                                     factor_gibbs.flat_tables(model))
    return np.concatenate([np.ravel(v) for v in est.values])


@pytest.mark.parametrize("name", list(MODELS))
def test_scope_marginals_match_the_general_kernel_and_the_numpy_reference(name):
    model = MODELS[name]
    x = _data(model)
    pw, packed = _pw(model)
    sp = ps.plan(pw, *packed[4:])
    flat = factor_gibbs.flat_tables(model)
    got = ps.flat_marginals(sp, flat, x)
    np.testing.assert_allclose(got, _general_scopes(model, x), atol=1e-13)
    np.testing.assert_allclose(got, ps._scope_sums_numpy(sp, flat, x), atol=1e-13)


@pytest.mark.parametrize("name", ["lattice q=2", "random graph, zeros", "log-weights"])
def test_scope_marginals_are_the_enumerated_conditionals(name):
    """For one row, each factor's value is ``P(x_S | x_rest)`` by enumerating the states
    that agree with the row off ``S``."""
    model = MODELS[name]
    x = _data(model, 1, 5)
    pw, packed = _pw(model)
    got = ps.flat_marginals(ps.plan(pw, *packed[4:]), factor_gibbs.flat_tables(model), x)
    states = all_states(model.cardinalities)
    with np.errstate(invalid="ignore"):
        lw = model.log_weight(states)
    at = 0
    for scope, table in zip(model.scopes, model.log_tables):
        rest = [v for v in range(model.n) if v not in scope]
        keep = np.all(states[:, rest] == x[0, rest], axis=1)
        p = np.exp(lw[keep] - lw[keep].max())
        want = np.zeros(table.shape)
        np.add.at(want, tuple(states[keep][:, list(scope)].T), p / p.sum())
        np.testing.assert_allclose(got[at:at + table.size], want.ravel(), atol=1e-12)
        at += table.size


def test_estimate_of_factor_marginals_keeps_its_batches():
    """``factor_marginals`` and its standard errors by batches, on the pairwise kernels,
    equal the general kernel's."""
    model = MODELS["random graph q=2..5"]
    x = factor_gibbs.gibbs(model, 400, burn_in=5, n_chains=40, rng=1)
    got = regions.estimate(model, x, targets="factors", n_chains=40)
    batch, counts = regions._batches(len(x), 40)
    want = regions._factors_order_one(model, np.ascontiguousarray(x), batch, counts, None,
                                      factor_gibbs.flat_tables(model))
    for a, b in zip(got.values + got.standard_errors,
                    want.values + want.standard_errors):
        np.testing.assert_allclose(a, b, atol=1e-13)


def test_scope_marginals_refuse_a_row_of_zero_weight():
    model = MODELS["random graph, zeros"]
    rng = np.random.default_rng(6)
    x = np.stack([rng.integers(0, c, 200) for c in model.cardinalities], axis=1)
    with np.errstate(invalid="ignore"):
        first = int(np.flatnonzero(model.log_weight(x) == -np.inf)[0])
    pw, packed = _pw(model)
    with pytest.raises(ValueError, match=rf"samples\[{first}\] has zero weight"):
        ps.flat_marginals(ps.plan(pw, *packed[4:]), factor_gibbs.flat_tables(model), x)


def test_scope_kernels_give_the_same_bits_on_any_threads():
    model = lattices.potts_lattice(6, 7, 3, coupling=0.5, rng=1)
    x = _data(model, 300, 2)
    pw, packed = _pw(model)
    sp = ps.plan(pw, *packed[4:])
    w, pe, logs = ps._weights(sp, factor_gibbs.flat_tables(model))
    xt = ps.transposed(sp, x)
    outs = []
    for kernel in (psk.scope_sums_serial, psk.scope_sums_parallel):
        vacc, pacc = np.zeros((1, sp.voff[-1])), np.zeros((1, sp.poff[-1]))
        bad = np.full(len(pw.card), -1, dtype=np.int64)
        kernel(xt, len(x), np.zeros(len(x), dtype=np.int64), True, w, pe, logs, True, pw.nptr,
               pw.nbr, pw.noff, pw.uoff, pw.card, sp.voff, sp.pslot, sp.poff, vacc, pacc, bad)
        outs.append((vacc, pacc))
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])


@pytest.mark.parametrize("method", ["1-smci", "smci-pcd"])
def test_learners_on_the_pairwise_scopes_equal_the_general_ones(method, monkeypatch):
    """The same steps with the general scope kernels (the chains' sampler unchanged; the
    general kernels read the chains in rows, which draw the site-major chains' bits)."""
    model = MODELS["lattice q=3"]
    x = _data(model, 200, 7)
    kw = dict(max_steps=15, rng=3)
    fast = learning.fit(x, model, method, **kw)
    monkeypatch.setattr(stochastic_learning._pairwise, "fixed_states", lambda pw: 0)
    monkeypatch.setattr(stochastic_learning._pairwise_scopes, "plan", lambda *a: None)
    real_step = stochastic_learning._Chains.step

    def general_step(self, tables):
        pairwise, self.pairwise = self.pairwise, None
        if self.plan is None:
            self.plan = regions.scope_plan(self.lay.structure,
                                           factor_gibbs.pack(self.lay.structure))
        try:
            return real_step(self, tables)
        finally:
            self.pairwise = pairwise

    monkeypatch.setattr(stochastic_learning._Chains, "step", general_step)
    general = learning.fit(x, model, method, **kw)
    np.testing.assert_allclose(fast.params, general.params, atol=1e-10)
