# the session's last device call: stack cost with more rounds, the torch loop's split, reference workloads
set -u
OUT=$1
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
cat .carry/COMMIT
timeout 60 bash split.sh > $OUT/split.txt 2>&1
PIN=5 ROUNDS=7 timeout 130 bash bench/stack_cost.sh $OUT/stack.txt >>$OUT/devrun.log 2>&1
DEBUG_INFO=1 PIN=3 JOBS=8 PARTS="reference" TOTAL_BUDGET_S=110 timeout 125 bash tests/gpu/run.sh "$OUT/ref" >>$OUT/devrun.log 2>&1
[ -d $OUT/ref ] && { grep "result:\|commit:" $OUT/ref/summary.txt; cp $OUT/ref/summary.txt $OUT/summary.txt; cp $OUT/ref/reports.json $OUT/reports.json; rm -rf $OUT/ref; }
cat $OUT/split.txt | cut -c1-300; grep -E "added|shim timed" $OUT/stack.txt
