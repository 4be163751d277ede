#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/test_check_expect.py: CPU self-test of check_expect.py, needing no GPU.

Builds SQLite databases with the CREATE statements of include/syncspy/schema.h (read from the
header, so a schema change is picked up), fills them by hand with the rows a correct shim would
record for examples/cuda/copies_syncs.cu, and checks that check_expect.py accepts that database
and rejects altered copies of it (a lost sync, a wrong class, a wrong host memory kind, an
unfinished .partial only). Run from anywhere: python3 tests/gpu/test_check_expect.py
"""

import os
import re
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CHECKER = os.path.join(HERE, "check_expect.py")
SCHEMA_H = os.path.join(ROOT, "include", "syncspy", "schema.h")
MODEL_H = os.path.join(ROOT, "include", "syncspy", "model.h")
COPIES_EXPECT = os.path.join(ROOT, "examples", "cuda", "copies_syncs.expect")

STREAM_A, STREAM_B, EVENT = 0x5555aaaa0010, 0x5555aaaa0020, 0x5555aaaa0030
MIB4 = 4 << 20


def schema_sql():
    """The SS_SCHEMA_SQL macro's text: its C string literals joined, escapes undone."""
    text = open(SCHEMA_H, encoding="utf-8").read()
    body = text.split("#define SS_SCHEMA_SQL", 1)[1].split("\n\n", 1)[0]
    literals = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    return "".join(literals).replace("\\n", "\n").replace('\\"', '"')


def model_ids(macro):
    """(id, name) pairs of an X-macro table in model.h such as SS_MEMKINDS or SS_DIRS."""
    text = open(MODEL_H, encoding="utf-8").read()
    body = text.split("#define " + macro, 1)[1].split("\n\n", 1)[0]
    return [(int(i), s) for i, s in re.findall(r'X\((\d+),\s*\w+,\s*"([^"]+)"\)', body)]


class FakeDatabase:
    """A database filled the way the shim's writer would fill it, one call at a time."""

    def __init__(self, path, schema=2):
        self.db = sqlite3.connect(path)
        self.db.executescript(schema_sql())
        self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (schema,))
        for table, macro in (("memkinds", "SS_MEMKINDS"), ("dirs", "SS_DIRS")):
            self.db.executemany("INSERT INTO %s VALUES (?, ?)" % table, model_ids(macro))
        self.mem = {name: i for i, name in model_ids("SS_MEMKINDS")}
        self.dirs = {name: i for i, name in model_ids("SS_DIRS")}
        self.api_ids = {}
        self.clock = 1000

    def call(self, api, cls, stream=None, event=None, nbytes=None, direction=None, mem=None,
             ret=0, layer="runtime"):
        if api not in self.api_ids:
            self.api_ids[api] = len(self.api_ids) + 1
            self.db.execute("INSERT INTO apis VALUES (?, ?, ?, ?)",
                            (self.api_ids[api], api, layer, cls))
        self.clock += 100
        self.db.execute(
            "INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, event, bytes, dir,"
            " host_mem, ret) VALUES (4242, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (self.api_ids[api], cls, self.clock, self.clock + 50, stream, event, nbytes,
             self.dirs.get(direction), self.mem.get(mem), ret))

    def close(self):
        self.db.commit()
        self.db.close()


def record_copies_syncs(fake, skip=None, change=None):
    """The calls copies_syncs.cu makes, as a correct shim records them.

    skip: (api, n) leaves out the n-th call of api; change: (api, n, field, value) alters one.
    """
    seen = {}

    def call(api, cls, **kw):
        seen[api] = seen.get(api, 0) + 1
        if skip == (api, seen[api]):
            return
        if change and change[:2] == (api, seen[api]):
            if change[2] == "class":
                cls = change[3]
            else:
                kw[change[2]] = change[3]
        fake.call(api, cls, **kw)

    call("cudaHostAlloc", "S6")
    for _ in range(3):
        call("cudaMalloc", "S6")
    call("cudaStreamCreate", "X1")
    call("cudaStreamCreate", "X1")
    call("cudaEventCreate", "X1")
    for _ in range(20):
        call("cudaMemcpyAsync", "S5", stream=STREAM_A, nbytes=MIB4, direction="H2D",
             mem="pageable")
        call("cudaMemcpyAsync", "E1", stream=STREAM_A, nbytes=MIB4, direction="H2D",
             mem="pinned")
        call("__cudaLaunchKernel", "E1", stream=STREAM_A)
        call("cudaEventRecord", "E2", stream=STREAM_A, event=EVENT)
        call("cudaStreamWaitEvent", "E3", stream=STREAM_B, event=EVENT)
        call("__cudaLaunchKernel", "E1", stream=STREAM_B)
        call("cudaStreamSynchronize", "S2", stream=STREAM_B)
        call("cudaEventSynchronize", "S3", event=EVENT)
        call("cudaMemcpy", "S4", stream=1, nbytes=MIB4, direction="D2H", mem="pageable")
    call("cudaDeviceSynchronize", "S1")
    call("cudaEventDestroy", "X1", event=EVENT)
    call("cudaStreamDestroy", "X1", stream=STREAM_B)
    call("cudaStreamDestroy", "X1", stream=STREAM_A)
    for _ in range(3):
        call("cudaFree", "S6")
    call("cudaFreeHost", "S6")
    # Calls the .expect does not name must not disturb it.
    call("cudaGetLastError", "X1")


def run_checker(target, expect):
    p = subprocess.run([sys.executable, CHECKER, target, expect, "--summary"],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    cases = [
        # (name, how to alter the recording, expected exit status)
        ("correct recording", {}, 0),
        ("one stream sync lost", {"skip": ("cudaStreamSynchronize", 7)}, 1),
        ("pinned copy classed S5", {"change": ("cudaMemcpyAsync", 4, "class", "S5")}, 1),
        ("pageable copy seen as pinned",
         {"change": ("cudaMemcpyAsync", 1, "mem", "pinned")}, 1),
        ("launch without stream", {"change": ("__cudaLaunchKernel", 3, "stream", None)}, 1),
        ("a failed call", {"change": ("cudaFree", 2, "ret", 700)}, 1),
        ("extra driver-layer row (soft only)", {"extra_driver": True}, 0),
        ("a later schema (schema_version>=2)", {"schema": 4}, 0),
        ("an older schema", {"schema": 1}, 1),
    ]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, how, want) in enumerate(cases):
            path = os.path.join(tmp, "case%d.sqlite" % i)
            fake = FakeDatabase(path, schema=how.get("schema", 2))
            record_copies_syncs(fake, skip=how.get("skip"), change=how.get("change"))
            if how.get("extra_driver"):
                fake.call("cuStreamSynchronize", "S2", stream=STREAM_B, layer="driver")
            fake.close()
            got, out = run_checker(path, COPIES_EXPECT)
            ok = got == want
            failures += not ok
            print("%-4s %-40s exit %d (want %d)" % ("ok" if ok else "FAIL", name, got, want))
            if not ok or os.environ.get("VERBOSE"):
                print(out)

        # A directory: the newest finished database is taken; a .partial alone is refused.
        dbdir = os.path.join(tmp, "dir")
        os.mkdir(dbdir)
        open(os.path.join(dbdir, "syncspy-h-1.sqlite.partial"), "w").close()
        got, out = run_checker(dbdir, COPIES_EXPECT)
        ok = got == 2 and "only unfinished" in out
        failures += not ok
        print("%-4s %-40s exit %d (want 2)" % ("ok" if ok else "FAIL", "only a .partial", got))
        fake = FakeDatabase(os.path.join(dbdir, "syncspy-h-2.sqlite"))
        record_copies_syncs(fake)
        fake.close()
        got, out = run_checker(dbdir, COPIES_EXPECT)
        ok = got == 0 and "syncspy-h-2.sqlite" in out
        failures += not ok
        print("%-4s %-40s exit %d (want 0)" % ("ok" if ok else "FAIL", "directory", got))

        # A malformed .expect is a usage error, not a pass.
        bad = os.path.join(tmp, "bad.expect")
        with open(bad, "w") as f:
            f.write("cudaMalloc class=S6\n")
        got, out = run_checker(path, bad)
        ok = got == 2 and "missing count" in out
        failures += not ok
        print("%-4s %-40s exit %d (want 2)" % ("ok" if ok else "FAIL", "malformed .expect", got))

    print("test_check_expect: %s" % ("PASS" if not failures else "%d FAILED" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
