"""Thread policy (mrflib._support.threads): BLAS on one thread around mrflib's calls, the user's
environment variables win, numba's parallel kernels only for large work."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from mrflib import graphs, learning
from mrflib._support import threads as _threads
from mrflib.learning._maximum_likelihood import fit_exact


def _blas_threads():
    return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}


@pytest.fixture
def clean_env(monkeypatch):
    for var in _threads.BLAS_ENV + (_threads.NUMBA_ENV,):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_single_blas_limits_and_restores(clean_env):
    np.ones((4, 4)) @ np.ones((4, 4))  # load BLAS
    before = _blas_threads()
    with _threads.single_blas():
        assert _blas_threads() <= {1}
        with _threads.single_blas():  # nested: no change, no restore
            assert _blas_threads() <= {1}
        assert _blas_threads() <= {1}
    assert _blas_threads() == before


def test_user_environment_wins(clean_env):
    clean_env.setenv("OPENBLAS_NUM_THREADS", "2")
    before = _blas_threads()
    with _threads.single_blas():
        assert _blas_threads() == before


def test_decorated_entry_points_run_single_threaded(clean_env):
    seen = []

    @_threads.blas_single_threaded
    def probe():
        seen.append(_blas_threads())
        return 3

    assert probe() == 3 and seen[0] <= {1}
    assert hasattr(fit_exact, "__wrapped__") and hasattr(learning.fit, "__wrapped__")


def test_parallel_only_for_large_work(clean_env):
    assert not _threads.parallel_ok(10)
    clean_env.setattr(_threads, "idle_cores", lambda: 8.0)
    import numba

    big = _threads.parallel_ok(10 * _threads.PARALLEL_WORK)
    assert big == (numba.get_num_threads() > 1)
    clean_env.setattr(_threads, "idle_cores", lambda: 1.0)  # a busy machine
    assert not _threads.parallel_ok(10 * _threads.PARALLEL_WORK)


def test_numba_env_wins(clean_env):
    import numba

    clean_env.setenv("NUMBA_NUM_THREADS", str(numba.config.NUMBA_NUM_THREADS))
    assert _threads.parallel_ok(1) == (numba.config.NUMBA_NUM_THREADS > 1)


def test_results_do_not_depend_on_the_policy(clean_env):
    edges = graphs.square_grid(3, 3)
    data = np.random.default_rng(0).choice(np.array([-1, 1], dtype=np.int8), size=(200, 9))
    a = learning.fit(data, edges, "mple", record=False).model.params
    b = learning.fit.__wrapped__(data, edges, "mple", record=False).model.params
    assert np.array_equal(a, b)


def test_a_forked_child_runs_serial_kernels_after_the_parent_ran_a_parallel_one():
    """GNU OpenMP kills a forked child at its first parallel region once the parent has run
    one: a child of :class:`Forked` takes the serial kernels, and answers."""
    from mrflib._support.forked import Forked
    from mrflib.inference.sampling import chains
    from mrflib.models.lattices import potts_lattice

    model = potts_lattice(4, 4, 3, rng=0)
    assert not _threads._SERIAL_ONLY[0]
    chains.gibbs(model, 64, burn_in=2, n_chains=64, rng=0)  # parallel where the cores allow
    child = Forked(_threads.parallel_ok, (1e12,))
    try:
        assert child.result(wait=60) == ("ok", False)
    finally:
        child.stop()


def test_idle_cores_leave_out_this_process(monkeypatch):
    """A fit running alone keeps the load average at its own thread count: those cores
    are its own, not another process's, so they count as idle."""
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(_threads, "own_load", lambda: 1.9)
    monkeypatch.setattr(_threads.os, "getloadavg", lambda: (2.0, 2.0, 2.0))
    assert _threads.idle_cores() == 2.0  # the 0.1 left is below the slack
    monkeypatch.setattr(_threads, "own_load", lambda: 1.0)
    assert _threads.idle_cores() == 1.0  # another process holds a core
    monkeypatch.setattr(_threads.os, "getloadavg", lambda: (0.3, 0.3, 0.3))
    assert _threads.idle_cores() == 2.0  # own part larger than the load: no negative load


def test_own_load_follows_this_process(monkeypatch):
    """Busy for a whole window: about one core; then idle for several windows: near zero."""
    wall, cpu = [100.0], [50.0]
    monkeypatch.setattr(_threads.time, "monotonic", lambda: wall[0])
    monkeypatch.setattr(_threads.time, "process_time", lambda: cpu[0])
    monkeypatch.setattr(_threads, "_OWN", [100.0, 50.0, 0.0])
    for _ in range(60):
        wall[0] += 5.0
        cpu[0] += 5.0
        _threads.own_load()
    assert abs(_threads.own_load() - 1.0) < 0.01  # 1 - exp(-5) after five windows
    wall[0] += 5 * _threads.LOAD_WINDOW
    assert _threads.own_load() < 0.01


def test_reserved_cores_count_as_busy_until_given_back():
    """A core reserved for a child (toulbar2 beside the MPE solver) is not idle for the
    parallel kernels until it is given back; the reserve never goes below zero."""
    before = _threads.idle_cores()
    _threads.reserve_cores(1)
    try:
        assert _threads.idle_cores() == pytest.approx(before - 1, abs=0.2)
    finally:
        _threads.reserve_cores(-1)
    assert _threads.idle_cores() == pytest.approx(before, abs=0.2)
    _threads.reserve_cores(-5)
    assert _threads._RESERVED[0] == 0.0
