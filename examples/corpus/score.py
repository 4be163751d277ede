#!/usr/bin/env python3
"""examples/corpus/score.py: scores `syncspy report` on the labelled corpus (issue 13, item 4).

For each trace of the corpus (traces/NAME.sqlite, NAME-shared.sqlite, NAME-static.sqlite; a
trace over 5 MB is committed xz-compressed as NAME.sqlite.xz, unpacked here to a temporary file) it
runs `syncspy report --format json` on that one database, reads the markers of the workload's
source (NAME.cu, NAME.c or NAME.py beside this script: a comment `SYNCSPY-PROBLEM` or
`SYNCSPY-CLEAN` at the end of a line, README.md), and counts, over the findings above `info`
(any severity but `info`):
  recall      problem lines named by at least one finding
  clean       findings naming a CLEAN line
  first       the first finding names a problem line; for a workload without problem lines:
              there is no finding at all
  unmarked    findings naming no marked line (another file, an unmarked line, no site)
A finding names a line when its `site` is "PATH:LINE ..." with PATH's basename the source's
basename and LINE that line. It prints one line per trace (with what was missed and what was
named wrongly beneath it) and ends with exactly one line:
  score: recall R/N, clean-line findings C, first F/W, unmarked U/W

  score.py [--syncspy PATH] [--sources DIR] [--floor FILE] [TRACES_DIR]
  score.py --reports FILE [--sources DIR] [--floor FILE]

--reports reads reports already made, one JSON object per line, {"trace": NAME, "report":
{...}} (tests/gpu/corpus.sh writes corpus-reports.json so), instead of running syncspy.
--floor FILE: exit 1 when the score is below the floor the file sets (score-floor.txt says
how). Exit 2 for bad input (a trace without its source, a report that is not JSON). Standard
library only: CI runs it with Debian's python3.
"""

import argparse
import concurrent.futures
import json
import os
import re
import lzma
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MARKER = re.compile(r"(?://|#).*\bSYNCSPY-(PROBLEM|CLEAN)\b")
SITE = re.compile(r"^(\S.*?):(\d+)(?=\s|$)")
BUILDS = ("-shared", "-static")
SOURCE_EXTENSIONS = (".cu", ".c", ".py")


class InputError(Exception):
    pass


def read_markers(path):
    """(problem lines, clean lines) of a source file, 1-based line numbers."""
    problems, clean = set(), set()
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = MARKER.search(line)
            if m:
                (problems if m.group(1) == "PROBLEM" else clean).add(number)
    return problems, clean


def source_of(trace, sources):
    """The workload source of a trace name: NAME-shared / NAME-static / NAME -> NAME.{cu,c,py}."""
    name = trace
    for suffix in BUILDS:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    for ext in SOURCE_EXTENSIONS:
        path = os.path.join(sources, name + ext)
        if os.path.isfile(path):
            return path
    raise InputError("%s: no source %s{%s} in %s" % (trace, name, ",".join(SOURCE_EXTENSIONS), sources))


def named_line(site, basename):
    """The line a finding's site names in the file basename, or None."""
    m = SITE.match(site or "")
    if not m or os.path.basename(m.group(1)) != basename:
        return None
    return int(m.group(2))


def score_one(trace, report, source):
    """The counts of one trace, and lines that explain them."""
    problems, clean = read_markers(source)
    base = os.path.basename(source)
    findings = [f for f in report.get("findings", []) if f.get("severity") != "info"]
    named, clean_hits, unmarked, notes = set(), 0, 0, []
    for f in findings:
        line = named_line(f.get("site"), base)
        what = "%s [%s] %s" % (f.get("rule"), f.get("severity"), f.get("site"))
        if line in problems:
            named.add(line)
        elif line in clean:
            clean_hits += 1
            notes.append("  on a clean line: " + what)
        else:
            unmarked += 1
            notes.append("  unmarked: " + what)
    for line in sorted(problems - named):
        notes.append("  missed: %s:%d" % (base, line))
    if problems:
        first = bool(findings) and named_line(findings[0].get("site"), base) in problems
    else:
        first = not findings
    return {
        "trace": trace,
        "problems": len(problems),
        "named": len(named),
        "clean": clean_hits,
        "first": first,
        "unmarked": unmarked,
        "findings": len(findings),
        "notes": notes,
    }


def report_of(syncspy, path):
    """`syncspy report --format json` of one database, parsed."""
    run = subprocess.run([syncspy, "report", "--format", "json", path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if run.returncode != 0:
        raise InputError("%s: syncspy report failed (exit %d): %s"
                         % (path, run.returncode, run.stderr.decode(errors="replace").strip()))
    try:
        return json.loads(run.stdout)
    except ValueError as e:
        raise InputError("%s: the report is not JSON: %s" % (path, e))


def reports_from_syncspy(syncspy, traces_dir):
    """(trace, report) of every database in traces_dir, the reports made a few at a time."""
    names = sorted(n for n in os.listdir(traces_dir) if n.endswith((".sqlite", ".sqlite.xz")))
    with tempfile.TemporaryDirectory() as unpacked:
        paths = []
        for n in names:
            path = os.path.join(traces_dir, n)
            if n.endswith(".xz"):  # syncspy reads databases, not archives: unpack it first
                plain = os.path.join(unpacked, n[: -len(".xz")])
                with lzma.open(path) as src, open(plain, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                path = plain
            paths.append(path)
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            reports = list(pool.map(lambda p: report_of(syncspy, p), paths))
    return [(n[: n.index(".sqlite")], r) for n, r in zip(names, reports)]


def reports_from_file(path):
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                yield entry["trace"], entry["report"]
            except (ValueError, KeyError, TypeError) as e:
                raise InputError("%s:%d: not {\"trace\": ..., \"report\": ...}: %s" % (path, number, e))


def read_floor(path):
    """The floor: 'recall R', 'clean-line-findings C', 'first F', 'unmarked-per-workload U'
    lines (R and F fractions, minimums; C and U maximums); '#' starts a comment."""
    floor = {}
    keys = ("recall", "clean-line-findings", "first", "unmarked-per-workload")
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) != 2 or words[0] not in keys:
                raise InputError("%s:%d: want one of %s and a number" % (path, number, ", ".join(keys)))
            try:
                floor[words[0]] = float(words[1])
            except ValueError:
                raise InputError("%s:%d: %r is not a number" % (path, number, words[1]))
    return floor


def below_floor(total, floor):
    """The ways the total falls below the floor, as sentences."""
    w, n = total["workloads"], total["problems"]
    recall = total["named"] / n if n else 1.0
    first = total["first"] / w if w else 1.0
    unmarked = total["unmarked"] / w if w else 0.0
    out = []
    if "recall" in floor and recall < floor["recall"]:
        out.append("recall %.3f below the floor %.3f" % (recall, floor["recall"]))
    if "clean-line-findings" in floor and total["clean"] > floor["clean-line-findings"]:
        out.append("%d clean-line findings, the floor allows %g" % (total["clean"], floor["clean-line-findings"]))
    if "first" in floor and first < floor["first"]:
        out.append("first %.3f below the floor %.3f" % (first, floor["first"]))
    if "unmarked-per-workload" in floor and unmarked > floor["unmarked-per-workload"]:
        out.append("%.3f unmarked findings per workload, the floor allows %g"
                   % (unmarked, floor["unmarked-per-workload"]))
    return out


def main(argv):
    parser = argparse.ArgumentParser(description="Score syncspy report on the labelled corpus.")
    parser.add_argument("traces", nargs="?", default=os.path.join(HERE, "traces"))
    parser.add_argument("--syncspy", default=os.path.join(HERE, "..", "..", "report", "syncspy"))
    parser.add_argument("--sources", default=HERE)
    parser.add_argument("--reports", help="reports already made (JSON lines)")
    parser.add_argument("--floor", help="exit 1 below this floor (score-floor.txt)")
    args = parser.parse_args(argv[1:])
    try:
        floor = read_floor(args.floor) if args.floor else None
        if args.reports:
            reports = list(reports_from_file(args.reports))
        else:
            if not os.path.isdir(args.traces):
                raise InputError("%s: no such directory" % args.traces)
            reports = list(reports_from_syncspy(args.syncspy, args.traces))
        if not reports:
            raise InputError("no traces to score")
        rows = [score_one(trace, report, source_of(trace, args.sources))
                for trace, report in sorted(reports, key=lambda r: r[0])]
    except (InputError, OSError) as e:
        print("score.py: %s" % e, file=sys.stderr)
        return 2

    print("%-40s %-8s %-6s %-6s %-9s %s" % ("trace", "recall", "clean", "first", "unmarked", "findings"))
    total = {"workloads": 0, "problems": 0, "named": 0, "clean": 0, "first": 0, "unmarked": 0}
    for r in rows:
        print("%-40s %-8s %-6d %-6s %-9d %d" % (r["trace"], "%d/%d" % (r["named"], r["problems"]),
                                               r["clean"], "yes" if r["first"] else "no",
                                               r["unmarked"], r["findings"]))
        for note in r["notes"]:
            print(note)
        total["workloads"] += 1
        for key in ("problems", "named", "clean", "unmarked"):
            total[key] += r[key]
        total["first"] += r["first"]
    print("score: recall %d/%d, clean-line findings %d, first %d/%d, unmarked %d/%d" % (
        total["named"], total["problems"], total["clean"], total["first"], total["workloads"],
        total["unmarked"], total["workloads"]))
    if floor is not None:
        failed = below_floor(total, floor)
        for line in failed:
            print("score.py: below the floor (%s): %s" % (args.floor, line), file=sys.stderr)
        if failed:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
