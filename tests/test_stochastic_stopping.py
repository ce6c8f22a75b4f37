"""The averaged schedule and stopping rule of the learners that draw
(:mod:`mrflib._support.averaging`).

Every factor-graph learner that draws (CD, PCD, SMCI-PCD) ends ``converged`` under its
default rule within a modest step budget, near the exact MLE of small models (a 3x3 Potts
lattice of 3 states with fields, a 4x4 binary lattice, a tied Potts lattice); 1-SMCI
reaches its own fixed point under ``max |Δ| < tol``; a fit given too few steps or too
little time says so; the ±1 learners take the rule when asked. The rule itself is checked
on synthetic directions against a plain numpy window average.
"""

import numpy as np
import pytest

from mrflib import BoltzmannMachine, exact, graphs, learning
from mrflib._support.averaging import AveragedRule
from mrflib._support.optimizers import gradient_ascent
from mrflib.inference.smci import regions as smci_factor_graph
from mrflib.learning._layout import Layout, data_marginals
from mrflib.learning.tying import Tie
from mrflib.models import lattices

#: Steps every learner gets; the fits below end by the rule in 700 to 1,600.
BUDGET = 2500
#: Largest |log-table entry - MLE's| a finished fit may leave (0.01 to 0.07 seen, N = 1000).
TOLERANCE = 0.15


def _max_error(fit, reference):
    return max(float(np.max(np.abs(a - b)))
               for a, b in zip(fit.model.log_tables, reference.model.log_tables))


def _potts_tie(model):
    groups = ["field" if len(s) == 1 else ("h" if s[1] == s[0] + 1 else "v")
              for s in model.scopes]
    return Tie(model, groups, form={"h": "potts", "v": "potts"})


@pytest.fixture(scope="module", params=["potts-3x3-q3", "binary-4x4", "tied-potts-3x3"])
def problem(request):
    """A model, 1,000 exact draws, the learners' extra options and the exact MLE."""
    if request.param == "binary-4x4":
        truth = lattices.potts_lattice(4, 4, 2, coupling=0.5, rng=3)
    else:
        truth = lattices.potts_lattice(3, 3, 3, coupling=0.4, rng=0)
    data = exact.sample(truth, 1000, rng=1)
    extra = {"tie": _potts_tie(truth)} if request.param.startswith("tied") else {}
    return truth, data, extra, learning.fit(data, truth, "mle", **extra)


@pytest.mark.parametrize("method, kw", [
    ("pcd", dict(n_chains=1000)),
    ("cd", dict(k=5)),
    ("smci-pcd", dict(learning_rate=2.0)),
    ("smci-pcd", dict(estimator="mci")),
])
def test_every_learner_that_draws_finishes_near_the_mle(problem, method, kw):
    truth, data, extra, mle = problem
    kw = dict(dict(learning_rate=1.0), **kw)
    fit = learning.fit(data, truth, method, rng=0, max_steps=BUDGET, progress=False,
                       **extra, **kw)
    assert fit.converged, fit.stop_reason
    # the reason names the test that held: within its noise, or within tol (SMCI-PCD's
    # estimate can be far less noisy than tol)
    noise = fit.checks["z_rms"][-1] <= 1.5
    assert fit.stop_reason.startswith("converged: the averaged gradient was within "
                                      + ("its noise" if noise else "tol"))
    assert noise or fit.checks["within_tol"][-1]
    assert fit.n_steps < BUDGET and fit.options["schedule"] == "averaged"
    assert _max_error(fit, mle) < TOLERANCE
    # what the rule looked at: its last checks held, and the history shows them
    assert fit.checks["held"][-3:].all() and fit.checks["step"][-1] == fit.n_steps
    assert fit.checks["max_se"][-1] <= fit.options["tol"]
    assert fit.history["rule_held"].notna().sum() == len(fit.checks["step"])


@pytest.mark.parametrize("which", ["potts-3x3-q3", "binary-4x4"])
def test_one_smci_reaches_its_own_fixed_point(which):
    """1-SMCI's direction is exact given the data: it ends under ``max |Δ| < tol`` where
    the data's factor marginals equal its estimates on the data (eq. (26))."""
    truth = (lattices.potts_lattice(4, 4, 2, coupling=0.5, rng=3) if which == "binary-4x4"
             else lattices.potts_lattice(3, 3, 3, coupling=0.4, rng=0))
    data = exact.sample(truth, 1000, rng=1)
    fit = learning.fit(data, truth, "1-smci", learning_rate=2.0, progress=False)
    assert fit.converged and fit.stop_reason.startswith("converged: max |gradient| < tol")
    lay = Layout(truth)
    est = smci_factor_graph.factor_marginals(fit.model, data, method="1-smci")
    gap = lay.A.T @ (data_marginals(lay, data) - np.concatenate([np.ravel(m) for m in est]))
    assert np.max(np.abs(gap)) < 1e-5


def test_a_fit_given_too_few_steps_says_it_ran_out():
    truth = lattices.potts_lattice(3, 3, 3, coupling=0.4, rng=0)
    data = exact.sample(truth, 1000, rng=1)
    short = learning.fit(data, truth, "pcd", rng=0, max_steps=40, n_chains=200,
                         progress=False)
    assert not short.converged and short.n_steps == 40
    assert short.stop_reason.startswith("max_steps = 40 reached before the stopping rule held")
    assert "last check at step 39" in short.stop_reason
    timed = learning.fit(data, truth, "cd", rng=0, time_limit=0, progress=False)
    assert not timed.converged and timed.n_steps == 1
    assert timed.stop_reason.startswith("time limit of 0 s reached after 1 steps before the "
                                        "stopping rule held (no check yet")


def test_the_spin_learners_take_the_rule_when_asked():
    """The ±1 PCD keeps its constant schedule by default (no stopping rule); with
    ``schedule="averaged"`` it ends converged near the exact MLE."""
    bm = BoltzmannMachine.random(graphs.square_grid(3, 3), 9, bias_scale=0.3,
                                 coupling_scale=0.4, rng=3)
    spins = exact.sample(bm, 1000, rng=4)
    mle = learning.fit(spins, bm, "mle").model
    plain = learning.fit(spins, bm, "pcd", rng=5, max_steps=30, n_chains=500, progress=False)
    assert plain.checks is None and "has no stopping rule" in plain.stop_reason
    fit = learning.fit(spins, bm, "pcd", rng=5, max_steps=BUDGET, n_chains=500,
                       schedule="averaged", progress=False)
    assert fit.converged and fit.n_steps < BUDGET, fit.stop_reason
    assert np.max(np.abs(fit.model.params - mle.params)) < 0.05
    with pytest.raises(ValueError, match="schedule must be one of"):
        learning.fit(spins, bm, "pcd", rng=5, schedule="decay")


# ----------------------------------------------------------------- the rule itself
def _ascent(directions, steps, rule, record=True):
    """Run the driver on a direction read from a list (the iterate is irrelevant)."""
    it = iter(directions)
    return gradient_ascent(lambda theta: next(it).copy(), np.zeros(directions.shape[1]),
                           np.ones(directions.shape[1], dtype=bool), learning_rate=0.1,
                           max_steps=steps, tol=0.0, ref_coupling=None, n=0, record=record,
                           progress=False, desc="test", averaged=rule)


def test_noise_without_drift_converges_and_a_drift_never_does():
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(4000, 5))
    _, steps, converged, _, _, _ = _ascent(noise, 3999, AveragedRule(5, 0.0))
    assert converged and steps < 600
    _, steps, converged, _, _, _ = _ascent(noise + 0.3, 3999, AveragedRule(5, 0.0))
    assert not converged and steps == 3999
    # a precision the window cannot reach: the rule waits for longer windows
    _, steps, converged, _, _, _ = _ascent(noise, 3999, AveragedRule(5, 0.05))
    assert converged and 1024 < steps < 3999


def test_the_estimate_is_the_window_average_of_the_iterates():
    """Against numpy: the returned parameters are the mean of the iterates over the
    window's completed batches, and row k of the history is the fit of max_steps = k."""
    rng = np.random.default_rng(1)
    d = rng.normal(size=(300, 3))
    theta, steps, _, params, _, _ = _ascent(d, 299, AveragedRule(3, 0.0, patience=10**6))
    iterates = np.vstack([np.zeros(3), np.cumsum(0.1 * d, axis=0)])[:300]
    # 300 pairs: windows [0, 64), [64, 128), [96, 192), [128, 256), [192, 384), [256, 512)
    # of 16 batches of 4, 4, 6, 8, 12 and 16 steps; [192, 384) has 9 complete, at least 8:
    # it is the checked window, and the estimate its average
    assert np.allclose(theta, iterates[192:192 + 9 * 12].mean(axis=0), rtol=0, atol=1e-12)
    assert np.allclose(params[100], iterates[64:64 + 9 * 4].mean(axis=0), atol=1e-12)
    assert np.allclose(params[150], iterates[96:96 + 9 * 6].mean(axis=0), atol=1e-12)
    # between checked windows (130 pairs: [64, 128) complete, [96, 192) 5 batches of 6):
    # the last complete window's average
    assert np.allclose(params[129], iterates[64:128].mean(axis=0), atol=1e-12)
    assert np.allclose(params[20], iterates[:21].mean(axis=0), atol=1e-12)
    for k in (20, 100, 129, 200):
        again, _, _, _, _, _ = _ascent(d, k, AveragedRule(3, 0.0, patience=10**6))
        assert np.array_equal(again, params[k])


def test_a_bias_far_above_its_tiny_noise_stops_once_within_tol():
    """A direction with a constant offset of 1e-3 and noise of 1e-6 (SMCI-PCD's regime: an
    estimator far less noisy than the data's resolution) is never within its noise, but
    it is within ``tol = 2e-3``: the rule holds by that test, and says so; with the offset
    above ``tol`` it never holds."""
    rng = np.random.default_rng(2)
    directions = 1e-3 + 1e-6 * rng.normal(size=(4000, 5))
    rule = AveragedRule(5, 2e-3)
    _, steps, converged, _, _, _ = _ascent(directions, 3999, rule)
    assert converged and steps < 600
    checks = rule.history()
    assert checks["within_tol"][-1] and checks["z_rms"][-1] > rule.ratio
    rule = AveragedRule(5, 0.5e-3)
    _, steps, converged, _, _, _ = _ascent(directions, 3999, rule)
    assert not converged and steps == 3999 and not rule.history()["within_tol"].any()


def _windows(first, n_batches, steps):
    """The windows ``(start, length)`` of the rule's layout that begin before ``steps``:
    ``[0, first)``, then ``[s, 2s)`` for ``s`` in ``first 2^j`` and ``3 first 2^j / 2``."""
    starts = sorted({first * 2**j for j in range(20)} | {3 * first * 2**j // 2
                                                         for j in range(20)})
    return [(0, first)] + [(s, s) for s in starts if s < steps]


def test_a_check_at_every_batch_end_of_the_later_half_of_the_run():
    """Against the windows written out: the checks come at the batch ends, from the
    ``min_batches``-th on, of the two interleaved doubling sequences of windows, one
    window at a time, each over steps of the later half (to two thirds) of the run."""
    rng = np.random.default_rng(3)
    rule = AveragedRule(2, 0.0, patience=10**6)
    for g in rng.normal(size=(3000, 2)):
        rule.add(np.zeros(2), g)
    due = {}  # step -> the window checked there: the youngest whose batch ends there
    for s, length in _windows(64, 16, 3000):
        for b in range(8, 17):
            if s + b * (length // 16) <= 3000:
                due[s + b * (length // 16) - 1] = s
    checks = rule.history()
    assert list(zip(checks["step"], checks["window_start"])) == sorted(due.items())
    late = checks["step"] >= 95
    assert np.all(checks["window_start"][late] >= (checks["step"][late] + 1) / 2)
    assert np.all(checks["window_start"][late] <= 2 * (checks["step"][late] + 1) / 3)
    # between two checks at most a quarter of the window's start passes
    gaps = np.diff(checks["step"][late]) / checks["window_start"][late][1:]
    assert gaps.max() <= 0.25 + 1e-12


def test_the_rule_ends_a_transient_without_waiting_for_a_doubled_window():
    """A drift of 0.3 standard deviations for the first 500 steps, then noise alone: the
    rule stops before step 1,536 (windows of one doubling sequence, ``[512, 1024)`` and
    ``[1024, 2048)``, could stop it no sooner), and its last streak began in an earlier,
    shorter window than the one that ended it."""
    for seed in range(3):
        rng = np.random.default_rng(seed)
        d = rng.normal(size=(3000, 5))
        d[:500] += 0.3
        rule = AveragedRule(5, 0.0)
        steps = next(t + 1 for t in range(3000) if rule.add(np.zeros(5), d[t]))
        assert 500 < steps < 1536
        checks = rule.history()
        assert checks["held"][-3:].all() and checks["step"][-1] == steps - 1
        began = len(checks["held"]) - np.argmin(checks["held"][::-1])  # the streak's first
        assert checks["window_start"][began] < checks["window_start"][-1]


def test_the_default_step_is_larger_under_the_averaged_schedule():
    """The average's noise does not grow with the step, the approach is faster the larger
    it is: 1.0 under the averaged schedule, the ±1 learners' 0.2 under the constant one and
    for 1-SMCI."""
    truth = lattices.potts_lattice(2, 2, 2, coupling=0.4, rng=0)
    data = exact.sample(truth, 50, rng=1)
    for method in ("cd", "pcd", "smci-pcd"):
        fit = learning.fit(data, truth, method, rng=0, max_steps=1, progress=False)
        assert fit.options["learning_rate"] == 1.0
        fit = learning.fit(data, truth, method, rng=0, max_steps=1, progress=False,
                           schedule="constant")
        assert fit.options["learning_rate"] == 0.2
    assert learning.fit(data, truth, "1-smci", max_steps=1).options["learning_rate"] == 0.2


def test_the_stop_reason_counts_the_streak_against_the_patience():
    """A streak longer than the patience (it waited to reach a later window) is told as
    such, never as "5 of the 3 checks required"."""
    rng = np.random.default_rng(0)
    rule = AveragedRule(5, 0.0)
    for g in rng.normal(size=(4000, 5)):
        if rule.add(np.zeros(5), g):
            break
    assert rule.converged and rule.streak >= rule.patience
    text = rule.describe()
    assert f"held at the last {rule.streak} consecutive checks (3 required" in text
    assert " of the 3 consecutive" not in text
    rule.converged = False
    assert "all in the window where it began" in rule.describe()
    rule.streak = 1
    assert "held at 1 of the 3 consecutive checks required" in rule.describe()
