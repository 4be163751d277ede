# run1.sh: where the ~5% that recording costs issue 17's
# launch-bound loop (bench/torch_step.py mlp8) goes. One process per configuration and round,
# blocks of 100 steps with the whole recording on and off in turn (bench/cupti_ab.sh
# MODE=shim), each thread's CPU time per step in the on and the off blocks beside the step
# time; configurations interleaved, 3 rounds: the default; the writer thread at nice 0 instead
# of the raised priority it takes as root (AB_WRITER_NICE=0); the host side alone
# (SYNCSPY_CUPTI=0); both; no stacks (SYNCSPY_STACK_DEPTH=0). torch.profiler beside it, measured
# the same way in the default's processes.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ cat .carry/COMMIT; nvidia-smi -L; nproc; id -u; command -v perf py-spy; date -u; } > $OUT/device.txt 2>&1
cat $OUT/device.txt
for round in 1 2 3; do
	for cfg in default nice0 cupti0 cupti0-nice0 nostack; do
		case $cfg in
		default) set -- PROFILER=1 ;;
		nice0) set -- PROFILER=0 AB_WRITER_NICE=0 ;;
		cupti0) set -- PROFILER=0 CUPTI=0 ;;
		cupti0-nice0) set -- PROFILER=0 CUPTI=0 AB_WRITER_NICE=0 ;;
		nostack) set -- PROFILER=0 SYNCSPY_STACK_DEPTH=0 ;;
		esac
		env "$@" MODE=shim AB_SIZE=mlp8 PIN=2,3 RUNS=1 timeout 100 bash bench/cupti_ab.sh $OUT/ab-$cfg.txt
		echo "round $round $cfg rc=$? $(date -u +%T)"
	done
done
for cfg in default nice0 cupti0 cupti0-nice0 nostack; do
	echo "== $cfg"; grep -E "paired overhead|cpu of thread|adds" $OUT/ab-$cfg.txt
done
