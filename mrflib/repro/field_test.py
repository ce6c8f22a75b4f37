"""Field test on real data: every Boltzmann-machine learner on scikit-learn's digits.

The chapter ``notebooks/field_test.ipynb`` fits fully visible Boltzmann machines to the
handwritten digits of :func:`mrflib.io.datasets.digits` on the 8x8 square lattice and on the
king's-move lattice, scores each fit by the exact held-out log-likelihood per image, and
compares the learners with scikit-learn's baselines. This module holds its experiment code.

Pseudo-images
-------------
On real data the maximum-likelihood estimate need not exist: border pixels of the digits are
never on in the training set, and some neighbouring pairs never take all four values, so the
data moments sit on the boundary of the marginal polytope and the likelihood keeps growing as
a bias or coupling runs to infinity. Every learner is then scored on how far its optimizer
happened to run. We add a handful of *pseudo-images* to every training set: the ``2^k`` rows
of a Walsh design on a proper colouring of the lattice (node of colour ``c`` takes the Walsh
column ``c + 1``). Their means and their correlations along every lattice edge are exactly
zero -- the moments of the uniform distribution -- so the training moments move by the
factor ``N / (N + 2^k)`` toward the interior of the polytope (the conjugate prior of an
exponential family), every pair takes all four values, and every learner has a finite
optimum. All learners see the same pseudo-images.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mrflib import exact, graphs, lap, learning
from mrflib._support.optional import optional_import
from mrflib._support.validation import (
    as_rng,
    check_array,
    check_positive,
    check_real,
    check_spins,
    require_memory,
)
from mrflib.models._checks import check_states
from mrflib.models.boltzmann import check_model

from . import palette

__all__ = [
    "LEARNERS",
    "DEFAULT_OPTIONS",
    "lattice",
    "crop",
    "colouring",
    "pseudo_images",
    "split",
    "kfold",
    "fit_learner",
    "image_log_likelihoods",
    "bootstrap_mean",
    "score_learners",
    "score_frame",
    "verdicts",
    "class_conditional_accuracy",
    "generative_accuracy",
    "sklearn_accuracies",
    "nodewise_logistic",
    "coupling_agreement",
]

#: Every learner of the library, in the chapter's order.
LEARNERS = ("mle", "mple", "rm", "mpf", "1-smci", "s2-smci", "cd", "pcd", "smci-pcd", "lap")
#: Options each learner runs with unless the caller overrides them (``learning.fit`` keywords;
#: ``"lap"`` takes :func:`mrflib.learning.lap.fit_ising` keywords). The local objectives are run to
#: their own optimum by L-BFGS; the moment-matching learners get a fixed step budget.
DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {
    "mle": {},
    "mple": {"solver": "lbfgs"},
    "rm": {"solver": "lbfgs"},
    "mpf": {"solver": "lbfgs"},
    "1-smci": {"max_steps": 1000},
    "s2-smci": {"max_steps": 300},
    "cd": {"max_steps": 1000},
    "pcd": {"max_steps": 1000},
    "smci-pcd": {"max_steps": 1000},
    "lap": {},
}


# --------------------------------------------------------------------------- data
def lattice(kind: str, side: int) -> np.ndarray:
    """Edges of the ``side x side`` ``"square"`` or ``"king"`` lattice (row-major nodes)."""
    side = check_positive(side, "side", integer=True)
    if kind == "square":
        return graphs.square_grid(side, side)
    if kind == "king":
        return graphs.king_grid(side, side)
    raise ValueError(f"kind must be 'square' or 'king', got {kind!r}")


def crop(x: Any, side: int, offset: int | None = None, width: int = 8,
         levels: int | None = None) -> np.ndarray:
    """The ``side x side`` window of ``width x width`` images starting at ``(offset, offset)``.

    Default: the centred window. Node ``r * side + c`` of the result is pixel
    ``(offset + r, offset + c)``. ``side = width`` returns the images unchanged. ``x`` holds
    spins (``levels=None``) or integer states ``0..levels-1``.
    """
    if levels is None:
        x = check_spins(x, width * width, "x")
    else:
        levels = check_positive(levels, "levels", integer=True)
        x = check_states(x, np.full(width * width, levels), "x")
    side = check_positive(side, "side", integer=True)
    if side > width:
        raise ValueError(f"side must be at most {width}, got {side}")
    offset = ((width - side) // 2 if offset is None
              else check_positive(offset, "offset", allow_zero=True, integer=True))
    if not 0 <= offset <= width - side:
        raise ValueError(f"offset must be in [0, {width - side}], got {offset}")
    img = x.reshape(-1, width, width)[:, offset:offset + side, offset:offset + side]
    return np.ascontiguousarray(img.reshape(-1, side * side))


def colouring(side: int) -> np.ndarray:
    """A proper 4-colouring of the ``side x side`` king's-move (hence also square) lattice:
    colour ``2 (r mod 2) + (c mod 2)``."""
    side = check_positive(side, "side", integer=True)
    r, c = np.divmod(np.arange(side * side), side)
    return (2 * (r % 2) + (c % 2)).astype(np.int64)


def pseudo_images(side: int, copies: int = 1) -> np.ndarray:
    """``copies`` times the 8 rows of the Walsh design on :func:`colouring` (module docstring).

    Node ``i`` of colour ``c_i`` is ``(-1)^popcount(r & (c_i + 1))`` in row ``r = 0..7``;
    distinct non-zero Walsh columns are orthogonal and have zero mean, so every mean and every
    correlation between differently coloured nodes (every lattice edge) is exactly 0.
    """
    copies = check_positive(copies, "copies", integer=True, allow_zero=True)
    side = check_positive(side, "side", integer=True)
    require_memory(8.0 * side * side * (copies + 4), f"pseudo_images of side {side} "
                   f"(side, copies {copies})")
    w = colouring(side) + 1
    r = np.arange(8)[:, None]
    bits = sum(((r & w[None, :]) >> b) & 1 for b in range(3))
    rows = np.where(bits % 2 == 1, -1, 1).astype(np.int8)
    return np.tile(rows, (copies, 1))


def split(n_total: int, n_train: int, rng: Any) -> tuple[np.ndarray, np.ndarray]:
    """A seeded random train/test split of ``range(n_total)``: two sorted index arrays."""
    n_total = check_positive(n_total, "n_total", integer=True)
    n_train = check_positive(n_train, "n_train", integer=True)
    if n_train >= n_total:
        raise ValueError(f"n_train must be smaller than n_total={n_total}, got {n_train}")
    perm = as_rng(rng).permutation(n_total)
    return np.sort(perm[:n_train]), np.sort(perm[n_train:])


def kfold(n_total: int, folds: int, rng: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """``folds`` seeded (train, test) index pairs; the test parts partition ``range(n_total)``."""
    n_total = check_positive(n_total, "n_total", integer=True)
    folds = check_positive(folds, "folds", integer=True)
    if folds < 2:
        raise ValueError(f"folds must be at least 2, got {folds}")
    parts = np.array_split(as_rng(rng).permutation(n_total), folds)
    return [(np.sort(np.concatenate(parts[:k] + parts[k + 1:])), np.sort(parts[k]))
            for k in range(folds)]


# --------------------------------------------------------------------------- learners
def fit_learner(train: Any, edges: Any, learner: str, rng: Any = 0,
                **options: Any) -> tuple[Any, float, dict[str, Any]]:
    """Fit one learner: ``(BoltzmannMachine, seconds, info)``.

    ``learner`` is one of :data:`LEARNERS`; ``options`` override :data:`DEFAULT_OPTIONS`.
    ``"lap"`` runs :func:`mrflib.learning.lap.fit_ising`, every other one
    :func:`mrflib.learning.learners.fit`
    (``"mle"`` is exact maximum likelihood). ``info`` has ``n_steps`` and ``converged``.
    """
    if learner not in LEARNERS:
        raise ValueError(f"learner must be one of {LEARNERS}, got {learner!r}")
    opts = dict(DEFAULT_OPTIONS[learner], **options)
    t0 = time.perf_counter()
    if learner == "lap":
        bm = lap.fit_ising(train, edges, **opts)
        return bm, time.perf_counter() - t0, {"n_steps": 0, "converged": True}
    f = learning.fit(train, edges, learner, rng=rng, record=False, progress=False, **opts)
    return f.model, time.perf_counter() - t0, {"n_steps": f.n_steps, "converged": f.converged}


def image_log_likelihoods(bm: Any, x: Any) -> np.ndarray:
    """Exact ``log P(x^(m))`` of every row of ``x`` under ``bm``.

    ``log Z`` comes from :func:`mrflib.inference.exact.log_partition` (enumeration up to 20 spins,
    the junction tree beyond), once per model; the mean of the result is
    :func:`mrflib.inference.exact.log_likelihood`.
    """
    bm = check_model(bm, "bm")
    x = check_spins(x, bm.n, "x")
    return bm.log_weight(x) - exact.log_partition(bm)


def bootstrap_mean(values: Any, rng: Any, n_boot: int = 2000,
                   level: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``values`` and its percentile-bootstrap interval: ``(mean, low, high)``."""
    try:
        v = np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"values must be real numbers, got {values!r}") from None
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError("values must be a non-empty array of finite numbers")
    n_boot = check_positive(n_boot, "n_boot", integer=True)
    if not 0 < check_real(level, "level") < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    idx = as_rng(rng).integers(0, v.size, size=(n_boot, v.size))
    means = v[idx].mean(axis=1)
    a = (1 - level) / 2
    return float(v.mean()), float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


def _check_images(x: Any, name: str, n: int | None = None) -> np.ndarray:
    """Spin images with ``n`` pixels (any number if None), at least one."""
    x = check_spins(x, n, name)
    if x.shape[0] == 0:
        raise ValueError(f"{name} must contain at least one image")
    return x


def _check_labels(y: Any, rows: int, name: str) -> np.ndarray:
    """A 1-d array of ``rows`` class labels (integers, strings or finite reals)."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != rows:
        raise ValueError(f"{name} must be a 1-d array of {rows} labels (one per image), got "
                         f"shape {y.shape}")
    if y.dtype.kind not in "biuUSf" or (y.dtype.kind == "f" and not np.all(np.isfinite(y))):
        raise ValueError(f"{name} must hold integer, string or finite real labels, got dtype "
                         f"{y.dtype}")
    return y


def _check_learners(learners: Any) -> list[str]:
    """A non-empty collection of distinct names of :data:`LEARNERS`."""
    if isinstance(learners, str) or not hasattr(learners, "__iter__"):
        raise ValueError(f"learners must be a collection of names among {LEARNERS}, got "
                         f"{learners!r}")
    out = list(learners)
    bad = [v for v in out if not isinstance(v, str) or v not in LEARNERS]
    if not out or bad or len(set(out)) < len(out):
        raise ValueError(f"learners must be distinct names among {LEARNERS}, got {out!r}")
    return out


def _check_options(options: Any, learners: list[str]) -> dict[str, dict]:
    """``{learner: {keyword: value}}`` for some of ``learners`` (None: no overrides)."""
    if options is None:
        return {}
    if not isinstance(options, dict) or not all(
            k in learners and isinstance(v, dict) for k, v in options.items()):
        raise ValueError(f"options must map names of learners {learners} to dicts of "
                         f"keywords, got {options!r}")
    return options


def score_learners(train: Any, test: Any, edges: Any, learners: Any = LEARNERS, *,
                   options: dict[str, dict] | None = None, rng: Any = 0,
                   n_boot: int = 2000) -> tuple[Any, dict[str, Any]]:
    """Fit every learner on ``train`` and score it on ``test``.

    Returns a tidy frame (one row per learner: ``ll`` = held-out mean log-likelihood per
    image with its bootstrap interval ``ll_low``, ``ll_high``; ``gap`` = ``ll`` minus the
    best learner's, with a paired-bootstrap interval ``gap_low``, ``gap_high``;
    ``seconds``, ``n_steps``, ``converged``) and the fitted models by learner.
    """
    train = _check_images(train, "train")
    test = _check_images(test, "test", train.shape[1])
    learners = _check_learners(learners)
    options = _check_options(options, learners)
    n_boot = check_positive(n_boot, "n_boot", integer=True)
    rng = as_rng(rng)
    # one seed per learner of LEARNERS, so a fit does not depend on which others run
    seeds = dict(zip(LEARNERS, rng.integers(0, 2**32, size=len(LEARNERS)).tolist()))
    rows, models, per_image = [], {}, {}
    for name in learners:
        bm, seconds, info = fit_learner(train, edges, name, rng=seeds[name],
                                        **options.get(name, {}))
        models[name] = bm
        per_image[name] = image_log_likelihoods(bm, test)
        rows.append(dict(learner=name, seconds=seconds, **info))
    return score_frame(rows, per_image, rng, n_boot), models


def score_frame(rows: list[dict[str, Any]], per_image: dict[str, Any], rng: Any,
                n_boot: int = 2000, reference: str | None = None) -> Any:
    """The score table of :func:`score_learners` from its fits.

    ``rows``: one dict per learner (``learner``, ``seconds``, ...); ``per_image[learner]``:
    its exact log-likelihood of every test image. Adds ``ll`` with its bootstrap interval
    and ``gap`` to the best learner (or to ``reference``, a key of ``per_image``) with its
    paired-bootstrap interval.
    """
    import pandas as pd

    rng = as_rng(rng)
    frame = pd.DataFrame(rows)
    best = (max(per_image, key=lambda k: per_image[k].mean()) if reference is None
            else reference)
    n_test = len(per_image[best])
    boot = rng.integers(0, n_test, size=(n_boot, n_test))
    for k, name in enumerate(frame.learner):
        v = per_image[name]
        frame.loc[k, ["ll", "ll_low", "ll_high"]] = bootstrap_mean(v, rng, n_boot)
        d = (v - per_image[best])[boot].mean(axis=1)
        frame.loc[k, ["gap", "gap_low", "gap_high"]] = (
            float((v - per_image[best]).mean()), *np.quantile(d, [0.025, 0.975]))
    return frame


def verdicts(frame: Any) -> dict[str, Any]:
    """What the numbers of one :func:`score_learners` frame say, as plain values.

    ``winner`` and its margin over the runner-up (nats per image); ``smci_closer_than_mple``:
    whether 1-SMCI's held-out log-likelihood is closer to exact ML's than MPLE's is (``None``
    without both); ``smci_pcd_beats_pcd``: whether SMCI-PCD scores above PCD.
    """
    if not (hasattr(frame, "learner") and hasattr(frame, "ll")) or len(frame) == 0:
        raise ValueError("frame must be a non-empty score_learners frame (columns learner, ll)")
    ll = dict(zip(frame.learner, (check_real(v, "frame.ll") for v in frame.ll)))
    order = sorted(ll, key=ll.get, reverse=True)
    out: dict[str, Any] = {"winner": order[0],
                           "runner_up": order[1] if len(order) > 1 else None,
                           "margin": ll[order[0]] - ll[order[1]] if len(order) > 1 else 0.0}
    have = set(ll)
    out["smci_closer_than_mple"] = (abs(ll["1-smci"] - ll["mle"]) < abs(ll["mple"] - ll["mle"])
                                    if {"mle", "1-smci", "mple"} <= have else None)
    out["smci_pcd_beats_pcd"] = (ll["smci-pcd"] > ll["pcd"]
                                 if {"smci-pcd", "pcd"} <= have else None)
    return out


# --------------------------------------------------------------------------- classifiers
def class_conditional_accuracy(train: Any, y_train: Any, test: Any, y_test: Any, edges: Any,
                               learner: str, *, pseudo: Any = None, rng: Any = 0,
                               **options: Any) -> tuple[float, float]:
    """Accuracy of one Boltzmann machine per class used as a generative classifier.

    Class ``c`` gets a machine fitted by ``learner`` to its training images (plus the
    ``pseudo`` images, if given); a test image goes to
    ``argmax_c log P_c(x) + log prior_c`` with exact ``log P_c``. Returns
    ``(accuracy, seconds of fitting)``.
    """
    train = _check_images(train, "train")
    test = _check_images(test, "test", train.shape[1])
    y_train = _check_labels(y_train, train.shape[0], "y_train")
    y_test = _check_labels(y_test, test.shape[0], "y_test")
    if pseudo is not None:
        pseudo = check_spins(pseudo, train.shape[1], "pseudo")
    if learner not in LEARNERS:
        raise ValueError(f"learner must be one of {LEARNERS}, got {learner!r}")

    def fit_class(xc: np.ndarray) -> tuple[Any, float]:
        if pseudo is not None:
            xc = np.vstack([xc, pseudo])
        bm, s, _ = fit_learner(xc, edges, learner, rng=rng, **options)
        return (lambda z: image_log_likelihoods(bm, z)), s

    return generative_accuracy(train, y_train, test, y_test, fit_class)


def generative_accuracy(train: np.ndarray, y_train: np.ndarray, test: np.ndarray,
                        y_test: np.ndarray, fit_class: Any) -> tuple[float, float]:
    """Accuracy of a generative classifier: one model per class of ``y_train``.

    ``fit_class(images)`` fits the model of one class (its training images, classes in
    sorted order) and returns ``(log_prob, seconds)``, ``log_prob(test)`` the exact
    ``log P_c`` of every test image. A test image goes to ``argmax_c log P_c(x) +
    log prior_c`` (prior: the class frequencies of ``y_train``). Returns ``(accuracy,
    seconds of fitting)``. Inputs are taken as validated by the caller.
    """
    classes = np.unique(y_train)
    scores = np.empty((len(test), classes.size))
    seconds = 0.0
    for k, c in enumerate(classes):
        log_prob, s = fit_class(train[y_train == c])
        seconds += s
        scores[:, k] = log_prob(test) + np.log(np.mean(y_train == c))
    return float(np.mean(classes[scores.argmax(axis=1)] == y_test)), seconds


def sklearn_accuracies(train: Any, y_train: Any, test: Any, y_test: Any) -> dict[str, float]:
    """Test accuracy of scikit-learn's ``BernoulliNB`` and ``LogisticRegression`` on the
    same binary pixels (``x > 0``)."""
    what = "the field test's scikit-learn baselines"
    LogisticRegression = optional_import("sklearn.linear_model", what, "book").LogisticRegression
    BernoulliNB = optional_import("sklearn.naive_bayes", what, "book").BernoulliNB
    train = check_array(train, "train", ndim=2)
    test = check_array(test, "test", shape=(None, train.shape[1]))
    for name, x in (("train", train), ("test", test)):
        if x.shape[0] == 0:
            raise ValueError(f"{name} must contain at least one image")
    y_train = _check_labels(y_train, train.shape[0], "y_train")
    y_test = _check_labels(y_test, test.shape[0], "y_test")
    if np.unique(y_train).size < 2:
        raise ValueError("y_train must hold at least two classes")
    a, b = train > 0, test > 0
    out = {}
    for name, clf in (("BernoulliNB", BernoulliNB()),
                      ("LogisticRegression", LogisticRegression(max_iter=5000))):
        clf.fit(a, y_train)
        out[name] = float(clf.score(b, y_test))
    return out


# --------------------------------------------------------------------------- peers
def nodewise_logistic(train: Any, edges: Any, *, C: float = 1e6) -> tuple[Any, float]:
    """The usual pseudo-likelihood baseline: one scikit-learn logistic regression per node.

    ``P(x_i = +1 | rest) = sigmoid(2 (b_i + sum_j J_ij x_j))``, so node ``i``'s regression of
    ``x_i`` on its neighbours has intercept ``2 b_i`` and weights ``2 J_ij``; each coupling is
    estimated twice (from both ends) and averaged. ``C`` is scikit-learn's inverse L2
    penalty (large: nearly unpenalized). MPLE maximizes the sum of the same node-wise
    log-likelihoods with the two estimates tied. Returns ``(BoltzmannMachine, seconds)``.
    """
    from mrflib import BoltzmannMachine

    LogisticRegression = optional_import("sklearn.linear_model", "the logistic-regression "
                                         "pseudo-likelihood fit", "book").LogisticRegression

    x = check_spins(train, None, "train")
    C = check_positive(C, "C")
    n = x.shape[1]
    edges = graphs.from_pairs(edges) if len(edges) else np.zeros((0, 2), np.int64)
    nbrs = graphs.neighbours(edges, n)
    row = {(int(i), int(j)): e for e, (i, j) in enumerate(edges)}
    bias, total, count = np.zeros(n), np.zeros(len(edges)), np.zeros(len(edges))
    t0 = time.perf_counter()
    for i in range(n):
        y = x[:, i]
        if np.all(y == y[0]) or nbrs[i].size == 0:
            continue
        clf = LogisticRegression(C=C, max_iter=5000).fit(x[:, nbrs[i]], y)
        sign = 1.0 if clf.classes_[1] == 1 else -1.0
        bias[i] = sign * clf.intercept_[0] / 2
        for j, w in zip(nbrs[i].tolist(), clf.coef_[0]):
            e = row[(min(i, j), max(i, j))]
            total[e] += sign * w / 2
            count[e] += 1
    seconds = time.perf_counter() - t0
    coupling = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
    return BoltzmannMachine(bias, edges, coupling), seconds


def coupling_agreement(a: Any, b: Any) -> dict[str, float]:
    """How close two machines' couplings are: correlation, max and mean absolute difference."""
    ca = np.asarray(check_model(a, "a").coupling, float)
    cb = np.asarray(check_model(b, "b").coupling, float)
    if ca.shape != cb.shape or ca.size < 2:
        raise ValueError(f"a and b must have the same number (at least 2) of couplings, got "
                         f"{ca.size} and {cb.size}")
    for name, c in (("a", ca), ("b", cb)):
        if np.ptp(c) == 0:
            raise ValueError(f"{name} has constant couplings: their correlation is undefined")
    return dict(correlation=float(np.corrcoef(ca, cb)[0, 1]),
                max_abs_diff=float(np.max(np.abs(ca - cb))),
                mean_abs_diff=float(np.mean(np.abs(ca - cb))))


# --------------------------------------------------------------------------- figures
def plot_scores(frame: Any) -> Any:
    """Held-out log-likelihood gap to the best learner (with its paired-bootstrap interval)
    and fit time, one row of panels per lattice. ``frame`` has a ``graph`` column."""
    import matplotlib.pyplot as plt

    kinds = list(dict.fromkeys(frame.graph))
    fig, axes = plt.subplots(len(kinds), 2, figsize=(10, 3.2 * len(kinds)), squeeze=False,
                             gridspec_kw={"width_ratios": [2, 1]})
    for row, kind in zip(axes, kinds):
        f = frame[frame.graph == kind].reset_index(drop=True)
        y = np.arange(len(f))
        err = np.vstack([f.gap - f.gap_low, f.gap_high - f.gap])
        row[0].errorbar(f.gap, y, xerr=err, fmt="o", capsize=3)
        row[0].axvline(0, color=palette.GUIDE, lw=0.8)
        row[0].set(yticks=y, yticklabels=f.learner, xlabel="held-out log-likelihood - best "
                   "(nats per image)", title=f"{kind} lattice")
        row[1].barh(y, f.seconds)
        row[1].set(yticks=y, yticklabels=[], xscale="log", xlabel="fit time (s)")
        for ax in row:
            ax.invert_yaxis()
    fig.tight_layout()
    return fig


def plot_samples(real: Any, samples: dict[str, Any], side: int) -> Any:
    """Real images (first row) beside exact samples of each fitted model (one row each)."""
    import matplotlib.pyplot as plt

    rows = {"real digits": np.asarray(real), **{k: np.asarray(v) for k, v in samples.items()}}
    cols = max(len(v) for v in rows.values())
    fig, axes = plt.subplots(len(rows), cols, figsize=(0.8 * cols + 1.2, 0.85 * len(rows)),
                             squeeze=False)
    for ax_row, (name, imgs) in zip(axes, rows.items()):
        for k, ax in enumerate(ax_row):
            ax.set_xticks([])
            ax.set_yticks([])
            if k < len(imgs):
                ax.imshow(imgs[k].reshape(side, side), cmap="gray_r", vmin=-1, vmax=1)
        ax_row[0].set_ylabel(name, rotation=0, ha="right", va="center")
    fig.subplots_adjust(wspace=0.05, hspace=0.05, left=0.15)
    return fig


def plot_couplings(models: dict[str, Any], side: int, *, ncols: int = 5) -> Any:
    """Each model's couplings drawn on the lattice (edge colour: ``J_ij``; node colour:
    ``b_i``), one panel per model, on a shared colour scale."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    names = list(models)
    nrows = -(-len(names) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.4 * ncols, 2.5 * nrows), squeeze=False)
    vmax = max(float(np.max(np.abs(m.coupling))) for m in models.values())
    r, c = np.divmod(np.arange(side * side), side)
    for ax, name in zip(axes.ravel(), names):
        bm = models[name]
        seg = np.stack([np.stack([c[bm.edges[:, 0]], r[bm.edges[:, 0]]], 1),
                        np.stack([c[bm.edges[:, 1]], r[bm.edges[:, 1]]], 1)], 1)
        lc = LineCollection(seg, cmap="RdBu_r", linewidths=2)
        lc.set_array(bm.coupling)
        lc.set_clim(-vmax, vmax)
        ax.add_collection(lc)
        ax.scatter(c, r, c=bm.bias, cmap="PuOr_r", s=12, vmin=-3, vmax=3, zorder=3)
        ax.set(xlim=(-0.5, side - 0.5), ylim=(side - 0.5, -0.5), aspect="equal", title=name,
               xticks=[], yticks=[])
    for ax in axes.ravel()[len(names):]:
        ax.axis("off")
    fig.colorbar(lc, ax=axes, shrink=0.6, label="coupling $J_{ij}$")
    return fig
