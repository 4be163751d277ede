#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/check_expect.py: check a syncspy database against a workload's .expect file.

Used by tests/gpu/run.sh on the GPU machine after each reference workload (examples/) has run
under libsyncspy.so. Standard library only: that machine has python3 but no sqlite3 command and
nothing can be installed there.

    check_expect.py DATABASE_OR_DIRECTORY EXPECT_FILE [--summary] [--variant V] [--build B]
                    [--report REPORT_JSON] [--row]

A directory stands for the newest *.sqlite in it (a *.partial is never taken: it means the
process did not exit cleanly). Prints one table row per expectation and exits 0 when every
hard expectation holds, 1 when one does not, 2 when the database or the file cannot be used,
3 when they fail but a `gap` line says they are expected to (XFAIL).

Format of an .expect file (examples/README.md has the same text for workload authors):

    # comment; blank lines are ignored; '#' after a line's last field starts a comment too
    [soft] SUBJECT [FILTER ...] [class=C[|C...]] count=N | count>=N | count<=N
    [soft] meta KEY=VALUE | meta KEY>=N

  SUBJECT  an API name exactly as recorded in api_calls.api (e.g. cudaMemcpyAsync,
           __cudaLaunchKernel), or * for rows of any API.
  FILTER   COLUMN=VALUE or COLUMN!=VALUE on a column of the api_calls view (stream, host_mem,
           dir, layer, bytes, ret, event, comm, tid, site, aux). VALUE NULL means SQL NULL;
           a VALUE made of digits is compared as an integer. COLUMN!=VALUE also keeps rows
           where COLUMN is NULL (it reads "is not VALUE").
  class=   for a named API, an assertion: every selected row must have one of these classes
           (rows with another class are a mismatch, reported with their classes). For *, a
           filter: only rows of these classes are counted.
  count    how many rows are selected (one row is one call, except class S7 where a row is one
           polling loop: schema.h SCHEMA-5). =N is exact, >=N and <=N are bounds.
  soft     the line is reported but cannot fail the check: for expectations that depend on
           the library under test more than on syncspy (e.g. torch internals), kept visible so
           that a change shows up in the log.
  meta     meta table row KEY must exist and its value, as text, equal VALUE; with >=N, its
           value, as an integer, be N or more (schema_version>=2: a database of schema 2 or
           of a later one, which the readers read as well).

Findings of `syncspy report --format json` (docs/report-json.md), given with --report:

    [soft] finding RULE [site~TEXT] [at=TAG] count=N | count>=N | count<=N
    [soft] no-finding RULE [site~TEXT]
    gap REASON
    source FILE

  finding     the findings of rule RULE (docs/rules.md) whose site contains TEXT; their counts
              are summed (one finding per call site: a loop with two flagged calls gives two).
  no-finding  no finding of RULE (with site~TEXT: none at such a site).
  at=TAG      the source line this finding is about: the line of FILE (the last `source` line
              above) that carries the marker `@site TAG`. Checked only once sites carry
              file:line (then the site must name FILE's base name and that line or one of the
              next two, where a call spans lines); until then the table says "line unchecked".
  gap         the selected expectations are known not to hold yet (e.g. a static cudart that
              the shim does not see): failures are reported as XFAIL (exit 3), success as
              XPASS (exit 0: time to remove the gap line). A missing database is then XFAIL too.

Sections: a line `[TAG ...]` starts a section whose lines apply only when every TAG is the
--variant or the --build (default build: shared); lines before the first section apply always.
E.g. `[bad]`, `[fixed]`, `[static]`, `[bad static]`.

--row prints one more line, `row<TAB>expected<TAB>got<TAB>STATUS`, for tests/gpu/run.sh's table.
"""

import argparse
import glob
import json
import os
import re
import sqlite3
import sys

# Columns of the api_calls view (include/syncspy/schema.h) that a FILTER may name. class and
# count are not among them: class= has its own meaning above, and count is the row count.
FILTER_COLUMNS = ("api", "stream", "host_mem", "dir", "layer", "bytes", "ret", "event", "comm",
                  "tid", "site", "aux", "id")

COUNT_RE = re.compile(r"^count(=|>=|<=)(\d+)$")
FILTER_RE = re.compile(r"^([a-z_]+)(!=|=)(.*)$")


class ExpectError(Exception):
    """An .expect line that cannot be understood."""


class Expectation:
    """One line of an .expect file, parsed."""

    def __init__(self, lineno, text):
        self.lineno = lineno
        self.text = text
        self.soft = False
        self.is_meta = False
        self.meta_key = None
        self.meta_value = None
        self.meta_at_least = None  # meta KEY>=N
        self.api = None          # None for '*'
        self.filters = []        # (column, op, value)
        self.classes = None      # list of class names, or None
        self.count_op = None
        self.count_n = None
        self.finding_rule = None  # finding / no-finding lines
        self.no_finding = False
        self.site_text = None
        self.at_tag = None
        self.at_line = None       # (file, line) once resolved from `source`
        self._parse()

    def _parse(self):
        fields = self.text.split()
        if fields and fields[0] == "soft":
            self.soft = True
            fields = fields[1:]
        if not fields:
            raise ExpectError("empty expectation")
        if fields[0] == "meta":
            if len(fields) != 2 or "=" not in fields[1]:
                raise ExpectError("meta lines are 'meta KEY=VALUE' or 'meta KEY>=N'")
            self.is_meta = True
            if ">=" in fields[1]:
                self.meta_key, value = fields[1].split(">=", 1)
                if not value.isdigit():
                    raise ExpectError("meta KEY>=N needs a number, not %r" % value)
                self.meta_at_least = int(value)
                self.meta_value = ">=" + value
            else:
                self.meta_key, self.meta_value = fields[1].split("=", 1)
            return
        if fields[0] in ("finding", "no-finding"):
            self._parse_finding(fields)
            return
        subject, rest = fields[0], fields[1:]
        if "=" in subject:
            raise ExpectError("first field must be an API name or *, not a filter")
        self.api = None if subject == "*" else subject
        for field in rest:
            m = COUNT_RE.match(field)
            if m:
                if self.count_op is not None:
                    raise ExpectError("two count fields")
                self.count_op, self.count_n = m.group(1), int(m.group(2))
                continue
            if field.startswith("class="):
                self.classes = [c for c in field[len("class="):].split("|") if c]
                if not self.classes:
                    raise ExpectError("class= needs at least one class")
                continue
            m = FILTER_RE.match(field)
            if not m:
                raise ExpectError("cannot read field %r" % field)
            column, op, value = m.groups()
            if column not in FILTER_COLUMNS:
                raise ExpectError("unknown column %r (known: %s)" %
                                  (column, ", ".join(FILTER_COLUMNS)))
            self.filters.append((column, op, value))
        if self.count_op is None:
            raise ExpectError("missing count=N, count>=N or count<=N")

    def _parse_finding(self, fields):
        self.no_finding = fields[0] == "no-finding"
        if len(fields) < 2 or "=" in fields[1] or "~" in fields[1]:
            raise ExpectError("%s needs a rule id" % fields[0])
        self.finding_rule = fields[1]
        for field in fields[2:]:
            m = COUNT_RE.match(field)
            if m and not self.no_finding:
                self.count_op, self.count_n = m.group(1), int(m.group(2))
            elif field.startswith("site~") and len(field) > 5:
                self.site_text = field[5:]
            elif field.startswith("at=") and len(field) > 3 and not self.no_finding:
                self.at_tag = field[3:]
            else:
                raise ExpectError("cannot read field %r of a %s line" % (field, fields[0]))
        if self.no_finding:
            self.count_op, self.count_n = "=", 0
        elif self.count_op is None:
            raise ExpectError("missing count=N, count>=N or count<=N")

    def describe_count(self):
        return "%s%d" % ({"=": "", ">=": ">=", "<=": "<="}[self.count_op], self.count_n)

    def count_holds(self, n):
        if self.count_op == "=":
            return n == self.count_n
        if self.count_op == ">=":
            return n >= self.count_n
        return n <= self.count_n


def sql_value(text):
    """An .expect VALUE as the Python value to bind: digits compare as integers."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return text


def selection_sql(exp, with_class_filter):
    """WHERE clause and parameters selecting the rows an expectation is about."""
    where, params = [], []
    if exp.api is not None:
        where.append("api = ?")
        params.append(exp.api)
    for column, op, value in exp.filters:
        if value == "NULL":
            where.append("%s IS %sNULL" % (column, "NOT " if op == "!=" else ""))
        elif op == "=":
            where.append("%s = ?" % column)
            params.append(sql_value(value))
        else:
            where.append("(%s IS NULL OR %s != ?)" % (column, column))
            params.append(sql_value(value))
    if with_class_filter and exp.classes:
        where.append("class IN (%s)" % ",".join("?" * len(exp.classes)))
        params.extend(exp.classes)
    return (" WHERE " + " AND ".join(where)) if where else "", params


def evaluate(db, exp):
    """Return (passed, expected_text, got_text) for one expectation."""
    if exp.is_meta:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (exp.meta_key,)).fetchone()
        got = "(missing)" if row is None else str(row[0])
        if exp.meta_at_least is not None:
            ok = row is not None and got.isdigit() and int(got) >= exp.meta_at_least
            return ok, exp.meta_value, got
        return row is not None and got == exp.meta_value, exp.meta_value, got

    if exp.api is None:
        # '*': class= is a filter; only the count is checked.
        where, params = selection_sql(exp, with_class_filter=True)
        n = db.execute("SELECT count(*) FROM api_calls" + where, params).fetchone()[0]
        return exp.count_holds(n), exp.describe_count(), str(n)

    # Named API: count every selected row, and every one must have an expected class.
    where, params = selection_sql(exp, with_class_filter=False)
    by_class = db.execute("SELECT class, count(*) FROM api_calls" + where +
                          " GROUP BY class ORDER BY class", params).fetchall()
    n = sum(c for _, c in by_class)
    wrong = [(cls, c) for cls, c in by_class if exp.classes and cls not in exp.classes]
    expected = exp.describe_count()
    if exp.classes:
        expected += " " + "|".join(exp.classes)
    got = str(n)
    if by_class:
        got += " " + ",".join("%s:%d" % (cls, c) for cls, c in by_class)
    return exp.count_holds(n) and not wrong, expected, got


SITE_LINE_RE = re.compile(r"([^\s():]+):(\d+)")


def evaluate_finding(report, exp):
    """Return (passed, expected_text, got_text) for a finding / no-finding line."""
    # `info` findings are what happened once (setup, warm-up, teardown: docs/rules.md, "Steady
    # state"): not a problem the workload has, so neither a finding nor a no-finding counts them.
    selected = [f for f in report.get("findings", [])
                if f.get("rule") == exp.finding_rule and f.get("severity") != "info"
                and (exp.site_text is None or exp.site_text in (f.get("site") or ""))]
    if exp.at_line is not None and any(SITE_LINE_RE.search(f.get("site") or "")
                                       for f in selected):
        # Sites carry file:line: count only the findings at the marked line (or the next two,
        # where a call spans lines); a finding elsewhere is another site's business.
        src_file, line = exp.at_line
        base = os.path.basename(src_file)
        selected = [f for f in selected
                    if any(os.path.basename(m.group(1)) == base
                           and line <= int(m.group(2)) <= line + 2
                           for m in SITE_LINE_RE.finditer(f.get("site") or ""))]
        if not selected:
            return False, exp.describe_count(), "no finding at %s:%d" % (base, line)
    n = sum(int(f.get("count") or 0) for f in selected)
    if exp.no_finding:
        got = "none" if not selected else "%d finding(s), count %d" % (len(selected), n)
        return not selected, "none", got
    passed = exp.count_holds(n)
    got = "%d (%d site%s)" % (n, len(selected), "" if len(selected) == 1 else "s")
    if exp.at_line is not None:
        src_file, line = exp.at_line
        base = os.path.basename(src_file)
        located = [m for f in selected for m in SITE_LINE_RE.finditer(f.get("site") or "")]
        if not located:
            got += ", line unchecked (sites have no file:line yet)"
        elif any(os.path.basename(m.group(1)) == base and line <= int(m.group(2)) <= line + 2
                 for m in located):
            got += ", at %s:%d" % (base, line)
        else:
            passed = False
            got += ", not at %s:%d" % (base, line)
    return passed, exp.describe_count(), got


def resolve_tag(source, tag):
    """The 1-based line of SOURCE that carries the marker `@site TAG`."""
    marker = re.compile(r"@site\s+%s\b" % re.escape(tag))
    with open(source, encoding="utf-8") as f:
        for lineno, text in enumerate(f, 1):
            if marker.search(text):
                return lineno
    raise ExpectError("%s: no line carries '@site %s'" % (source, tag))


def read_expect(path, variant=None, build="shared"):
    """The expectations that apply to (variant, build), and the gap reasons among them."""
    expectations, gaps = [], []
    active = True
    source = None
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tags = {t for t in (variant, build) if t}
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            text = raw.split("#", 1)[0].strip()
            if not text:
                continue
            try:
                if text.startswith("["):
                    if not text.endswith("]") or not text[1:-1].split():
                        raise ExpectError("a section header is [TAG ...]")
                    active = set(text[1:-1].split()) <= tags
                    continue
                words = text.split(None, 1)
                if words[0] == "source":
                    if len(words) != 2:
                        raise ExpectError("source needs a file")
                    source = words[1]
                    if not os.path.isabs(source):
                        source = os.path.join(root, source)
                    continue
                if words[0] == "gap":
                    if len(words) != 2:
                        raise ExpectError("gap needs a reason")
                    if active:
                        gaps.append(words[1])
                    continue
                exp = Expectation(lineno, " ".join(text.split()))
                if exp.at_tag is not None:
                    if source is None:
                        raise ExpectError("at= needs a 'source FILE' line above it")
                    exp.at_line = (source, resolve_tag(source, exp.at_tag))
            except (ExpectError, OSError) as e:
                raise ExpectError("%s:%d: %s" % (path, lineno, e)) from None
            if active:
                expectations.append(exp)
    if not expectations and not gaps:
        raise ExpectError("%s: no expectations%s" % (
            path, " for variant %s, build %s" % (variant, build) if variant else ""))
    return expectations, gaps


def pick_database(path):
    """The database itself, or the newest finished *.sqlite in a directory."""
    if not os.path.isdir(path):
        return path
    found = [p for p in glob.glob(os.path.join(path, "*.sqlite")) if os.path.isfile(p)]
    if not found:
        partial = glob.glob(os.path.join(path, "*.partial"))
        hint = " (only unfinished: %s)" % ", ".join(sorted(partial)) if partial else ""
        raise FileNotFoundError("no *.sqlite in %s%s" % (path, hint))
    return max(found, key=os.path.getmtime)


def print_summary(db):
    """What the database holds, to write or correct an .expect file from."""
    print("\nmeta:")
    for key, value in db.execute("SELECT key, value FROM meta ORDER BY key"):
        print("  %-24s %s" % (key, value))
    print("\nrows by api, class, host_mem, dir (api_calls):")
    print("  %-36s %-5s %-9s %-6s %8s" % ("api", "class", "host_mem", "dir", "rows"))
    for api, cls, mem, dr, n in db.execute(
            "SELECT api, class, host_mem, dir, count(*) FROM api_calls"
            " GROUP BY api, class, host_mem, dir ORDER BY class, api, host_mem, dir"):
        print("  %-36s %-5s %-9s %-6s %8d" % (api, cls, mem or "-", dr or "-", n))


def short(exp):
    """An expectation in a few characters, for the one-line table of run.sh."""
    if exp.finding_rule is None:
        return None
    if exp.no_finding:
        return "!" + exp.finding_rule
    return "%s%s%d" % (exp.finding_rule, {"=": "=", ">=": ">=", "<=": "<="}[exp.count_op],
                       exp.count_n)


def main(argv):
    ap = argparse.ArgumentParser(description="Check a syncspy database against an .expect file.")
    ap.add_argument("database", help="a syncspy *.sqlite, or a directory: its newest *.sqlite")
    ap.add_argument("expect", help="the workload's .expect file")
    ap.add_argument("--summary", action="store_true",
                    help="also print the meta table and row counts per api/class/host_mem/dir")
    ap.add_argument("--variant", help="the section of the .expect file to apply (bad, fixed)")
    ap.add_argument("--build", default="shared", help="the build, a section tag too (shared, "
                    "static); default shared")
    ap.add_argument("--report", help="`syncspy report --format json` output, for finding lines")
    ap.add_argument("--row", action="store_true",
                    help="end with one tab-separated line: row, expected, got, status")
    args = ap.parse_args(argv)

    try:
        expectations, gaps = read_expect(args.expect, args.variant, args.build)
    except (ExpectError, OSError) as e:
        print("check_expect: %s" % e, file=sys.stderr)
        return 2
    wanted = [short(e) for e in expectations if short(e) and not e.soft]
    # The table column: the findings wanted, then how many rules must find nothing.
    nones = sum(1 for w in wanted if w.startswith("!"))
    wanted = [w for w in wanted if not w.startswith("!")] + (["none of %d others" % nones]
                                                            if nones else [])
    need_db = any(e.finding_rule is None for e in expectations)
    need_report = len(wanted) > 0

    def unusable(message):
        # With a gap, a missing database or report is the expected failure itself.
        if gaps:
            print("check_expect: %s" % message)
            print("result: XFAIL (%s)" % "; ".join(gaps))
            if args.row:
                print("row\t%s\t%s\tXFAIL" % (" ".join(wanted) or "-", message))
            return 3
        print("check_expect: %s" % message, file=sys.stderr)
        if args.row:
            print("row\t%s\t%s\tFAIL" % (" ".join(wanted) or "-", message))
        return 2

    db = None
    report = None
    try:
        if need_db:
            path = pick_database(args.database)
            if not os.path.isfile(path):
                raise FileNotFoundError("no such database: %s" % path)
            # Opened read-write on purpose: a read-only open of a WAL database fails where no
            # -shm file can be created; nothing here writes.
            db = sqlite3.connect(path)
            db.execute("SELECT count(*) FROM api_calls").fetchone()
            print("database: %s" % path)
        if need_report:
            if not args.report:
                return unusable("finding lines need --report REPORT_JSON")
            with open(args.report, encoding="utf-8") as f:
                report = json.load(f)
            if not isinstance(report, dict) or not isinstance(report.get("findings"), list):
                raise ValueError("%s: not a syncspy JSON report" % args.report)
            print("report:   %s" % args.report)
    except (OSError, sqlite3.Error, ValueError) as e:
        return unusable(str(e))

    print("expect:   %s%s" % (args.expect, " (variant %s, build %s)" % (args.variant, args.build)
                              if args.variant else ""))
    for gap in gaps:
        print("gap:      %s" % gap)
    print("%-5s %-4s %-72s %-14s %s" % ("line", "ok", "expectation", "expected", "got"))
    hard_failures = soft_failures = 0
    got_short = []
    for exp in expectations:
        if exp.finding_rule is not None:
            passed, expected, got = evaluate_finding(report, exp)
            if not exp.soft:
                if exp.no_finding:
                    if not passed:
                        got_short.append("*%s:%s" % (exp.finding_rule, got.split(", count ")[-1]))
                else:
                    got_short.append("%s%s=%s" % ("" if passed else "*", exp.finding_rule,
                                                  got.split(" ", 1)[0]))
        else:
            passed, expected, got = evaluate(db, exp)
        if passed:
            status = "ok"
        elif exp.soft:
            status = "soft"
            soft_failures += 1
        else:
            status = "FAIL"
            hard_failures += 1
        print("%-5d %-4s %-72s %-14s %s" % (exp.lineno, status, exp.text, expected, got))
    if gaps:
        verdict = "XFAIL" if hard_failures else "XPASS"
    else:
        verdict = "FAIL" if hard_failures else "PASS"
    print("result: %d expectations, %d failed, %d soft expectations not met: %s" %
          (len(expectations), hard_failures, soft_failures, verdict))
    if args.summary and db is not None:
        print_summary(db)
    if db is not None:
        db.close()
    if args.row:
        # got: each wanted finding's count, '*' marking a miss; unexpected findings as *RULE:N.
        print("row\t%s\t%s\t%s" % (" ".join(wanted) or "-", " ".join(got_short) or "-",
                                   verdict))
    if verdict == "XFAIL":
        return 3
    return 1 if verdict == "FAIL" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
