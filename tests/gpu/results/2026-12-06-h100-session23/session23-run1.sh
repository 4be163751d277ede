# tests/gpu/results/2026-12-06-h100-session23/session23-run1.sh: device call of run 1 (README.md
# beside it): (1) issue 17 item 1, what each CUPTI kind costs while traced, inside one process:
# 12_stream_prefetcher (bench/reference_ab.sh) and issue 17's mlp8 loop (bench/cupti_ab.sh
# MODE=shim), every call traced (SAMPLE=all) with all kinds and with some left out; (2) the
# PyTorch workloads t119-t138 with the head's shim: GATE-4 (S1-S5 waits only) should let their
# pauses detach again (session 22 run 9: skipped in 16 of 19 with the first version).
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
K=kernel,memcpy,memset,api
ONLY='^12' RUNS=2 PIN=2-3 PARTIAL=$OUT/kinds-12-partial.txt \
  CONFIGS="all kinds=kernel kinds=$K kinds=$K,sync kinds=$K,event" \
  timeout 230 bash bench/reference_ab.sh $OUT/kinds-12.txt
for k in kernel,memcpy,memset,sync,event,api $K; do
  MODE=shim RUNS=1 PIN=2-3 PROFILER=0 SAMPLE=all KINDS=$k AB_SIZE=mlp8 \
    timeout 45 bash bench/cupti_ab.sh $OUT/kinds-mlp8.txt
done
ONLY='^t1(19|2[0-9]|3[0-8])' JOBS=12 SHIM_JOBS=3 TOTAL_BUDGET_S=190 timeout 215 bash tests/gpu/corpus.sh $OUT/corpus
rm -f $OUT/corpus/corpus-reports.json
W=$(mktemp -d); for t in $OUT/corpus/corpus-traces*.tar.gz; do tar -xzf $t -C $W; done
python3 - $W > $OUT/gate4-meta.txt <<'PY'
import glob, os, sqlite3, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.sqlite")):
    m = dict(sqlite3.connect(f).execute("select key, value from meta where key like 'cupti_det%'"
                                        " or key in ('cupti_pauses', 'cupti_sample')"))
    print(os.path.basename(f)[:40], m)
PY
rm -f $OUT/corpus/corpus-traces*.tar.gz
cat $OUT/gate4-meta.txt; tail -5 $OUT/corpus/corpus-summary.txt; cat $OUT/kinds-12.txt | tail -8; grep -h "^ab\|overhead\|median" $OUT/kinds-mlp8.txt | head
