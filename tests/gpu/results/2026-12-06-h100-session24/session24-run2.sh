# tests/gpu/results/2026-12-06-h100-session24/session24-run2.sh: device call of run 2 (README.md
# beside it): run 1 found gpu_streams empty on the real CUPTI; the map now falls back to the
# driver for the device and says in meta what failed (cupti_streams_mapped, _failure). (1)
# 12_stream_prefetcher with `streams` and `correlate`, and with `streams` alone, as in run 1;
# (2) CUDA C, driver and PyTorch workloads of examples/corpus recorded with both (the callbacks'
# ties beside the stream map), the traces brought back for tests/gpu/check_order.py here.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
K=kernel,memcpy,memset,sync,event
W=$(mktemp -d)
for mode in both alone; do
  kinds=$K,streams; [ $mode = both ] && kinds=$K,correlate,streams
  (cd examples/torch && SYNCSPY_CUPTI_KINDS=$kinds SYNCSPY_OUTPUT=$W/$mode LD_PRELOAD=$PWD/../../.carry/lib/libsyncspy.so \
    timeout 60 python3 12_stream_prefetcher.py bad > $W/12-$mode.out 2>&1; echo "12 $mode exit $?")
  mv $W/$mode/*.sqlite $W/12-$mode.sqlite
done
python3 - $W > $OUT/meta-12.txt <<'PY'
import glob, sqlite3, sys
for f in sorted(glob.glob(sys.argv[1] + "/12-*.sqlite")):
    c = sqlite3.connect(f)
    print(f.split("/")[-1], dict(c.execute("select key, value from meta where key like 'cupti_streams%' or key = 'cupti_correlation'")))
    print("  gpu_streams:", c.execute("select * from gpu_streams").fetchall()[:8])
PY
cat $OUT/meta-12.txt
tar -czf $OUT/t12.tar.gz -C $W 12-both.sqlite 12-alone.sqlite
SYNCSPY_CUPTI_KINDS=$K,correlate,streams \
  ONLY='^(c0[1-9]|c1[0-9]_|c11[1-6]|d0[1-9]|d1[0-9]|d5[6-9]|t13_|t30_|t90_|t14[0-6])' JOBS=12 TOTAL_BUDGET_S=470 \
  timeout 500 bash tests/gpu/corpus.sh $OUT/corpus
rm -f $OUT/corpus/corpus-reports.json
tail -4 $OUT/corpus/corpus-summary.txt; grep FAIL $OUT/corpus/corpus-summary.txt | head
