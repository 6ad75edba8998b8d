#!/usr/bin/env bash
# Hardware-in-the-loop test: boots Debian's kernel under QEMU with a real
# gpio-sim GPIO chip and runs a guest test script against a Swift binary.
#
#   Tests/HIL/run-hil.sh BINARY GUEST_TEST [ARGS...]
#
# BINARY      a Linux x86_64 executable, best built with
#             `swift build -c release --static-swift-stdlib`; it and the shared
#             libraries ldd lists are copied into the guest as /hil/bin/NAME.
# GUEST_TEST  a shell script run inside the guest (busybox sh) with ARGS (one
#             line each, no newlines inside). It sources /hil/lib.sh for
#             helpers; exit 0 is PASS.
#
# Needs root for apt-get (it installs what is missing: qemu-system-x86,
# busybox-static, gpiod, linux-source-6.1, linux-headers-KVER, ...). Kernel,
# modules and downloads are cached outside git, in $HIL_CACHE
# (default ${XDG_CACHE_HOME:-$HOME/.cache}/alarmd-hil); each run builds its
# initramfs in a temporary folder.
#
# Environment: HIL_CACHE, HIL_KVER (kernel ABI, default: linux-image-amd64's),
# HIL_LINES (gpio-sim line names, default "buzzer led stop snooze"),
# HIL_TIMEOUT (seconds, default 300), HIL_LOG (copy of the serial console),
# HIL_EXTRA_BINS (host executables copied into the guest's /usr/bin with their
# shared libraries, e.g. "/usr/sbin/mosquitto /usr/bin/mosquitto_pub"),
# HIL_MEMORY (guest RAM in MiB, default 512), HIL_STRIP (1, the default: copy
# BINARY into the guest stripped, when `strip` exists).
#
# Exit status: 0 PASS, 1 FAIL, 2 setup error, 3 a package or download the
# harness needs is unavailable (apt-get failed). The guest reports through
# isa-debug-exit and a "HIL-RESULT: PASS|FAIL ..." line on the serial console.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf '[hil %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 2; }

[[ $# -ge 2 ]] || die "usage: $0 BINARY GUEST_TEST [ARGS...]"
binary="$(realpath "$1")"; guest_test="$(realpath "$2")"; shift 2
[[ -x "$binary" ]] || die "not an executable: $binary"
[[ -f "$guest_test" ]] || die "no guest test script: $guest_test"
[[ "$(uname -m)" == x86_64 ]] || die "the harness boots an amd64 kernel; run it on x86_64"

lines="${HIL_LINES:-buzzer led stop snooze}"
timeout_s="${HIL_TIMEOUT:-300}"
memory_mb="${HIL_MEMORY:-512}"
extra_bins="${HIL_EXTRA_BINS:-}"
started=$SECONDS

# Kernel, modules and the host packages the harness needs (exit 3 when unavailable).
kdir="$("$here/prepare.sh")" || exit $?

# --- 5. initramfs -------------------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/alarmd-hil.XXXXXX")"
trap 'rm -rf "$work"' EXIT
root="$work/root"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,etc,usr/bin,hil/bin,hil/modules}

copy_with_libs() { # FILE DEST: copies FILE to DEST and its shared libraries to their own paths
    install -m 0755 "$1" "$2"
    ldd "$1" 2>/dev/null | grep -oE '/[^ ]+' | while read -r lib; do
        [[ -e "$root$lib" ]] || install -D -m 0755 "$(realpath "$lib")" "$root$lib"
    done
}
install -m 0755 /bin/busybox "$root/bin/busybox"
for tool in gpiodetect gpioinfo gpioget gpioset gpiomon gpiofind; do
    copy_with_libs "/usr/bin/$tool" "$root/bin/$tool"
done
for tool in $extra_bins; do
    [[ -x "$tool" ]] || die "HIL_EXTRA_BINS: not an executable: $tool"
    copy_with_libs "$tool" "$root/usr/bin/$(basename "$tool")"
done
name="$(basename "$binary")"
copy_with_libs "$binary" "$root/hil/bin/$name"
# Debug info only makes the initramfs bigger and slower to unpack in the guest.
if [[ "${HIL_STRIP:-1}" == 1 ]] && command -v strip >/dev/null; then
    strip "$root/hil/bin/$name"
fi
cp "$kdir/configfs.ko" "$kdir/irq_sim.ko" "$kdir/gpio-sim.ko" "$root/hil/modules/"
install -m 0755 "$here/guest/init.sh" "$root/init"
install -m 0644 "$here/guest/lib.sh" "$root/hil/lib.sh"
install -m 0755 "$guest_test" "$root/hil/test.sh"
{
    printf 'HIL_BIN=/hil/bin/%q\n' "$name"
    printf 'HIL_LINES=%q\n' "$lines"
} > "$root/hil/env"
[[ $# -eq 0 ]] || printf '%s\n' "$@" > "$root/hil/args"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initramfs.gz"
log "initramfs $(du -h "$work/initramfs.gz" | cut -f1)"

# --- 6. Boot ------------------------------------------------------------------
console="$work/console.log"
log "booting (timeout ${timeout_s} s)"
boot_started=$SECONDS
set +e
timeout "$timeout_s" qemu-system-x86_64 -accel tcg -cpu max -m "$memory_mb" -smp 2 -nographic -no-reboot \
    -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
    -kernel "$kdir/vmlinuz" -initrd "$work/initramfs.gz" \
    -append "console=ttyS0 panic=-1 quiet loglevel=3" \
    </dev/null | tee "$console" | sed -u 's/^/  guest| /' >&2
qemu_rc=${PIPESTATUS[0]}
set -e
[[ -n "${HIL_LOG:-}" ]] && cp "$console" "$HIL_LOG"
result="$(grep -a -m1 'HIL-RESULT:' "$console" | tr -d '\r' || true)"
log "boot to exit $((SECONDS - boot_started)) s, total $((SECONDS - started)) s, qemu exit $qemu_rc"
# isa-debug-exit: QEMU exits with (value << 1) | 1; the guest writes 0 for PASS, 1 for FAIL.
if [[ $qemu_rc -eq 1 && "$result" == *"HIL-RESULT: PASS"* ]]; then
    log "$result"
    exit 0
fi
[[ $qemu_rc -eq 124 ]] && log "timed out after ${timeout_s} s"
log "${result:-no HIL-RESULT line on the console}"
exit 1
