"""The first call: the README's example and each common entry point in a fresh process, with
an empty numba cache and with a warm one.

mrflib's kernels are compiled by numba on their first call and cached on disk; a fresh
install (or a cleared cache) pays the compilation once. Two kinds of rows:

* **README example.** The README's first ``python`` block (read from ``README.md``, so the
  benchmark follows the example) in a new interpreter with ``NUMBA_CACHE_DIR`` set to a new
  empty folder (``cold``), then again with the same folder (``warm``: every kernel loaded
  from the cache), and, as the fix a user can apply, after ``python -m mrflib warm-up``
  filled another empty folder (``after warm-up``). Wall and CPU time (the children's user +
  system) of the whole process, imports included; the baseline of every row is the cold run.
* **Entry points.** One common call each (:data:`CALLS`), in a new interpreter whose
  ``NUMBA_CACHE_DIR`` is a new empty folder (``cold``), then in another one with the folder
  the first left (``warm``). The model is built first (its own compilation is reported
  apart, as ``setup``); then the call alone is timed, CPU (``time.process_time``) and wall,
  while numba's ``numba:compile`` events are recorded, so each row names the kernels the
  call compiled and the CPU seconds each took, its callees' compilation excluded. ``seconds``
  is the call's wall time; ``cpu`` its CPU time, ``process_cpu`` the whole process's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARK = "first call"
EXTRA_COLUMNS = ["cpu", "process_cpu", "setup_cpu", "compile_seconds", "kernels"]

#: Entry points: row name -> (setup code defining ``model`` / ``data``, the call).
_UAI = "from mrflib.io.datasets import uai_problem\nmodel = uai_problem({!r}).model\n"
_BM = ("from mrflib import BoltzmannMachine, graphs\n"
       "model = BoltzmannMachine.random(graphs.square_grid(4, 5), 20, rng=0)\n")
_POTTS = ("from mrflib.models import lattices\n"
          "model = lattices.potts_lattice({0}, {0}, q=3, rng=0)\n")
_PROBLEMS = ("Grids_12", "Promedus_24", "CSP_12", "ObjectDetection_11")
CALLS: dict[str, tuple[str, str]] = {
    **{f"exact.marginals({p})": (_UAI.format(p), "from mrflib import exact\n"
                                 "exact.marginals(model)") for p in _PROBLEMS},
    **{f"exact.log_partition({p})": (_UAI.format(p), "from mrflib import exact\n"
                                     "exact.log_partition(model)") for p in _PROBLEMS},
    "approx.marginals(Promedus_24, time_limit=2)": (
        _UAI.format("Promedus_24"),
        "from mrflib import approx\napprox.marginals(model, time_limit=2)"),
    "approx.marginals(Potts 40x40, time_limit=2)": (
        _POTTS.format(40), "from mrflib import approx\napprox.marginals(model, time_limit=2)"),
    "sampling.gibbs(Boltzmann 4x5)": (
        _BM, "from mrflib import sampling\nsampling.gibbs(model, 1000, burn_in=200, rng=1)"),
    "factor_gibbs.gibbs(Potts 4x4)": (
        _POTTS.format(4), "from mrflib.inference.sampling import chains as factor_gibbs\n"
        "factor_gibbs.gibbs(model, 1000, burn_in=200, rng=1)"),
    "learning.fit(Boltzmann 4x5, mple)": (
        _BM + "import numpy as np\n"
        "data = np.where(np.random.default_rng(1).random((1000, 20)) < 0.5, -1, 1)"
        ".astype(np.int8)\n",
        "from mrflib import learning\nlearning.fit(data, model.edges, 'mple')"),
    "learning.fit(Potts 4x4, mple)": (
        _POTTS.format(4) + "import numpy as np\n"
        "data = np.random.default_rng(1).integers(0, 3, (1000, 16))\n",
        "from mrflib import learning\nlearning.fit(data, model, 'mple')"),
}

#: What the child interpreter runs: the setup, then the call under numba's compile events.
_CHILD = r'''
import json, sys, time
import numba.core.event as ev

class Kernels(ev.Listener):
    """Compile CPU seconds per kernel, its callees' compilation excluded (CPU, not wall:
    the machine may be shared)."""
    def __init__(self):
        self.stack, self.self_time = [], {}
    def on_start(self, event):
        d = event.data["dispatcher"]
        self.stack.append([f"{d.py_func.__module__}.{d.py_func.__qualname__}",
                           time.process_time(), 0.0])
    def on_end(self, event):
        name, t0, inner = self.stack.pop()
        total = time.process_time() - t0
        if self.stack:
            self.stack[-1][2] += total
        self.self_time[name] = self.self_time.get(name, 0.0) + total - inner

setup_listener = Kernels()
ev.register("numba:compile", setup_listener)
exec(compile(SETUP, "<setup>", "exec"))
ev.unregister("numba:compile", setup_listener)
listener = Kernels()
ev.register("numba:compile", listener)
c0, w0 = time.process_time(), time.perf_counter()
exec(compile(CALL, "<call>", "exec"))
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
ev.unregister("numba:compile", listener)
print("RESULT" + json.dumps(dict(cpu=cpu, wall=wall, setup_cpu=c0,
                                 setup_kernels=setup_listener.self_time,
                                 kernels=listener.self_time)))
'''


def readme_example() -> str:
    """The README's first ``python`` code block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", text, re.S)
    if match is None:  # pragma: no cover - the README always has its example
        raise RuntimeError("README.md has no ```python block")
    return match.group(1)


def _timed(args: list[str], cache: str) -> tuple[float, float, str]:
    """Wall and CPU seconds and the standard output of one fresh interpreter running
    ``args`` from the repository's root with ``NUMBA_CACHE_DIR=cache``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    before = os.times()
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system
                                                          - before.children_system)
    return wall, cpu, done.stdout


def _row(case: str, method: str, wall: float, cold: float, note: str, **extra) -> dict:
    return dict(benchmark=BENCHMARK, case=case, method=method, seconds=wall,
                baseline="cold" if method != "cold" else "", ratio=cold / wall
                if method != "cold" else None, rate=None, rate_unit="", note=note, **extra)


def _kernels(times: dict[str, float], top: int = 6) -> str:
    """The ``top`` costliest kernels, ``module.name seconds``, costliest first."""
    ranked = sorted(times.items(), key=lambda kv: -kv[1])
    text = "; ".join(f"{name.removeprefix('mrflib.')} {sec:.2f}" for name, sec in ranked[:top])
    return text + (f"; {len(ranked) - top} more" if len(ranked) > top else "")


def entry_point(case: str, setup: str, call: str) -> list[dict]:
    """The cold and warm rows of one entry point."""
    code = f"SETUP = {setup!r}\nCALL = {call!r}\n{_CHILD}"
    rows, cold_wall = [], None
    with tempfile.TemporaryDirectory() as cache:
        for method in ("cold", "warm"):
            _, process_cpu, out = _timed(["-c", code], cache)
            res = json.loads(out[out.rindex("RESULT") + 6:])
            cold_wall = res["wall"] if cold_wall is None else cold_wall
            compiled = sum(res["kernels"].values())
            note = (f"call CPU {res['cpu']:.1f} s; {len(res['kernels'])} kernels compiled "
                    f"({compiled:.1f} s); setup compiled {len(res['setup_kernels'])}")
            rows.append(_row(case, method, res["wall"], cold_wall, note, cpu=res["cpu"],
                             process_cpu=process_cpu, setup_cpu=res["setup_cpu"],
                             compile_seconds=compiled, kernels=_kernels(res["kernels"])))
    return rows


def readme_rows() -> list[dict]:
    """Cold, warm and after-warm-up runs of the README's example."""
    example = ["-c", readme_example()]
    case = "README example, fresh process"
    rows = []
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as fresh:
        cold, cold_cpu, _ = _timed(example, cache)
        warm, warm_cpu, _ = _timed(example, cache)
        warm_up, warm_up_cpu, _ = _timed(["-m", "mrflib", "warm-up"], fresh)
        after, after_cpu, _ = _timed(example, fresh)
    rows.append(_row(case, "cold", cold, cold, f"empty numba cache; CPU {cold_cpu:.1f} s",
                     process_cpu=cold_cpu))
    rows.append(_row(case, "warm", warm, cold, f"the cache the cold run left; CPU "
                     f"{warm_cpu:.1f} s", process_cpu=warm_cpu))
    rows.append(_row(case, "after warm-up", after, cold,
                     f"after python -m mrflib warm-up ({warm_up:.1f} s wall, CPU "
                     f"{warm_up_cpu:.1f} s) filled an empty cache; CPU {after_cpu:.1f} s",
                     process_cpu=after_cpu))
    return rows


def run(quick: bool = False, cases: list[str] | None = None) -> list[dict]:
    """The README's example, then every entry point of :data:`CALLS` (or those named in
    ``cases``), cold and warm (the same in both profiles: the cost being measured is the
    compilation, which no size changes)."""
    rows = readme_rows() if cases is None else []
    for case, (setup, call) in CALLS.items():
        if cases is None or case in cases:
            rows.extend(entry_point(case, setup, call))
    return rows
