"""SampleSearch estimates of log Z on constraint models
(:mod:`mrflib.inference.approx.sample_search`): unbiased (the mean of the weights near
enumeration's count on random constraint models with variables of 2 and 3 states, with and
without evidence, and the exact expectation of the weight over the whole search tree, with
every Boolean drawn or the completions of a prefix counted), exact where the formula has
one model or none or nothing is drawn, free Booleans doubling the count, the same
seed giving the same estimate, its lower bound, bad arguments refused by name, and the
deadline."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from _random_factor_graphs import constraint_model, formula, zeroed_model

from mrflib import FactorGraph
from mrflib.inference.approx import sample_search as ss
from mrflib.inference.exact import enumeration, model_counting

pytestmark = pytest.mark.skipif(not ss.available(), reason="python-sat is not installed")
needs_ganak = pytest.mark.skipif(not model_counting.available("ganak"),
                                 reason="pyganak is not installed")


def models(n_bool: int, clauses: list[list[int]]) -> list[tuple[bool, ...]]:
    """Every model of the formula, by enumeration."""
    return [x for x in itertools.product((False, True), repeat=n_bool)
            if all(any(x[abs(lit) - 1] == (lit > 0) for lit in c) for c in clauses)]


def expected_weight(n_bool: int, clauses: list[list[int]], drawn_share: float = 1.0) -> float:
    """``E_Q[w]`` over the whole backtrack-free search tree of the first ``drawn_share`` of
    the module's order, by enumeration: each open step halves the probability and doubles
    the weight, and each path's weight is multiplied by the models that extend it."""
    order = ss._order(*model_counting.clause_booleans(clauses)).tolist()
    order = order[:math.ceil(drawn_share * len(order))]
    sat = models(n_bool, clauses)

    def completions(fixed: dict[int, bool]) -> int:
        return sum(all(x[b - 1] == v for b, v in fixed.items()) for x in sat)

    def walk(i: int, fixed: dict[int, bool]) -> float:
        if i == len(order):
            return completions(fixed)
        open_values = [v for v in (False, True) if completions({**fixed, order[i]: v})]
        return sum(len(open_values) * walk(i + 1, {**fixed, order[i]: v}) / len(open_values)
                   for v in open_values)

    return walk(0, {}) if sat else 0.0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("drawn_share", [1.0, 0.5, 0.0])
def test_the_weight_is_unbiased_over_the_whole_search_tree(seed, drawn_share):
    """``E_Q[w] = #F`` exactly (the module's equations), on random 3-SAT formulas, with
    every Boolean drawn, half of them (the completions counted), or none (the formula
    counted)."""
    n_bool, clauses = model_counting.cnf_clauses(formula(n=7, seed=seed))
    assert expected_weight(n_bool, clauses, drawn_share) == pytest.approx(
        len(models(n_bool, clauses)), rel=1e-12)


@pytest.mark.parametrize("seed, drawn_share, n_samples", [
    *((seed, 1.0, 2000) for seed in range(12)),
    *(pytest.param(seed, 0.5, 200, marks=needs_ganak) for seed in range(6))])
def test_the_estimate_is_near_enumeration(seed, drawn_share, n_samples):
    """Random constraint models (variables of 2 and 3 states, evidence on some): the
    estimate within 0.1 of ``log Z``, and below it by no more than its lower bound
    allows, of 2,000 samples with every Boolean drawn, or of 200 with half the order
    drawn and the rest counted (Ganak); ``Z = 0`` found exactly."""
    rng = np.random.default_rng(seed)
    model = constraint_model(zeroed_model(seed, most_evidence=2), rng)
    truth = enumeration.log_partition(model)
    res = ss.sample_search_log_partition(model, rng=seed, n_samples=n_samples,
                                         drawn_share=drawn_share)
    if truth == -math.inf:
        assert res.log_partition == -math.inf and res.exact
        return
    assert res.n_samples == n_samples or res.exact
    assert res.details["counted"] == (drawn_share < 1.0) or res.exact
    assert res.log_partition == pytest.approx(truth, abs=0.1)
    assert res.lower <= truth + 1e-9
    assert res.lower == pytest.approx(res.log_partition + math.log(res.delta)) or res.exact


@needs_ganak
def test_nothing_drawn_counts_the_formula_exactly():
    """``drawn_share=0``: the first sample counts every model, and is exact."""
    model = constraint_model(formula(n=12, seed=5), np.random.default_rng(1))
    res = ss.sample_search_log_partition(model, rng=0, n_samples=10, drawn_share=0.0)
    assert res.exact and res.n_samples == 1 and res.details["drawn"] == 0
    assert res.log_partition == pytest.approx(enumeration.log_partition(model), abs=1e-9)


@needs_ganak
@pytest.mark.parametrize("error", [TimeoutError, RuntimeError])
def test_a_count_that_outlasts_its_time_draws_on(monkeypatch, error):
    """Under a time limit, a count of completions stopped at :data:`COUNT_SECONDS` (or
    failed) makes the sample draw on, halving what is left to count, and the later samples
    too: with every count stopped the samples are those of drawing every Boolean, bit for
    bit."""

    def stopped(*args, **kwargs):
        raise error("the count of a sample's completions did not finish")

    model = formula(n=40, seed=2)
    plain = ss.sample_search_log_partition(model, rng=7, n_samples=30, drawn_share=1.0)
    monkeypatch.setattr(ss, "call_within", stopped)
    got = ss.sample_search_log_partition(model, rng=7, n_samples=30, time_limit=600.0,
                                         drawn_share=0.2)
    held = len(model_counting.clause_booleans(model_counting.cnf_clauses(model)[1])[0])
    assert got.details["drawn"] == held and not got.details["counted"]
    assert got.log_partition == plain.log_partition
    assert got.details["open_steps"] == plain.details["open_steps"]


def test_evidence_conditions_the_estimate():
    model = constraint_model(formula(n=10, seed=4), np.random.default_rng(0))
    evidence = {0: 1, 3: 0}
    truth = enumeration.log_partition(model.condition(evidence))
    res = ss.sample_search_log_partition(model, rng=1, evidence=evidence, n_samples=3000,
                                         drawn_share=1.0)
    assert res.log_partition == pytest.approx(truth, abs=0.1)


def test_one_model_is_exact_and_none_is_minus_infinity():
    one = FactorGraph([2, 2], [(0, 1)], [np.array([[0.5, -np.inf], [-np.inf, -np.inf]])])
    res = ss.sample_search_log_partition(one, rng=0, n_samples=5)
    assert res.exact and res.log_partition == pytest.approx(0.5) and res.lower == 0.5
    assert res.n_samples == 1
    none = FactorGraph([2], [(0,), (0,)], [np.array([0.0, -np.inf]), np.array([-np.inf, 0.0])])
    res = ss.sample_search_log_partition(none, rng=0, n_samples=5)
    assert res.exact and res.log_partition == -math.inf and res.n_samples == 0


def test_free_booleans_double_the_count():
    """Variables in no table with a zero are not drawn: each doubles the count."""
    model = FactorGraph([2, 2, 2, 2], [(0, 1), (2,), (3,)],
                        [np.array([[0.0, 0.0], [0.0, -np.inf]]), np.zeros(2), np.zeros(2)])
    res = ss.sample_search_log_partition(model, rng=0, n_samples=4000, drawn_share=1.0)
    assert res.details["free"] == 2
    assert res.log_partition == pytest.approx(math.log(12.0), abs=0.05)
    if model_counting.available("ganak"):  # the counted completions leave the free Booleans out
        res = ss.sample_search_log_partition(model, rng=0, n_samples=20, drawn_share=0.0)
        assert res.exact and res.log_partition == pytest.approx(math.log(12.0))


@pytest.mark.parametrize("drawn_share, n_samples", [(1.0, 50), (0.5, 10)])
def test_the_same_seed_gives_the_same_estimate(drawn_share, n_samples):
    if drawn_share < 1.0 and not model_counting.available("ganak"):
        pytest.skip("pyganak is not installed")
    model = formula(n=40, seed=2)
    a, b, c = (ss.sample_search_log_partition(model, rng=seed, n_samples=n_samples,
                                              drawn_share=drawn_share) for seed in (7, 7, 8))
    assert a.log_partition == b.log_partition and a.details == b.details
    assert c.log_partition != a.log_partition


def test_every_estimate_is_yielded_in_turn():
    model = formula(n=12, seed=1)
    seen = [r.n_samples for r in ss.sample_search_estimates(model, rng=0, n_samples=5)]
    assert seen == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("kw, words", [
    ({"n_samples": 0}, "n_samples"), ({"time_limit": -1.0}, "time_limit"),
    ({"delta": 1.0}, "delta"), ({"delta": 0.0}, "delta"),
    ({"drawn_share": -0.1}, "drawn_share"), ({"drawn_share": 1.5}, "drawn_share")])
def test_bad_arguments_are_refused_by_name(kw, words):
    with pytest.raises(ValueError, match=words):
        ss.sample_search_log_partition(formula(n=6), rng=0, **kw)


def test_a_model_that_is_not_a_constraint_model_is_refused():
    graded = formula(n=6, graded=True)
    with pytest.raises(ValueError, match="constraint model"):
        ss.sample_search_log_partition(graded, rng=0)
    with pytest.raises(TypeError):
        ss.sample_search_log_partition("model.uai", rng=0)


def test_a_deadline_ends_the_sampling():
    """Under a time limit the sampling stops by itself, with the samples drawn so far, or
    a ``TimeoutError`` when not one was drawn."""
    try:
        res = ss.sample_search_log_partition(formula(n=60, seed=3), rng=0, time_limit=0.2)
    except TimeoutError:
        return
    assert res.n_samples >= 1 and math.isfinite(res.log_partition)


def test_solve_pr_writes_sample_search_estimates_on_a_constraint_model(tmp_path,
                                                                      monkeypatch, capsys):
    """With the junction tree, the exact searches and the approximate counts ruled out,
    ``solve --task PR`` on a constraint model writes SampleSearch's estimates, each with
    its lower bound on stderr, and no importance sampling's bound."""
    import re

    from mrflib import io
    from mrflib.io import anytime, anytime_pr
    from mrflib.io.solve import main as solve_main

    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    monkeypatch.setattr(anytime, "HOPELESS_FACTOR", 0.0)
    monkeypatch.setattr(anytime, "EXACT_NS_PER_ENTRY", 1e15)
    monkeypatch.setattr(anytime, "start_exact_search", lambda *a, **k: (None, ""))
    monkeypatch.setattr(anytime_pr, "start_exact_search", lambda *a, **k: (None, ""))
    monkeypatch.setattr(anytime_pr.ApproxCounts, "wanted", staticmethod(lambda m: False))
    model = constraint_model(formula(n=16, seed=5), np.random.default_rng(1))
    io.write_uai(model, tmp_path / "m.uai")
    out = tmp_path / "m.PR"
    assert solve_main([str(tmp_path / "m.uai"), "--task", "PR", "--time-limit", "3",
                       "--out", str(out)]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if re.search(r"\banswer \d+: SampleSearch \(", ln)]
    assert lines and "importance sampling (" not in err
    assert all("with probability 0.95" in ln and "log10 Z >= " in ln for ln in lines)
    want = enumeration.log_partition(model) / math.log(10)
    assert io.read_answer(out).value == pytest.approx(want, abs=0.2)


def test_the_booleans_of_the_clauses_and_their_occurrences():
    held, occurrences = model_counting.clause_booleans([[1, -3], [3], []])
    assert held.tolist() == [1, 3] and occurrences.tolist() == [1, 2]
    assert ss._order(held, occurrences).tolist() == [1, 3]
