# tests/gpu/results/2026-12-04-h200-session7/session7-run1.sh: device call of run 1 (README.md beside it):
# issue 17 item 1, the default's overhead on the launch-bound loop beside continuous tracing and torch.profiler
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L; nproc
SIZES=mlp8 STEPS=1500 ROUNDS=6 PIN=2-5 CONFIGS="plain shim shim+cupti all profiler" timeout 540 bash bench/cupti_overhead.sh $OUT/cupti-overhead-mlp8.txt
cat $OUT/cupti-overhead-mlp8.txt | tail -30
