#!/usr/bin/env bash
# The arm64 cross-build (scripts/cross-arm64) and its binaries run under QEMU user-mode
# emulation (qemu-aarch64-static -L <the bookworm arm64 sysroot>):
#   - the three are aarch64 ELF files whose needed libraries and symbol versions (GLIBC_*, GLIBCXX_*,
#     CXXABI_*, GCC_*) are all provided by Debian 12 (bookworm) arm64's packages;
#   - `alarmd --version`, `alarmd check-config deploy/alarmd.toml`;
#   - the arm64 alarmd (--simulate-hardware) against a real local mosquitto on a free port: the
#     arm64 alarmctl schedules a timer, it rings, alarmctl stops it, SIGTERM ends alarmd cleanly;
#   - the arm64 alarmd-companion serves its page's state, with that node on it.
#
#   Tests/arm64/test-arm64.sh
#
# scripts/test runs it last. The first run builds the chroot and sysroot (cached under
# ~/.cache/alarmd-arm64; docs/install.md gives the time and the disk it takes). It prints
# PASS/FAIL lines, or one SKIPPED line when it cannot run (not root, not x86_64, debootstrap or
# qemu-user-static not installable, the Debian packages of the cross-build not downloadable,
# ALARMD_SKIP_ARM64 set). Exits 1 when a check failed, 2 when the cross-build itself failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
name="arm64 cross-build"

if [ -n "${ALARMD_SKIP_ARM64:-}" ]; then
    echo "SKIPPED $name: ALARMD_SKIP_ARM64 is set"; exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED $name: needs root for debootstrap and chroot"; exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then
    echo "SKIPPED $name: the chroot's Swift is Debian's amd64 package, and this machine is $(uname -m)"; exit 0
fi
if ! command -v debootstrap >/dev/null || ! command -v qemu-aarch64-static >/dev/null || ! command -v mosquitto >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap qemu-user-static mosquitto >/dev/null 2>&1 || true
fi
for tool in debootstrap qemu-aarch64-static mosquitto objdump readelf; do
    command -v "$tool" >/dev/null || { echo "SKIPPED $name: $tool is not installed and apt-get could not install it"; exit 0; }
done

work="$(mktemp -d /tmp/alarmd-arm64-test.XXXXXX)"
alarmd_pid=""
broker_pid=""
companion_pid=""
cleanup() {
    [ -n "$alarmd_pid" ] && kill -KILL "$alarmd_pid" 2>/dev/null
    [ -n "$companion_pid" ] && kill -KILL "$companion_pid" 2>/dev/null
    [ -n "$broker_pid" ] && kill "$broker_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
failures=0
check() { # check DESCRIPTION COMMAND...
    local what="$1"; shift
    if "$@"; then echo "PASS $name: $what"; else echo "FAIL $name: $what"; failures=$((failures + 1)); fi
}
# shellcheck source=Tests/test-helpers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../test-helpers.sh"

started=$SECONDS
build_status=0
scripts/cross-arm64 --out "$work/bin" >"$work/build.log" 2>&1 || build_status=$?
if [ "$build_status" -eq 3 ]; then
    echo "SKIPPED $name: $(grep -a -m1 'unavailable: ' "$work/build.log" | sed 's/.*unavailable: //')"
    exit 0
elif [ "$build_status" -ne 0 ]; then
    cat "$work/build.log"
    echo "FAIL $name: scripts/cross-arm64 failed (exit $build_status)"
    exit 2
fi
echo "$name: scripts/cross-arm64 took $((SECONDS - started)) s"
sysroot="${ALARMD_ARM64_CACHE:-$HOME/.cache/alarmd-arm64}/sdks/alarmd-arm64.artifactbundle/alarmd-arm64/aarch64-unknown-linux-gnu/sysroot"
arm64() { qemu-aarch64-static -L "$sysroot" "$@"; }

# --- The binaries load on bookworm arm64 --------------------------------------------------------
# Each library a binary needs must be in the bookworm sysroot, and define every symbol version
# the binary requires from it (objdump -p: the binary's version references against the
# library's version definitions; objdump -T lists the same per symbol).
find_library() { # find_library NAME: its path in the sysroot
    local dir
    for dir in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu; do
        [ -e "$sysroot/$dir/$1" ] && { echo "$sysroot/$dir/$1"; return 0; }
    done
    return 1
}
for binary in alarmd alarmctl alarmd-companion; do
    check "$binary is an AArch64 executable" sh -c "readelf -h '$work/bin/$binary' | grep -q 'Machine:.*AArch64'"
    libraries="$(objdump -p "$work/bin/$binary" | awk '$1 == "NEEDED" {print $2}' | xargs)"
    absent=""
    for library in $libraries; do find_library "$library" >/dev/null || absent="$absent $library"; done
    check "$binary needs no Swift library, and bookworm has the ones it needs ($libraries)" \
        sh -c "[ -z '$absent' ] && ! echo '$libraries' | grep -q swift"
    unmet=""
    newest_glibc=""
    while read -r library version; do
        [[ "$version" == GLIBC_2.* ]] && newest_glibc="$(printf '%s\n' "$newest_glibc" "$version" | sort -V | tail -1)"
        path="$(find_library "$library")" || continue
        objdump -p "$path" | sed -n '/^Version definitions:/,/^$/p' | awk 'NF == 4 {print $4}' | grep -qx "$version" \
            || unmet="$unmet $library:$version"
    done < <(objdump -p "$work/bin/$binary" | awk '
        /^Version References:/ { inside = 1; next }
        inside && /required from/ { library = $3; sub(":$", "", library); next }
        inside && NF == 4 { print library, $4 }
        inside && NF == 0 { inside = 0 }')
    check "$binary requires only symbol versions bookworm defines (newest glibc: $newest_glibc)${unmet:+; unmet:$unmet}" \
        sh -c "[ -z '$unmet' ] && [ -n '$newest_glibc' ]"
done

# --- Under qemu-aarch64-static --------------------------------------------------------------------
version="$(arm64 "$work/bin/alarmd" --version 2>&1)"
check "alarmd --version prints a version ($version)" grep -Eq '^[0-9]+\.[0-9]+' <<<"$version"
config_output="$(arm64 "$work/bin/alarmd" check-config deploy/alarmd.toml 2>&1)"
check "alarmd check-config accepts deploy/alarmd.toml" grep -q "deploy/alarmd.toml is valid" <<<"$config_output"
printf '[broker]\nport = "not a number"\n' >"$work/bad.toml"
arm64 "$work/bin/alarmd" check-config "$work/bad.toml" >/dev/null 2>&1
check "alarmd check-config rejects a bad file with status 2" test $? -eq 2

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat >"$work/mosquitto.conf" <<CONF
listener $port 127.0.0.1
allow_anonymous true
set_tcp_nodelay true
persistence false
log_dest stderr
CONF
mosquitto -c "$work/mosquitto.conf" 2>"$work/mosquitto.log" &
broker_pid=$!
node="arm64-test-$$"
mkdir -p "$work/state"
# qemu itself, not a function's subshell: the SIGTERM below must reach it (it hands it to alarmd).
qemu-aarch64-static -L "$sysroot" "$work/bin/alarmd" --broker "127.0.0.1:$port" --node "$node" \
    --state-dir "$work/state" --simulate-hardware >"$work/alarmd.log" 2>&1 &
alarmd_pid=$!
export ALARMD_BROKER="127.0.0.1:$port" ALARMD_NODE="$node"
check "the arm64 alarmd connects to the broker" wait_for 60 grep -q "broker connected" "$work/alarmd.log"
check "the arm64 alarmctl schedules a 3 s timer" sh -c "qemu-aarch64-static -L '$sysroot' '$work/bin/alarmctl' timer 3s --title Tea >'$work/timer.out' 2>&1"
check "the timer rings" wait_for 30 grep -q "buzzer sounding" "$work/alarmd.log"
check "the arm64 alarmctl stops it" sh -c "qemu-aarch64-static -L '$sysroot' '$work/bin/alarmctl' stop Tea >'$work/stop.out' 2>&1"
check "the buzzer goes silent" wait_for 15 grep -q "buzzer silent" "$work/alarmd.log"
kill -TERM "$alarmd_pid"
wait "$alarmd_pid"
status=$?
alarmd_pid=""
check "SIGTERM ends the arm64 alarmd with status 0 (got $status)" test "$status" -eq 0
check "the broker saw a clean disconnect" grep -q "Client alarmd-$node disconnected" "$work/mosquitto.log"

# The companion: it serves its page, with the node it hears of (offline now) on it.
companion_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
qemu-aarch64-static -L "$sysroot" "$work/bin/alarmd-companion" --listen "127.0.0.1:$companion_port" >"$work/companion.log" 2>&1 &
companion_pid=$!
companion_knows_node() {
    python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' \
        "http://127.0.0.1:$companion_port/api/state" 2>/dev/null | grep -q "\"id\":\"$node\""
}
check "the arm64 alarmd-companion serves the page's state, with the node on it" wait_for 60 companion_knows_node

if [ "$failures" -ne 0 ]; then
    for file in build.log alarmd.log timer.out stop.out mosquitto.log companion.log; do
        echo "--- $file"; tail -40 "$work/$file" 2>/dev/null
    done
    exit 1
fi
echo "$name: all checks passed in $((SECONDS - started)) s"
