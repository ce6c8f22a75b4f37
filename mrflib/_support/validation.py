"""Input validation shared by every public function of :mod:`mrflib`.

Every check raises :class:`ValueError` naming the offending argument and what
was expected, so that bad input fails at the boundary, never deep in a kernel.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "as_rng",
    "available_memory",
    "check_array",
    "check_bias",
    "check_coupling",
    "check_counts",
    "check_edges",
    "check_indices",
    "check_instance",
    "check_nodes",
    "check_path",
    "check_positive",
    "check_real",
    "check_spins",
    "format_bytes",
    "format_count",
    "integer_values",
    "is_choice",
    "memory_requests",
    "require_memory",
]


def as_rng(rng: Any, name: str = "rng") -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` from a seed or a generator.

    ``None`` is refused on purpose: every random draw in mrflib is seeded by
    the caller so that the same seed gives the same bits.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"{name} must be a non-negative int seed, got {rng}")
        return np.random.default_rng(int(rng))
    raise ValueError(
        f"{name} must be a numpy.random.Generator or an int seed, got {type(rng).__name__}"
    )


def check_instance(value: Any, cls: type, name: str) -> Any:
    """Return ``value`` if it is a ``cls``, else ``TypeError`` naming ``name`` and ``cls``."""
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be a {cls.__name__}, got {type(value).__name__}")
    return value


def check_path(value: Any, name: str, *, exists: bool = False) -> Any:
    """``value`` as a :class:`pathlib.Path`: a ``str`` or ``os.PathLike`` (else
    ``TypeError``); with ``exists``, a missing file is a ``ValueError`` naming ``name``."""
    from pathlib import Path

    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {type(value).__name__}")
    path = Path(value)
    if exists and not path.exists():
        raise ValueError(f"{name} {str(path)!r} does not exist")
    return path


def check_real(value: Any, name: str) -> float:
    """A finite real scalar as ``float``; complex, NaN, inf and non-numbers are refused,
    text too (``float("1e-3")`` would read it: an option is a number, not its spelling),
    and so is an integer beyond the range of ``float`` (``10**400``), which ``float()``
    meets with an ``OverflowError`` rather than ``inf``."""
    if isinstance(value, (str, bytes, bytearray, np.str_, np.bytes_)):
        raise ValueError(f"{name} must be a real number, got the text {value!r}")
    try:
        value = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be finite, got an integer beyond the range of a "
                         f"float ({_digits(value)} digits)") from None
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def _digits(value: Any) -> int:
    """The decimal digits of an integer's magnitude (for messages about a huge one, whose
    ``repr`` would be hundreds of characters long)."""
    try:
        return len(str(abs(int(value))))
    except (TypeError, ValueError):
        return 0


#: The largest count taken anywhere: counts go to int64 arrays and numba kernels.
MAX_COUNT = int(np.iinfo(np.int64).max)


def is_choice(value: Any, choices: Any) -> bool:
    """``value in choices`` for a hashable ``value`` only: an array or list is never one of
    the choices (numpy's elementwise ``==`` would make ``in`` ambiguous or an error)."""
    try:
        hash(value)
    except TypeError:
        return False
    return bool(value in choices)


def check_positive(
    value: Any, name: str, *, allow_zero: bool = False, integer: bool = False
) -> int | float:
    """Check that a scalar is finite and positive (or non-negative); an ``integer`` must also
    fit in ``int64`` (at most :data:`MAX_COUNT`), where every count of the library goes."""
    if integer:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        value = int(value)
        if value > MAX_COUNT:
            raise ValueError(f"{name} must be at most {MAX_COUNT} (an int64), got an integer "
                             f"of {_digits(value)} digits")
    else:
        value = check_real(value, name)
    if value < 0 or (value == 0 and not allow_zero):
        expected = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must be {expected}, got {value}")
    return value


def check_counts(values: Any, name: str, *, allow_zero: bool = False) -> list[int]:
    """A non-empty 1-d collection of positive (or non-negative) integers, as a list."""
    arr = np.asarray(values, dtype=object) if values is not None else np.empty(0, object)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d collection of integers, got {values!r}")
    return [check_positive(v, name, integer=True, allow_zero=allow_zero) for v in arr.tolist()]


def check_array(
    a: Any,
    name: str,
    *,
    ndim: int | None = None,
    shape: tuple | None = None,
    dtype: Any = np.float64,
    finite: bool = True,
) -> np.ndarray:
    """Convert to an array of ``dtype`` and check its shape and finiteness.

    ``shape`` may contain ``None`` for a free dimension.
    """
    if type(a) is np.ndarray and a.dtype == dtype:  # the common case, already converted
        arr = a
    else:
        try:
            if np.asarray(a).dtype.kind == "c" and np.dtype(dtype).kind != "c":
                raise ValueError(f"{name} must contain real numbers, got complex values")
            arr = np.asarray(a, dtype=dtype)
        except OverflowError:  # a Python int beyond the dtype: float() or int64 overflow
            raise ValueError(f"{name} must contain only finite values within the range of "
                             f"{np.dtype(dtype).name}, got an integer beyond it") from None
        except (TypeError, ValueError) as err:
            if str(err).startswith(name):
                raise
            # a ragged nesting, a non-number: numpy's own message would not name the argument
            raise ValueError(f"{name} must be an array of numbers, got {type(a).__name__}"
                             + (" of uneven nesting (a ragged list)"
                                if "inhomogeneous" in str(err) else "")) from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(
            s is not None and s != t for s, t in zip(shape, arr.shape)
        ):
            want = "(" + ", ".join("any" if s is None else str(s) for s in shape) + (
                ",)" if len(shape) == 1 else ")")
            raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if finite and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (no NaN or inf)")
    return arr


def check_bias(bias: Any, n: int | None = None) -> np.ndarray:
    """The biases of a pairwise model: finite real ``float64`` of shape ``(n,)`` (any
    ``n >= 1`` if ``None``), C-contiguous; errors name ``bias``. One check for the model
    constructor and for every engine method that takes the arrays directly."""
    b = check_array(bias, "bias", ndim=1 if n is None else None,
                    shape=None if n is None else (n,))
    if b.shape[0] == 0:
        raise ValueError("bias must have at least one entry (one per node)")
    return np.ascontiguousarray(b)


def check_coupling(coupling: Any, n_edges: int) -> np.ndarray:
    """The couplings of a pairwise model: finite real ``float64`` of shape ``(n_edges,)``,
    C-contiguous; errors name ``coupling`` (see :func:`check_bias`)."""
    return np.ascontiguousarray(check_array(coupling, "coupling", shape=(n_edges,)))


def integer_values(arr: np.ndarray, what: str, *, allow_bool: bool = False) -> np.ndarray:
    """``arr`` as ``int64`` if every entry is an integer, else ``ValueError(what)``.

    Integer dtypes pass; floats pass when finite and integral; booleans pass only with
    ``allow_bool``. ``what`` names the argument and what was expected, e.g.
    ``"edges must contain integer node labels"``; a wrong dtype adds ``", got dtype ..."``.
    """
    kind = arr.dtype.kind
    if kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(what)
    elif not (kind in "iu" or (allow_bool and kind == "b")):
        raise ValueError(f"{what}, got dtype {arr.dtype}")
    # range-checked in the input's own dtype: a uint64 >= 2^63 or a float 1e300 would wrap
    if kind in "uf" and arr.size:
        top = np.uint64(2**63 - 1) if kind == "u" else 2.0**63  # float: 2^63 is past the end
        out = (arr > top) if kind == "u" else ((arr >= top) | (arr < -top))
        if out.any():
            raise ValueError(f"{what}, got {arr[out].flat[0]} (beyond the int64 range)")
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_indices(index: Any, size: int, name: str = "index") -> np.ndarray:
    """Validate flat indices: a 1-d collection of integers in ``0..size-1``; ``int64``.

    A scalar counts as one index. Booleans, complex numbers, strings, NaN, infinities and
    non-integral floats are refused by ``name``; the range is checked in the input's own
    dtype, so an unsigned ``2^63`` or a float ``1e30`` cannot wrap in the ``int64`` cast.
    """
    arr = np.atleast_1d(np.asarray(index))
    expected = f"{name} must contain integer indices in 0..{size - 1}"
    if arr.ndim != 1:
        raise ValueError(f"{expected} (a 1-d collection), got shape {arr.shape}")
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{expected}, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{expected}, got non-finite values (NaN or inf)")
    if arr.size and (arr.min() < 0 or arr.max() >= size):
        bad = arr[(arr < 0) | (arr >= size)][0]
        raise ValueError(f"{expected}, got {bad}")
    return integer_values(arr, f"{expected}, got non-integral values")


def check_edges(edges: Any, n: int | None = None, name: str = "edges") -> np.ndarray:
    """Validate an edge list: integer ``(E, 2)``, ``i < j``, rows sorted, no duplicates.

    Returns the edges as a C-contiguous ``int64`` array. ``n``, if given, bounds
    the node labels to ``0..n-1``.
    """
    arr = np.asarray(edges)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must have shape (E, 2), got {arr.shape}")
    arr = integer_values(arr, f"{name} must contain integer node labels")
    if np.any(arr < 0):
        raise ValueError(f"{name} must contain non-negative node labels")
    if n is not None and np.any(arr >= n):
        raise ValueError(f"{name} refers to node {int(arr.max())}, but n = {n} (nodes are 0..n-1)")
    if np.any(arr[:, 0] >= arr[:, 1]):
        bad = arr[arr[:, 0] >= arr[:, 1]][0]
        pair = tuple(int(v) for v in bad)
        raise ValueError(f"{name} must satisfy i < j in every row, got {pair}")
    key = arr[:, 0] * (int(arr.max()) + 1) + arr[:, 1]
    if np.any(np.diff(key) < 0):
        raise ValueError(f"{name} rows must be sorted (lexicographically by (i, j))")
    if np.any(np.diff(key) == 0):
        raise ValueError(f"{name} must not contain duplicate edges")
    return arr


def check_nodes(nodes: Any, n: int, name: str = "target") -> np.ndarray:
    """Validate a node set: distinct labels in ``0..n-1``; returned sorted ``int64``."""
    arr = np.atleast_1d(np.asarray(nodes))
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be a 1-d collection of integer node labels")
    if arr.dtype.kind == "u" and arr.size and arr.max() >= n:  # before int64 could wrap it
        raise ValueError(f"{name} must contain nodes in 0..{n - 1}, got {arr.tolist()}")
    arr = np.sort(arr.astype(np.int64))
    if arr.size and (arr[0] < 0 or arr[-1] >= n):
        raise ValueError(f"{name} must contain nodes in 0..{n - 1}, got {arr.tolist()}")
    if np.any(np.diff(arr) == 0):
        raise ValueError(f"{name} must not repeat nodes, got {arr.tolist()}")
    return arr


def check_spins(x: Any, n: int | None = None, name: str = "data") -> np.ndarray:
    """Validate spin configurations in {-1, +1}; return ``int8`` of shape ``(M, n)``.

    A single configuration of shape ``(n,)`` is accepted and returned as ``(1, n)``.
    """
    arr = np.asarray(x)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"{name} must have shape (samples, n), got {np.shape(x)}")
    if n is not None and arr.shape[1] != n:
        raise ValueError(f"{name} must have {n} columns (one per node), got {arr.shape[1]}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (no NaN or inf)")
    if arr.dtype.kind not in "iuf" or not np.all((arr == 1) | (arr == -1)):
        raise ValueError(f"{name} must contain only spins -1 and +1")
    return np.ascontiguousarray(arr, dtype=np.int8)


def _read_int(path: str) -> int | None:
    """An integer file such as ``memory.max``; ``None`` if absent, unreadable or ``max``."""
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _meminfo_available(meminfo: str = "/proc/meminfo") -> int | None:
    try:
        with open(meminfo) as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return None


@functools.lru_cache(maxsize=8)
def _cgroup_dirs(root: str, proc_cgroup: str) -> tuple[tuple[str, str, str], ...]:
    """``(folder, limit file, usage file)`` of this process's memory cgroup and its parents,
    for cgroup v2 (``memory.max``/``memory.current``) and v1
    (``memory.limit_in_bytes``/``memory.usage_in_bytes``). Read once per process: a
    process does not change cgroup while it plans, and the limits and usage in those
    folders are read afresh each time."""
    try:
        with open(proc_cgroup) as fh:
            lines = fh.read().splitlines()
    except OSError:
        return ()
    out = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            bases, files = [root, os.path.join(root, "unified")], ("memory.max", "memory.current")
        elif "memory" in parts[1].split(","):
            bases, files = [os.path.join(root, "memory")], ("memory.limit_in_bytes",
                                                             "memory.usage_in_bytes")
        else:
            continue
        levels = [p for p in parts[2].split("/") if p]
        for base in bases:  # the cgroup's own folder, then each parent up to the mount root
            out += [(os.path.join(base, *levels[:k]), *files)
                    for k in range(len(levels), -1, -1)]
    return tuple(out)


def _cgroup_available(root: str = "/sys/fs/cgroup",
                      proc_cgroup: str = "/proc/self/cgroup") -> int | None:
    """Smallest ``limit - usage`` over this process's memory cgroups (v1 or v2)."""
    best = None
    for folder, limit_file, usage_file in _cgroup_dirs(root, proc_cgroup):
        limit = _read_int(os.path.join(folder, limit_file))
        if limit is None or limit >= 2**60:  # "max" or the v1 "unlimited" sentinel
            continue
        usage = _read_int(os.path.join(folder, usage_file)) or 0
        free = max(limit - usage, 0)
        best = free if best is None else min(best, free)
    return best


def _rlimit_available() -> int | None:
    """Room left under the soft ``RLIMIT_AS`` and ``RLIMIT_DATA`` of this process."""
    try:
        import resource
    except ImportError:  # pragma: no cover - non-POSIX
        return None
    try:
        with open("/proc/self/statm") as fh:
            fields = fh.read().split()
        page = os.sysconf("SC_PAGE_SIZE")
        used = {"RLIMIT_AS": int(fields[0]) * page, "RLIMIT_DATA": int(fields[5]) * page}
    except (OSError, IndexError, ValueError):
        used = {"RLIMIT_AS": 0, "RLIMIT_DATA": 0}
    best = None
    for name, in_use in used.items():
        soft = resource.getrlimit(getattr(resource, name))[0]
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        free = max(soft - in_use, 0)
        best = free if best is None else min(best, free)
    return best


def available_memory() -> int:
    """Bytes this process can still allocate: the least of the system's ``MemAvailable``,
    the room under its own ``ulimit -v``/``-d`` (``RLIMIT_AS``, ``RLIMIT_DATA``) and under
    the memory limit of its cgroup (v2 ``memory.max``, v1 ``memory.limit_in_bytes``)."""
    found = [v for v in (_meminfo_available(), _rlimit_available(), _cgroup_available())
             if v is not None]
    return min(found) if found else 8 * 2**30


def format_count(count: int) -> str:
    """An integer as text, ``'about 10^400'`` beyond 15 digits (counts of joint states)."""
    count = int(count)
    size = abs(count)
    if size < 10**15:
        return str(count)
    # digits without str(): Python refuses to print an int of more than 4300 digits
    digits = int((size.bit_length() - 1) * math.log10(2)) + 1  # exact or one short
    digits += size >= 10**digits
    return f"about {'-' if count < 0 else ''}10^{digits - 1}"


def format_bytes(nbytes: float) -> str:
    """Human-readable byte count, e.g. ``'8.0 GiB'``; a float past 1024 EiB as
    ``'4.9e+55 EiB'``; an ``int`` of any size (a count of joint states can pass float64's
    range: ``'about 10^400 B'``)."""
    if isinstance(nbytes, (int, np.integer)) and abs(int(nbytes)) >= 2**80:
        return f"{format_count(nbytes)} B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(nbytes) < 1024:
            return f"{nbytes:.1f} {unit}"
        if unit == "EiB":  # beyond 1024 EiB: three digits, not a 50-digit number
            return f"{nbytes:.3g} {unit}"
        nbytes /= 1024
    return f"{nbytes:.1f} EiB"  # pragma: no cover


_REQUEST_LOGS: list[list[tuple[str, float]]] = []


@contextlib.contextmanager
def memory_requests() -> Iterator[list[tuple[str, float]]]:
    """Collect the ``(what, bytes)`` of every :func:`require_memory` call in the block
    (the tests compare these estimates with the measured peak)."""
    log: list[tuple[str, float]] = []
    _REQUEST_LOGS.append(log)
    try:
        yield log
    finally:
        _REQUEST_LOGS.remove(log)


#: Requests up to this many bytes are not checked against the system: reading its limits
#: (``/proc``, cgroup files) costs more than planning a small model, and a process left with
#: less than this cannot go on anyway.
UNCHECKED_BYTES = 2**20


def require_memory(nbytes: float, what: str, limit: float | None = None) -> None:
    """Refuse, before allocating, work that needs more memory than is available.

    Raises ``ValueError`` stating how much ``what`` would need and how much there is.
    ``nbytes`` may be an ``int`` beyond float64's range (compared exactly). Without
    ``limit``, requests of at most :data:`UNCHECKED_BYTES` always pass.
    """
    for log in _REQUEST_LOGS:
        log.append((what, float(nbytes) if nbytes < 2**1023 else math.inf))
    if limit is None and nbytes <= UNCHECKED_BYTES:
        return
    have = available_memory() if limit is None else limit
    if nbytes > have:
        raise ValueError(
            f"{what} would need {format_bytes(nbytes)} of memory, "
            f"but only {format_bytes(have)} is available"
        )
