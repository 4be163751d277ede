# tests/gpu/results/2026-12-04-h200-session11/session11-run1.sh: device call of run 1 (README.md beside it):
# the fourth held-out set (c51-c60, d22-d26, t59-t70), recorded before any rule changes, and
# t37-t46 again (their traces predated the Python frame fix 5fdc161), build f4ef500
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; ONLY='^(c5[1-9]|c60|d2[2-6]|t59|t6[0-9]|t70|t3[7-9]|t4[0-6])' JOBS=12 TOTAL_BUDGET_S=540 timeout 575 bash tests/gpu/corpus.sh "$OUT"; echo rc=$?; ls $OUT | head -100; du -sh $OUT
