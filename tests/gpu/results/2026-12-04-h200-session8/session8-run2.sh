# tests/gpu/results/2026-12-04-h200-session8/session8-run2.sh: device call of run 2 (README.md beside it):
# the Python package again with its log (run 1 failed three parts), then issue 17's overhead bench
# with the fix of run 1 (NATIVE-1/2) and the measuring sampler (CUPTI-6): 6 rounds, 1000 steps
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT
mkdir -p $OUT/py
timeout -s KILL 100 bash tests/gpu/python.sh $OUT/py
cat $OUT/py/python-summary.txt
grep -v '^+ ' $OUT/py/python.log | tail -40
SIZES=mlp8 STEPS=1000 ROUNDS=6 PIN=2-5 CONFIGS="plain shim shim+cupti all profiler" PARTIAL=$OUT/bench-partial.txt timeout -s KILL 420 bash bench/cupti_overhead.sh $OUT/cupti-overhead-mlp8.txt
tail -45 $OUT/cupti-overhead-mlp8.txt 2>/dev/null || tail -45 $OUT/bench-partial.txt
