"""1-SMCI learning by Anderson acceleration (``solver="anderson"``), both model kinds.

1-SMCI's direction is a deterministic function of the parameters, so its plain ascent is
a fixed-point iteration; the accelerated one must stop at the same rule
(``max |gradient| < tol``) at the same fixed point, sooner. Tiny models (q = 2, 3
lattices and a random graph, a 3x3 grid and a random graph of spins), where the plain
ascent converges too; the accelerated step itself against a linear problem with a known
answer; determinism, the deadline, and bad solver names.
"""

from __future__ import annotations

import numpy as np
import pytest

from mrflib import BoltzmannMachine, exact, graphs, learning
from mrflib._support.anderson import Anderson
from mrflib._support.optimizers import Deadline, gradient_ascent
from mrflib.inference.sampling import chains
from mrflib.models import lattices
from mrflib.models.factor_graph import FactorGraph

TOL = 1e-9


def _random_potts(q: int) -> FactorGraph:
    """A Potts model of q states on a random graph of 7 variables, with fields."""
    rng = np.random.default_rng(5)
    edges = graphs.random_graph(7, 0.5, rng=6)
    scopes = [(i,) for i in range(7)] + [tuple(int(v) for v in e) for e in edges]
    tables = ([rng.normal(0.0, 0.3, q) for _ in range(7)]
              + [0.6 * np.eye(q) * rng.choice([-1.0, 1.0]) for _ in edges])
    return FactorGraph([q] * 7, scopes, tables)


FACTOR_GRAPHS = {
    "lattice-q2": lambda: lattices.potts_lattice(3, 3, 2, coupling=0.5, rng=0),
    "lattice-q3": lambda: lattices.potts_lattice(3, 3, 3, coupling=0.5, couplings="mixed",
                                                 rng=0),
    "random-q3": lambda: _random_potts(3),
}


def _spin_machines():
    grid = graphs.square_grid(3, 3)
    rand = graphs.random_graph(8, 0.4, rng=2)
    return {"grid": BoltzmannMachine.random(grid, 9, bias_scale=0.3, coupling_scale=0.5,
                                            rng=1),
            "random": BoltzmannMachine.random(rand, 8, bias_scale=0.3, coupling_scale=0.5,
                                              rng=3)}


@pytest.fixture(scope="module", params=list(FACTOR_GRAPHS))
def factor_graph(request):
    truth = FACTOR_GRAPHS[request.param]()
    return truth, exact.sample(truth, 500, rng=1)


@pytest.fixture(scope="module", params=["grid", "random"])
def machine(request):
    truth = _spin_machines()[request.param]
    return truth, exact.sample(truth, 500, rng=4)


def _tables(fit) -> np.ndarray:
    return np.concatenate([np.ravel(t) for t in fit.model.log_tables])


def test_factor_graph_reaches_the_plain_ascents_fixed_point(factor_graph):
    """Both solvers meet ``max |gradient| < tol``; their fixed points agree to within what
    the tolerance allows; the accelerated one takes fewer steps."""
    truth, data = factor_graph
    plain = learning.fit(data, truth, "1-smci", learning_rate=2.0, tol=TOL, progress=False)
    fast = learning.fit(data, truth, "1-smci", solver="anderson", learning_rate=2.0, tol=TOL,
                        progress=False)
    assert plain.converged and fast.converged, (plain.stop_reason, fast.stop_reason)
    assert fast.stop_reason == plain.stop_reason == f"converged: max |gradient| < tol {TOL:g}"
    assert fast.solver == "anderson" and plain.solver == "gradient"
    assert fast.grad_max[-1] < TOL
    assert np.max(np.abs(_tables(fast) - _tables(plain))) < 1e-6
    assert fast.n_steps < plain.n_steps


def test_boltzmann_machine_reaches_the_plain_ascents_fixed_point(machine):
    truth, data = machine
    plain = learning.fit(data, truth, "1-smci", learning_rate=1.0, tol=TOL, progress=False)
    fast = learning.fit(data, truth, "1-smci", solver="anderson", learning_rate=1.0, tol=TOL,
                        progress=False)
    assert plain.converged and fast.converged, (plain.stop_reason, fast.stop_reason)
    assert fast.stop_reason == plain.stop_reason
    assert fast.grad_max[-1] < TOL
    assert np.max(np.abs(fast.model.params - plain.model.params)) < 1e-6
    assert fast.n_steps < plain.n_steps


def test_boltzmann_machine_without_biases_keeps_them_at_zero(machine):
    truth, data = machine
    kw = dict(bias=False, learning_rate=1.0, tol=TOL, progress=False)
    fit = learning.fit(data, truth, "1-smci", solver="anderson", **kw)
    plain = learning.fit(data, truth, "1-smci", **kw)
    assert fit.converged and np.all(fit.model.bias == 0.0)
    assert np.max(np.abs(fit.model.coupling - plain.model.coupling)) < 1e-6


def test_converges_where_the_plain_ascent_runs_out_of_steps():
    """A 4x4 q = 3 lattice with mixed couplings: the plain ascent does not meet tol 1e-6
    in 150 steps at eta = 1; the accelerated one does."""
    truth = lattices.potts_lattice(4, 4, 3, coupling=0.5, couplings="mixed", rng=0)
    data = chains.gibbs(truth, 1000, burn_in=50, thin=5, n_chains=100, rng=1)
    kw = dict(learning_rate=1.0, max_steps=150, record=False, progress=False)
    assert not learning.fit(data, truth, "1-smci", **kw).converged
    fit = learning.fit(data, truth, "1-smci", solver="anderson", **kw)
    assert fit.converged and fit.n_steps < 150


def test_same_input_same_bits(factor_graph):
    truth, data = factor_graph
    runs = [learning.fit(data, truth, "1-smci", solver="anderson", learning_rate=2.0,
                         tol=TOL, progress=False) for _ in range(2)]
    assert runs[0].n_steps == runs[1].n_steps
    assert np.array_equal(runs[0].params, runs[1].params)
    assert np.array_equal(runs[0].grad_max, runs[1].grad_max)


def test_record_keeps_every_step_and_ends_at_the_model():
    truth = FACTOR_GRAPHS["lattice-q3"]()
    data = exact.sample(truth, 300, rng=2)
    fit = learning.fit(data, truth, "1-smci", solver="anderson", learning_rate=1.0,
                       progress=False)
    assert fit.params.shape[0] == fit.grad_max.shape[0] == fit.n_steps + 1
    off = learning.fit(data, truth, "1-smci", solver="anderson", learning_rate=1.0,
                       progress=False, record=False)
    assert off.params is None and off.n_steps == fit.n_steps
    assert np.array_equal(_tables(off), _tables(fit))


@pytest.mark.parametrize("kind", ["factor-graph", "spins"])
def test_time_limit_zero_gives_one_step(kind):
    if kind == "spins":
        truth = _spin_machines()["grid"]
    else:
        truth = FACTOR_GRAPHS["lattice-q2"]()
    data = exact.sample(truth, 200, rng=1)
    fit = learning.fit(data, truth, "1-smci", solver="anderson", time_limit=0,
                       progress=False)
    assert not fit.converged and fit.n_steps == 1
    assert fit.stop_reason.startswith("time limit of 0 s reached after 1 "), fit.stop_reason


def test_the_driver_polls_the_deadline_after_every_accelerated_step():
    """A clock that passes the limit at its fifth reading: the accelerated loop stops after
    the step in progress, marks the deadline hit and keeps that step's iterate."""
    A, b = _linear_problem()
    reads = []

    def clock():
        reads.append(None)
        return 0.0 if len(reads) < 5 else 10.0

    deadline = Deadline(1.0, clock=clock)
    theta, steps, converged, params, _, _ = gradient_ascent(
        lambda x: b - A @ x, np.zeros(5), np.ones(5, dtype=bool), learning_rate=0.1,
        max_steps=1000, tol=1e-12, ref_coupling=None, n=0, record=True, progress=False,
        desc="test", deadline=deadline, accelerated=Anderson(5, 0.1, memory=2))
    assert deadline.hit and not converged
    assert steps == 4 and np.array_equal(theta, params[-1])


def _linear_problem() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    m = rng.normal(size=(5, 5))
    return m @ m.T / 5 + 0.01 * np.eye(5), rng.normal(size=5)


def test_on_a_linear_problem_the_memory_finds_the_solution():
    """On ``Delta(x) = b - A x`` (A symmetric positive definite, condition ~1e3), type-II
    Anderson with a memory of the dimension is GMRES in disguise: it meets tol 1e-9 within
    a few steps of the dimension, where the plain iteration needs thousands; the answer
    is ``A^{-1} b``."""
    A, b = _linear_problem()
    kw = dict(learning_rate=0.5 / np.linalg.eigvalsh(A)[-1], max_steps=5000, tol=1e-9,
              ref_coupling=None, n=0, record=False, progress=False, desc="test")
    free = np.ones(5, dtype=bool)
    theta, steps, converged, *_ = gradient_ascent(
        lambda x: b - A @ x, np.zeros(5), free, accelerated=Anderson(5, kw["learning_rate"],
                                                                     memory=5), **kw)
    assert converged and steps <= 12
    assert np.allclose(theta, np.linalg.solve(A, b), atol=1e-6)
    _, plain_steps, *_ = gradient_ascent(lambda x: b - A @ x, np.zeros(5), free, **kw)
    assert plain_steps > 1000


def test_memory_zero_is_the_plain_ascent_bit_for_bit():
    A, b = _linear_problem()
    kw = dict(learning_rate=0.1, max_steps=50, tol=0.0, ref_coupling=None, n=0, record=True,
              progress=False, desc="test")
    free = np.ones(5, dtype=bool)
    plain = gradient_ascent(lambda x: b - A @ x, np.zeros(5), free, **kw)
    zero = gradient_ascent(lambda x: b - A @ x, np.zeros(5), free,
                           accelerated=Anderson(5, 0.1, memory=0), **kw)
    assert np.array_equal(plain[0], zero[0]) and np.array_equal(plain[3], zero[3])


def test_a_step_that_raises_the_residual_is_refused_and_the_memory_cleared():
    """The safeguard: an accelerated iterate whose direction is not smaller (here
    non-finite) sends the iteration back to the last kept iterate, memory cleared."""
    acc = Anderson(2, 1.0, memory=3)
    x0, d0 = np.zeros(2), np.array([1.0, 0.5])
    assert acc.check(x0, d0)[0] is x0
    x1 = acc.step(x0, d0)  # the plain step: the memory is empty
    assert np.array_equal(x1, x0 + d0) and not acc.accelerated
    d1 = np.array([0.5, 0.25])
    acc.check(x1, d1)
    x2 = acc.step(x1, d1)
    assert acc.accelerated and len(acc.dx) == 1
    theta, d = acc.check(x2, np.array([np.nan, 0.0]))
    assert np.array_equal(theta, x1) and np.array_equal(d, d1)
    assert acc.rejected == 1 and not acc.dx and not acc.df
    assert np.array_equal(acc.step(theta, d), x1 + d1)  # the plain step from there


def test_a_divergent_plain_step_still_raises():
    """Only an accelerated step is refused; a non-finite plain direction is divergence."""
    with pytest.raises(FloatingPointError, match="learning_rate"):
        gradient_ascent(lambda x: np.full(2, np.inf), np.zeros(2), np.ones(2, dtype=bool),
                        learning_rate=1.0, max_steps=5, tol=1e-6, ref_coupling=None, n=0,
                        record=False, progress=False, desc="test",
                        accelerated=Anderson(2, 1.0))


@pytest.mark.parametrize("method, solver", [("1-smci", "newton"), ("1-smci", 3),
                                            ("pcd", "anderson"), ("mple", "anderson")])
def test_bad_solver_names_are_refused_by_name(method, solver):
    truth = FACTOR_GRAPHS["lattice-q2"]()
    data = exact.sample(truth, 50, rng=1)
    with pytest.raises(ValueError, match="solver"):
        learning.fit(data, truth, method, solver=solver, rng=0, max_steps=2, progress=False)
    bm = _spin_machines()["grid"]
    spins = exact.sample(bm, 50, rng=1)
    with pytest.raises(ValueError, match="solver"):
        learning.fit(spins, bm, method, solver=solver, rng=0, max_steps=2, progress=False)
