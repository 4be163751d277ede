# tests/gpu/results/2026-12-06-h100-session25/session25-run3.sh: device call of run 3 (README.md
# beside it). Issue 17 item 1: 11 and 13 as run 2 ran 08-10; then tests/gpu/sample_compare.sh
# under session 24's default (what the sampled timeline finds beside continuous tracing: GPU
# idle per sync site, overlap) on 10, 11, 12 and issue 17's mlp8 loop, three runs per mode.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
ONLY='^(11|13)' RUNS=6 BLOCKS=20 WARMUP=4 PIN=2-3 TOTAL_BUDGET_S=270 PARTIAL=$OUT/ab-11-13-partial.txt \
  CONFIGS="default profiler" timeout 300 bash bench/reference_ab.sh $OUT/ab-11-13.txt
echo "reference_ab rc=$? at ${SECONDS}s"
grep -v "^raw\|^meta" $OUT/ab-11-13.txt
RUNS=3 ONLY='^(10|11|12|torch_step)' timeout $((570 - SECONDS)) bash tests/gpu/sample_compare.sh $OUT/sample-compare.txt
echo "sample_compare rc=$? at ${SECONDS}s"
tail -30 $OUT/sample-compare.txt
