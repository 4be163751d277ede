# tests/gpu/results/2026-12-07-h100-session30/run1.sh: session 29's next-run1.sh with the loop
# corrected: (1) the thirteenth held-out set (examples/corpus/README.md: c123-c128, d64-d67,
# t155-t162) and the fourteenth (c129-c134, d68-d71, t163-t170) recorded and scored, and
# d49/d51 again (their contexts, recorded since 7266070); (2) issue 17's launch-bound loop,
# which is bench/torch_step.py's mlp8 (8 layers 512 wide, batch 256; session 29's runs 3 and 4
# timed `small`, item_loop's one-layer model), across processes on two pinned cores, beside
# torch.profiler. Build and carry first (tests/gpu/carry.sh); examples/corpus/traces moved out of
# the tree for the call (over the 64 MiB a call carries) and back after it.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L; date -u
ONLY='^(c12[3-9]|c13[0-4]|d49|d51|d6[4-9]|d7[01]|t15[5-9]|t16[0-9]|t170)' JOBS=12 TOTAL_BUDGET_S=300 timeout 320 bash tests/gpu/corpus.sh $OUT/corpus
rm -f $OUT/corpus/corpus-reports.json
tail -4 $OUT/corpus/corpus-summary.txt; date -u
ROUNDS=6 SIZES=mlp8 PIN=2,3 STEPS=1500 CONFIGS="plain shim+cupti profiler" \
  PARTIAL=$OUT/overhead-partial.txt timeout 200 bash bench/cupti_overhead.sh $OUT/overhead.txt > $OUT/overhead.log 2>&1
grep -A5 "median_us" $OUT/overhead.txt; date -u
