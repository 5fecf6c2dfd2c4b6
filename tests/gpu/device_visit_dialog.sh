#!/usr/bin/env bash
# One visit to the GPU machine for the Record dialog (issue: record from the window): runs the
# gpu_record_dialog test (Qt, offscreen) with the real warpline-record, keeps its screenshots and
# traces, and screenshots the main window on the PyTorch trace the dialog recorded. Carried:
# .device/bin (gpu_record_dialog, warpline, warpline-record, libwarpline-inject.so) and
# .device/qt-runtime.tar.xz (tests/gpu/qt_runtime.sh). Results under $OUT.
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
{
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
} > "$log" 2>&1
cat "$log"
