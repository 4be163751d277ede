# tests/gpu/results/2026-12-04-h200-session12/session12-run3.sh: device call of run 3 (README.md beside it):
# bench/reference_overhead.sh on the PyTorch reference loops, 6 rounds, after NATIVE-2 (the launch
# path's code lookup through _dl_find_object instead of dladdr), build 8b933e9
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; S=$(date +%s); WORKLOADS=torch TOTAL_BUDGET_S=560 bash bench/reference_overhead.sh $OUT/reference-overhead-torch.txt; echo "rc=$? $(( $(date +%s) - S ))s"; tail -40 $OUT/*.txt
