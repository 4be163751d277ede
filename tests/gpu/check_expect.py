#!/usr/bin/env python3
"""tests/gpu/check_expect.py: check a syncspy database against a workload's .expect file.

Used by tests/gpu/run.sh on the GPU machine after each reference workload (examples/) has run
under libsyncspy.so. Standard library only: that machine has python3 but no sqlite3 command and
nothing can be installed there.

    check_expect.py DATABASE_OR_DIRECTORY EXPECT_FILE [--summary]

A directory stands for the newest *.sqlite in it (a *.partial is never taken: it means the
process did not exit cleanly). Prints one table row per expectation and exits 0 when every
hard expectation holds, 1 when one does not, 2 when the database or the file cannot be used.

Format of an .expect file (examples/README.md has the same text for workload authors):

    # comment; blank lines are ignored; '#' after a line's last field starts a comment too
    [soft] SUBJECT [FILTER ...] [class=C[|C...]] count=N | count>=N | count<=N
    [soft] meta KEY=VALUE

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
  meta     meta table row KEY must exist and its value, as text, equal VALUE.
"""

import argparse
import glob
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
        self.api = None          # None for '*'
        self.filters = []        # (column, op, value)
        self.classes = None      # list of class names, or None
        self.count_op = None
        self.count_n = None
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
                raise ExpectError("meta lines are 'meta KEY=VALUE'")
            self.is_meta = True
            self.meta_key, self.meta_value = fields[1].split("=", 1)
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


def read_expect(path):
    expectations = []
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            text = raw.split("#", 1)[0].strip()
            if not text:
                continue
            try:
                expectations.append(Expectation(lineno, " ".join(text.split())))
            except ExpectError as e:
                raise ExpectError("%s:%d: %s" % (path, lineno, e)) from None
    if not expectations:
        raise ExpectError("%s: no expectations" % path)
    return expectations


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


def main(argv):
    ap = argparse.ArgumentParser(description="Check a syncspy database against an .expect file.")
    ap.add_argument("database", help="a syncspy *.sqlite, or a directory: its newest *.sqlite")
    ap.add_argument("expect", help="the workload's .expect file")
    ap.add_argument("--summary", action="store_true",
                    help="also print the meta table and row counts per api/class/host_mem/dir")
    args = ap.parse_args(argv)

    try:
        expectations = read_expect(args.expect)
        path = pick_database(args.database)
        if not os.path.isfile(path):
            raise FileNotFoundError("no such database: %s" % path)
        # Opened read-write on purpose: a read-only open of a WAL database fails where no -shm
        # file can be created; nothing here writes.
        db = sqlite3.connect(path)
        db.execute("SELECT count(*) FROM api_calls").fetchone()
    except (ExpectError, OSError, sqlite3.Error) as e:
        print("check_expect: %s" % e, file=sys.stderr)
        return 2

    print("database: %s" % path)
    print("expect:   %s" % args.expect)
    print("%-5s %-4s %-72s %-14s %s" % ("line", "ok", "expectation", "expected", "got"))
    hard_failures = soft_failures = 0
    for exp in expectations:
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
    print("result: %d expectations, %d failed, %d soft expectations not met" %
          (len(expectations), hard_failures, soft_failures))
    if args.summary:
        print_summary(db)
    db.close()
    return 1 if hard_failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
