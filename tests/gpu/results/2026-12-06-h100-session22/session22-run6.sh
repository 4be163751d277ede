# tests/gpu/results/2026-12-06-h100-session22/session22-run6.sh: device call of run 6 (README.md beside it):
# CUPTI-10 on c109 (four threads each syncing its own stream: crashed in libcupti in 7 runs of 8
# with 3092367's shim): 10 runs of each build under the shim of .carry/COMMIT, as corpus.sh runs
# it, 10 more under 3092367's (.carry/old) for the comparison; one database's meta; then c109
# recorded again by corpus.sh; then bench/run.sh (the wrappers' cost, which the gate adds to)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L; S=$PWD; W=$(mktemp -d)
src=$S/examples/corpus/c109_clean_ranker_lanes_sync_outside_lock.cu
nvcc -O2 -g -arch=sm_90 -cudart shared -o $W/c109-shared $src -lpthread & nvcc -O2 -g -arch=sm_90 -o $W/c109-static $src -lpthread & wait
for shim in $S/.carry/lib/libsyncspy.so $S/.carry/old/libsyncspy.so; do for b in shared static; do
  crashes=0; for i in $(seq 10); do rm -rf $W/db; mkdir -p $W/db
    SYNCSPY_OUTPUT=$W/db SYNCSPY_CUPTI=1 NVTX_INJECTION64_PATH=$shim LD_PRELOAD=$shim $W/c109-$b > $W/out 2> $W/err || crashes=$((crashes+1)); done
  echo "shim=$shim build=$b crashes=$crashes of 10; last: $(tail -c 200 $W/out)"
  python3 -c "import sqlite3,sys,glob; [print(*(k+'='+str(v) for k,v in sqlite3.connect(f).execute(\"select key,value from meta where key like 'cupti_det%' or key in ('cupti_pauses','cupti_windows','cupti_sample')\"))) for f in glob.glob('$W/db/*.sqlite')]"
done; done
ONLY='^c109' JOBS=4 TOTAL_BUDGET_S=150 timeout 170 bash tests/gpu/corpus.sh "$OUT" | tail -12
BENCH_ROUNDS=6 timeout 200 bash bench/run.sh $OUT/calls.txt > $OUT/calls.log 2>&1; echo "bench rc=$?"; head -40 $OUT/calls.txt
