# tests/gpu/results/2026-12-06-h100-session23/session23-run4.sh: device call of run 4 (README.md
# beside it): CUPTI-11's shim (callbacks on the wrapped functions while traced, unsubscribed at
# every pause before CUPTI-8's detach) where threads wait for the GPU beside a detach: c109's
# shared build 8 times (session 22's crash), then the ninth and tenth sets' CUDA C and driver
# workloads through tests/gpu/corpus.sh (session 22 run 8: 310 checks, 0 failed).
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L; S=$PWD; W=$(mktemp -d)
nvcc -O2 -g -arch=sm_90 -cudart shared -o $W/c109 examples/corpus/c109_clean_ranker_lanes_sync_outside_lock.cu -lpthread
c=0; for i in 1 2 3 4 5 6 7 8; do rm -rf $W/db; mkdir -p $W/db
  SYNCSPY_OUTPUT=$W/db SYNCSPY_CUPTI=1 LD_PRELOAD=$S/.carry/lib/libsyncspy.so $W/c109 > $W/out 2>&1 || c=$((c+1)); done
echo "c109 shared: crashes $c of 8; $(python3 -c "import sqlite3,glob; [print(*(k+'='+str(v) for k,v in sqlite3.connect(f).execute(\"select key,value from meta where key like 'cupti_det%' or key in ('cupti_pauses','cupti_sample','cupti_correlation')\"))) for f in glob.glob('$W/db/*.sqlite')]" 2>&1)" | tee $OUT/c109.txt
ONLY='^(c(10[5-9]|110)|d5[2-5]|c9[7-9]|c10[0-4]|d4[7-9]|d5[01])' JOBS=12 TOTAL_BUDGET_S=330 timeout 360 bash tests/gpu/corpus.sh $OUT/corpus
rm -f $OUT/corpus/corpus-reports.json $OUT/corpus/corpus-traces*.tar.gz
tail -4 $OUT/corpus/corpus-summary.txt; grep FAIL $OUT/corpus/corpus-summary.txt | head
