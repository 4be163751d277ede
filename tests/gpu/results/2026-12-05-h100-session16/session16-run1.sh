# tests/gpu/results/2026-12-05-h100-session16/session16-run1.sh: device call of run 1 (README.md beside it):
# the seventh held-out set (c81-c88, d37-d41, t95-t106: examples/corpus/README.md), recorded and
# scored as written (no change to the shim or the report since they were written), build of the
# commit in .carry/COMMIT
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; nvidia-smi -L; ONLY='^(c8[1-8]|d3[7-9]|d4[01]|t9[5-9]|t10[0-6])' JOBS=12 TOTAL_BUDGET_S=520 timeout 560 bash tests/gpu/corpus.sh "$OUT"; echo rc=$?; ls -la $OUT; du -sh $OUT
