"""Tests of the field-test chapter's pieces: real digits, the king's-move lattice, pgmpy's
expert networks, and the experiment code of :mod:`mrflib.repro.field_test`."""

from __future__ import annotations

import numpy as np
import pytest

from mrflib import graphs


def test_king_grid_small_cases():
    assert graphs.king_grid(1, 1).shape == (0, 2)
    assert graphs.king_grid(1, 3).tolist() == [[0, 1], [1, 2]]
    assert graphs.king_grid(2, 2).tolist() == [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    assert graphs.king_grid(2, 3).tolist() == [
        [0, 1], [0, 3], [0, 4], [1, 2], [1, 3], [1, 4], [1, 5], [2, 4], [2, 5], [3, 4], [4, 5]]


@pytest.mark.parametrize("rows, cols", [(3, 3), (4, 5), (8, 8)])
def test_king_grid_degrees_and_square_subset(rows, cols):
    e = graphs.king_grid(rows, cols)
    assert np.all(e[:, 0] < e[:, 1])
    assert len(np.unique(e, axis=0)) == len(e)
    assert np.array_equal(e, np.unique(e, axis=0))  # sorted rows
    deg = np.bincount(e.ravel(), minlength=rows * cols).reshape(rows, cols)
    assert np.all(deg[1:-1, 1:-1] == 8) and deg[0, 0] == 3
    assert len(e) == (rows - 1) * cols + rows * (cols - 1) + 2 * (rows - 1) * (cols - 1)
    sq = {tuple(r) for r in graphs.square_grid(rows, cols).tolist()}
    assert sq <= {tuple(r) for r in e.tolist()}
    for i, j in e.tolist():  # every edge joins king's-move neighbours
        assert max(abs(i // cols - j // cols), abs(i % cols - j % cols)) == 1


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3", None])
def test_king_grid_rejects_bad_sizes(bad):
    with pytest.raises(ValueError, match="rows"):
        graphs.king_grid(bad, 3)
    with pytest.raises(ValueError, match="cols"):
        graphs.king_grid(3, bad)


# --------------------------------------------------------------------------- repro.field_test
def test_pseudo_images_have_uniform_moments_on_both_lattices():
    from mrflib.repro import field_test as ft

    for side in (3, 4, 8):
        p = ft.pseudo_images(side, copies=2)
        assert p.shape == (16, side * side) and p.dtype == np.int8
        assert np.all(p.mean(axis=0) == 0)
        for e in (graphs.square_grid(side, side), graphs.king_grid(side, side)):
            prod = p[:, e[:, 0]] * p[:, e[:, 1]]
            assert np.all(prod.mean(axis=0) == 0)
            # every edge sees all four value pairs
            codes = (p[:, e[:, 0]] > 0) * 2 + (p[:, e[:, 1]] > 0)
            assert all(len(np.unique(codes[:, k])) == 4 for k in range(len(e)))


def test_crop_split_kfold():
    from mrflib.repro import field_test as ft

    x = np.where(np.arange(2 * 64).reshape(2, 64) % 3 == 0, 1, -1).astype(np.int8)
    c = ft.crop(x, 4)
    assert np.array_equal(c[1].reshape(4, 4), x[1].reshape(8, 8)[2:6, 2:6])
    assert np.array_equal(ft.crop(x, 8), x)
    with pytest.raises(ValueError, match="side"):
        ft.crop(x, 9)
    a, b = ft.split(20, 12, 0)
    assert len(a) == 12 and len(np.intersect1d(a, b)) == 0 and len(np.union1d(a, b)) == 20
    assert np.array_equal(a, ft.split(20, 12, 0)[0])
    folds = ft.kfold(10, 3, 1)
    assert np.array_equal(np.sort(np.concatenate([t for _, t in folds])), np.arange(10))


def test_image_log_likelihoods_match_enumeration_and_bootstrap():
    from mrflib import BoltzmannMachine, exact
    from mrflib.repro import field_test as ft

    e = graphs.king_grid(3, 3)
    bm = BoltzmannMachine.random(e, 9, rng=3)
    x = exact.sample(bm, 50, rng=1)
    lp = np.log(exact.probabilities(bm))[exact.states_to_index(x)]
    np.testing.assert_allclose(ft.image_log_likelihoods(bm, x), lp, atol=1e-10)
    m, lo, hi = ft.bootstrap_mean(lp, 0, n_boot=500)
    assert lo < m < hi and m == pytest.approx(lp.mean())


def test_nodewise_logistic_close_to_mple_and_verdicts():
    from mrflib import BoltzmannMachine, exact
    from mrflib.repro import field_test as ft

    e = graphs.square_grid(3, 3)
    x = exact.sample(BoltzmannMachine.random(e, 9, rng=5), 3000, rng=2)
    lr, _ = ft.nodewise_logistic(x, e)
    mple, _, _ = ft.fit_learner(x, e, "mple")
    agree = ft.coupling_agreement(lr, mple)
    assert agree["correlation"] > 0.99 and agree["max_abs_diff"] < 0.05
    import pandas as pd

    frame = pd.DataFrame(dict(learner=["mle", "mple", "1-smci", "pcd", "smci-pcd"],
                              ll=[-5.0, -5.2, -5.1, -5.05, -5.01]))
    v = ft.verdicts(frame)
    assert v["winner"] == "mle" and v["runner_up"] == "smci-pcd"
    assert v["margin"] == pytest.approx(0.01)
    assert v["smci_closer_than_mple"] is True and v["smci_pcd_beats_pcd"] is True
    assert ft.verdicts(frame[frame.learner != "pcd"])["smci_pcd_beats_pcd"] is None


# --------------------------------------------------------------------------- repro.field_networks
def test_pairwise_log_linear_is_the_boltzmann_machine_on_binary_data():
    from mrflib import exact, learning
    from mrflib.repro import field_networks as fn

    net_rng = np.random.default_rng(0)
    x = (net_rng.random((400, 4)) < [0.3, 0.5, 0.6, 0.4]).astype(np.int8)
    x[:, 3] ^= x[:, 0] & (net_rng.random(400) < 0.7)
    cards = (2, 2, 2, 2)
    counts = np.bincount(x.astype(np.int64) @ (1 << np.arange(4)), minlength=16)
    q, info = fn.fit_log_linear(counts / 400, cards, fn.order_mask(cards, 2), tol=1e-10)
    bm = learning.fit((2 * x - 1).astype(np.int8), graphs.complete(4), "mle").model
    np.testing.assert_allclose(q, exact.probabilities(bm), atol=1e-6)
    assert fn.order_mask((3, 2), 1).tolist() == [False, True, True, True, False, False]


def test_network_trial_scores_are_consistent():
    from mrflib import datasets
    from mrflib.repro import field_networks as fn

    net = datasets.expert_network("cancer")
    frame = fn.network_trial(net, 2000, 0, ["FSLL", "empirical (KT)", "pairwise ML",
                                            "best pairwise", "BM-DI"])
    kl = dict(zip(frame.model, frame.kl_true))
    assert all(v >= 0 for v in kl.values())
    assert kl["best pairwise"] <= kl["pairwise ML"] + 1e-9
    assert kl["BM-DI"] == pytest.approx(kl["pairwise ML"], rel=1e-3, abs=1e-6)
    peer = fn.pgmpy_peer(net, datasets.pgmpy_model("cancer"))
    assert peer["max_abs_diff"] < 1e-9


def test_network_trial_records_an_estimate_that_does_not_exist(recwarn):
    """A sample too small to show every joint state of a pair: BM-DI's maximum-likelihood
    estimate does not exist, which its row's note says; nothing is warned (a published
    chapter would show the warning on stderr)."""
    from mrflib import datasets
    from mrflib.repro import field_networks as fn

    net = datasets.expert_network("cancer")
    frame = fn.network_trial(net, 20, 0, ["empirical", "BM-DI"])
    notes = dict(zip(frame.model, frame.note))
    assert "does not exist" in notes["BM-DI"] and notes["empirical"] == ""
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_recorded_keeps_runtime_warnings_and_passes_others_on():
    import warnings

    from mrflib._support.recorded_warnings import recorded

    with pytest.warns(UserWarning, match="other"), recorded() as notes:
        warnings.warn("kept", RuntimeWarning, stacklevel=1)
        warnings.warn("kept", RuntimeWarning, stacklevel=1)  # repeats too
        warnings.warn("other", UserWarning, stacklevel=1)
    assert notes == ["kept", "kept"]
