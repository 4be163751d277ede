# tests/gpu/results/2026-12-04-h200-session11/session11-run2.sh: device call of run 2 (README.md beside it):
# issue 17 item 1: the default (auto, detached) beside SAMPLE=all on the reference workloads and
# the launch-bound loop, with check_clock.py; then the default's cost on the CUDA C reference workloads
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; S=$(date +%s); timeout 400 bash tests/gpu/sample_compare.sh $OUT/sample-compare.txt; echo "sample_compare rc=$? $(( $(date +%s) - S ))s"; WORKLOADS=cuda TOTAL_BUDGET_S=$((560 - $(date +%s) + S)) bash bench/reference_overhead.sh $OUT/reference-overhead-cuda.txt; echo "rc=$? $(( $(date +%s) - S ))s"; tail -20 $OUT/*.txt
