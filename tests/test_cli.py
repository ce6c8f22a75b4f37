"""The command line (``python -m mrflib``): one line and a non-zero status for every failure,
interrupts, closed streams, an unwritable numba cache, and progress on long solves."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import mrflib
from mrflib import FactorGraph, exact
from mrflib import __main__ as cli
from mrflib._support import progress as _progress
from mrflib._support.forked import Terminated
from mrflib.io import solve as solve_cli

ROOT = Path(__file__).resolve().parents[1]
MODEL = "MARKOV\n2\n2 3\n2\n1 0\n2 0 1\n2\n1 2\n6\n1 2 3\n4 5 6\n"


def run(*args: str, shell: str | None = None, env: dict | None = None
        ) -> subprocess.CompletedProcess:
    cmd = shell if shell is not None else [sys.executable, "-m", "mrflib", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          shell=shell is not None, env={**os.environ, **(env or {})})


def one_line(text: str) -> str:
    assert text.count("\n") == 1 and "Traceback" not in text, text
    return text


@pytest.fixture
def model(tmp_path) -> Path:
    path = tmp_path / "m.uai"
    path.write_text(MODEL)
    return path


def test_no_subcommand_is_one_line_and_status_2(capsys):
    assert cli.main([]) == 2
    captured = capsys.readouterr()
    assert "subcommand is required" in one_line(captured.err) and captured.out == ""
    assert cli.main(["bogus"]) == 2
    assert "unknown subcommand 'bogus'" in one_line(capsys.readouterr().err)


def test_help_lists_every_subcommand_and_version_is_printed(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("usage: python -m mrflib {sweep,paper,solve,warm-up}")
    for name in ("sweep", "paper", "solve", "warm-up"):
        assert f"\n  {name} " in out
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"mrflib {mrflib.__version__}\n"


@pytest.mark.parametrize("args", [["--task", "XYZ"], [], ["--nope"], ["--task"]])
def test_solve_usage_errors_are_one_line_and_status_2(model, capsys, args):
    with pytest.raises(SystemExit) as err:
        solve_cli.main([str(model), *args] if args != [] else [])
    assert err.value.code == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("python -m mrflib solve: error: ") and "(see --help)" in line


def _numba_wrapped(exc: BaseException):
    """A call that raises ``exc`` as numba reports a signal that lands while it calls a
    compiled kernel: a SystemError caused by the signal's exception."""
    def call(*_args):
        try:
            raise exc
        except BaseException as err:
            raise SystemError("CPUDispatcher(<function f>) returned a result with an "
                              "exception set") from err
    return call


def test_an_interrupt_is_one_line_and_status_130(monkeypatch, capsys):
    """Ctrl-C in Python code, and inside a numba kernel, which numba reports as a
    SystemError caused by the KeyboardInterrupt."""
    plain = lambda argv: (_ for _ in ()).throw(KeyboardInterrupt)  # noqa: E731
    for raiser in (_numba_wrapped(KeyboardInterrupt()), plain):
        monkeypatch.setattr(cli, "_dispatch", raiser)
        assert cli.main(["solve"]) == 130
        assert one_line(capsys.readouterr().err) == "python -m mrflib: interrupted\n"
    monkeypatch.setattr(cli, "_dispatch", lambda argv: (_ for _ in ()).throw(SystemError("x")))
    with pytest.raises(SystemError):  # a SystemError of another cause is not hidden
        cli.main(["solve"])


def test_sigterm_inside_a_kernel_call_still_exits_143(model, monkeypatch, capsys):
    """SIGTERM can land while numba unpickles a cached kernel; the solver's status is 143
    all the same, and a SystemError of another cause is not hidden."""
    monkeypatch.setattr(solve_cli, "_run", _numba_wrapped(Terminated("terminated by SIGTERM")))
    assert solve_cli.main([str(model), "--task", "MAR"]) == 143
    assert "terminated by SIGTERM" in capsys.readouterr().err
    monkeypatch.setattr(solve_cli, "_run", _numba_wrapped(KeyboardInterrupt()))
    assert cli.main(["solve", str(model), "--task", "MAR"]) == 130
    monkeypatch.setattr(solve_cli, "_run", lambda args: (_ for _ in ()).throw(SystemError("x")))
    with pytest.raises(SystemError):
        solve_cli.main([str(model), "--task", "MAR"])


def test_a_real_sigint_while_solving_exits_130(model):
    # the child sets SIGINT's default handler and unblocks it: a test runner started in the
    # background (`make test &`) passes SIGINT ignored to its children, which is not the
    # situation under test
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {{signal.SIGINT}})
        import mrflib.io.solve
        def slow(model, task, *progress):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(60)
        mrflib.io.solve.solve = slow
        from mrflib.__main__ import main
        sys.exit(main(["solve", {str(model)!r}, "--task", "PR", "-q"]))
    """)
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 130
    assert one_line(res.stderr) == "python -m mrflib: interrupted\n" and res.stdout == ""


def test_closed_stdout_and_stderr(model):
    res = run(shell=f"{sys.executable} -m mrflib solve {model} --task PR -q >&-")
    assert res.returncode == 1
    assert "standard output is closed: give --out FILE" in one_line(res.stderr)
    res = run(shell=f"{sys.executable} -m mrflib solve {model} --task MPE 2>&-")
    assert res.returncode == 0 and res.stdout.startswith("MPE\n")  # no progress in it
    res = run(shell=f"{sys.executable} -m mrflib 2>&-")
    assert res.returncode == 2 and res.stdout == ""


def test_out_in_a_missing_folder_is_refused_and_not_created(model, tmp_path, capsys):
    out = tmp_path / "no" / "such" / "x.MAR"
    assert solve_cli.main([str(model), "--task", "MAR", "-q", "--out", str(out)]) == 1
    assert "does not exist; create it first" in one_line(capsys.readouterr().err)
    assert not (tmp_path / "no").exists()


def test_pr_of_z_zero_warns_whatever_the_warning_filters(tmp_path):
    """PR of a model with Z = 0 is -inf (log10 0), status 0, with its warning line even
    under ``PYTHONWARNINGS=ignore``; MAR and MPE refuse it (status 1)."""
    path = tmp_path / "zero.uai"
    path.write_text("MARKOV\n2\n2 2\n1\n2 0 1\n4\n0 0 0 0\n")
    res = run("solve", str(path), "--task", "PR", "-q",
              env={"PYTHONWARNINGS": "ignore"})
    assert res.returncode == 0 and res.stdout == "PR\n-inf\n"
    assert one_line(res.stderr).startswith("mrflib solve: warning: the model has Z = 0")


def test_long_solves_report_progress(tmp_path, monkeypatch, capsys):
    """Progress lines from the engine's clique loops; nothing without reporting."""
    rng = np.random.default_rng(0)
    n = 14  # 3^14 joint states: past enumeration, solve uses the junction tree
    scopes = [(i, i + 1) for i in range(n - 1)] + [(i, i + 2) for i in range(n - 2)]
    model = FactorGraph([3] * n, scopes, [rng.normal(size=(3, 3)) for _ in scopes])
    lines: list[str] = []
    with _progress.reporting(lines.append, every=0.0):
        exact.marginals(model, method="junction-tree")
        exact.map_assignment(model, method="junction-tree")
    for what in ("upward pass: ", "downward pass: ", "max-product pass: "):
        assert any(line.startswith(what) and line.endswith("% done") for line in lines)
    assert _progress.ticker("x", 10) is _progress._nothing  # outside: no work at all
    path = tmp_path / "m.uai"
    from mrflib import io

    io.write_uai(model, path)
    monkeypatch.setattr(solve_cli, "_PROGRESS_SECONDS", 0.0)
    assert solve_cli.main([str(path), "--task", "MAR", "--out", str(tmp_path / "a.MAR")]) == 0
    assert "] upward pass: " in capsys.readouterr().err


def test_an_unwritable_numba_cache_falls_back_to_a_private_temporary_folder(tmp_path):
    """Neither the install folder nor ``$HOME`` writable (simulated: creating a file fails
    outside the temporary folder, as numba probes it): numba refused every cached kernel at
    import ("no locator available"); the cache now goes to a private temporary folder, said
    in one line."""
    code = textwrap.dedent("""
        import os, tempfile
        real = tempfile.TemporaryFile
        def probe(*args, dir=None, **kwargs):
            if dir is None or not os.path.abspath(dir).startswith(tempfile.gettempdir()):
                raise PermissionError(13, "Permission denied", dir)
            return real(*args, dir=dir, **kwargs)
        tempfile.TemporaryFile = probe
        from mrflib import graphs, exact
        print(os.environ["NUMBA_CACHE_DIR"])
    """)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["TMPDIR"] = str(tmp_path)
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr
    folder = Path(res.stdout.strip())
    assert folder.parent == tmp_path and folder.name.startswith("mrflib-numba-cache-")
    assert (folder.stat().st_mode & 0o077) == 0
    line = one_line(res.stderr)
    assert line.startswith("mrflib: numba cannot write ") and str(folder) in line
