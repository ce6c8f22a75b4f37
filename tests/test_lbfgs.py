"""The one L-BFGS helper and its one convergence rule (``mrflib._support.optimizers.lbfgs``)."""

import pathlib
import re

import numpy as np

import mrflib
from mrflib import learning
from mrflib._support.optimizers import lbfgs, lbfgs_in_words, lbfgs_verdict, resolution
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.models import lattices as factor_models


def test_the_library_calls_scipy_minimize_once():
    root = pathlib.Path(mrflib.__file__).parent
    calls = [(p.name, m.group(0)) for p in root.rglob("*.py")
             for m in re.finditer(r"\bminimize\(", p.read_text())]
    assert len(calls) == 1 and calls[0][0] == "optimizers.py", calls


def test_a_stall_at_float64_resolution_is_converged_and_says_so():
    """A pseudo-likelihood summed over 64 variables is known to about 1e-14; no line
    search resolves a gradient below about 1e-7 there, so a tol of 1e-12 cannot be met:
    the fit stops at a gradient within that resolution and reports it as converged."""
    model = factor_models.potts_lattice(8, 8, 3, rng=0)
    x = factor_gibbs.gibbs(model, 300, burn_in=20, rng=1)
    fit = learning.fit(x, model, "mple", tol=1e-12)
    assert fit.converged
    assert fit.stop_reason.startswith("converged at float64 resolution"), fit.stop_reason
    short = learning.fit(x, model, "mple", max_steps=5)
    assert not short.converged and short.stop_reason.startswith("not converged: the limit")


def test_verdict_on_a_quadratic_and_the_resolution():
    a = np.linspace(-1.0, 1.0, 7)
    res = lbfgs(lambda z: (0.5 * np.sum((z - a) ** 2), z - a), np.zeros(7), max_iter=50,
                tol=1e-8)
    assert res.converged and res.grad_max <= 1e-8 and res.stop_reason.startswith("converged")
    assert np.allclose(res.x, a)
    assert resolution(0.5) == resolution(-1.0) == np.sqrt(np.finfo(float).eps)
    assert np.isclose(resolution(1600.0), np.sqrt(np.finfo(float).eps * 1600))


def test_stop_reasons_say_in_words_why_l_bfgs_stopped():
    """No optimizer status string ("ABNORMAL: ") reaches a reader: scipy's message is said in
    words, in every stop reason of the one rule."""
    assert lbfgs_in_words("ABNORMAL: ") == "its line search found no step that lowers the " \
                                            "objective"
    assert lbfgs_in_words("CONVERGENCE: RELATIVE REDUCTION OF F <= FACTR*EPSMCH") == \
        "the objective stopped changing by more than its relative tolerance"
    assert lbfgs_in_words(b"STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT".decode()) == \
        "it reached its limit of iterations"
    assert lbfgs_in_words("Something New") == "something new" and lbfgs_in_words("") != ""

    class Stalled:  # a line search that failed far above the objective's resolution
        jac, fun, status, nit, message = np.array([0.5]), 1.0, 2, 3, "ABNORMAL: "

    g, converged, reason = lbfgs_verdict(Stalled(), 1e-6, 100)
    assert not converged and "ABNORMAL" not in reason
    assert "L-BFGS stopped because its line search found no step" in reason


def _small_fit(**kw):
    from mrflib import BoltzmannMachine, exact, graphs

    bm = BoltzmannMachine.random(graphs.square_grid(2, 3), 6, rng=0)
    return learning.fit(exact.sample(bm, 300, rng=1), bm.edges, "mple", **kw)


def test_fit_repr_is_a_short_summary():
    fit = _small_fit(solver="gradient", max_steps=3000)
    text = repr(fit)
    assert "\n" not in text and len(text) < 400, text
    assert text.startswith("Fit(BoltzmannMachine, method='mple'")
    assert f"params {fit.params.shape}" in text and "converged=" in text


def test_progress_bar_promises_no_total(monkeypatch):
    """A fit stops at its tolerance, usually long before max_steps: the bar has no total
    (no estimate of a wait for all max_steps) and shows the gradient against tol."""
    import tqdm

    seen = {}
    real = tqdm.tqdm

    def spy(*args, **kwargs):
        seen.update(kwargs)
        bar = real(*args, **kwargs)
        seen["bar"] = bar
        return bar

    monkeypatch.setattr(tqdm, "tqdm", spy)
    fit = _small_fit(solver="gradient", max_steps=10_000, progress=True)
    assert fit.converged and fit.n_steps < 10_000
    assert seen["total"] is None
    assert "tol" in seen["bar"].postfix


def test_warm_up_is_a_subcommand(capsys):
    from mrflib.__main__ import main

    assert main(["warm-up", "--help"]) == 0
    assert "numba's cache" in capsys.readouterr().out
    assert main(["warm-up", "now"]) == 2
    assert "warm-up takes no arguments" in capsys.readouterr().err
    assert main(["--help"]) == 0 and "warm-up" in capsys.readouterr().out


def test_bench_first_call_reads_the_readme_example():
    from bench import bench_first_call

    code = bench_first_call.readme_example()
    compile(code, "README.md", "exec")
    assert "learning.fit" in code


def test_a_large_curvature_is_judged_by_the_predicted_decrease():
    """A parameter tied over many factors has a curvature far above one: its gradient stays
    above sqrt(eps |f|) where no step can lower the objective any more. The verdict then
    asks what a quasi-Newton step would gain (the pseudo-likelihood of a 427 x 640
    photograph: gradient 4.1e-4, predicted decrease 1.8e-11 on an objective of 9.5e4)."""

    class Tied:
        jac, fun, status, nit = np.array([4.08e-4, -1e-5]), 94846.8, 0, 19
        message = "CONVERGENCE: RELATIVE REDUCTION OF F <= FACTR*EPSMCH"
        decrement = 3.6e-11

    g, converged, reason = lbfgs_verdict(Tied(), 1e-8, 100)
    assert converged and reason.startswith("converged at float64 resolution: a full quasi")
    Tied.decrement = 1e-6  # a step would still gain far more than the rounding
    assert not lbfgs_verdict(Tied(), 1e-8, 100)[1]
    del Tied.decrement  # no inverse Hessian: the gradient's floor alone
    assert not lbfgs_verdict(Tied(), 1e-8, 100)[1]


def test_the_result_carries_its_newton_decrement():
    h = np.array([1.0, 4.0, 9.0])
    res = lbfgs(lambda z: (0.5 * np.sum(h * (z - 1.0) ** 2), h * (z - 1.0)), np.zeros(3),
                max_iter=2, tol=1e-12)
    g = np.asarray(res.jac)
    assert np.isclose(res.decrement, g @ res.hess_inv.matvec(g))
    M = np.diag(1.0 / np.sqrt(h))  # a preconditioner: the decrement is the same quantity
    pre = lbfgs(lambda z: (0.5 * np.sum(h * (z - 1.0) ** 2), h * (z - 1.0)), np.zeros(3),
                max_iter=50, tol=1e-12, precondition=(M, np.linalg.inv(M)))
    assert pre.converged and 0.0 <= pre.decrement < 1e-20
