"""Optional dependencies: a part that needs a package ``pip install mrflib`` does not bring
raises an ImportError naming what needs it and the extra that installs it."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from mrflib import BoltzmannMachine, datasets, graphs, io
from mrflib._support.executor import Executor
from mrflib._support.optional import DISTRIBUTIONS, optional_import
from mrflib.io import expert_networks
from mrflib.repro import field_test, peers, sweep

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
BM = BoltzmannMachine.random(graphs.square_grid(2, 2), 4, rng=0)
X = np.ones((2, 4), dtype=np.int8)


def _open_scheduler():
    with Executor(1, scheduler="tcp://127.0.0.1:1"):
        pass


def _fresh_expert_network():
    expert_networks._expert_network.cache_clear()  # a network loaded earlier needs no pgmpy
    return datasets.expert_network("asia")


CASES = [
    ("datasets.digits", datasets.digits, "sklearn", "datasets"),
    ("datasets.expert_network", _fresh_expert_network, "pgmpy", "datasets"),
    ("datasets.pgmpy_model", lambda: datasets.pgmpy_model("asia"), "pgmpy", "datasets"),
    ("Executor(scheduler=...)", _open_scheduler, "distributed", "dask"),
    ("peers.junction_tree_moments", lambda: peers.junction_tree_moments(BM), "pgmpy", "book"),
    ("field_test.sklearn_accuracies",
     lambda: field_test.sklearn_accuracies(X, [0, 1], X, [0, 1]), "sklearn", "book"),
    ("sweep.execute", lambda: sweep.execute("x.ipynb", "y.ipynb"), "papermill", "book"),
    ("io.from_pgmpy", lambda: io.from_pgmpy(None), "pgmpy", "datasets"),
]


@pytest.mark.parametrize("what, call, module, extra", CASES, ids=[c[0] for c in CASES])
def test_missing_package_names_the_extra(monkeypatch, what, call, module, extra):
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(ImportError, match=re.escape(f'pip install "mrflib[{extra}]"')) as err:
        call()
    assert DISTRIBUTIONS[module] in str(err.value)
    assert not isinstance(err.value, ModuleNotFoundError)  # not the bare error any more
    dist = re.split(r"[<>=\[]", DISTRIBUTIONS[module])[0]
    assert any(req.startswith(dist) for req in EXTRAS[extra]), f"{extra} lacks {dist}"


def test_bad_names_are_still_refused_first(monkeypatch):
    monkeypatch.setitem(sys.modules, "pgmpy", None)
    with pytest.raises(ValueError, match="name must be one of"):
        datasets.expert_network("no-such-network")


def test_optional_import_returns_the_module_and_chains_the_cause(monkeypatch):
    assert optional_import("numpy.linalg", "x", "book") is np.linalg
    monkeypatch.setitem(sys.modules, "sklearn", None)
    with pytest.raises(ImportError, match=r"^thing needs scikit-learn, which is not") as err:
        optional_import("sklearn.datasets", "thing", "datasets")
    assert isinstance(err.value.__cause__, ImportError)


def test_every_extra_the_code_names_exists():
    named = set()
    for path in (ROOT / "mrflib").rglob("*.py"):
        named |= set(re.findall(r'optional_import\([^)]*?"(\w+)"\)', path.read_text(), re.S))
    assert named and named <= set(EXTRAS), f"extras not in pyproject.toml: {named - set(EXTRAS)}"
