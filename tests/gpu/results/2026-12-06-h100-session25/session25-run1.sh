# tests/gpu/results/2026-12-06-h100-session25/session25-run1.sh: device call of run 1 (README.md
# beside it). Issue 17 item 1 under session 24's default (CUPTI-12: no API hook): (1) issue 17's
# mlp8 loop in separate processes, as the issue measured it (bench/cupti_overhead.sh: 1000 steps,
# 6 rounds interleaved, pinned, median of per-round ratios to plain): plain, the default, the host
# side alone, torch.profiler; (2) 12_stream_prefetcher in one process (bench/reference_ab.sh) after
# a warm-up of 4 loops, 20 blocks, 6 processes per configuration, each round starting one further
# on: the default, the host side alone, torch.profiler; the total figure (windows included) beside
# the median of pairs.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
SIZES=mlp8 STEPS=1000 ROUNDS=6 PIN=2-5 CONFIGS="plain shim+cupti shim profiler" \
  PARTIAL=$OUT/mlp8-partial.txt timeout -s KILL 300 bash bench/cupti_overhead.sh $OUT/mlp8-processes.txt
echo "cupti_overhead rc=$? at ${SECONDS}s"
grep -A6 "^size\|^config" $OUT/mlp8-processes.txt | head -12
left=$((560 - SECONDS))
ONLY='^12' RUNS=6 BLOCKS=20 WARMUP=4 PIN=2-3 TOTAL_BUDGET_S=$((left - 30)) PARTIAL=$OUT/ab-12-partial.txt \
  CONFIGS="default host profiler" timeout $left bash bench/reference_ab.sh $OUT/ab-12.txt
echo "reference_ab rc=$? at ${SECONDS}s"
grep -v "^raw\|^meta" $OUT/ab-12.txt
