"""The pyAgrum peer: its model built by hand gives the enumerated marginals on small models
with non-symmetric tables and evidence, and its failures are reported, not raised."""

from __future__ import annotations

import numpy as np
import pytest

from mrflib import FactorGraph, exact
from mrflib.models import lattices
from mrflib.repro import factor_graph_problems as fgp
from mrflib.repro import pyagrum_peer as pp

pytest.importorskip("pyagrum")


def _repeated_scopes() -> FactorGraph:
    """Two factors over one set of variables in different orders (pyAgrum keeps one factor
    per set), 2- and 3-state variables, every table non-symmetric."""
    rng = np.random.default_rng(4)
    card = [2, 3, 4, 3]
    scopes = [(0, 1), (1, 0), (2, 1, 3), (3, 2, 1), (2,), ()]
    tables = [rng.standard_normal(tuple(card[v] for v in s)) for s in scopes]
    return FactorGraph(card, scopes, tables)


@pytest.mark.parametrize("make", [
    lambda: fgp.band_network(8, 6, 1, band=5),
    lambda: lattices.potts_lattice(2, 3, 3, rng=0, couplings="mixed"),
    lambda: lattices.triangle_lattice(2, 3, rng=1),
    _repeated_scopes,
], ids=["band", "potts", "triangles", "repeated-scopes"])
def test_marginals_equal_enumeration(make):
    model = make()
    evidence = {1: 1}
    mrf = pp.pyagrum_model(model)
    for ev in ({}, evidence):
        ours = exact.marginals(model.condition(ev) if ev else model, method="enumerate")
        theirs = pp.pyagrum_marginals(mrf, model.n, ev)
        assert theirs.failure is None
        assert len(theirs.marginals) == model.n
        for a, b in zip(ours, theirs.marginals):
            np.testing.assert_allclose(b, a, atol=1e-12)


def test_tables_are_not_transposed():
    """A 2x3 table filled in the wrong axis order gives other marginals: the check above
    would catch the reader's transposition."""
    table = np.log(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 20.0]]))
    model = FactorGraph([2, 3], [(0, 1)], [table])
    got = pp.pyagrum_marginals(pp.pyagrum_model(model), 2).marginals
    w = np.exp(table)
    np.testing.assert_allclose(got[0], w.sum(1) / w.sum(), atol=1e-14)
    np.testing.assert_allclose(got[1], w.sum(0) / w.sum(), atol=1e-14)


def test_failures_are_reported_not_raised():
    """Weights beyond a float (linear arithmetic overflows) are the peer's NaN failure; a
    bad evidence state is its exception's text; ours stays finite."""
    model = FactorGraph([2, 2], [(0, 1)], [np.array([[800.0, 0.0], [0.0, 800.0]])])
    out = pp.pyagrum_marginals(pp.pyagrum_model(model), 2)
    assert out.marginals is None and out.failure.startswith("NaN marginals")
    assert all(np.all(np.isfinite(m)) for m in exact.marginals(model))
    small = FactorGraph([2, 2], [(0, 1)], [np.zeros((2, 2))])
    out = pp.pyagrum_marginals(pp.pyagrum_model(small), 2, {0: 5})
    assert out.marginals is None and out.failure
    assert pp._failure(MemoryError()) == "std::bad_alloc"
    with pytest.raises(TypeError, match="model must be a FactorGraph"):
        pp.pyagrum_model("model")
