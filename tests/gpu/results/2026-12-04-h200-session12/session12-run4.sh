# tests/gpu/results/2026-12-04-h200-session12/session12-run4.sh: device call of run 4 (README.md beside it):
# the fifth set's PyTorch workloads recorded again with PYTHON-1 (a sync on the autograd device
# thread named by the line that called backward()), t78 with its own check mended, and t05 (the
# one earlier trace with syncs on that thread), build of the commit in .carry/COMMIT
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; ONLY='^(t7[1-9]|t8[0-2]|t05)' JOBS=12 TOTAL_BUDGET_S=400 timeout 450 bash tests/gpu/corpus.sh "$OUT"; echo rc=$?; ls $OUT; du -sh $OUT
