# the torch loop's stack cost split, native and Python, CUPTI off
M=$PWD
for d in 32 8; do rm -rf /tmp/db; SYNCSPY_CUPTI=0 SYNCSPY_QUIET=1 SYNCSPY_STACK_DEPTH=$d SYNCSPY_OUTPUT=/tmp/db LD_PRELOAD=$M/.carry/lib/libsyncspy.so SIZES=small python3 bench/torch_step.py 2000
python3 - $d <<'PY'
import sqlite3,glob,sys
c=sqlite3.connect(glob.glob('/tmp/db/*.sqlite')[0])
m=dict(c.execute('select key,value from meta'))
t=int(m.get('stacks_taken',0)) or 1
print({k:m[k] for k in m if 'stack' in k})
print('depth',sys.argv[1],'native/stack',int(m['stack_cost_native_ns'])//t,'py/stack',int(m['stack_cost_python_ns'])//t)
if sys.argv[1]=='32':
  for kind,depth,frames in c.execute("select kind,depth,frames from stacks s where id in (select native_stack_id from calls group by native_stack_id order by count(*) desc limit 1) or id in (select py_stack_id from calls group by py_stack_id order by count(*) desc limit 1)"):
    print(kind,depth); print(frames)
PY
done
which perf gdb valgrind
