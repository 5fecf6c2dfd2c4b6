#!/usr/bin/env bash
# Packs Debian 12's OpenSSH client and server (ssh, sshd, ssh-keygen) with the shared libraries
# they need, for the GPU machine, which has neither and cannot install them: the remote-recording
# test runs against an sshd on its localhost (tests/gpu/device_visit_remote.sh). As for
# qt_runtime.sh, libc and friends stay out: the machine's own serve.
#   openssh_bundle.sh ARCHIVE
set -euo pipefail
archive=$1
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
bins=(/usr/bin/ssh /usr/sbin/sshd /usr/bin/ssh-keygen)
for b in "${bins[@]}"; do
    [ -x "$b" ] || { echo "openssh_bundle.sh: $b is missing (apt-get install openssh-server openssh-client)" >&2; exit 2; }
    cp "$b" "$stage/bin/"
done
ldd "${bins[@]}" | awk '/=> \// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux-x86-64|libpthread|libdl|librt|libresolv)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
tar -C "$stage" -cJf "$archive" bin lib
echo "openssh_bundle.sh: $(ls "$stage/lib" | wc -l) libraries, $(du -sh "$archive" | cut -f1) in $archive"
