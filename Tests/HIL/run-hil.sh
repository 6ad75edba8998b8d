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
# unavailable TEXT: what the harness needs cannot be installed or downloaded (exit 3).
unavailable() { log "unavailable: $*"; exit 3; }

[[ $# -ge 2 ]] || die "usage: $0 BINARY GUEST_TEST [ARGS...]"
binary="$(realpath "$1")"; guest_test="$(realpath "$2")"; shift 2
[[ -x "$binary" ]] || die "not an executable: $binary"
[[ -f "$guest_test" ]] || die "no guest test script: $guest_test"
[[ "$(uname -m)" == x86_64 ]] || die "the harness boots an amd64 kernel; run it on x86_64"

cache="${HIL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/alarmd-hil}"
lines="${HIL_LINES:-buzzer led stop snooze}"
timeout_s="${HIL_TIMEOUT:-300}"
memory_mb="${HIL_MEMORY:-512}"
extra_bins="${HIL_EXTRA_BINS:-}"
started=$SECONDS

as_root() { if [[ $EUID -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

apt_install() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "${pkg%%=*}" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    log "apt-get install ${missing[*]}"
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; then
        as_root apt-get update -q >&2 || true
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 \
            || unavailable "apt-get cannot install ${missing[*]}"
    fi
}

# --- 1. Which kernel --------------------------------------------------------
kernel_abi() {
    apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {sub("linux-image-", "", $2); print $2; exit}'
}
kver="${HIL_KVER:-$(kernel_abi)}"
if [[ -z "$kver" ]]; then
    as_root apt-get update -q >&2 || true
    kver="$(kernel_abi)"
fi
[[ -n "$kver" ]] || unavailable "cannot tell the kernel version: apt-cache knows no linux-image-amd64"
kdir="$cache/$kver"
mkdir -p "$kdir"
log "kernel $kver, cache $kdir"

# --- 2. Packages ------------------------------------------------------------
kpkg_version="$(apt-cache show "linux-image-$kver" 2>/dev/null | awk '/^Version:/ {print $2; exit}')"
[[ -n "$kpkg_version" ]] || unavailable "no package linux-image-$kver"
source_pkg="linux-source-${kver%%.*}.$(cut -d. -f2 <<<"$kver")"
if ! apt-cache show "$source_pkg=$kpkg_version" >/dev/null 2>&1; then
    log "warning: no $source_pkg $kpkg_version; using the newest $source_pkg"
    source_spec="$source_pkg"
else
    source_spec="$source_pkg=$kpkg_version"
fi
apt_install qemu-system-x86 busybox-static gpiod cpio xz-utils make "linux-headers-$kver"

# --- 3. Kernel image and configfs module (downloaded, not installed) ---------
if [[ ! -f "$kdir/vmlinuz" || ! -f "$kdir/configfs.ko" ]]; then
    log "downloading linux-image-$kver"
    tmp="$(mktemp -d "$kdir/image.XXXXXX")"
    (cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root "linux-image-$kver=$kpkg_version" >&2) \
        || { rm -rf "$tmp"; unavailable "apt-get cannot download linux-image-$kver=$kpkg_version"; }
    dpkg-deb -x "$tmp"/linux-image-*.deb "$tmp/root"
    cp "$tmp/root/boot/vmlinuz-$kver" "$kdir/vmlinuz"
    configfs="$(find "$tmp/root/lib/modules/$kver" -name 'configfs.ko*' | head -n1)"
    [[ -n "$configfs" ]] || die "configfs module not found in linux-image-$kver"
    case "$configfs" in
        *.xz) xz -dc "$configfs" > "$kdir/configfs.ko" ;;
        *) cp "$configfs" "$kdir/configfs.ko" ;;
    esac
    rm -rf "$tmp"
fi

# --- 4. gpio-sim and irq_sim, built out of tree ------------------------------
if [[ ! -f "$kdir/gpio-sim.ko" || ! -f "$kdir/irq_sim.ko" ]]; then
    apt_install "$source_spec"
    tarball="/usr/src/$source_pkg.tar.xz"
    [[ -f "$tarball" ]] || die "$source_pkg did not install $tarball"
    log "building gpio-sim from $tarball"
    build="$(mktemp -d "$kdir/build.XXXXXX")"
    top="$(basename "$tarball" .tar.xz)"
    tar -xJf "$tarball" -C "$build" --strip-components=1 \
        "$top/drivers/gpio/gpio-sim.c" "$top/drivers/gpio/gpiolib.h" "$top/kernel/irq/irq_sim.c"
    mv "$build/drivers/gpio/gpio-sim.c" "$build/drivers/gpio/gpiolib.h" "$build/kernel/irq/irq_sim.c" "$build/"
    # Built as a module, irq_sim cannot reach irq_to_desc(), and needs a license.
    sed -i 's/handle_simple_irq(irq_to_desc(irqnum));/generic_handle_irq(irqnum);/' "$build/irq_sim.c"
    grep -q 'generic_handle_irq(irqnum);' "$build/irq_sim.c" || die "irq_sim.c changed: the patch no longer applies"
    grep -q MODULE_LICENSE "$build/irq_sim.c" || echo 'MODULE_LICENSE("GPL");' >> "$build/irq_sim.c"
    echo 'obj-m := irq_sim.o gpio-sim.o' > "$build/Kbuild"
    make -s -C "/usr/src/linux-headers-$kver" M="$build" -j"$(nproc)" modules >&2
    cp "$build/irq_sim.ko" "$build/gpio-sim.ko" "$kdir/"
    rm -rf "$build"
fi
log "kernel and modules ready after $((SECONDS - started)) s"

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
