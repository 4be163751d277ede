# SPDX-License-Identifier: MIT
"""python -m syncspy: the `syncspy` command built from the same tree (docs/cli.md), and a
shorter way to record Python (docs/python.md, "Recording").

    python -m syncspy SCRIPT.py ARGS      = syncspy run -- PYTHON SCRIPT.py ARGS
    python -m syncspy -m MODULE ARGS      = syncspy run -- PYTHON -m MODULE ARGS
    python -m syncspy COMMAND ARGS        = syncspy COMMAND ARGS, for its commands (run, report,
                                            check, ...), options (--version) and help
    python -m syncspy PROGRAM ARGS        = syncspy run -- PROGRAM ARGS (torchrun, a binary)

PYTHON is this interpreter (sys.executable). The command replaces this process (exec), so its
exit status, signals and output are the command's own (RUN-1).
"""
import os
import subprocess
import sys

from . import _native


def subcommands(binary):
    """The subcommands `syncspy help` lists (the command's own table, report/commands.h)."""
    try:
        text = subprocess.run([binary, "help"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, check=False).stdout
    except OSError:
        return set()
    names = set()
    for line in text.splitlines():
        if line.startswith("  ") and not line.startswith("   ") and line[2:3].isalpha():
            names.add(line.split()[0])
    return names


def command_line(args, binary):
    """The command line that ARGS (what follows `python -m syncspy`) stands for."""
    if not args:
        return [binary, "help"]
    first = args[0]
    if first == "-m" or first.endswith(".py"):
        return [binary, "run", "--", sys.executable] + args
    if first.startswith("-") or first in subcommands(binary):
        return [binary] + args
    return [binary, "run", "--"] + args


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        binary = _native.command()
    except _native.NotRecording as error:
        print(error, file=sys.stderr)
        return 2
    line = command_line(args, binary)
    env = dict(os.environ)
    # `syncspy run` preloads the shim beside its binary (PREFIX/bin -> PREFIX/lib), which is
    # the package's own; SYNCSPY_LIB, when the caller set it, still wins (docs/cli.md).
    try:
        os.execve(line[0], line, env)
    except OSError as error:
        print("syncspy: cannot run %s: %s" % (line[0], error.strerror), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
