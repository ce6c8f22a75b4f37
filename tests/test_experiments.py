import pandas as pd
import pytest

from mrflib import experiments, report


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
