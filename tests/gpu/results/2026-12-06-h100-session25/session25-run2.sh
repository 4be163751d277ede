# tests/gpu/results/2026-12-06-h100-session25/session25-run2.sh: device call of run 2 (README.md
# beside it). Where run 1's cost goes: timelines (bench/db_timeline.py: per 50 ms, sync points,
# kernels, the share the GPU timeline was off) of issue 17's mlp8 loop, 3000 steps, under the
# default, under SYNCSPY_CUPTI_SAMPLE=all and with the host side alone (SYNCSPY_CUPTI=0); and of
# 12_stream_prefetcher's in-process A/B (run 1's settings), its blocks' spans beside.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
W=$(mktemp -d)
for c in default all host; do
  case $c in default) e=;; all) e=SYNCSPY_CUPTI_SAMPLE=all;; host) e=SYNCSPY_CUPTI=0;; esac
  env $e SIZES=mlp8 SYNCSPY_OUTPUT=$W/m-$c SYNCSPY_QUIET=1 LD_PRELOAD=$PWD/.carry/lib/libsyncspy.so \
    taskset -c 2-5 python3 bench/torch_step.py 3000 > $W/m-$c.out 2>&1
  { echo "== mlp8 $c: $(tail -1 $W/m-$c.out)"; python3 bench/db_timeline.py $W/m-$c/*.sqlite 50; } >> $OUT/timeline-mlp8.txt
done
grep "==\|sync points per s\|^#" $OUT/timeline-mlp8.txt
(cd examples/torch && EXAMPLES_AB=20 AB_WARMUP=4 EXAMPLES_AB_MODE=shim SYNCSPY_OUTPUT=$W/t12 SYNCSPY_QUIET=1 \
  LD_PRELOAD=$PWD/../../.carry/lib/libsyncspy.so taskset -c 2-3 python3 12_stream_prefetcher.py bad > /dev/null 2> $W/t12.err)
{ grep "^ab" $W/t12.err; python3 bench/db_timeline.py $W/t12/*.sqlite 10; } > $OUT/timeline-12.txt
grep "^ab \|^ab_total\|^#" $OUT/timeline-12.txt
echo "at ${SECONDS}s"
