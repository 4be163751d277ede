# tests/gpu/results/2026-12-05-h100-session19/session19-run5.sh: device call of run 5 (README.md beside it):
# the GPU suite's parts on the build carried (waiting list item 1 of tests/gpu/README.md):
# workloads, reference (with -g), CUPTI, coverage, procaddr, stack
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
PARTS="workloads reference cupti coverage procaddr stack" DEBUG_INFO=1 SKIP_BENCH=1 TOTAL_BUDGET_S=400 timeout 440 bash tests/gpu/run.sh "$OUT"; echo "run.sh rc=$?"; rm -f $OUT/databases.tar.gz; ls -la $OUT
