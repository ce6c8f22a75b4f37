"""Trials of the field-test chapter, one per call, for resumable paper-scale runs.

Each ``*_trial`` function computes trial ``t`` of one loop of ``notebooks/field_test.ipynb``
with the generator it is given, in the signature :meth:`mrflib.repro.trials.Trials.map`
calls (``fn(t, rng, **params)``); the trial index runs over the product of the loop's
settings (lattice x learner, lattice x fold x learner, network x sample size), so that a
chunked run spreads the fits evenly. The experiments themselves are those of
:mod:`mrflib.repro.field_test` (digits) and :mod:`mrflib.repro.field_networks` (expert
networks). None of the papers fits real data; the chapter tests on real data the rankings
of Yasuda (SMCI learning, Figure 3 / Table 1), Yasuda & Uchizawa (GSMCI, Figure 7) and the
full-span log-linear model of Takabatake & Akaho (section 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mrflib._support.recorded_warnings import recorded
from mrflib._support.validation import as_rng, check_positive
from mrflib.io import datasets

from . import field_grey as fg
from . import field_networks as fn
from . import field_test as ft

__all__ = ["score_trial", "scores", "kfold_trial", "classify_trial", "grey_score_trial",
           "grey_classify_trial", "expert_network", "network_trial"]


def _pick(t: int, *axes: Sequence[Any]) -> tuple[Any, ...]:
    """The settings of trial ``t`` of the product of ``axes`` (the last axis fastest)."""
    t = check_positive(t, "t", integer=True, allow_zero=True)
    total = int(np.prod([len(a) for a in axes]))
    if t >= total:
        raise ValueError(f"t must be below the number of trials {total}, got {t}")
    out = []
    for axis in reversed(axes):
        t, k = divmod(t, len(axis))
        out.append(axis[k])
    return tuple(reversed(out))


def _fit_and_score(train: Any, test: Any, edges: Any, learner: str, rng: Any,
                   options: dict[str, dict]) -> dict[str, Any]:
    """One learner fitted on ``train`` and its exact log-likelihood of every test image."""
    bm, seconds, info = ft.fit_learner(train, edges, learner, rng=rng,
                                       **options.get(learner, {}))
    return dict(learner=learner, model=bm, per_image=ft.image_log_likelihoods(bm, test),
                seconds=seconds, **info)


def score_trial(t: int, rng: Any, *, train: Any, test: Any, kinds: Sequence[str], side: int,
                learners: Sequence[str], options: dict[str, dict]) -> dict[str, Any]:
    """Trial ``t`` of the learner comparison: one learner on one lattice.

    Trial ``t`` is lattice ``kinds[t // len(learners)]`` and learner
    ``learners[t % len(learners)]`` (:data:`mrflib.repro.field_test.LEARNERS`), fitted on
    ``train`` by :func:`~mrflib.repro.field_test.fit_learner` with ``options[learner]``.

    Returns
    -------
    dict
        ``graph``, ``learner``, ``model``, ``per_image`` (exact held-out log-likelihood of
        every test image), ``seconds``, ``n_steps``, ``converged``.
    """
    kind, learner = _pick(t, kinds, learners)
    out = _fit_and_score(train, test, ft.lattice(kind, side), learner, as_rng(rng), options)
    return {"graph": kind, **out}


def scores(results: Sequence[dict[str, Any]], rng: Any,
           n_boot: int = 2000) -> tuple[Any, dict[str, dict[str, Any]]]:
    """The score table of :func:`score_trial` results, lattice by lattice.

    Per lattice, :func:`mrflib.repro.field_test.score_frame` (bootstrap intervals and gaps
    to the best learner present). Returns the frame (with a ``graph`` column, lattices in
    the order met) and the fitted models by lattice and learner.
    """
    import pandas as pd

    if len(results) == 0:
        raise ValueError("results must hold at least one score_trial result")
    rng = as_rng(rng)
    frames, models = [], {}
    for kind in dict.fromkeys(r["graph"] for r in results):
        mine = [r for r in results if r["graph"] == kind]
        rows = [{k: r[k] for k in ("learner", "seconds", "n_steps", "converged")} for r in mine]
        f = ft.score_frame(rows, {r["learner"]: r["per_image"] for r in mine}, rng, n_boot)
        f.insert(0, "graph", kind)
        frames.append(f)
        models[kind] = {r["learner"]: r["model"] for r in mine}
    return pd.concat(frames, ignore_index=True), models


def kfold_trial(t: int, rng: Any, *, x: Any, pseudo: Any, kinds: Sequence[str], side: int,
                splits: Sequence[tuple[Any, Any]], learners: Sequence[str],
                options: dict[str, dict]) -> dict[str, Any]:
    """Trial ``t`` of the k-fold cross-validation: one lattice, one fold, one learner.

    Trial ``t`` runs over lattice x fold x learner (the learner fastest). The learner is fitted
    on the fold's training images plus ``pseudo`` and scored on its test images.
    ``splits`` are the ``(train, test)`` index pairs of :func:`~mrflib.repro.field_test.kfold`.

    Returns
    -------
    dict
        ``graph``, ``fold``, ``learner``, ``ll`` (held-out mean log-likelihood per image),
        ``seconds``, ``n_steps``, ``converged``.
    """
    kind, fold, learner = _pick(t, kinds, range(len(splits)), learners)
    a, b = splits[fold]
    x = np.asarray(x)
    out = _fit_and_score(np.vstack([x[a], pseudo]), x[b], ft.lattice(kind, side), learner,
                         as_rng(rng), options)
    return dict(graph=kind, fold=fold, learner=learner, ll=float(out["per_image"].mean()),
                seconds=out["seconds"], n_steps=out["n_steps"], converged=out["converged"])


def classify_trial(t: int, rng: Any, *, train: Any, y_train: Any, test: Any, y_test: Any,
                   pseudo: Any, kinds: Sequence[str], side: int, learners: Sequence[str],
                   options: dict[str, dict]) -> dict[str, Any]:
    """Trial ``t`` of the classifier: class-conditional machines of one learner on one lattice.

    Trial ``t`` runs over lattice x learner (the learner fastest);
    :func:`~mrflib.repro.field_test.class_conditional_accuracy` with ``options[learner]``.
    Returns ``{"graph", "learner", "accuracy", "seconds"}``.
    """
    kind, learner = _pick(t, kinds, learners)
    a, s = ft.class_conditional_accuracy(train, y_train, test, y_test, ft.lattice(kind, side),
                                         learner, pseudo=pseudo, rng=as_rng(rng),
                                         **options.get(learner, {}))
    return dict(graph=kind, learner=learner, accuracy=a, seconds=s)


def grey_score_trial(t: int, rng: Any, *, train: Any, test: Any, kinds: Sequence[str],
                     side: int, learners: Sequence[str], options: dict[str, dict],
                     levels: int) -> dict[str, Any]:
    """Trial ``t`` of the grey-level comparison: one factor-graph learner on one lattice.

    Trial ``t`` is lattice ``kinds[t // len(learners)]`` and learner
    ``learners[t % len(learners)]`` (:data:`mrflib.repro.field_grey.LEARNERS`), fitted on
    ``train`` (states ``0..levels-1``) in the family
    :func:`~mrflib.repro.field_grey.potts_structure` with ``options[learner]``. The fits
    are deterministic; ``rng`` is unused (the signature of the other trials).

    Returns
    -------
    dict
        ``graph``, ``learner``, ``model``, ``per_image`` (exact held-out log-likelihood of
        every test image), ``seconds``, ``n_steps``, ``converged``.
    """
    kind, learner = _pick(t, kinds, learners)
    model, seconds, info = fg.fit_learner(train, fg.potts_structure(kind, side, levels),
                                          learner, **options.get(learner, {}))
    return dict(graph=kind, learner=learner, model=model,
                per_image=fg.image_log_likelihoods(model, test), seconds=seconds, **info)


def grey_classify_trial(t: int, rng: Any, *, train: Any, y_train: Any, test: Any,
                        y_test: Any, pseudo: Any, kinds: Sequence[str], side: int,
                        learners: Sequence[str], options: dict[str, dict],
                        levels: int) -> dict[str, Any]:
    """Trial ``t`` of the grey-level classifier: one factor graph per class, one learner on
    one lattice (the learner fastest);
    :func:`~mrflib.repro.field_grey.class_conditional_accuracy`. Returns ``{"graph",
    "learner", "accuracy", "seconds", "warnings"}`` (the messages of the fits' RuntimeWarnings,
    such as an auxiliary LAP fit that did not converge)."""
    kind, learner = _pick(t, kinds, learners)
    # one class's hundred-odd images can separate a clique, so an auxiliary LAP fit may not
    # converge: expected here, so it is reported with the result instead of on stderr
    with recorded() as notes:
        a, s = fg.class_conditional_accuracy(train, y_train, test, y_test,
                                             fg.potts_structure(kind, side, levels), learner,
                                             pseudo=pseudo, **options.get(learner, {}))
    return dict(graph=kind, learner=learner, accuracy=a, seconds=s, warnings=notes)


def expert_network(name: str, subset_states: int) -> Any:
    """pgmpy's network ``name`` (:func:`mrflib.io.datasets.expert_network`), or the marginal of
    its largest ancestral subset with at most ``subset_states`` joint states if it has more."""
    subset_states = check_positive(subset_states, "subset_states", integer=True)
    net = datasets.expert_network(name)
    return net.largest_ancestral_subset(subset_states) if net.n_states > subset_states else net


def network_trial(t: int, rng: Any, *, networks: Sequence[str], sizes: Sequence[int],
                  subset_states: int, pairwise_max_states: int, pcd_steps: int) -> list[dict]:
    """Trial ``t`` of the expert-network experiment: one network, one sample size.

    Trial ``t`` runs over network x sample size (the size fastest). Draws the samples with
    the network's ancestral sampler and scores every model of
    :data:`mrflib.repro.field_networks.MODELS` by the exact ``KL(p*||p_theta)``
    (:func:`mrflib.repro.field_networks.network_trial`); the pairwise models only where the
    joint has at most ``pairwise_max_states`` states. Returns the frame's rows as dicts,
    each with its fit's ``note`` (a maximum-likelihood estimate that does not exist for the
    sample, recorded instead of warned).
    """
    name, N = _pick(t, networks, sizes)
    pairwise_max_states = check_positive(pairwise_max_states, "pairwise_max_states",
                                         integer=True)
    net = expert_network(name, subset_states)
    p_star = net.joint()
    models = [m for m in fn.MODELS if p_star.size <= pairwise_max_states or "pairwise" not in m]
    frame = fn.network_trial(net, N, as_rng(rng), models, p_star=p_star,
                             pcd=dict(max_steps=pcd_steps))
    return frame.to_dict("records")
