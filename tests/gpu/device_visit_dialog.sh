#!/usr/bin/env bash
# One visit to the GPU machine for the Record dialog (issue: record from the window): runs the
# gpu_record_dialog test (Qt, offscreen) with the real warpline-record, keeps its screenshots and
# traces, and screenshots the main window on the PyTorch trace the dialog recorded. Carried:
# .device/bin (gpu_record_dialog, warpline, warpline-record, libwarpline-inject.so) and
# .device/qt-runtime.tar.xz (tests/gpu/qt_runtime.sh). Results under $OUT.
# With .device/openssh.tar.xz (tests/gpu/openssh_bundle.sh: the machine has no OpenSSH), it also
# runs an sshd on 127.0.0.1 and records there over SSH with the real recorder, from the command
# line (warpline-record --host) and from the dialog.
# The Qt programs run through the loader with --library-path, so Debian's libraries reach only
# them, not the recorder or python3 they start.
set -u
BIN=${BIN:-.device/bin}
OUT=${OUT:-/tmp/warpline-out}
rt=/tmp/warpline-qt
mkdir -p "$rt" "$OUT/shots"
tar -xJf .device/qt-runtime.tar.xz -C "$rt"
# The machine has no fontconfig configuration either: one that names the carried font.
cat > "$rt/fonts.conf" <<CONF
<?xml version="1.0"?>
<fontconfig><dir>$rt/fonts</dir><cachedir>$rt/fontcache</cachedir></fontconfig>
CONF
export FONTCONFIG_FILE=$rt/fonts.conf
export QT_PLUGIN_PATH=$rt/plugins QT_QPA_PLATFORM=offscreen QT_QPA_FONTDIR=$rt/fonts
export XDG_RUNTIME_DIR=/tmp/warpline-xdg && mkdir -p -m 700 "$XDG_RUNTIME_DIR"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export WARPLINE_RECORD=$BIN/warpline-record WARPLINE_TEST_SHOTS=$OUT/shots
loader=(/lib64/ld-linux-x86-64.so.2 --library-path "$rt/lib:$LD_LIBRARY_PATH")
log="$OUT/visit.log"
remote_setup() {
    local ssh_rt=/tmp/warpline-ssh d=/tmp/warpline-sshd
    [ -f "$d/sshd.pid" ] && kill "$(cat "$d/sshd.pid")" 2>/dev/null && sleep 0.5 # a warm machine
    rm -rf "$d"
    mkdir -p "$ssh_rt" "$d" /run/sshd && chmod 755 /run/sshd
    tar -xJf .device/openssh.tar.xz -C "$ssh_rt"
    id sshd >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /run/sshd \
        --shell /usr/sbin/nologin sshd
    local keygen=(env LD_LIBRARY_PATH="$ssh_rt/lib" "$ssh_rt/bin/ssh-keygen" -q -t ed25519 -N '')
    "${keygen[@]}" -f "$d/host_key" && "${keygen[@]}" -f "$d/user_key" || return 1
    cp "$d/user_key.pub" "$d/authorized_keys"
    cat > "$d/sshd_config" <<CONF
Port 2222
ListenAddress 127.0.0.1
HostKey $d/host_key
AuthorizedKeysFile $d/authorized_keys
PidFile $d/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
CONF
    env LD_LIBRARY_PATH="$ssh_rt/lib" "$ssh_rt/bin/sshd" -D -r -e -f "$d/sshd_config" \
        > "$OUT/sshd.log" 2>&1 &
    sleep 1
    echo "[127.0.0.1]:2222 $(cat "$d/host_key.pub")" > "$d/known_hosts"
    cat > "$d/ssh_config" <<CONF
Host wl-local
  HostName 127.0.0.1
  Port 2222
  User root
  IdentityFile $d/user_key
  IdentitiesOnly yes
  UserKnownHostsFile $d/known_hosts
  StrictHostKeyChecking yes
CONF
    # The recorder "there": sshd's sessions get a clean environment, so CUDA's libraries are
    # named again.
    cat > "$d/warpline-record" <<REC
#!/bin/sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
exec $(pwd)/$BIN/warpline-record "\$@"
REC
    chmod +x "$d/warpline-record"
    export WARPLINE_SSH_COMMAND="env LD_LIBRARY_PATH=$ssh_rt/lib $ssh_rt/bin/ssh -F $d/ssh_config"
    export WARPLINE_TEST_SSH_HOST=wl-local WARPLINE_TEST_REMOTE_RECORDER=$d/warpline-record
}
{
    if [ -f .device/openssh.tar.xz ]; then
        echo "== sshd on 127.0.0.1:2222 (carried OpenSSH 9.2)"
        if remote_setup; then echo "sshd up"; else echo "remote setup failed"; fi
    fi
    if [ -n "${WARPLINE_TEST_SSH_HOST:-}" ]; then
        echo "== warpline-record --host wl-local (real recorder there)"
        "$BIN/warpline-record" --host wl-local --remote-recorder "$WARPLINE_TEST_REMOTE_RECORDER" \
            --workload matmul -o "$OUT/shots/remote-matmul.warpline"
        echo "remote workload exit $?"
        mkdir -p /tmp/remote-work
        printf 'import torch\nx = torch.randn(2048, 2048, device="cuda")\nfor i in range(20):\n    x = torch.tanh(x @ x / 2048)\nprint("sum", x.sum().item())\n' > /tmp/remote-work/mm.py
        # sshd's sessions have the system's PATH: name the python3 that has PyTorch.
        py=$(command -v python3)
        "$BIN/warpline-record" --host wl-local --remote-recorder "$WARPLINE_TEST_REMOTE_RECORDER" \
            --remote-dir /tmp/remote-work -o "$OUT/shots/remote-python.warpline" -- "$py" mm.py
        echo "remote python exit $?"
        echo "== Stop (SIGTERM here) during a remote recording of a long PyTorch loop"
        printf 'import torch, time\nx = torch.randn(1024, 1024, device="cuda")\nfor i in range(600):\n    x = torch.tanh(x @ x / 1024)\n    torch.cuda.synchronize()\n    time.sleep(0.05)\n' > /tmp/remote-work/long.py
        timeout --preserve-status -s TERM 12 "$BIN/warpline-record" --host wl-local \
            --remote-recorder "$WARPLINE_TEST_REMOTE_RECORDER" --remote-dir /tmp/remote-work \
            -o "$OUT/shots/remote-stopped.warpline" -- "$py" long.py
        echo "remote stop exit $? (143: stopped by SIGTERM)"
        python3 - "$OUT/shots/remote-stopped.warpline" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda s: db.execute(s).fetchone()[0]
print("stopped trace: kernels", q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
      "status", q("SELECT value FROM WARPLINE_META WHERE key='status'"),
      "exit_code", q("SELECT value FROM WARPLINE_META WHERE key='exit_code'"))
PY
        echo "remote traces left there: $(ls ~/.cache/warpline 2>/dev/null | wc -l)"
        "$BIN/warpline-record" --host wl-local --remote-recorder /nowhere/warpline-record \
            --workload gelu -o /tmp/never.warpline
        echo "no recorder there: exit $?"
    fi
    echo "== machine"; date -u; uname -r
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import torch; print("torch", torch.__version__)'
    echo "== gpu_record_dialog"
    /usr/bin/time -f "gpu_record_dialog: %e s wall" "${loader[@]}" "$BIN/gpu_record_dialog"
    echo "gpu_record_dialog exit $?"
    echo "== main window on the trace the dialog recorded"
    "${loader[@]}" "$BIN/warpline" --screenshot "$OUT/shots/record-opened.png" --size 1600x1000 \
        "$OUT/shots/train.warpline"
    echo "screenshot exit $?"
    ls -la "$OUT/shots"
    tar -C "$OUT/shots" -czf "$OUT/traces.tgz" $(cd "$OUT/shots" && ls *.warpline) &&
        rm -f "$OUT"/shots/*.warpline
} > "$log" 2>&1
cat "$log"
