# tests/gpu/results/2026-12-06-h100-session23/session23-run3.sh: device call of run 3 (README.md
# beside it): (1) CUPTI-11 on the real CUPTI: 12_stream_prefetcher recorded once by default,
# each kernel's and copy's correlation id found among the callbacks' gpu_api rows; (2) its cost
# inside one process beside the API records it replaces (12 by reference_ab.sh, issue 17's mlp8
# by cupti_ab.sh MODE=shim; every call traced); (3) the eleventh held-out set recorded and scored
# before any report change (examples/corpus/README.md: c111-c116, d56-d59, t139-t146).
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
W=$(mktemp -d)
(cd examples/torch && SYNCSPY_OUTPUT=$W/db LD_PRELOAD=$PWD/../../.carry/lib/libsyncspy.so \
  timeout 60 python3 12_stream_prefetcher.py bad > $W/12.out 2>&1; echo "12 exit $?")
python3 - $W/db > $OUT/correlate-12.txt <<'PY'
import glob, sqlite3, sys
for f in glob.glob(sys.argv[1] + "/*.sqlite"):
    c = sqlite3.connect(f)
    print(f.split("/")[-1], dict(c.execute("select key, value from meta where key in"
          " ('cupti', 'cupti_correlation', 'cupti_sample', 'cupti_windows', 'cupti_traced_ns')")))
    print("gpu_api rows by layer and name:", c.execute("select kind, name, count(*) from gpu_api"
          " group by 1, 2 order by 3 desc limit 12").fetchall())
    print("gpu rows tied / all, by kind:", c.execute("select g.kind, sum(exists(select 1 from"
          " gpu_api a where a.correlation_id = g.correlation_id)), count(*) from gpu_activity g"
          " group by 1").fetchall())
PY
cat $OUT/correlate-12.txt
K=kernel,memcpy,memset,sync,event
ONLY='^12' RUNS=2 PIN=2-3 PARTIAL=$OUT/ab-12-partial.txt \
  CONFIGS="default kinds=$K,api kinds=$K,correlate" timeout 170 bash bench/reference_ab.sh $OUT/ab-12.txt
for k in $K,api $K,correlate; do
  MODE=shim RUNS=1 PIN=2-3 PROFILER=0 SAMPLE=all KINDS=$k AB_SIZE=mlp8 \
    timeout 45 bash bench/cupti_ab.sh $OUT/ab-mlp8.txt
done
tail -5 $OUT/ab-12.txt; grep -h "adds" $OUT/ab-mlp8.txt
ONLY='^(c11[1-6]|d5[6-9]|t1(39|4[0-6]))' JOBS=12 TOTAL_BUDGET_S=240 timeout 270 bash tests/gpu/corpus.sh $OUT/corpus
rm -f $OUT/corpus/corpus-reports.json
tail -4 $OUT/corpus/corpus-summary.txt
