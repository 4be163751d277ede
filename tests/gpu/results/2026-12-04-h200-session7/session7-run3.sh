# tests/gpu/results/2026-12-04-h200-session7/session7-run3.sh: device call of run 3 (README.md beside it):
# c32 (fixed stream) and c33 (cuFFT frames) recorded again; the overhead bench with nostack beside, shorter steps
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p $OUT/c
ONLY='^(c32|c33)' JOBS=4 TOTAL_BUDGET_S=100 timeout -s KILL 120 bash tests/gpu/corpus.sh $OUT/c
tail -2 $OUT/c/corpus-summary.txt
SIZES=mlp8 STEPS=300 ROUNDS=6 PIN=2-5 CONFIGS="plain shim nostack shim+cupti all profiler" PARTIAL=$OUT/bench-partial.txt timeout -s KILL 330 bash bench/cupti_overhead.sh $OUT/cupti-overhead-mlp8.txt
cat $OUT/cupti-overhead-mlp8.txt 2>/dev/null | tail -25 || tail -45 $OUT/bench-partial.txt
