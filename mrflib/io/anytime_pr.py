"""The ``PR`` answers of ``python -m mrflib solve --time-limit SECONDS``
(:mod:`mrflib.io.anytime`): importance sampling estimates of ``log Z`` while an exact search
over the model's zeros runs beside the junction tree.

A model whose tables hold zeros may have an exact answer where the junction tree is out of
reach: the zeros cut the states that count. :func:`start_exact_search` starts the search
that suits the model in a forked child (:class:`mrflib._support.forked.Forked`): for a
constraint model (every table one positive value where it is not zero, as in the SAT
encodings) the exact model counter of
:func:`mrflib.inference.exact.model_counting.counted_log_partition` when ``pyganak`` is
installed, otherwise the conditioning search of
:func:`mrflib.inference.exact.conditioning.conditioned_log_partition`, which propagates the
zeros, splits and caches components. Either runs at a lower priority
(:data:`CONDITIONING_NICENESS`), finishes exactly by the deadline or is stopped.
Meanwhile :func:`estimate_pr` writes the estimates of importance sampling with the
weighted mini-bucket proposal, or its certified upper bound before any sample of positive
weight. These two are what the solver calls.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mrflib._support.forked import Forked, deferred
from mrflib._support.validation import check_instance
from mrflib.inference.approx.importance import importance_estimates
from mrflib.inference.exact import model_counting
from mrflib.inference.exact.conditioning import conditioned_log_partition
from mrflib.models.factor_graph import FactorGraph

__all__ = ["start_exact_search", "estimate_pr"]

#: Scheduling niceness of the exact searches over the zeros (``PR``: conditioning, model
#: counting) in their children, above the parent's.
CONDITIONING_NICENESS = 10
#: Seconds between two importance sampling answers (the last estimate is written at the end).
ESTIMATE_SECONDS = 1.0

#: What the exact searches over the zeros say when they start, by the name of each.
_STARTED = {"model counting": "exact inference by model counting (Ganak)",
            "conditioning": "exact inference by conditioning (zeros propagated, components "
                            "cached)"}


def _has_zeros(model: FactorGraph) -> bool:
    """Whether some table of ``model`` with a scope holds a zero (``-inf``)."""
    return any(bool(np.isneginf(t).any()) for s, t in zip(model.scopes, model.log_tables) if s)


def _counts(model: FactorGraph) -> bool:
    """Whether the exact model counter answers ``model``: a constraint model
    (:func:`mrflib.inference.exact.model_counting.constraint_scale`) and ``pyganak``
    installed."""
    return model_counting.constraint_scale(model) is not None and model_counting.available()


def start_exact_search(model: FactorGraph, say: Callable[[str], object], deadline: float,
                       conditioning: bool = True) -> tuple[Forked | None, str]:
    """Start the exact search over the zeros of ``model`` that suits it in a forked child.

    The model count where it answers the model (:func:`_counts`), else the conditioning
    search; either runs until the deadline at a lower priority
    (:data:`CONDITIONING_NICENESS`), and its start is said with the child's process id.

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied.
    say : callable
        Takes the line that names the search and its process.
    deadline : float
        The :func:`time.perf_counter` time by which the search ends.
    conditioning : bool
        Whether the conditioning search is wanted where the model count does not answer
        the model.

    Returns
    -------
    child : mrflib._support.forked.Forked or None
        The child computing ``log10 Z``; ``None`` when the time is out, the model has no
        zero, or no search is wanted.
    name : str
        The search's name (``"model counting"``, ``"conditioning"``; ``""`` without a
        child).
    """
    check_instance(model, FactorGraph, "model")
    left = deadline - time.perf_counter()
    if left <= 0 or not _has_zeros(model):
        return None, ""
    if _counts(model):
        name, target, argv = "model counting", _counted_pr, (model,)
    elif conditioning:
        name, target, argv = "conditioning", _conditioned_pr, (model, left)
    else:
        return None, ""
    with deferred():
        child = Forked(target, argv)
        say(f"{_STARTED[name]} started in process {child.pid}")
    return child, name


def _conditioned_pr(model: FactorGraph, left: float
                    ) -> float:  # pragma: no cover - runs in a forked child
    # the search finishes only on some models; the sampling in the parent answers all of
    # them, so on a busy machine the search takes only the processor time left over
    with contextlib.suppress(OSError):
        os.nice(CONDITIONING_NICENESS)
    return conditioned_log_partition(model, time_limit=left).log_partition / math.log(10.0)


def _counted_pr(model: FactorGraph) -> float:  # pragma: no cover - runs in a forked child
    # the count finishes only on some models and the parent's estimates answer all of them:
    # on a busy machine the count takes only the processor time left over, so that the
    # parent's proposal and its certified bound still come within the limit
    with contextlib.suppress(OSError):
        os.nice(CONDITIONING_NICENESS)
    return model_counting.counted_log_partition(model) / math.log(10.0)


def estimate_pr(model: FactorGraph, args: Any, answers: Any, say: Callable[[str], object],
                deadline: float, trivial: float, child: Forked | None,
                cond: Forked | None = None) -> None:
    """``PR`` answers of importance sampling with the weighted mini-bucket proposal
    (:func:`mrflib.inference.approx.importance.importance_estimates`, ``rng=args.seed``).

    The estimate of the latest batch, with its bounds on stderr, is written at most every
    :data:`ESTIMATE_SECONDS` and when the sampling ends (the deadline, or the exact child's
    answer, or the search over the zeros ``cond``). Before any sample of positive weight
    the proposal's certified upper bound is written where it is below ``trivial`` (also a
    certified bound: the mini-buckets' bound on the model after evidence and pruning can
    be the looser of the two).

    Parameters
    ----------
    model : FactorGraph
        The model, evidence applied.
    args : argparse.Namespace
        The command's arguments: ``seed`` seeds the sampling, ``out`` is the answer file
        named on stderr.
    answers : mrflib.io.anytime.AnswerFile
        The solver's answer file.
    say : callable
        Takes each line the solver writes to stderr.
    deadline : float
        The :func:`time.perf_counter` time by which the sampling ends.
    trivial : float
        The trivial answer's ``log10 Z`` (:func:`mrflib.io.anytime.trivial_answer`).
    child : mrflib._support.forked.Forked or None
        The exact computation's child, whose answer ends the sampling.
    cond : mrflib._support.forked.Forked or None
        The exact search over the zeros (:func:`start_exact_search`), whose answer ends
        the sampling too.

    Raises
    ------
    ValueError
        When the proposal's bound is ``-inf``, a proof that ``Z = 0``.
    """
    check_instance(model, FactorGraph, "model")
    left = deadline - time.perf_counter()
    if left <= 0:
        return
    ln10 = math.log(10.0)
    bound_written, last_write, pending = False, -math.inf, None

    def write(res: Any) -> None:
        proposal = (f"{res.proposal} proposal" + (f", i-bound {res.ibound}"
                                                  if res.ibound is not None else ""))
        bounds = (f"log10 Z in [{res.lower / ln10:.6g}, {res.upper / ln10:.6g}] with "
                  f"probability {1.0 - res.delta:g}, certified log10 Z <= "
                  f"{res.log_upper_bound / ln10:.6g}")
        answers.add(res.log_partition / ln10)
        say(f"answer {len(answers.values)}: importance sampling ({proposal}, "
            f"{res.n_samples} samples, {res.details['zero_share']:.0%} of weight zero): "
            f"log10 Z = {res.log_partition / ln10:.6g}; {bounds}; wrote {args.out}")

    # the proposal orders the model left after barren pruning itself: not ``order``
    for res in importance_estimates(model, rng=args.seed, time_limit=left):
        if not res.log_upper_bound > -math.inf:
            raise ValueError("the model has Z = 0 (the weighted mini-bucket bound on log Z is "
                             "-inf)")
        if res.details.get("exact"):
            answers.add(res.log_partition / ln10)
            say(f"answer {len(answers.values)}: weighted mini-bucket without splitting a "
                f"bucket (i-bound {res.ibound}): exact; wrote {args.out}")
            return
        if res.log_partition > -math.inf:
            pending = res
            if time.perf_counter() - last_write >= ESTIMATE_SECONDS:
                write(res)
                last_write, pending = time.perf_counter(), None
        elif not bound_written:
            bound_written = True
            bound = res.log_upper_bound / ln10
            if bound < trivial:
                answers.add(bound)
                say(f"answer {len(answers.values)}: the certified upper bound of the "
                    f"{res.proposal} proposal (no sample of positive weight yet in "
                    f"{res.n_samples}); certified log10 Z <= {bound:.6g}; wrote {args.out}")
            else:
                say(f"the {res.proposal} proposal's certified bound log10 Z <= {bound:.6g} "
                    f"is no tighter than the trivial bound {trivial:.6g}: not written")
        if any(c is not None and c.done() for c in (child, cond)):
            break
    if pending is not None:
        write(pending)

