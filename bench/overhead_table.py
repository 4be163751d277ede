#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/overhead_table.py [--warm N] RAW_FILE...: the table of bench/reference_overhead.sh.

Reads the "raw NAME CONFIG round=R status=S process_ns=P loop_ns=L step_ns=A,B,..." lines of
one or more runs (rounds 1-3 of one device call and 4-6 of the next, say; a round number seen
twice keeps its last lines) and prints, per workload and figure, the rounds counted, the median
of each configuration and the median over rounds of (config / plain of the same round - 1):
the pairing cancels the drift between rounds, which separate processes show (up to 10% on the
H200). Figures: process, loop (as measured), steady (the median host time of a step after the
first N, default 10, of the loop) and warm (the first N steps' host time together). A run that
did not exit 0 is left out; so is a figure a run did not print. Then the "meta" lines of the
shim's configurations, summed per workload and configuration: what CUPTI did in those runs.
"""
import statistics
import sys

FIGURES = ("process", "loop", "steady", "warm")
ORDER = ("plain", "host", "default", "all", "profiler")


def figures_of(fields, warm):
    out = {}
    for key in ("process_ns", "loop_ns"):
        value = fields.get(key, "-")
        if value != "-":
            out[key[:-3]] = int(value)
    steps = fields.get("step_ns", "-")
    if steps != "-":
        times = [int(t) for t in steps.split(",") if t]
        if len(times) > warm:
            out["steady"] = statistics.median(times[warm:])
            out["warm"] = sum(times[:warm])
    return out


def main(argv):
    warm = 10
    if argv[:1] == ["--warm"]:
        warm, argv = int(argv[1]), argv[2:]
    runs = {}  # (name, figure) -> config -> round -> value
    meta = {}  # (name, config) -> key -> [values]
    for path in argv:
        for line in open(path):
            words = line.split()
            if len(words) < 4 or words[0] not in ("raw", "meta"):
                continue
            name, config = words[1], words[2]
            fields = dict(w.split("=", 1) for w in words[3:] if "=" in w)
            rnd = int(fields.get("round", "0"))
            if words[0] == "meta":
                for key, value in fields.items():
                    if key != "round":
                        meta.setdefault((name, config), {}).setdefault(key, []).append(value)
                continue
            if fields.get("status") != "0":
                continue
            for fig, value in figures_of(fields, warm).items():
                runs.setdefault((name, fig), {}).setdefault(config, {})[rnd] = value
    configs = [c for c in ORDER if any(c in by for by in runs.values())]
    others = [c for c in configs if c != "plain"]
    head = "%-28s %-8s %6s %12s" % ("workload", "figure", "rounds", "plain ms")
    for c in others:
        head += " %12s %9s" % (c + " ms", c)
    print(head)
    for name in sorted({n for n, _ in runs}):
        for fig in FIGURES:
            by = runs.get((name, fig))
            if not by:
                continue
            plain = by.get("plain", {})
            row = "%-28s %-8s %6d %12.3f" % (name, fig, len(plain),
                                             statistics.median(plain.values()) / 1e6
                                             if plain else float("nan"))
            for c in others:
                values = by.get(c, {})
                paired = [values[r] / plain[r] - 1 for r in values if r in plain and plain[r]]
                if values and paired:
                    row += " %12.3f %+8.1f%%" % (statistics.median(values.values()) / 1e6,
                                                 statistics.median(paired) * 100)
                else:
                    row += " %12s %9s" % ("-", "-")
            print(row)
    print("# per configuration: median over rounds of (config / plain of the same round - 1); "
          "steady: median step after the first %d, warm: the first %d steps" % (warm, warm))
    for (name, config), keys in sorted(meta.items()):
        parts = []
        for key, values in sorted(keys.items()):
            numbers = []
            for v in values:
                try:
                    numbers.append(int(v))
                except ValueError:
                    numbers = None
                    break
            if numbers is None:
                parts.append("%s=%s" % (key, "|".join(sorted(set(values)))))
            else:
                parts.append("%s=%s" % (key, "/".join(str(n) for n in numbers)))
        print("meta %s %s %s" % (name, config, " ".join(parts)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
