# tests/gpu/results/2026-12-05-h100-session17/session17-run1.sh: device call of run 1 (README.md beside it):
# issue 17 item 1, where the default's cost goes. (a) Each CUPTI activity kind's cost on issue
# 17's launch-bound loop (mlp8), inside one process: blocks traced with the kinds against blocks
# detached (bench/cupti_ab.sh, 40 blocks of 100 steps, 10 untimed steps after each switch).
# (b) Three PyTorch reference loops, plain / host side only / default / all, two rounds, with
# every step's time and what CUPTI did (bench/reference_overhead.sh).
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L; S=$(date +%s)
for k in kernel kernel,api kernel,memcpy,memset kernel,sync kernel,event kernel,memcpy,memset,api kernel,memcpy,memset,sync,event,api; do
	KINDS=$k AB_SIZE=mlp8 RUNS=1 PROFILER=0 PIN=2-5 timeout 60 bash bench/cupti_ab.sh $OUT/kinds-ab.txt >/dev/null 2>&1
	echo "kinds $k rc=$? $(( $(date +%s) - S ))s"
done
grep -E "SYNCSPY_CUPTI_KINDS|paired overhead" $OUT/kinds-ab.txt
ONLY='^(08|09|12)' CONFIGS="plain host default all" ROUNDS=2 WORKLOADS=torch TOTAL_BUDGET_S=280 timeout 330 bash bench/reference_overhead.sh $OUT/reference-diag.txt
echo "ref rc=$? $(( $(date +%s) - S ))s"; sed -n '/^workload/,$p' $OUT/reference-diag.txt
