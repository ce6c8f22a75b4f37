"""The per-trial functions of the LAP and field-test chapters (resumable paper runs)."""

import numpy as np
import pytest

from mrflib import datasets
from mrflib.repro import Trials, field_trials, lap_trials
from mrflib.repro import field_test as ft


def test_figure8_trials_merge_to_the_one_generator_loop():
    rng = np.random.default_rng(3)
    parts = [lap_trials.figure8_trial(t, rng, g_big=4, g_small=3, sizes=[20, 40])
             for t in range(2)]
    rows, info = lap_trials.figure8_merge(parts)
    again, info2 = lap_trials.figure8_gaussian(4, 3, [20, 40], 2, rng=3)
    assert rows.equals(again)
    assert info["glasso_runs"] == info2["glasso_runs"] == 2 * 2 * len(lap_trials.GLASSO_ALPHAS)
    assert {r["trial"] for p in parts for r in p["rows"]} == {0, 1}
    with pytest.raises(ValueError, match="results"):
        lap_trials.figure8_merge([])


def test_accuracy_trial_rows():
    rows = lap_trials.accuracy_trial(2, 0, grid=3, sizes=[500, 5000])
    assert {(r["N"], r["method"]) for r in rows} == {(N, m) for N in (500, 5000)
                                                     for m in ("LAP", "MLE", "MPLE")}
    assert all(r["trial"] == 2 and np.isfinite(r["mae_true"]) for r in rows)
    assert all(r["mae_mle"] == 0 for r in rows if r["method"] == "MLE")
    assert rows == lap_trials.accuracy_trial(2, 0, grid=3, sizes=[500, 5000])


def test_pick_runs_over_the_product_last_axis_fastest():
    got = [field_trials._pick(t, "ab", range(3)) for t in range(6)]
    assert got == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1), ("b", 2)]
    for bad in (6, -1, 1.5):
        with pytest.raises(ValueError, match="t must"):
            field_trials._pick(bad, "ab", range(3))


@pytest.fixture(scope="module")
def digits3():
    x_all, labels = datasets.digits()
    x = ft.crop(x_all, 3)[:120]
    return x, labels[:120], ft.pseudo_images(3)


def test_score_trials_and_scores(digits3):
    x, _, pseudo = digits3
    train, test = np.vstack([x[:80], pseudo]), x[80:]
    kw = dict(train=train, test=test, kinds=["square", "king"], side=3,
              learners=["mple", "lap"], options={})
    fits = [field_trials.score_trial(t, np.random.default_rng(t), **kw) for t in range(4)]
    assert [(f["graph"], f["learner"]) for f in fits] == [
        ("square", "mple"), ("square", "lap"), ("king", "mple"), ("king", "lap")]
    frame, models = field_trials.scores(fits, 0, n_boot=50)
    assert list(models) == ["square", "king"] and set(models["king"]) == {"mple", "lap"}
    for f in fits:
        row = frame[(frame.graph == f["graph"]) & (frame.learner == f["learner"])].iloc[0]
        assert row.ll == pytest.approx(f["per_image"].mean())
        assert row.ll_low <= row.ll <= row.ll_high
    assert (frame.groupby("graph").gap.max() == 0).all()
    part, _ = field_trials.scores(fits[1:2], 0, n_boot=50)  # a chunk's share
    assert list(part.learner) == ["lap"] and part.gap.iloc[0] == 0


def test_kfold_and_classify_trials(digits3):
    x, y, pseudo = digits3
    splits = ft.kfold(len(x), 3, 0)
    r = field_trials.kfold_trial(7, 1, x=x, pseudo=pseudo, kinds=["square", "king"], side=3,
                                 splits=splits, learners=["mple", "lap"], options={})
    assert (r["graph"], r["fold"], r["learner"]) == ("king", 0, "lap")
    assert np.isfinite(r["ll"]) and r["ll"] < 0
    c = field_trials.classify_trial(1, 2, train=x[:80], y_train=y[:80], test=x[80:],
                                    y_test=y[80:], pseudo=pseudo, kinds=["king"], side=3,
                                    learners=["mple", "lap"], options={})
    assert c["graph"] == "king" and c["learner"] == "lap" and 0 <= c["accuracy"] <= 1


def test_network_trial_and_chunks(tmp_path):
    kw = dict(networks=["cancer", "earthquake"], sizes=[300], subset_states=2**8,
              pairwise_max_states=2**4, pcd_steps=20)
    whole = Trials("field_test", 0).map("networks", field_trials.network_trial, 2, **kw)
    assert [rows[0]["network"] for rows in whole] == ["cancer", "earthquake"]
    # 32 states > pairwise_max_states: no pairwise models
    assert not any("pairwise" in r["model"] for rows in whole for r in rows)
    chunks = [Trials("field_test", 0, chunk=k, n_chunks=2, cache=tmp_path)
              .map("networks", field_trials.network_trial, 2, **kw) for k in range(2)]
    merged = Trials("field_test", 0, cache=tmp_path)
    got = merged.map("networks", field_trials.network_trial, 2, **kw)
    assert merged.computed == 0 and len(chunks[0]) == len(chunks[1]) == 1
    strip = [[{k: v for k, v in r.items() if k != "seconds"} for r in rows] for rows in got]
    assert strip == [[{k: v for k, v in r.items() if k != "seconds"} for r in rows]
                     for rows in whole]
    assert field_trials.expert_network("asia", 2**4).n_states <= 2**4
