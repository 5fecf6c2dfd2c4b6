#!/usr/bin/env bash
# CPU sampling on the GPU machine (warpline-record -- PROGRAM samples by default): records the GPT
# training loop, says what its samples hold (rows, threads, how many stacks reach the program's own
# Python functions through CPython's perf trampolines, the main thread's hottest frames, trace
# bytes), and times a step untraced, traced without sampling and traced with it, alternating
# (ROUNDS, default 3; medians of each run's second half, as torch_gpt.py prints them), and with
# sampling but without CPython's perf trampolines; TUNING=1 adds sampling without context-switch
# records and without stacks (WARPLINE_CPU_SAMPLING_TUNING). SKIP_GPT_TRACE=1 leaves out the
# first part. With py-spy in $BIN, each round also times the untraced program under py-spy at
# 1 kHz. PIN="taskset -c 2-9" runs every variant on those cores (less spread between runs).
# LOOPS="gpt cnn" times the CNN loop (tests/gpu/torch_cnn.py, DataLoader workers) too; ROUNDS=0
# leaves the rounds out.
# TOGGLE_MS=500 first measures the cost inside single runs: TOGGLE_RUNS (default 2) runs of each
# loop of LOOPS, TOGGLE_STEPS steps each, with sampling turned on and off every TOGGLE_MS
# (WARPLINE_CPU_SAMPLING_TUNING=toggle=MS) and each step's time logged, compared by
# bench/sampling_toggle_cost.py. TOGGLE_VARIANTS (default "toggle") may add toggle-noswitch,
# toggle-nocallchain, toggle-rate100, toggle-perthread (the same without switch records, without
# stacks, at 100 Hz, with the per-thread clock where a clock per CPU is allowed), trampolines
# (untraced, CPython's perf trampolines switched in the same turns by the loop itself,
# tests/gpu/steplog.py) and py-spy (py-spy at 1 kHz paused in the same turns,
# bench/toggle_stopcont.py).
set -u
BIN=${BIN:-.device/bin}
ROUNDS=${ROUNDS:-3}
STEPS=${STEPS:-60}
OUT=${OUT:-/tmp/warpline-out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=$BIN/warpline-record
T=/tmp/cs; rm -rf $T; mkdir -p $T "$OUT"
{
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 --version
cat /proc/sys/kernel/perf_event_paranoid; id -u
if [ -z "${SKIP_GPT_TRACE:-}" ]; then
echo "== GPT loop, sampled"
$R -o $T/gpt-sampled.warpline -- python3 tests/gpu/torch_gpt.py --steps 30 2>&1 | tail -4
ls -la $T/gpt-sampled.warpline; ls /tmp/perf-*.map 2>/dev/null | head -3
python3 - $T/gpt-sampled.warpline <<'PY'
import sqlite3, sys, collections
db = sqlite3.connect(sys.argv[1])
q = lambda s: db.execute(s).fetchall()
meta = dict(q("SELECT key, value FROM WARPLINE_META"))
for k in ("cpu_sampling", "cupti_monotonic_start", "cupti_monotonic_end", "session_start_timestamp", "end_time"):
    print(k, meta.get(k))
print("errors", q("SELECT source, message FROM WARPLINE_ERRORS"))
print("samples", q("SELECT threadState, COUNT(*) FROM COMPOSITE_EVENTS GROUP BY threadState"))
print("sched", q("SELECT isSchedIn, threadState, COUNT(*) FROM SCHED_EVENTS GROUP BY 1, 2"))
print("times", q("SELECT MIN(start), MAX(start) FROM COMPOSITE_EVENTS"), "api", q("SELECT MIN(start), MAX(end) FROM CUPTI_ACTIVITY_KIND_RUNTIME"))
print("chains", q("SELECT COUNT(*), AVG(stackDepth), MAX(stackDepth) FROM SAMPLING_CALLCHAINS"))
s = dict(q("SELECT id, value FROM StringIds"))
py = q("SELECT COUNT(DISTINCT c.id) FROM SAMPLING_CALLCHAINS c JOIN StringIds m ON m.id = c.module WHERE m.value LIKE '%.py'")
print("samples with a .py frame", py, "of", q("SELECT COUNT(*) FROM COMPOSITE_EVENTS"))
print("threads", q("SELECT globalTid & 16777215, threadState, COUNT(*) FROM COMPOSITE_EVENTS GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 8"))
print("names", [(g & 16777215, s.get(n)) for n, _, g in q("SELECT * FROM ThreadNames")][:12])
main = q("SELECT globalTid FROM COMPOSITE_EVENTS GROUP BY globalTid ORDER BY COUNT(*) DESC LIMIT 1")[0][0]
leaf = collections.Counter(); own = collections.Counter()
for sid, sym, mod, d in q(f"SELECT c.id, c.symbol, c.module, c.stackDepth FROM SAMPLING_CALLCHAINS c JOIN COMPOSITE_EVENTS e ON e.id = c.id WHERE e.globalTid = {main} AND e.threadState = 1 ORDER BY c.id, c.stackDepth"):
    if d == 0: leaf[(s.get(sym), s.get(mod, "").rsplit("/", 1)[-1])] += 1
for k, v in leaf.most_common(12): print("  leaf", v, k)
chains = collections.defaultdict(list)
for sid, sym, mod in q(f"SELECT c.id, c.symbol, c.module FROM SAMPLING_CALLCHAINS c JOIN COMPOSITE_EVENTS e ON e.id = c.id WHERE e.globalTid = {main} ORDER BY c.id, c.stackDepth"):
    chains[sid].append((s.get(sym), s.get(mod, "")))
longest = max(chains.values(), key=len)
print("  longest stack", len(longest))
for f in longest[:40]: print("    ", f[0], "@", f[1].rsplit("/", 1)[-1])
PY
fi
LOOPS=${LOOPS:-gpt}
P=${PIN:-}
loop_cmd() { # the command line of loop $1 with $2 steps
  case $1 in
    gpt) echo "python3 tests/gpu/torch_gpt.py --steps $2" ;;
    cnn) echo "python3 tests/gpu/torch_cnn.py --steps $2" ;;
  esac
}
if [ -n "${TOGGLE_MS:-}" ]; then
  echo "== CPU sampling toggled every $TOGGLE_MS ms inside one run (the cost without the spread between runs)"
  [ -n "$P" ] && echo "   pinned: $P"
  for r in $(seq ${TOGGLE_RUNS:-2}); do
    for loop in $LOOPS; do
      for v in ${TOGGLE_VARIANTS:-toggle}; do
        rm -f $T/steps.log $T/toggles.log $T/t.warpline
        cmd="$(loop_cmd $loop ${TOGGLE_STEPS:-3000}) --step-log $T/steps.log"
        t0=$(date +%s.%N)
        case $v in
          trampolines)
            $P $cmd --toggle-trampolines $TOGGLE_MS 2>&1 | tail -1 | sed "s/^/  $loop $v run $r: /"
            mv $T/steps.log.toggles $T/toggles.log ;;
          py-spy)
            [ -x $BIN/py-spy ] || { echo "  py-spy: not carried"; continue; }
            $P python3 bench/toggle_stopcont.py --period-ms $TOGGLE_MS --log $T/toggles.log -- \
              $BIN/py-spy record --rate 1000 --nonblocking --subprocesses --format raw -o $T/p.txt -- $cmd 2>&1 \
              | grep step_ms | sed "s/^/  $loop $v run $r: /" ;;
          *)
            knobs=toggle=$TOGGLE_MS; rate=1000
            case $v in toggle-rate*) rate=${v#toggle-rate} ;; toggle-*) knobs=$knobs,${v#toggle-} ;; esac
            WARPLINE_CPU_SAMPLING_TUNING=$knobs WARPLINE_CPU_SAMPLING_TOGGLE_LOG=$T/toggles.log \
              $P $R --quiet --force --cpu-sampling-rate $rate -o $T/t.warpline -- $cmd 2>&1 | tail -1 | sed "s/^/  $loop $v run $r: /" ;;
        esac
        echo "  exit ${PIPESTATUS[0]}, $(awk "BEGIN {printf \"%.1f\", $(date +%s.%N) - $t0}") s"
        python3 bench/sampling_toggle_cost.py $T/steps.log $T/toggles.log --label "  $loop $v run $r" \
          || echo "  $loop $v run $r: no figure"
        [ -f $T/t.warpline ] && python3 - $T/t.warpline $T/toggles.log <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
t = [l.split() for l in open(sys.argv[2])]
on_s = sum((int(b[0]) - int(a[1])) / 1e9 for a, b in zip(t, t[1:]) if a[2] == "on")
n = lambda q: db.execute(q).fetchone()[0]
samples, switches = n("SELECT COUNT(*) FROM COMPOSITE_EVENTS"), n("SELECT COUNT(*) FROM SCHED_EVENTS")
main = n("SELECT COUNT(*) FROM COMPOSITE_EVENTS GROUP BY globalTid ORDER BY 1 DESC LIMIT 1")
print(f"    {samples} samples ({samples / on_s:.0f}/s of sampling, main thread {main / on_s:.0f}/s), "
      f"{switches} switch records ({switches / on_s:.0f}/s), {on_s:.1f} s sampled")
PY
      done
    done
  done
fi
echo "== step time: untraced / traced without sampling / with sampling (1 kHz) / the same"
echo "   without CPython's perf trampolines (PYTHONPERFSUPPORT=0)"
[ -n "$P" ] && echo "   pinned: $P"
timed() { # NAME COMMAND...: the program's step line and the seconds the whole run took
  local name=$1 t0; shift; t0=$(date +%s.%N)
  "$@" 2>&1 | grep step_ms | tail -1 | sed "s/^/  $name /"
  echo "    $(awk "BEGIN {printf \"%.1f\", $(date +%s.%N) - $t0}") s"
}
for r in $(seq $ROUNDS); do
 for loop in $LOOPS; do
  G=$(loop_cmd $loop $STEPS)
  echo "round $r: $loop"
  timed untraced $P $G
  timed no-sampling $P $R --quiet --force -o $T/a.warpline --no-cpu-sampling -- $G
  timed sampling-1kHz $P $R --quiet --force -o $T/b.warpline -- $G
  timed no-trampolines env PYTHONPERFSUPPORT=0 $P $R --quiet --force -o $T/d.warpline -- $G
  # py-spy (carried in $BIN when found there) sampling the same program's Python stacks at
  # 1 kHz without pausing it; the program's line only (py-spy prints its own).
  if [ -x $BIN/py-spy ]; then
    timed py-spy-1kHz $P $BIN/py-spy record --rate 1000 --nonblocking --subprocesses --format raw -o $T/p.txt -- $G
  fi
  if [ -n "${TUNING:-}" ]; then
    timed no-switches env WARPLINE_CPU_SAMPLING_TUNING=noswitch $P $R --quiet --force -o $T/e.warpline -- $G
    timed no-callchains env WARPLINE_CPU_SAMPLING_TUNING=nocallchain $P $R --quiet --force -o $T/f.warpline -- $G
  fi
  ls -l $T/a.warpline $T/b.warpline $T/d.warpline | awk '{print "  bytes", $5, $9}'
 done
done
[ -f $T/gpt-sampled.warpline ] && xz -T4 -6 -k $T/gpt-sampled.warpline && cp $T/gpt-sampled.warpline.xz "$OUT/"
} > "$OUT/cpusampling.log" 2>&1
cat "$OUT/cpusampling.log"
