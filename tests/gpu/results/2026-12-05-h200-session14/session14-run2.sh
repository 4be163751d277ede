# tests/gpu/results/2026-12-05-h200-session14/session14-run2.sh: device call of run 2 (README.md beside it):
# lost: the machine was taken back before the call finished (nothing came back). Was: issue 17
# item 1, the default beside continuous tracing with 3 runs of each, interleaved
# (sample_compare.sh RUNS=3), 12_stream_prefetcher's databases kept (tests/gpu/README.md item 2)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; S=$(date +%s); RUNS=3 ONLY='^(01|04|08|10|11|12|13|torch_step)' KEEP=$OUT/stream-prefetcher-dbs.tar.gz KEEP_ONLY='^12' timeout 570 bash tests/gpu/sample_compare.sh $OUT/sample-compare.txt; echo "sample_compare rc=$? $(( $(date +%s) - S ))s"; cat $OUT/sample-compare.txt
