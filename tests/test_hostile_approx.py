"""A hostile audit of approximate inference, slicing and the anytime answers.

Every public entry of :mod:`mrflib.inference.approx` (each method),
:mod:`~mrflib.inference.approx.lbp`,
:mod:`~mrflib.inference.approx.mean_field`, :mod:`~mrflib.inference.approx.wmb`,
:mod:`~mrflib.inference.sampling.chains`, :mod:`~mrflib.inference.smci.regions`,
:mod:`~mrflib.inference.exact.sliced` and :mod:`mrflib.io.anytime`, given bad arguments,
degenerate models (one variable, no factor, ``Z = 0``, constant factors), log-weights from
1 to ``±1e15`` mixed with ``-inf``, and checked against the exact answer of small random
models: an error naming the argument, or finite probabilities that sum to one, bounds that
bound ``log Z``, and the same bits for the same seed.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from _random_factor_graphs import random_factor_graph

from mrflib import BoltzmannMachine, FactorGraph, approx, exact, graphs
from mrflib.inference.approx import lbp, mean_field, wmb
from mrflib.inference.exact import sliced
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.inference.smci import regions as smci_factor_graph
from mrflib.io import anytime
from mrflib.models.precision import PrecisionWarning, magnitude

I = -np.inf
METHODS = approx.available()
SAMPLERS = {"gibbs": {"n_samples": 300}, "smci": {"n_samples": 200}}
FG = FactorGraph([2, 3], [(0,), (0, 1)], [np.array([0.1, -0.2]), np.arange(6.0).reshape(2, 3) / 5])


def opts(method):
    return SAMPLERS.get(method, {})


def run(model, method, **kw):
    return approx.marginals(model, method, **{"rng": 0, **opts(method), **kw})


def assert_distributions(marginals, cards):
    assert [len(p) for p in marginals] == list(cards)
    for p in marginals:
        assert np.all(np.isfinite(p)) and np.all(p >= 0)
        assert p.sum() == pytest.approx(1.0, abs=1e-12)


def max_error(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kw)


# --------------------------------------------------------------------------- bad arguments
BAD_TIME = [-1.0, float("nan"), float("inf"), "1", [1]]
BAD_RNG = ["0", 1.5, True, -1, np.random.RandomState(0)]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("value", BAD_TIME, ids=repr)
def test_bad_time_limit_is_named(method, value):
    with pytest.raises(ValueError, match="time_limit"):
        run(FG, method, time_limit=value)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("value", BAD_RNG, ids=repr)
def test_bad_rng_is_named_by_every_method(method, value):
    with pytest.raises(ValueError, match="rng"):
        run(FG, method, rng=value)


def _sliced_pr(model, **kw):
    return sliced.solve(model, "PR", **kw)


BAD_OPTIONS = [
    *[(wmb.weighted_mini_bucket, "tol", v) for v in (float("nan"), -1.0, "1", None, [1])],
    *[(wmb.weighted_mini_bucket, "ibound", v) for v in (0, 1.5, True)],
    *[(lbp.loopy_bp, "factor_beliefs", v) for v in ("1", None, 1)],
    *[(lbp.loopy_bp, "damping", v) for v in (1.0, -0.1, float("nan"))],
    *[(mean_field.mean_field, "init", v) for v in ([[1, 0]], [np.ones(2), -np.ones(3)])],
    *[(_sliced_pr, "time_limit", v) for v in ("1", None, [1], True, float("nan"), 0)],
    *[(_sliced_pr, "memory", v) for v in ("1", [1], True, -1)],
]


@pytest.mark.parametrize(("fn", "name", "value"), BAD_OPTIONS,
                         ids=lambda x: getattr(x, "__name__", repr(x)))
def test_bad_option_is_named(fn, name, value):
    with pytest.raises(ValueError, match=name):
        fn(FG, **{name: value})


@pytest.mark.parametrize("fn", [anytime.trivial_answer, anytime.approximate_answer,
                                lambda m, t: sliced.solve(m, t)],
                         ids=["trivial", "approximate", "sliced"])
@pytest.mark.parametrize("task", ["pr", None, 1, ["PR"]], ids=repr)
def test_bad_task_is_named(fn, task):
    with pytest.raises(ValueError, match="task"):
        fn(FG, task)


@pytest.mark.parametrize("fn", [approx.marginals, approx.log_partition_bounds, lbp.loopy_bp,
                                mean_field.mean_field, wmb.weighted_mini_bucket,
                                lambda m: anytime.trivial_answer(m, "PR"),
                                lambda m: anytime.approximate_answer(m, "MAR"),
                                lambda m: sliced.solve(m, "PR")])
@pytest.mark.parametrize("model", [None, 3, np.zeros(3)], ids=repr)
def test_a_non_model_is_a_type_error(fn, model):
    with pytest.raises(TypeError, match="model"):
        fn(model)


@pytest.mark.parametrize(("task", "method"), [("PR", "lbp"), ("MPE", "mean-field"),
                                              ("MAR", "nope"), ("MAR", None)])
def test_approximate_answer_names_a_method_it_does_not_take(task, method):
    assert "wmb" in anytime.methods(task)
    with pytest.raises(ValueError, match="method"):
        anytime.approximate_answer(FG, task, method=method)


@pytest.mark.parametrize("method", ["nope", "lbp"])
def test_solve_refuses_a_method_it_does_not_take(tmp_path, capsys, method):
    """``--method`` is checked with the other arguments, also when the model would be
    answered exactly (it was ignored then): a usage error, one line, status 2, no answer
    file."""
    from mrflib.io import solve

    path = tmp_path / "m.uai"
    path.write_text("MARKOV\n1\n2\n1\n1 0\n2\n0.5 0.5\n")
    out = tmp_path / "m.PR"
    with pytest.raises(SystemExit) as stop:
        solve.main([str(path), "--task", "PR", "--time-limit", "5", "--method", method,
                    "--out", str(out)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "--method" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


HUGE = FactorGraph([10**12, 2], [(1,)], [np.array([0.0, 1.0])])


@pytest.mark.parametrize("fn", [lambda m: approx.marginals(m, "auto"),
                                lambda m: approx.marginals(m, "lbp"),
                                lambda m: approx.marginals(m, "mean-field"),
                                lambda m: approx.marginals(m, "wmb"),
                                lambda m: approx.log_partition_bounds(m, time_limit=0),
                                lambda m: anytime.trivial_answer(m, "MAR"),
                                lambda m: anytime.approximate_answer(m, "PR")],
                         ids=["auto", "lbp", "mean-field", "wmb", "bounds", "trivial",
                              "approximate"])
def test_a_huge_cardinality_is_refused_before_allocating(fn):
    """A variable of 10^12 states (in no factor): a ``ValueError`` giving the memory the
    answer would need (WMB and the trivial MAR answer raised numpy's MemoryError)."""
    with pytest.raises(ValueError, match="memory"):
        fn(HUGE)


# --------------------------------------------------------------------------- time and seeds
@pytest.mark.parametrize("method", METHODS)
def test_a_zero_time_limit_gives_one_step(method):
    res = run(FG, method, time_limit=0)
    assert_distributions(res.marginals, FG.cardinalities)


@pytest.mark.parametrize("fn", [lambda m, t: factor_gibbs.gibbs_marginals(
    m, n_samples=50, burn_in=2, time_limit=t, rng=0), lambda m, t: smci_factor_graph.smci_marginals(
    m, n_samples=50, burn_in=2, time_limit=t, rng=0)], ids=["gibbs", "smci"])
def test_samplers_take_a_zero_time_limit(fn):
    assert_distributions(fn(FG, 0.0)["marginals"], FG.cardinalities)


@pytest.mark.parametrize("method", ["gibbs", "smci"])
def test_every_accepted_rng_gives_the_same_bits(method):
    got = [run(FG, method, rng=r).marginals
           for r in (5, np.int64(5), np.random.default_rng(5), 5)]
    for other in got[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(got[0], other))


# --------------------------------------------------------------------------- degenerate models
def _models():
    ones = np.array([0.0, 1.0])
    return {
        "one variable, no factor": FactorGraph([3], [], []),
        "one variable": FactorGraph([3], [(0,)], [np.array([0.0, 1.0, 2.0])]),
        "a variable in no factor": FactorGraph([3, 2], [(1,)], [ones]),
        "one state": FactorGraph([1, 2], [(0, 1)], [np.array([[0.0, 1.0]])]),
        "constant factor": FactorGraph([2], [(), (0,)], [np.array(3.0), ones]),
        "forced by zeros": FactorGraph([2, 2], [(0,), (1,), (0, 1)],
                                       [np.array([0.0, I]), np.array([I, 0.0]),
                                        np.array([[I, 0.0], [0.0, 0.0]])]),
        "big card": FactorGraph([2000], [(0,)], [np.linspace(-1, 1, 2000)]),
    }


DEGENERATE = _models()
ZERO = {
    "all-zero table": FactorGraph([2, 2], [(0, 1)], [np.full((2, 2), I)]),
    "zero constant": FactorGraph([2], [(), (0,)], [np.array(I), np.array([0.0, 1.0])]),
    "contradiction": FactorGraph([2, 2], [(0,), (1,), (0, 1)],
                                 [np.array([0.0, I]), np.array([I, 0.0]),
                                  np.array([[0.0, I], [0.0, 0.0]])]),
}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", DEGENERATE)
def test_degenerate_models_get_exact_answers(name, method):
    model = DEGENERATE[name]
    truth = exact.marginals(model)
    res = run(model, method)
    assert_distributions(res.marginals, model.cardinalities)
    tol = 0.1 if method == "gibbs" else 1e-9
    assert max_error(res.marginals, truth) < tol
    if res.log_partition is not None:
        assert res.log_partition == pytest.approx(exact.log_partition(model), abs=1e-9)


@pytest.mark.parametrize("name", ["one variable, no factor", "a variable in no factor"])
@pytest.mark.parametrize("order", [0, 1, 2])
def test_smci_of_a_variable_in_no_factor(name, order):
    """SMCI's factor marginals and asymptotic variances where a variable is in no factor
    (``max()`` of nothing and an ``opt_einsum`` error before): exact, zero variance."""
    model = DEGENERATE[name]
    x = factor_gibbs.gibbs(model, 40, burn_in=2, rng=0)
    got = smci_factor_graph.factor_marginals(model, x, method=smci_factor_graph.method_name(order))
    want = exact.factor_marginals(model)
    assert len(got) == len(want) == len(model.scopes)
    if got:
        assert max_error(got, want) < (0.3 if order == 0 else 1e-12)
    if order:
        method = smci_factor_graph.method_name(order)
        for v, p in zip(smci_factor_graph.asymptotic_variance(model, method=method),
                        exact.marginals(model)):
            assert np.all(np.abs(v) < 1e-12) and v.shape == p.shape


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", ZERO)
def test_zero_partition_function_is_said(name, method):
    """``Z = 0``: a ``ValueError`` saying so, or (mean field) the bound ``-inf``."""
    model = ZERO[name]
    try:
        res = quiet(run, model, method)
    except ValueError as err:
        assert "Z = 0" in str(err)
        return
    assert method == "mean-field" and res.log_partition == -np.inf


@pytest.mark.parametrize("name", ZERO)
def test_zero_partition_function_bounds_and_answers(name):
    model = ZERO[name]
    assert quiet(approx.log_partition_bounds, model) == (-np.inf, -np.inf)
    assert quiet(approx.log_partition_bounds, model, time_limit=0) == (-np.inf, -np.inf)
    assert anytime.trivial_answer(model, "PR") >= quiet(exact.log_partition, model)


# --------------------------------------------------------------------------- extreme weights
def _extreme():
    t = np.array([[1e15, 0.0], [0.0, 1e15]])
    return {
        "unary +1e15": FactorGraph([2, 2, 2], [(0,), (0, 1), (1, 2)],
                                   [np.array([0.0, 1e15]), np.array([[0, 1.0], [1, 0]]),
                                    np.array([[0, 0.5], [0.3, 0]])]),
        "unary -1e15": FactorGraph([2, 2, 2], [(0,), (0, 1), (1, 2)],
                                   [np.array([0.0, -1e15]), np.array([[0, 1.0], [1, 0]]),
                                    np.array([[0, 0.5], [0.3, 0]])]),
        "-inf and 1e15": FactorGraph([2, 2, 2], [(0, 1), (1, 2), (0, 2)],
                                     [np.array([[I, 1e15], [0, I]]),
                                      np.array([[0, -1e15], [1e15, I]]),
                                      np.array([[0, 0.5], [0.3, 0]])]),
        "frustrated loop": FactorGraph([2, 2, 2, 2], [(0, 1), (1, 2), (2, 3), (0, 3), (0,)],
                                       [t, t, t, t[::-1], np.array([0.0, 1.0])]),
    }


EXTREME = _extreme()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", EXTREME)
def test_extreme_weights_give_finite_answers_and_one_warning(name, method):
    """Past the precision limit: finite normalized marginals, a finite ``log Z`` estimate
    or bound, and exactly one :class:`PrecisionWarning` per call."""
    model = EXTREME[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = run(model, method)
    assert [w.category for w in caught] == [PrecisionWarning]
    assert_distributions(res.marginals, model.cardinalities)
    assert res.log_partition is None or math.isfinite(res.log_partition)


@pytest.mark.parametrize("name", EXTREME)
def test_extreme_weights_bounds_warn_once(name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lo, hi = approx.log_partition_bounds(EXTREME[name], time_limit=0)
    assert [w.category for w in caught] == [PrecisionWarning]
    rounding = 8 * np.finfo(float).eps * magnitude(EXTREME[name].log_tables)
    assert math.isfinite(lo) and math.isfinite(hi) and lo <= hi + rounding


def test_bounds_never_turn_a_refusal_into_minus_infinity(monkeypatch):
    """Only a proof of ``Z = 0`` makes a bound ``-inf``: WMB refused for memory is an error
    (it gave an upper bound of ``-inf``, below log Z)."""
    model = FactorGraph([2, 2], [(0, 1)], [np.array([[0.0, 1.0], [1.0, 0.0]])])

    def refuse(need, what):
        raise ValueError(f"{what} need {need} bytes")

    monkeypatch.setattr(wmb, "require_memory", refuse)
    with pytest.raises(ValueError, match="weighted mini-bucket"):
        approx.log_partition_bounds(model, time_limit=0)


# --------------------------------------------------------------------------- random models
SCALES = [1.0, 30.0, 1e3, 1e6, 1e8]


def random_model(seed, scale):
    rng = np.random.default_rng(seed)
    return random_factor_graph(rng, n=int(rng.integers(1, 7)), n_factors=int(rng.integers(0, 7)),
                               zeros=0.3 * (seed % 2), scale=scale, evidence=int(seed % 3 == 0))


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("seed", range(12))
def test_random_models_against_exact(seed, scale):
    """lbp, mean field, WMB and auto: normalized marginals, mean field <= log Z <= WMB,
    auto exact, the bounds bracketing log Z (exact, and approximate at time_limit=0); the
    trivial PR answer an upper bound."""
    model = random_model(seed, scale)
    assert magnitude(model.log_tables) < 2**32  # within the precision limit: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        logz = exact.log_partition(model, method="enumerate")
        truth = exact.marginals(model, method="enumerate")
        tol = 1e-9 * (1 + abs(logz)) + 64 * np.finfo(float).eps * magnitude(model.log_tables)
        res = {m: approx.marginals(model, m) for m in ("lbp", "mean-field", "wmb", "auto")}
        for r in res.values():
            assert_distributions(r.marginals, model.cardinalities)
            assert math.isfinite(r.log_partition)
        assert res["mean-field"].log_partition <= logz + tol
        assert res["wmb"].log_partition >= logz - tol
        assert res["auto"].method == "exact"
        assert max_error(res["auto"].marginals, truth) < 1e-9
        for limit in (None, 0):
            lo, hi = approx.log_partition_bounds(model, time_limit=limit)
            assert lo <= logz + tol and hi >= logz - tol
            assert lo > -np.inf  # a state of positive weight is found, even at time 0
    assert anytime.trivial_answer(model, "PR") >= logz / math.log(10) - tol


@pytest.mark.parametrize("scale", [1.0, 30.0, 1e6])
@pytest.mark.parametrize("seed", range(6))
def test_mini_buckets_and_slices_against_exact(seed, scale):
    """WMB with buckets split (i-bound 1 and 2) bounds log Z from above and never claims
    Z = 0 of a model with a state of positive weight; sliced exact inference under a
    memory budget of a few table entries gives the exact PR, MAR and MPE."""
    rng = np.random.default_rng(seed)
    model = random_factor_graph(rng, n=7, n_factors=8, max_card=3, zeros=0.3 * (seed % 2),
                                scale=scale, evidence=int(seed % 3 == 0))
    logz = exact.log_partition(model, method="enumerate")
    tol = 1e-9 * (1 + abs(logz)) + 64 * np.finfo(float).eps * magnitude(model.log_tables)
    for ibound in (1, 2):
        res = wmb.weighted_mini_bucket(model, ibound=ibound)
        assert res.log_upper >= logz - tol
        assert_distributions(res.marginals, model.cardinalities)
    truth = exact.marginals(model, method="enumerate")
    _, best = exact.map_assignment(model)
    for memory in (256,):
        assert sliced.solve(model, "PR", memory=memory)[0] == pytest.approx(logz, abs=tol)
        value, out = sliced.solve(model, "MAR", memory=memory)
        assert value == pytest.approx(logz, abs=tol) and max_error(out, truth) < 1e-7
        value, x = sliced.solve(model, "MPE", memory=memory)
        assert value == pytest.approx(best, abs=tol)
        assert model.log_weight(x[None])[0] == pytest.approx(best, abs=tol)


@pytest.mark.parametrize("scale", [0.3, 3.0, 30.0, 1e3])
@pytest.mark.parametrize("seed", range(6))
def test_boltzmann_bounds_against_exact(seed, scale):
    """The mean-field and third-order lower bounds and WMB's upper bound of a Boltzmann
    machine (``time_limit=0`` rules exact out) bracket the exact log Z."""
    g, n = [(graphs.square_grid(3, 3), 9), (graphs.complete(5), 5),
            (graphs.square_grid(2, 4), 8)][seed % 3]
    bm = BoltzmannMachine.random(g, n, bias_scale=scale, coupling_scale=scale, rng=seed)
    logz = exact.log_partition(bm)
    lo, hi = approx.log_partition_bounds(bm, time_limit=0)
    tol = 1e-9 * (1 + abs(logz))
    assert math.isfinite(lo) and lo <= logz + tol and hi >= logz - tol


@pytest.mark.parametrize("method", ["gibbs", "smci"])
@pytest.mark.parametrize("seed", range(10))
def test_samplers_error_within_their_standard_errors(seed, method):
    """At weights of order one (chains that mix), every probability is within six standard
    errors (plus 0.03) of the exact one, and the same seed gives the same bits."""
    model = random_model(seed, 1.0)
    truth = exact.marginals(model)
    res = run(model, method, rng=seed)
    assert_distributions(res.marginals, model.cardinalities)
    for p, q, se in zip(res.marginals, truth, res.standard_errors):
        assert np.all(np.abs(p - q) <= 6 * np.nan_to_num(se) + 0.03)
    again = run(model, method, rng=np.random.default_rng(seed))
    assert all(np.array_equal(a, b) for a, b in zip(res.marginals, again.marginals))
