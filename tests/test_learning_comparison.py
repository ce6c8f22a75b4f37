"""The learners' comparison harness (the chapter on learning beyond the treewidth)."""

import numpy as np
import pytest

from mrflib.models import lattices
from mrflib.repro import learning_comparison as lc


@pytest.fixture(scope="module")
def small():
    truth = lattices.potts_lattice(2, 3, 3, coupling=0.5, couplings="mixed", rng=1)
    data, info = lc.draw(truth, 400, rng=2)
    return truth, data, info


def test_exact_data_where_the_engine_reaches(small):
    truth, data, info = small
    assert info["method"] == "exact" and info["mixing"] == 0.0
    assert data.shape == (400, truth.n) and data.dtype == np.int64
    np.testing.assert_array_equal(data, lc.draw(truth, 400, rng=2)[0])


def test_parameter_error_is_zero_at_the_truth_only(small):
    truth, data, _ = small
    assert lc.parameter_error(truth, truth) == 0.0
    other = lattices.potts_lattice(2, 3, 3, coupling=0.5, couplings="mixed", rng=9)
    assert lc.parameter_error(other, truth) > 0.01


def test_compare_rows_and_curves(small):
    truth, data, _ = small
    table, curves = lc.compare(truth, data, data, methods=["mle", "mple", "pcd"], steps=30,
                               rng=3, options={"pcd": {"n_chains": 100}})
    assert list(table["method"]) == ["mle", "mple", "pcd"] == list(curves)
    assert np.isfinite(table["test log-likelihood"]).all()
    mle = table.set_index("method").loc["mle"]
    # the MLE maximizes the training likelihood, here also the test data
    assert mle["test log-likelihood"] >= table["test log-likelihood"].max() - 1e-9
    t, err = curves["pcd"]
    assert len(t) == len(err) == 31 and np.all(np.diff(t) > 0)  # the start, 30 steps
    again, _ = lc.compare(truth, data, data, methods=["pcd"], steps=30, rng=3,
                          options={"pcd": {"n_chains": 100}})
    assert again["parameter error"].iloc[0] == table.set_index("method").loc[
        "pcd", "parameter error"]


def test_bad_methods_are_named(small):
    truth, data, _ = small
    with pytest.raises(ValueError, match="methods"):
        lc.compare(truth, data, methods=["nope"], rng=0)
    with pytest.raises(ValueError, match="n_samples"):
        lc.draw(truth, 0, rng=0)
