#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/sample_figures.py: the figures a sampled GPU timeline must keep (issue 17 item 1).

From one `syncspy report --format json` (a file, or a dict when imported), per steady step, in ns:
  rank-gpu-idle-per-step                  the rank's GPU idle per steady step (one per rank)
  idle/step RULE SITE                     a host-sync / sync-copy site's GPU idle per step
  overlap-gain/step SITE                  a copy-without-overlap site's cost per step
and `sampled yes|no` (whether the report says the timeline was sampled by auto).

tests/gpu/sample_compare.sh prints these for each of its runs (continuous, default, continuous
again); tests/gpu/sample_replay.py for a continuous recording and the sampled one made from it.

  sample_figures.py REPORT_JSON       prints one "KEY VALUE" line per figure
"""

import json
import sys


def figures(report):
    """[(key, value)] of a report (a dict); value an int, None where the report has none."""
    out = []
    steps = {}
    for rk in report.get("ranks", []):
        s = rk.get("steps") or {}
        steps[rk.get("rank")] = s.get("steady") or 0
        out.append(("rank-gpu-idle-per-step", s.get("gpu_idle_ns_per_step")))
    for f in report.get("findings", []):
        if f.get("phase") != "steady":
            continue
        site = (f.get("site") or "-").split(" ")[0]
        if f.get("rule") in ("host-sync", "sync-copy") and f.get("gpu_idle_ns") is not None:
            n = steps.get(f.get("rank")) or f.get("count") or 1
            out.append(("idle/step %s %s" % (f["rule"], site), f["gpu_idle_ns"] // n))
        if f.get("rule") == "copy-without-overlap":
            out.append(("overlap-gain/step %s" % site, f.get("cost_per_step_ns")))
    return out


def sampled(report):
    return "SYNCSPY_CUPTI_SAMPLE=auto" in json.dumps(report)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: sample_figures.py REPORT_JSON\n")
        return 2
    with open(argv[1], encoding="utf-8") as f:
        report = json.load(f)
    for key, value in figures(report):
        print(key, value)
    print("sampled", "yes" if sampled(report) else "no")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
