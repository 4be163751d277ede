# tests/gpu/results/2026-12-05-h200-session21/session21-run1.sh: device call of run 1 (README.md beside it):
# the ninth held-out set (c97-c104, d47-d51, t119-t130: examples/corpus/README.md), recorded and
# scored as written (no change to the shim or the report since they were written), build of the
# commit in .carry/COMMIT; TB=SECONDS gives corpus.sh less time where less device time is left
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; nvidia-smi -L; ONLY='^(c(9[7-9]|10[0-4])|d(4[7-9]|5[01])|t1(19|2[0-9]|30))' JOBS=12 TOTAL_BUDGET_S=${TB:-520} timeout $(( ${TB:-520} + 40 )) bash tests/gpu/corpus.sh "$OUT"; echo rc=$?; ls -la $OUT; du -sh $OUT
