#!/usr/bin/env bash
# Packs what Warpline's Qt programs need to run on the GPU machine, which has no Qt: the shared
# libraries of the given binaries (and of Qt's offscreen platform plugin) from this Debian 12
# machine, the plugin itself and one font (the machine has none), into ARCHIVE (.tar.xz).
# libc, libm, libstdc++, libgcc_s and the loader stay out: the GPU machine's newer copies serve,
# and so do its libsqlite3 and CUDA's libraries.
#   qt_runtime.sh ARCHIVE BINARY...
# There, after `tar -xJf ARCHIVE -C DIR`:
#   export LD_LIBRARY_PATH=DIR/lib:$LD_LIBRARY_PATH QT_PLUGIN_PATH=DIR/plugins \
#          QT_QPA_PLATFORM=offscreen QT_QPA_FONTDIR=DIR/fonts
set -euo pipefail
archive=$1
shift
plugins=$(qtpaths6 --query QT_INSTALL_PLUGINS 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/qt6/plugins)
offscreen=$plugins/platforms/libqoffscreen.so
font=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
for f in "$offscreen" "$font"; do
    [ -f "$f" ] || { echo "qt_runtime.sh: $f is missing (apt-get install qt6-base-dev fonts-dejavu-core)" >&2; exit 2; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/plugins/platforms" "$stage/fonts"
cp "$offscreen" "$stage/plugins/platforms/"
cp "$font" "$stage/fonts/"
ldd "$@" "$offscreen" | awk '/=> \// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux-x86-64|libpthread|libdl|librt|libsqlite3|libcuda|libcupti|libnvidia[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
tar -C "$stage" -cJf "$archive" lib plugins fonts
echo "qt_runtime.sh: $(ls "$stage/lib" | wc -l) libraries, $(du -sh "$archive" | cut -f1) in $archive"
