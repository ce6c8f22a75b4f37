"""Seeded, cached trials that a chapter can run in chunks and merge (resumable paper runs).

A chapter's heavy experiments are loops of independent trials. :meth:`Trials.map` runs such a
loop with one random generator per trial, derived from ``(seed, experiment name, trial
index)`` alone (:class:`numpy.random.SeedSequence` with a spawn key), never from a stream the
loop shares. So trial ``t`` draws the same bits whether it runs in one uninterrupted
notebook, in chunk 3 of 8 on a Dask worker, or after a crash: a chunked run merged is
identical to one run with the same seed.

Chunks
    With ``n_chunks > 1`` the notebook is a *chunk*: every ``map`` computes only the trials
    ``t`` with ``t % n_chunks == chunk``, stores each one and returns only those; a chunk
    numbered past a short loop's last trial computes nothing of it (an empty list: chunk
    cells must cope with an empty loop). The chapter's :class:`~mrflib.repro.Chapter`
    records nothing in a chunk: its numbers would describe a part of the trials.
Run settings
    A chapter never names its chunk: ``python -m mrflib paper`` sets the environment
    variables :data:`CHUNK_ENV` and :data:`N_CHUNKS_ENV` (this chunk and the number of
    chunks) for a chunk's run, and :data:`TRIAL_CACHE_ENV` (the store) for the merging run,
    in the process that runs the notebook (on a Dask worker too: they travel with the
    point, not through a filesystem), and :class:`Trials` reads them when it is not given
    ``chunk``, ``n_chunks`` or ``cache`` (:func:`run_settings`). Unset, a notebook runs
    whole, without a store.
Store
    Each computed trial is one file ``<store>/<chapter>/<name>/<key>/<t>.pkl``, written
    atomically (:func:`mrflib._support.files.atomic_write`). ``key`` is a digest of the trial
    function (module, name and source), the seed and the loop's parameters, so a changed
    parameter or function never reads an old result. The store is ``cache`` if given, else,
    in a chunk, ``$MRFLIB_RESULTS_DIR/trials`` (which the sweep sends back to the client with
    the point's checksums, so chunks run on a cluster without a shared filesystem).
    A file is a text header (``mrflib-trial/2``, then one JSON line with the key, the trial
    index and the size and SHA-256 of the payload) followed by the pickled result; files of
    the first format (one pickled dict) are still read.
Merge
    A run with ``n_chunks = 1`` and ``cache`` set reads every stored trial and computes only
    the missing ones (storing them too): it is the merge step and the resume step at once.
    A file that is truncated, changed (its payload no longer matches the header's checksum),
    stored for another trial or key (a file copied or renamed into place) or not a trial file
    at all is reported on stderr and computed again; a folder where a file belongs, or a file
    where a folder belongs, is a ``ValueError`` naming it.
Security
    Stored results are pickles, and unpickling runs code the file names. A file is unpickled
    only after its header names this loop's key and trial and its payload matches the
    header's checksum (a first-format file: only if its opening bytes are those of its
    format's pickle for this key and trial), so a damaged, misplaced or foreign file is
    never unpickled. But a checksum is no signature: whoever can write the store can craft a
    file that makes the next run execute code. That is acceptable because the store is the
    user's own folder (or files the user's own sweep workers sent back, verified against the
    sweep's manifests), as trusted as the notebooks and the library the run executes anyway:
    never point ``cache`` at a folder written by someone you would not let edit your code.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import pickle
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mrflib._support.cli import check_folder
from mrflib._support.files import atomic_write, sha256
from mrflib._support.validation import check_path, check_positive

from . import experiments

__all__ = ["Trials", "digest", "stored_trials", "trial_rng", "run_settings", "CHUNK_ENV",
           "N_CHUNKS_ENV", "TRIAL_CACHE_ENV"]

#: The chunk (0-based) a run computes, set by the paper runner (never by a chapter).
CHUNK_ENV = "MRFLIB_CHUNK"
#: The number of chunks the trials are split into.
N_CHUNKS_ENV = "MRFLIB_N_CHUNKS"
#: The folder of stored trials the merging run reads (and a resumed run continues).
TRIAL_CACHE_ENV = "MRFLIB_TRIAL_CACHE"

_FORMAT = "mrflib-trial/1"  # part of every store key: never change it (see Trials.key)
_MAGIC = b"mrflib-trial/2\n"  # the first line of a stored trial file
_MISSING = object()


class _Unusable(Exception):
    """A stored trial file that must be computed again (the message says why)."""


def _encode(key: str, t: int, result: Any) -> bytes:
    """A stored trial file: the header line, one JSON line, the pickled result."""
    payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        pickle.loads(payload)
    except Exception as err:  # noqa: BLE001 - any failure means the store cannot keep it
        raise TypeError(f"the result of trial {t} does not unpickle ({err!r}), so the store "
                        f"could never read it back: return plain data (numbers, strings, "
                        f"arrays, lists, dicts, models)") from None
    head = {"key": key, "t": t, "bytes": len(payload), "sha256": sha256(payload)}
    return _MAGIC + json.dumps(head, sort_keys=True).encode() + b"\n" + payload


def _decode(data: bytes, key: str, t: int) -> Any:
    """The result stored in ``data`` for trial ``t`` under ``key``; :class:`_Unusable` if
    the file is not that trial's (checked before anything is unpickled)."""
    if not data.startswith(_MAGIC):
        return _decode_first_format(data, key, t)
    end = data.find(b"\n", len(_MAGIC))
    try:
        head = json.loads(data[len(_MAGIC):end]) if end > 0 else None
        where, size, checksum = (head["key"], head["t"]), head["bytes"], head["sha256"]
    except (ValueError, TypeError, KeyError) as err:
        raise _Unusable(f"damaged header ({err!r})") from None
    if where != (key, t):
        raise _Unusable(f"stored for trial {where[1]!r} under key {where[0]!r}, not for "
                        f"trial {t} under {key!r} (a file copied or renamed into place)")
    payload = data[end + 1:]
    if len(payload) != size or sha256(payload) != checksum:
        raise _Unusable(f"{len(payload)} payload bytes with another checksum than the "
                        f"header's ({size} bytes): truncated or changed")
    return pickle.loads(payload)


def _decode_first_format(data: bytes, key: str, t: int) -> Any:
    """A file of the first format (a pickled dict; no checksum).

    Unpickled only if its bytes open as that format's pickle of ``{"format", "key", "t",
    ...}`` for this key and trial does (protocol 5: header, frame length, then the dict's
    first items), so a foreign or misplaced pickle is never unpickled.
    """
    opening = pickle.dumps({"format": _FORMAT, "key": key, "t": t}, protocol=5)[11:-2]
    if data[:3] != b"\x80\x05\x95" or data[11:11 + len(opening)] != opening:
        raise _Unusable(f"not a stored trial {t} of key {key!r} (not unpickled)")
    try:
        stored = pickle.loads(data)
        fields = (stored["format"], stored["key"], stored["t"])
    except Exception as err:  # noqa: BLE001 - anything unreadable is computed again
        raise _Unusable(f"not a stored trial ({err!r})") from None
    if fields != (_FORMAT, key, t):
        raise _Unusable(f"stored as {fields!r}, expected {(_FORMAT, key, t)!r}")
    return stored["result"]


def run_settings(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """``{"chunk", "n_chunks", "cache"}`` of this run, from the environment (``os.environ``
    or ``environ``): :data:`CHUNK_ENV`, :data:`N_CHUNKS_ENV` and :data:`TRIAL_CACHE_ENV`;
    ``chunk = 0, n_chunks = 1, cache = None`` where unset.

    Raises
    ------
    ValueError
        A chunk or chunk count that is not an integer, naming the variable and its value.
    """
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {"chunk": 0, "n_chunks": 1, "cache": env.get(TRIAL_CACHE_ENV) or None}
    for key, var in (("chunk", CHUNK_ENV), ("n_chunks", N_CHUNKS_ENV)):
        text = env.get(var, "").strip()
        if text:
            try:
                out[key] = int(text)
            except ValueError:
                raise ValueError(f"environment variable {var} must be an integer (set by "
                                 f"python -m mrflib paper), got {text!r}") from None
    return out


def trial_rng(seed: int, name: str, t: int) -> np.random.Generator:
    """The generator of trial ``t`` of the loop ``name`` under ``seed``.

    ``SeedSequence(seed, spawn_key=(crc32(name), t))``: independent of every other trial and
    of the notebook's own stream, the same in every process.
    """
    seed = check_positive(seed, "seed", integer=True, allow_zero=True)
    t = check_positive(t, "t", integer=True, allow_zero=True)
    if not isinstance(name, str):
        raise TypeError(f"name must be a str (the loop's name), got {type(name).__name__}")
    key = (zlib.crc32(name.encode()), int(t))
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=key))


def _feed(h: Any, obj: Any) -> None:
    """Feed a canonical byte form of ``obj`` to the hash ``h`` (see :func:`digest`)."""
    from mrflib.models.boltzmann import BoltzmannMachine
    from mrflib.models.graphs import Graph

    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes, np.generic)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif isinstance(obj, np.ndarray):
        h.update(f"ndarray:{obj.dtype.str}:{obj.shape};".encode())
        h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}:{len(obj)}[".encode())
        for item in obj:
            _feed(h, item)
        h.update(b"]")
    elif isinstance(obj, dict):
        h.update(f"dict:{len(obj)}{{".encode())
        for k in sorted(obj, key=repr):
            _feed(h, k)
            _feed(h, obj[k])
        h.update(b"}")
    elif isinstance(obj, BoltzmannMachine):
        h.update(b"BoltzmannMachine(")
        _feed(h, (obj.bias, obj.edges, obj.coupling))
        h.update(b")")
    elif isinstance(obj, Graph):
        h.update(b"Graph(")
        _feed(h, (obj.n, obj.edges))
        h.update(b")")
    elif callable(obj) and hasattr(obj, "__qualname__"):
        h.update(f"callable:{obj.__module__}.{obj.__qualname__};".encode())
    else:
        raise TypeError(f"params must be numbers, strings, numpy arrays, lists, tuples, dicts, "
                        f"BoltzmannMachine or Graph objects (to key the stored trials), got "
                        f"{type(obj).__name__}")


def digest(obj: Any) -> str:
    """A SHA-256 hex digest of ``obj`` that is the same in every process and Python run.

    Used as the key of stored trials: equal parameters give equal digests whatever their
    caches or object identities (a model is keyed by its bias, edges and couplings).
    """
    h = hashlib.sha256()
    _feed(h, obj)
    return h.hexdigest()


def _source(fn: Callable[..., Any]) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


class Trials:
    """The trial loops of one chapter run: seeded per trial, stored, split into chunks.

    Parameters
    ----------
    chapter : str
        The notebook's file stem (names the store's folder).
    seed : int
        The notebook's seed; trial ``t`` of loop ``name`` uses :func:`trial_rng`.
    chunk, n_chunks : int, optional
        This run computes the trials ``t % n_chunks == chunk`` (``n_chunks = 1``: all). Not
        given: from the environment (:func:`run_settings`; unset: the whole run).
    cache : str or Path, optional
        The store of computed trials (``""``: none). Required for a chunk unless
        ``MRFLIB_RESULTS_DIR`` is set (the sweep sets it); with ``n_chunks = 1`` it makes the
        run resumable and reads what chunks computed (the merge). Not given: from the
        environment (:data:`TRIAL_CACHE_ENV`; unset: none).
    progress : bool
        Print one line to stderr at most every 30 s while a loop runs (trials done, elapsed,
        time left).
    """

    def __init__(self, chapter: str, seed: int, *, chunk: int | None = None,
                 n_chunks: int | None = None, cache: str | Path | None = None,
                 progress: bool = False) -> None:
        experiments._check_chapter(chapter)
        if chunk is None and n_chunks is None:
            settings = run_settings()
            chunk, n_chunks = settings["chunk"], settings["n_chunks"]
            cache = settings["cache"] if cache is None else cache
        chunk, n_chunks = (0 if chunk is None else chunk), (1 if n_chunks is None else n_chunks)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        n_chunks = check_positive(n_chunks, "n_chunks", integer=True)
        if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) \
                or not 0 <= chunk < n_chunks:
            raise ValueError(f"chunk must be an int in [0, n_chunks) = [0, {n_chunks}), "
                             f"got {chunk!r}")
        self.chapter, self.seed = chapter, int(seed)
        self.chunk, self.n_chunks = int(chunk), int(n_chunks)
        self.progress = bool(progress)
        self.store = self._store(cache)
        self.computed = 0  # trials computed (not read from the store) in this process
        self.loaded = 0

    def _store(self, cache: str | Path | None) -> Path | None:
        if cache not in (None, ""):
            if not isinstance(cache, (str, Path)):
                raise TypeError(f"cache must be a folder path (str or Path), got "
                                f"{type(cache).__name__}")
            path = Path(cache)
            if path.exists() and not path.is_dir():
                raise ValueError(f"cache must be a folder, but {str(path)!r} is a file")
            return path
        results = experiments.results_dir()
        if self.partial:
            if results is None:
                raise ValueError(f"a chunk (n_chunks = {self.n_chunks}) needs cache (a folder) "
                                 f"or {experiments.RESULTS_ENV}: its trials would be lost")
            return results / "trials"
        return None

    @property
    def partial(self) -> bool:
        """True in a chunk: loops return only this chunk's trials."""
        return self.n_chunks > 1

    def indices(self, n: int) -> list[int]:
        """The trial indices of a loop of ``n`` trials this run computes or reads."""
        return list(range(self.chunk, n, self.n_chunks))

    def rng(self, name: str, t: int) -> np.random.Generator:
        """The generator of trial ``t`` of loop ``name`` (:func:`trial_rng`)."""
        return trial_rng(self.seed, name, t)

    def key(self, name: str, fn: Callable[..., Any], params: dict[str, Any]) -> str:
        """The store key of a loop: function, its source, the seed and the parameters."""
        return digest((_FORMAT, self.chapter, name, fn.__module__, fn.__qualname__,
                       _source(fn), self.seed, params))[:20]

    def map(self, name: str, fn: Callable[..., Any], n: int, /, **params: Any) -> list[Any]:
        """Run ``fn(t, rng, **params)`` for the trials of a loop; their results in order.

        Parameters
        ----------
        name : str
            The loop's name, unique in the chapter (seeds the trials and names the store).
        fn : callable
            ``fn(t, rng, **params)``: one trial; ``rng`` is :meth:`rng` ``(name, t)``. Its
            result must pickle and unpickle (with a store, a ``TypeError`` says which does
            not). It must not draw from any other generator.
        n : int
            The number of trials of the loop.
        **params
            Keyword arguments of ``fn``, the same for every trial (part of the store key).

        Returns
        -------
        list
            The results of trials ``0..n-1``; in a chunk, of :meth:`indices` ``(n)`` only
            (empty in a chunk numbered past the loop's last trial).
        """
        if not isinstance(name, str) or not experiments._CHAPTER.fullmatch(name):
            raise ValueError(f"name must be a plain name (letters, digits, '_', '-', '.'), "
                             f"got {name!r}")
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        n = check_positive(n, "n", integer=True)
        key = self.key(name, fn, params)
        folder = None if self.store is None else self.store / self.chapter / name / key
        if folder is not None:
            _check_folder(folder)
        todo = self.indices(n)
        out, t0, last = [], time.perf_counter(), time.perf_counter()
        for done, t in enumerate(todo, 1):
            out.append(self._one(folder, key, name, fn, t, params))
            if self.progress and time.perf_counter() - last > 30:
                last = time.perf_counter()
                self._report(name, done, len(todo), last - t0)
        return out

    def _one(self, folder: Path | None, key: str, name: str, fn: Callable[..., Any], t: int,
             params: dict[str, Any]) -> Any:
        path = None if folder is None else folder / f"{t}.pkl"
        if path is not None:
            stored = _load(path, key, t)
            if stored is not _MISSING:
                self.loaded += 1
                return stored
        result = fn(t, self.rng(name, t), **params)
        self.computed += 1
        if path is not None:
            atomic_write(path, _encode(key, t, result))
        return result

    def _report(self, name: str, done: int, total: int, seconds: float) -> None:
        left = seconds / done * (total - done)
        where = f" (chunk {self.chunk + 1} of {self.n_chunks})" if self.partial else ""
        print(f"{self.chapter}/{name}{where}: {done}/{total} trials, {seconds / 60:.1f} min, "
              f"about {left / 60:.1f} min left", file=sys.stderr, flush=True)

    def __repr__(self) -> str:
        return (f"Trials({self.chapter!r}, seed={self.seed}, chunk={self.chunk}, "
                f"n_chunks={self.n_chunks}, store={str(self.store) if self.store else None})")


def _check_folder(folder: Path, what: str = "cache") -> None:
    """Refuse ``folder`` (to be written) if it, or the nearest existing folder above it, is
    a file or not writable; ``what`` names the argument in the message."""
    check_folder(folder, what)


def _load(path: Path, key: str, t: int) -> Any:
    """The stored result of trial ``t`` at ``path``, or ``_MISSING`` (absent or unusable,
    reported on stderr)."""
    if path.is_dir():
        raise ValueError(f"{str(path)!r} is a folder where the trial store keeps trial {t}'s "
                         f"file; move it away")
    try:
        return _decode(path.read_bytes(), key, t)
    except FileNotFoundError:
        return _MISSING
    except (OSError, _Unusable) as err:
        why = err.strerror if isinstance(err, OSError) else str(err)
        print(f"{path}: unusable stored trial ({why}); computing it again", file=sys.stderr)
        return _MISSING
    except Exception as err:  # noqa: BLE001 - a payload that no longer unpickles
        print(f"{path}: unusable stored trial (its result does not unpickle: {err!r}); "
              f"computing it again", file=sys.stderr)
        return _MISSING


def stored_trials(store: str | Path, chapter: str) -> Sequence[Path]:
    """The trial files stored for ``chapter`` under ``store`` (for reports and tests)."""
    store = check_path(store, "store")
    experiments._check_chapter(chapter)
    return sorted((Path(store) / chapter).rglob("*.pkl"))
