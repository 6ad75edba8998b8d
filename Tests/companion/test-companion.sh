#!/usr/bin/env bash
# The companion end to end (docs/companion.md): a real mosquitto on a free loopback port, two
# real alarmd nodes in one group, the real alarmd-companion, and Debian's headless Chromium driven
# through Selenium (companion_browser.py). It schedules a timer with alarmctl and watches it count
# down on the page, pauses and resumes it from the page, sees a group's timer as one card naming
# its members and pauses and cancels it there on both, stops an alert from the full-screen view, sees a
# node go offline, has another site's page POST to the companion (refused), and stops the broker
# (no node is then shown as current). It restarts the companion under the open page and stops an
# alert from it, and starts a second companion on the taken address (refused in words). It takes
# screenshots at phone (360×740) and kiosk (800×480) sizes.
#
#   Tests/companion/test-companion.sh                 screenshots into a temporary folder
#   Tests/companion/test-companion.sh --screenshots   screenshots into docs/companion-*.png
#
# It uses the debug build in .build/debug (scripts/test builds it first; built here when missing),
# installs chromium, chromium-driver and fonts-dejavu-core with apt-get when they are missing, and
# keeps Selenium in a venv at ~/.cache/alarmd-companion-venv (no browser download).
# Exit status: 0 passed, 1 a check failed, 2 set-up error, 3 what it needs cannot be installed
# (the line "unavailable: <reason>" says what).
set -uo pipefail
cd "$(dirname "$0")/../.."
root="$PWD"
screenshots=""
[ "${1:-}" = "--screenshots" ] && screenshots="$root/docs"

unavailable() { echo "unavailable: $1"; exit 3; }

# --- What it needs ------------------------------------------------------------------------------
if ! command -v chromium > /dev/null || ! command -v chromedriver > /dev/null; then
    if [ "$(id -u)" -eq 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver fonts-dejavu-core > /dev/null 2>&1 \
            || unavailable "apt-get cannot install chromium and chromium-driver"
    else
        unavailable "chromium and chromium-driver are not installed, and only root may apt-get them"
    fi
fi
command -v mosquitto > /dev/null || unavailable "mosquitto is not installed (scripts/debian-packages)"
venv="$HOME/.cache/alarmd-companion-venv"
if ! "$venv/bin/python" -c 'import selenium' 2> /dev/null; then
    rm -rf "$venv"
    { python3 -m venv "$venv" && "$venv/bin/pip" install -q selenium; } > /dev/null 2>&1 \
        || unavailable "cannot make a venv with Selenium from PyPI in $venv"
fi
bin="$root/.build/debug"
for product in alarmd alarmctl alarmd-companion; do
    [ -x "$bin/$product" ] || swift build --product "$product" > /dev/null || { echo "cannot build $product"; exit 2; }
done

# --- The parts ----------------------------------------------------------------------------------
work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null; done
    wait 2> /dev/null
    rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=Tests/test-helpers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../test-helpers.sh"

broker_port=$(free_port)
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$broker_port" > "$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" > "$work/mosquitto.log" 2>&1 &
broker_pid=$!
pids+=("$broker_pid")
wait_for 10 bash -c "</dev/tcp/127.0.0.1/$broker_port" 2> /dev/null || { echo "mosquitto did not start"; exit 2; }
broker="127.0.0.1:$broker_port"

# The broker is this test's own, so the nodes need no unique names.
start_node() {  # start_node ID [ALARMD-ARGUMENTS…]: the node's pid in $node_pid
    mkdir -p "$work/state-$1"
    "$bin/alarmd" --broker "$broker" --node "$1" --group house --state-dir "$work/state-$1" --simulate-hardware --time-zone Europe/Berlin \
        "${@:2}" > "$work/alarmd-$1.log" 2>&1 &
    node_pid=$!
    pids+=("$node_pid")
}
start_node kitchen
# The attic silences an alert nobody answers after 5 s (the shortest), for the page to name it.
printf '[limits]\nalert-timeout = 5\n' > "$work/attic.toml"
start_node attic --config "$work/attic.toml"
attic_pid=$node_pid

"$bin/alarmd-companion" --broker "$broker" --listen 127.0.0.1:0 > "$work/companion.log" 2>&1 &
companion_pid=$!
pids+=("$companion_pid")
wait_for 30 grep -q "serving http" "$work/companion.log" || { echo "the companion did not start"; cat "$work/companion.log"; exit 2; }
url="$(grep -o 'http://[^ ]*' "$work/companion.log" | head -1)"
echo "companion at $url, broker $broker"
# A second companion on the same address says it is taken, in words, and exits.
address="${url#http://}"
second="$(timeout 30 "$bin/alarmd-companion" --broker "$broker" --listen "${address%/}" 2>&1)"
if [ $? -ne 0 ] && grep -q "^Error: ${address%/} is in use by another program" <<<"$second"; then
    echo "PASS companion: a second companion on the same address says it is in use"
else
    echo "FAIL companion: a second companion on the same address: $second"
    exit 1
fi

shots="${screenshots:-$work/screenshots}"
mkdir -p "$shots"
status=0
# TMPDIR: Chromium and chromedriver leave their profile and socket folders there; $work goes at the end.
ALARMD_BROKER="$broker" COMPANION_URL="$url" ALARMCTL="$bin/alarmctl" ATTIC_PID="$attic_pid" BROKER_PID="$broker_pid" \
    COMPANION="$bin/alarmd-companion" COMPANION_PID="$companion_pid" \
    SCREENSHOTS="$shots" TMPDIR="$work" "$venv/bin/python" "$root/Tests/companion/companion_browser.py" || status=$?
if [ "$status" -ne 0 ]; then
    for log in "$work"/*.log; do echo "--- $log"; tail -n 40 "$log"; done
    exit 1
fi
[ -n "$screenshots" ] && echo "screenshots written to docs/companion-*.png"
exit 0
