"""Small calls of numba kernels run by the interpreter until compiling them pays.

numba compiles a kernel on its first call (0.1 to 1.5 s of CPU each) and caches the
machine code on disk. On a small model a call does microseconds of work, so a first call
that compiles the forty kernels of the exact engine spends 10 to 15 s compiling what would
run in a fraction of a second as plain Python. A kernel given to :func:`interpret_small`
is run by the interpreter (its ``py_func``, the very source numba compiles) instead of being
compiled, on a call

* whose arrays hold at most :data:`SMALL_ENTRIES` entries in all (the work of these kernels
  grows with their arrays), and
* while the kernel has no compiled code on disk (numba's cache index for it is missing;
  with it, loading costs milliseconds) and in this process, and
* while this process has spent less than :data:`BUDGET_SECONDS` interpreting it: past
  that, compiling costs less than interpreting on (the rule of the ski rental: at most
  twice the better of the two choices).

Everything else compiles as before. The interpreter runs the same operations on the same
float64 values in the same order, so the answers are the same bits; the kernels given here
have no parallel loops (``prange``), whose reductions would sum in another order. The
kernels they call are run by the interpreter too, within such a call.

A kernel whose work its arrays do not bound (a clique's sums run over a table that no
argument holds; an elimination order's work grows with the square of the variables) is
left out (``exclude``): it compiles, or its caller weighs the call itself with
:func:`run_small`. ``python -m mrflib warm-up`` sets :data:`MODE` to ``"never"`` and so
compiles every kernel for the processes after it. ``exact.marginals`` of the shipped
``Grids_12`` takes 0.4 s of CPU in a fresh process with an empty cache this way, against
12.5 s when its 40 kernels compiled (``python -m bench first_call`` measures it).

The hook is numba's own: a dispatcher with no compiled code for the arguments calls its
``_compile_for_args`` and runs what it returns, a Python callable included; the kernels
get an instance attribute of that name. Calls from other compiled code are untouched
(numba compiles those callees with their callers).
"""

from __future__ import annotations

import functools
import os
import time
import types
from typing import Any

import numpy as np
from numba.core.dispatcher import Dispatcher

__all__ = ["interpret_small", "run_small", "SMALL_ENTRIES", "BUDGET_SECONDS", "MODE"]

#: Most array entries, in all, of a call run by the interpreter.
SMALL_ENTRIES = 1 << 17
#: Seconds of interpretation a kernel may take in one process before it is compiled.
BUDGET_SECONDS = 0.3
#: ``"auto"``: the rule of the module notes; ``"always"`` / ``"never"``: every call of a
#: kernel given here interpreted / compiled (the tests compare the two).
MODE = "auto"

#: Each kernel's Python twin (:func:`_twin`), and the seconds this process has spent in it.
_TWINS: dict[int, Any] = {}
_SPENT: dict[int, float] = {}


def _entries(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return value.size
    if isinstance(value, tuple):
        return sum(_entries(v) for v in value)
    return 0


def _on_disk(dispatcher: Dispatcher) -> bool:
    """Whether numba's cache holds compiled code of ``dispatcher`` (its index exists)."""
    cache_file = getattr(dispatcher._cache, "_cache_file", None)
    return cache_file is not None and os.path.exists(cache_file._index_path)


def _twin(dispatcher: Dispatcher) -> Any:
    """``dispatcher``'s Python function, its kernels in its globals replaced by theirs."""
    key = id(dispatcher)
    if key in _TWINS:
        return _TWINS[key]
    py = dispatcher.py_func
    scope: dict[str, Any] = dict(py.__globals__)
    twin = types.FunctionType(py.__code__, scope, py.__name__, py.__defaults__,
                              py.__closure__)
    twin.__kwdefaults__ = py.__kwdefaults__
    _TWINS[key] = twin
    for name, value in list(scope.items()):
        if isinstance(value, Dispatcher):
            scope[name] = _twin(value)
    return twin


def interpret_small(namespace: dict[str, Any], exclude: tuple[str, ...] = ()) -> None:
    """Give every numba kernel defined in ``namespace`` (a module's ``globals()``) but those
    named in ``exclude`` the rule of the module notes.

    Parameters
    ----------
    namespace : dict
        The module's globals; its kernels are the dispatchers whose function it defines.
    exclude : tuple of str, default ()
        Kernels whose work its arrays do not bound (a clique's sums, over a table that no
        argument holds): they always compile, or go through :func:`run_small`.
    """
    module = namespace["__name__"]
    for name, value in list(namespace.items()):
        if (isinstance(value, Dispatcher) and value.py_func.__module__ == module
                and name not in exclude):
            compile_for_args = value._compile_for_args

            def choose(*args: Any, _kernel: Dispatcher = value, _compile: Any = compile_for_args,
                       **kws: Any) -> Any:
                if kws or not _interpreted(_kernel, _entries(args)):
                    return _compile(*args, **kws)
                return functools.partial(_run_twin, _kernel)

            value._compile_for_args = choose


def run_small(kernel: Dispatcher, work: int, *args: Any) -> Any:
    """``kernel(*args)``, run by the interpreter under the rule of the module notes with
    ``work`` in place of the arrays' entries (for a kernel given to
    :func:`interpret_small`'s ``exclude``, whose caller knows its work).

    Parameters
    ----------
    kernel : numba dispatcher
        The kernel.
    work : int
        The entries of the tables the call sums.
    *args
        Its arguments.

    Returns
    -------
    object
        What the kernel returns.
    """
    if _interpreted(kernel, work):
        return _run_twin(kernel, *args)
    return kernel(*args)


def _interpreted(kernel: Dispatcher, work: int) -> bool:
    """Whether a call of ``kernel`` of ``work`` entries runs in the interpreter."""
    if MODE != "auto":
        return MODE == "always"
    return (not kernel.signatures and work <= SMALL_ENTRIES
            and _SPENT.get(id(kernel), 0.0) < BUDGET_SECONDS and not _on_disk(kernel))


def _run_twin(kernel: Dispatcher, *args: Any) -> Any:
    start = time.perf_counter()
    try:
        # the compiled kernels wrap unsigned integers around silently; numpy warns
        with np.errstate(over="ignore"):
            return _twin(kernel)(*args)
    finally:
        _SPENT[id(kernel)] = _SPENT.get(id(kernel), 0.0) + time.perf_counter() - start
