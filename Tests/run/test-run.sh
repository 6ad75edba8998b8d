#!/usr/bin/env bash
# scripts/run as a new user meets it, against its private broker: the banner leads with
# alarmctl commands that work as printed, a ringing timer keeps the terminal quiet (a line per
# change a person would notice, not per beep), and Ctrl-C ends alarmd cleanly before the broker
# (the clean offline status, not the will; no reconnect warnings). Then a restart keeps the
# private broker's port (the exported ALARMD_BROKER stays right), a taken port is replaced and
# the banner says so, --config with no [broker] still gets the private broker, the banner and
# the file's state folder, --config naming a broker gets it in the banner, and scripts/alarmctl
# says to start scripts/run when it is not running, and a second scripts/run in the same folder
# refuses without disturbing the first. Run by scripts/test after the Swift tests,
# as `swift build` inside scripts/run must not wait for `swift test`'s build lock.
set -uo pipefail
cd "$(dirname "$0")/../.."
work="$(mktemp -d)"
export ALARMD_RUN_DIR="$work/run"
unset ALARMD_BROKER ALARMD_NODE ALARMD_PREFIX
node="run-test-$$"
failures=0
run_pid=""
cleanup() {
    [ -n "$run_pid" ] && kill -KILL -- "-$run_pid" 2>/dev/null
    local pid
    for pid in "${sub_pid:-}" "${holder_pid:-}" "${broker_pid:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null; done
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

# start_run OUTPUT ARGUMENT...: scripts/run in a session of its own, as a terminal runs it (Ctrl-C
# is then a SIGINT to its whole group), until alarmd is connected.
start_run() {
    local output="$1"; shift
    setsid scripts/run "$@" > "$output" 2>&1 &
    run_pid=$!
    if ! wait_for 600 grep -qs "Stop alarmd with Ctrl-C" "$output" || ! wait_for 30 grep -qs "broker connected" "$output"; then
        echo "FAIL scripts/run $*: alarmd did not start"; cat "$output"; exit 1
    fi
}
# stop_run: Ctrl-C, and scripts/run ends with status 0.
stop_run() {
    kill -INT -- "-$run_pid"
    wait "$run_pid"
    local status=$?
    run_pid=""
    return "$status"
}
banner() { sed -n '/alarmd is starting/,/Stop alarmd/p' "$1"; }
banner_broker() { sed -n "s/^alarmd is starting as node '.*' on broker \([^ ]*\)\. .*/\1/p" "$1"; }
alarmctl="$PWD/.build/debug/alarmctl"

start_run "$work/out" --node "$node" --state-dir "$work/state"
banner="$(banner "$work/out")"
first_command="$(sed -n '2p' <<<"$banner" | sed 's/^ *//')"
check "the banner's first command is alarmctl" grep -q '^scripts/alarmctl timer' <<<"$first_command"
check "the banner's MQTT watch line leaves the sim/ topics out" grep -q "mosquitto_sub .* -T 'alarmd/+/sim/#'" <<<"$banner"
check "the banner names the state folder" grep -q "The state is in $work/state\." <<<"$banner"
. "$ALARMD_RUN_DIR/node.env"
first_broker="$ALARMD_BROKER"
mosquitto_sub -h "${ALARMD_BROKER%:*}" -p "${ALARMD_BROKER##*:}" -t "alarmd/$node/status" > "$work/status" &
sub_pid=$!
unset ALARMD_BROKER ALARMD_NODE

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
check "Ctrl-C ends scripts/run with status 0" stop_run
check "alarmd published its clean offline status" bash -c "grep '\"state\":\"offline\"' '$work/status' | grep -q '\"since\"'"
check "no reconnect warning" bash -c "! grep -Eq 'connection lost|reconnect|discard' '$work/out'"
check "the broker saw a clean disconnect" grep -q "Client alarmd-$node disconnected" "$ALARMD_RUN_DIR/mosquitto.log"
kill "$sub_pid" 2>/dev/null; wait "$sub_pid" 2>/dev/null; sub_pid=""

# scripts/alarmctl with scripts/run stopped says to start it.
ALARMD_BROKER="127.0.0.1:$(free_port)" scripts/alarmctl list > "$work/list" 2>&1
check "scripts/alarmctl without scripts/run ends with status 3" test $? -eq 3
check "and says to start scripts/run first" grep -q "start scripts/run first" "$work/list"

# A restart keeps the private broker's port: the variables exported from the first banner still work.
start_run "$work/out2" --node "$node" --state-dir "$work/state"
check "a restart keeps the broker's address ($first_broker)" test "$(banner_broker "$work/out2")" = "$first_broker"
check "the banner does not say the address changed" bash -c "! grep -q 'address changed' '$work/out2'"
check "alarmctl list works with the first banner's export" \
    bash -c "ALARMD_BROKER=$first_broker ALARMD_NODE=$node '$alarmctl' list > '$work/list' 2>&1"
# A second scripts/run beside it refuses before it starts anything, and the first keeps its files.
timeout 300 scripts/run --node "$node-second" --state-dir "$work/second-state" > "$work/second" 2>&1
check "a second scripts/run in the same folder ends with status 1" test $? -eq 1
check "and says the first is running" grep -q "scripts/run is already running here" "$work/second"
check "it started no broker" bash -c "! grep -q 'started a private mosquitto' '$work/second'"
check "the first's broker port is kept" test "127.0.0.1:$(cat "$ALARMD_RUN_DIR/broker-port")" = "$first_broker"
check "scripts/alarmctl still reaches the first" bash -c "scripts/alarmctl list > '$work/list' 2>&1"
check "Ctrl-C ends the restarted scripts/run with status 0" stop_run

# --config with no [broker] section, while something else holds the remembered port: a new
# private broker, the banner says the address changed, and the file's state folder is kept.
first_port="${first_broker##*:}"
python3 -c 'import socket, sys, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(600)' "$first_port" &
holder_pid=$!
wait_for 5 bash -c "</dev/tcp/127.0.0.1/$first_port" 2>/dev/null
printf '[node]\nid = "%s-file"\nstate-directory = "%s"\n' "$node" "$work/file-state" > "$work/no-broker.toml"
start_run "$work/out3" --config "$work/no-broker.toml"
broker="$(banner_broker "$work/out3")"
check "--config without [broker]: the banner appears, on a private broker ($broker)" grep -q "^started a private mosquitto on $broker " "$work/out3"
check "its port is a new one, as the remembered one is taken" test "$broker" != "$first_broker"
check "the banner says the address changed" grep -q "The broker's address changed ($first_broker is taken now): re-run this export" "$work/out3"
check "the banner names the file's node" grep -q "export ALARMD_BROKER=$broker ALARMD_NODE=$node-file\$" "$work/out3"
check "the state is in the file's folder" test -e "$work/file-state/lock"
check "the banner says so" grep -q "The state is in $work/file-state\." "$work/out3"
check "scripts/alarmctl list reaches the node" bash -c "scripts/alarmctl list > '$work/list' 2>&1"
ALARMD_BROKER="127.0.0.1:$(free_port)" scripts/alarmctl list > "$work/list" 2>&1
check "scripts/alarmctl with a stale ALARMD_BROKER says which to export" grep -q "export ALARMD_BROKER=$broker" "$work/list"
check "Ctrl-C ends scripts/run --config with status 0" stop_run
kill "$holder_pid"; wait "$holder_pid" 2>/dev/null; holder_pid=""

# --config naming a broker: the banner names it, and no private broker starts.
broker_port="$(free_port)"
printf 'listener %s 127.0.0.1\nallow_anonymous true\n' "$broker_port" > "$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" 2> "$work/mosquitto.log" &
broker_pid=$!
wait_for 5 bash -c "</dev/tcp/127.0.0.1/$broker_port" 2>/dev/null
printf '[node]\nid = "%s-broker"\n[broker]\nhost = "127.0.0.1"\nport = %s\n' "$node" "$broker_port" > "$work/broker.toml"
start_run "$work/out4" --config "$work/broker.toml" --state-dir "$work/broker-state"
check "--config naming a broker: the banner names it and the file's node" \
    grep -q "^alarmd is starting as node '$node-broker' on broker 127.0.0.1:$broker_port\. " "$work/out4"
check "no private broker starts" bash -c "! grep -q 'started a private mosquitto' '$work/out4'"
check "scripts/alarmctl list reaches the node" bash -c "scripts/alarmctl list > '$work/list' 2>&1"
check "Ctrl-C ends scripts/run --config with status 0" stop_run

if [ $failures -ne 0 ]; then
    for output in "$work"/out*; do echo "--- $output"; cat "$output"; done
    echo "--- broker log"; cat "$ALARMD_RUN_DIR/mosquitto.log"
    exit 1
fi
