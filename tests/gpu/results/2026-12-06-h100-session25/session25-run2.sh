# tests/gpu/results/2026-12-06-h100-session25/session25-run2.sh: device call of run 2 (README.md
# beside it). Issue 17 item 1: 08, 09 and 10 of the PyTorch reference workloads in one process
# each (bench/reference_ab.sh, as run 1 ran 12): the default beside torch.profiler, 6 processes
# each, rotated, warm-up of 4 loops, 20 blocks; the total figure beside the median of pairs.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
ONLY='^(08|09|10)' RUNS=6 BLOCKS=20 WARMUP=4 PIN=2-3 TOTAL_BUDGET_S=520 PARTIAL=$OUT/ab-08-10-partial.txt \
  CONFIGS="default profiler" timeout 560 bash bench/reference_ab.sh $OUT/ab-08-10.txt
echo "reference_ab rc=$? at ${SECONDS}s"
grep -v "^raw\|^meta" $OUT/ab-08-10.txt
