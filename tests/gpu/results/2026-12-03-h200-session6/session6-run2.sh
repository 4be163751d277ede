# tests/gpu/results/2026-12-03-h200-session6/session6-run2.sh: what the device call of run 2 ran, from the repository root (README.md beside it)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p $OUT/c
ONLY='(-static$|^t01_|^t05_|^t29_|^d05_|^c18_.*-shared)' JOBS=8 TOTAL_BUDGET_S=200 timeout 215 bash tests/gpu/corpus.sh $OUT/c
ONLY='06_legacy' DEBUG_INFO=1 PARTS=reference TOTAL_BUDGET_S=60 SKIP_BENCH=1 timeout 70 bash tests/gpu/run.sh /tmp/ref >/dev/null 2>&1; grep -E "06_legacy_stream .*(bad|fixed)" /tmp/ref/summary.txt > $OUT/ref-06.txt
nvcc -O2 -arch=sm_90 -cudart shared -o /tmp/ab bench/wrapper_ab.cu -ldl && { taskset -c 3 /tmp/ab 1500 > $OUT/ab-control.txt; for r in 1 2 3; do LD_PRELOAD=$PWD/.carry/lib/libsyncspy.so SYNCSPY_CUPTI=0 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=/tmp/abdb taskset -c 3 /tmp/ab 1500; done > $OUT/ab-shim.txt; }
tail -4 $OUT/c/corpus-summary.txt; grep FAIL $OUT/c/corpus-summary.txt | head; cat $OUT/ref-06.txt $OUT/ab-shim.txt
