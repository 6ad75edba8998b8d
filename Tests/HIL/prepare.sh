#!/usr/bin/env bash
# Prepares what a QEMU guest with a gpio-sim chip needs, for Tests/HIL/run-hil.sh and
# scripts/test-field: installs the host packages (qemu-system-x86, busybox-static, gpiod,
# cpio, make, linux-headers-KVER), downloads Debian's kernel image (not installed), builds
# irq_sim and gpio-sim out of tree with the two 6.1 fixes, and caches all of it in
# $HIL_CACHE/KVER (default ~/.cache/alarmd-hil/KVER). Prints that folder, which holds
# vmlinuz, configfs.ko, irq_sim.ko and gpio-sim.ko; its name is the kernel's ABI version.
#
# Environment: HIL_CACHE, HIL_KVER (kernel ABI, default: linux-image-amd64's).
# Exit status: 0, 2 setup error, 3 a package or download it needs is unavailable.
set -euo pipefail

log() { printf '[hil %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 2; }
# unavailable TEXT: what the harness needs cannot be installed or downloaded (exit 3).
unavailable() { log "unavailable: $*"; exit 3; }

[[ "$(uname -m)" == x86_64 ]] || die "the harness boots an amd64 kernel; run it on x86_64"
cache="${HIL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/alarmd-hil}"
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
echo "$kdir"

