# run2.sh: the writer's priority, in one process (bench/cupti_ab.sh MODE=shim, mlp8, cores 2,3):
# the default of the build carried (the writer at the program's priority while it keeps up,
# interpose/writer.c writer_priority), beside torch.profiler measured the same way, and the
# writer held at nice -10 from the start (AB_WRITER_NICE=-10: the builds before it, where the
# writer keeps up as it does here), interleaved, 4 rounds.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ cat .carry/COMMIT; nvidia-smi -L; date -u; } > $OUT/device.txt 2>&1
cat $OUT/device.txt
for round in 1 2 3 4; do
	PROFILER=1 MODE=shim AB_SIZE=mlp8 PIN=2,3 RUNS=1 timeout 100 bash bench/cupti_ab.sh $OUT/ab-default.txt
	echo "round $round default rc=$? $(date -u +%T)"
	AB_WRITER_NICE=-10 PROFILER=0 MODE=shim AB_SIZE=mlp8 PIN=2,3 RUNS=1 timeout 100 bash bench/cupti_ab.sh $OUT/ab-nice-10.txt
	echo "round $round nice-10 rc=$? $(date -u +%T)"
done
for cfg in default nice-10; do
	echo "== $cfg"; grep -E "paired overhead|thread (main|pt_autograd_0|syncspy-writer)|writer_nice" $OUT/ab-$cfg.txt
done
