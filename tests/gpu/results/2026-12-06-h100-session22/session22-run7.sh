# tests/gpu/results/2026-12-06-h100-session22/session22-run7.sh: device call of run 7 (README.md beside it):
# c109's shared build still crashed under fa97518's shim (12 of 12; the static one 0 of 12): in
# which configurations does it crash, 6 runs each (kinds, pause mode, sampling), with the shim of
# .carry/COMMIT and 3092367's (.carry/old); then bench/run.sh for both shims, interleaved
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L; S=$PWD; W=$(mktemp -d)
src=$S/examples/corpus/c109_clean_ranker_lanes_sync_outside_lock.cu
nvcc -O2 -g -arch=sm_90 -cudart shared -o $W/c109 $src -lpthread
try() { # LABEL SHIM ENV...: 6 runs, crashes counted, the last database's meta
  label=$1 shim=$2; shift 2; c=0
  for i in 1 2 3 4 5 6; do rm -rf $W/db; mkdir -p $W/db
    env SYNCSPY_OUTPUT=$W/db SYNCSPY_CUPTI=1 "$@" LD_PRELOAD=$shim $W/c109 > /dev/null 2>&1 || c=$((c+1)); done
  echo "$label: crashes $c of 6; $(python3 -c "import sqlite3,glob; [print(*(k+'='+str(v) for k,v in sqlite3.connect(f).execute(\"select key,value from meta where key like 'cupti_det%' or key in ('cupti_pauses','cupti_sample')\"))) for f in glob.glob('$W/db/*.sqlite')]" 2>&1)"
}
new=$S/.carry/lib/libsyncspy.so old=$S/.carry/old/libsyncspy.so
try default $new
try no-sync-kind $new SYNCSPY_CUPTI_KINDS=kernel,memcpy,memset,event,api
try no-api-kind $new SYNCSPY_CUPTI_KINDS=kernel,memcpy,memset,sync,event
try kernel-only $new SYNCSPY_CUPTI_KINDS=kernel
try api-only $new SYNCSPY_CUPTI_KINDS=api
try pause-disable $new SYNCSPY_CUPTI_PAUSE=disable
try sample-all $new SYNCSPY_CUPTI_SAMPLE=all
try sample-20/60 $new SYNCSPY_CUPTI_SAMPLE=20/60
try old-default $old
try old-sample-20/60 $old SYNCSPY_CUPTI_SAMPLE=20/60
for r in 1 2; do for s in new old; do eval shim=\$$s
  BENCH_ROUNDS=3 SYNCSPY_SHIM=$shim timeout 120 bash bench/run.sh $OUT/calls-$s-$r.txt > /dev/null 2>&1
  echo "bench $s $r: $(grep -A5 '^call ' $OUT/calls-$s-$r.txt | head -6 | tail -5 | awk '{print $1, $3}' | tr '\n' ' ')"; done; done
