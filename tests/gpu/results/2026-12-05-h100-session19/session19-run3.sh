# tests/gpu/results/2026-12-05-h100-session19/session19-run3.sh: device call of run 3 (README.md beside it):
# (a) how long a stack size set takes with a kernel queued (stack_limit_probe.cu); (b) c90 without
# the shim three times (its checksum differed between run 1's two plain runs); (c) t113's losses
# without the shim (it failed its own check in run 1); (d) c90 and d42 recorded with the shim that
# records cudaDeviceSetLimit/cuCtxSetLimit; (e) issue 17 item 1 in one process: 13's step loop
# (reference_ab.sh, default and torch.profiler) and mlp8 (cupti_ab.sh MODE=shim)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=tests/gpu/results/2026-12-05-h100-session19; cat .carry/COMMIT; nvidia-smi -L; S=$(date +%s)
nvcc -O2 -arch=sm_90 -o /tmp/probe $R/stack_limit_probe.cu && /tmp/probe 2>&1 | tee $OUT/stack-limit-probe.txt
nvcc -O2 -g -arch=sm_90 -o /tmp/c90 examples/corpus/c90_stellar_lines_stack_limit_scope.cu -lpthread && for i in 1 2 3; do /tmp/c90; done 2>&1 | tee $OUT/c90-plain.txt
echo "probe+c90 $(( $(date +%s) - S ))s"
sed -e 's/    ok = math.isfinite/    print("first", first, "last", last, "acc", epoch_acc, "losses", losses.tolist()); ok = math.isfinite/' examples/corpus/t113_protonet_sampler_cuda_class_iter.py >/tmp/t113dbg.py && timeout 60 python3 /tmp/t113dbg.py 2>&1 | tail -5 | tee $OUT/t113-debug.txt
echo "t113 $(( $(date +%s) - S ))s"
ONLY='^(c90|d42)' JOBS=4 TOTAL_BUDGET_S=100 timeout 120 bash tests/gpu/corpus.sh "$OUT/corpus"; echo "corpus rc=$? $(( $(date +%s) - S ))s"
ONLY='^13' RUNS=1 CONFIGS="default profiler" PARTIAL=$OUT/reference-ab-partial.txt timeout 80 bash bench/reference_ab.sh $OUT/reference-ab.txt; echo "reference_ab rc=$? $(( $(date +%s) - S ))s"
MODE=shim AB_SIZE=mlp8 RUNS=1 PIN=2-5 timeout 150 bash bench/cupti_ab.sh $OUT/mlp8-ab.txt; echo "mlp8 shim ab rc=$? $(( $(date +%s) - S ))s"
