"""The reproduction harness: the chapter recorder and the trials moved out of the algorithms."""

from __future__ import annotations

import numpy as np
import pytest

from mrflib import bounds, fsll, lap, learning, sampling, smci
from mrflib.repro import Chapter, experiments, lap_trials


def test_chapter_fills_in_chapter_paper_profile():
    ch = Chapter("test_repro_chapter", "smci-learning-yasuda", "quick")
    ch.record("Figure 1", "a number", 1.0, 1.01, "reproduced", "close")
    ch.record("Table 2", "another", "-", 3, "new", paper="fsll-takabatake-akaho")
    got = ch.records()
    assert got["paper"].tolist() == ["smci-learning-yasuda", "fsll-takabatake-akaho"]
    assert set(got["profile"]) == {"quick"} and set(got["chapter"]) == {"test_repro_chapter"}
    assert got.equals(experiments.records("test_repro_chapter"))
    with pytest.raises(ValueError, match="profile"):
        Chapter("x", "y", "fast")
    with pytest.raises(ValueError, match="chapter"):
        Chapter("", "y")
    with pytest.raises(ValueError, match="verdict"):
        ch.record("Figure 1", "q", 1, 1, "good")


@pytest.mark.parametrize("module, name", [
    (learning, "mae_trial"), (smci, "covariance_mae_trial"), (fsll, "learn_and_score"),
    (fsll, "PAPER_TABLE1"), (bounds, "sk_errors"), (sampling, "exact"),
    (lap, "junction_tree_moments")])
def test_algorithm_modules_hold_no_harness_names(module, name):
    """Trials, paper tables and peers are reached through mrflib.repro only."""
    assert not hasattr(module, name)


def test_figure8_gaussian_small_run():
    rows, info = lap_trials.figure8_gaussian(4, 3, [20, 40], 1, rng=0)
    assert set(rows.columns) == {"grid", "N", "method", "err"}
    assert {"LAP", "ML (pattern)", "graphical lasso (oracle alpha)"} <= set(rows["method"])
    assert np.isfinite(rows.query("method == 'LAP'")["err"]).all()
    assert info["glasso_runs"] == 2 * len(lap_trials.GLASSO_ALPHAS)
    again, _ = lap_trials.figure8_gaussian(4, 3, [20, 40], 1, rng=0)
    assert rows.equals(again)


def test_harness_names_at_the_top_forward_to_repro_with_a_warning():
    import mrflib
    from mrflib.repro import experiments as e
    from mrflib.repro import report as r
    from mrflib.repro import sweep as s

    for name, module in (("experiments", e), ("report", r), ("sweep", s)):
        with pytest.warns(FutureWarning, match=f"use mrflib.repro.{name}"):
            assert getattr(mrflib, name) is module
    assert "sweep" not in mrflib.__all__ and "repro" in mrflib.__all__


@pytest.mark.parametrize("n", [40, 80])
def test_order_memory_of_band_networks_covers_their_factors(n):
    """Every heuristic's order of a band network (several components) holds each factor in
    some clique: width and largest table at least the largest factor's."""
    from mrflib.repro import factor_graph_experiments as fx
    from mrflib.repro import factor_graph_problems as fgp

    model = fgp.band_network(n, n, 0, band=10)
    widest = max(len(s) for s in model.scopes) - 1
    largest = max(8.0 * np.prod(model.cardinalities[list(s)]) for s in model.scopes)
    got = fx.order_memory([], (), [n])
    assert set(got["heuristic"]) == set(fx.HEURISTICS)
    assert (got["treewidth"] >= widest).all()
    assert (got["largest table bytes"] >= largest * (1 - 1e-9)).all()
