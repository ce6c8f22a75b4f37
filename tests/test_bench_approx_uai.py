"""The approximate benchmark's scoring (``bench/bench_approx_uai.py``) on small folders.

The UAI problems are not in the repository: folders laid out like the public set are built
from small models, and the reference each problem is scored against, the score and the
check of an answer's validity are tested on them.
"""

from __future__ import annotations

import numpy as np

from bench import bench_approx_uai as ba
from bench import bench_uai_2014 as bu
from mrflib import exact, io
from tests.test_counting import bipartite


def test_the_benchmark_scores_relational_4_against_counting(tmp_path):
    """``bench_approx_uai.reference``: a problem named in ``COUNTED`` is scored against its
    counting marginals (the published file's distance from them said), others against the
    published file."""
    prob, sol = tmp_path / "MAR_prob", tmp_path / "MAR_sol"
    prob.mkdir()
    sol.mkdir()
    model = bipartite(3, 2, np.random.default_rng(7))
    for name in ("relational_4", "relational_9"):
        io.write_uai(model, prob / f"{name}.uai")
        io.write_evidence(prob / f"{name}.uai.evid", {1: 1})
        io.write_answer(sol / f"{name}.uai.MAR", "MAR", [np.array([0.5, 0.5])] * model.n)
    counted, other = bu.problem_set(prob)
    exact_, published, source = ba.reference(counted)
    want = exact.marginals(io.read_uai(prob / "relational_4.uai").condition({1: 1}),
                           method="enumerate")
    for g, w in zip(exact_, want):
        np.testing.assert_allclose(g, w, atol=1e-9)
    assert source.startswith("counting (the published marginals differ by up to")
    assert len(published) == model.n
    assert ba.score(exact_, exact_)[0] == 100.0
    assert ba.reference(other)[1:] == (None, "published")



def test_an_answer_is_valid_only_with_every_marginal_normalized():
    exact_ = [np.array([0.2, 0.8]), np.array([1.0, 0.0, 0.0])]
    assert ba.valid([np.array([0.5, 0.5]), np.array([0.2, 0.3, 0.5])], exact_)
    assert not ba.valid(None, exact_)
    assert not ba.valid([np.array([0.5, 0.5])], exact_)
    assert not ba.valid([np.array([0.5, 0.6]), np.array([0.2, 0.3, 0.5])], exact_)
    assert not ba.valid([np.array([np.nan, 1.0]), np.array([0.2, 0.3, 0.5])], exact_)
    assert not ba.valid([np.array([-0.1, 1.1]), np.array([0.2, 0.3, 0.5])], exact_)
    assert ba.score(exact_, exact_)[0] == 100.0
    assert ba.score(None, exact_)[0] == 0.0
