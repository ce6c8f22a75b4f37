"""The ``PR`` answers of ``python -m mrflib solve --time-limit SECONDS``
(:mod:`mrflib.io.anytime`): importance sampling estimates of ``log Z`` while an exact search
over the model's zeros runs beside the junction tree.

A model whose tables hold zeros may have an exact answer where the junction tree is out of
reach: the zeros cut the states that count. :func:`_start_exact_search` starts the search
that suits the model in a forked child (:class:`mrflib._support.forked.Forked`): for a
constraint model (every table one positive value where it is not zero, as in the SAT
encodings) the exact model counter of
:func:`mrflib.inference.exact.model_counting.counted_log_partition` when ``pyganak`` is
installed, otherwise the conditioning search of
:func:`mrflib.inference.exact.conditioning.conditioned_log_partition`, which propagates the
zeros, splits and caches components. Either runs at a lower priority
(:data:`CONDITIONING_NICENESS`), finishes exactly by the deadline or is stopped.
Meanwhile :func:`_estimate_pr` writes the estimates of importance sampling with the
weighted mini-bucket proposal, or its certified upper bound before any sample of positive
weight.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from typing import Any

import numpy as np

from mrflib._support.forked import Forked, deferred
from mrflib.inference.approx.importance import importance_estimates
from mrflib.inference.exact import model_counting
from mrflib.inference.exact.conditioning import conditioned_log_partition
from mrflib.models.factor_graph import FactorGraph

__all__: list[str] = []

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


def _start_exact_search(model: FactorGraph, say: Any, deadline: float,
                        conditioning: bool = True) -> tuple[Forked | None, str]:
    """The exact search over the zeros of ``model`` in a forked child until the deadline,
    and its name: the model count where it answers the model (:func:`_counts`), else the
    conditioning search (only with ``conditioning``); ``(None, "")`` when the time is out,
    the model has no zero, or no search is wanted."""
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


def _estimate_pr(model: FactorGraph, args: Any, answers: Any, say: Any, deadline: float,
                 trivial: float, child: Forked | None, cond: Forked | None = None) -> None:
    """``PR`` answers of importance sampling with the weighted mini-bucket proposal
    (:func:`mrflib.inference.approx.importance.importance_estimates`, ``rng=args.seed``),
    written to ``answers`` (:class:`mrflib.io.anytime.AnswerFile`): the estimate of the
    latest batch, with its bounds on stderr, at most every :data:`ESTIMATE_SECONDS` and
    when the sampling ends (the deadline, or the exact child's answer, or the search over
    the zeros ``cond``). Before any sample of positive weight the proposal's certified
    upper bound is written where it is below ``trivial``, the trivial answer's
    (:func:`mrflib.io.anytime.trivial_answer`, also a certified bound: the mini-buckets'
    bound on the model after evidence and pruning can be the looser of the two). A bound
    of ``-inf`` proves ``Z = 0``."""
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

