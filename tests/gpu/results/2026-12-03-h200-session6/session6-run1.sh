# tests/gpu/results/2026-12-03-h200-session6/session6-run1.sh: what the device call of run 1 ran, from the repository root (README.md beside it)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p $OUT/c
ONLY='^(c1[6-9]|c2|d0[5-9]|t1[7-9]|t2|t3|c06_default_stream_kernel-static|c08_copy_on_compute_stream-static)' JOBS=8 TOTAL_BUDGET_S=370 timeout 390 bash tests/gpu/corpus.sh $OUT/c
ONLY='06_legacy' DEBUG_INFO=1 PARTS=reference TOTAL_BUDGET_S=90 SKIP_BENCH=1 timeout 100 bash tests/gpu/run.sh /tmp/ref >/dev/null 2>&1; tar czf $OUT/ref.tgz -C /tmp ref
nvcc -O2 -arch=sm_90 -cudart shared -o /tmp/ab bench/wrapper_ab.cu -ldl && { taskset -c 3 /tmp/ab 1500 > $OUT/ab-control.txt; for r in 1 2 3; do LD_PRELOAD=$PWD/.carry/lib/libsyncspy.so SYNCSPY_CUPTI=0 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=/tmp/abdb taskset -c 3 /tmp/ab 1500; done > $OUT/ab-shim.txt; }
tail -3 $OUT/c/corpus-summary.txt; cat $OUT/ab-shim.txt
