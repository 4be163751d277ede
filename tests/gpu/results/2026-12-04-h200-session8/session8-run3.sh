# tests/gpu/results/2026-12-04-h200-session8/session8-run3.sh: device call of run 3 (README.md beside it):
# the Python package with torch on the venv's path and Debian's pytest carried; then where the
# default's CUPTI cost goes: paused (sample:1/600000), kernel records alone, everything; 3 rounds
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT
mkdir -p $OUT/py
timeout -s KILL 150 bash tests/gpu/python.sh $OUT/py
cat $OUT/py/python-summary.txt
grep -v '^+ ' $OUT/py/python.log | grep -v '^ *$' | tail -25
SIZES=mlp8 STEPS=1000 ROUNDS=3 PIN=2-5 CONFIGS="plain shim sample:1/600000 all:kernel all" PARTIAL=$OUT/bench-partial.txt timeout -s KILL 250 bash bench/cupti_overhead.sh $OUT/cupti-overhead-mlp8.txt
tail -30 $OUT/cupti-overhead-mlp8.txt 2>/dev/null || tail -30 $OUT/bench-partial.txt
