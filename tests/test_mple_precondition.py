"""MPLE of pairwise families at the hardware's speed: L-BFGS on centred, scaled parameters
(:mod:`mrflib.learning._centering`, ``lbfgs(precondition=...)``), scipy's BLAS on one
thread during the fit, and the pseudo-likelihood's parallel kernel handing out blocks of
variables (the same bits on any threads)."""

import subprocess
import sys

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from mrflib import FactorGraph, learning
from mrflib._support import threads as _threads
from mrflib._support.optimizers import lbfgs, resolution
from mrflib.inference import exact
from mrflib.inference.sampling import _pairwise
from mrflib.inference.sampling import chains as factor_gibbs
from mrflib.learning import _centering
from mrflib.learning import _pairwise_likelihood as ppl
from mrflib.learning import _pairwise_likelihood_kernels as pplk
from mrflib.learning._layout import Layout
from mrflib.models import lattices
from mrflib.models.factor_graph import all_states


def _random_pairwise(seed, card, p_edge=0.6, scale=0.8, unary=True):
    """A random graph's pairwise model (fields where ``unary``)."""
    rng = np.random.default_rng(seed)
    n = len(card)
    scopes = [(i,) for i in range(n)] if unary else []
    tables = [rng.normal(scale=scale, size=c) for c in card] if unary else []
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < p_edge:
                scopes.append((i, j))
                tables.append(rng.normal(scale=scale, size=(card[i], card[j])))
    return FactorGraph(card, scopes, tables)


MODELS = {
    "lattice q=2": lattices.potts_lattice(3, 3, 2, coupling=0.6, couplings="mixed", rng=2),
    "lattice q=3": lattices.potts_lattice(3, 3, 3, coupling=0.6, couplings="mixed", rng=3),
    "lattice q=5": lattices.potts_lattice(3, 3, 5, coupling=0.6, couplings="mixed", rng=5),
    "random graph q=2..5": _random_pairwise(1, [2, 3, 5, 3, 2, 4, 5]),
    "random graph, no fields": _random_pairwise(4, [3, 4, 2, 3, 5], unary=False),
}


def _data(model, N, seed):
    return np.ascontiguousarray(exact.sample(model, N, rng=seed), dtype=np.int64)


# ------------------------------------------------------------------------ the centring
SMALL = {"lattice q=5": lattices.potts_lattice(2, 3, 5, coupling=0.6, rng=5),
         **{k: MODELS[k] for k in ("lattice q=2", "lattice q=3", "random graph, no fields")}}


@pytest.mark.parametrize("name", list(SMALL))
def test_centring_changes_the_energy_by_a_constant_only(name):
    """``θ = M z`` gives the log-weights of the centred features ``Σ z_B Π_{v in B}
    ([x_v = s_v] - p_v(s_v))`` times the scales, up to one constant over all states (no
    conditional sees it); ``M_inv`` inverts ``M``."""
    model = MODELS[name]
    x = _data(model, 200, 1)
    lay = Layout(model)
    M, M_inv = _centering.centring(lay.terms, lay.term_offsets, lay.card, x)
    assert np.allclose((M @ M_inv).toarray(), np.eye(lay.n_params), atol=1e-12)
    z = np.random.default_rng(0).normal(size=lay.n_params)
    states = all_states(lay.card)
    lw = lay.model(M @ z).log_weight(states)
    p = _centering._frequencies(x, lay.card)
    scale = M.diagonal()
    centred = np.zeros(len(states))
    for t, B in enumerate(lay.terms):
        sizes = [int(lay.card[v]) - 1 for v in B]
        for k, s in enumerate(np.ndindex(*sizes)):
            e = lay.term_offsets[t] + k
            feature = np.ones(len(states))
            for v, sv in zip(B, s):
                feature *= (states[:, v] == sv + 1) - p[v, sv + 1]
            centred += z[e] * scale[e] * feature
    diff = lw - centred
    assert np.ptp(diff) < 1e-10


def test_centring_refuses_wider_terms_and_scales_by_the_curvature():
    tri = lattices.triangle_lattice(2, 2, 2, scale=0.5, rng=2)
    lay = Layout(tri)
    x = _data(tri, 50, 0)
    assert _centering.centring(lay.terms, lay.term_offsets, lay.card, x) is None
    model = MODELS["lattice q=3"]
    lay = Layout(model)
    x = np.zeros((10, model.n), dtype=np.int64)  # every pair of states unseen
    M, _ = _centering.centring(lay.terms, lay.term_offsets, lay.card, x, l2=0.5)
    assert np.all(np.isfinite(M.data)) and np.all(M.diagonal() > 0)
    # unaries: (1/c)(1 - 1/c) = 2/9, plus the ridge's 0.5
    assert M.diagonal()[0] == pytest.approx(1 / np.sqrt(2 / 9 + 0.5))


# ------------------------------------------------------------ the preconditioned L-BFGS
def _quadratic(d, a):
    return lambda x: (0.5 * float(np.sum(d * (x - a) ** 2)), d * (x - a))


def test_preconditioned_lbfgs_judges_the_gradient_in_x():
    """An ill-conditioned quadratic (curvatures 1e-4 .. 1e2): scaled by the curvature it
    takes a few iterations instead of many, stops on ``max |gradient|`` in ``x`` at tol,
    and returns the point, the gradient and the trace in ``x``."""
    rng = np.random.default_rng(0)
    d = 10.0 ** rng.uniform(-4, 2, 300)
    a = rng.normal(size=300)
    fun = _quadratic(d, a)
    plain = lbfgs(fun, np.zeros(300), max_iter=60, tol=1e-9)
    M = sp.diags(1 / np.sqrt(d)).tocsr()
    trace = []
    pre = lbfgs(fun, np.zeros(300), max_iter=60, tol=1e-9, trace=trace,
                precondition=(M, sp.diags(np.sqrt(d)).tocsr()))
    assert pre.converged and pre.nit <= 5
    assert not plain.converged and plain.nit == 60
    assert pre.grad_max <= 1e-9 and pre.stop_reason.startswith("converged: max |gradient|")
    np.testing.assert_allclose(pre.jac, fun(pre.x)[1], atol=1e-15)
    np.testing.assert_allclose(pre.x, a, atol=1e-6)
    np.testing.assert_allclose(trace[-1], pre.x)


def test_preconditioned_polish_steps_in_x():
    """The quasi-Newton polish after a stall applies ``M H M^T``: a tol no line search
    meets leaves the point at the optimum, in ``x``."""
    d = np.array([1.0, 4.0, 1e-2])
    a = np.array([1.0, -2.0, 3.0])
    M = sp.diags([0.5, 2.0, 1.0]).tocsr()
    res = lbfgs(_quadratic(d, a), np.zeros(3), max_iter=200, tol=1e-30, polish=5,
                precondition=(M, sp.diags([2.0, 0.5, 1.0]).tocsr()))
    np.testing.assert_allclose(res.x, a, atol=1e-7)
    assert res.converged


# -------------------------------------------------------------------------- the fits
def _unpreconditioned(monkeypatch):
    monkeypatch.setattr(_centering, "centring", lambda *a, **k: None)


@pytest.mark.parametrize("name", list(MODELS))
def test_mple_stops_at_its_optimum_and_equals_the_plain_fit(name, monkeypatch):
    """At the optimum (max |gradient| of the objective at the returned tables <= tol),
    equal to the fit without the preconditioner and to the general path's within what
    that tolerance allows."""
    model = MODELS[name]
    x = _data(model, 400, 3)
    kw = dict(tol=1e-9, l2=0.02, record=False)  # a ridge: an optimum whatever is missing
    fit = learning.fit(x, model, "mple", **kw)
    assert fit.converged
    lay = Layout(model)
    theta = lay.theta(fit.model)
    pl = ppl.objective(model, x)
    value, g = pl(lay.A @ theta)
    g = lay.A.T @ g - 0.02 * theta
    # the one rule: tol, or a stall within what float64 resolves on this objective
    assert np.max(np.abs(g)) <= max(1e-9, resolution(value))
    _unpreconditioned(monkeypatch)
    plain = learning.fit(x, model, "mple", **kw)
    monkeypatch.setattr(ppl, "objective", lambda *a: None)
    general = learning.fit(x, model, "mple", **kw)
    for other in (plain, general):
        assert other.converged
        np.testing.assert_allclose(theta, lay.theta(other.model), atol=1e-7)


def test_mple_takes_fewer_steps_to_the_same_optimum(monkeypatch):
    """A 10x10 q = 4 lattice (the scale test's model): the centred, scaled fit reaches
    tol in under half the plain fit's steps, at the same tables."""
    model = lattices.potts_lattice(10, 10, 4, coupling=0.4, rng=0)
    x = factor_gibbs.gibbs(model, 600, burn_in=30, thin=2, n_chains=20, rng=1)
    fit = learning.fit(x, model, "mple", tol=1e-8, record=False)
    _unpreconditioned(monkeypatch)
    plain = learning.fit(x, model, "mple", tol=1e-8, record=False)
    assert fit.converged and plain.converged
    assert 2 * fit.n_steps < plain.n_steps, (fit.n_steps, plain.n_steps)
    lay = Layout(model)
    np.testing.assert_allclose(lay.theta(fit.model), lay.theta(plain.model), atol=1e-5)


def test_mple_record_gives_the_parameters_in_theta():
    """The recorded iterates are the tables' parameters, not the centred ones: the
    objective falls along them, from zero."""
    model = MODELS["lattice q=3"]
    x = _data(model, 300, 2)
    fit = learning.fit(x, model, "mple", tol=1e-9)
    lay = Layout(model)
    pl = ppl.objective(model, x)
    assert np.all(fit.params[0] == 0) and len(fit.params) > 5
    values = [pl(lay.A @ t, False)[0] for t in fit.params]
    assert np.all(np.diff(values) >= -1e-12)
    assert values[-1] == pytest.approx(pl(lay.A @ lay.theta(fit.model), False)[0], abs=1e-9)


# ------------------------------------------------------------------------- the threads
def test_scipys_blas_is_held_to_one_thread_whenever_the_controller_was_built():
    """A controller built before scipy's own OpenBLAS is loaded would not limit it (the
    one L-BFGS-B calls): it is loaded first, so ``single_blas`` holds every BLAS."""
    code = (
        "import sys\n"
        "from mrflib._support import threads\n"
        "assert 'scipy.linalg' not in sys.modules\n"
        "with threads.single_blas():\n"
        "    import scipy.optimize\n"
        "    from threadpoolctl import threadpool_info\n"
        "    print(max(d['num_threads'] for d in threadpool_info()\n"
        "              if d['user_api'] == 'blas'))\n")
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in _threads.BLAS_ENV + (_threads.NUMBA_ENV,)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.split()[-1] == "1"


def _kernel_bits(kernel, pl, flat):
    pw = pl.pw
    w, logs = _pairwise.weights(pw, flat)
    grad, values = pl.lin.copy(), np.zeros(len(pw.card))
    kernel(pl.xt, w, logs, True, pw.nptr, pw.nbr, pw.noff, pw.uoff, pw.card, pl.chosen,
           pl.cptr, pl.qoff, pl.soff, pl.states, pl.counts, pl.seen, pl.lin, grad, values)
    return grad, values


def _narrow_kernel_bits(kernel, pl, flat):
    pw = pl.pw
    w, logs = _pairwise.weights(pw, flat)
    grad, values = pl.lin.copy(), np.zeros(len(pw.card))
    args = (True, pw.nptr, pw.noff, pw.uoff, pw.card, pl.cptr, pl.qoff, pl.soff, pl.states,
            pl.counts, pl.seen, pl.lin, grad, values)
    if kernel is pplk.pl_narrow_parallel:
        kernel(w, logs, *args, pl.kbase)
    else:  # the serial kernel of the weights' kind
        serial = pplk.pl_narrow_logs if logs else pplk.pl_narrow_products
        serial(0, len(pw.card), w, *args, pl.kbase[0])
    return grad, values


@pytest.mark.parametrize("q", [5, 4])
def test_parallel_blocks_give_the_same_bits_on_any_threads(q):
    """More variables than a block: the serial kernel, the parallel one on one thread and
    on every thread, blocks handed out one at a time; contexts and rows mixed (q = 5),
    and every variable over its contexts with at most four states (q = 4, the narrow
    kernels), whose bits are also those of the kernels of every path."""
    model = lattices.potts_lattice(16, 17, q, coupling=0.5, rng=1)
    assert model.n > 2 * pplk.VARIABLE_BLOCK
    rng = np.random.default_rng(2)  # rows of uneven frequencies: some blankets few
    x = (rng.random((200 if q == 5 else 2000, model.n)) ** 3 * q).astype(np.int64)
    pl = ppl.objective(model, x)
    assert pl.narrow == (q == 4) and pl.chosen.any() and pl.chosen.all() == (q == 4)
    flat = factor_gibbs.flat_tables(model)
    ref = _kernel_bits(pplk.pl_serial, pl, flat)
    kernels = [(_kernel_bits, pplk.pl_parallel)]
    if pl.narrow:
        kernels += [(_narrow_kernel_bits, pplk.pl_narrow_products),
                    (_narrow_kernel_bits, pplk.pl_narrow_parallel)]
    threads = numba.get_num_threads()
    try:
        for t in sorted({1, threads}):
            numba.set_num_threads(t)
            for bits, kernel in kernels:
                with numba.parallel_chunksize(1):
                    out = bits(kernel, pl, flat)
                assert np.array_equal(out[0], ref[0]) and np.array_equal(out[1], ref[1])
    finally:
        numba.set_num_threads(threads)


def test_pseudo_likelihood_runs_parallel_with_one_idle_core(monkeypatch):
    """A fit alone on a two-core machine keeps the load average near 1: one idle core is
    enough for the block-scheduled kernel (the same bits as the serial one)."""
    model = lattices.potts_lattice(12, 12, 3, rng=0)
    x = np.ascontiguousarray(factor_gibbs.gibbs(model, 1200, burn_in=5, rng=1),
                             dtype=np.int64)
    pl = ppl.objective(model, x)
    assert pl.narrow  # every variable over its contexts, three states
    flat = factor_gibbs.flat_tables(model)
    serial = "pl_narrow_logs" if _pairwise.weights(pl.pw, flat)[1] else "pl_narrow_products"
    calls = []
    for name in ("pl_narrow_parallel", serial):
        real = getattr(pplk, name)
        monkeypatch.setattr(pplk, name, lambda *a, _r=real, _n=name: (calls.append(_n),
                                                                      _r(*a))[1])
    monkeypatch.delenv(_threads.NUMBA_ENV, raising=False)
    monkeypatch.setattr(_threads, "idle_cores", lambda: 1.0)
    value, grad = pl(flat)
    assert calls[-1] == ("pl_narrow_parallel" if numba.get_num_threads() > 1 else serial)
    monkeypatch.setattr(_threads, "idle_cores", lambda: 0.5)
    assert pl(flat)[0] == value and np.array_equal(pl(flat)[1], grad)
    assert calls[-1] == serial
