# tests/gpu/results/2026-12-05-h100-session16/session16-run2.sh: device call of run 2 (README.md beside it):
# issue 17 item 1: the default (sampled) GPU timeline against continuous tracing, three runs of
# each mode interleaved, on the reference workloads 01, 04, 10, 11, 12, 13; 12's databases kept
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; S=$(date +%s); RUNS=3 ONLY='^(01|04|10|11|12|13)' KEEP=$OUT/dbs12.tar.gz KEEP_ONLY='^12' timeout 560 bash tests/gpu/sample_compare.sh $OUT/sample-compare.txt; echo "sample_compare rc=$? $(( $(date +%s) - S ))s"; head -80 $OUT/sample-compare.txt; ls -la $OUT
