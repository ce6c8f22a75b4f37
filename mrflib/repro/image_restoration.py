"""The image-restoration chapter's experiment: learn a Potts prior, corrupt, restore, score.

The prior family is the Potts lattice of :func:`mrflib.models.image_noise.potts_grid` with
tied parameters (:class:`mrflib.learning.tying.Tie`): one coupling ``J_h`` shared by every
horizontal edge, one ``J_v`` by every vertical edge (both of Potts form ``J [x_i = x_j]``)
and one free field table shared by every pixel, learned from the clean quantized image by
:func:`mrflib.learning.fit`. A restoration is scored by the fraction of pixels that differ
from the clean image, beside a median filter's (``scipy.ndimage.median_filter``).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from scipy import ndimage

from mrflib import learning
from mrflib._support.validation import as_rng, check_positive
from mrflib.inference.approx import point_estimates
from mrflib.learning.tying import Tie
from mrflib.models import image_noise
from mrflib.models.factor_graph import FactorGraph

__all__ = ["MEDIAN_SIZES", "prior_family", "learn_prior", "couplings", "restore",
           "error_rate"]

#: The median filters' windows (``size x size`` pixels).
MEDIAN_SIZES = (3, 5)


def prior_family(rows: int, cols: int, q: int) -> tuple[FactorGraph, Tie]:
    """The structure and tying of the prior: Potts couplings ``J_h``, ``J_v`` and a shared
    field (see the module notes)."""
    structure = image_noise.potts_grid(rows, cols, q, 0.0, field=np.zeros(q))
    groups = ["field" if len(s) == 1 else ("h" if s[1] == s[0] + 1 else "v")
              for s in structure.scopes]
    return structure, Tie(structure, groups, form={"h": "potts", "v": "potts"})


def learn_prior(clean: Any, q: int, method: str = "mple", *, rng: Any = None,
                **options: Any) -> learning.Fit:
    """The prior learned from the one clean image ``clean`` (``int64 (rows, cols)``) by
    ``learning.fit(data, structure, method, tie=...)``: the image is one sample of the
    lattice, so only learners whose statistics pool over the tied factors can learn from it."""
    x = image_noise.check_image(clean, q, "clean")
    structure, tie = prior_family(*x.shape, q)
    return learning.fit(x.reshape(1, -1), structure, method, tie=tie, rng=rng, **options)


def couplings(fit: learning.Fit) -> dict[str, float]:
    """``{"J_h", "J_v"}`` of a fit of :func:`learn_prior`, read from a horizontal and a
    vertical edge's table ``t`` as ``(t_00 + t_11 - t_01 - t_10) / 2``: the Potts coupling,
    whatever functions of one variable the table's normalization moved into it."""
    model = fit.model
    out = {}
    for name, pick in (("J_h", lambda s: s[1] == s[0] + 1), ("J_v", lambda s: s[1] > s[0] + 1)):
        k = next(k for k, s in enumerate(model.scopes) if len(s) == 2 and pick(s))
        t = model.log_tables[k]
        out[name] = float(t[0, 0] + t[1, 1] - t[0, 1] - t[1, 0]) / 2
    return out


def error_rate(restored: Any, clean: Any) -> float:
    """The fraction of pixels of ``restored`` that differ from ``clean``."""
    a, b = np.asarray(restored), np.asarray(clean)
    if a.size != b.size:
        raise ValueError(f"restored must have the clean image's {b.size} pixels, got {a.size}")
    return float(np.mean(a.reshape(b.shape) != b))


def restore(clean: Any, prior: FactorGraph, q: int, noise: str, rate: float, *,
            methods: dict[str, tuple[str, dict]], rng: Any, icm: bool = True,
            time_limit: float | None = None) -> tuple[dict[str, np.ndarray], list[dict]]:
    """Corrupt ``clean``, then restore it by the median filters, by the posterior marginals
    of each of ``methods`` (``{label: (approx method, options)}``) and, with ``icm``, by
    iterated conditional modes started from the first method's MPM (the MAP estimate).

    Returns ``(images, rows)``: ``images`` maps ``"clean"``, ``"noisy"``, ``"median 3x3"``,
    ..., each method's label and ``"ICM"`` to ``(rows, cols)`` images; ``rows`` has one
    record per restoration: method, error, seconds, converged (the median filters and the
    noisy image itself included).
    """
    x = image_noise.check_image(clean, q, "clean")
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    rng = as_rng(rng)
    y = image_noise.corrupt(x, q, noise, rate, rng=rng)
    images = {"clean": x, "noisy": y}
    rows = [{"method": "noisy", "error": error_rate(y, x), "seconds": 0.0,
             "converged": True}]
    for size in MEDIAN_SIZES:
        t0 = time.perf_counter()
        images[f"median {size}x{size}"] = ndimage.median_filter(y, size=size)
        rows.append({"method": f"median {size}x{size}", "seconds": time.perf_counter() - t0,
                     "error": error_rate(images[f"median {size}x{size}"], x),
                     "converged": True})
    t0 = time.perf_counter()
    post = image_noise.posterior(prior, y, q, noise, rate)
    build = time.perf_counter() - t0
    for label, (method, options) in methods.items():
        state, res = point_estimates.mpm(post, method, rng=rng, time_limit=time_limit,
                                         **options)
        images[label] = state.reshape(x.shape)
        rows.append({"method": label, "error": error_rate(state, x),
                     "seconds": build + res.seconds, "converged": bool(res.converged)})
    if icm and methods:
        first = next(iter(methods))
        t0 = time.perf_counter()
        r = point_estimates.icm(post, images[first].ravel())
        images["ICM"] = r.state.reshape(x.shape)
        rows.append({"method": "ICM", "error": error_rate(r.state, x),
                     "seconds": time.perf_counter() - t0, "converged": r.converged})
    for row in rows:
        row.update(noise=noise, rate=rate)
    return images, rows
