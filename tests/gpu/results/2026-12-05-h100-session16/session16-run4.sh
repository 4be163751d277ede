# tests/gpu/results/2026-12-05-h100-session16/session16-run4.sh: device call of run 4 (README.md beside it):
# the GPU suite's parts that failed in run 3 for reasons older than this session, with their
# fixes (expectations at schema_version>=2, the static runtime's exit-time cuLibraryUnload,
# coverage recorded with SYNCSPY_CUPTI_SAMPLE=all, calls after CUPTI's last record counted)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; S=$(date +%s)
mkdir -p /tmp/suite && DEBUG_INFO=1 PARTS="reference coverage" SKIP_BENCH=1 JOBS=12 TOTAL_BUDGET_S=200 timeout 220 bash tests/gpu/run.sh /tmp/suite >/tmp/suite/run-stdout.txt 2>&1; echo "suite rc=$? $(( $(date +%s) - S ))s"; grep -E '^(result|FAIL)' /tmp/suite/summary.txt | head -40; cp /tmp/suite/summary.txt $OUT/suite-summary.txt; cp /tmp/suite/coverage.txt $OUT/suite-coverage.txt; ls -la $OUT
