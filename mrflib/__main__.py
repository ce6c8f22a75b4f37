"""Command line: ``python -m mrflib sweep ...``, ``paper ...``, ``solve ...`` and ``warm-up``.

Every failure is one line on stderr and a non-zero exit: a missing or unknown subcommand
(status 2), an interrupt (Ctrl-C: status 130, also when it lands inside a numba kernel,
which numba reports as a ``SystemError`` caused by the ``KeyboardInterrupt``), and what each
subcommand reports itself. ``--help`` lists the subcommands, ``--version`` prints the version.
"""

from __future__ import annotations

import importlib
import sys

#: subcommand -> (module:function, what it does)
SUBCOMMANDS = {
    "sweep": ("mrflib.repro.sweep:main", "run a notebook over a parameter grid"),
    "paper": ("mrflib.repro.paper:main", "run chapters at the paper profile in resumable "
                                         "chunks"),
    "solve": ("mrflib.io.solve:main", "answer a UAI model file: PR, MAR or MPE, exactly or, "
                                      "with --time-limit, the best answer found in time"),
    "warm-up": ("mrflib.repro.warm_up:main", "compile the common numba kernels into numba's "
                                             "cache once"),
}
PROG = "python -m mrflib"


def _say(line: str) -> None:
    if sys.stderr is not None:  # stderr closed (2>&-): nothing to say it on
        print(line, file=sys.stderr)


def _usage() -> str:
    names = ",".join(SUBCOMMANDS)
    lines = [f"usage: {PROG} {{{names}}} ... | --help | --version", "", "subcommands:"]
    lines += [f"  {name:<7}  {what} ({PROG} {name} --help)"
              for name, (_, what) in SUBCOMMANDS.items()]
    return "\n".join(lines)


def _dispatch(argv: list[str]) -> int:
    if not argv:
        _say(f"{PROG}: error: a subcommand is required, one of {', '.join(SUBCOMMANDS)} "
             f"(see {PROG} --help)")
        return 2
    if argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if argv[0] == "--version":
        from mrflib import __version__

        print(f"mrflib {__version__}")
        return 0
    if argv[0] not in SUBCOMMANDS:
        _say(f"{PROG}: error: unknown subcommand {argv[0]!r}, expected one of "
             f"{', '.join(SUBCOMMANDS)} (see {PROG} --help)")
        return 2
    module, function = SUBCOMMANDS[argv[0]][0].split(":")
    return getattr(importlib.import_module(module), function)(argv[1:])


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``python -m mrflib <subcommand>``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(argv)
    except (KeyboardInterrupt, SystemError) as err:
        from mrflib._support.forked import signal_behind

        if not isinstance(signal_behind(err), KeyboardInterrupt):
            raise
        _say(f"{PROG}: interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
