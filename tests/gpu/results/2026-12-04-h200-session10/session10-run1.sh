# tests/gpu/results/2026-12-04-h200-session10/session10-run1.sh: device call of run 1 (README.md beside it):
# the third held-out corpus set (c41-c50, d17-d21, t47-t58, written in session 9) and c27, recorded
# before any rule of the report changed (examples/corpus/traces moved out of the tree for the copy)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; ONLY='^(c27|c4[1-9]|c50|d1[7-9]|d2[01]|t4[7-9]|t5[0-8])' JOBS=8 TOTAL_BUDGET_S=450 timeout 480 bash tests/gpu/corpus.sh "$OUT"; echo rc=$?; ls $OUT | head; du -sh $OUT
