"""Shared experiment plumbing for the notebooks: profiles, recorded results, figures.

Notebooks hold narrative, parameters and calls; whatever two notebooks both need
lives here.

Profiles
--------
Every notebook has a ``profile`` parameter: ``"quick"`` (CI, seconds), ``"book"``
(the default; paper-quality figures in minutes) or ``"paper"`` (the papers' full
trial counts). :func:`settings` picks the values of one profile.

Recorded results
----------------
:func:`record` stores one number a reader compares with a paper (paper value, our
value, verdict). Rows are kept in memory for :func:`records` and, when the
environment variable ``MRFLIB_RESULTS_DIR`` is set (the book build and the sweep
command set it), written to ``$MRFLIB_RESULTS_DIR/<chapter>.csv``. The
reproduction scorecard of the book is built from those files.

Several processes may record into one folder at once, even the same chapter: each
:func:`record` takes an exclusive lock on ``.<chapter>.lock`` beside the CSV, reads the rows
already there, replaces the row with the same ``(chapter, item, quantity)`` (or appends), and
writes the file atomically (temporary file, fsync, rename). No row is lost and a reader never
sees a half-written file.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mrflib._support.files import atomic_write, lock

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "PROFILES",
    "VERDICTS",
    "settings",
    "record",
    "records",
    "results_dir",
    "ResultsDirError",
    "best_time",
    "exponential_fit",
    "machine",
    "moment_error_curve",
    "loglog_slope",
]

PROFILES = ("quick", "book", "paper")
#: The verdicts of a row: three for a claim of a paper, one for a number the paper does not
#: give, two for a check of the book's own (a target it sets, a cross-check against a peer or
#: a known value), which is never counted among a paper's claims.
VERDICTS = ("reproduced", "reproduced in kind", "not reproduced", "new", "check passed",
            "check failed")
FIELDS = (
    "chapter",
    "paper",
    "item",
    "quantity",
    "paper_value",
    "ours",
    "verdict",
    "note",
    "profile",
)

_RECORDS: list[dict[str, Any]] = []


def settings(profile: str, **by_profile: dict[str, Any]) -> dict[str, Any]:
    """Return the settings of one profile.

    Parameters
    ----------
    profile : {"quick", "book", "paper"}
        The profile chosen in the notebook's ``parameters`` cell.
    **by_profile
        ``quick=dict(...)``, ``book=dict(...)``, ``paper=dict(...)``; a profile
        that is not given falls back to ``book``.

    Examples
    --------
    >>> settings("quick", quick=dict(trials=2), book=dict(trials=20))
    {'trials': 2}
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    unknown = set(by_profile) - set(PROFILES)
    if unknown:
        raise ValueError(f"unknown profile names {sorted(unknown)}; expected {PROFILES}")
    for name, values in by_profile.items():
        if not isinstance(values, dict):
            raise TypeError(f"{name} must be a dict of settings, got {type(values).__name__}")
    if profile in by_profile:
        return dict(by_profile[profile])
    if "book" in by_profile:
        return dict(by_profile["book"])
    raise ValueError(f"no settings given for profile {profile!r} nor for 'book'")


RESULTS_ENV = "MRFLIB_RESULTS_DIR"
_CHAPTER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class ResultsDirError(OSError, ValueError):
    """``MRFLIB_RESULTS_DIR`` names a folder that cannot be used (an ``OSError`` and a
    ``ValueError``: the setting is bad input)."""


def results_dir() -> Path | None:
    """The folder recorded results are written to, or ``None`` (in memory only).

    Raises
    ------
    ResultsDirError
        ``MRFLIB_RESULTS_DIR`` names something that exists but is not a folder.
    """
    path = os.environ.get(RESULTS_ENV)
    if not path:
        return None
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ResultsDirError(f"{RESULTS_ENV}={path!r} is not a folder (a file is in the way); "
                              f"set {RESULTS_ENV} to a writable folder or unset it")
    return out


def _check_chapter(chapter: Any) -> str:
    """A chapter is a plain file stem: it can never name a path outside the results folder."""
    if not isinstance(chapter, str):
        raise TypeError(f"chapter must be a str (the notebook's file stem), got "
                        f"{type(chapter).__name__}")
    if not _CHAPTER.fullmatch(chapter):
        raise ValueError(f"chapter must be a file stem of letters, digits, '_', '-' and '.' "
                         f"that starts with a letter or digit (no '/', no '..'), got {chapter!r}")
    return chapter


def _fmt(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.6g}"
    return str(value)


def record(
    chapter: str,
    paper: str,
    item: str,
    quantity: str,
    paper_value: Any,
    ours: Any,
    verdict: str,
    note: str = "",
    profile: str = "",
) -> None:
    """Record one reproduced number for the reproduction scorecard.

    Parameters
    ----------
    chapter : str
        The notebook's file stem, e.g. ``"smci"``; the scorecard links to it.
    paper : str
        The paper's key in ``book/references.bib``, e.g. ``"gsmci-yasuda-uchizawa"``.
    item : str
        Figure, table or theorem, e.g. ``"Figure 5"``.
    quantity : str
        What is compared, in words.
    paper_value, ours
        The paper's number (or claim, as text) and ours, measured in this run.
    verdict : {"reproduced", "reproduced in kind", "not reproduced", "new", "check passed", \
"check failed"}
        Our honest verdict on a claim of the paper (the first three); "new" marks a number
        the paper does not give; "check passed" and "check failed" a check of the book's own
        (``paper_value`` is then the value it expects), never a claim of the paper.
    note : str
        Anything a reader needs to judge the verdict.
    profile : str
        The notebook profile the number was measured in.
    """
    _check_chapter(chapter)
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    if profile and profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    row = {
        "chapter": chapter,
        "paper": paper,
        "item": item,
        "quantity": quantity,
        "paper_value": _fmt(paper_value),
        "ours": _fmt(ours),
        "verdict": verdict,
        "note": note,
        "profile": profile,
    }
    # Re-recording the same (chapter, item, quantity) replaces the earlier row.
    key = (chapter, item, quantity)
    _RECORDS[:] = [r for r in _RECORDS if (r["chapter"], r["item"], r["quantity"]) != key]
    _RECORDS.append(row)
    out = results_dir()
    if out is not None:
        _merge_row(out, row)


def records(chapter: str | None = None) -> pd.DataFrame:
    """The rows recorded in this process (all, or one chapter's) as a pandas DataFrame."""
    import pandas as pd

    rows = [r for r in _RECORDS if chapter is None or r["chapter"] == chapter]
    return pd.DataFrame(rows, columns=list(FIELDS))


def _merge_row(out: Path, row: dict[str, str]) -> None:
    """Upsert one row into ``out/<chapter>.csv`` under the chapter's lock, atomically."""
    chapter = row["chapter"]
    path = out / f"{chapter}.csv"
    key = (row["chapter"], row["item"], row["quantity"])
    try:
        out.mkdir(parents=True, exist_ok=True)
        with lock(out / f".{chapter}.lock"):
            rows = _read_rows(path)
            rows = [r for r in rows if (r["chapter"], r["item"], r["quantity"]) != key]
            rows.append(row)
            buf = io.StringIO(newline="")
            writer = csv.DictWriter(buf, fieldnames=list(FIELDS))
            writer.writeheader()
            writer.writerows(rows)
            atomic_write(path, buf.getvalue().encode())
    except ResultsDirError:
        raise
    except OSError as err:
        raise ResultsDirError(f"cannot write recorded results to {RESULTS_ENV}={str(out)!r} "
                              f"({path}): {err.strerror or err}") from err


def _read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of an existing chapter CSV (none if absent); a damaged file is an error."""
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames is None:
            rows: list[dict[str, str]] = []
        elif list(reader.fieldnames) != list(FIELDS):
            raise ResultsDirError(f"{path} (in {RESULTS_ENV}) is not a results file: its "
                                  f"header is {reader.fieldnames}, expected {list(FIELDS)}")
        else:
            rows = list(reader)
    if any(None in r or any(v is None for v in r.values()) for r in rows):
        raise ResultsDirError(f"{path} (in {RESULTS_ENV}) is damaged: a row has the wrong "
                              f"number of fields")
    return rows


# --------------------------------------------------------------------------- helpers


def machine() -> str:
    """This machine, as benchmark and paper-run provenance name it: CPU model, cores, memory,
    and the Python, numpy and numba versions."""
    import platform

    import numba

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB; Python {platform.python_version()}, "
            f"numpy {np.__version__}, numba {numba.__version__}")


def best_time(fn: Any, *args: Any, repeat: int = 3, **kwargs: Any) -> float:
    """Best wall time (seconds) of ``repeat`` calls of ``fn`` after one warm-up call
    (:func:`mrflib.repro.timing.best_seconds`)."""
    from mrflib._support.validation import check_positive
    from mrflib.repro.timing import best_seconds

    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    repeat = check_positive(repeat, "repeat", integer=True)
    if repeat > 10**6:
        raise ValueError(f"repeat must be at most 10^6, got {repeat}")
    fn(*args, **kwargs)
    return best_seconds(lambda: fn(*args, **kwargs), repeat)[0]


def moment_error_curve(
    bm: Any, sample_sizes: Any, trials: int, sampler: str, rng: Any, burn_in: int = 200
) -> pd.DataFrame:
    """Mean absolute error of sample moments against the exact ones, versus sample size.

    Parameters
    ----------
    bm : BoltzmannMachine
    sample_sizes : sequence of int
        Sample sizes ``M``.
    trials : int
        Independent repetitions per ``M``.
    sampler : {"gibbs", "exact"}
        ``"gibbs"``: ``M`` independent Gibbs chains with ``burn_in`` sweeps each;
        ``"exact"``: i.i.d. draws by enumeration.
    rng : Generator or int

    Returns
    -------
    pandas.DataFrame with columns ``M, trial, sampler, quantity, mae``
    (``quantity`` is ``"mean"`` for ⟨x_i⟩ and ``"pair"`` for ⟨x_i x_j⟩ on the edges).
    """
    import pandas as pd

    from mrflib._support.validation import as_rng, check_counts, check_positive, require_memory
    from mrflib.inference import exact, sampling
    from mrflib.models.boltzmann import check_model

    bm = check_model(bm, "bm")
    if sampler not in ("gibbs", "exact"):
        raise ValueError(f"sampler must be 'gibbs' or 'exact', got {sampler!r}")
    sample_sizes = check_counts(sample_sizes, "sample_sizes")
    trials = check_positive(trials, "trials", integer=True)
    require_memory(200.0 * trials * len(sample_sizes), f"trials = {trials} rows per size")
    rng = as_rng(rng)
    mean, pair = exact.moments(bm)
    rows = []
    for M in sample_sizes:
        for t in range(trials):
            if sampler == "gibbs":
                x = sampling.gibbs(bm, int(M), burn_in=burn_in, rng=rng)
            else:
                x = exact.sample(bm, int(M), rng=rng)
            m_hat, p_hat = exact.sufficient_statistics(x, bm.edges)
            rows.append((M, t, sampler, "mean", float(np.abs(m_hat - mean).mean())))
            rows.append((M, t, sampler, "pair", float(np.abs(p_hat - pair).mean())))
    return pd.DataFrame(rows, columns=["M", "trial", "sampler", "quantity", "mae"])


def loglog_slope(x: Any, y: Any) -> float:
    """Least-squares slope of ``log y`` against ``log x``."""
    from mrflib._support.validation import check_array

    x = check_array(x, "x", ndim=1)
    if x.size < 2 or np.any(x <= 0):
        raise ValueError("x must hold at least two positive values")
    y = check_array(y, "y", ndim=1, shape=x.shape)
    if np.any(y <= 0):
        raise ValueError("y must hold positive values")
    if np.ptp(x) == 0:
        raise ValueError("x must hold at least two distinct values")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def exponential_fit(x: Any, y: Any) -> tuple[float, float, float]:
    """Least-squares fit of ``log y = alpha + beta x``: ``(alpha, beta, se)``.

    ``se`` is the standard error of ``beta`` from the residuals (``nan`` with fewer than
    three points, where the residuals say nothing). An extrapolation ``d`` steps past the
    last ``x`` is uncertain by the factor ``exp(2 * se * d)`` between one standard error
    below and above, which says how far it can go before it means nothing.
    """
    from mrflib._support.validation import check_array

    x = check_array(x, "x", ndim=1)
    y = check_array(y, "y", ndim=1, shape=x.shape)
    if x.size < 2 or np.ptp(x) == 0:
        raise ValueError("x must hold at least two distinct values")
    if np.any(y <= 0):
        raise ValueError("y must hold positive values")
    beta, alpha = np.polyfit(x, np.log(y), 1)
    se = float("nan")
    if x.size > 2:
        resid = np.log(y) - (alpha + beta * x)
        se = float(np.sqrt(resid @ resid / (x.size - 2) / np.sum((x - x.mean()) ** 2)))
    return float(alpha), float(beta), se
