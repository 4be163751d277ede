# tests/gpu/results/2026-12-05-h100-session16/session16-run3b.sh: run 3 cut to its first half, for
# when little device time is left: d39 and d40 recorded again (the shim records the driver's
# virtual memory management and stream capture since 4baa318) with the graph, host-function
# and allocation workloads beside them
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; S=$(date +%s)
ONLY='^(d3[89]|d40|c88|c35|c37|c71|d33|t90|c72|d31)' JOBS=12 TOTAL_BUDGET_S=200 timeout 230 bash tests/gpu/corpus.sh "$OUT"; echo "corpus rc=$? $(( $(date +%s) - S ))s"
