# tests/gpu/results/2026-12-06-h100-session25/session25-run3.sh: device call of run 3 (README.md
# beside it). The sampler of 98fa5a9 (CUPTI-5/6: back to continuous only after a second of quiet,
# a switch priced 15 ms until measured, a gap lengthened by a higher estimate, the measure from 8
# sync points on): (1) issue 17's mlp8 loop's timeline under it (bench/db_timeline.py, 3000
# steps); (2) mlp8 in separate processes as run 1 (plain, default, host side, torch.profiler; 6
# rounds); (3) 12_stream_prefetcher and 10_print_tensor in one process (reference_ab.sh as run 1:
# default beside torch.profiler, 6 processes each, warm-up of 4 loops, 20 blocks).
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
W=$(mktemp -d)
SIZES=mlp8 SYNCSPY_OUTPUT=$W/m SYNCSPY_QUIET=1 LD_PRELOAD=$PWD/.carry/lib/libsyncspy.so \
  taskset -c 2-5 python3 bench/torch_step.py 3000 > $W/m.out 2>&1
{ echo "== mlp8 default: $(tail -1 $W/m.out)"; python3 bench/db_timeline.py $W/m/*.sqlite 50; } > $OUT/timeline-mlp8.txt
grep "==\|sync points per s\|^#" $OUT/timeline-mlp8.txt
SIZES=mlp8 STEPS=1000 ROUNDS=6 PIN=2-5 CONFIGS="plain shim+cupti shim profiler" \
  PARTIAL=$OUT/mlp8-partial.txt timeout -s KILL 290 bash bench/cupti_overhead.sh $OUT/mlp8-processes.txt
echo "cupti_overhead rc=$? at ${SECONDS}s"
grep -A6 "^size" $OUT/mlp8-processes.txt | head -8
left=$((570 - SECONDS))
ONLY='^(10|12)' RUNS=6 BLOCKS=20 WARMUP=4 PIN=2-3 TOTAL_BUDGET_S=$((left - 20)) PARTIAL=$OUT/ab-partial.txt \
  CONFIGS="default profiler" timeout $left bash bench/reference_ab.sh $OUT/ab-10-12.txt
echo "reference_ab rc=$? at ${SECONDS}s"
grep -v "^raw\|^meta" $OUT/ab-10-12.txt
