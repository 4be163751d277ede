#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/test_check_findings.py: CPU self-test of check_expect.py's finding lines, sections
and gaps, with hand-made `syncspy report --format json` documents and no GPU.

For each numbered CUDA workload it builds the report a correct syncspy would give for the bad and
the fixed variant (from the rules of docs/rules.md) and checks that the .expect file accepts it,
then that altered reports (a finding missing, a count off by one, an unexpected finding) are
rejected, that static builds are held to the same findings, and that a file:line site is checked
against the `@site` marker. The API-count lines are skipped by giving no database: this test
is about findings (test_check_expect.py covers the rest).
Run from anywhere: python3 tests/gpu/test_check_findings.py
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # leave no __pycache__ in the tree
import check_expect  # noqa: E402

# What a correct report holds per (workload, variant): [(rule, count[, severity])], where the
# site text is the executable's module + offset, as today. Counts are the steady state's: the
# 20 iterations less the warm-up step (docs/rules.md, "Steady state"); the one sync after the
# loop is `info` (happened once), which the .expect files do not count.
FINAL = ("host-sync", 1, "info")
CORRECT = {
    "01_memcpy_in_loop": {"bad": [("sync-copy", 19)],
                          "fixed": [FINAL, ("copy-without-overlap", 18)]},
    "02_async_pageable": {"bad": [("pageable-async-copy", 19), FINAL],
                          "fixed": [FINAL]},
    # the host-side guess at the copy's line is cleared in favour of the GPU rule's finding
    "03_copy_compute_overlap": {"bad": [("copy-on-compute-stream", 19, "info"), FINAL,
                                        ("copy-without-overlap", 19)],
                                "fixed": [FINAL]},
    "04_stream_sync_vs_wait_event": {"bad": [("host-sync", 19), ("host-sync", 19), FINAL],
                                     "fixed": [FINAL]},
    "05_malloc_in_loop": {"bad": [("alloc-in-loop", 19), ("alloc-in-loop", 19), FINAL],
                          "fixed": [FINAL]},
    "06_legacy_stream": {"bad": [("legacy-stream", 19), FINAL],
                         "fixed": [FINAL]},
    "07_event_query_polling": {"bad": [("polling", 137)], "fixed": [("host-sync", 19)]},
}


def report(name, findings, site_fmt="{name}-shared+0x{off:x}"):
    return {"report_version": "2.0", "ranks": [], "notes": [], "findings": [
        {"rule": f[0], "count": f[1], "blocked_ns": 1000, "severity": (f[2:] or ("low",))[0],
         "rank": None, "site": site_fmt.format(name=name, off=0x2000 + 16 * i), "detail": "",
         "advice": ""}
        for i, f in enumerate(findings)]}


def check(tmp, name, variant, build, rep, want_rc, extra=""):
    expect = os.path.join(ROOT, "examples", "cuda", name + ".expect")
    # Only finding lines: strip the API-count and meta lines into a copy of the file.
    lines = []
    for raw in open(expect, encoding="utf-8"):
        text = raw.split("#", 1)[0].strip()
        words = text.replace("soft ", "", 1).split()
        if words and words[0] not in ("finding", "no-finding", "gap", "source") \
                and not text.startswith("["):
            continue
        lines.append(raw)
    lines.append(extra)
    stripped = os.path.join(tmp, name + ".expect")
    with open(stripped, "w", encoding="utf-8") as f:
        f.writelines(lines)
    args = [sys.executable, os.path.join(HERE, "check_expect.py"), os.path.join(tmp, "nodb"),
            stripped, "--variant", variant, "--build", build, "--row"]
    if rep is not None:
        path = os.path.join(tmp, "report.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(rep, f)
        args += ["--report", path]
    p = subprocess.run(args, capture_output=True, text=True)
    ok = p.returncode == want_rc
    print("%-4s %-30s %-6s %-7s exit %d (want %d)" % ("ok" if ok else "FAIL", name, variant,
                                                     build, p.returncode, want_rc))
    if not ok:
        print(p.stdout, p.stderr)
    return ok


def main():
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for name, variants in CORRECT.items():
            for variant, findings in variants.items():
                ok &= check(tmp, name, variant, "shared", report(name, findings), 0)
                # static cudart: the same findings (its calls carry driver names, which the
                # API lines of the [... static] sections check; no database here)
                ok &= check(tmp, name, variant, "static", report(name, findings), 0)
                # the first finding's count far below what the loop makes (counts are lower
                # bounds: the steady state's); a final read's count changes nothing (`info`)
                changed = [(f[0], 2 if i == 0 else f[1]) + f[2:] for i, f in enumerate(findings)]
                want = 0 if findings[0][2:] == ("info",) else 1
                ok &= check(tmp, name, variant, "shared", report(name, changed), want)
                # the final read reported above `info`: a finding the fixed variants forbid
                if FINAL in findings and variant == "fixed":
                    loud = [f[:2] if f == FINAL else f for f in findings]
                    ok &= check(tmp, name, variant, "shared", report(name, loud), 1)
                # a finding the variant must not have
                extra = findings + [("memset-pinned", 3)]
                ok &= check(tmp, name, variant, "shared", report(name, extra), 1)
            # the bad variant's report given for the fixed variant
            ok &= check(tmp, name, "fixed", "shared", report(name, variants["bad"]), 1)
        # a static build with a finding short: fails like a shared one
        ok &= check(tmp, "01_memcpy_in_loop", "bad", "static",
                    report("01_memcpy_in_loop", [("sync-copy", 10)]), 1)
        # a gap line: a build known not to hold yet is XFAIL (exit 3) when its expectations
        # fail, XPASS (exit 0) when they hold
        gap = "\n[static]\ngap static cudart: not seen yet (a test of the gap line)\n"
        ok &= check(tmp, "01_memcpy_in_loop", "bad", "static",
                    report("01_memcpy_in_loop", [("sync-copy", 10)]), 3, gap)
        ok &= check(tmp, "01_memcpy_in_loop", "bad", "static",
                    report("01_memcpy_in_loop", [("sync-copy", 19)]), 0, gap)
        # file:line sites: the @site marker's line passes, another line fails
        line = check_expect.resolve_tag(
            os.path.join(ROOT, "examples", "cuda", "01_memcpy_in_loop.cu"), "memcpy")
        at = "main (01_memcpy_in_loop.cu:%d)"
        ok &= check(tmp, "01_memcpy_in_loop", "bad", "shared",
                    report("01_memcpy_in_loop", [("sync-copy", 19)], at % line), 0)
        ok &= check(tmp, "01_memcpy_in_loop", "bad", "shared",
                    report("01_memcpy_in_loop", [("sync-copy", 19)], at % (line + 9)), 1)
    print("test_check_findings: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
