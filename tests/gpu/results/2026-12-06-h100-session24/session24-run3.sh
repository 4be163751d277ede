# tests/gpu/results/2026-12-06-h100-session24/session24-run3.sh: device call of run 3 (README.md
# beside it): the final default (CUPTI-12: kernel, memcpy, memset, sync and event records, no API
# hook; the report ties by stream order, CUPTI-13). (1) 12_stream_prefetcher recorded with it:
# meta and the ties the report makes; (2) what it costs beside session 23's default (the same
# with `correlate`, CUPTI-11) and torch.profiler: 12 by reference_ab.sh, 6 processes each,
# interleaved, pinned to cores 2-3; issue 17's mlp8 by cupti_ab.sh MODE=shim, rounds of one
# process each, interleaved, pinned, while time is left.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
K=kernel,memcpy,memset,sync,event
S=.carry/bin/syncspy
W=$(mktemp -d)
(cd examples/torch && SYNCSPY_OUTPUT=$W/db LD_PRELOAD=$PWD/../../.carry/lib/libsyncspy.so \
  timeout 60 python3 12_stream_prefetcher.py bad > $W/12.out 2>&1; echo "12 exit $?")
python3 - $W/db > $OUT/default-12.txt <<'PY'
import glob, sqlite3, sys
for f in glob.glob(sys.argv[1] + "/*.sqlite"):
    c = sqlite3.connect(f)
    print(f.split("/")[-1], dict(c.execute("select key, value from meta where key like 'cupti%'")))
    print("gpu_api rows:", c.execute("select count(*) from gpu_api").fetchone()[0],
          "ops:", c.execute("select count(distinct correlation_id) from gpu_activity where kind in"
                            " ('kernel', 'memcpy', 'memset') and start_ns > 0").fetchone()[0])
PY
$S dump --table gpu_api $W/db/*.sqlite | awk -F'\t' 'NR > 2 {n[$2 " " $7]++} END {for (k in n) print "ties:", k, n[k]}' >> $OUT/default-12.txt
$S report $W/db/*.sqlite >> $OUT/default-12.txt 2>&1
head -12 $OUT/default-12.txt | cut -c1-300
ONLY='^12' RUNS=6 BLOCKS=10 PIN=2-3 PARTIAL=$OUT/ab-12-partial.txt \
  CONFIGS="default sampled=$K,correlate profiler" timeout 280 bash bench/reference_ab.sh $OUT/ab-12.txt
tail -5 $OUT/ab-12.txt
for r in 1 2 3 4 5 6; do
  [ $SECONDS -lt 400 ] || break
  MODE=shim RUNS=1 PIN=2-3 PROFILER=0 AB_SIZE=mlp8 timeout 35 bash bench/cupti_ab.sh $OUT/ab-mlp8-default.txt
  MODE=shim RUNS=1 PIN=2-3 PROFILER=0 KINDS=$K,correlate AB_SIZE=mlp8 timeout 35 bash bench/cupti_ab.sh $OUT/ab-mlp8-correlate.txt
done
grep -H "adds" $OUT/ab-mlp8-*.txt
