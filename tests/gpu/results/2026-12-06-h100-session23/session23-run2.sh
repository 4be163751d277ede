# tests/gpu/results/2026-12-06-h100-session23/session23-run2.sh: device call of run 2 (README.md
# beside it): run 1 found kernel records alone +4.9% on 12_stream_prefetcher while traced, and
# kernel,memcpy,memset,api +17.0%: which of the copies', memsets' and the API layers' records
# cost it (every call traced, 2 processes each, interleaved)
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L
ONLY='^12' RUNS=2 PIN=2-3 PARTIAL=$OUT/kinds-12-partial.txt \
  CONFIGS="kinds=kernel,memcpy,memset kinds=kernel,api kinds=kernel,runtime-api kinds=kernel,driver-api" \
  timeout 230 bash bench/reference_ab.sh $OUT/kinds-12.txt
tail -6 $OUT/kinds-12.txt
