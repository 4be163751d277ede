# tests/gpu/results/2026-12-05-h100-session19/session19-run7.sh: device call of run 7 (README.md beside it):
# where 12_stream_prefetcher's host side spends its cost: the host side alone (SYNCSPY_CUPTI=0)
# with the native and Python stacks on (default) and off (SYNCSPY_STACK_DEPTH=0), two processes
# each, interleaved
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L; S=$(date +%s)
for run in 1 2; do
  ONLY='^12' RUNS=1 CONFIGS="host" timeout 60 bash bench/reference_ab.sh $OUT/host-stacks-$run.txt
  SYNCSPY_STACK_DEPTH=0 ONLY='^12' RUNS=1 CONFIGS="host" timeout 60 bash bench/reference_ab.sh $OUT/host-nostacks-$run.txt
  echo "round $run $(( $(date +%s) - S ))s"
done
grep -h "^raw\|^meta" $OUT/*.txt | cut -c1-300
