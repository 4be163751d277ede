# SPDX-License-Identifier: MIT
"""tests/progs/py_load.py: syncspy.load (t904). Prints what load() returned for PATH: the types
of its tables, their sizes, and a few fields, so that the test compares them with what sqlite3
and `syncspy report --format json` say of the same databases. argv: PATH [pandas|lists]."""
import sys

import syncspy

path, mode = sys.argv[1], sys.argv[2]
recording = syncspy.load(path, pandas=(mode == "pandas") or None)
for name in recording.TABLES:
    table = getattr(recording, name)
    print("%s: %s %d" % (name, type(table).__module__.split(".")[0] + "." + type(table).__name__,
                         len(table)))
rows = recording.findings.to_dict("records") if mode == "pandas" else recording.findings
print("rules:", " ".join(sorted({row["rule"] for row in rows})))
steps = recording.steps.to_dict("records") if mode == "pandas" else recording.steps
print("steps:", " ".join("%s/%s" % (row["source"], row["count"]) for row in steps))
calls = recording.calls.to_dict("records") if mode == "pandas" else recording.calls
print("sync points:", sum(row["count"] for row in calls if row["class"].startswith("S")))
print("first call:", calls[0]["api"], calls[0]["database"] == recording.databases[0])
print(recording)
