#!/usr/bin/env bash
# Hardware-in-the-loop test of the real alarmd: builds it as a static-stdlib
# release binary and runs Tests/HIL/guest/alarmd-test.sh in a QEMU guest with a
# gpio-sim chip and a mosquitto broker (see Tests/HIL/README.md).
#
#   Tests/HIL/run-alarmd-hil.sh
#
# Needs root (or sudo) for apt-get: it installs mosquitto and mosquitto-clients
# when missing, and run-hil.sh installs the rest. The build goes to
# .build-hil (git-ignored); kernel and modules are cached in $HIL_CACHE.
#
# Environment: HIL_SKIP_BUILD=1 uses the existing .build-hil/release/alarmd;
# everything run-hil.sh reads (HIL_CACHE, HIL_TIMEOUT, HIL_LOG, ...).
#
# Exit status: 0 PASS, 1 FAIL, 2 setup error (including a failed build),
# 3 a package the harness needs cannot be installed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
log() { printf '[alarmd-hil %s] %s\n' "$(date +%T)" "$*" >&2; }
started=$SECONDS

as_root() { if [[ $EUID -eq 0 ]]; then "$@"; else sudo -n "$@"; fi; }

# The broker and clients run inside the guest; they are copied from the host.
tools=(/usr/sbin/mosquitto /usr/bin/mosquitto_pub /usr/bin/mosquitto_sub)
missing=()
for tool in "${tools[@]}"; do [[ -x "$tool" ]] || missing+=("$tool"); done
if [[ ${#missing[@]} -gt 0 ]]; then
    log "installing mosquitto and mosquitto-clients (missing: ${missing[*]})"
    if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mosquitto mosquitto-clients >&2; then
        as_root apt-get update -q >&2 || true
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mosquitto mosquitto-clients >&2 \
            || { log "unavailable: apt-get cannot install mosquitto mosquitto-clients"; exit 3; }
    fi
fi

binary=.build-hil/release/alarmd
if [[ "${HIL_SKIP_BUILD:-0}" != 1 ]]; then
    log "building the static alarmd (.build-hil)"
    build_log="$(mktemp)"
    # A source file edited while the build runs (a shared checkout) fails that build only: retry.
    for attempt in 1 2 3; do
        if swift build -c release --static-swift-stdlib --product alarmd --scratch-path .build-hil 2>&1 | tee "$build_log" >&2; then
            break
        fi
        if [[ $attempt -lt 3 ]] && grep -q 'was modified during the build' "$build_log"; then
            log "a source file changed during the build; building again"
            sleep 5
            continue
        fi
        rm -f "$build_log"
        log "error: the release build of alarmd failed"
        exit 2
    done
    rm -f "$build_log"
    log "build done after $((SECONDS - started)) s"
fi
[[ -x "$binary" ]] || { log "error: no $binary"; exit 2; }

# The installed alarmd is built static like this one, and must still read named time zones
# (AlarmKit's namedTimeZoneSupport keeps FoundationInternationalization linked): checked here,
# on the host, where a failure cannot be the guest's.
zone_config="$(mktemp)"
printf '[node]\ntime-zone = "Europe/Berlin"\n' > "$zone_config"
if ! zone_check="$("$binary" check-config "$zone_config" 2>&1)"; then
    rm -f "$zone_config"
    log "HIL-RESULT: FAIL the static alarmd cannot read the named time zone Europe/Berlin: $zone_check"
    exit 1
fi
rm -f "$zone_config"
log "the static alarmd reads the named time zone Europe/Berlin"

# A guest too slow for the bounce (an edge gap reaching the debounce window, on a host busy
# elsewhere) says nothing about alarmd: that one verdict gets a second run.
console="$(mktemp)"
trap 'rm -f "$console"' EXIT
for attempt in 1 2; do
    set +e
    HIL_LOG="$console" HIL_EXTRA_BINS="${tools[*]}" HIL_MEMORY="${HIL_MEMORY:-768}" \
        Tests/HIL/run-hil.sh "$binary" Tests/HIL/guest/alarmd-test.sh
    rc=$?
    set -e
    [[ -n "${HIL_LOG:-}" ]] && cp "$console" "$HIL_LOG"
    if [[ $rc -eq 1 && $attempt -eq 1 ]] && grep -aq 'HIL-RESULT: FAIL guest too slow' "$console"; then
        log "the guest was too slow for the bounce test; running it once more"
        continue
    fi
    break
done
log "done after $((SECONDS - started)) s, exit $rc"
exit "$rc"
