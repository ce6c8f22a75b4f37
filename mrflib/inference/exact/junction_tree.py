"""Deprecated: the ±1 junction tree is the elimination engine's, for one release.

Exact inference on Boltzmann machines runs on the engine of factor graphs (behind
:mod:`mrflib.inference.exact`'s ``method="junction-tree"``). Every name of this module still
works, with a :class:`FutureWarning` naming the call to use:

* ``junction_tree.plan(x, n)``: ``exact.plan(x, n)``;
* ``junction_tree.log_partition(model)``:
  ``exact.log_partition(model, method="junction-tree")``;
* ``junction_tree.moments(model)``:
  ``exact.plan(model).calibrate(model.bias, model.coupling)`` (``log Z`` and the moments);
* ``junction_tree.sample(model, n_samples, rng=rng)``:
  ``exact.sample(model, n_samples, rng=rng, method="junction-tree")``;
* ``junction_tree.condition(model, nodes, values)``:
  :func:`mrflib.models.boltzmann.clamp` (same arguments, same answer);
* ``junction_tree.elimination_order(edges, n)``: the ``order``, ``heuristic`` and
  ``treewidth`` of ``exact.plan(edges, n)``;
* ``junction_tree.MAX_WIDTH`` (62): ``exact.plan``, which refuses a treewidth above it,
  naming the memory it would need;
* ``junction_tree.JunctionTree(edges, n)``: ``exact.plan(edges, n)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mrflib.inference.exact as exact
from mrflib._support.deprecation import renamed_argument, warn_deprecated
from mrflib._support.stacklevel import user_stacklevel
from mrflib.inference.exact import _spin_plan
from mrflib.models import boltzmann
from mrflib.models.precision import checked

__all__: list[str] = []


def _forward(old: str, new: str, call: Callable[..., Any], model: bool = True
             ) -> Callable[..., Any]:
    """``call``, warning first that ``junction_tree.<old>`` is deprecated for ``new``; with
    ``model``, its first argument also under its older name ``bm=`` (a second warning)."""
    name = old.partition("(")[0]

    def forwarded(*args: Any, **kwargs: Any) -> Any:
        # (at the user's line, whether or not the old argument name's wrapper is between)
        warn_deprecated(f"junction_tree.{old}", new, stacklevel=user_stacklevel() + 1)
        return call(*args, **kwargs)

    forwarded.__name__ = forwarded.__qualname__ = name
    return renamed_argument("bm", "model")(forwarded) if model else forwarded


def _plan(bm_or_edges: Any, n: int | None = None) -> Any:
    return exact.plan(bm_or_edges, n)


def _log_partition(model: Any) -> float:
    return exact.log_partition(model, method="junction-tree")


@checked
def _moments(model: Any) -> tuple:
    return exact.plan(model).calibrate(model.bias, model.coupling)


def _sample(model: Any, n_samples: int, *, rng: Any) -> Any:
    return exact.sample(model, n_samples, rng=rng, method="junction-tree")


class _JunctionTree(_spin_plan.SpinPlan):
    """The plan ``exact.plan(edges, n)`` gives, made under its old name (a warning)."""

    def __init__(self, edges: Any, n: int, order: Any = None) -> None:
        warn_deprecated("junction_tree.JunctionTree(edges, n)",
                        "exact.plan(edges, n)")
        super().__init__(edges, n, order)


_FORWARDS: dict[str, Callable[[], Any]] = {
    "plan": lambda: _forward("plan(x, n)", "exact.plan(x, n)", _plan, model=False),
    "log_partition": lambda: _forward(
        "log_partition(model)", 'exact.log_partition(model, method="junction-tree")',
        _log_partition),
    "moments": lambda: _forward(
        "moments(model)", "exact.plan(model).calibrate(model.bias, model.coupling)",
        _moments),
    "sample": lambda: _forward(
        "sample(model, n_samples, rng=rng)",
        'exact.sample(model, n_samples, rng=rng, method="junction-tree")', _sample),
    "condition": lambda: _forward(
        "condition(model, nodes, values)", "models.boltzmann.clamp(model, nodes, values)",
        boltzmann.clamp),
    "elimination_order": lambda: _forward(
        "elimination_order(edges, n)",
        "exact.plan(edges, n) (its order, heuristic and treewidth)",
        _spin_plan.elimination_order, model=False),
    "JunctionTree": lambda: _JunctionTree,
}


def __getattr__(name: str) -> Any:
    if name == "MAX_WIDTH":
        warn_deprecated("junction_tree.MAX_WIDTH",
                        "exact.plan(edges, n), which refuses a treewidth above it", stacklevel=3)
        return _spin_plan.MAX_WIDTH
    if name in _FORWARDS:
        return _FORWARDS[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
