"""Run the benchmarks: ``python -m bench [--quick] [topic ...]`` (``make bench``).

Every ``bench/bench_<topic>.py`` defines ``run(quick: bool) -> list[dict]`` with the keys
``benchmark, case, method, seconds, baseline, ratio, rate, rate_unit, note`` (and optionally
``size, size_unit, group, target``, and the columns the module lists in ``EXTRA_COLUMNS``);
``ratio`` is the baseline's time over ours, measured in the same run. Results go to
``bench/results/<topic>.csv`` (written atomically), and the machine each topic was last
measured on to ``bench/results/machine.txt`` (one line a topic: the rows of different topics
may come from different machines, and a ratio is only read against its own); the book's
performance page is built from them. A module that cannot run here raises
:class:`bench.Skipped`: its message is printed, its results are left as they are, and the
run goes on.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from bench import Skipped
from mrflib._support.files import atomic_write

HERE = Path(__file__).resolve().parent
COLUMNS = ["benchmark", "case", "method", "seconds", "baseline", "ratio", "rate", "rate_unit",
           "note"]
#: Optional columns: ``size`` and ``size_unit`` (problem size, for time-versus-size plots),
#: ``group`` (which rows form one scaling curve besides ``method``) and ``target`` (a
#: throughput the row should reach, in ``rate_unit``).
OPTIONAL = ["size", "size_unit", "group", "target"]


def machine() -> str:
    from mrflib.repro.experiments import machine as this_machine

    return f"{this_machine()}; measured {time.strftime('%Y-%m-%d')}"


#: The line of ``machine.txt`` that stands for every topic without a line of its own.
OTHER_TOPICS = "other topics"


def machines(path: Path) -> dict[str, str]:
    """The machine of each topic, as ``machine.txt`` records it (``topic: machine`` lines).

    A line that names no topic is the record of a run of every topic before the topics had
    lines of their own; it is kept as :data:`OTHER_TOPICS`, since a topic rerun on another
    machine since then may have been spliced into its CSV without a record."""
    known: dict[str, str] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        topic, sep, rest = line.partition(": ")
        if sep and (topic == OTHER_TOPICS or (path.parent / f"{topic}.csv").exists()):
            known[topic] = rest
        elif line.strip():
            known[OTHER_TOPICS] = line.strip()
    return known


def record_machine(path: Path, topic: str) -> None:
    """Record this machine as the one ``topic`` was measured on (atomically)."""
    known = machines(path)
    known[topic] = machine()
    rest = known.pop(OTHER_TOPICS, None)
    lines = [f"{t}: {m}" for t, m in sorted(known.items())]
    lines += [f"{OTHER_TOPICS}: {rest}"] if rest else []
    atomic_write(path, ("\n".join(lines) + "\n").encode())


def table(rows: list[dict], extra: Sequence[str] = ()) -> pd.DataFrame:
    """The rows as the CSV has them: :data:`COLUMNS`, the :data:`OPTIONAL` ones present and
    the module's ``extra`` ones, in that order (other keys are dropped)."""
    df = pd.DataFrame(rows)
    extra = [c for c in extra if c not in COLUMNS + OPTIONAL]
    return df.reindex(columns=COLUMNS + [c for c in OPTIONAL if c in df.columns] + extra)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run mrflib benchmarks")
    ap.add_argument("topics", nargs="*", help="bench_<topic>.py to run (default: all)")
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    topics = args.topics or sorted(p.stem[6:] for p in HERE.glob("bench_*.py"))
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for topic in topics:
        print(f"== bench_{topic}", flush=True)
        t0 = time.perf_counter()
        try:
            mod = importlib.import_module(f"bench.bench_{topic}")
            rows = mod.run(quick=args.quick)
        except Skipped as exc:
            print(f"   skipped: {exc}", flush=True)
            continue
        except Exception as exc:  # report and go on with the other topics
            print(f"   FAILED: {exc!r}", file=sys.stderr)
            failed += 1
            continue
        df = table(rows, getattr(mod, "EXTRA_COLUMNS", ()))
        atomic_write(args.out / f"{topic}.csv", df.to_csv(index=False).encode())
        record_machine(args.out / "machine.txt", topic)
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(df.to_string(index=False))
        print(f"   ({time.perf_counter() - t0:.1f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
