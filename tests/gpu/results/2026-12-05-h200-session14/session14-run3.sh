# tests/gpu/results/2026-12-05-h200-session14/session14-run3.sh: device call of run 3 (README.md beside it):
# the probe of run 1's crash (c75_crash.sh); t74 and t76 again after PYTHON-1's fix (the autograd
# thread's own, frameless, Python state), c76 and d34 after host-to-host async copies became S4,
# d33 with cuStreamAddCallback intercepted, c72 with cudaMemPoolTrimTo intercepted, t90 with graph instantiations stacked (the session's device time was nearly spent: no
# sample_compare.sh)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; S=$(date +%s); timeout 150 bash tests/gpu/results/2026-12-05-h200-session14/c75_crash.sh; echo "c75 probe rc=$? $(( $(date +%s) - S ))s"; head -c 7000 $OUT/c75-crash.txt; mkdir -p $OUT/corpus; ONLY='^(t74|t76|c76|d34|d33|c72|t90)' JOBS=8 TOTAL_BUDGET_S=130 timeout 150 bash tests/gpu/corpus.sh "$OUT/corpus"; echo corpus rc=$?; tail -12 $OUT/corpus/corpus-score.txt
