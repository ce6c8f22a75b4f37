"""The grey-level field test: quantized digits, Potts-type lattices, baselines, classifier."""

from __future__ import annotations

import numpy as np
import pytest

from mrflib import FactorGraph, datasets, graphs, learning
from mrflib.models.factor_graph import all_states
from mrflib.repro import field_grey as fg
from mrflib.repro import field_test as ft
from mrflib.repro import field_trials


# ------------------------------------------------------------------ quantization
def test_digits_levels_bins():
    from sklearn.datasets import load_digits

    d = load_digits()
    x, labels = datasets.digits(levels=4)
    assert x.shape == (1797, 64) and x.dtype == np.int8
    assert np.array_equal(labels, d.target)
    pixels = d.data
    edges = [(0, 4), (4, 8), (8, 12), (12, 17)]  # [0,4) [4,8) [8,12) [12,16]
    for s, (lo, hi) in enumerate(edges):
        assert np.array_equal(x == s, (pixels >= lo) & (pixels < hi))
    assert set(np.unique(x)) == {0, 1, 2, 3}


def test_digits_levels_two_is_the_threshold_and_default_unchanged():
    spins, _ = datasets.digits()
    two, _ = datasets.digits(levels=2)
    assert np.array_equal(two, (spins + 1) // 2)
    seventeen, _ = datasets.digits(levels=17)
    from sklearn.datasets import load_digits

    assert np.array_equal(seventeen, load_digits().data)  # one state per intensity


@pytest.mark.parametrize("bad", [1, 18, 2.5, True, "4"])
def test_digits_levels_refused(bad):
    with pytest.raises(ValueError, match="levels"):
        datasets.digits(levels=bad)


def test_crop_states():
    x, _ = datasets.digits(levels=4)
    c = ft.crop(x, 4, levels=4)
    assert np.array_equal(c, x.reshape(-1, 8, 8)[:, 2:6, 2:6].reshape(-1, 16))
    with pytest.raises(ValueError, match="x"):
        ft.crop(x, 4, levels=3)  # states up to 3 are outside 0..2


# ------------------------------------------------------------------ structure, pseudo-images
@pytest.mark.parametrize("kind", ["square", "king"])
def test_potts_structure(kind):
    s = fg.potts_structure(kind, 3, q=4)
    e = ft.lattice(kind, 3)
    assert s.n == 9 and len(s.scopes) == 9 + len(e)
    assert s.scopes[:9] == tuple((i,) for i in range(9))
    assert [tuple(sc) for sc in s.scopes[9:]] == [tuple(map(int, p)) for p in e]
    assert all(t.shape == (4,) * len(sc) for sc, t in zip(s.scopes, s.log_tables))


@pytest.mark.parametrize("q", [3, 4, 5])
def test_pseudo_images_have_uniform_unary_and_edge_marginals(q):
    side = 5
    p = fg.pseudo_images(side, q)
    assert p.shape == (q * q, side * side)
    for i in range(side * side):
        assert np.array_equal(np.bincount(p[:, i], minlength=q), np.full(q, q))
    for i, j in graphs.king_grid(side, side):
        pairs = p[:, i].astype(int) * q + p[:, j]
        assert np.array_equal(np.sort(pairs), np.arange(q * q))


@pytest.mark.parametrize("q", [2, 6, 9])
def test_pseudo_images_refuse_other_q(q):
    with pytest.raises(ValueError, match="q"):
        fg.pseudo_images(3, q)


# ------------------------------------------------------------------ independent baseline
def test_independent_closed_form_and_normalized():
    rng = np.random.default_rng(0)
    q, n = 3, 4
    train = rng.integers(0, q, (25, n))
    states = all_states(np.full(n, q))
    ll = fg.independent_log_likelihoods(train, states, q)
    assert np.isclose(np.logaddexp.reduce(ll), 0.0)  # a distribution over q^n images
    for x, v in zip(states[:: 7], ll[:: 7]):
        want = sum(np.log((np.sum(train[:, i] == x[i]) + 1) / (len(train) + q))
                   for i in range(n))
        assert np.isclose(v, want)


def test_independent_refuses_out_of_range():
    with pytest.raises(ValueError, match="test"):
        fg.independent_log_likelihoods(np.zeros((3, 2), int), np.full((1, 2), 3), 3)


# ------------------------------------------------------------------ held-out log-likelihood
def _enumerated_log_probs(model: FactorGraph, x: np.ndarray) -> np.ndarray:
    states = all_states(model.cardinalities)
    logw = model.log_weight(states)
    logp = logw - np.logaddexp.reduce(logw)
    index = {tuple(s): v for s, v in zip(states.tolist(), logp)}
    return np.array([index[tuple(r)] for r in x.tolist()])


@pytest.fixture(scope="module")
def tiny():
    """3x3 grey digits (the centred window), 3 levels, a train/test split."""
    x, y = datasets.digits(levels=3)
    x = ft.crop(x, 2, levels=3)
    tr, te = ft.split(len(x), 300, 0)
    return x[tr], y[tr], x[te][:200], y[te][:200]


@pytest.mark.parametrize("learner", fg.LEARNERS)
def test_held_out_log_likelihood_equals_enumeration(tiny, learner):
    train, _, test, _ = tiny
    s = fg.potts_structure("king", 2, q=3)
    model, seconds, info = fg.fit_learner(np.vstack([train, fg.pseudo_images(2, 3)]), s,
                                          learner)
    assert seconds > 0 and info["converged"]
    got = fg.image_log_likelihoods(model, test)
    np.testing.assert_allclose(got, _enumerated_log_probs(model, test), atol=1e-10)


def test_gain_frame():
    rng = np.random.default_rng(1)
    a, base = rng.normal(-5, 1, 50), rng.normal(-6, 1, 50)
    f = fg.gain_frame({"mle": a}, base, 0, n_boot=200,
                      rows=[dict(learner="mle", seconds=1.5)])
    assert list(f.learner) == ["mle", "independent"]
    r = f.set_index("learner")
    assert np.isclose(r.gain["mle"], (a - base).mean()) and r.gain["independent"] == 0
    assert r.gain_low["mle"] <= r.gain["mle"] <= r.gain_high["mle"]
    assert r.seconds["mle"] == 1.5 and np.isclose(r.ll["mle"], a.mean())


# ------------------------------------------------------------------ classifiers
def test_classifier_equals_brute_force(tiny):
    train, y_train, test, y_test = tiny
    keep = np.isin(y_train, [0, 1, 7])
    train, y_train = train[keep], y_train[keep]
    s = fg.potts_structure("square", 2, q=3)
    pseudo = fg.pseudo_images(2, 3)
    acc, seconds = fg.class_conditional_accuracy(train, y_train, test, y_test, s, "mple",
                                                 pseudo=pseudo)
    classes = np.unique(y_train)
    scores = []
    for c in classes:
        xc = np.vstack([train[y_train == c], pseudo])
        model = learning.fit(xc, s, "mple", record=False).model
        scores.append(_enumerated_log_probs(model, test) + np.log(np.mean(y_train == c)))
    want = np.mean(classes[np.argmax(scores, axis=0)] == y_test)
    assert acc == want and seconds > 0


def test_independent_classifier_is_categorical_naive_bayes(tiny):
    from sklearn.naive_bayes import CategoricalNB

    train, y_train, test, y_test = tiny
    acc = fg.independent_accuracy(train, y_train, test, y_test, 3)
    nb = CategoricalNB(alpha=1.0, min_categories=3).fit(train, y_train)
    assert np.isclose(acc, nb.score(test, y_test))


def test_classifier_refuses_bad_input(tiny):
    train, y_train, test, y_test = tiny
    s = fg.potts_structure("square", 2, q=3)
    with pytest.raises(ValueError, match="y_train"):
        fg.class_conditional_accuracy(train, y_train[:-1], test, y_test, s, "mle")
    with pytest.raises(ValueError, match="learner"):
        fg.class_conditional_accuracy(train, y_train, test, y_test, s, "cd")
    with pytest.raises(TypeError, match="structure"):
        fg.class_conditional_accuracy(train, y_train, test, y_test, None, "mle")


# ------------------------------------------------------------------ trials
def test_grey_trials(tiny):
    train, y_train, test, y_test = tiny
    pseudo = fg.pseudo_images(2, 3)
    kw = dict(train=np.vstack([train, pseudo]), test=test, kinds=["square", "king"], side=2,
              learners=["mple", "lap"], options={}, levels=3)
    results = [field_trials.grey_score_trial(t, t, **kw) for t in range(4)]
    assert [(r["graph"], r["learner"]) for r in results] == [
        ("square", "mple"), ("square", "lap"), ("king", "mple"), ("king", "lap")]
    base = fg.independent_log_likelihoods(train, test, 3)
    frame = fg.scores(results, base, 0, n_boot=100)
    assert len(frame) == 6 and set(frame.graph) == {"square", "king"}
    c = field_trials.grey_classify_trial(1, 0, train=train, y_train=y_train, test=test,
                                         y_test=y_test, pseudo=pseudo, kinds=["king"], side=2,
                                         learners=["mple", "lap-zero-sum"], options={},
                                         levels=3)
    assert c["learner"] == "lap-zero-sum" and c["graph"] == "king" and 0 < c["accuracy"] <= 1


def test_lap_claims():
    import pandas as pd

    def frame(g_lap, t_lap, g_zs=None):
        rows = [dict(learner="mle", gain=4.0, seconds=10.0),
                dict(learner="mple", gain=3.0, seconds=1.0),
                dict(learner="lap", gain=g_lap, seconds=t_lap)]
        if g_zs is not None:
            rows.append(dict(learner="lap-zero-sum", gain=g_zs, seconds=2.0))
        return pd.DataFrame(rows)

    got = fg.lap_claims(frame(3.8, 2.0))
    assert [(c["claim"], c["verdict"]) for c in got] == [
        ("accuracy", "reproduced"), ("versus PL", "reproduced")]
    got = fg.lap_claims(frame(2.0, 2.0, g_zs=-1.0))
    assert [(c["learner"], c["claim"], c["verdict"]) for c in got] == [
        ("lap", "accuracy", "reproduced in kind"), ("lap", "versus PL", "not reproduced"),
        ("lap-zero-sum", "accuracy", "not reproduced"),
        ("lap-zero-sum", "versus PL", "not reproduced")]
    assert fg.lap_claims(frame(3.9, 20.0))[0]["verdict"] == "not reproduced"  # slower
    with pytest.raises(ValueError, match="frame"):
        fg.lap_claims(frame(1, 1)[lambda f: f.learner != "mple"])
    with pytest.raises(ValueError, match="frame"):
        fg.lap_claims(None)


def test_lap_on_model_data():
    from mrflib.models import lattices as factor_models

    model = factor_models.potts_lattice(2, 2, 3, coupling=0.8, rng=0)
    f = fg.lap_on_model_data(model, 4000, 0).set_index("learner")
    assert list(f.index) == ["true model", "mle", "lap", "lap-zero-sum"]
    assert f.gap["true model"] == 0 and np.all(np.abs(f.gap) < 0.05)  # consistent learners
    g = fg.lap_on_model_data(model, 4000, 0)
    assert g.ll.tolist() == f.ll.tolist()  # seeded
    with pytest.raises(TypeError, match="model"):
        fg.lap_on_model_data(None, 10, 0)
