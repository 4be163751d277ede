# one device call of this session: the stack split in the torch loop, CUPTI per kind, the sampler, stacks, reference
set -u
OUT=$1
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
cat .carry/COMMIT
timeout 90 bash split.sh > $OUT/split.txt 2>&1
for k in ${KINDS_LIST:-kernel api sync kernel,memcpy,memset,sync,event kernel,memcpy,memset,sync,event,api}; do KINDS=$k PROFILER=0 RUNS=1 PIN=3 timeout 60 bash bench/cupti_ab.sh $OUT/cupti-kinds.txt >>$OUT/devrun.log 2>&1; done
SAMPLE=100/1000 RUNS=1 PIN=3 timeout 120 bash bench/cupti_ab.sh $OUT/cupti-sample.txt >>$OUT/devrun.log 2>&1
[ "${STACK:-1}" = 1 ] && PIN=5 ROUNDS=5 timeout 150 bash bench/stack_cost.sh $OUT/stack.txt >>$OUT/devrun.log 2>&1
[ "${REF:-1}" = 1 ] && DEBUG_INFO=1 PIN=3 JOBS=8 PARTS="reference" TOTAL_BUDGET_S=150 timeout 170 bash tests/gpu/run.sh "$OUT/ref" >>$OUT/devrun.log 2>&1
[ -d $OUT/ref ] && { tail -n 30 $OUT/ref/summary* 2>/dev/null | cut -c1-200; tar czf $OUT/ref.tgz -C $OUT ref && rm -rf $OUT/ref; }
cut -c1-300 $OUT/split.txt; grep -hE "^# torch|adds|^cupti run|stacks took" $OUT/cupti-*.txt | cut -c1-300; grep -E "added|shim timed" $OUT/stack.txt
