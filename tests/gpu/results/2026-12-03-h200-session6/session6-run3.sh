# tests/gpu/results/2026-12-03-h200-session6/session6-run3.sh: what the device call of run 3 ran, from the repository root (README.md beside it)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p $OUT/c
ONLY='^(c2[7-9]|c3[01]|d1[01]|t3[1-6])' JOBS=16 TOTAL_BUDGET_S=140 timeout 150 bash tests/gpu/corpus.sh $OUT/c
tail -4 $OUT/c/corpus-summary.txt; grep FAIL $OUT/c/corpus-summary.txt | head -20
