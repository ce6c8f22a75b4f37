"""``small_pages`` (:mod:`mrflib._support.pages`): numpy's huge-page request is off inside
the block and restored after it, left alone when the user set ``NUMPY_MADVISE_HUGEPAGE``,
and the exact engine's answers are the same either way."""

from __future__ import annotations

import numpy as np
import pytest

from mrflib import exact
from mrflib._support import pages
from tests._random_factor_graphs import random_factor_graph

pytestmark = pytest.mark.skipif(pages._SETTER is None, reason="numpy has no huge-page switch")


def current() -> bool:
    previous = pages._SETTER(True)
    pages._SETTER(previous)
    return bool(previous)


def test_the_request_is_off_inside_and_restored_after(monkeypatch):
    monkeypatch.delenv(pages.ENV, raising=False)
    for before in (True, False):
        pages._SETTER(before)
        with pages.small_pages():
            assert current() is False
        assert current() is before
    pages._SETTER(True)


def test_the_users_setting_wins(monkeypatch):
    monkeypatch.setenv(pages.ENV, "1")
    pages._SETTER(True)
    with pages.small_pages():
        assert current() is True


def test_answers_do_not_depend_on_it(monkeypatch):
    model = random_factor_graph(np.random.default_rng(3), n=9)
    monkeypatch.delenv(pages.ENV, raising=False)
    small = exact.marginals(model)
    monkeypatch.setenv(pages.ENV, "1")
    huge = exact.marginals(model)
    for a, b in zip(small, huge):
        assert np.array_equal(a, b)
