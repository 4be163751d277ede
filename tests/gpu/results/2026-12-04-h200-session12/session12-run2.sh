# tests/gpu/results/2026-12-04-h200-session12/session12-run2.sh: device call of run 2 (README.md beside it):
# tests/gpu/sample_compare.sh (the default's GPU idle and overlap against continuous tracing, with
# GPU-IDLE-4's late window and CUPTI-4's sync-closed windows since session 11), build 8b933e9
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; S=$(date +%s); timeout 560 bash tests/gpu/sample_compare.sh $OUT/sample-compare.txt; echo "sample_compare rc=$? $(( $(date +%s) - S ))s"; tail -40 $OUT/*.txt
