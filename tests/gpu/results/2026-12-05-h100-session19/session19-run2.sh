# tests/gpu/results/2026-12-05-h100-session17/session17-run2.sh: device call of run 2 (README.md beside it):
# issue 17 item 1 measured inside one process. (a) bench/reference_ab.sh: each PyTorch reference
# workload's step loop run 21 times in one process, recording on and off by blocks (the default
# configuration) and torch.profiler on and off the same way, 1 process each (device time). (b) issue 17's
# loop (mlp8) the same way (bench/cupti_ab.sh MODE=shim, with torch.profiler's blocks).
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L; S=$(date +%s)
RUNS=1 CONFIGS="default profiler" PARTIAL=$OUT/reference-ab-partial.txt timeout 190 bash bench/reference_ab.sh $OUT/reference-ab.txt
echo "reference_ab rc=$? $(( $(date +%s) - S ))s"; sed -n '/^workload/,$p' $OUT/reference-ab.txt
MODE=shim AB_SIZE=mlp8 RUNS=1 PIN=2-5 timeout 55 bash bench/cupti_ab.sh $OUT/mlp8-ab.txt
echo "mlp8 shim ab rc=$? $(( $(date +%s) - S ))s"
grep -v "^# stderr" $OUT/mlp8-ab.txt
