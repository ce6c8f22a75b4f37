"""Field test with grey levels: the digits as Potts-type models (general discrete MRFs).

:func:`mrflib.io.datasets.digits` with ``levels=4`` keeps four grey levels of each pixel
instead of one threshold. The models are factor graphs on the square or king's-move
lattice: one free unary table per pixel (``q`` states) and one free ``q x q`` table per
edge, the family of LAP's Theorem 10 with cliques of two variables (Mizrahi, de Freitas &
Tenorio, section 4), fitted by :func:`mrflib.learning.learners.fit` with ``"mle"`` (exact maximum
likelihood), ``"mple"`` (pseudo-likelihood) or ``"lap"``, and scored by the exact held-out
log-likelihood per image on the junction tree.

The grey-level and binary log-likelihoods are over different spaces (``q^n`` against
``2^n`` images), so neither is compared with the other directly: each is compared with the
independent-pixel model of its own space (:func:`independent_log_likelihoods`), as the gain
in nats per image over independent pixels.

Pseudo-images. As in :mod:`mrflib.repro.field_test`, border pixels never leave state 0 in
the training images and many neighbouring pairs never take some of their ``q^2`` values,
so the maximum-likelihood estimate does not exist. Every training set gets the ``q^2`` rows
of an orthogonal array of strength 2 on a proper 4-colouring of the lattice
(:func:`pseudo_images`): each pixel takes every state equally often, and each lattice edge
(two colours) every pair of states exactly once -- the unary and pairwise marginals of the
uniform distribution -- so every learner has a finite optimum.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mrflib import exact, learning
from mrflib._support.validation import as_rng, check_positive
from mrflib.models._checks import check_states
from mrflib.models.factor_graph import FactorGraph

from . import field_test as ft
from . import palette

__all__ = [
    "LEARNERS",
    "potts_structure",
    "pseudo_images",
    "independent_log_likelihoods",
    "fit_learner",
    "image_log_likelihoods",
    "gain_frame",
    "class_conditional_accuracy",
    "independent_accuracy",
    "scores",
    "lap_claims",
    "lap_on_model_data",
    "plot_gains",
]

#: The factor-graph learners of :func:`mrflib.learning.learners.fit`, in the chapter's order:
#: ``"lap"`` pulls the potentials out in the reference gauge of Definition 5,
#: ``"lap-zero-sum"`` in the zero-sum gauge (for two states the ±1 parameterization of
#: :func:`mrflib.learning.lap.fit_ising`, the binary field test's LAP).
LEARNERS = ("mle", "mple", "lap", "lap-zero-sum")


def potts_structure(kind: str, side: int, q: int = 4) -> FactorGraph:
    """The Potts-type family on the ``side x side`` ``"square"`` or ``"king"`` lattice.

    One unary factor per pixel (node order), then one pairwise factor per edge of
    :func:`mrflib.repro.field_test.lattice` (edge order), every table free and here zero
    (the learners read only scopes and cardinalities).
    """
    edges = ft.lattice(kind, side)
    q = _check_q(q)
    n = side * side
    scopes = [(i,) for i in range(n)] + [(int(i), int(j)) for i, j in edges]
    tables = [np.zeros(q)] * n + [np.zeros((q, q))] * len(edges)
    return FactorGraph(np.full(n, q, dtype=np.int64), scopes, tables)


def _gf4_mul(a: np.ndarray, b: int) -> np.ndarray:
    """Multiplication in GF(4) = {0, 1, w, w^2} coded 0, 1, 2, 3 (addition is XOR)."""
    log = np.array([0, 0, 1, 2])
    out = (log[a] + log[b]) % 3
    return np.where((a == 0) | (b == 0), 0, np.array([1, 2, 3])[out])


def pseudo_images(side: int, q: int = 4) -> np.ndarray:
    """The ``q^2`` rows of a strength-2 orthogonal array on the 4-colouring of the lattice.

    Row ``(a, b)``, ``a, b = 0..q-1``: a node of colour ``c``
    (:func:`mrflib.repro.field_test.colouring`) takes ``a``, ``b``, ``a + b`` or
    ``a + w b`` for ``c = 0, 1, 2, 3`` (over GF(4) for ``q = 4``, ``w`` its generator;
    over the integers mod ``q`` with ``w = 2`` for an odd prime ``q``). Any two of the four
    columns are a bijective linear image of ``(a, b)``, so every pair of differently
    coloured nodes -- every lattice edge -- takes each of the ``q^2`` pairs of states once,
    and each node each state ``q`` times. ``int8 (q^2, side^2)``.
    """
    side = check_positive(side, "side", integer=True)
    q = check_positive(q, "q", integer=True)
    odd_prime = q >= 3 and q % 2 == 1 and all(q % d for d in range(3, int(q**0.5) + 1, 2))
    if q != 4 and not odd_prime:
        raise ValueError(f"q must be 4 or an odd prime, got {q}")
    a, b = (v.ravel() for v in np.meshgrid(np.arange(q), np.arange(q), indexing="ij"))
    if q == 4:
        cols = np.stack([a, b, a ^ b, a ^ _gf4_mul(b, 2)], axis=1)
    else:
        cols = np.stack([a, b, (a + b) % q, (a + 2 * b) % q], axis=1)
    return cols[:, ft.colouring(side)].astype(np.int8)


def independent_log_likelihoods(train: Any, test: Any, q: int,
                                alpha: float = 1.0) -> np.ndarray:
    """Exact ``log P(x)`` of every test image under independent categorical pixels.

    Pixel ``i`` takes state ``s`` with probability ``(count_i(s) + alpha) / (N + q alpha)``
    (additive smoothing; ``alpha = 1``: Laplace's add-one), counts over the ``N`` training
    images, so ``log P(x) = Σ_i log((count_i(x_i) + alpha) / (N + q alpha))``. For spins,
    pass ``(x + 1) // 2`` and ``q = 2``.
    """
    q = _check_q(q)
    train = _check_images(train, "train", q)
    test = _check_images(test, "test", q, train.shape[1])
    alpha = check_positive(alpha, "alpha")
    n = train.shape[1]
    counts = np.zeros((n, q))
    np.add.at(counts, (np.tile(np.arange(n), len(train)), train.ravel()), 1.0)
    logp = np.log(counts + alpha) - np.log(len(train) + q * alpha)
    return logp[np.arange(n)[None, :], test].sum(axis=1)


def fit_learner(train: Any, structure: FactorGraph, learner: str,
                **options: Any) -> tuple[FactorGraph, float, dict[str, Any]]:
    """Fit one factor-graph learner: ``(FactorGraph, seconds, info)``.

    ``learner`` is one of :data:`LEARNERS`, run by :func:`mrflib.learning.learners.fit` with
    ``options`` (``"lap-zero-sum"`` is ``"lap"`` with ``gauge="zero-sum"``); ``info`` has
    ``n_steps`` and ``converged``.
    """
    if learner not in LEARNERS:
        raise ValueError(f"learner must be one of {LEARNERS}, got {learner!r}")
    _check_structure(structure)
    method = learner
    if learner == "lap-zero-sum":
        method, options = "lap", {"gauge": "zero-sum", **options}
    t0 = time.perf_counter()
    f = learning.fit(train, structure, method, record=False, **options)
    return f.model, time.perf_counter() - t0, {"n_steps": f.n_steps,
                                               "converged": f.converged}


def image_log_likelihoods(model: FactorGraph, x: Any) -> np.ndarray:
    """Exact ``log P(x^(m))`` of every row of ``x``: ``log Z`` once, on the junction tree
    (:func:`mrflib.inference.exact.log_partition`); the mean is
    :func:`mrflib.inference.exact.log_likelihood`."""
    _check_structure(model, "model")
    x = check_states(x, model.cardinalities, "x")
    return model.log_weight(x) - exact.log_partition(model)


def gain_frame(per_image: dict[str, Any], baseline: Any, rng: Any, n_boot: int = 2000,
               rows: list[dict[str, Any]] | None = None) -> Any:
    """Held-out log-likelihood of each model and its gain over independent pixels.

    ``per_image[name]``: the exact log-likelihood of every test image under model
    ``name``; ``baseline``: the same under the independent-pixel model
    (:func:`independent_log_likelihoods`). One row per model plus ``"independent"``:
    ``ll`` with its bootstrap interval, ``gain`` = ``ll`` minus the baseline's with its
    paired-bootstrap interval (``gain_low``, ``gain_high``), and the columns of ``rows``
    (one dict per model with a ``learner`` key, e.g. ``seconds``).
    """
    baseline = _check_values(baseline, "baseline")
    images = _check_per_image(per_image, len(baseline))
    if rows is not None and (not isinstance(rows, list) or not all(
            isinstance(r, dict) and "learner" in r for r in rows)):
        raise ValueError(f"rows must be a list of dicts with a 'learner' key, got {rows!r}")
    n_boot = check_positive(n_boot, "n_boot", integer=True)
    extra = {r["learner"]: r for r in (rows or [])}
    names = [*images, "independent"]
    table = [dict(extra.get(k, {}), learner=k) for k in names]
    images["independent"] = baseline
    frame = ft.score_frame(table, images, rng, n_boot, reference="independent")
    return frame.rename(columns={"gap": "gain", "gap_low": "gain_low",
                                 "gap_high": "gain_high"})


def class_conditional_accuracy(train: Any, y_train: Any, test: Any, y_test: Any,
                               structure: FactorGraph, learner: str, *,
                               pseudo: Any = None, **options: Any) -> tuple[float, float]:
    """Accuracy of one factor graph per class used as a generative classifier.

    The code path of :func:`mrflib.repro.field_test.class_conditional_accuracy`
    (:func:`~mrflib.repro.field_test.generative_accuracy`): class ``c`` gets the model of
    ``structure`` fitted by ``learner`` to its training images (plus ``pseudo``); a test
    image goes to ``argmax_c log P_c(x) + log prior_c`` with exact ``log P_c``. Returns
    ``(accuracy, seconds of fitting)``.
    """
    train, test, y_train, y_test = _check_split(train, y_train, test, y_test, structure)
    if pseudo is not None:
        pseudo = check_states(pseudo, structure.cardinalities, "pseudo")

    def fit_class(xc: np.ndarray) -> tuple[Any, float]:
        if pseudo is not None:
            xc = np.vstack([xc, pseudo])
        model, s, _ = fit_learner(xc, structure, learner, **options)
        return (lambda z: image_log_likelihoods(model, z)), s

    return ft.generative_accuracy(train, y_train, test, y_test, fit_class)


def independent_accuracy(train: Any, y_train: Any, test: Any, y_test: Any, q: int,
                         alpha: float = 1.0) -> float:
    """Accuracy of the independent-pixel classifier (categorical naive Bayes with additive
    smoothing ``alpha``), by the same code path as :func:`class_conditional_accuracy`."""
    q = _check_q(q)
    train = _check_images(train, "train", q)
    test = _check_images(test, "test", q, train.shape[1])
    y_train = ft._check_labels(y_train, train.shape[0], "y_train")
    y_test = ft._check_labels(y_test, test.shape[0], "y_test")
    alpha = check_positive(alpha, "alpha")

    def fit_class(xc: np.ndarray) -> tuple[Any, float]:
        return (lambda z: independent_log_likelihoods(xc, z, q, alpha)), 0.0

    return ft.generative_accuracy(train, y_train, test, y_test, fit_class)[0]


def _check_q(q: Any) -> int:
    q = check_positive(q, "q", integer=True)
    if q < 2:
        raise ValueError(f"q must be at least 2, got {q}")
    return q


def _check_structure(structure: Any, name: str = "structure") -> FactorGraph:
    if not isinstance(structure, FactorGraph):
        raise TypeError(f"{name} must be a FactorGraph, got {type(structure).__name__}")
    return structure


def _check_images(x: Any, name: str, q: int, n: int | None = None) -> np.ndarray:
    """A 2-d array of states ``0..q-1`` with ``n`` columns (any if None), at least one row."""
    if np.ndim(x) != 2 or (n is not None and np.shape(x)[1] != n) or np.shape(x)[0] == 0:
        want = "columns" if n is None else f"{n} columns"
        raise ValueError(f"{name} must be a non-empty 2-d array of states with {want}, got "
                         f"shape {np.shape(x)}")
    try:
        return check_states(x, np.full(np.shape(x)[1], q), name)
    except ValueError as ex:
        raise ValueError(f"{ex} (q = {q} states)") from None


def _check_values(v: Any, name: str, size: int | None = None) -> np.ndarray:
    """A non-empty 1-d array of finite reals (``size`` of them if given)."""
    try:
        arr = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-d array of finite numbers, got {v!r}") from None
    if arr.ndim != 1 or arr.size == 0 or (size is not None and arr.size != size) or not np.all(
            np.isfinite(arr)):
        want = "" if size is None else f" {size}"
        raise ValueError(f"{name} must be a 1-d array of{want} finite numbers (one per test "
                         f"image), got shape {arr.shape}")
    return arr


def _check_per_image(per_image: Any, size: int) -> dict[str, np.ndarray]:
    """``{model name: log-likelihood of every test image}``, names other than
    ``"independent"``."""
    if not isinstance(per_image, dict) or not per_image or "independent" in per_image or not all(
            isinstance(k, str) for k in per_image):
        raise ValueError("per_image must be a non-empty dict of model names (not "
                         f"'independent') to arrays, got {per_image!r}")
    return {k: _check_values(v, f"per_image[{k!r}] (as long as baseline)", size)
            for k, v in per_image.items()}


def _check_split(train: Any, y_train: Any, test: Any, y_test: Any,
                 structure: FactorGraph) -> tuple[np.ndarray, ...]:
    """Images of ``structure``'s states (at least one each) and one label per image."""
    _check_structure(structure)
    train = check_states(train, structure.cardinalities, "train")
    test = check_states(test, structure.cardinalities, "test")
    for name, x in (("train", train), ("test", test)):
        if x.shape[0] == 0:
            raise ValueError(f"{name} must contain at least one image")
    y_train = ft._check_labels(y_train, train.shape[0], "y_train")
    y_test = ft._check_labels(y_test, test.shape[0], "y_test")
    return train, test, y_train, y_test


def scores(results: list[dict[str, Any]], baseline: Any, rng: Any,
           n_boot: int = 2000) -> Any:
    """The gain table of trial results, lattice by lattice.

    ``results``: dicts with ``graph``, ``learner``, ``per_image``, ``seconds``,
    ``n_steps``, ``converged`` (the trials of :mod:`mrflib.repro.field_trials`);
    ``baseline``: the independent-pixel log-likelihood of every test image. Returns
    :func:`gain_frame` per lattice with a ``graph`` column.
    """
    import pandas as pd

    if len(results) == 0:
        raise ValueError("results must hold at least one trial result")
    rng = as_rng(rng)
    frames = []
    for kind in dict.fromkeys(r["graph"] for r in results):
        mine = [r for r in results if r["graph"] == kind]
        rows = [{k: r[k] for k in ("learner", "seconds", "n_steps", "converged") if k in r}
                for r in mine]
        f = gain_frame({r["learner"]: r["per_image"] for r in mine}, baseline, rng, n_boot,
                       rows)
        f.insert(0, "graph", kind)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def lap_claims(frame: Any, close: float = 0.9) -> list[dict[str, Any]]:
    """The LAP paper's claims for general discrete MRFs, judged on one lattice's gain table.

    ``frame``: :func:`gain_frame` rows (``learner``, ``gain``, ``seconds``) with ``"mle"``,
    ``"mple"`` and at least one LAP learner. For each LAP learner present:

    * *no loss of accuracy at a fraction of ML's cost* (section 4, the square-lattice
      example; section 7): "reproduced" when its gain over independent pixels is at least
      ``close`` times ML's and it took less time than ML, "reproduced in kind" when it is
      faster and its gain is positive but below that, else "not reproduced";
    * *LAP should supersede pseudo-likelihood* (section 7): "reproduced" when its held-out
      log-likelihood is at least MPLE's, else "not reproduced".

    Returns dicts with ``learner``, ``claim`` ("accuracy" or "versus PL"), ``verdict`` and
    the numbers (``gain``, ``gain_ml``, ``gain_pl``, ``seconds``, ``seconds_ml``).
    """
    if not all(hasattr(frame, c) for c in ("learner", "gain", "seconds")):
        raise ValueError("frame must be a gain_frame table (columns learner, gain, seconds)")
    f = frame.set_index("learner")
    missing = {"mle", "mple"} - set(f.index)
    laps = [k for k in ("lap", "lap-zero-sum") if k in f.index]
    if missing or not laps:
        raise ValueError(f"frame must hold mle, mple and a LAP learner, got {list(f.index)}")
    g_ml, g_pl, t_ml = float(f.gain["mle"]), float(f.gain["mple"]), float(f.seconds["mle"])
    out = []
    for k in laps:
        g, t = float(f.gain[k]), float(f.seconds[k])
        faster = t < t_ml
        acc = ("reproduced" if faster and g >= close * g_ml else
               "reproduced in kind" if faster and g > 0 else "not reproduced")
        nums = dict(learner=k, gain=g, gain_ml=g_ml, gain_pl=g_pl, seconds=t, seconds_ml=t_ml)
        out.append(dict(claim="accuracy", verdict=acc, **nums))
        out.append(dict(claim="versus PL", **nums,
                        verdict="reproduced" if g >= g_pl else "not reproduced"))
    return out


def lap_on_model_data(model: FactorGraph, n_samples: int, rng: Any,
                      learners: Any = ("mle", "lap", "lap-zero-sum")) -> Any:
    """Refit ``model``'s family on its own exact samples: is a learner's gap the data's?

    Draws ``n_samples`` training and ``n_samples`` test images from ``model``
    (:func:`mrflib.inference.exact.sample`), fits each of ``learners`` in ``model``'s family on the
    training images and scores it on the test images. When the data come from the family
    every consistent learner approaches the true model's score, so a learner far below ML
    on real data but not here is hurt by the misspecification, not by a bug. Returns a frame
    (``learner``, ``ll`` held-out mean log-likelihood, ``gap`` to the true model's ``ll``,
    ``seconds``), the true model first.
    """
    import pandas as pd

    _check_structure(model, "model")
    n_samples = check_positive(n_samples, "n_samples", integer=True)
    if isinstance(learners, str) or not all(k in LEARNERS for k in learners):
        raise ValueError(f"learners must be names among {LEARNERS}, got {learners!r}")
    rng = as_rng(rng)
    train = exact.sample(model, n_samples, rng=rng)
    test = exact.sample(model, n_samples, rng=rng)
    true_ll = float(image_log_likelihoods(model, test).mean())
    rows = [dict(learner="true model", ll=true_ll, gap=0.0, seconds=0.0)]
    for k in learners:
        fit, seconds, _ = fit_learner(train, model, k)
        ll = float(image_log_likelihoods(fit, test).mean())
        rows.append(dict(learner=k, ll=ll, gap=ll - true_ll, seconds=seconds))
    return pd.DataFrame(rows)


def plot_gains(table: Any) -> Any:
    """Gain over independent pixels (nats per image, paired-bootstrap interval) and fit time
    of each learner, one row of panels per lattice, one marker per pixel space. ``table``:
    :func:`scores` frames with a ``pixels`` column (e.g. "4 grey levels", "binary")."""
    import matplotlib.pyplot as plt

    kinds = list(dict.fromkeys(table.graph))
    spaces = list(dict.fromkeys(table.pixels))
    fig, axes = plt.subplots(len(kinds), 2, figsize=(10, 2.8 * len(kinds)), squeeze=False,
                             gridspec_kw={"width_ratios": [2, 1]})
    for row, kind in zip(axes, kinds):
        sub = table[(table.graph == kind) & (table.learner != "independent")]
        names = list(dict.fromkeys(sub.learner))
        for j, space in enumerate(spaces):
            f = sub[sub.pixels == space].set_index("learner").reindex(names)
            y = np.arange(len(names)) + 0.2 * (j - (len(spaces) - 1) / 2)
            err = np.vstack([f.gain - f.gain_low, f.gain_high - f.gain])
            row[0].errorbar(f.gain, y, xerr=err, fmt="o", capsize=3, label=space)
            row[1].barh(y, f.seconds, height=0.2, label=space)
        row[0].axvline(0, color=palette.GUIDE, lw=0.8)
        row[0].set(yticks=np.arange(len(names)), yticklabels=names, title=f"{kind} lattice",
                   xlabel="held-out gain over independent pixels (nats per image)")
        row[1].set(yticks=np.arange(len(names)), yticklabels=[], xscale="log",
                   xlabel="fit time (s)")
        for ax in row:
            ax.invert_yaxis()
    axes[0, 0].legend()
    fig.tight_layout()
    return fig
