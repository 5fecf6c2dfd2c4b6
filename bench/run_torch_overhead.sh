#!/usr/bin/env bash
# Step time of a launch-bound PyTorch MLP untraced, under Warpline (essential API calls, and every
# API call) and under torch.profiler (CPU + CUDA), alternated ROUNDS times in one run; then trace
# size per GPU event for both tools.
#   run_torch_overhead.sh WARPLINE_RECORD [ROUNDS] [SYNC]
set -u
record=$1
rounds=${2:-3}
sync=${3:-end}
here=$(cd "$(dirname "$0")" && pwd)
results=$(mktemp)
for r in $(seq "$rounds"); do
    echo "untraced $(python3 "$here/torch_mlp.py" --sync "$sync")" >>"$results"
    echo "warpline $("$record" --quiet --force -o /tmp/torch_mlp_warpline.warpline -- python3 "$here/torch_mlp.py" --sync "$sync")" >>"$results"
    echo "warpline-api-all $("$record" --quiet --force --api all -o /tmp/torch_mlp_allapi.warpline -- python3 "$here/torch_mlp.py" --sync "$sync")" >>"$results"
    echo "torch.profiler $(python3 "$here/torch_mlp.py" --sync "$sync" --profile torch)" >>"$results"
done
python3 - "$results" <<'PY'
import json, os, re, sqlite3, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) .*step_ms=(\S+)", line.replace("\n", " "))
    if m:
        rows.setdefault(m[1], []).append(float(m[2]))
base = statistics.median(rows["untraced"])
print(f"{'configuration':<16}{'ms/step':>10}{'ratio':>8}  runs")
for k in ("untraced", "warpline", "warpline-api-all", "torch.profiler"):
    if k in rows:
        v = statistics.median(rows[k])
        print(f"{k:<16}{v:>10.3f}{v / base:>8.2f}  {len(rows[k])}")
db = sqlite3.connect("/tmp/torch_mlp_warpline.warpline")
gpu = sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in (
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"))
size = os.path.getsize("/tmp/torch_mlp_warpline.warpline")
print(f"warpline trace: {size} bytes, {gpu} GPU events, {size / gpu:.0f} bytes per GPU event (all records included)")
events = json.load(open("/tmp/torch_mlp_profile.json"))["traceEvents"]
tgpu = sum(1 for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
tsize = os.path.getsize("/tmp/torch_mlp_profile.json")
print(f"torch.profiler JSON: {tsize} bytes, {tgpu} GPU events, {tsize / tgpu:.0f} bytes per GPU event")
PY
