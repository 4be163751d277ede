# tests/gpu/results/2026-12-05-h200-session14/session14-run5.sh: device call of run 5 (README.md beside it):
# issue 17 item 1 with the session's last device time: sample_compare.sh with 3 runs of each mode,
# interleaved, on 08_item_per_step and the launch-bound loop (bench/torch_step.py mlp8)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; S=$(date +%s); RUNS=3 ONLY='^(08|torch_step)' timeout 170 bash tests/gpu/sample_compare.sh $OUT/sample-compare.txt; echo "sample_compare rc=$? $(( $(date +%s) - S ))s"; cat $OUT/sample-compare.txt | head -60
