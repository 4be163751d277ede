# tests/gpu/results/2026-12-05-h200-session14/session14-run1.sh: device call of run 1 (README.md beside it):
# the sixth held-out set (c71-c80, d32-d36, t83-t94: examples/corpus/README.md), recorded first,
# with the fifth set's PyTorch workloads again (PYTHON-1 on t74/t76, t78's check mended) and t05,
# build of the commit in .carry/COMMIT
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; ONLY='^(c7[1-9]|c80|d3[2-6]|t8[3-9]|t9[0-4]|t7[1-9]|t8[0-2]|t05)' JOBS=12 TOTAL_BUDGET_S=480 timeout 540 bash tests/gpu/corpus.sh "$OUT"; echo rc=$?; ls -la $OUT; du -sh $OUT
