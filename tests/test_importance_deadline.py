"""Importance sampling under a time limit polls its deadline inside a batch, the first one
included, without changing the draws of a run the deadline does not cut."""

from __future__ import annotations

import types

import numpy as np
import pytest
from _random_factor_graphs import random_factor_graph

from mrflib.inference.approx import importance as imp
from mrflib.models import lattices


def _proposal():
    """A mini-bucket proposal that is not exact (i-bound 1 on a model with loops)."""
    model = random_factor_graph(np.random.default_rng(3), n=6, n_factors=8, zeros=0.2,
                                max_card=3, max_scope=3)
    prop = imp.wmb_proposal(model, ibound=1)
    assert not prop.exact
    return model, prop


def test_a_deadline_already_past_draws_one_tiny_batch():
    model, prop = _proposal()
    runs = list(imp.importance_estimates(model, rng=0, time_limit=0.0, proposal=prop))
    assert len(runs) == 1
    assert 1 <= runs[0].n_samples < imp.FIRST_BATCH


def test_the_first_batch_stops_at_the_deadline_it_polls(monkeypatch):
    model, prop = _proposal()
    calls = []
    sample = prop.sample

    def counted(n, rng, whole=True):
        calls.append(n)
        return sample(n, rng, whole=whole)

    # the clock passes the deadline once two pieces are drawn: the batch ends there
    clock = types.SimpleNamespace(perf_counter=lambda: 0.0 if len(calls) < 2 else 1e9)
    monkeypatch.setattr(prop, "sample", counted)
    monkeypatch.setattr(imp, "time", clock)
    runs = list(imp.importance_estimates(model, rng=0, time_limit=10.0, proposal=prop))
    assert len(runs) == 1
    assert runs[0].n_samples == sum(calls) < imp.FIRST_BATCH


def test_a_deadline_not_reached_leaves_the_draws_unchanged():
    model, prop = _proposal()
    free = imp.importance_sampling(model, rng=5, n_samples=300, proposal=prop)
    timed = imp.importance_sampling(model, rng=5, n_samples=300, time_limit=1e6,
                                    proposal=prop)
    assert timed.n_samples == free.n_samples == 300
    assert timed.log_partition == free.log_partition
    assert timed.lower == free.lower


def test_a_first_pass_past_the_deadline_gives_way_to_mean_field(monkeypatch):
    """The first mini-bucket pass polls the caller's deadline: on a model whose first pass
    cannot end in time the default proposal is mean field's, within the time, not a late
    mini-bucket one."""
    model, _ = _proposal()
    with pytest.raises(TimeoutError):
        imp.wmb_proposal(model, first_limit=0.0)
    assert imp.default_proposal(model, time_limit=0.0).kind == "mean-field"
    # without a limit the first pass always ends
    assert imp.default_proposal(model).kind == "wmb"
    with pytest.raises(ValueError, match="first_limit"):
        imp.wmb_proposal(model, first_limit=-1.0)


def test_a_deadline_the_first_pass_meets_leaves_the_proposal_unchanged():
    model, _ = _proposal()
    free = imp.wmb_proposal(model, ibound=1)
    timed = imp.wmb_proposal(model, ibound=1, first_limit=1e6)
    assert timed.log_upper_bound == free.log_upper_bound
    assert np.array_equal(timed.sample(50, np.random.default_rng(0))[0],
                          free.sample(50, np.random.default_rng(0))[0])


def test_tables_past_the_memory_are_refused_as_such_not_as_a_timeout():
    """A first run whose tables cannot fit says so with their size (a ``ValueError``), not
    that no pass ended in time."""
    model = lattices.potts_lattice(12, 12, 8, rng=0)
    with pytest.raises(ValueError, match="weighted mini-bucket tables .* of memory"):
        imp.wmb_proposal(model, memory=1e14)
    with pytest.raises(TimeoutError, match="first_limit = 0.0 s"):
        imp.wmb_proposal(model, first_limit=0.0)
