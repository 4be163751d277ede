# tests/gpu/results/2026-12-04-h200-session11/session11-run3.sh: device call of run 3 (README.md beside it):
# issue 17 item 1: the default's cost on the PyTorch reference workloads beside torch.profiler (build 3b0de08)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; S=$(date +%s); WORKLOADS=torch TOTAL_BUDGET_S=540 bash bench/reference_overhead.sh $OUT/reference-overhead-torch.txt; echo "rc=$? $(( $(date +%s) - S ))s"; tail -n 20 $OUT/reference-overhead-torch.txt
