# tests/gpu/results/2026-12-04-h200-session7/session7-run2.sh: device call of run 2 (README.md beside it):
# the 24 held-out workloads of session 7 and c27 recorded (corpus.sh), then issue 17's overhead bench, shorter
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p $OUT/c
ONLY='^(c27|c3[2-9]|c40|d1[2-6]|t3[7-9]|t4[0-6])' JOBS=12 TOTAL_BUDGET_S=250 timeout -s KILL 270 bash tests/gpu/corpus.sh $OUT/c
tail -4 $OUT/c/corpus-summary.txt
SIZES=mlp8 STEPS=500 ROUNDS=6 PIN=2-5 CONFIGS="plain shim+cupti all profiler shim" PARTIAL=$OUT/bench-partial.txt timeout -s KILL 270 bash bench/cupti_overhead.sh $OUT/cupti-overhead-mlp8.txt
tail -25 $OUT/cupti-overhead-mlp8.txt 2>/dev/null || tail -40 $OUT/bench-partial.txt
