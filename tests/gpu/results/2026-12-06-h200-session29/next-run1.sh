# tests/gpu/results/2026-12-06-h200-session29/next-run1.sh: the device call that waits (README.md
# beside it, "What waits"): (1) the thirteenth held-out set recorded and scored before any report
# change (examples/corpus/README.md: c123-c128, d64-d67, t155-t162); (2) the launch-bound
# loop across processes again, more rounds, on two pinned cores, beside torch.profiler.
# Build and carry first (tests/gpu/carry.sh); move examples/corpus/traces out of the tree for the
# call (over the 64 MiB a call carries) and back after it.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
ONLY='^(c12[3-8]|d6[4-7]|t15[5-9]|t16[0-2])' JOBS=12 TOTAL_BUDGET_S=240 timeout 270 bash tests/gpu/corpus.sh $OUT/corpus
rm -f $OUT/corpus/corpus-reports.json
tail -4 $OUT/corpus/corpus-summary.txt
ROUNDS=8 SIZES=small PIN=2,3 STEPS=3000 CONFIGS="plain shim shim+cupti profiler" \
  PARTIAL=$OUT/overhead-partial.txt timeout 290 bash bench/cupti_overhead.sh $OUT/overhead.txt > $OUT/overhead.log 2>&1
grep -A6 "median_us" $OUT/overhead.txt
