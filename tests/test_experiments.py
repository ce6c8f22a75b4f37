import pandas as pd
import pytest

from mrflib.repro import experiments, report


def test_settings_profiles():
    assert experiments.settings("quick", quick=dict(a=1), book=dict(a=2)) == {"a": 1}
    assert experiments.settings("paper", quick=dict(a=1), book=dict(a=2)) == {"a": 2}
    with pytest.raises(ValueError, match="profile must be one of"):
        experiments.settings("fast", book={})


def test_record_writes_atomically_and_replaces(tmp_path, monkeypatch):
    monkeypatch.setenv("MRFLIB_RESULTS_DIR", str(tmp_path))
    experiments.record("ch", "p", "Figure 1", "q", 1.0, 2.0, "reproduced in kind")
    experiments.record("ch", "p", "Figure 1", "q", 1.0, 1.5, "reproduced")
    df = pd.read_csv(tmp_path / "ch.csv")
    assert len(df) == 1 and df.loc[0, "ours"] == 1.5
    assert not list(tmp_path.glob(".*tmp"))
    with pytest.raises(ValueError, match="verdict must be one of"):
        experiments.record("ch", "p", "x", "q", 1, 1, "close enough")
    md = report.scorecard_markdown(report.load_records(tmp_path))
    assert "{doc}`ch <../notebooks/ch>`" in md and "reproduced" in md


def test_loglog_slope():
    assert experiments.loglog_slope([1, 10, 100], [1, 0.1, 0.01]) == pytest.approx(-1.0)


_RECORDER = """
import sys
from mrflib.repro import experiments
tag, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    experiments.record("shared", "p", f"{tag}-{i}", "q", None, i, "new")
"""


def test_two_processes_recording_one_chapter_lose_no_row(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "MRFLIB_RESULTS_DIR": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", _RECORDER, tag, "150"], env=env)
             for tag in ("x", "y")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    df = pd.read_csv(tmp_path / "shared.csv")
    assert sorted(df["item"]) == sorted(f"{t}-{i}" for t in "xy" for i in range(150))
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_bad_results_dir_names_the_variable_and_path(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    for bad in (blocker, blocker / "sub"):
        monkeypatch.setenv("MRFLIB_RESULTS_DIR", str(bad))
        with pytest.raises(ValueError, match=f"MRFLIB_RESULTS_DIR='{bad}'") as exc:
            experiments.record("ch", "p", "Figure 1", "q", 1.0, 2.0, "new")
        assert isinstance(exc.value, OSError)
    folder = tmp_path / "res"
    folder.mkdir()
    (folder / "ch.csv").write_text("something,else\n1,2\n")
    monkeypatch.setenv("MRFLIB_RESULTS_DIR", str(folder))
    with pytest.raises(ValueError, match="ch.csv.*MRFLIB_RESULTS_DIR.*not a results file"):
        experiments.record("ch", "p", "Figure 1", "q", 1.0, 2.0, "new")


@pytest.mark.parametrize("chapter", ["../x", "/abs", "", "a/b", "..", ".hidden", "x\0y"])
def test_chapter_cannot_escape_the_results_folder(tmp_path, monkeypatch, chapter):
    monkeypatch.setenv("MRFLIB_RESULTS_DIR", str(tmp_path / "res"))
    with pytest.raises(ValueError, match="chapter must be"):
        experiments.record(chapter, "p", "Figure 1", "q", 1.0, 2.0, "new")
    with pytest.raises(TypeError, match="chapter must be a str"):
        experiments.record(None, "p", "Figure 1", "q", 1.0, 2.0, "new")
    assert not (tmp_path / "res").exists() and not (tmp_path / "x.csv").exists()


def test_exponential_fit_gives_the_rate_and_its_standard_error():
    import numpy as np

    x = np.arange(3.0, 9.0)
    alpha, beta, se = experiments.exponential_fit(x, np.exp(0.5 + 0.7 * x))
    assert alpha == pytest.approx(0.5) and beta == pytest.approx(0.7) and se < 1e-10
    noisy = np.exp(0.7 * x) * np.array([1.0, 1.3, 0.8, 1.1, 0.9, 1.2])
    _, beta, se = experiments.exponential_fit(x, noisy)
    resid = np.log(noisy) - np.polyval(np.polyfit(x, np.log(noisy), 1), x)
    assert se == pytest.approx(np.sqrt(resid @ resid / 4 / np.sum((x - x.mean()) ** 2)))
    assert np.isnan(experiments.exponential_fit([1, 2], [1.0, 3.0])[2])  # two points: no error
    with pytest.raises(ValueError, match="positive"):
        experiments.exponential_fit([1, 2], [1.0, 0.0])
    with pytest.raises(ValueError, match="distinct"):
        experiments.exponential_fit([1, 1], [1.0, 2.0])
