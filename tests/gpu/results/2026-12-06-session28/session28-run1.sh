# tests/gpu/results/2026-12-06-session28/session28-run1.sh: device call of run 1 (README.md
# beside it): (1) the twelfth held-out set recorded and scored before any report change
# (examples/corpus/README.md: c117-c122, d60-d63, t147-t154); (2) which of CUPTI's kinds makes
# 09_nonblocking_pageable's traced steps 3.5-3.9 times as long (session 27), each traced whole in
# one process (reference_ab.sh kinds=...); (3) what the default's GPU timeline costs a long run of
# each reference workload, each window counted once (reference_ab.sh's new `long`).
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
ONLY='^(c11[7-9]|c12[0-2]|d6[0-3]|t14[7-9]|t15[0-4])' JOBS=12 TOTAL_BUDGET_S=215 timeout 245 bash tests/gpu/corpus.sh $OUT/corpus
rm -f $OUT/corpus/corpus-reports.json
tail -4 $OUT/corpus/corpus-summary.txt
RUNS=2 BLOCKS=20 WARMUP=4 CONFIGS="all kinds=kernel kinds=memcpy kinds=sync,event" ONLY='^09' \
  TOTAL_BUDGET_S=125 PARTIAL=$OUT/kinds-partial.txt timeout 150 bash bench/reference_ab.sh $OUT/kinds.txt
grep "^total\|^ab " $OUT/kinds.txt
RUNS=1 BLOCKS=30 WARMUP=4 CONFIGS="long" TOTAL_BUDGET_S=150 PARTIAL=$OUT/long-partial.txt \
  timeout 170 bash bench/reference_ab.sh $OUT/long.txt
grep "^raw" $OUT/long.txt $OUT/long-partial.txt 2>/dev/null | cut -c1-220
