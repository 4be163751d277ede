# tests/gpu/results/2026-12-06-h100-session24/session24-run1.sh: device call of run 1 (README.md
# beside it): (1) CUPTI-12/13 on the real CUPTI: 12_stream_prefetcher recorded with `streams` and
# `correlate` together, the order's ties against the callbacks' (tests/gpu/check_order.py), and
# with `streams` alone (no API hook: what the GPU rows carry, the map, the order's ties); (2) what
# the candidate default (auto sampling, kernel/memcpy/memset/sync/event records and the stream
# map, no API hook) costs beside today's default (auto, CUPTI-11's callbacks) and torch.profiler:
# 12 by reference_ab.sh, 6 processes each, interleaved, pinned; issue 17's mlp8 by cupti_ab.sh
# MODE=shim, 6 rounds of one process each, interleaved, pinned.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
K=kernel,memcpy,memset,sync,event
S=.carry/bin/syncspy
W=$(mktemp -d)
for mode in both alone; do
  kinds=$K,streams; [ $mode = both ] && kinds=$K,correlate,streams
  (cd examples/torch && SYNCSPY_CUPTI_KINDS=$kinds SYNCSPY_OUTPUT=$W/$mode LD_PRELOAD=$PWD/../../.carry/lib/libsyncspy.so \
    timeout 60 python3 12_stream_prefetcher.py bad > $W/12-$mode.out 2>&1; echo "12 $mode exit $?")
done
python3 tests/gpu/check_order.py $S $W/both/*.sqlite > $OUT/order-12.txt 2>&1; echo "check_order exit $?" >> $OUT/order-12.txt
python3 - $W/alone > $OUT/alone-12.txt <<'PY'
import glob, sqlite3, sys
for f in glob.glob(sys.argv[1] + "/*.sqlite"):
    c = sqlite3.connect(f)
    print(f.split("/")[-1], dict(c.execute("select key, value from meta where key like 'cupti%'")))
    print("gpu_api rows:", c.execute("select count(*) from gpu_api").fetchone())
    print("gpu_streams:", c.execute("select * from gpu_streams").fetchall()[:20])
    print("gpu rows by kind, stream:", c.execute("select kind, stream_id, count(*), count(distinct correlation_id),"
          " min(correlation_id), max(correlation_id) from gpu_activity group by 1, 2").fetchall())
    ids = [r[0] for r in c.execute("select correlation_id from gpu_activity where kind = 'kernel' and"
           " start_ns > 0 order by start_ns")]
    print("kernels in correlation order on the GPU:", sum(a < b for a, b in zip(ids, ids[1:])), "of", len(ids) - 1)
PY
S_DUMP=$(SYNCSPY_REPORT_TIES= $S dump --table gpu_api $W/alone/*.sqlite | awk -F'\t' 'NR > 2 {n[$7]++} END {for (k in n) print k, n[k]}')
echo "order ties by function: $S_DUMP" >> $OUT/alone-12.txt
$S report $W/alone/*.sqlite > $OUT/alone-12-report.txt 2>&1
cat $OUT/order-12.txt $OUT/alone-12.txt | cut -c1-400
ONLY='^12' RUNS=6 BLOCKS=10 PIN=2-3 PARTIAL=$OUT/ab-12-partial.txt \
  CONFIGS="default sampled=$K,streams profiler" timeout 290 bash bench/reference_ab.sh $OUT/ab-12.txt
tail -5 $OUT/ab-12.txt
for r in 1 2 3 4 5 6; do
  [ $SECONDS -lt 520 ] || break
  MODE=shim RUNS=1 PIN=2-3 PROFILER=0 KINDS=$K,streams AB_SIZE=mlp8 timeout 35 bash bench/cupti_ab.sh $OUT/ab-mlp8-streams.txt
  MODE=shim RUNS=1 PIN=2-3 PROFILER=0 AB_SIZE=mlp8 timeout 35 bash bench/cupti_ab.sh $OUT/ab-mlp8-default.txt
done
grep -h "adds" $OUT/ab-mlp8-*.txt
