# tests/gpu/results/2026-12-06-session26/session26-run2.sh: device call of run 2 (README.md beside
# it). (1) Run 1's hunt again with the exit notice (SHIM-8, CUPTI-14), as tests/gpu/exit_hunt.sh
# (new, from run 1's script) runs it: the A/Bs of 10 and 08 (20 blocks after 4) as in run 1, of
# 09, 11, 12, 13 in turn, and plain runs of all six, 7 at once, for 150 s (run 1: 4 of 168
# processes ended in SIGSEGV); (2) as time is left of 190 s, issue 17 item 1: the default's GPU
# idle and overlap beside continuous tracing on the mlp8 loop (sample_compare.sh, RUNS=1).
# Not run in session 26 (no machine could be started; README.md): the next session runs it first.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi --query-gpu=name --format=csv,noheader
HUNT_S=150 bash tests/gpu/exit_hunt.sh $OUT
echo "exit_hunt rc=$?"
head -c 20000 $OUT/crashes.txt 2>/dev/null
left=$((190 - SECONDS)); echo "at ${SECONDS}s"; [ $left -gt 60 ] || exit 0
RUNS=1 ONLY='^torch_step' timeout $left bash tests/gpu/sample_compare.sh $OUT/sample-compare.txt
echo "sample_compare rc=$? at ${SECONDS}s"
tail -40 $OUT/sample-compare.txt
