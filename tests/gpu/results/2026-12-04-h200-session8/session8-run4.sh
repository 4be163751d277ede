# tests/gpu/results/2026-12-04-h200-session8/session8-run4.sh: device call of run 4 (README.md beside it):
# c35 and c37 re-recorded with the driver layer's new copies and graph calls; the Python package
# (pytest's wrapper warning gone?); CUPTI's cost while paused and without API records; the bytes
# per hour of issue 17's torch loop in trace and aggregate mode
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT
mkdir -p $OUT/c
ONLY='^(c35|c37)' JOBS=4 TOTAL_BUDGET_S=80 timeout -s KILL 95 bash tests/gpu/corpus.sh $OUT/c
tail -12 $OUT/c/corpus-score.txt
mkdir -p $OUT/py
timeout -s KILL 80 bash tests/gpu/python.sh $OUT/py
cat $OUT/py/python-summary.txt | grep -v '^  '
SIZES=mlp8 STEPS=1000 ROUNDS=3 PIN=2-5 CONFIGS="plain sample:1/600000 all:kernel,memcpy,memset,sync,event" PARTIAL=$OUT/bench-partial.txt timeout -s KILL 130 bash bench/cupti_overhead.sh $OUT/cupti-overhead-mlp8.txt
tail -14 $OUT/cupti-overhead-mlp8.txt 2>/dev/null || cat $OUT/bench-partial.txt
# the device has no sqlite3 command: Python's module answers the bench's one query
mkdir -p /tmp/sq && cat >/tmp/sq/sqlite3 <<'PY'
#!/usr/bin/env python3
import sqlite3, sys
args, sep, i = sys.argv[1:], "|", 0
rest = []
while i < len(args):
    if args[i] == "-separator":
        sep = args[i + 1]; i += 2; continue
    if not args[i].startswith("-"):
        rest.append(args[i])
    i += 1
for row in sqlite3.connect("file:%s?mode=ro" % rest[0], uri=True).execute(rest[1]):
    print(sep.join("" if v is None else str(v) for v in row))
PY
chmod +x /tmp/sq/sqlite3
SIZES=mlp8 SQLITE3=/tmp/sq/sqlite3 SYNCSPY=$PWD/.carry/bin/syncspy SHORT=12 LONG=20 timeout -s KILL 110 sh bench/aggregate_bytes.sh $OUT/aggregate-bytes-torch.txt -- python3 bench/torch_step.py 100000000
cat $OUT/aggregate-bytes-torch.txt
