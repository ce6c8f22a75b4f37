"""The benchmark harness records the machine of each topic it runs, so that rows measured
on different machines (sessions run on different hardware) are never read as one run's."""

from __future__ import annotations

from bench.__main__ import OTHER_TOPICS, machine, machines, record_machine

OLD = "Intel(R) Xeon(R) Processor @ 2.50GHz, 2 cores, 24 GiB; measured 2026-11-28"


def test_a_run_records_its_topic_and_keeps_the_others(tmp_path):
    path = tmp_path / "machine.txt"
    path.write_text(OLD + "\n")
    for topic in ("first_call", "lap"):
        (tmp_path / f"{topic}.csv").write_text("benchmark\n")
    assert machines(path) == {OTHER_TOPICS: OLD}
    record_machine(path, "first_call")
    assert machines(path) == {"first_call": machine(), OTHER_TOPICS: OLD}
    record_machine(path, "lap")
    record_machine(path, "first_call")
    assert machines(path) == {"first_call": machine(), "lap": machine(), OTHER_TOPICS: OLD}
    assert path.read_text().splitlines()[-1] == f"{OTHER_TOPICS}: {OLD}"


def test_a_first_run_writes_its_topic_alone(tmp_path):
    path = tmp_path / "machine.txt"
    (tmp_path / "lap.csv").write_text("benchmark\n")
    record_machine(path, "lap")
    assert path.read_text() == f"lap: {machine()}\n"
