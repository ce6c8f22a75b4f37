"""The first call: the README's example in a fresh process, with an empty numba cache and
with a warm one.

mrflib's kernels are compiled by numba on their first call and cached on disk; a fresh
install (or a cleared cache) pays the compilation once. Each case runs the README's first
``python`` block (read from ``README.md``, so the benchmark follows the example) in a new
interpreter with ``NUMBA_CACHE_DIR`` set to a new empty folder (``cold``), then again with
the same folder (``warm``: every kernel loaded from the cache), and, as the fix a user can
apply, after ``python -m mrflib warm-up`` filled another empty folder (``after warm-up``).
Wall and CPU time (the children's user + system) of the whole process, imports included;
the baseline of every row is the cold run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARK = "first call"


def readme_example() -> str:
    """The README's first ``python`` code block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", text, re.S)
    if match is None:  # pragma: no cover - the README always has its example
        raise RuntimeError("README.md has no ```python block")
    return match.group(1)


def _timed(args: list[str], cache: str) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh interpreter running ``args`` from the
    repository's root with ``NUMBA_CACHE_DIR=cache``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    before = os.times()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system
                                                          - before.children_system)
    return wall, cpu


def _row(case: str, method: str, wall: float, cold: float, note: str) -> dict:
    return dict(benchmark=BENCHMARK, case=case, method=method, seconds=wall,
                baseline="cold" if method != "cold" else "", ratio=cold / wall
                if method != "cold" else None, rate=None, rate_unit="", note=note)


def run(quick: bool = False) -> list[dict]:
    """Cold, warm and after-warm-up runs of the README's example (the same in both
    profiles: the cost being measured is the compilation, which no size changes)."""
    example = ["-c", readme_example()]
    case = "README example, fresh process"
    rows = []
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as fresh:
        cold, cold_cpu = _timed(example, cache)
        warm, warm_cpu = _timed(example, cache)
        warm_up, warm_up_cpu = _timed(["-m", "mrflib", "warm-up"], fresh)
        after, after_cpu = _timed(example, fresh)
    rows.append(_row(case, "cold", cold, cold, f"empty numba cache; CPU {cold_cpu:.1f} s"))
    rows.append(_row(case, "warm", warm, cold, f"the cache the cold run left; CPU "
                     f"{warm_cpu:.1f} s"))
    rows.append(_row(case, "after warm-up", after, cold,
                     f"after python -m mrflib warm-up ({warm_up:.1f} s wall, CPU "
                     f"{warm_up_cpu:.1f} s) filled an empty cache; CPU {after_cpu:.1f} s"))
    return rows
