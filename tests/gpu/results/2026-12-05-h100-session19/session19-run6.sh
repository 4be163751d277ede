# tests/gpu/results/2026-12-05-h100-session19/session19-run6.sh: device call of run 6 (README.md beside it):
# issue 17 item 1 inside one process for the two reference workloads above 3% in run 2 (10, 12):
# the default three processes each, then 12 with the host side alone and with torch.profiler
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L; S=$(date +%s)
ONLY='^(10|12)' RUNS=3 CONFIGS="default" PARTIAL=$OUT/default-partial.txt timeout 200 bash bench/reference_ab.sh $OUT/reference-ab-default.txt; echo "default rc=$? $(( $(date +%s) - S ))s"
ONLY='^12' RUNS=1 CONFIGS="host profiler" PARTIAL=$OUT/host-profiler-partial.txt timeout 80 bash bench/reference_ab.sh $OUT/reference-ab-host-profiler.txt; echo "host/profiler rc=$? $(( $(date +%s) - S ))s"
