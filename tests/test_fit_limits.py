"""Every learner of ``learning.fit`` under a time limit, and its progress lines.

A 4x4 grid for the ±1 learners and a 2x3 Potts lattice for the factor-graph ones: every
method of the dispatch stops after one step under ``time_limit=0``, with the one stop
reason; a fit far from its end stops near a limit of one second; the step loops report
through :mod:`mrflib._support.progress`.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from mrflib import BoltzmannMachine, exact, graphs, learning
from mrflib._support import progress
from mrflib._support.optimizers import Deadline
from mrflib.learning import _limits
from mrflib.models import lattices

#: (method, solver) of every ±1 learner, each solver it allows.
BM_LEARNERS = [("mle", "exact"), ("mle", "gradient"), ("mple", "gradient"),
               ("mple", "lbfgs"), ("rm", "gradient"), ("rm", "lbfgs"), ("mpf", "gradient"),
               ("mpf", "lbfgs"), ("1-smci", None), ("1-smci", "anderson"), ("s2-smci", None),
               ("cd", None), ("pcd", None), ("smci-pcd", None), ("lap", None)]
FG_LEARNERS = ["mle", "mple", "lap", "1-smci", "cd", "pcd", "smci-pcd"]
STOCHASTIC = ("cd", "pcd", "smci-pcd")


@pytest.fixture(scope="module")
def grid():
    truth = BoltzmannMachine.random(graphs.square_grid(4, 4), 16, bias_scale=0.3,
                                    coupling_scale=0.4, rng=3)
    return truth, exact.sample(truth, 400, rng=4)


@pytest.fixture(scope="module")
def potts():
    truth = lattices.potts_lattice(2, 3, 3, coupling=0.4, rng=0)
    return truth, exact.sample(truth, 400, rng=1)


def _options(method: str, solver: str | None = None) -> dict:
    kw = {} if solver is None else {"solver": solver}
    if method in STOCHASTIC:
        kw.update(rng=0)
    if method == "pcd":
        kw.update(n_chains=50)
    return kw


@pytest.mark.parametrize("method, solver", BM_LEARNERS)
def test_time_limit_zero_gives_one_step(grid, method, solver):
    """``time_limit=0``: one step (one L-BFGS iteration, one LAP clique fit), then the
    shared stop reason; not converged."""
    truth, data = grid
    fit = learning.fit(data, truth, method, time_limit=0, progress=False,
                       **_options(method, solver))
    assert not fit.converged
    assert fit.stop_reason.startswith("time limit of 0 s reached after 1 "), fit.stop_reason
    if method == "lap":
        assert "1 of 40 clique fits" in fit.stop_reason
    else:
        assert fit.n_steps == 1


@pytest.mark.parametrize("method", FG_LEARNERS)
def test_time_limit_zero_gives_one_step_factor_graph(potts, method):
    truth, data = potts
    fit = learning.fit(data, truth, method, time_limit=0, progress=False, **_options(method))
    assert not fit.converged
    assert fit.stop_reason.startswith("time limit of 0 s reached after 1 "), fit.stop_reason
    if method == "lap":
        assert f"1 of {truth.n_factors} auxiliary fits" in fit.stop_reason
    else:
        assert fit.n_steps == 1


@pytest.mark.parametrize("method, solver", [("1-smci", None), ("1-smci", "anderson"),
                                            ("pcd", None)])
def test_a_gradient_fit_stopped_at_step_k_is_the_fit_of_max_steps_k(grid, method, solver):
    """The time limit ends the loop where ``max_steps`` would: same parameters, same
    chains, same history, bit for bit."""
    truth, data = grid
    kw = _options(method, solver)
    stopped = learning.fit(data, truth, method, time_limit=0, progress=False, **kw)
    short = learning.fit(data, truth, method, max_steps=1, progress=False, **kw)
    assert np.array_equal(stopped.model.params, short.model.params)
    assert np.array_equal(stopped.params, short.params)
    if method == "pcd":
        assert np.array_equal(stopped.chains, short.chains)


def test_a_long_fit_stops_near_its_limit(grid):
    """1-SMCI with a million steps on the 4x4 grid would run for minutes; a limit of one
    second stops it (the 10 s backstop only guards against a loaded machine)."""
    truth, data = grid
    start = time.monotonic()
    fit = learning.fit(data, truth, "1-smci", max_steps=10**6, tol=1e-300, time_limit=1,
                       record=False, progress=False)
    assert time.monotonic() - start <= 1 + 10
    assert not fit.converged and 1 < fit.n_steps < 10**6
    assert fit.stop_reason == f"time limit of 1 s reached after {fit.n_steps} steps"


def test_a_long_factor_graph_fit_stops_near_its_limit(potts):
    """PCD under a constant step never stops by itself (``tol`` None): the limit ends it,
    however fast the machine (under the averaged schedule its stopping rule may hold
    within the second)."""
    truth, data = potts
    start = time.monotonic()
    fit = learning.fit(data, truth, "pcd", max_steps=10**6, time_limit=1, record=False,
                       progress=False, rng=0, n_chains=50, schedule="constant")
    assert time.monotonic() - start <= 1 + 10
    assert not fit.converged and 1 < fit.n_steps < 10**6
    assert fit.stop_reason.startswith(f"time limit of 1 s reached after {fit.n_steps} steps")


def test_partial_lap_keeps_the_fitted_cliques_and_zeros_the_others(grid):
    """LAP stopped after its first local fit (node 0's clique): that bias is the full
    fit's, every other parameter zero, and the reason says it is no whole estimate."""
    truth, data = grid
    full = learning.fit(data, truth, "lap", progress=False)
    part = learning.fit(data, truth, "lap", time_limit=0, progress=False)
    assert part.model.bias[0] == full.model.bias[0] != 0
    assert np.all(part.model.bias[1:] == 0) and np.all(part.model.coupling == 0)
    assert "not a LAP estimate of the whole model" in part.stop_reason


def test_lap_refuses_a_time_limit_across_processes(grid):
    truth, data = grid
    with pytest.raises(ValueError, match="time_limit is polled"):
        learning.fit(data, truth, "lap", time_limit=5, n_jobs=2)


@pytest.mark.parametrize("method, solver", [("1-smci", None), ("1-smci", "anderson"),
                                            ("mple", "lbfgs"), ("mle", "exact"),
                                            ("lap", None)])
def test_progress_lines_under_a_reporter(grid, method, solver):
    """Inside ``reporting(say, every=0)`` every step loop sends lines, even with
    ``progress=False`` (the caller asked for them)."""
    truth, data = grid
    lines: list[str] = []
    with progress.reporting(lines.append, every=0):
        learning.fit(data, truth, method, max_steps=5, progress=False,
                     **_options(method, solver))
    assert lines and all("% done" in line for line in lines), lines
    if method != "lap":
        assert f"fit {method}" in lines[0] and "(step 1 of 5)" in lines[0]


@pytest.mark.parametrize("method", ["mple", "lap", "pcd"])
def test_progress_lines_under_a_reporter_factor_graph(potts, method):
    truth, data = potts
    lines: list[str] = []
    with progress.reporting(lines.append, every=0):
        learning.fit(data, truth, method, progress=False, **_options(method),
                     **({} if method == "lap" else {"max_steps": 3}))
    assert lines and all(line.startswith("fit ") and "% done" in line for line in lines)


def test_share_done_is_that_of_steps_or_time_whichever_is_nearer():
    """The ticker's share: steps of ``max_steps`` or seconds of the limit (fake clock)."""
    now = [0.0]
    lines: list[str] = []
    deadline = Deadline(10.0, clock=lambda: now[0])
    from mrflib._support.optimizers import step_ticker

    with progress.reporting(lines.append, every=0):
        tick = step_ticker("fit x", 1000, deadline)
        now[0] = 5.0
        tick(10)     # 1% of the steps, 50% of the time
        now[0] = 6.0
        tick(900)    # 90% of the steps
    assert lines == ["fit x: 50% done (step 10 of 1000)", "fit x: 90% done (step 900 of 1000)"]
    assert step_ticker("fit x", 1000, deadline) is None  # no reporter: nothing to call


def test_a_fit_logs_to_a_stderr_that_is_no_terminal(grid, potts, capsys, monkeypatch):
    """``progress=None`` off a terminal: lines on stderr (every ``LOG_EVERY`` seconds, here
    0); ``progress=False``, or a terminal (where the bar shows), none."""
    truth, data = grid
    monkeypatch.setattr(_limits, "LOG_EVERY", 0.0)
    monkeypatch.setattr(_limits, "_stderr_is_terminal", lambda: False)
    learning.fit(data, truth, "1-smci", max_steps=3)
    learning.fit(potts[1], potts[0], "pcd", max_steps=3, rng=0, n_chains=50)
    err = capsys.readouterr().err.splitlines()
    assert any(line.startswith("fit 1-smci: ") for line in err), err
    assert any(line.startswith("fit pcd: ") for line in err), err
    learning.fit(data, truth, "1-smci", max_steps=3, progress=False)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(_limits, "_stderr_is_terminal", lambda: True)
    learning.fit(data, truth, "1-smci", max_steps=3)
    assert "fit 1-smci: " not in capsys.readouterr().err
    # a Jupyter kernel's stderr becomes part of the page: nothing there
    monkeypatch.setattr(_limits, "_stderr_is_terminal", lambda: False)
    monkeypatch.setattr(_limits, "_in_kernel", lambda: True)
    learning.fit(data, truth, "1-smci", max_steps=3)
    assert "fit 1-smci: " not in capsys.readouterr().err


def test_no_kernel_runs_in_the_test_process():
    assert not _limits._in_kernel()


@pytest.mark.parametrize("bad", [-1, -0.5, math.nan, math.inf, "1", 10**400, [1]],
                         ids=["-1", "-0.5", "nan", "inf", "text", "10**400", "list"])
@pytest.mark.parametrize("family", ["bm", "fg"])
def test_a_bad_time_limit_is_refused_by_name(grid, potts, bad, family):
    truth, data = grid if family == "bm" else potts
    with pytest.raises(ValueError, match="time_limit must be"):
        learning.fit(data, truth, "mple", time_limit=bad)


def test_a_stochastic_fit_says_it_has_no_stopping_rule(grid):
    """PCD and SMCI-PCD never report convergence: with the default ``tol = 0`` their
    stopping rule cannot fire, and a noisy estimate under a given ``tol`` proves none."""
    truth, data = grid
    for method in ("pcd", "smci-pcd"):
        fit = learning.fit(data, truth, method, max_steps=3, progress=False, **_options(method))
        assert not fit.converged and "has no stopping rule" in fit.stop_reason
    noisy = learning.fit(data, truth, "pcd", tol=10.0, progress=False, **_options("pcd"))
    assert not noisy.converged and noisy.n_steps == 0
    assert noisy.stop_reason.startswith("stopped: the stochastic gradient estimate fell")


def test_fit_docstring_names_the_learners_taking_tie():
    doc = learning.fit.__doc__
    assert "for every one but ``\"lap\"``" in doc and "refuses ``tie``" in doc
