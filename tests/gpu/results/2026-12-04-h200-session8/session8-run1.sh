# tests/gpu/results/2026-12-04-h200-session8/session8-run1.sh: device call of run 1 (README.md beside it):
# the slow processes of session 7: BASE (eb3f7f1: 8 hash-slotted paths, counters added) against
# the fix (NATIVE-1/2) in one interleaved bench; the Python package (issue 16); c35 and c37 re-recorded
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT
BASE_SHIM=$PWD/.carry/base/libsyncspy.so SIZES=mlp8 STEPS=200 ROUNDS=6 PIN=2-5 CONFIGS="plain base shim shim+cupti profiler" PARTIAL=$OUT/bench-partial.txt timeout -s KILL 270 bash bench/cupti_overhead.sh $OUT/cupti-overhead-mlp8.txt
tail -48 $OUT/cupti-overhead-mlp8.txt 2>/dev/null || tail -48 $OUT/bench-partial.txt
mkdir -p $OUT/py
timeout -s KILL 170 bash tests/gpu/python.sh $OUT/py
cat $OUT/py/python-summary.txt
mkdir -p $OUT/c
ONLY='^(c35|c37)' JOBS=4 TOTAL_BUDGET_S=90 timeout -s KILL 110 bash tests/gpu/corpus.sh $OUT/c
tail -3 $OUT/c/corpus-summary.txt
