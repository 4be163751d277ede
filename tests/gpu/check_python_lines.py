#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/check_python_lines.py: checks that each sync made from a Python script is named by
the exact line that made it (issue 14: interpose/python.c reads the frames at the sync itself).

  check_python_lines.py DATABASE SCRIPT

SCRIPT marks its lines: `# SYNC:name` a line that must be the site of at least one sync point;
`# MAY:name` a line that may make one or not (torch decides). Every sync point whose site
(api_calls.site, the first frame outside the frameworks) is a line of SCRIPT must be at a marked
line: a sync named by a later line (the next line the interpreter ran) lands on an unmarked one,
which is why the scripts put an unmarked call after each marked line. A sync made on a thread
must be named too: the worker's line is marked like the others.

Prints one "PASS  what" / "FAIL  what (detail)" line per check (tests/gpu/run.sh turns them
into its checks) and exits 1 when any failed."""
import os
import re
import sqlite3
import sys


def marked_lines(script):
    """{line: (kind, name)} for the SYNC and MAY markers of the script."""
    marks = {}
    with open(script, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            # a marker is a comment after code, never a docstring's example
            m = re.search(r"\S.*#\s*(SYNC|MAY):([\w-]+)", text)
            if m:
                marks[number] = (m.group(1), m.group(2))
    return marks


def script_sites(database, script):
    """[(line, api, site)] of the sync points whose site is a line of the script."""
    base = os.path.basename(script)
    rows = sqlite3.connect(database).execute(
        "SELECT api, site FROM api_calls WHERE py_stack IS NOT NULL ORDER BY start_ns")
    found = []
    for api, site in rows:
        m = re.match(r"(.*):(-?\d+) in .*$", site or "")
        if m and os.path.basename(m.group(1)) == base:
            found.append((int(m.group(2)), api, site))
    return found


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    database, script = argv[1], argv[2]
    marks = marked_lines(script)
    sites = script_sites(database, script)
    failed = 0

    def check(ok, what, detail=""):
        nonlocal failed
        print(("PASS  " if ok else "FAIL  ") + what + (f"  ({detail})" if detail and not ok else ""))
        failed += not ok

    check(any(kind == "SYNC" for kind, _ in marks.values()), f"{script}: has SYNC markers")
    for line, (kind, name) in sorted(marks.items()):
        count = sum(1 for found, _, _ in sites if found == line)
        if kind == "SYNC":
            check(count > 0, f"python lines: {name} (line {line}) names its sync",
                  f"no sync point named line {line}")
    unmarked = [(line, api) for line, api, _ in sites if line not in marks]
    check(not unmarked, f"python lines: every sync of the script ({len(sites)}) names a marked line",
          ", ".join(f"{api} at line {line}" for line, api in unmarked[:8]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
