# tests/gpu/results/2026-12-06-session26/session26-run2.sh: device call of run 2 (README.md beside
# it). (1) Run 1's hunt again with the exit notice (SHIM-8, CUPTI-14): the A/Bs of 10 and 08 (20
# blocks after 4) as in run 1, of 09, 11, 12, 13 in turn, and plain runs of all six (blocks 0: no
# A/B), 7 at once, for 150 s (run 1: 4 of 168 processes ended in SIGSEGV); (2) issue 17 item 1: the
# default's GPU idle and overlap beside continuous tracing (sample_compare.sh, RUNS=2) on 11, 12
# and the mlp8 loop; (3) 10, 12, 13 in one process (reference_ab.sh as run 1) as rounds fit.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
W=$(mktemp -d)
gcc -O1 -shared -fPIC -o $W/segv_trace.so tests/gpu/segv_trace.c || exit 3
SHIM=$PWD/.carry/lib/libsyncspy.so
i=0
(cd examples/torch
while [ $SECONDS -lt 150 ]; do
  for slot in 1 2 3 4 5 6 7; do
    i=$((i + 1))
    others=(09_nonblocking_pageable 11_synchronize_per_step 12_stream_prefetcher 13_data_dependent_shapes)
    all=(08_item_per_step 09_nonblocking_pageable 10_print_tensor 11_synchronize_per_step 12_stream_prefetcher 13_data_dependent_shapes)
    case $((i % 4)) in 0) w=10_print_tensor; b=20; u=4;; 1) w=08_item_per_step; b=20; u=4;;
                       2) w=${others[$(( (i / 4) % 4 ))]}; b=20; u=4;; 3) w=${all[$(( (i / 4) % 6 ))]}; b=0; u=1;; esac
    (PYTHONFAULTHANDLER=1 EXAMPLES_AB=$b AB_WARMUP=$u EXAMPLES_AB_MODE=shim SYNCSPY_QUIET=1 \
      SYNCSPY_OUTPUT=$W/d$i LD_PRELOAD="$SHIM $W/segv_trace.so" taskset -c $((2 * slot))-$((2 * slot + 1)) \
      timeout 120 python3 $w.py bad > $W/o$i 2> $W/e$i
     echo "run $i $w blocks $b status $?" >> $W/status) &
  done
  wait
done)
n=$(wc -l < $W/status)
echo "hunt: $n processes at ${SECONDS}s; not 0/1:"
sort -k2 -n $W/status > $OUT/status.txt
grep -v "status [01]$" $OUT/status.txt
for f in $(grep -v "status [01]$" $OUT/status.txt | awk '{print $2}'); do
  { echo "== run $f"; grep -v "^ab_" $W/e$f | tail -120; ls -la $W/d$f
    for db in $W/d$f/*; do cp "$db" $W/copy.db 2>/dev/null && python3 - $W/copy.db <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
try:
    for k, v in c.execute("select key, value from meta where key like 'cupti%' or key in ('end_reason','status')"):
        print("meta", k, v)
except Exception as e:
    print("meta: ", e)
PY
    done; } >> $OUT/crashes.txt
done
head -c 20000 $OUT/crashes.txt 2>/dev/null
echo "at ${SECONDS}s"
RUNS=2 ONLY='^(11|12|torch_step)' timeout 200 bash tests/gpu/sample_compare.sh $OUT/sample-compare.txt
echo "sample_compare rc=$? at ${SECONDS}s"
tail -40 $OUT/sample-compare.txt
left=$((400 - SECONDS))
ONLY='^(10|12|13)' RUNS=6 BLOCKS=20 WARMUP=4 PIN=2-3 TOTAL_BUDGET_S=$((left - 10)) PARTIAL=$OUT/ab-partial.txt \
  CONFIGS="default profiler" timeout $left bash bench/reference_ab.sh $OUT/ab-10-13.txt
echo "reference_ab rc=$? at ${SECONDS}s"
grep -v "^raw\|^meta" $OUT/ab-10-13.txt
