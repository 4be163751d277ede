# tests/gpu/results/2026-12-04-h200-session7/session7-run4.sh: device call of run 4 (README.md beside it):
# the same loop, host side only, without pinning (does taskset -c 2-5 bring on runs 2 and 3's 10x outliers?)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
SIZES=mlp8 STEPS=300 ROUNDS=6 CONFIGS="plain shim" PARTIAL=$OUT/bench-partial.txt timeout -s KILL 170 bash bench/cupti_overhead.sh $OUT/unpinned.txt
cat $OUT/bench-partial.txt
