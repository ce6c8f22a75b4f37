"""The precision limit of exact inference in float64: how large log-weights may be.

Every exact engine (the enumeration of :mod:`mrflib.inference.exact.enumeration` and the
variable elimination of :mod:`mrflib.inference.exact.elimination`, of factor graphs and of
Boltzmann machines) adds the factors'
log-weights ``θ_k(x_{S_k})`` (a Boltzmann machine's ``b_i x_i`` and ``J_ij x_i x_j``) in
float64. A sum
whose terms reach ``M`` in magnitude is rounded to a multiple of about ``M ε``
(``ε = 2^-52``), so the differences of order one that decide the answer are lost once ``M ε``
is not small: a unary factor ``[0, 1e16]`` beside factors of weight one makes every state
with ``x_0 = 1`` equally likely (``1e16 + 1 == 1e16``), and the marginals come out 0.5 where
they are not.

The limit, decided here once for every engine: the largest finite ``|log-weight|`` of the
factors, added up (:func:`magnitude`, the bound on any partial sum of a state's
log-weight), may reach :data:`PRECISE_LOG_WEIGHT` ``= 2^32`` (about ``4.3e9``); each rounding
then moves a log-weight by at most ``2^-21`` (about ``5e-7``), so a probability by a
relative ``5e-7`` per factor at worst. Beyond it the engines still answer (a model whose
large weights only separate states far apart is answered exactly, e.g. the ``±7e307``
Boltzmann machines whose modes are certain), but every call warns with a
:class:`PrecisionWarning` naming the magnitude: the answer may be wrong in any digit. Past
:data:`mrflib.models.factor_graph.MAX_LOG_WEIGHT` (``1e300``) a model is refused outright.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import numpy as np

from mrflib._support.stacklevel import user_stacklevel

# reported and checked are the engines' plumbing, not part of the public contract
__all__ = ["PRECISE_LOG_WEIGHT", "PrecisionWarning", "magnitude", "warn_if_imprecise"]

#: Exact inference is precise (each log-weight to about ``2^-21``) while the largest
#: ``|log-weight|`` of the factors add up to at most this.
PRECISE_LOG_WEIGHT = 2.0**32


class PrecisionWarning(UserWarning):
    """Log-weights too large for float64 to separate the differences that decide the
    answer: the exact engines' result may be wrong (see :mod:`mrflib.models.precision`)."""


def magnitude(tables: Iterable[np.ndarray]) -> float:
    """``Σ_k max |θ_k|`` over the finite entries of each table.

    Parameters
    ----------
    tables : iterable of array_like of float
        Natural-log factor tables; ``-inf`` is a zero weight, not a magnitude, and empty
        tables count 0.

    Returns
    -------
    float
        The sum, in table order: a bound on ``|Σ|`` of any partial sum of a state's
        log-weight.
    """
    total = 0.0
    for batch in _batches(tables):
        if len(batch) == 1:
            t = batch[0]
            total += float(np.max(np.abs(t), where=np.isfinite(t), initial=0.0))
            continue
        # one reduction over many small tables: a call per table costs more than its work
        a = np.abs(np.concatenate(batch, axis=None))
        a[~np.isfinite(a)] = 0.0
        starts = np.cumsum([0] + [t.size for t in batch[:-1]])
        for m in np.maximum.reduceat(a, starts).tolist():
            total += m  # in table order, one at a time: the same sum as table by table
    return total


#: Entries of the small tables :func:`magnitude` reduces in one call.
_BATCH_ENTRIES = 2**16


def _batches(tables: Iterable[np.ndarray]) -> Iterable[list[np.ndarray]]:
    """The non-empty tables in order, in runs of at most :data:`_BATCH_ENTRIES` entries
    (a larger table alone)."""
    batch: list[np.ndarray] = []
    size = 0
    for t in tables:
        if type(t) is not np.ndarray:
            t = np.asarray(t)
        if not t.size:
            continue
        if batch and size + t.size > _BATCH_ENTRIES:
            yield batch
            batch, size = [], 0
        batch.append(t)
        size += t.size
    if batch:
        yield batch


def warn_if_imprecise(total: float, what: str = "model", stacklevel: int | None = None
                      ) -> None:
    """Warn (:class:`PrecisionWarning`) when ``total`` passes :data:`PRECISE_LOG_WEIGHT`.

    Parameters
    ----------
    total : float
        The model's :func:`magnitude` (``inf`` past the float range).
    what : str, default "model"
        What the warning names as the imprecise model.
    stacklevel : int or None, default None
        Passed to :func:`warnings.warn`; ``None`` names the user's call, the first frame
        outside mrflib.
    """
    if total > PRECISE_LOG_WEIGHT:
        if math.isfinite(total):
            shown, lost = f"{total:.3g}", f"about {total * np.finfo(np.float64).eps:.2g}"
        else:  # a Boltzmann machine past the float range (enumerated scaled by 2^-k)
            shown, lost = "more than 1.8e308", "more than 1e292"
        warnings.warn(f"{what}: the largest |log-weight| of its factors add up to {shown}, "
                      f"beyond {PRECISE_LOG_WEIGHT:.3g} (2^32): float64 rounds its "
                      f"log-weights by up to {lost}, so the exact answer may be wrong",
                      PrecisionWarning,
                      stacklevel=user_stacklevel() if stacklevel is None else stacklevel)


def model_magnitude(model: Any) -> float | None:
    """The magnitude of a model's log-weights, as :func:`warn_if_imprecise` takes it.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine or object
        The model (not checked).

    Returns
    -------
    float or None
        :func:`magnitude` of a factor graph's tables, or ``Σ|b_i| + Σ|J_ij|`` of a
        Boltzmann machine (``inf`` past the float range); None for anything else (its
        validation, not this check, reports it).
    """
    tables = getattr(model, "log_tables", None)
    if tables is not None:
        return magnitude(tables)
    bias, coupling = getattr(model, "bias", None), getattr(model, "coupling", None)
    if isinstance(bias, np.ndarray) and isinstance(coupling, np.ndarray):
        with np.errstate(over="ignore"):  # past the float range: inf, and a warning
            return float(np.abs(bias).sum() + np.abs(coupling).sum())
    return None


# True while a call that has checked its model runs: the engines it calls do not warn again.
_REPORTED: contextvars.ContextVar[bool] = contextvars.ContextVar("mrflib_precision_reported",
                                                                 default=False)


@contextlib.contextmanager
def reported(model: Any) -> Iterator[None]:
    """Context manager: warn once if ``model`` is past the precision limit.

    Warns (:func:`warn_if_imprecise`) unless a call around this one has already checked
    it; the engines called inside do not check it again. The fronts (``exact``,
    ``approx``, ``solve``) and every public function of the exact engines run inside one
    (:func:`checked`), so a direct call of an engine warns as its front does, and a call
    warns once however deep it goes.

    Parameters
    ----------
    model : FactorGraph or BoltzmannMachine or object
        The model; anything else is not checked here.

    Yields
    ------
    None
        Control, for the body of the ``with`` block.
    """
    if not _REPORTED.get():
        total = model_magnitude(model)
        if total is not None:
            warn_if_imprecise(total, f"{type(model).__name__}(n={model.n})")
    token = _REPORTED.set(True)
    try:
        yield
    finally:
        _REPORTED.reset(token)


_F = TypeVar("_F", bound=Callable[..., Any])


def checked(fn: _F) -> _F:
    """Decorate an engine's public function of ``(model, ...)``.

    Parameters
    ----------
    fn : callable
        The function; its first parameter is the model.

    Returns
    -------
    callable
        ``fn``, run inside :func:`reported` of its first argument.
    """
    first = next(iter(inspect.signature(fn).parameters))

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with reported(args[0] if args else kwargs.get(first)):
            return fn(*args, **kwargs)
    return run  # type: ignore[return-value]
