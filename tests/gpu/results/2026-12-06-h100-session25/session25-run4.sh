# tests/gpu/results/2026-12-06-h100-session25/session25-run4.sh: device call of run 4 (README.md
# beside it). Run 3's 10_print_tensor A/B under the default ended in SIGSEGV once (status 139,
# after its figures were printed): the same A/B 16 times (8 at once, 16 cores), Python's
# faulthandler on (every thread's Python stack at the signal), gdb's backtrace where gdb exists.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; which gdb; ulimit -c unlimited
W=$(mktemp -d)
cd examples/torch
for i in $(seq 16); do
  (PYTHONFAULTHANDLER=1 EXAMPLES_AB=20 AB_WARMUP=4 EXAMPLES_AB_MODE=shim SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$W/d$i \
    LD_PRELOAD=$PWD/../../.carry/lib/libsyncspy.so timeout 120 python3 10_print_tensor.py bad > $W/o$i 2> $W/e$i
   echo "run $i status $?" >> $W/status) &
  [ $((i % 8)) = 0 ] && wait
done
wait
sort -k2 -n $W/status | tee $OUT/status.txt
for i in $(seq 16); do
  if ! grep -q "run $i status [01]$" $W/status; then
    { echo "== run $i"; grep -v "^ab_" $W/e$i | tail -80; ls -la $W/d$i; } >> $OUT/crashes.txt
  fi
done
head -c 20000 $OUT/crashes.txt 2>/dev/null | head -150
echo "at ${SECONDS}s"
