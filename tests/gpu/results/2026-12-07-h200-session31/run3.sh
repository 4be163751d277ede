# run3.sh: issue 17's launch-bound loop (bench/torch_step.py mlp8) in separate processes, as the
# issue measured it: plain, the default (shim+cupti) and torch.profiler, interleaved, 8 rounds (RUN3_ROUNDS),
# pinned to cores 2 and 3, medians and paired medians (bench/cupti_overhead.sh).
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{ cat .carry/COMMIT; nvidia-smi -L; date -u; } > $OUT/device.txt 2>&1
cat $OUT/device.txt
ROUNDS=${RUN3_ROUNDS:-8} SIZES=mlp8 PIN=2,3 STEPS=1000 CONFIGS="plain shim+cupti profiler" \
  PARTIAL=$OUT/overhead-partial.txt timeout ${RUN3_LIMIT_S:-420} bash bench/cupti_overhead.sh $OUT/overhead.txt > $OUT/overhead.log 2>&1
echo "rc=$?"; if [ -f $OUT/overhead.txt ]; then grep -v "^#" $OUT/overhead.txt | head -30; else tail -40 $OUT/overhead-partial.txt; fi; date -u
