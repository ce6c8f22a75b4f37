"""Run a picklable function over tasks: in this process, a local pool or a Dask cluster.

The one executor of :mod:`mrflib.learning.lap` (clique fits) and :mod:`mrflib.repro.sweep` (notebook
runs). A task is a tuple of positional arguments; the call is ``fn(*shared, *task)``,
where ``shared`` holds the large arguments every task needs (sent once per worker, not
once per task).

Where the tasks run
    ``Executor(workers=1)`` runs them here, one after another, in order. ``workers > 1``
    uses a local pool: processes by default (forked where the platform allows, so workers
    inherit the compiled kernels and ``shared`` is not pickled), or threads
    (``threads=True``) for tasks that wait on a subprocess or release the GIL.
    ``scheduler`` (an address such as ``"tcp://127.0.0.1:8786"`` or a
    ``distributed.Client``) sends them to a Dask cluster; ``shared`` is scattered to
    every worker once.

Results travel back, the client writes
    Every result comes back to the calling process (:meth:`Executor.imap`, as tasks
    finish, or :meth:`Executor.map`, in task order); the executor itself writes no file.
    A caller that stores results (the sweep) writes them from this process, so a Dask
    cluster needs no filesystem shared with the client.

Failures
    An exception in a task comes back as :class:`TaskFailed` naming the task (its
    ``name``, e.g. a sweep point's id), chained to the original exception (and, from a
    process pool, its remote traceback); the tasks not yet started are cancelled.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from typing import Any

from mrflib._support.optional import optional_import
from mrflib._support.threads import serial_only

__all__ = ["Executor", "TaskFailed", "dask_client_class"]


class TaskFailed(RuntimeError):
    """A task raised; ``name`` and ``index`` say which (the cause is chained)."""

    def __init__(self, name: str, index: int, error: BaseException) -> None:
        super().__init__(f"task {name!r} failed: {type(error).__name__}: {error}")
        self.name = name
        self.index = index


#: ``shared`` of the running process pool (set in each worker by its initializer).
_SHARED: tuple = ()


def _init_shared(shared: tuple, forked: bool) -> None:  # pragma: no cover - in a worker
    global _SHARED
    _SHARED = shared
    if forked:  # the parent may have run a parallel region: see threads.serial_only
        serial_only()


def _call_shared(fn: Callable, task: tuple) -> Any:  # pragma: no cover - in a worker process
    return fn(*_SHARED, *task)


def _check_workers(workers: Any) -> int:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    return workers


def dask_client_class() -> type:
    """``distributed.Client``, imported only when a scheduler is asked for (an
    ``ImportError`` naming the extra that installs it when it is missing)."""
    return optional_import("distributed", "scheduler (a Dask cluster)", "dask").Client


class Executor:
    """Where tasks run; a context manager (it closes the Dask client it opened).

    Parameters
    ----------
    workers : int
        Tasks run at once locally; ``1`` runs them in this process (ignored with a
        ``scheduler``).
    scheduler : str or distributed.Client, optional
        Run the tasks on this Dask cluster: a scheduler address (a client is opened on
        entry and closed on exit) or a client (left open).
    threads : bool
        Use a thread pool instead of processes for ``workers > 1``.
    """

    def __init__(self, workers: int = 1, scheduler: Any = None, *, threads: bool = False):
        self.workers = _check_workers(workers)
        self.threads = bool(threads)
        if scheduler is not None and not isinstance(scheduler, str):
            if not isinstance(scheduler, dask_client_class()):
                raise ValueError("scheduler must be a Dask scheduler address or a "
                                 f"distributed.Client, got {type(scheduler).__name__}")
        self.scheduler = scheduler
        self.client = None
        self._own = False

    def __enter__(self) -> Executor:
        if isinstance(self.scheduler, str):
            client_class = dask_client_class()  # not installed: ImportError naming the extra
            try:
                self.client = client_class(self.scheduler)
            except Exception as err:  # noqa: BLE001 - a bad or silent address alike
                why = " ".join(str(err).split()) or type(err).__name__
                raise ValueError(f"scheduler {self.scheduler!r}: no Dask scheduler answers "
                                 f"there ({why})") from None
            self._own = True
        elif self.scheduler is not None:
            self.client = self.scheduler
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._own:
            self.client.close()
        self.client, self._own = None, False

    @property
    def slots(self) -> int:
        """How many tasks run at once: the cluster's threads, else ``workers``."""
        if self.client is not None:
            return max(1, sum(self.client.nthreads().values()))
        return self.workers

    # ----------------------------------------------------------------------- running
    def imap(self, fn: Callable, tasks: Sequence[tuple], *, shared: tuple = (),
             names: Sequence[str] | None = None) -> Iterator[tuple[int, Any]]:
        """Yield ``(index, fn(*shared, *tasks[index]))`` as the tasks finish.

        Raises :class:`TaskFailed` (naming the task) at the first task that raised; the
        tasks not started yet are cancelled.
        """
        tasks = [tuple(t) for t in tasks]
        names = [f"task {i}" for i in range(len(tasks))] if names is None else list(names)
        if len(names) != len(tasks):
            raise ValueError(f"names must name each of the {len(tasks)} tasks, got "
                             f"{len(names)}")
        if not tasks:
            return
        if self.scheduler is not None:
            if self.client is None:
                raise RuntimeError("enter the Executor (`with Executor(...) as ex:`) before "
                                   "running tasks on a scheduler")
            yield from self._imap_dask(fn, tasks, shared, names)
        elif self.workers == 1 or len(tasks) == 1:
            for i, task in enumerate(tasks):
                yield i, self._inline(fn, shared, task, names, i)
        else:
            yield from self._imap_pool(fn, tasks, shared, names)

    def map(self, fn: Callable, tasks: Sequence[tuple], *, shared: tuple = (),
            names: Sequence[str] | None = None, progress: bool = False,
            desc: str | None = None) -> list[Any]:
        """``[fn(*shared, *task) for task in tasks]``, in task order, run as configured.

        ``progress`` shows a tqdm bar (tasks done, time left) described by ``desc``.
        """
        from tqdm import tqdm

        tasks = list(tasks)
        out: list[Any] = [None] * len(tasks)
        with tqdm(total=len(tasks), desc=desc, unit="task", disable=not progress) as bar:
            for i, result in self.imap(fn, tasks, shared=shared, names=names):
                out[i] = result
                bar.update()
        return out

    @staticmethod
    def _inline(fn, shared, task, names, i):
        try:
            return fn(*shared, *task)
        except Exception as err:
            raise TaskFailed(names[i], i, err) from err

    def _pool(self, shared: tuple):
        if self.threads:
            return ThreadPoolExecutor(self.workers)
        # fork: workers inherit the compiled kernels and `shared`, and need no importable
        # __main__; elsewhere spawn (shared is pickled once per worker)
        forked = "fork" in multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if forked else "spawn")
        return ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_init_shared,
                                   initargs=(shared, forked))

    def _imap_pool(self, fn, tasks, shared, names):
        pool = self._pool(shared)
        try:
            if self.threads:
                pending = {pool.submit(fn, *shared, *t): i for i, t in enumerate(tasks)}
            else:
                pending = {pool.submit(_call_shared, fn, t): i for i, t in enumerate(tasks)}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=pending.get):
                    i = pending.pop(fut)
                    err = fut.exception()
                    if err is not None:
                        raise TaskFailed(names[i], i, err) from err
                    yield i, fut.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _imap_dask(self, fn, tasks, shared, names):
        from distributed import as_completed

        client = self.client
        parts = client.scatter(list(shared), broadcast=True) if shared else []
        futures = [client.submit(fn, *parts, *t, pure=False) for t in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        try:
            for fut in as_completed(futures):
                i = index[fut.key]
                if fut.status == "error":
                    err = fut.exception()
                    raise TaskFailed(names[i], i, err) from err
                yield i, fut.result()
        finally:
            client.cancel([f for f in futures if not f.done()])

