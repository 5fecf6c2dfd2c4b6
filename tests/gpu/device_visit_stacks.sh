#!/usr/bin/env bash
# Python stacks on the GPU machine (warpline-record --python-stacks): records the GPT training
# loop with stacks, says what the trace holds (stacks per API call, where the GEMMs were launched
# from), and measures the cost against the default recording and against torch.profiler with
# with_stack=True, alternating (ROUNDS, default 3), on the GPT loop and on the launch-bound MLP.
# The trace and the profiler's JSON come back xz-compressed in $OUT.
#   BEFORE=DIR    also times the recorder in DIR with --python-stacks (an older build), side by side
#   PROFILER=0    leaves out the torch.profiler runs
#   MLP_STEPS=N   MLP steps per run (default 300)
#   PROBES=DIR    first times the stack reader alone (bench/python_stacks_cost.py) in the probe
#                 libraries DIR/*.so (the python_stacks test's, built from the commits compared)
# After each --python-stacks MLP run it prints the recorder's own count of the time spent reading
# stacks inside the program (WARPLINE_META python_stacks).
set -u
BIN=${BIN:-.device/bin}
ROUNDS=${ROUNDS:-3}
BEFORE=${BEFORE:-}
PROFILER=${PROFILER:-1}
MLP_STEPS=${MLP_STEPS:-300}
PROBES=${PROBES:-}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=$BIN/warpline-record
T=/tmp/s; rm -rf $T; mkdir -p $T
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 --version
python3 -c 'import torch; print("torch", torch.__version__)'
[ -n "$PROBES" ] && python3 bench/python_stacks_cost.py $PROBES/*.so
meta() { python3 -c "import sqlite3,sys; print('   ', sqlite3.connect(sys.argv[1]).execute(\"SELECT value FROM WARPLINE_META WHERE key='python_stacks'\").fetchone()[0])" $1; }
echo "== GPT loop with --python-stacks"
$R --python-stacks -o $T/torch-gpt-stacks.warpline -- python3 tests/gpu/torch_gpt.py --steps 20 2>&1 | grep -v "^warpline-record: process"
python3 - $T/torch-gpt-stacks.warpline <<'PY'
import sqlite3, sys, collections
db = sqlite3.connect(sys.argv[1])
q = lambda s: db.execute(s).fetchall()
print("meta python_stacks:", q("SELECT value FROM WARPLINE_META WHERE key='python_stacks'"))
print("runtime rows", q("SELECT COUNT(*), COUNT(callchainId) FROM CUPTI_ACTIVITY_KIND_RUNTIME"))
print("chains", q("SELECT COUNT(DISTINCT id), COUNT(*), MAX(stackDepth) FROM CUDA_CALLCHAINS"))
s = dict(q("SELECT id, value FROM StringIds"))
chains = collections.defaultdict(list)
for cid, sym, mod, depth in q("SELECT id, symbol, module, stackDepth FROM CUDA_CALLCHAINS ORDER BY id, stackDepth"):
    chains[cid].append((s.get(sym), s.get(mod)))
rows = q("""SELECT k.demangledName, r.callchainId, r.globalTid FROM CUPTI_ACTIVITY_KIND_KERNEL k
            JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId""")
withs = sum(1 for _, c, _ in rows if c)
print("kernels with a launch:", len(rows), "with a stack:", withs)
gemm = collections.Counter()
for name, c, tid in rows:
    n = s.get(name, "")
    if c and ("nvjet" in n or "gemm" in n.lower()):
        user = next((m for f, m in chains[c] if "torch_gpt.py" in (m or "")), None)
        gemm[user] += 1
print("GEMM kernels by innermost torch_gpt.py frame:", gemm.most_common(10))
first = next(iter(chains.values()))
print("one stack:", first[:8])
PY
echo "== cost: GPT loop (median step ms over the second half)"
for r in $(seq $ROUNDS); do
    echo "untraced      $(python3 tests/gpu/torch_gpt.py --steps 40 | grep -o 'step_ms=[0-9.]*')"
    echo "warpline      $($R --quiet -o $T/o1.warpline --force -- python3 tests/gpu/torch_gpt.py --steps 40 | grep -o 'step_ms=[0-9.]*')"
    echo "warpline+py   $($R --quiet --python-stacks -o $T/o2.warpline --force -- python3 tests/gpu/torch_gpt.py --steps 40 | grep -o 'step_ms=[0-9.]*')"
    [ -n "$BEFORE" ] && echo "before+py     $($BEFORE/warpline-record --quiet --python-stacks -o $T/o3.warpline --force -- python3 tests/gpu/torch_gpt.py --steps 40 | grep -o 'step_ms=[0-9.]*')"
    [ "$PROFILER" = 1 ] && echo "torch+stack   $(python3 tests/gpu/torch_gpt.py --steps 40 --torch-profiler $T/gpt-profile.json | grep -o 'step_ms=[0-9.]*')"
done
ls -la $T/o1.warpline $T/o2.warpline $T/gpt-profile.json 2>/dev/null
python3 - $T/o1.warpline $T/o2.warpline <<'PY'
import sqlite3, sys, os
a, b = sys.argv[1], sys.argv[2]
n = sqlite3.connect(b).execute("SELECT COUNT(callchainId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
print(f"trace size {os.path.getsize(a)} -> {os.path.getsize(b)} bytes: {(os.path.getsize(b)-os.path.getsize(a))/max(n,1):.1f} bytes per call with a stack ({n} calls)")
PY
echo "== cost: launch-bound MLP, $MLP_STEPS steps (mean step ms)"
MLP="python3 bench/torch_mlp.py --sync end --steps $MLP_STEPS"
for r in $(seq $ROUNDS); do
    echo "untraced      $($MLP | grep -o 'step_ms=[0-9.]*')"
    echo "warpline      $($R --quiet -o $T/m1.warpline --force -- $MLP | grep -o 'step_ms=[0-9.]*')"
    echo "warpline+py   $($R --quiet --python-stacks -o $T/m2.warpline --force -- $MLP | grep -o 'step_ms=[0-9.]*')"
    meta $T/m2.warpline
    [ -n "$BEFORE" ] && echo "before+py     $($BEFORE/warpline-record --quiet --python-stacks -o $T/m3.warpline --force -- $MLP | grep -o 'step_ms=[0-9.]*')"
    [ "$PROFILER" = 1 ] && echo "torch+stack   $($MLP --profile torch-stack --profile-out $T/mlp-profile.json | grep -o 'step_ms=[0-9.]*')"
done
xz -T4 -6 -c $T/torch-gpt-stacks.warpline > $OUT/torch-gpt-stacks.warpline.xz
[ "$PROFILER" = 1 ] && python3 tests/gpu/torch_gpt.py --steps 6 --torch-profiler $T/gpt-stack-small.json > /dev/null && xz -T4 -6 -c $T/gpt-stack-small.json > $OUT/torch-gpt-stack.pt.trace.json.xz
ls -la $OUT
