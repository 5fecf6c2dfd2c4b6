#!/usr/bin/env bash
# gpu-labelled test: the allreduce workload as a two-rank job (one recording process per GPU),
# balanced and with rank 1 slowed. Checks, with python3's sqlite3 (the GPU machine has no Qt): one
# complete trace per rank with its RANK/WORLD_SIZE; the k-th NCCL kernel ends within 200 µs on
# both ranks on the host's shared clock (the collective ends together); with the slowed rank,
# rank 1 is the last to start its NCCL kernel in most steps, by more than a millisecond; no NVTX
# range (NCCL's ncclCommInitRank included) is left open.
# The recorder must exit 0 and every check must hold. Needs two GPUs and NCCL (skips otherwise,
# exit 77).
#   record_ranks.sh WARPLINE_RECORD [OUTDIR]
set -u
record=$1
if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -lt 2 ]; then
    echo "SKIP: fewer than two NVIDIA GPUs here; this gpu test needs two (ctest -L gpu on such a machine)"
    exit 77
fi
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on shared hosts
out=${2:-$(mktemp -d)}
mkdir -p "$out"
fail=0
for variant in balanced slow; do
    extra=""; [ $variant = slow ] && extra="--slow-rank 1"
    # shellcheck disable=SC2086
    "$record" --workload allreduce --gpus 2 --steps 10 $extra --quiet --force -o "$out/$variant.warpline"
    code=$?
    echo "$variant: exit $code"
    if [ $code -ne 0 ]; then
        echo "FAIL $variant: warpline-record exited $code"
        fail=1
    fi
    python3 - "$variant" "$out/$variant.rank0.warpline" "$out/$variant.rank1.warpline" <<'PY' || fail=1
import sqlite3, sys
variant, paths = sys.argv[1], sys.argv[2:]
ok = True
def check(what, cond):
    global ok
    print(("ok   " if cond else "FAIL ") + f"{variant}: {what}")
    ok = ok and cond
starts, ends = [], []
for r, path in enumerate(paths):
    db = sqlite3.connect(path)
    meta = dict(db.execute("SELECT key, value FROM WARPLINE_META"))
    check(f"rank {r} trace complete", meta.get("status") == "complete")
    check(f"rank {r} stores its rank and world size", meta.get("env_RANK") == str(r) and meta.get("env_WORLD_SIZE") == "2")
    t0 = int(meta["session_start_timestamp"])
    rows = db.execute("""SELECT k.start, k."end" FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nccl%' ORDER BY k.start""").fetchall()
    check(f"rank {r} has one NCCL kernel per step", len(rows) == 10)
    open_ranges = db.execute("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end IS NULL").fetchone()[0]
    check(f"rank {r}: no NVTX range left open (NCCL closes its own through the payload extension)", open_ranges == 0)
    starts.append([t0 + s for s, _ in rows]); ends.append([t0 + e for _, e in rows])
k = min(map(len, ends))
spread = sorted(abs(ends[0][i] - ends[1][i]) for i in range(k))
check(f"collectives end together on the shared clock (median spread {spread[k // 2]} ns)", k > 0 and spread[k // 2] < 200_000)
late = [starts[1][i] - starts[0][i] for i in range(k)]
if variant == "slow":
    check("rank 1 reaches the all-reduce more than 1 ms after rank 0 in most steps",
          sum(d > 1_000_000 for d in late) > k // 2)
sys.exit(0 if ok else 1)
PY
done
exit $fail
