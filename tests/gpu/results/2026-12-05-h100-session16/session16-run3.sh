# tests/gpu/results/2026-12-05-h100-session16/session16-run3.sh: device call of run 3 (README.md beside it):
# after the report and shim changes of this session (STEPS-3, VMM and stream capture recorded,
# graph host nodes): d39 and d40 recorded again (their misses needed the new interception) with
# other graph, host-function and allocation workloads of the corpus, then the GPU suite's
# workloads, reference workloads and coverage parts (the new wrappers on a real driver)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1; cat .carry/COMMIT; S=$(date +%s)
ONLY='^(d3[89]|d40|c88|c35|c37|c71|d33|t90|c72|d31)' JOBS=12 TOTAL_BUDGET_S=200 timeout 230 bash tests/gpu/corpus.sh "$OUT"; echo "corpus rc=$? $(( $(date +%s) - S ))s"
mkdir -p /tmp/suite && DEBUG_INFO=1 PARTS="workloads reference coverage procaddr" SKIP_BENCH=1 JOBS=12 TOTAL_BUDGET_S=260 timeout 290 bash tests/gpu/run.sh /tmp/suite >/tmp/suite/run-stdout.txt 2>&1; echo "suite rc=$? $(( $(date +%s) - S ))s"; tail -30 /tmp/suite/run-stdout.txt; tar -czf $OUT/suite.tar.gz -C /tmp suite; ls -la $OUT
