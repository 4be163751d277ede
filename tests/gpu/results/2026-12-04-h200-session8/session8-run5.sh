# tests/gpu/results/2026-12-04-h200-session8/session8-run5.sh: device call of run 5 (README.md beside it):
# the last 150 s of device time: which CUPTI kinds beside kernels cost the loop, 2 rounds
export LD_LIBRARY_PATH=$PWD/.carry/lib; SIZES=mlp8 STEPS=1000 ROUNDS=2 PIN=2-5 CONFIGS="plain all:kernel,sync all:kernel,event all:kernel,memcpy,memset" PARTIAL=$OUT/bench-partial.txt timeout -s KILL 135 bash bench/cupti_overhead.sh $OUT/cupti-overhead-kinds.txt; cat $OUT/bench-partial.txt
