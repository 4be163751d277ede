# tests/gpu/results/2026-12-06-h100-session23/session23-run5.sh: device call of run 5 (README.md
# beside it): torch.profiler under CUPTI-11's shim (Kineto makes a callback subscriber while
# syncspy holds CUPTI's one: syncspy must make way, so that the profiler sees what it sees
# without the shim): the profiler's CUDA kernel events counted with and without the shim, twice.
export LD_LIBRARY_PATH=$PWD/.carry/lib NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cat .carry/COMMIT; nvidia-smi -L; W=$(mktemp -d)
cat > $W/prof.py <<'PY'
import torch
from torch.profiler import ProfilerActivity, profile
x = torch.randn(512, 512, device="cuda")
for _ in range(20):
    x = torch.tanh(x @ x)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(50):
        x = torch.tanh(x @ x)
    s = x.sum().item()
events = prof.events()
kernels = sum(1 for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
runtime = sum(1 for e in events if e.name.startswith("cuda") and e.device_type != torch.autograd.DeviceType.CUDA)
print("profiler events: cuda kernels/copies %d, cuda runtime calls %d, finite %s" % (kernels, runtime, s == s))
PY
for r in 1 2; do
  echo "without shim: $(python3 $W/prof.py 2>&1 | grep "profiler events")"
  rm -rf $W/db; echo "with shim:    $(SYNCSPY_OUTPUT=$W/db LD_PRELOAD=$PWD/.carry/lib/libsyncspy.so python3 $W/prof.py 2>&1 | grep "profiler events")"
  python3 -c "import sqlite3,glob; [print('  meta:', dict(sqlite3.connect(f).execute(\"select key,value from meta where key in ('cupti','cupti_correlation','cupti_detach_fallback')\"))) for f in glob.glob('$W/db/*.sqlite')]"
done 2>&1 | tee $OUT/profiler.txt
