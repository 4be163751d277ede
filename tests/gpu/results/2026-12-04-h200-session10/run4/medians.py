#!/usr/bin/env python3
# tests/gpu/results/2026-12-04-h200-session10/run4/medians.py: the medians of bench-partial.txt
# (bench/cupti_overhead.sh was killed at its time limit during round 6's profiler process, before
# it wrote its table): per configuration the median step time over the rounds it finished, its
# overhead against plain's median, and the paired overhead, the median over rounds of (config /
# plain of the same round - 1), as the bench computes them.
import statistics, sys
rounds = {}
order = []
for line in open(sys.argv[1] if len(sys.argv) > 1 else "bench-partial.txt"):
    parts = line.split()
    if len(parts) != 3 or parts[1] != "mlp8":
        continue
    config, us = parts[0], float(parts[2])
    if config not in rounds:
        rounds[config] = []
        order.append(config)
    rounds[config].append(us)
plain = rounds["plain"]
print("%-12s %6s %10s %9s %9s" % ("config", "rounds", "median_us", "overhead", "paired"))
for config in order:
    values = rounds[config]
    paired = [v / p - 1 for v, p in zip(values, plain)]
    print("%-12s %6d %10.1f %8.1f%% %8.1f%%" % (config, len(values), statistics.median(values),
          100 * (statistics.median(values) / statistics.median(plain) - 1), 100 * statistics.median(paired)))
