# tests/gpu/results/2026-12-04-h200-session12/session12-run1.sh: device call of run 1 (README.md beside it):
# the fifth held-out set (c61-c70, d27-d31, t71-t82), recorded before any rule changes, with c47
# and c55 again (c47's cudaMallocAsync is timed by the shim since session 11), build 8b933e9
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; ONLY='^(c6[1-9]|c70|d2[7-9]|d3[01]|t7[1-9]|t8[0-2]|c47|c55)' JOBS=12 TOTAL_BUDGET_S=540 timeout 575 bash tests/gpu/corpus.sh "$OUT"; echo rc=$?; ls $OUT | head -100; du -sh $OUT
