# tests/gpu/results/2026-12-05-h200-session21/session21-run2.sh: device call of run 2 (README.md beside it):
# CUPTI-9 (a window no sync point closes, closed by the writer) on 12_stream_prefetcher, whose
# bad loop never waits: bench/reference_ab.sh's in-process A/B (20 blocks, default), the shim of
# .carry/COMMIT (before) and of .carry/new/COMMIT (CUPTI-9) interleaved, three processes each,
# with their meta lines; then torch.profiler once, the same way
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT .carry/new/COMMIT; nvidia-smi -L; S=$(date +%s)
for run in 1 2 3; do
  ONLY='^12' RUNS=1 CONFIGS="default" timeout 70 bash bench/reference_ab.sh $OUT/before-$run.txt
  SYNCSPY_SHIM=$PWD/.carry/new/libsyncspy.so ONLY='^12' RUNS=1 CONFIGS="default" timeout 70 bash bench/reference_ab.sh $OUT/cupti9-$run.txt
  echo "round $run $(( $(date +%s) - S ))s"
done
ONLY='^12' RUNS=1 CONFIGS="profiler" timeout 70 bash bench/reference_ab.sh $OUT/profiler.txt
echo "profiler $(( $(date +%s) - S ))s"
cd $OUT && for f in before-*.txt cupti9-*.txt profiler.txt; do echo "== $f"; grep -h "^raw\|^meta\|^ab\|%" $f | cut -c1-400; done > ab-summary.txt; rm -f before-*.txt cupti9-*.txt; cat ab-summary.txt
