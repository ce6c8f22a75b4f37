"""The factor-graph peers (pyGMs, pgmpy) and the generated benchmark problems agree with
enumeration on small models."""

from __future__ import annotations

import numpy as np
import pytest

from mrflib import exact
from mrflib.models import lattices as factor_models
from mrflib.repro import factor_graph_problems as fgp
from mrflib.repro import peers

pytest.importorskip("pygms")
pytest.importorskip("pgmpy")


def _mixed_potts(rows, cols, q, rng):
    return factor_models.potts_lattice(rows, cols, q, rng=rng, couplings="mixed")


@pytest.mark.parametrize("make", [lambda: _mixed_potts(2, 3, 3, 0),
                                  lambda: fgp.band_network(8, 6, 1, band=5)])
def test_peers_equal_enumeration(make):
    model = make()
    evidence = {1: 2 % int(model.cardinalities[1])}
    cond = model.condition(evidence)
    lz = exact.log_partition(cond, method="enumerate")
    mar = exact.marginals(cond, method="enumerate")
    fs = peers.pygms_factors(model)
    assert peers.pygms_log_partition(fs, evidence) == pytest.approx(lz, abs=1e-10)
    assert peers.pgmpy_log_partition(model, evidence) == pytest.approx(lz, abs=1e-10)
    order = exact.plan(cond).order  # a given order (ours): the same answers
    assert peers.pygms_log_partition(fs, evidence, order) == pytest.approx(lz, abs=1e-10)
    for theirs in (peers.pygms_marginals(fs, model.n, evidence),
                   peers.pygms_marginals(fs, model.n, evidence, order[::-1]),
                   peers.pgmpy_marginals(model, evidence)):
        for a, b in zip(mar, theirs):
            np.testing.assert_allclose(a, b, atol=1e-10)


def test_generators_are_seeded_and_validated():
    a, b = fgp.band_network(12, 10, 3), fgp.band_network(12, 10, 3)
    assert a == b and all(3 <= len(s) <= 4 for s in a.scopes[12:])
    assert _mixed_potts(3, 3, 4, 0).cardinalities.tolist() == [4] * 9
    with pytest.raises(ValueError, match="band"):
        fgp.band_network(5, 3, 0, band=8)
    model, ev = fgp.expert_with_evidence("asia", 2, 0)
    assert len(ev) == 2 and np.isfinite(exact.log_partition(model.condition(ev)))
