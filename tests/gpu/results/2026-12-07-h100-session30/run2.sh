# tests/gpu/results/2026-12-07-h100-session30/run2.sh: issue 17's launch-bound loop (mlp8) from
# the inside and the host side alone: (1) one process, blocks of 100 steps on and off
# (bench/cupti_ab.sh MODE=shim: syncspy_stop/syncspy_start, the whole recording, host rows and
# GPU timeline as the default has them), beside torch.profiler measured the same way; (2)
# separate processes, the host side alone (shim: SYNCSPY_CUPTI=0) beside plain, interleaved.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L; date -u
MODE=shim AB_SIZE=mlp8 PIN=2,3 RUNS=3 timeout 220 bash bench/cupti_ab.sh $OUT/ab-mlp8.txt
grep -v "^#" $OUT/ab-mlp8.txt | head -20; date -u
ROUNDS=8 SIZES=mlp8 PIN=2,3 STEPS=1500 CONFIGS="plain shim" \
  PARTIAL=$OUT/overhead-host-partial.txt timeout 230 bash bench/cupti_overhead.sh $OUT/overhead-host.txt > $OUT/overhead-host.log 2>&1
grep -A4 "median_us" $OUT/overhead-host.txt; date -u
