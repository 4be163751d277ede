# tests/gpu/results/2026-12-06-h100-session23/session23-run7.sh: device call of run 7 (README.md
# beside it): the first sets' CUDA C and driver workloads (c01-c29, d01-d19) under the final
# head's shim (CUPTI-11, CUPTI-2's kinds disabled): no crash, no failed check, every GPU row tied
# to its call (meta.cupti_correlation and the share of GPU rows with a gpu_api row, per trace).
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
ONLY='^(c0[1-9]|c1[0-9]|c2[0-9]|d0[1-9]|d1[0-9])' JOBS=12 TOTAL_BUDGET_S=240 timeout 280 bash tests/gpu/corpus.sh $OUT/corpus
rm -f $OUT/corpus/corpus-reports.json
W=$(mktemp -d); for t in $OUT/corpus/corpus-traces*.tar.gz; do tar -xzf $t -C $W; done
python3 - $W > $OUT/correlation.txt <<'PY'
import glob, os, sqlite3, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.sqlite")):
    c = sqlite3.connect(f)
    m = dict(c.execute("select key, value from meta where key = 'cupti_correlation'"))
    tied, rows = c.execute("select coalesce(sum(exists(select 1 from gpu_api a where"
                           " a.correlation_id = g.correlation_id)), 0), count(*) from gpu_activity g"
                           " where g.kind in ('kernel', 'memcpy', 'memset')").fetchone()
    print("%-55s %-12s tied %d of %d" % (os.path.basename(f)[:55], m.get("cupti_correlation"), tied, rows))
PY
rm -f $OUT/corpus/corpus-traces*.tar.gz
tail -4 $OUT/corpus/corpus-summary.txt; grep FAIL $OUT/corpus/corpus-summary.txt | head; awk '$4 != $6' $OUT/correlation.txt | head
