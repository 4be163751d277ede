# tests/gpu/results/2026-12-05-h100-session19/session19-run4.sh: device call of run 4 (README.md beside it):
# c90, d42 and t113 recorded one at a time (JOBS=1: c90's plain result depends on other GPU
# programs, run 3), with the shim that records the stack size sets and t113's fix; then c90 four
# times at once without the shim
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L; S=$(date +%s)
ONLY='^(c90|d42|t113)' JOBS=1 TOTAL_BUDGET_S=200 timeout 230 bash tests/gpu/corpus.sh "$OUT"; echo "corpus rc=$? $(( $(date +%s) - S ))s"
nvcc -O2 -g -arch=sm_90 -o /tmp/c90 examples/corpus/c90_stellar_lines_stack_limit_scope.cu -lpthread && (for i in 1 2 3 4; do /tmp/c90 & done; wait) 2>&1 | tee $OUT/c90-concurrent.txt; echo "c90 $(( $(date +%s) - S ))s"
