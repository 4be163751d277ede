# tests/gpu/results/2026-12-05-h100-session19/session19-run1.sh: device call of run 1 (README.md beside it):
# the eighth held-out set (c89-c96, d42-d46, t107-t118: examples/corpus/README.md), recorded and
# scored as written (no change to the shim or the report since they were written), build of the
# commit in .carry/COMMIT
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; nvidia-smi -L; ONLY='^(c89|c9[0-6]|d4[2-6]|t10[7-9]|t11[0-8])' JOBS=12 TOTAL_BUDGET_S=520 timeout 560 bash tests/gpu/corpus.sh "$OUT"; echo rc=$?; ls -la $OUT; du -sh $OUT
