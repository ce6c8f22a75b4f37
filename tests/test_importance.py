"""Importance sampling of ``Z`` (:mod:`mrflib.inference.approx.importance`), its front
(``approx`` ``"importance"`` and ``log_partition``'s ``"auto"``) and ``solve --task PR``'s
estimates."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from _random_factor_graphs import random_factor_graph

from mrflib import FactorGraph, io
from mrflib.inference import approx, exact
from mrflib.inference.approx import importance as imp
from mrflib.io.solve import main as solve_main
from mrflib.models.factor_graph import all_states

DATA = Path(__file__).resolve().parents[1] / "mrflib" / "data" / "uai"


def model(seed: int, evidence: int = 2) -> FactorGraph:
    """Small random models with zeros (a quarter of the entries) and evidence."""
    return random_factor_graph(np.random.default_rng(seed), n=9, n_factors=12, zeros=0.25,
                               evidence=evidence)


SEEDS = range(8)


@pytest.mark.parametrize("seed", SEEDS)
def test_estimate_within_its_bounds_and_standard_errors(seed):
    """The mini-bucket proposal of i-bound 1 (so that the buckets split and the weights
    vary): exact log Z lies in the bounds and within 4 standard errors of the estimate."""
    fg = model(seed)
    logz = exact.log_partition(fg)
    r = imp.importance_sampling(fg, rng=seed, n_samples=2000, ibound=1)
    assert r.n_samples == 2000 and r.proposal == "wmb"
    assert r.lower - 1e-9 <= logz <= r.upper + 1e-9 and r.upper <= r.log_upper_bound
    assert abs(r.log_partition - logz) <= 4 * r.standard_error + 1e-9


@pytest.mark.parametrize("seed", SEEDS)
def test_weights_never_exceed_the_bound_and_their_mean_is_z(seed):
    """Every weight is at most the pass's bound on Z, and the mean weight is Z (unbiased:
    a state of positive weight without proposal mass would bias it low, a zero counted
    wrongly high), within 4 standard errors of the mean."""
    fg = model(seed)
    z = math.exp(exact.log_partition(fg))
    p = imp.wmb_proposal(fg, ibound=1)
    _, lw = p.sample(4000, np.random.default_rng(seed))
    assert np.all(lw <= p.weight_bound + 1e-9)
    w = np.exp(lw)
    assert abs(w.mean() - z) <= 4 * w.std(ddof=1) / math.sqrt(w.size) + 1e-12 * z


@pytest.mark.parametrize("seed", SEEDS)
def test_every_state_of_positive_weight_has_proposal_mass(seed):
    """Draws from the proposal, enough to see every state of a tiny model: each state of
    positive weight drawn; each drawn state's weight is 0 only when the model's is."""
    fg = random_factor_graph(np.random.default_rng(seed), n=4, n_factors=5, zeros=0.4,
                             max_card=2, evidence=1)
    p = imp.wmb_proposal(fg, ibound=1)
    x, lw = p.sample(4000, np.random.default_rng(seed))
    seen = {tuple(r) for r in x}
    states = all_states(fg.cardinalities)
    positive = {tuple(s) for s in states if fg.log_weight(s) > -math.inf}
    assert positive <= seen
    weights = np.array([fg.log_weight(r) for r in x])
    assert np.array_equal(np.isneginf(lw), np.isneginf(weights))


def test_same_seed_same_bits_and_another_seed_other_bits():
    fg = model(1)
    a = imp.importance_sampling(fg, rng=7, n_samples=500, ibound=1)
    b = imp.importance_sampling(fg, rng=np.random.default_rng(7), n_samples=500, ibound=1)
    c = imp.importance_sampling(fg, rng=8, n_samples=500, ibound=1)
    assert a.details["ess"] < 499  # the weights vary: another seed gives another mean
    assert (a.log_partition, a.lower, a.upper) == (b.log_partition, b.lower, b.upper)
    assert a.log_partition != c.log_partition
    front = [approx.marginals(fg, "importance", rng=7, n_samples=500, ibound=1)
             for _ in range(2)]
    assert front[0].log_partition == front[1].log_partition == a.log_partition
    assert all(np.array_equal(p, q) for p, q in zip(front[0].marginals, front[1].marginals))


def test_bounds_hold_with_the_stated_frequency():
    """A tiny model, 300 seeds of 40 samples each, delta = 0.2: the bounds fail on at most
    a fifth of the seeds (they are conservative: far fewer), and the probabilistic upper
    bound is below the certified one on most."""
    fg = random_factor_graph(np.random.default_rng(11), n=5, n_factors=6, zeros=0.2,
                             max_card=3)
    logz = exact.log_partition(fg)
    p = imp.wmb_proposal(fg, ibound=1)
    fails = tighter = 0
    for seed in range(300):
        r = imp.importance_sampling(fg, rng=seed, n_samples=40, proposal=p, delta=0.2)
        fails += not r.lower - 1e-9 <= logz <= r.upper + 1e-9
        tighter += r.upper < r.log_upper_bound
    assert fails <= 0.2 * 300
    assert tighter >= 150


@pytest.mark.parametrize("seed", range(4))
def test_mean_field_proposal_is_unbiased_and_bounded(seed):
    fg = model(seed)
    z = math.exp(exact.log_partition(fg))
    p = imp.mean_field_proposal(fg)
    assert p.weight_bound == math.inf
    _, lw = p.sample(40000, np.random.default_rng(seed))
    w = np.exp(lw)
    assert abs(w.mean() - z) <= 4 * w.std(ddof=1) / math.sqrt(w.size) + 1e-12 * z
    r = imp.importance_sampling(fg, rng=seed, n_samples=500, proposal=p)
    assert r.proposal == "mean-field" and r.lower <= math.log(z) <= r.upper


def test_bayesian_network_is_pruned_and_its_children_drawn():
    """A Bayesian network's barren CPTs are left out of the proposal (Z = 1 exactly) and
    its variables still drawn from their tables: the marginals are the network's."""
    rng = np.random.default_rng(0)
    scopes, tables = [], []
    for v in range(6):
        parents = tuple(rng.choice(v, size=min(v, 2), replace=False).tolist()) if v else ()
        t = rng.random((2,) * len(parents) + (2,)) + 0.1
        scopes.append(parents + (v,))
        tables.append(np.log(t / t.sum(axis=-1, keepdims=True)))
    fg = FactorGraph(np.full(6, 2), scopes, tables)
    res = approx.marginals(fg, "importance", rng=0, n_samples=4000)
    assert res.log_partition == pytest.approx(0.0, abs=1e-9)
    em = exact.marginals(fg)
    assert max(float(np.max(np.abs(a - b))) for a, b in zip(em, res.marginals)) < 0.05


def test_front_reports_estimate_bounds_and_marginals():
    fg = model(5)
    logz = exact.log_partition(fg)
    res = approx.marginals(fg, "importance", rng=0, n_samples=3000, ibound=1)
    lower, upper = res.log_partition_bounds
    assert res.method == "importance" and res.confidence == 1 - imp.DELTA
    assert lower - 1e-9 <= logz <= upper + 1e-9 and res.n_samples == 3000 and res.converged
    em = exact.marginals(fg)
    assert max(float(np.max(np.abs(a - b))) for a, b in zip(em, res.marginals)) < 0.1
    assert approx.log_partition(fg, "importance", rng=0, n_samples=3000, ibound=1) == \
        res.log_partition


def test_log_partition_auto_prefers_exact_then_samples_within_the_limit():
    fg = model(2)
    assert approx.log_partition(fg, "auto") == exact.log_partition(fg)
    # a 12 x 12 binary lattice: its exact plan does not fit a limit of 0 s
    n, side = 144, 12
    rng = np.random.default_rng(1)
    scopes = [(v,) for v in range(n)] + [
        (r * side + c, r * side + c + d) for r in range(side) for c in range(side)
        for d in (1, side) if (d == 1 and c + 1 < side) or (d == side and r + 1 < side)]
    tables = [rng.normal(scale=0.3, size=(2,) * len(s)) for s in scopes]
    grid = FactorGraph(np.full(n, 2), scopes, tables)
    with pytest.raises(ValueError, match="rng"):
        approx.log_partition(grid, "auto", time_limit=0.0)
    est = approx.log_partition(grid, "auto", time_limit=0.0, rng=0)
    _, hi = approx.log_partition_bounds(grid, time_limit=0.5)
    # a limit of 0 s leaves no time for a mini-bucket pass: a few samples of the mean-field
    # proposal, whose estimate exceeds log Z by log(1 / δ) with probability δ at most
    # (Markov's inequality, δ = 0.05), and may fall far below it
    assert -math.inf < est <= hi + math.log(20)


def test_zero_partition_is_certified():
    fg = FactorGraph([2, 2], [(0, 1)], [np.full((2, 2), -np.inf)])
    r = imp.importance_sampling(fg, rng=0, n_samples=10)
    assert r.log_partition == r.upper == r.lower == -math.inf


@pytest.mark.parametrize("bad", [dict(n_samples=0), dict(n_samples=None),
                                 dict(n_samples=10, delta=1.5), dict(n_samples=10, rng=None),
                                 dict(n_samples=10, proposal="wmb")])
def test_bad_arguments_are_refused(bad):
    args = {"rng": 0, **bad}
    with pytest.raises((ValueError, TypeError)):
        imp.importance_sampling(model(0), **args)


def test_solve_pr_writes_estimates_with_bounds(tmp_path, capsys):
    """A shipped problem whose exact answer does not come within the limit: the answers
    after the trivial one are importance sampling estimates (not the mini-bucket bound),
    the last within a log10 unit of the published log10 Z, with bounds on stderr."""
    out = tmp_path / "a.PR"
    stem = DATA / "ObjectDetection_11.uai"
    status = solve_main([str(stem), "--evid", f"{stem}.evid", "--task", "PR",
                         "--time-limit", "4", "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 0
    published = io.read_answer(f"{stem}.PR").value
    answer = io.read_answer(out).value
    assert "importance sampling" in err and "with probability 0.95" in err
    assert abs(answer - published) < 1.0


def test_solve_pr_bayesian_network_is_exact_at_once(tmp_path, capsys):
    """A Bayesian network in a MARKOV file, treewidth too large for the exact plan unless
    its barren CPTs are pruned: solved exactly at once (log10 Z = 0)."""
    rng = np.random.default_rng(0)
    n = 60
    scopes, tables = [], []
    for v in range(n):
        parents = tuple(rng.choice(v, size=min(v, 4), replace=False).tolist()) if v else ()
        t = rng.random((3,) * len(parents) + (3,)) + 0.1
        scopes.append(parents + (v,))
        tables.append(np.log(t / t.sum(axis=-1, keepdims=True)))
    path = tmp_path / "bn.uai"
    io.write_uai(FactorGraph(np.full(n, 3), scopes, tables), path)
    out = tmp_path / "a.PR"
    assert solve_main([str(path), "--task", "PR", "--time-limit", "2", "--out",
                       str(out)]) == 0
    assert "exact" in capsys.readouterr().err.splitlines()[-1]
    assert io.read_answer(out).value == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_kernel_draws_what_the_numpy_reference_draws(seed):
    """The same uniforms give the same states and log weights (zeros included) from the
    kernel as from the numpy reference, for both proposals and a pruned CPT's children."""
    fg = model(seed)
    for p in (imp.wmb_proposal(fg, ibound=1), imp.mean_field_proposal(fg)):
        steps = len(p.steps) + len(p.cpts)
        u = np.random.default_rng(seed).random((300, steps))
        x_ref = np.zeros((300, fg.n), dtype=np.int64)
        for v, value in p.red.observed.items():
            x_ref[:, v] = value
        x = x_ref.copy()
        want = p._sample_numpy(u, x_ref)
        got = p._log_weights(x, imp._kernels.draw(u, x, p._packed))
        assert np.array_equal(x, x_ref)
        assert np.array_equal(np.isneginf(got), np.isneginf(want))
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-12)


def test_log_partitions_default_is_auto_as_every_fronts():
    """One default rule: every approximate front's method defaults to ``"auto"``."""
    import inspect

    for fn in (approx.marginals, approx.log_partition, approx.map_assignment):
        assert inspect.signature(fn).parameters["method"].default == "auto"


def test_a_value_one_mini_bucket_forbids_is_never_drawn():
    """Equalities around a cycle, split across mini-buckets at i-bound 1: every factor is
    complete when its last variable is drawn, so no draw has weight zero (the mixture of
    the variable's mini-buckets would give the forbidden values mass), and the estimate
    stays unbiased."""
    n, q = 6, 3
    rng = np.random.default_rng(5)
    eq = np.where(np.eye(q, dtype=bool), 0.0, -np.inf)
    scopes = [(i, (i + 1) % n) for i in range(n)] + [(i,) for i in range(n)]
    tables = [eq] * n + [rng.normal(size=q) for _ in range(n)]
    fg = FactorGraph([q] * n, scopes, tables)
    p = imp.wmb_proposal(fg, ibound=1)
    assert not p.exact
    x, lw = p.sample(2000, np.random.default_rng(0))
    assert np.all(np.isfinite(lw)) and np.all(x == x[:, :1])
    w, z = np.exp(lw), math.exp(exact.log_partition(fg))
    assert abs(w.mean() - z) <= 4 * w.std(ddof=1) / math.sqrt(w.size) + 1e-12 * z
