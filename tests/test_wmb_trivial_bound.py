"""Weighted mini-bucket's certified bounds lie between ``log Z`` and the trivial bound
``Σ_k max θ_k + Σ_v log |X_v|``, which a mini-bucket pass with the model's own tables and
weights summing to one per bucket never exceeds (Hölder per bucket, then induction)."""

import math
import pathlib

import numpy as np
import pytest
from _random_factor_graphs import zeroed_model

from mrflib import FactorGraph
from mrflib.inference.approx import importance, wmb
from mrflib.inference.exact import enumeration as fe
from mrflib.io.anytime import trivial_answer

RA_120 = pathlib.Path(__file__).parent / "data" / "ra_cnf_120.txt"
TOL = 1e-9


def trivial(model):
    """The trivial bound in nats."""
    return trivial_answer(model, "PR") * math.log(10.0)


def random_cnf(seed):
    """4-9 binary variables, clauses of 1-3 literals as 0/1 tables (a planted state kept
    satisfiable, so that ``Z > 0``)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 10))
    planted = rng.integers(0, 2, n)
    scopes, tables = [], []
    for _ in range(int(rng.integers(n, 4 * n))):
        k = int(rng.integers(1, 4))
        s = tuple(rng.choice(n, size=k, replace=False).tolist())
        bad = rng.integers(0, 2, k)
        bad[0] = 1 - planted[s[0]]  # the planted state satisfies the clause
        t = np.zeros((2,) * k)
        t[tuple(bad)] = -np.inf
        scopes.append(s)
        tables.append(t)
    return FactorGraph(np.full(n, 2), scopes, tables)


def ra_120():
    """The clauses of the UAI 2014 problem ``ra.cnf`` among its first 120 variables: 2-CNF
    whose first matched pass, before any backward message, went far above the trivial
    bound at i-bound 9."""
    pairs = np.loadtxt(RA_120, dtype=np.int64, comments="#")
    table = np.zeros((2, 2))
    table[0, 0] = -np.inf  # x_a or x_b
    return FactorGraph(np.full(120, 2), [tuple(p) for p in pairs.tolist()],
                       [table] * len(pairs))


def _small_models():
    out = []
    for seed in range(40):
        m = zeroed_model(seed)
        if fe.log_partition(m) > -math.inf:
            out.append(m)
    out += [random_cnf(seed) for seed in range(20)]
    return out


SMALL = _small_models()


def _between(bound, log_z, top):
    assert log_z - TOL * (1 + abs(log_z)) <= bound <= top + TOL * (1 + abs(top))


@pytest.mark.parametrize("chunk", range(3))
def test_small_models_every_ibound(chunk):
    for model in SMALL[chunk::3]:
        log_z, top = fe.log_partition(model), trivial(model)
        for ibound in range(1, 5):
            _between(wmb.weighted_mini_bucket(model, ibound=ibound).log_upper, log_z, top)
            for res in wmb.wmb_passes(model, ibound=ibound, max_iter=4):
                _between(res.log_upper, log_z, top)
            prop = importance.wmb_proposal(model, ibound=ibound, passes=3)
            _between(prop.log_upper_bound, log_z, top)


@pytest.mark.parametrize("chunk", range(2))
def test_small_models_under_a_time_limit(chunk):
    for model in SMALL[chunk::2]:
        log_z, top = fe.log_partition(model), trivial(model)
        for res in wmb.growing_passes(model, 0.02, max_iter=3):
            _between(res.log_upper, log_z, top)
        _between(importance.wmb_proposal(model, time_limit=0.02).log_upper_bound, log_z, top)


# one pass per run, as a time limit may leave, and two
DENSE_2CNF_BOUNDS = {
    "wmb_passes": lambda m: [r.log_upper for r in wmb.wmb_passes(m, ibound=9, max_iter=2)],
    "weighted_mini_bucket": lambda m: [wmb.weighted_mini_bucket(m, ibound=9,
                                                                max_iter=1).log_upper],
    "growing_passes": lambda m: [r.log_upper for r in wmb.growing_passes(m, 0.5, max_iter=2)],
    "wmb_proposal": lambda m: [importance.wmb_proposal(m, ibound=9, passes=p).log_upper_bound
                               for p in (1, 2)],
    "wmb_proposal_timed": lambda m: [importance.wmb_proposal(m, time_limit=0.5,
                                                             passes=1).log_upper_bound],
}


@pytest.mark.parametrize("api", sorted(DENSE_2CNF_BOUNDS))
def test_dense_2cnf_within_the_trivial_bound(api):
    model = ra_120()
    top = trivial(model)
    for bound in DENSE_2CNF_BOUNDS[api](model):
        assert bound <= top
