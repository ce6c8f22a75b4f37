"""The junction tree's plans are pinned: a faster planner must choose the same elimination
orders and build the same lookup tables, so every seeded result stays bit-identical."""

from __future__ import annotations

import json

import pytest
from _plan_graphs import PLANS, plan_graphs, plan_record

from mrflib.junction_tree import JunctionTree

_PINNED = json.loads(PLANS.read_text())
_GRAPHS = plan_graphs()


def test_every_graph_is_pinned():
    assert sorted(_PINNED) == sorted(_GRAPHS)


@pytest.mark.parametrize("name", sorted(_GRAPHS))
def test_plan_matches_the_pinned_plan(name):
    edges, n = _GRAPHS[name]
    assert plan_record(JunctionTree(edges, n)) == _PINNED[name], name
