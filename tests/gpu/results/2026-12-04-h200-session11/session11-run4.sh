# tests/gpu/results/2026-12-04-h200-session11/session11-run4.sh: device call of run 4 (README.md beside it):
# after the correlation-id fix (CUPTI-8), sample_compare.sh again (fidelity, check_clock.py);
# then where a 60-step reference loop's time goes under the default: 08 and 11 (bad) in five
# configurations, 2 rounds interleaved, pinned, each default run's meta.cupti_* kept
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; S=$(date +%s)
timeout 330 bash tests/gpu/sample_compare.sh $OUT/sample-compare.txt; echo "sample_compare rc=$? $(( $(date +%s) - S ))s"
for r in 1 2; do for w in 08_item_per_step 11_synchronize_per_step; do for c in plain default all disable cupti0; do
  [ $(( $(date +%s) - S )) -gt 540 ] && break 3
  d=$OUT/db-$w-$c-$r; e=(EXAMPLES_LOOP_TIME=1)
  case $c in default) e+=(LD_PRELOAD=$PWD/.carry/lib/libsyncspy.so SYNCSPY_OUTPUT=$d);; all) e+=(LD_PRELOAD=$PWD/.carry/lib/libsyncspy.so SYNCSPY_OUTPUT=$d SYNCSPY_CUPTI_SAMPLE=all);; disable) e+=(LD_PRELOAD=$PWD/.carry/lib/libsyncspy.so SYNCSPY_OUTPUT=$d SYNCSPY_CUPTI_PAUSE=disable);; cupti0) e+=(LD_PRELOAD=$PWD/.carry/lib/libsyncspy.so SYNCSPY_OUTPUT=$d SYNCSPY_CUPTI=0);; esac
  l=$(env "${e[@]}" SYNCSPY_QUIET=1 taskset -c 2-3 python3 examples/torch/$w.py bad 2>&1 >/dev/null | sed -n 's/^loop_ns=//p')
  m=$(python3 -c "import sqlite3,glob,sys;f=glob.glob('$d/*.sqlite');print(' '.join('%s=%s'%r for r in sqlite3.connect(f[0]).execute(\"select key,value from meta where key like 'cupti%' and key not in ('cupti_kinds')\")) if f else '-')")
  echo "loop $w $c r$r loop_ms=$((l/1000000)) $m" | tee -a $OUT/loops.txt; rm -rf $d
done; done; done
echo "rc=$? $(( $(date +%s) - S ))s"
