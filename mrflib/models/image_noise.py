"""Noisy images: a noise channel on ``q`` grey levels, a Potts prior, and the posterior.

An image ``x`` of ``q`` levels (``int64 (rows, cols)``, pixel ``(r, c)`` variable
``r * cols + c``) passes through a memoryless channel ``P(y_i | x_i)``; with a prior
``P(x)`` (a :class:`~mrflib.models.factor_graph.FactorGraph` over the pixels) the posterior is

.. math::

    P(x \\mid y) \\propto P(x) \\prod_i P(y_i \\mid x_i),

the prior's factors and one unary factor per pixel, ``log P(y_i | x_i)`` as a function of
``x_i`` (Geman and Geman's restoration model). Channels (:data:`NOISES`), rate ``p``:

``"flip"``
    each pixel is replaced, with probability ``p``, by one of the ``q - 1`` other levels
    drawn uniformly: ``P(y | x) = 1 - p`` if ``y = x``, else ``p / (q - 1)``.
``"salt-pepper"``
    each pixel is replaced, with probability ``p``, by an extreme level, the darkest (0)
    or the brightest (``q - 1``) with probability 1/2 each:
    ``P(y | x) = (1 - p) [y = x] + p/2 [y = 0] + p/2 [y = q - 1]``. A pixel seen at a middle
    level is then known exactly (its unary factor has one finite entry: evidence).

Everything is vectorized over pixels: a 427 x 640 image (273,280 variables, 545,933 lattice
edges) builds in about a second.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.validation import (
    as_rng,
    check_array,
    check_positive,
    check_real,
    integer_values,
    is_choice,
    require_memory,
)
from mrflib.models import graphs
from mrflib.models.factor_graph import MAX_LOG_WEIGHT, FactorGraph

__all__ = ["NOISES", "channel", "check_image", "corrupt", "potts_grid", "posterior"]

#: The noise channels of :func:`channel`.
NOISES = ("flip", "salt-pepper")


def _check_q(q: Any) -> int:
    q = check_positive(q, "q", integer=True)
    if q < 2:
        raise ValueError(f"q must be at least 2 (levels of grey), got {q}")
    return q


def _channel_bytes(q: int) -> int:
    """Bytes :func:`channel` allocates: its matrix and one temporary of its size (exact
    integers, so that a huge ``q`` is compared, not overflowed)."""
    return 16 * q * q


def _check_rate(rate: Any) -> float:
    rate = check_real(rate, "rate")
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"rate must be in [0, 1) (the probability that a pixel is "
                         f"corrupted), got {rate}")
    return rate


def check_image(image: Any, q: int, name: str = "image") -> np.ndarray:
    """``image`` as ``int64 (rows, cols)`` with levels in ``0..q-1``, else ``ValueError``.

    Parameters
    ----------
    image : array_like of int, shape (rows, cols)
        A non-empty 2-d image of integer levels (integral floats accepted).
    q : int
        Number of grey levels, at least 2.
    name : str, default "image"
        The argument named in error messages.

    Returns
    -------
    ndarray of int64, shape (rows, cols)
        The image's levels.
    """
    q = _check_q(q)
    arr = np.asarray(image)
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 2-d image (rows, cols), got shape "
                         f"{arr.shape}")
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must contain integer levels 0..{q - 1}, got dtype "
                         f"{arr.dtype}")
    arr = integer_values(arr, f"{name} must contain integer levels 0..{q - 1}")
    bad = (arr < 0) | (arr >= q)
    if bad.any():
        r, c = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name}[{r}, {c}] = {int(arr[r, c])} is outside the levels "
                         f"0..{q - 1} (q = {q})")
    return arr


def channel(q: int, noise: str = "flip", rate: float = 0.1) -> np.ndarray:
    """The channel's matrix ``P[x, y] = P(y | x)``, ``(q, q)``: each row sums to one.

    Parameters
    ----------
    q : int
        Number of grey levels, at least 2.
    noise : {"flip", "salt-pepper"}, default "flip"
        The channel, as the module notes describe it.
    rate : float, default 0.1
        The probability ``p`` that a pixel is corrupted, in ``[0, 1)``.

    Returns
    -------
    ndarray of float64, shape (q, q)
        ``P[x, y] = P(y | x)``.
    """
    q = _check_q(q)
    if not is_choice(noise, NOISES):
        raise ValueError(f"noise must be one of {NOISES}, got {noise!r}")
    rate = _check_rate(rate)
    require_memory(_channel_bytes(q), f"channel(q = {q}), a {q} x {q} matrix,")
    if noise == "flip":
        P = np.full((q, q), rate / (q - 1))
        np.fill_diagonal(P, 1.0 - rate)
    else:
        P = (1.0 - rate) * np.eye(q)
        P[:, 0] += rate / 2
        P[:, q - 1] += rate / 2
    return P


def corrupt(image: Any, q: int, noise: str = "flip", rate: float = 0.1, *,
            rng: Any) -> np.ndarray:
    """A noisy copy ``y`` of ``image`` drawn through :func:`channel`, ``int64`` like it.

    Parameters
    ----------
    image : array_like of int, shape (rows, cols)
        The clean image, levels ``0..q-1`` (checked by :func:`check_image`).
    q : int
        Number of grey levels, at least 2.
    noise : {"flip", "salt-pepper"}, default "flip"
        The channel (:func:`channel`).
    rate : float, default 0.1
        The probability that a pixel is corrupted, in ``[0, 1)``.
    rng : numpy.random.Generator or int
        Generator or non-negative seed: one uniform ``u`` per pixel (row-major), ``y`` the
        first level whose cumulative ``P(y | x)`` exceeds ``u``, so the same seed gives the
        same image.

    Returns
    -------
    ndarray of int64, shape (rows, cols)
        The noisy image ``y``.
    """
    q = _check_q(q)
    x = check_image(image, q)
    # the channel and its cumulative sums, then per pixel its row of them (float), their
    # comparison with the pixel's uniform (bool) and a few arrays of one entry
    require_memory(_channel_bytes(q) + 8 * q * q + x.size * (9 * q + 40),
                   f"corrupt() of a {x.shape[0]} x {x.shape[1]} image with q = {q} levels")
    P = channel(q, noise, rate)
    u = as_rng(rng).random(x.shape)
    cum = np.cumsum(P, axis=1)[x]
    y = np.sum(u[..., None] >= cum, axis=-1)
    return np.minimum(y, q - 1).astype(np.int64)  # u above a rounded-down total sum


def potts_grid(rows: int, cols: int, q: int, coupling: float,
               field: Any = None) -> FactorGraph:
    """The homogeneous Potts prior on the ``rows x cols`` square lattice.

    ``log P(x) = Σ_(ij) J [x_i = x_j] + Σ_i h(x_i) - log Z``: one pairwise factor
    ``J I_q`` per edge of :func:`mrflib.models.graphs.square_grid` (edge order), all
    sharing one read-only table, then, with ``field``, one unary factor per pixel sharing
    it.

    Parameters
    ----------
    rows : int
        Number of image rows, positive.
    cols : int
        Number of image columns, positive.
    q : int
        Number of grey levels, at least 2.
    coupling : float
        ``J``, a real number: ``J > 0`` favours equal neighbours (smooth images).
    field : array_like of float, shape (q,), or None, default None
        ``h``, the log-weight of each level at every pixel; ``None`` for no unary factors.

    Returns
    -------
    FactorGraph
        ``rows * cols`` variables of ``q`` states (pixel ``(r, c)`` is variable
        ``r * cols + c``).

    Raises
    ------
    ValueError
        If the log-weights add up past float64's range or the model would need more memory
        than is available.
    """
    q = _check_q(q)
    J = check_real(coupling, "coupling")
    edges = graphs.square_grid(rows, cols)
    n = rows * cols
    require_memory(200 * (n + len(edges)) + 16 * q * q + 8 * q,
                   f"a {rows} x {cols} Potts lattice with q = {q} levels")
    pair = J * np.eye(q)
    pair.flags.writeable = False
    scopes: tuple = tuple(map(tuple, edges.tolist()))
    tables: tuple = (pair,) * len(edges)
    if field is not None:
        h = np.array(check_array(field, "field", shape=(q,)), order="C")
        h.flags.writeable = False
        scopes += tuple(zip(range(n)))
        tables += (h,) * n
    total = abs(J) * len(edges) + (float(np.max(np.abs(h))) * n if field is not None else 0.0)
    if not total <= MAX_LOG_WEIGHT:
        raise ValueError(f"coupling and field: their log-weights add up to {total:.3g} over "
                         f"the lattice, beyond {MAX_LOG_WEIGHT:g} (log Z would overflow)")
    card = np.full(n, q, dtype=np.int64)
    card.flags.writeable = False
    return FactorGraph._from_checked(card, scopes, tables)


def posterior(prior: FactorGraph, noisy: Any, q: int, noise: str = "flip",
              rate: float = 0.1) -> FactorGraph:
    """The posterior ``P(x | y)``: ``prior``'s factors, then one unary factor
    ``log P(y_i | x_i)`` per pixel in pixel order (see the module notes).

    Parameters
    ----------
    prior : FactorGraph
        Any model over the ``rows * cols`` pixels (row-major), every variable with ``q``
        states.
    noisy : array_like of int, shape (rows, cols)
        The observed image ``y``, levels ``0..q-1``.
    q : int
        Number of grey levels, at least 2: the channel (:func:`channel`) that made
        ``noisy``.
    noise : {"flip", "salt-pepper"}, default "flip"
        The channel's kind.
    rate : float, default 0.1
        The channel's rate, in ``[0, 1)``.

    Returns
    -------
    FactorGraph
        The posterior on ``prior``'s variables (with its names): ``prior``'s factors, then
        one unary factor per pixel.
    """
    if not isinstance(prior, FactorGraph):
        raise TypeError(f"prior must be a FactorGraph, got {type(prior).__name__}")
    q = _check_q(q)
    y = check_image(noisy, q, "noisy")
    if prior.n != y.size or np.any(prior.cardinalities != q):
        raise ValueError(f"prior must have one variable of q = {q} states per pixel of noisy "
                         f"({y.shape[0]} x {y.shape[1]} = {y.size}), got {prior!r}")
    # the channel and its logarithm, then a row of it per pixel and the factors' scopes
    require_memory(_channel_bytes(q) + 8 * q * q + 8 * y.size * (q + 40),
                   f"the {y.size} likelihood factors of posterior() with q = {q} levels")
    with np.errstate(divide="ignore"):  # an impossible observation is a zero weight
        loglik = np.log(channel(q, noise, rate)).T  # row y: log P(y | x) over x
    unary = loglik[y.ravel()]
    unary.flags.writeable = False
    scopes = prior.scopes + tuple(zip(range(y.size)))
    tables = prior.log_tables + tuple(unary)
    return FactorGraph._from_checked(prior.cardinalities, scopes, tables, prior.names,
                                     prior.state_names)
