"""``python -m mrflib solve``: answer a UAI model file exactly, in the competition's format.

::

    python -m mrflib solve MODEL.uai [--evid FILE] --task PR|MAR|MPE [--out FILE]
                           [--time-limit SECONDS [--method M] [--seed N]]

Reads the model (:func:`mrflib.io.uai.read_uai`, plain or gzip) and its evidence, plans the exact
computation (:func:`mrflib.inference.exact.plan`: elimination order, treewidth, table memory),
solves the task with :mod:`mrflib.inference.exact` and writes the answer file
(:func:`mrflib.io.uai.write_answer`):
``PR`` is ``log10 Z`` given the evidence, ``MAR`` every variable's marginal, ``MPE`` a most
probable state. Progress goes to stderr, with a line every few seconds while a long solve
runs.

Exit statuses, each failure with one line on stderr: 0 for an answer; 1 for a refused model
(too large for memory; ``Z = 0`` for ``MAR`` and ``MPE``, whose answers are then undefined,
and which leaves no answer file, with or without a time limit) or a malformed file; 2 for a
usage error (a bad option value; ``--method`` or ``--seed`` without ``--time-limit``); 130
for an interrupt (Ctrl-C, SIGINT) and 143 for SIGTERM, which a competition's harness sends at
its limit: the answers written so far stay, complete. ``PR`` of a model with ``Z = 0`` is the
answer ``-inf`` (``log10 0``), given with a one-line warning and status 0; so is an answer
beyond the precision limit (:mod:`mrflib.models.precision`). ``--out`` must be in an
existing folder; standard output closed (``>&-``) without ``--out`` is refused before any
work (status 1).

With ``--time-limit`` (any finite positive number of seconds; a huge one means "wait for the
exact answer") the command answers every model within the limit (an anytime solver, as in
the UAI competitions): a model whose exact plan is cheap is solved exactly; otherwise a first
answer is written at once, then better ones while the exact computation runs in a forked
child (:mod:`mrflib.io.anytime`), whose answer, when it comes in time, is written last. The
approximate answers are ``--method``'s: for ``PR`` by default ``importance`` (importance
sampling estimates of ``log Z`` with the weighted mini-bucket proposal,
:mod:`mrflib.inference.approx.importance`, seeded with ``--seed``, their probabilistic and
certified bounds on stderr); ``wmb`` (weighted mini-bucket,
:mod:`mrflib.inference.approx.wmb`, small i-bounds first, then larger ones; the default of
``MAR`` and ``MPE``, and for ``PR`` its upper bound), ``exact``
(the exact child alone) or, for ``MAR``, a method of :mod:`mrflib.inference.approx`, run in a
child of its own that the limit stops; ``--seed`` (default 0) is the ``rng`` of the samplers
``gibbs`` and ``smci``. Each answer is appended after a ``-BEGIN-`` line
(:func:`mrflib.io.uai.write_answers`: the whole file is replaced atomically, so it always holds
complete answers; the last one counts), and stderr names the method of each and the process
id of each child. SIGTERM or SIGINT kills the children before the command ends, and a child
dies with the command even when the command is killed outright (SIGKILL).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from mrflib._support import forked
from mrflib._support import progress as _progress
from mrflib._support.cli import Parser
from mrflib._support.validation import format_bytes
from mrflib.io._answers import require_answer_memory
from mrflib.models.factor_graph import FactorGraph
from mrflib.models.precision import checked

__all__ = ["build_parser", "main", "solve"]

#: Seconds between progress lines while a solve runs (without ``-q``).
_PROGRESS_SECONDS = 5.0


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m mrflib solve``.

    Returns
    -------
    argparse.ArgumentParser
        The parser of ``MODEL.uai``, ``--evid``, ``--task``, ``--out``, ``--time-limit``,
        ``--method``, ``--seed`` and ``-q``; its help text states the exit statuses.
    """
    p = Parser(
        prog="python -m mrflib solve",
        description="Answer a UAI model file exactly (junction tree / variable elimination) "
                    "and write the UAI 2014 answer file: PR = log10 of the partition function "
                    "given the evidence, MAR = every variable's marginal probabilities, "
                    "MPE = a most probable state.",
        epilog="Progress goes to stderr. Exit status 0 on success, 1 when the file is "
               "malformed or the model is refused (e.g. its tables would not fit in memory; "
               "MAR or MPE of a model with Z = 0, which leaves no answer file), with a "
               "one-line reason (--debug shows the traceback), 2 for bad arguments, 130 "
               "when interrupted (SIGINT), 143 when terminated (SIGTERM); on either signal "
               "the child process is killed first and the answers written so far stay. "
               "PR of a model with Z = 0 is -inf, with a warning.")
    p.add_argument("model", metavar="MODEL.uai", help="the model (MARKOV or BAYES; gzip is "
                   "recognised by its first bytes)")
    p.add_argument("--evid", metavar="FILE", help="a UAI evidence file (count of observed "
                   "variables, then 'variable value' pairs); default: no evidence")
    p.add_argument("--task", required=True, choices=("PR", "MAR", "MPE"), help="what to compute")
    p.add_argument("--out", metavar="FILE", default="-",
                   help="where to write the answer (atomically; gzip if it ends in .gz); "
                        "default '-': standard output. Nothing is written beside the model, "
                        "where the competition's reference answers often sit")
    p.add_argument("--time-limit", metavar="SECONDS", type=float, default=None,
                   help="answer within this many seconds (from the start; any finite "
                        "positive number, a huge one meaning: wait for the exact answer): "
                        "exact where it fits, otherwise improving approximate answers, each "
                        "after a -BEGIN- line (the last counts), the exact computation "
                        "running meanwhile in a child process stopped at the limit; "
                        "default: exact only")
    p.add_argument("--method", default=None,
                   help="with --time-limit only: the approximate method, 'importance' "
                        "(PR: importance sampling estimates, the default), 'wmb' (weighted "
                        "mini-bucket, the default of MAR and MPE; every task), 'exact' (the exact "
                        "computation alone, stopped at the limit) or, for MAR, a method of "
                        "mrflib.inference.approx ('auto', 'lbp', 'mean-field', 'gibbs', "
                        "'smci'), which runs in a child process stopped at the limit")
    p.add_argument("--seed", metavar="N", type=int, default=None,
                   help="with --time-limit only: the seed (an integer >= 0) of the samplers "
                        "'importance', 'gibbs' and 'smci'; default 0. The same seed gives the "
                        "same answer file when the sampler draws all its samples within the "
                        "limit")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return p


@checked
def solve(model: FactorGraph, task: str, progress: Any = None) -> Any:
    """The answer of ``task`` for ``model`` (evidence already applied).

    A model whose junction tree does not fit in memory is solved with reduced domains or in
    slices (:mod:`mrflib.inference.exact.sliced`).

    Parameters
    ----------
    model : FactorGraph
        The model; anything else is a ``TypeError``.
    task : {"PR", "MAR", "MPE"}
        The UAI task.
    progress : callable or None, default None
        A callable taking a line of text, hearing of each slice.

    Returns
    -------
    float or list of ndarray or ndarray of int64
        The answer as :func:`mrflib.io.uai.write_answer` takes it: ``log10 Z`` for ``PR``
        (``-inf``, with a ``RuntimeWarning``, for a model with ``Z = 0``), the marginals for
        ``MAR``, the states for ``MPE``.
    """
    from mrflib.inference.exact import sliced

    if task not in ("PR", "MAR", "MPE"):
        raise ValueError(f"task must be one of PR, MAR, MPE, got {task!r}")
    if not isinstance(model, FactorGraph):
        raise TypeError(f"model must be a FactorGraph, got {type(model).__name__}")
    if task == "PR":
        logz = sliced.log_partition(model, progress=progress)
        if logz == -math.inf:
            warnings.warn("the model has Z = 0 (every state has zero weight, e.g. evidence of "
                          "probability zero): log Z = -inf", RuntimeWarning, stacklevel=2)
        return logz / math.log(10.0)
    if task == "MAR":
        return sliced.marginals(model, progress=progress)
    return sliced.map_assignment(model, progress=progress)[0]


class _Progress:
    """Timed progress lines on stderr (``[  1.23 s] what``)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.start = time.perf_counter()

    def __call__(self, what: str) -> None:
        if not self.quiet and sys.stderr is not None:  # 2>&-: say nothing
            print(f"[{time.perf_counter() - self.start:7.2f} s] {what}", file=sys.stderr,
                  flush=True)


def _describe_plan(plan: Any) -> str:
    parts = []
    if getattr(plan, "treewidth", None) is not None:
        parts.append(f"treewidth {plan.treewidth}")
    if getattr(plan, "max_table_bytes", None) is not None:
        parts.append(f"largest table {format_bytes(plan.max_table_bytes)}")
    if getattr(plan, "total_bytes", None) is not None:
        parts.append(f"all tables {format_bytes(plan.total_bytes)}")
    if getattr(plan, "fits", True) is False:
        parts.append("does not fit in memory as one tree")
    return ", ".join(parts) or "planned"


def _check_out(out: str, inputs: tuple = ()) -> None:
    """Refuse an ``--out`` that cannot be written, or that is one of the ``inputs`` (the
    model or evidence file, which the answer would replace), before any work is done."""
    if out == "-":
        if sys.stdout is None:
            raise ValueError("standard output is closed: give --out FILE for the answer")
        return
    path = Path(out)
    for given in inputs:
        if given and path.is_file() and Path(given).exists() and path.samefile(given):
            raise ValueError(f"--out {out!r} is the input file {given!r}: the answer would "
                             "replace it; give another file")
    if out == "" or path.is_dir() or (path.exists() and not path.is_file()):
        raise ValueError(f"--out {out!r} is not a file name (a directory or a device?); give "
                         "a file to write, or '-' for standard output")
    folder = path.absolute().parent  # an existing answer file is replaced; no folder made
    if not folder.is_dir():
        raise ValueError(f"--out {out!r}: the folder {str(folder)!r} does not exist; "
                         "create it first")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"--out {out!r} cannot be written: {str(folder)!r} is not a "
                         "writable folder")


def _check_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Usage errors the parser's types cannot see, refused as its own are (one line,
    status 2) before the model is read."""
    from mrflib.io.anytime import default_method, methods

    if args.time_limit is not None and not (args.time_limit > 0
                                            and math.isfinite(args.time_limit)):
        parser.error(f"argument --time-limit: expected a positive number of seconds, got "
                     f"{args.time_limit:g}")
    for option, value in (("--method", args.method), ("--seed", args.seed)):
        if value is not None and args.time_limit is None:
            parser.error(f"argument {option}: needs --time-limit (without it the answer is "
                         "exact)")
    if args.seed is not None and args.seed < 0:
        parser.error(f"argument --seed: expected an integer >= 0, got {args.seed}")
    args.method = default_method(args.task) if args.method is None else args.method
    args.seed = 0 if args.seed is None else args.seed
    if args.method not in methods(args.task):
        parser.error(f"argument --method: expected one of {methods(args.task)} for "
                     f"--task {args.task}, got {args.method!r}")


def _run(args: argparse.Namespace) -> None:
    from mrflib.inference import exact
    from mrflib.io import uai as io

    _check_out(args.out, (args.model, args.evid))
    say = _Progress(args.quiet)
    if args.time_limit is not None:
        from mrflib.io.anytime import solve_anytime

        solve_anytime(args, say, solve)
        return
    say(f"reading {args.model}" + (f" with evidence {args.evid}" if args.evid else ""))
    model = io.read_uai(args.model, evidence=args.evid)
    say(f"read: {model.n} variables, {model.n_factors} factors, "
        f"{format_bytes(model.table_bytes())} of tables; planning...")
    if args.task == "MAR":  # the answer's text, before the marginals are computed
        require_answer_memory(int(model.cardinalities.sum()))
    say(_describe_plan(exact.plan(model)) + f"; solving {args.task}...")
    with _progress.reporting(say, every=_PROGRESS_SECONDS):
        value = solve(model, args.task, say)
    say(f"solved {args.task}" + (f": log10 Z = {value!r}" if args.task == "PR" else ""))
    if args.out == "-":
        sys.stdout.write(io.format_answer(args.task, value))
        sys.stdout.flush()
    else:
        io.write_answer(args.out, args.task, value)
        say(f"wrote {args.out}")


def _say(line: str) -> None:
    if sys.stderr is not None:  # 2>&-: the exit status alone tells
        print(line, file=sys.stderr)


def _one_line_warning(message: Any, *_: Any, **__: Any) -> None:
    _say(f"mrflib solve: warning: {' '.join(str(message).split())}")


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m mrflib solve ...``.

    Parameters
    ----------
    argv : list of str or None, default None
        The arguments after ``solve``; ``None`` reads ``sys.argv``.

    Returns
    -------
    int
        The exit status: 0 on success, 1 for a malformed file or a refused model (with a
        one-line reason on stderr), 143 when terminated by SIGTERM. Bad arguments exit
        (status 2) through the parser.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_options(parser, args)
    try:
        with warnings.catch_warnings(), forked.ending_on_signals():
            # a warning (Z = 0, the precision limit) is part of the answer: shown whatever
            # the filters of the environment, in one line
            warnings.simplefilter("default")
            if not args.debug:
                warnings.showwarning = _one_line_warning
            _run(args)
    except (forked.Terminated, SystemError) as err:
        # numba wraps a signal that lands while it calls a kernel in a SystemError
        if not isinstance(forked.signal_behind(err), forked.Terminated):
            raise
        _say("mrflib solve: terminated by SIGTERM; the answers written so far stand")
        return 143
    except BrokenPipeError:  # the reader of stdout went away (| head): nothing to flush
        if sys.stdout is not None:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        _say("mrflib solve: error: standard output was closed before the answer was written")
        return 1
    except (ValueError, OSError, MemoryError, ImportError) as err:
        if args.debug:
            raise
        reason = " ".join(str(err).split()) or type(err).__name__
        _say(f"mrflib solve: error: {reason}")
        return 1
    return 0
