"""LAP's pairwise kernels (:mod:`mrflib.learning._pairwise_lap_kernels`): the objective
against the plain numpy reference, the fits against the reference and the general kernel,
on lattices and random graphs of 2, 3 and 5 states, with fields, unseen states and constant
columns; fixed bits under any thread count."""

from __future__ import annotations

import numpy as np
import pytest

from mrflib import FactorGraph, learning
from mrflib.inference.sampling import chains
from mrflib.learning import _factor_lap_kernels as flk
from mrflib.learning import _lap_warm_start, potentials, table_learners
from mrflib.learning import _pairwise_lap_kernels as plk
from mrflib.models import lattices

TOL = 1e-12  # the Newton tolerance of learning.fit's LAP
ATOL = 1e-8  # Newton's and the chord steps' estimates agree to this (sqrt(2 TOL) = 1.4e-6)


def _random_graph(n, cards, p_edge, fields, seed):
    """A pairwise factor graph on an Erdos-Renyi graph (every variable in some edge), the
    cardinalities cycled from ``cards``, unary factors on ``fields`` of the variables."""
    rng = np.random.default_rng(seed)
    card = [cards[i % len(cards)] for i in range(n)]
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p_edge]
    edges += [(i, i + 1) for i in range(n - 1)
              if not any(i in e for e in edges) or not any(i + 1 in e for e in edges)]
    scopes = [(i,) for i in range(n) if rng.random() < fields] + sorted(set(edges))
    tables = [rng.normal(0, 0.6, tuple(card[v] for v in s)) for s in scopes]
    return FactorGraph(card, scopes, tables)


def _data(model, N, seed):
    return np.asarray(chains.gibbs(model, N, burn_in=30, thin=3, n_chains=10, rng=seed))


def _case(name):
    """``(model, data, l2)`` of a named case."""
    if name.startswith("potts"):
        q = int(name[-1])
        model = lattices.potts_lattice(3, 4, q, coupling=0.5, field_scale=0.4, rng=q)
        return model, _data(model, 600, q), 0.0
    if name == "random-mixed":
        model = _random_graph(7, [2, 3, 5], 0.4, 0.6, 1)
        return model, _data(model, 800, 2), 0.0
    if name == "random-q3-no-fields":
        model = _random_graph(6, [3], 0.5, 0.0, 3)
        return model, _data(model, 500, 4), 0.0
    model = lattices.potts_lattice(3, 3, 3, coupling=0.5, rng=5)
    data = _data(model, 300, 6)
    data[data[:, 4] == 2, 4] = 1  # a state never seen: no finite ML without the ridge
    data[:, 7] = 0  # a constant column
    return model, data, 0.5


CASES = ["potts-q2", "potts-q3", "potts-q5", "random-mixed", "random-q3-no-fields",
         "unseen-state-and-constant-column"]


def _structures(model):
    scopes, card = model.scopes, np.asarray(model.cardinalities)
    ks = sorted(set(potentials.clique_owners(scopes).values()))
    structs = [table_learners._lap_structure(
        card, scopes, k, [c for c, s in enumerate(scopes) if set(s) & set(scopes[k])])
        for k in ks]
    return ks, structs


def _packed(model, data):
    card = np.asarray(model.cardinalities, dtype=np.int64)
    ks, structs = _structures(model)
    x_t = table_learners._by_variable(data, card)
    return ks, structs, (x_t, card, *table_learners._lap_pack(card, structs))


def _pairwise_fits(packed, K, l2, threads_todo=None, init=None):
    d_ptr = packed[-1]
    theta, iters, conv = np.zeros(d_ptr[K]), np.zeros(K, np.int64), np.zeros(K, bool)
    todos = threads_todo or [np.arange(K, dtype=np.int64)]
    for todo in todos:
        plk.fit_factors(*packed, todo, l2, TOL, 100, table_learners._RIDGE,
                        np.zeros(d_ptr[K]) if init is None else init, theta, iters, conv)
    return theta, iters, conv


@pytest.mark.parametrize("name", CASES)
def test_objective_equals_the_numpy_reference(name):
    """ℓ, its gradient and Hessian at random θ, every factor: the base-function kernel
    against the reference's dense features (and the Hessian-free evaluation's ℓ and
    gradient are the same numbers)."""
    model, data, l2 = _case(name)
    ks, structs, packed = _packed(model, data)
    x_t, card, l_ptr, l_vars, q_len, t_ptr, b_ptr, b_pos, t_off, d_ptr = packed
    rng = np.random.default_rng(0)
    for i, k in enumerate(ks):
        D = int(d_ptr[i + 1] - d_ptr[i])
        prob = plk._problem(x_t, l_vars[l_ptr[i]:l_ptr[i + 1]], q_len[i], card, t_ptr[i],
                            t_ptr[i + 1], b_ptr, b_pos, t_off, D)
        ref = table_learners._lap_objective_numpy(
            table_learners._lap_setup_numpy(data, card, model.scopes, k), l2)
        for _ in range(2):
            th = rng.normal(0, 0.7, D)
            ll, g, H = plk._evaluate(th, prob, l2, True)
            ll0, g0, _ = plk._evaluate(th, prob, l2, False)
            want = ref(th)
            np.testing.assert_allclose(ll, want[0], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(g, want[1], rtol=0, atol=1e-12)
            np.testing.assert_allclose(H, want[2], rtol=0, atol=1e-12)
            assert ll0 == ll and np.array_equal(g0, g)


@pytest.mark.parametrize("name", CASES)
def test_fits_equal_the_general_kernel_and_the_numpy_reference(name):
    """Every factor's auxiliary θ from the pairwise kernel against the general kernel's
    (exact Newton), and the potentials of the whole chunk against the numpy reference."""
    model, data, l2 = _case(name)
    ks, structs, packed = _packed(model, data)
    assert all(table_learners._pairwise(st) for st in structs)
    theta, iters, conv = _pairwise_fits(packed, len(ks), l2)
    theta0, iters0, conv0 = flk.fit_factors(*packed, l2, TOL, 100, table_learners._RIDGE)
    assert conv.all() and conv0.all()
    np.testing.assert_allclose(theta, theta0, rtol=0, atol=ATOL)
    owned: dict[int, list] = {}
    for B, k in potentials.clique_owners(model.scopes).items():
        owned.setdefault(k, []).append(B)
    args = (data, np.asarray(model.cardinalities), model.scopes, "reference", l2, TOL, 100,
            sorted(owned.items()))
    got, want = table_learners._lap_chunk(*args), table_learners._lap_chunk_numpy(*args)
    for (k, a, _, ok, *_), (k0, b, _, ok0) in zip(got, want):
        assert k == k0 and ok and ok0 and a.keys() == b.keys()
        for B in a:
            np.testing.assert_allclose(a[B], b[B], rtol=0, atol=ATOL)


def test_a_factor_fit_is_the_same_bits_in_any_order_and_split():
    """The factors fitted in one call, in reverse order, or dealt to three calls (as the
    threads get them) give the same bits."""
    model, data, l2 = _case("random-mixed")
    ks, _, packed = _packed(model, data)
    K = len(ks)
    one = _pairwise_fits(packed, K, l2)
    rev = _pairwise_fits(packed, K, l2, [np.arange(K - 1, -1, -1, dtype=np.int64)])
    dealt = _pairwise_fits(packed, K, l2, [np.arange(r, K, 3, dtype=np.int64)
                                           for r in range(3)])
    for other in (rev, dealt):
        for a, b in zip(one, other):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("name", ["potts-q3", "random-q3-no-fields"])
def test_fit_is_seeded_and_independent_of_the_thread_count(name):
    model, data, l2 = _case(name)
    fits = [learning.fit(data, model, "lap", l2=l2, n_jobs=n) for n in (1, 1, 2, 3)]
    for f in fits:
        assert f.converged
    for f in fits[1:]:
        for a, b in zip(f.model.log_tables, fits[0].model.log_tables):
            assert np.array_equal(a, b)


def test_a_mixed_model_fits_its_pairwise_factors_by_the_pairwise_kernel():
    """A triangle factor beside pairs: the factors whose auxiliary model is pairwise go
    through the pairwise kernel, the others through the general one, and the whole fit is
    the numpy reference's."""
    rng = np.random.default_rng(2)
    card = [3, 2, 3, 2, 3]
    scopes = [(0,), (0, 1), (1, 2, 3), (2, 3), (3, 4), (4,)]
    model = FactorGraph(card, scopes, [rng.normal(0, 0.5, tuple(card[v] for v in s))
                                       for s in scopes])
    data = _data(model, 600, 3)
    _, structs = _structures(model)
    kinds = [table_learners._pairwise(st) for st in structs]
    assert any(kinds) and not all(kinds)
    got = learning.fit(data, model, "lap")
    want = table_learners._lap_reference(data, model)
    assert got.converged and want.converged
    for a, b in zip(got.model.log_tables, want.model.log_tables):
        np.testing.assert_allclose(a, b, rtol=0, atol=ATOL)


def test_a_time_limited_fit_runs_its_threads_here_and_batches_change_no_bits():
    """Pairwise fits on threads stay in this process, so a time limit holds with
    ``n_jobs > 1``: a limit of 0 fits the first factor only and says so; a generous limit
    (the fits in batches, the clock polled between them) gives the unlimited fit's bits."""
    model, data, l2 = _case("potts-q3")
    full = learning.fit(data, model, "lap", n_jobs=2, progress=False)
    part = learning.fit(data, model, "lap", n_jobs=2, time_limit=0, progress=False)
    assert not part.converged and "not a LAP estimate of the whole model" in part.stop_reason
    assert np.array_equal(part.model.log_tables[0], full.model.log_tables[0])
    assert not np.any(part.model.log_tables[-1])
    batched = learning.fit(data, model, "lap", n_jobs=2, time_limit=10**6, progress=False)
    assert batched.converged
    for a, b in zip(batched.model.log_tables, full.model.log_tables):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("name", CASES)
def test_a_fit_from_any_start_reaches_the_same_maximiser(name):
    """Each factor's fit started at a random point (as far as the warm starts never are)
    and at the one-variable factors' estimates gives the fit from zero's θ (the objective
    is concave: the start changes the steps, not the maximiser)."""
    model, data, l2 = _case(name)
    ks, structs, packed = _packed(model, data)
    K, d_ptr = len(ks), packed[-1]
    zero = _pairwise_fits(packed, K, l2)
    rng = np.random.default_rng(4)
    far = _pairwise_fits(packed, K, l2, init=rng.normal(0, 0.5, d_ptr[K]))
    warm = {model.scopes[k][0]: _lap_warm_start.warm_terms(st, zero[0][d_ptr[i]:d_ptr[i + 1]])
            for i, (k, st) in enumerate(zip(ks, structs)) if len(model.scopes[k]) == 1}
    near = _pairwise_fits(packed, K, l2, init=np.concatenate(
        [np.zeros(0)] + [_lap_warm_start.warm_start(st, warm) for st in structs]))
    for other in (far, near):
        assert other[2].all()
        np.testing.assert_allclose(other[0], zero[0], rtol=0, atol=ATOL)


def test_the_warm_start_reads_the_one_variable_factors_fits():
    """A pair's start: its own potential at the mean of its two variables' estimates, each
    variable's field and its other pairs at that variable's estimate, the rest zero."""
    model = lattices.potts_lattice(2, 3, 3, coupling=0.5, rng=1)
    card = np.asarray(model.cardinalities)
    vf = table_learners._factors_of(model.scopes)
    st = {k: table_learners._lap_structure(card, model.scopes, k,
                                           sorted({c for v in model.scopes[k] for c in vf[v]}))
          for k in range(len(model.scopes))}
    edge = model.scopes.index((0, 1))
    rng = np.random.default_rng(0)
    warm = {v: _lap_warm_start.warm_terms(st[v], rng.normal(size=st[v]["D"]))
            for v in (0, 1)}
    start = _lap_warm_start.warm_start(st[edge], warm)
    for t, B in enumerate(st[edge]["terms"]):
        got = start[st[edge]["off"][t]:st[edge]["off"][t + 1]]
        seen = [warm[v][B] for v in (0, 1) if B in warm[v]]
        want = sum(seen) / len(seen) if seen else np.zeros_like(got)
        assert len(seen) == (2 if B == (0, 1) else 1)
        assert np.array_equal(got, want)


@pytest.mark.parametrize("name", ["potts-q2", "potts-q5"])
def test_warm_started_fits_take_fewer_steps(name):
    """On lattices with fields, the pairs' fits from the one-variable factors' estimates
    take fewer Newton steps in all than from zero (the point of the warm start; on a small
    random graph with few fields the starts are rougher and need not save steps)."""
    model, data, l2 = _case(name)
    owned: dict[int, list] = {}
    for B, k in potentials.clique_owners(model.scopes).items():
        owned.setdefault(k, []).append(B)
    pairs = [job for job in sorted(owned.items()) if len(model.scopes[job[0]]) == 2]
    args = (data, np.asarray(model.cardinalities), model.scopes, "reference", l2, TOL, 100)
    warm = {model.scopes[k][0]: terms
            for k, _, _, _, terms in table_learners._lap_chunk(*args, sorted(owned.items()))
            if terms is not None}
    cold = table_learners._lap_chunk(*args, pairs)
    hot = table_learners._lap_chunk(*args, pairs, warm=warm)
    assert sum(r[2] for r in hot) < sum(r[2] for r in cold)


@pytest.mark.parametrize("name", ["potts-q3", "random-mixed"])
def test_the_chunks_give_the_same_bits_however_the_factors_are_split(name):
    """The one-variable factors fitted in the same chunk as the pairs, or in chunks before
    them (their estimates passed on as ``warm``), give every factor the same bits."""
    model, data, l2 = _case(name)
    owned: dict[int, list] = {}
    for B, k in potentials.clique_owners(model.scopes).items():
        owned.setdefault(k, []).append(B)
    jobs = sorted(owned.items(), key=lambda job: (len(model.scopes[job[0]]) > 1, job[0]))
    args = (data, np.asarray(model.cardinalities), model.scopes, "reference", l2, TOL, 100)
    whole = table_learners._lap_chunk(*args, jobs)
    warm: dict = {}
    split = []
    for lo, hi in ((0, 2), (2, len(jobs) // 2 + 1), (len(jobs) // 2 + 1, len(jobs))):
        part = table_learners._lap_chunk(*args, jobs[lo:hi], warm=warm)
        warm.update({model.scopes[r[0]][0]: r[4] for r in part if r[4] is not None})
        split += part
    for (k, a, it, ok, _), (k0, b, it0, ok0, _) in zip(whole, split):
        assert (k, it, ok) == (k0, it0, ok0) and a.keys() == b.keys()
        for B in a:
            assert np.array_equal(a[B], b[B])


@pytest.mark.parametrize("name", CASES)
def test_reference_potentials_read_off_theta_equal_the_tables_inversion(name):
    """The reference gauge's potentials read off θ against the Möbius inversion of the
    touching factors' tables, to rounding."""
    model, data, l2 = _case(name)
    ks, structs, packed = _packed(model, data)
    theta = _pairwise_fits(packed, len(ks), l2)[0]
    d_ptr = packed[-1]
    card, scopes = np.asarray(model.cardinalities), model.scopes
    owned: dict[int, list] = {}
    for B, k in potentials.clique_owners(scopes).items():
        owned.setdefault(k, []).append(B)
    for i, (k, st) in enumerate(zip(ks, structs)):
        th = theta[d_ptr[i]:d_ptr[i + 1]]
        got = table_learners._reference_potentials(card, st, th, owned[k])
        want = table_learners._gauge_potentials(card, scopes, st, th, owned[k], "reference")
        assert got.keys() == want.keys()
        for B in got:
            np.testing.assert_allclose(got[B], want[B], rtol=0, atol=1e-13)


def test_a_mixed_model_in_processes_gives_the_bits_of_one_process():
    """A triangle beside pairs goes to local processes with ``n_jobs=2`` (the one-variable
    factors in a first round, their estimates passed to the second): the bits of the fit
    in this process."""
    rng = np.random.default_rng(5)
    card = [3, 2, 3, 2, 3, 3]
    scopes = [(0,), (4,), (5,), (0, 1), (1, 2, 3), (2, 3), (3, 4), (4, 5)]
    model = FactorGraph(card, scopes, [rng.normal(0, 0.5, tuple(card[v] for v in s))
                                       for s in scopes])
    data = _data(model, 500, 7)
    one = learning.fit(data, model, "lap", progress=False)
    two = learning.fit(data, model, "lap", n_jobs=2, progress=False)
    assert one.converged and two.converged
    for a, b in zip(one.model.log_tables, two.model.log_tables):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("name", ["potts-q2", "random-mixed"])
def test_every_lap_chunk_takes_the_warm_terms(name):
    """Both chunk functions are called alike, with the one-variable factors' warm terms:
    the numpy reference, which fits every factor from zero (the reference of the fits
    themselves), takes them and gives the same results as without them."""
    model, data, l2 = _case(name)
    owned: dict[int, list] = {}
    for B, k in potentials.clique_owners(model.scopes).items():
        owned.setdefault(k, []).append(B)
    jobs = sorted(owned.items())
    args = (data, np.asarray(model.cardinalities), model.scopes, "reference", l2, TOL, 100)
    warm = {model.scopes[k][0]: terms
            for k, _, _, _, terms in table_learners._lap_chunk(*args, jobs)
            if terms is not None}
    assert warm
    cold = table_learners._lap_chunk_numpy(*args, jobs)
    hot = table_learners._lap_chunk_numpy(*args, jobs, warm=warm)
    for (k, a, it, ok), (k0, b, it0, ok0) in zip(cold, hot):
        assert (k, it, ok) == (k0, it0, ok0) and a.keys() == b.keys()
        for B in a:
            assert np.array_equal(a[B], b[B])
