# tests/gpu/results/2026-12-06-h100-session25/session25-run5.sh: device call of run 5 (README.md
# beside it). (1) Run 3's crash again, as run 3 ran it: 10_print_tensor's A/B under the default,
# pinned to two cores, 8 at once on core pairs 2-3 .. 14-15 (then 0-1 spare), 16 runs, Python's
# faulthandler on; (2) 08, 09, 11 and 13 in one process (reference_ab.sh as run 3: default beside
# torch.profiler, warm-up of 4 loops, 20 blocks), as many rounds as fit.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT
W=$(mktemp -d)
(cd examples/torch
for i in $(seq 16); do
  j=$(( (i - 1) % 7 + 1 ))
  (PYTHONFAULTHANDLER=1 EXAMPLES_AB=20 AB_WARMUP=4 EXAMPLES_AB_MODE=shim SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$W/d$i \
    LD_PRELOAD=$PWD/../../.carry/lib/libsyncspy.so taskset -c $((2 * j))-$((2 * j + 1)) timeout 120 \
    python3 10_print_tensor.py bad > $W/o$i 2> $W/e$i
   echo "run $i status $?" >> $W/status) &
  [ $((i % 7)) = 0 ] && wait
done
wait)
sort -k2 -n $W/status | tee $OUT/status.txt | grep -v "status [01]$"
for i in $(seq 16); do
  if ! grep -q "run $i status [01]$" $W/status; then
    { echo "== run $i"; grep -v "^ab_" $W/e$i | tail -80; ls -la $W/d$i; } >> $OUT/crashes.txt
  fi
done
head -150 $OUT/crashes.txt 2>/dev/null
echo "at ${SECONDS}s"
left=$((340 - SECONDS))
ONLY='^(08|09|11|13)' RUNS=3 BLOCKS=20 WARMUP=4 PIN=2-3 TOTAL_BUDGET_S=$((left - 10)) PARTIAL=$OUT/ab-partial.txt \
  CONFIGS="default profiler" timeout $left bash bench/reference_ab.sh $OUT/ab-08-13.txt
echo "reference_ab rc=$? at ${SECONDS}s"
grep -v "^raw\|^meta" $OUT/ab-08-13.txt
