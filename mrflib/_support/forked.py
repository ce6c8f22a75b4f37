"""A call run in a forked child that a deadline or a signal can kill, and never outlives its
parent.

:class:`Forked` runs ``fn(*args)`` in a child forked from the calling process (the model
and everything else the call needs are shared copy-on-write, nothing is pickled on the
way in) and gets its value back through a pipe. The child

* dies with its parent: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux, else a watchdog
  thread on the parent's pid; a parent that died between the fork and the ``prctl`` is
  seen at once (the child's parent pid is no longer the one it was forked from);
* holds none of the caller's output: its file descriptors 1 and 2 go to ``/dev/null``
  right after the fork, so a caller reading the parent's stdout and stderr through pipes
  sees them close when the parent exits, whatever the child is still doing; the warnings
  ``fn`` raises travel back with its value and are issued again in the parent;
* takes the default action of SIGTERM and SIGINT, not the parent's handlers;
* may start children of its own (a :class:`Forked` within a :class:`Forked`), which die
  with it.

:func:`ending_on_signals` is the parent's side: while it is active, SIGTERM and SIGINT kill
every live child at once (``SIGKILL``; :meth:`Forked.stop` reaps it) and raise
:class:`Terminated` (SIGTERM) or ``KeyboardInterrupt`` (SIGINT) in the main thread. A
section under :func:`deferred` (an answer file being written) completes before the
exception is raised. Python runs signal handlers between bytecodes of the main thread, so
a signal that arrives while a compiled kernel runs there takes effect when the kernel
returns; a wait on children (:func:`first_done`) is woken at once. Python also runs a
handler inside finalizers (``__del__``, such as numba's while it compiles), where the
exception it raises is printed and dropped: the signal is therefore remembered, and raised
again at the next wait on children (:func:`first_done`) or when the section ends, unless
its exception is already on its way out.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import wait as _wait_connections
from typing import Any

from mrflib._support.threads import serial_only

__all__ = ["Forked", "Terminated", "ending_on_signals", "deferred", "first_done", "call_within",
           "signal_behind", "yield_processor", "LOW_NICENESS"]

#: Longest single wait on a pipe, in seconds: a longer wait is cut into such steps, so a
#: timeout of any size (``1e300`` s) is never handed to ``poll``, which refuses large ones.
POLL_STEP = 3600.0

_PR_SET_PDEATHSIG = 1
#: Scheduling niceness, above the parent's, of a child that yields the processor
#: (:func:`yield_processor`): on a busy machine it takes the time the others leave.
LOW_NICENESS = 10

_LIVE: set[Forked] = set()  # children to kill when a signal ends the parent
_DEFER = {"depth": 0, "pending": None}
#: The signal whose exception was last raised by the handler (``None``: none, or handled).
_RECEIVED: dict[str, int | None] = {"signum": None}


class Terminated(BaseException):
    """SIGTERM ended the call (the exit status of a process ended so is 143 = 128 + 15); a
    ``BaseException``, as ``KeyboardInterrupt`` is, so that no ``except Exception`` hides it."""


def signal_behind(err: BaseException | None) -> BaseException | None:
    """The :class:`Terminated` or ``KeyboardInterrupt`` that ``err`` is or was caused by, or
    ``None``.

    A signal handler raises its exception between bytecodes of whatever Python code runs,
    including the code numba runs while it calls a compiled kernel (unpickling a cached
    one, boxing a result); numba then reports ``SystemError: CPUDispatcher(...) returned a
    result with an exception set`` caused by it. Callers that map a signal to an exit
    status look through such wrappers with this function.

    Parameters
    ----------
    err : BaseException or None
        The exception caught.

    Returns
    -------
    BaseException or None
        The first ``Terminated`` or ``KeyboardInterrupt`` on the chain of causes and
        contexts of ``err`` (``err`` itself first).
    """
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, (Terminated, KeyboardInterrupt)):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def yield_processor() -> None:
    """Lower the calling process's priority by :data:`LOW_NICENESS` (where the system lets
    it: otherwise it keeps its own); called first thing in a child whose work is worth
    less than its siblings'.

    Returns
    -------
    None
    """
    with contextlib.suppress(OSError):
        os.nice(LOW_NICENESS)


def _die_with_parent(parent: int) -> None:  # pragma: no cover - runs in the forked child
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: watch the parent's pid instead

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(137)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent:  # the parent died before the prctl took effect
        os._exit(137)


def _child(fn: Callable[..., Any], args: tuple, conn: Any, parent: int
           ) -> None:  # pragma: no cover - runs in the forked child
    _die_with_parent(parent)
    # multiprocessing forbids a daemonic process children of its own; this child dies with
    # its parent already, and its own children with it, so it may fork a race of its own
    multiprocessing.current_process().daemon = False
    serial_only()  # the parent may have run a parallel region: see threads.serial_only
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    try:
        with warnings.catch_warnings(record=True) as caught:
            value = fn(*args)
        conn.send(("ok", value, [(w.category, str(w.message)) for w in caught]))
    except Exception as err:  # reported by the parent, which decides what it means
        conn.send(("error", " ".join(str(err).split()) or type(err).__name__, []))
    finally:
        conn.close()


class Forked:
    """``fn(*args)`` computed in a forked child (see the module notes).

    Parameters
    ----------
    fn : callable
        The call; its value must pickle.
    args : tuple
        Its arguments, shared with the child by the fork.
    """

    def __init__(self, fn: Callable[..., Any], args: tuple = ()) -> None:
        ctx = multiprocessing.get_context("fork")
        self.conn, child_conn = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_child, args=(fn, args, child_conn, os.getpid()),
                                daemon=True)
        self._got: tuple[str, Any] | None = None
        with deferred():  # a child started is a child registered, whatever signal comes
            self.proc.start()
            _LIVE.add(self)
        child_conn.close()

    @property
    def pid(self) -> int | None:
        """The child's process id."""
        return self.proc.pid

    def done(self) -> bool:
        """Whether the child has answered (or ended without an answer)."""
        try:
            return self._got is not None or self.conn.poll(0)
        except OSError:  # the pipe is closed: nothing more will come
            return True

    def result(self, wait: float = 0.0) -> tuple[str, Any] | None:
        """``("ok", value)`` (the child's warnings issued again here), ``("error",
        reason)`` (one line), or ``None`` when the child has not answered within ``wait``
        seconds (any size, ``inf`` included)."""
        if self._got is None and first_done([self], time.perf_counter() + max(wait, 0.0)):
            try:
                kind, value, caught = self.conn.recv()
            except (EOFError, OSError):
                self.proc.join(1.0)  # it has ended: its exit status says how
                kind, value, caught = ("error", "the forked process ended without an answer "
                                       f"(exit status {self.proc.exitcode})", [])
            for category, message in caught:
                warnings.warn(message, category, stacklevel=2)
            self._got = (kind, value)
        return self._got

    def stop(self) -> None:
        """Kill the child if it still runs and reap it."""
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()
        _LIVE.discard(self)


def call_within(fn: Callable[..., Any], args: tuple, limit: float, what: str,
                deadline: float | None = None) -> Any:
    """``fn(*args)`` computed in a :class:`Forked` child that is killed at the deadline.

    Parameters
    ----------
    fn : callable
        The call; its value must pickle.
    args : tuple
        Its arguments.
    limit : float
        The seconds allowed, for the message of the timeout.
    what : str
        What the call computes, starting both messages (``"the model count"``).
    deadline : float or None, default None
        The :func:`time.perf_counter` time by which it must end (``None``: ``limit``
        seconds from now).

    Returns
    -------
    object
        The call's value.

    Raises
    ------
    TimeoutError
        ``"<what> did not finish within <limit> s"`` when the child has not answered by the
        deadline.
    RuntimeError
        ``"<what> failed: <reason>"`` when the call raised in the child.
    """
    if deadline is None:
        deadline = time.perf_counter() + limit
    child = Forked(fn, args)
    try:
        got = child.result(wait=max(deadline - time.perf_counter(), 0.0))
    finally:
        child.stop()
    if got is None:
        raise TimeoutError(f"{what} did not finish within {limit:g} s")
    kind, value = got
    if kind == "error":
        raise RuntimeError(f"{what} failed: {value}")
    return value


def first_done(children: Sequence[Forked], until: float) -> Forked | None:
    """The first of ``children`` to answer before ``time.perf_counter()`` reaches ``until``
    (a child that has answered already is returned at once), or ``None``."""
    _raise_dropped()
    while True:
        for child in children:
            if child.done():
                return child
        left = until - time.perf_counter()
        if left <= 0 or not children:
            return None
        _wait_connections([c.conn for c in children], timeout=min(left, POLL_STEP))


def _kill_all() -> None:
    for child in list(_LIVE):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if child.proc.pid is not None:
                os.kill(child.proc.pid, signal.SIGKILL)


def _raise_for(signum: int) -> None:
    if signum == signal.SIGTERM:
        raise Terminated("terminated by SIGTERM")
    raise KeyboardInterrupt


def _raise_dropped() -> None:
    """Raise again the exception of a signal that a finalizer dropped: one the handler
    raised, when no exception is on its way out here (one that is, is that signal's)."""
    signum = _RECEIVED["signum"]
    if signum is not None and sys.exc_info()[1] is None:
        _RECEIVED["signum"] = None
        _raise_for(signum)


def _on_signal(signum: int, _frame: Any) -> None:
    _kill_all()
    if _DEFER["depth"]:
        _DEFER["pending"] = _DEFER["pending"] or signum
        return
    _RECEIVED["signum"] = signum
    _raise_for(signum)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A section that a signal of :func:`ending_on_signals` does not cut short: the signal
    kills the children at once, and its exception is raised when the section ends."""
    _DEFER["depth"] += 1
    try:
        yield
    finally:
        _DEFER["depth"] -= 1
        pending = _DEFER["pending"]
        if _DEFER["depth"] == 0 and pending is not None:
            _DEFER["pending"] = None
            _raise_for(pending)


@contextlib.contextmanager
def ending_on_signals() -> Iterator[None]:
    """While active, SIGTERM and SIGINT kill every :class:`Forked` child and raise
    :class:`Terminated` or ``KeyboardInterrupt`` (see the module notes). A signal ignored
    when the section starts (a job started in the background ignores SIGINT) stays ignored;
    outside the main thread, where Python cannot set handlers, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            old[sig] = signal.signal(sig, _on_signal)
    _RECEIVED["signum"] = None
    try:
        yield
        _raise_dropped()
    finally:
        _RECEIVED["signum"] = None
        for child in list(_LIVE):  # killed by a signal, or left running by an error
            child.stop()
        for sig, handler in old.items():
            signal.signal(sig, handler)
