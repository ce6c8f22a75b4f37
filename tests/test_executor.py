"""The shared executor (:mod:`mrflib._support.executor`): in-process, local pools, Dask."""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np
import pytest

from mrflib._support.executor import Executor, TaskFailed


def _scaled_sum(data, scale, k):
    """A task: ``scale * sum(data[k:])`` (``data``, ``scale`` shared)."""
    return float(scale * data[k:].sum())


def _nap(seconds, value):
    time.sleep(seconds)
    return value


def _fails_on(k, bad):
    if k == bad:
        raise KeyError(f"no entry {k}")
    return k


def _pid(_):
    import os

    return os.getpid()


DATA = np.random.default_rng(0).normal(size=1000)
TASKS = [(k,) for k in range(0, 1000, 37)]
EXPECTED = [float(2.5 * DATA[k:].sum()) for (k,) in TASKS]


@pytest.mark.parametrize("workers, threads", [(1, False), (2, False), (3, True)])
def test_same_results_in_task_order(workers, threads):
    with Executor(workers, threads=threads) as ex:
        out = ex.map(_scaled_sum, TASKS, shared=(DATA, 2.5))
    assert out == EXPECTED  # bit for bit, whichever process computed them


def test_process_pool_runs_elsewhere_and_in_process_runs_here():
    import os

    with Executor(2) as ex:
        pids = ex.map(_pid, [(i,) for i in range(8)])
    assert os.getpid() not in pids
    with Executor(1) as ex:
        assert set(ex.map(_pid, [(i,) for i in range(3)])) == {os.getpid()}


@pytest.mark.parametrize("threads", [False, True])
def test_order_kept_when_tasks_finish_out_of_order(threads):
    tasks = [(0.3, "slow"), (0.0, "a"), (0.0, "b"), (0.05, "c")]
    with Executor(2, threads=threads) as ex:
        assert ex.map(_nap, tasks) == ["slow", "a", "b", "c"]
        finished = [i for i, _ in ex.imap(_nap, tasks)]
    assert sorted(finished) == [0, 1, 2, 3]
    assert finished[0] != 0  # imap yields as tasks finish


@pytest.mark.parametrize("workers, threads", [(1, False), (2, False), (2, True)])
def test_exception_names_the_task(workers, threads):
    tasks = [(k, 3) for k in range(6)]
    names = [f"point-{k}" for k in range(6)]
    with Executor(workers, threads=threads) as ex:
        with pytest.raises(TaskFailed, match=r"task 'point-3' failed: KeyError: .*no entry 3"
                           ) as info:
            ex.map(_fails_on, tasks, names=names)
    assert info.value.name == "point-3" and info.value.index == 3
    assert isinstance(info.value.__cause__, KeyError)


def test_default_names_are_task_numbers():
    with pytest.raises(TaskFailed, match="task 'task 1' failed"):
        Executor(1).map(_fails_on, [(0, 1), (1, 1)])


def test_failure_cancels_tasks_not_started():
    ran = []
    lock = threading.Lock()

    def task(k):
        if k == 0:
            raise ValueError("first task fails")
        time.sleep(0.05)
        with lock:
            ran.append(k)

    with pytest.raises(TaskFailed, match="task 0"):
        Executor(2, threads=True).map(task, [(k,) for k in range(40)])
    time.sleep(0.2)
    assert len(ran) < 10


def test_bad_arguments():
    for bad in (0, -1, 1.5, True, "2", None):
        with pytest.raises(ValueError, match="workers must be a positive integer"):
            Executor(bad)
    with pytest.raises(ValueError, match="scheduler must be a Dask scheduler address"):
        Executor(2, scheduler=3)
    with pytest.raises(ValueError, match="names must name each of the 2 tasks"):
        Executor(1).map(_nap, [(0, 1), (0, 2)], names=["only one"])
    with pytest.raises(RuntimeError, match="enter the Executor"):
        Executor(1, scheduler="tcp://127.0.0.1:1").map(_nap, [(0, 1)])
    assert Executor(3).map(_nap, []) == []


def test_dask_local_cluster():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                      host="127.0.0.1", protocol="tcp",
                                      dashboard_address=None) as cluster:
            with Executor(scheduler=cluster.scheduler_address) as ex:
                assert ex.slots == 2
                out = ex.map(_scaled_sum, TASKS, shared=(DATA, 2.5))
                with pytest.raises(TaskFailed, match="task 'p2' failed: KeyError") as info:
                    ex.map(_fails_on, [(k, 2) for k in range(4)],
                           names=[f"p{k}" for k in range(4)])
                assert info.value.index == 2
            with distributed.Client(cluster) as client:
                with Executor(scheduler=client) as ex:
                    again = ex.map(_scaled_sum, TASKS, shared=(DATA, 2.5))
                assert client.status == "running"  # a client passed in stays open
    assert out == EXPECTED and again == EXPECTED


def _serial_only(_):
    from mrflib._support import threads

    return threads._SERIAL_ONLY[0]


def test_forked_workers_run_serial_kernels():
    """A forked worker of a parent that ran a parallel region is killed by GNU OpenMP at
    its own first one: the pool's forked workers never ask for threads."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    assert Executor(workers=2).map(_serial_only, [(k,) for k in range(4)]) == [True] * 4
