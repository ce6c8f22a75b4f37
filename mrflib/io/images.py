"""Grey-level images as Potts fields: a photograph that ships with scikit-learn, quantized.

::

    grey = images.sample_grey("china.jpg")        # float (427, 640), luma in [0, 1]
    clean = images.quantize(grey, q=4)            # int64 levels 0..3, each used ~1/4 of the time
    clean = images.sample_image("china.jpg", q=4) # the two steps at once

A pixel at row ``r``, column ``c`` of a ``rows x cols`` image is variable ``r * cols + c``
of a model (row-major), the numbering of :func:`mrflib.models.graphs.square_grid`, so
``image.ravel()`` is a state of a lattice model and ``state.reshape(rows, cols)`` an image.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mrflib._support.optional import optional_import
from mrflib._support.validation import (
    check_array,
    check_positive,
    require_memory,
)

__all__ = ["LUMA", "SAMPLE_IMAGES", "quantize", "sample_grey", "sample_image"]

#: The ITU-R BT.601 weights of red, green and blue in the grey level (luma).
LUMA = (0.299, 0.587, 0.114)
#: The photographs scikit-learn ships (``sklearn.datasets.load_sample_image``).
SAMPLE_IMAGES = ("china.jpg", "flower.jpg")


def quantize(grey: Any, q: int = 4) -> np.ndarray:
    """Grey levels quantized to ``q`` levels at the quantiles of the image.

    The thresholds are the ``k / q`` quantiles of the pixels (``k = 1..q-1``), so each
    level holds about ``1/q`` of the pixels (exactly, up to ties) and the levels keep the
    order of the grey values: level 0 the darkest.

    Parameters
    ----------
    grey : array_like, shape (rows, cols)
        Finite real grey values.
    q : int, default 4
        Number of levels, at least 2.

    Returns
    -------
    ndarray of int64, shape (rows, cols)
        Levels ``0..q-1``.
    """
    arr = check_array(grey, "grey")
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"grey must be a non-empty 2-d image (rows, cols), got shape "
                         f"{arr.shape}")
    q = _check_levels(q)
    require_memory(_quantize_bytes(q, arr.size),
                   f"quantize() of a {arr.shape[0]} x {arr.shape[1]} image to q = {q} levels")
    cuts = np.quantile(arr, np.arange(1, q) / q)
    # a value equal to a cut goes up, so a constant image is all level q-1 rather than
    # some level chosen by rounding
    return np.searchsorted(cuts, arr, side="right").astype(np.int64)


def _check_levels(q: Any) -> int:
    q = check_positive(q, "q", integer=True)
    if q < 2:
        raise ValueError(f"q must be at least 2 (levels of grey), got {q}")
    return q


def _quantize_bytes(q: int, pixels: int) -> int:
    """Bytes :func:`quantize` allocates: about a dozen arrays of one entry per level (the
    quantiles asked for, numpy's interpolation of them) and four of one per pixel (the
    partitioned copy and numpy's work on it, the levels, their ``int64`` copy)."""
    return 8 * (12 * q + 4 * pixels)


def sample_grey(name: str = "china.jpg") -> np.ndarray:
    """A photograph of scikit-learn's sample images as grey levels in ``[0, 1]``.

    ``sklearn.datasets.load_sample_image(name)`` (RGB, 8 bits a channel) weighted by
    :data:`LUMA`. Needs scikit-learn (the extra ``datasets``).

    Parameters
    ----------
    name : {"china.jpg", "flower.jpg"}, default "china.jpg"
        One of :data:`SAMPLE_IMAGES`.

    Returns
    -------
    ndarray of float64, shape (rows, cols)
        The grey levels; ``"china.jpg"`` is 427 x 640 pixels.
    """
    if not isinstance(name, str) or name not in SAMPLE_IMAGES:
        raise ValueError(f"name must be one of {SAMPLE_IMAGES}, got {name!r}")
    load = optional_import("sklearn.datasets", f"images.sample_grey({name!r})",
                           "datasets").load_sample_image
    rgb = np.asarray(load(name), dtype=np.float64) / 255.0
    return rgb @ np.asarray(LUMA)


def sample_image(name: str = "china.jpg", q: int = 4) -> np.ndarray:
    """:func:`sample_grey` quantized by :func:`quantize` to ``q`` levels.

    Parameters
    ----------
    name : {"china.jpg", "flower.jpg"}, default "china.jpg"
        One of :data:`SAMPLE_IMAGES`.
    q : int, default 4
        Number of levels, at least 2.

    Returns
    -------
    ndarray of int64, shape (rows, cols)
        Levels ``0..q-1``, level 0 the darkest.
    """
    q = _check_levels(q)
    # the levels' share of quantize()'s memory, before the photograph is loaded
    require_memory(_quantize_bytes(q, 0), f"sample_image() in q = {q} levels")
    return quantize(sample_grey(name), q)
