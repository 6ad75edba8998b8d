#!/usr/bin/env bash
# scripts/run as a new user meets it, against its private broker: the banner leads with
# alarmctl commands that work as printed, a ringing timer keeps the terminal quiet (a line per
# change a person would notice, not per beep), and Ctrl-C ends alarmd cleanly before the broker
# (the clean offline status, not the will; no reconnect warnings). Run by scripts/test after the
# Swift tests, as `swift build` inside scripts/run must not wait for `swift test`'s build lock.
set -uo pipefail
cd "$(dirname "$0")/../.."
work="$(mktemp -d)"
export ALARMD_RUN_DIR="$work/run"
node="run-test-$$"
failures=0
run_pid=""
cleanup() {
    [ -n "$run_pid" ] && kill -KILL -- "-$run_pid" 2>/dev/null
    [ -n "${sub_pid:-}" ] && kill "$sub_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
check() {
    local what="$1"; shift
    if "$@"; then echo "PASS scripts/run: $what"; else echo "FAIL scripts/run: $what"; failures=$((failures + 1)); fi
}
# shellcheck source=Tests/test-helpers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../test-helpers.sh"

# In a session of its own, as a terminal runs it: Ctrl-C is then a SIGINT to its whole group.
setsid scripts/run --node "$node" --state-dir "$work/state" > "$work/out" 2>&1 &
run_pid=$!
if ! wait_for 600 grep -qs "Stop alarmd with Ctrl-C" "$work/out" || ! wait_for 30 grep -qs "broker connected" "$work/out"; then
    echo "FAIL scripts/run: alarmd did not start"; cat "$work/out"; exit 1
fi
banner="$(sed -n '/alarmd is starting/,/Stop alarmd/p' "$work/out")"
first_command="$(sed -n '2p' <<<"$banner" | sed 's/^ *//')"
check "the banner's first command is alarmctl" grep -q '^scripts/alarmctl timer' <<<"$first_command"
check "the banner's MQTT watch line leaves the sim/ topics out" grep -q "mosquitto_sub .* -T 'alarmd/+/sim/#'" <<<"$banner"
. "$ALARMD_RUN_DIR/node.env"
mosquitto_sub -h "${ALARMD_BROKER%:*}" -p "${ALARMD_BROKER##*:}" -t "alarmd/$node/status" > "$work/status" &
sub_pid=$!

# The banner's first command, as printed (a timer of 10 s titled Tea), then stopped by its title.
timer_command="${first_command%%  *}"
check "'$timer_command' schedules" bash -c "$timer_command > '$work/timer' 2>&1"
check "the timer rings within 15 s" wait_for 15 grep -q "buzzer sounding" "$work/out"
sleep 3
check "scripts/alarmctl stop Tea stops it" bash -c "scripts/alarmctl stop Tea > '$work/stop' 2>&1"
check "the buzzer goes silent" wait_for 5 grep -q "buzzer silent, LED dark" "$work/out"
hardware_lines=$(grep -c '^\[simulated hardware\]' "$work/out")
check "a countdown and 3 s of ringing print a handful of hardware lines ($hardware_lines)" test "$hardware_lines" -le 6

# The companion page that the banner names answers (docs/companion.md).
companion_url="$(grep -o 'http://127\.0\.0\.1:[0-9]*/' <<<"$banner" | head -1)"
check "the banner names the companion page ($companion_url), and it answers" \
    wait_for 20 python3 -c "import sys, urllib.request; sys.exit(b'companion-token' not in urllib.request.urlopen(sys.argv[1], timeout=2).read())" "$companion_url"

# Ctrl-C: alarmd says goodbye on the broker, then the private broker stops.
kill -INT -- "-$run_pid"
check "Ctrl-C ends scripts/run with status 0" wait "$run_pid"
run_pid=""
check "alarmd published its clean offline status" bash -c "grep '\"state\":\"offline\"' '$work/status' | grep -q '\"since\"'"
check "no reconnect warning" bash -c "! grep -Eq 'connection lost|reconnect|discard' '$work/out'"
check "the broker saw a clean disconnect" grep -q "Client alarmd-$node disconnected" "$ALARMD_RUN_DIR/mosquitto.log"
if [ $failures -ne 0 ]; then
    echo "--- scripts/run output"; cat "$work/out"; echo "--- broker log"; cat "$ALARMD_RUN_DIR/mosquitto.log"
    exit 1
fi
