"""Seeded, cached trials that a chapter can run in chunks and merge (resumable paper runs).

A chapter's heavy experiments are loops of independent trials. :meth:`Trials.map` runs such a
loop with one random generator per trial, derived from ``(seed, experiment name, trial
index)`` alone (:class:`numpy.random.SeedSequence` with a spawn key), never from a stream the
loop shares. So trial ``t`` draws the same bits whether it runs in one uninterrupted
notebook, in chunk 3 of 8 on a Dask worker, or after a crash: a chunked run merged is
identical to one run with the same seed.

Chunks
    With ``n_chunks > 1`` the notebook is a *chunk*: every ``map`` computes only the trials
    ``t`` with ``t % n_chunks == chunk`` (a chunk with no trial of a short loop computes
    trial ``chunk % n``, so that every loop it reaches has data), stores each one and returns
    only those. The chapter's :class:`~mrflib.repro.Chapter` records nothing in a chunk: its
    numbers would describe a part of the trials.
Store
    Each computed trial is one file ``<store>/<chapter>/<name>/<key>/<t>.pkl``, written
    atomically (:func:`mrflib._files.atomic_write`). ``key`` is a digest of the trial
    function (module, name and source), the seed and the loop's parameters, so a changed
    parameter or function never reads an old result. The store is ``cache`` if given, else,
    in a chunk, ``$MRFLIB_RESULTS_DIR/trials`` (which the sweep sends back to the client with
    the point's checksums, so chunks run on a cluster without a shared filesystem).
Merge
    A run with ``n_chunks = 1`` and ``cache`` set reads every stored trial and computes only
    the missing ones (storing them too): it is the merge step and the resume step at once.
    A file that cannot be read or was stored under another key is computed again.
"""

from __future__ import annotations

import hashlib
import inspect
import pickle
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import experiments
from .._files import atomic_write
from .._validation import check_path, check_positive

__all__ = ["Trials", "digest", "stored_trials", "trial_rng"]

_FORMAT = "mrflib-trial/1"


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
    from ..graphs import Graph
    from ..model import BoltzmannMachine

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
    chunk, n_chunks : int
        This run computes the trials ``t % n_chunks == chunk`` (``n_chunks = 1``: all).
    cache : str or Path, optional
        The store of computed trials. Required for a chunk unless ``MRFLIB_RESULTS_DIR`` is
        set (the sweep sets it); with ``n_chunks = 1`` it makes the run resumable and reads
        what chunks computed (the merge).
    progress : bool
        Print one line to stderr at most every 30 s while a loop runs (trials done, elapsed,
        time left).
    """

    def __init__(self, chapter: str, seed: int, *, chunk: int = 0, n_chunks: int = 1,
                 cache: str | Path | None = None, progress: bool = False) -> None:
        experiments._check_chapter(chapter)
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
        if not self.partial:
            return list(range(n))
        mine = list(range(self.chunk, n, self.n_chunks))
        return mine or [self.chunk % n]

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
            result must pickle. It must not draw from any other generator.
        n : int
            The number of trials of the loop.
        **params
            Keyword arguments of ``fn``, the same for every trial (part of the store key).

        Returns
        -------
        list
            The results of trials ``0..n-1``; in a chunk, of :meth:`indices` ``(n)`` only.
        """
        if not isinstance(name, str) or not experiments._CHAPTER.fullmatch(name):
            raise ValueError(f"name must be a plain name (letters, digits, '_', '-', '.'), "
                             f"got {name!r}")
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        n = check_positive(n, "n", integer=True)
        key = self.key(name, fn, params)
        folder = None if self.store is None else self.store / self.chapter / name / key
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
        if path is not None and path.exists():
            try:
                stored = pickle.loads(path.read_bytes())
                if stored["format"] == _FORMAT and stored["key"] == key and stored["t"] == t:
                    self.loaded += 1
                    return stored["result"]
            except Exception as err:  # noqa: BLE001 - any unreadable file is recomputed
                print(f"{path}: unreadable stored trial ({err!r}); computing it again",
                      file=sys.stderr)
        result = fn(t, self.rng(name, t), **params)
        self.computed += 1
        if path is not None:
            blob = {"format": _FORMAT, "key": key, "t": t, "result": result}
            atomic_write(path, pickle.dumps(blob, protocol=pickle.HIGHEST_PROTOCOL))
        return result

    def _report(self, name: str, done: int, total: int, seconds: float) -> None:
        left = seconds / done * (total - done)
        where = f" (chunk {self.chunk + 1} of {self.n_chunks})" if self.partial else ""
        print(f"{self.chapter}/{name}{where}: {done}/{total} trials, {seconds / 60:.1f} min, "
              f"about {left / 60:.1f} min left", file=sys.stderr, flush=True)

    def __repr__(self) -> str:
        return (f"Trials({self.chapter!r}, seed={self.seed}, chunk={self.chunk}, "
                f"n_chunks={self.n_chunks}, store={str(self.store) if self.store else None})")


def stored_trials(store: str | Path, chapter: str) -> Sequence[Path]:
    """The trial files stored for ``chapter`` under ``store`` (for reports and tests)."""
    store = check_path(store, "store")
    experiments._check_chapter(chapter)
    return sorted((Path(store) / chapter).rglob("*.pkl"))
