"""A hostile audit of ``python -m mrflib solve --time-limit``: limits of any size, every
``--method`` it offers (with ``--seed``), SIGTERM, SIGINT and SIGKILL while the exact
computation runs in its forked child, and models with ``Z = 0``."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from mrflib import FactorGraph, io
from mrflib.inference import approx
from mrflib.inference.exact import enumeration as fe
from mrflib.io import anytime, anytime_mpe
from mrflib.io import solve as solve_cli

ROOT = Path(__file__).resolve().parents[1]


def grid(rows: int, cols: int, card: int, seed: int = 0) -> FactorGraph:
    """A lattice with unary and pairwise factors of normal log-weights."""
    rng = np.random.default_rng(seed)
    n = rows * cols
    scopes = [(v,) for v in range(n)]
    scopes += [(r * cols + c, r * cols + c + 1) for r in range(rows) for c in range(cols - 1)]
    scopes += [(r * cols + c, (r + 1) * cols + c) for r in range(rows - 1) for c in range(cols)]
    tables = [0.5 * rng.normal(size=(card,) * len(s)) for s in scopes]
    return FactorGraph(np.full(n, card), scopes, tables)


@pytest.fixture
def small(tmp_path) -> tuple[FactorGraph, Path]:
    model = grid(3, 3, 2)
    io.write_uai(model, tmp_path / "m.uai")
    return model, tmp_path / "m.uai"


@pytest.fixture
def to_the_child(monkeypatch) -> None:
    """No model is cheap enough to be solved in the parent: the exact computation goes to
    the forked child."""
    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)


def exact_marginals_match(model: FactorGraph, got) -> None:
    for p, q in zip(got, fe.marginals(model)):
        np.testing.assert_allclose(p, q, atol=1e-9)


# --------------------------------------------------------------------------- limits
@pytest.mark.parametrize("limit", ["1e7", "1e300"])
def test_a_huge_time_limit_waits_for_the_exact_answer(small, tmp_path, to_the_child, limit):
    model, path = small
    out = tmp_path / "m.MAR"
    assert solve_cli.main([str(path), "--task", "MAR", "--time-limit", limit,
                           "--out", str(out), "-q"]) == 0
    exact_marginals_match(model, io.read_answer(out).value)


@pytest.mark.parametrize("limit", ["1e400", "10**400", "inf", "nan", "0", "-1"])
def test_a_limit_that_is_not_a_finite_positive_number_is_a_usage_error(capsys, limit):
    with pytest.raises(SystemExit) as stop:
        solve_cli.main(["x.uai", "--task", "PR", "--time-limit", limit, "-q"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --time-limit" in err, err


# --------------------------------------------------------------------------- methods
METHOD_CASES = [("MAR", m) for m in anytime.methods("MAR")] + [("PR", "wmb"), ("MPE", "wmb")]


@pytest.mark.parametrize(("task", "method"), METHOD_CASES)
def test_every_method_offered_answers(small, tmp_path, monkeypatch, capsys, task, method):
    """Each method --method lists gives an answer of its own (the exact child not started,
    except for "exact", which is that child), and the same seed gives the same file."""
    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    monkeypatch.setattr(anytime, "HOPELESS_FACTOR", 0.0)
    monkeypatch.setattr(anytime_mpe, "EXACT_PARTS_SHARE", 0.0)  # nor MPE's reduced max-product
    model, path = small
    files = []
    sampler = method in ("gibbs", "smci")
    for run in range(2 if sampler else 1):
        out = tmp_path / f"m{run}.{task}"
        assert solve_cli.main([str(path), "--task", task, "--time-limit", "120",
                               "--method", method, *(["--seed", "7"] if sampler else []),
                               "--out", str(out)]) == 0
        err = capsys.readouterr().err
        # an MPE answer no better than the searched first one is offered, not written
        assert "answer 2: " in err or (task == "MPE" and "not written: max mini-bucket" in err), \
            err
        files.append(out.read_bytes())
    got = io.read_answer(tmp_path / f"m0.{task}").value
    if task == "MAR":
        assert [len(p) for p in got] == model.cardinalities.tolist()
        assert all(abs(p.sum() - 1) < 1e-9 for p in got)
        if method == "exact":
            exact_marginals_match(model, got)
    elif task == "PR":
        assert got >= fe.log_partition(model) / math.log(10) - 1e-9
    else:
        assert got.shape == (model.n,)
    assert all(f == files[0] for f in files)


def test_the_exact_method_is_stopped_at_the_limit(small, tmp_path, monkeypatch, capsys):
    """An exact engine slower than the limit (here: one that sleeps) is stopped at it, and
    the trivial answer stands."""
    def slow(*args, **kwargs):
        time.sleep(30)

    monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    monkeypatch.setattr(solve_cli, "solve", slow)
    monkeypatch.setattr(approx.exact, "marginals", slow)
    _, path = small
    out = tmp_path / "m.MAR"
    t0 = time.monotonic()
    assert solve_cli.main([str(path), "--task", "MAR", "--time-limit", "2", "--method",
                           "exact", "--out", str(out)]) == 0
    assert time.monotonic() - t0 < 2 + 10
    assert "did not finish in time" in capsys.readouterr().err
    assert out.read_text().count(io.BEGIN) == 1


@pytest.mark.parametrize("extra", [["--method", "wmb"], ["--seed", "3"]])
def test_method_and_seed_without_a_time_limit_are_usage_errors(capsys, extra):
    with pytest.raises(SystemExit) as stop:
        solve_cli.main(["x.uai", "--task", "MAR", *extra, "-q"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs --time-limit" in err, err


def test_a_negative_seed_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        solve_cli.main(["x.uai", "--task", "MAR", "--time-limit", "5", "--seed", "-1"])
    assert stop.value.code == 2 and "argument --seed" in capsys.readouterr().err


# --------------------------------------------------------------------------- signals
def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(c) for c in fh.read().split()]
    except OSError:
        return []


# SIGINT's default handler and an unblocked SIGINT: a test runner started in the background
# passes SIGINT ignored to its children, which is not the situation under test
_LAUNCH = textwrap.dedent("""
    import runpy, signal, sys
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    sys.argv = [sys.argv[0]] + sys.argv[1:]
    runpy.run_module("mrflib", run_name="__main__", alter_sys=True)
""")


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize(("sig", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130),
                                             (signal.SIGKILL, -9)])
def test_a_signal_ends_the_solver_and_its_child_at_once(tmp_path, sig, status):
    """The exact computation of a 14x14 Potts lattice (q = 3, about 30 s estimated) runs
    in the child when the signal comes: the command ends within seconds with the signal's
    status, its pipes closed (the child does not hold them), the answers written so far
    complete, and the child gone. The signal is sent once the solver has named its child
    on stderr, so that even SIGKILL, which nothing defers, comes after that line."""
    model = grid(14, 14, 3)
    io.write_uai(model, tmp_path / "m.uai")
    out = tmp_path / "m.MAR"
    proc = subprocess.Popen([sys.executable, "-c", _LAUNCH, "solve", str(tmp_path / "m.uai"),
                             "--task", "MAR", "--time-limit", "60", "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    kids: list[int] = []
    try:
        for _ in range(1200):
            named = [ln for ln in list(lines) if "exact inference started in process" in ln]
            if named or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert named, "the exact child did not start: " + "".join(lines)
        kids = [int(named[0].split()[-1])]
        assert kids[0] in _children(proc.pid) and out.exists()
        proc.send_signal(sig)
        reader.join(15)  # end of file: every holder of the pipe has closed it
        assert not reader.is_alive(), "the solver's stderr stayed open"
        proc.wait(15)
    finally:
        proc.kill()
        for pid in kids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
    stderr = "".join(lines)
    assert proc.returncode == status, stderr
    got = io.read_answer(out).value
    assert [len(p) for p in got] == model.cardinalities.tolist()
    for _ in range(50):  # the kernel delivers the parent's death to the child at once
        if not any(_alive(pid) for pid in kids):
            break
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in kids)
    if sig == signal.SIGTERM:
        assert stderr.splitlines()[-1] == ("mrflib solve: terminated by SIGTERM; the answers "
                                           "written so far stand")


# --------------------------------------------------------------------------- Z = 0
def zero_model() -> FactorGraph:
    """Every state has zero weight, which no quick check sees: the pairs (0, 1), (1, 2)
    and (0, 2) of three binary variables must differ, impossible."""
    differ = np.array([[-np.inf, 0.0], [0.0, -np.inf]])
    return FactorGraph(np.full(3, 2), [(0, 1), (1, 2), (0, 2)], [differ] * 3)


@pytest.mark.parametrize("where", ["parent", "child"])
@pytest.mark.parametrize("task", ["MAR", "MPE", "PR"])
def test_z_zero_leaves_no_answer_file_for_mar_and_mpe(tmp_path, monkeypatch, capsys, task,
                                                      where):
    """As without a time limit: MAR and MPE of a model with Z = 0 exit 1 with one line and
    no answer file; PR answers -inf with a warning, status 0. The proof comes from the
    exact engine in the parent (a cheap model) or in the child."""
    if where == "child":
        monkeypatch.setattr(anytime, "QUICK_EXACT_SECONDS", 0.0)
    io.write_uai(zero_model(), tmp_path / "z.uai")
    out = tmp_path / f"z.{task}"
    status = solve_cli.main([str(tmp_path / "z.uai"), "--task", task, "--time-limit", "60",
                             "--out", str(out), "-q"])
    err = capsys.readouterr().err
    if task == "PR":
        assert status == 0 and io.read_answer(out).value == -math.inf
        assert "warning: the model has Z = 0" in err
    else:
        assert status == 1 and not out.exists()
        assert err.count("\n") == 1 and "Z = 0" in err, err
