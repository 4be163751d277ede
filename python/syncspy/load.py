# SPDX-License-Identifier: MIT
"""syncspy.load: a recording as tables for notebooks (docs/python.md, "Loading a recording").

load(DIR_OR_DB) returns a Recording whose tables are pandas DataFrames when pandas is installed,
plain lists of dicts otherwise:

    calls     every recorded call, the database's api_calls view (docs/schema.md), with the
              database's rank and path
    gpu       the GPU timeline's gpu_activity rows (docs/cupti.md), where CUPTI recorded them;
              not those of work CUPTI handed over unfinished (start_ns 0: no time)
    aggregates  a recording in aggregate mode's enqueue_aggregates rows (docs/schema.md), with
              the API's name and the site's text: its enqueues, which are not calls rows there
    findings  `syncspy report --format json`'s findings (docs/report-json.md)
    steps     each rank's repeating step and per-step figures (report JSON, ranks[].steps)
    ranks     each rank's totals (report JSON, ranks[], without its steps and calls)
    ranges    sync points per NVTX range or step (report JSON, ranges[])

The rows are read with Python's sqlite3 on read-only connections; the findings and the figures
are the command's own (the package's `syncspy report`), not computed again here.
"""
import glob
import json
import os
import sqlite3
import subprocess
import urllib.parse

from . import _native


def databases(path):
    """The databases PATH names: a file, or a directory's *.sqlite files (sorted)."""
    if os.path.isdir(path):
        found = sorted(glob.glob(os.path.join(path, "*.sqlite")))
        if not found:
            raise ValueError("syncspy.load: %s: no syncspy database (*.sqlite) in it" % path)
        return found
    if not os.path.exists(path):
        raise ValueError("syncspy.load: %s: no such file or directory" % path)
    return [path]


def _rows(connection, sql):
    cursor = connection.execute(sql)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def _read(path):
    uri = "file:%s?mode=ro" % urllib.parse.quote(os.path.abspath(path))
    connection = sqlite3.connect(uri, uri=True)
    try:
        meta = dict(connection.execute("SELECT key, value FROM meta"))
        tables = {name for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        extra = {"rank": int(meta["rank"]) if meta.get("rank") is not None else None,
                 "database": path}
        calls = [dict(row, **extra) for row in
                 _rows(connection, "SELECT * FROM api_calls ORDER BY start_ns, id")]
        gpu = []
        if "gpu_activity" in tables:
            gpu = [dict(row, **extra) for row in
                   _rows(connection, "SELECT * FROM gpu_activity"
                                 " WHERE start_ns IS NULL OR start_ns > 0 ORDER BY start_ns")]
        aggregates = []
        if meta.get("mode") == "aggregate" and "enqueue_aggregates" in tables:
            aggregates = [dict(row, **extra) for row in _rows(
                connection, "SELECT g.*, a.name AS api, s.text AS site FROM enqueue_aggregates g"
                " JOIN apis a ON a.id = g.api_id LEFT JOIN sites s ON s.id = g.site_id"
                " ORDER BY g.id")]
        return calls, gpu, aggregates
    except sqlite3.DatabaseError as error:
        raise ValueError("syncspy.load: %s: not a syncspy database (%s)" % (path, error))
    finally:
        connection.close()


def _report(paths):
    result = subprocess.run([_native.command(), "report", "--format", "json"] + paths,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, check=False)
    if result.returncode != 0:
        raise ValueError(result.stderr.strip() or "syncspy report exited %d" % result.returncode)
    return json.loads(result.stdout)


class Recording:
    """What load() read: the tables below, DataFrames or lists of dicts."""

    TABLES = ("calls", "gpu", "aggregates", "findings", "steps", "ranks", "ranges")

    def __init__(self, paths, tables, report):
        self.databases = paths
        self.report = report  # the report's JSON document, as the command wrote it
        for name in self.TABLES:
            setattr(self, name, tables[name])

    def __repr__(self):
        sizes = ", ".join("%s=%d" % (name, len(getattr(self, name))) for name in self.TABLES)
        return "<syncspy.Recording of %d database(s): %s>" % (len(self.databases), sizes)


def load(path, pandas=None):
    """The recording at PATH (a database or a directory of them). pandas: None to use it when
    it is installed, False for lists of dicts, True to require it."""
    paths = databases(os.fspath(path))
    calls, gpu, aggregates = [], [], []
    for database in paths:
        database_calls, database_gpu, database_aggregates = _read(database)
        calls += database_calls
        gpu += database_gpu
        aggregates += database_aggregates
    report = _report(paths)
    steps = [dict(rank["steps"], rank=rank["rank"], database=rank["path"])
             for rank in report["ranks"]]
    ranks = [{key: value for key, value in rank.items() if key not in ("steps", "calls")}
             for rank in report["ranks"]]
    tables = {"calls": calls, "gpu": gpu, "aggregates": aggregates,
              "findings": report["findings"], "steps": steps,
              "ranks": ranks, "ranges": report["ranges"]}
    frames = None
    if pandas is not False:
        try:
            import pandas as frames
        except ImportError:
            if pandas:
                raise
    if frames is not None:
        tables = {name: frames.DataFrame(rows) for name, rows in tables.items()}
    return Recording(paths, tables, report)
