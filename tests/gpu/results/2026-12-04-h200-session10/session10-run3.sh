# tests/gpu/results/2026-12-04-h200-session10/session10-run3.sh: device call of run 3 (README.md beside it):
# the PyTorch workloads (t*) again after the Python site fix (5fdc161), and c27, c44, c50, d17 after
# the driver's arrays, module loads, prefetch locations and the lines.c fix (build 9923ff5)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; ONLY='^(t[0-9]|c27|c44|c50|d17)' JOBS=10 TOTAL_BUDGET_S=470 timeout 520 bash tests/gpu/corpus.sh "$OUT"; echo rc=$?; ls $OUT; du -sh $OUT
