#!/usr/bin/env bash
# The least-privilege broker of deploy/mosquitto/ tested for real: mosquitto runs
# deploy/mosquitto/alarmd.conf with deploy/mosquitto/alarmd.acl and a password file, plus a TLS
# listener (a throwaway CA made here with openssl) where the user "alarmctl" logs in with a client
# certificate. The real alarmd (simulated hardware) and alarmctl run against it. Checked: what each
# user may do works, and what it may not is refused: a client without rights cannot change a
# node's retained state, cannot schedule, and cannot make the node publish outside its allowance.
#
#   Tests/broker/test-broker-acl.sh                uses the binaries of `swift build --show-bin-path`
#   ALARMD_BIN_DIR=DIR Tests/broker/test-broker-acl.sh
#
# scripts/test runs it. It prints PASS/FAIL/SKIPPED lines and, last, "N passed, M failed"; it
# exits 1 when a check failed, 0 with a SKIPPED line when a program it needs is missing.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; failed=$((failed + 1)); }
check() { # check DESCRIPTION COMMAND...
    local description="$1"
    shift
    if "$@"; then pass "$description"; else fail "$description"; fi
}

needed=()
for program in mosquitto mosquitto_passwd mosquitto_pub mosquitto_sub mosquitto_rr openssl python3; do
    command -v "$program" >/dev/null 2>&1 || needed+=("$program")
done
if [ "${#needed[@]}" -gt 0 ]; then
    echo "SKIPPED broker ACL test: missing ${needed[*]} (apt-get install mosquitto mosquitto-clients openssl python3)"
    exit 0
fi
bin_dir="${ALARMD_BIN_DIR:-$(swift build --show-bin-path 2>/dev/null)}"
if [ ! -x "$bin_dir/alarmd" ] || [ ! -x "$bin_dir/alarmctl" ]; then
    echo "FAIL broker ACL test: no alarmd and alarmctl in '$bin_dir': build them first, or set ALARMD_BIN_DIR"
    exit 1
fi

work="$(mktemp -d)"
chmod 0755 "$work" # mosquitto drops to its own user when run as root and must read its files
background=()
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    local pid
    for pid in "${background[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${background[@]}"; do wait "$pid" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
finish() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}
# shellcheck source=Tests/test-helpers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../test-helpers.sh"

# --- A throwaway CA, the broker's certificate, and a client certificate for "alarmctl" ---------
tls="$work/tls"
mkdir -p "$tls"
make_cert() { # make_cert NAME SUBJECT [EXTENSIONS]
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$2" \
        -keyout "$tls/$1.key" -out "$tls/$1.csr" 2>/dev/null &&
        openssl x509 -req -in "$tls/$1.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial -days 2 \
            ${3:+-extfile <(printf '%s\n' "$3")} -out "$tls/$1.crt" 2>/dev/null
}
if openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=alarmd test CA" \
    -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null &&
    make_cert server "/CN=localhost" "subjectAltName=IP:127.0.0.1,DNS:localhost" &&
    make_cert alarmctl "/CN=alarmctl" "extendedKeyUsage=clientAuth" &&
    make_cert stranger "/CN=stranger" "extendedKeyUsage=clientAuth"; then
    chmod 0644 "$tls"/*
    pass "openssl makes a throwaway CA, the broker's certificate and client certificates"
else
    fail "openssl certificates"
    finish
fi

# --- The broker: deploy/mosquitto as shipped, moved to free ports and this test's files ----------
node="acltest$$"
port="$(free_port)"
tls_port="$(free_port)"
secret="acl-test-secret"
for user in alarmd alarmctl homeassistant guest observer; do
    mosquitto_passwd -b "$work/passwd" "$user" "$secret-$user" 2>/dev/null ||
        mosquitto_passwd -c -b "$work/passwd" "$user" "$secret-$user" 2>/dev/null
done
chmod 0644 "$work/passwd"
# The example's node is "bedroom": this test's node has its own id. The node is granted one intent
# topic beyond its base; "guest" has no section (no rights at all); "observer" reads everything, to
# see what the broker lets through.
sed -e "s|alarmd/bedroom/|alarmd/$node/|g" -e "s|alarmd_bedroom|alarmd_$node|g" \
    -e "s|^# topic write home/bedroom/lights/set\$|topic write home/lights/set|" \
    deploy/mosquitto/alarmd.acl >"$work/acl"
printf '\nuser observer\ntopic read #\n' >>"$work/acl"
if ! grep -q "^topic write home/lights/set$" "$work/acl" || ! grep -q "^topic read alarmd/$node/cmd/+$" "$work/acl"; then
    fail "ACL example" "deploy/mosquitto/alarmd.acl no longer has the node section or the commented intent line this test edits"
    finish
fi
sed -e "s|^listener 1883 127.0.0.1\$|listener $port 127.0.0.1|" -e "s|^password_file .*|password_file $work/passwd|" \
    -e "s|^acl_file .*|acl_file $work/acl|" deploy/mosquitto/alarmd.conf >"$work/mosquitto.conf"
if ! grep -q "^acl_file $work/acl$" "$work/mosquitto.conf" || ! grep -q "^listener $port 127.0.0.1$" "$work/mosquitto.conf"; then
    fail "broker example" "deploy/mosquitto/alarmd.conf has no 'listener 1883 127.0.0.1' or 'acl_file' line to test with"
    finish
fi
cat >>"$work/mosquitto.conf" <<EOF

# The test's TLS listener: a client certificate is required, and its CN is the user name.
listener $tls_port 127.0.0.1
cafile $tls/ca.crt
certfile $tls/server.crt
keyfile $tls/server.key
require_certificate true
use_identity_as_username true
EOF
mosquitto -c "$work/mosquitto.conf" >"$work/broker.log" 2>&1 &
background+=($!)
as() { # as USER mosquitto_xxx ARGS...: the client as USER on the plain listener
    local user="$1" program="$2"
    shift 2
    "$program" -h 127.0.0.1 -p "$port" -u "$user" -P "$secret-$user" "$@"
}
if wait_for 10 as observer mosquitto_pub -t ping -m 1 2>/dev/null; then
    pass "mosquitto runs deploy/mosquitto/alarmd.conf with alarmd.acl"
else
    fail "mosquitto starts" "$(tail -5 "$work/broker.log")"
    finish
fi

# --- The node, logged in as "alarmd" -------------------------------------------------------------
printf '%s\n' "$secret-alarmd" >"$work/node-password"
cat >"$work/alarmd.toml" <<EOF
[node]
id = "$node"
state-directory = "$work/state"
time-zone = "UTC"
groups = ["house"]
[broker]
host = "127.0.0.1"
port = $port
username = "alarmd"
password-file = "$work/node-password"
[hardware]
mode = "simulated"
[intents]
# More than the broker grants the node (home/lights/set only): the broker has the last word.
allow = ["home/#"]
EOF
# Started directly, not through `as`: $! must be the client itself, which cleanup kills.
mosquitto_sub -h 127.0.0.1 -p "$port" -u observer -P "$secret-observer" -v -t '#' >"$work/observed" 2>/dev/null &
background+=($!)
"$bin_dir/alarmd" --config "$work/alarmd.toml" >"$work/alarmd.log" 2>&1 &
background+=($!)
base="alarmd/$node"
retained() { # retained USER TOPIC: the retained message USER reads on TOPIC, or nothing
    as "$1" mosquitto_sub -t "$2" -C 1 -W 2 2>/dev/null
}
if wait_for 20 sh -c "grep -q '^$base/status .*\"online\"' '$work/observed'"; then
    pass "alarmd logs in as 'alarmd' and publishes its status"
else
    fail "alarmd online" "$(tail -5 "$work/alarmd.log")"
    finish
fi
check "the node's Home Assistant discovery and state are published" \
    wait_for 5 sh -c "grep -q '^homeassistant/.*/alarmd_$node/.*/config ' '$work/observed' && grep -q '^$base/ha/state ' '$work/observed'"
# Home Assistant's event entity reads the node's events from here on. Started directly, as the
# observer is: through `as`, $! would be a subshell, and the client outlived the test.
mosquitto_sub -h 127.0.0.1 -p "$port" -u homeassistant -P "$secret-homeassistant" -t "$base/events" >"$work/ha-events" 2>/dev/null &
background+=($!)

# --- alarmctl: commands and reads state; cannot impersonate the node ---------------------------
ctl() { # ctl SUBCOMMAND ARGS...: alarmctl as user alarmctl on the plain listener
    local subcommand="$1"
    shift
    ALARMD_PASSWORD="$secret-alarmctl" "$bin_dir/alarmctl" "$subcommand" --broker "127.0.0.1:$port" --node "$node" --username alarmctl "$@"
}
if out="$(ctl timer 1h --title Tea 2>&1)" && grep -q "scheduled timer" <<<"$out"; then
    pass "alarmctl (user alarmctl) schedules a timer and gets the node's reply"
else
    fail "alarmctl schedules" "$out"
fi
check "alarmctl reads the node's state (list)" grep -q Tea <<<"$(ctl list 2>&1)"
alarms_now() { ctl list --json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
count="$(alarms_now)"
check "one alarm after the schedule" test "$count" = 1

# Forged status, a forged alarm document, a forged event: dropped for every user but the node.
for user in alarmctl homeassistant guest; do
    as "$user" mosquitto_pub -r -t "$base/status" -m '{"state":"offline"}' 2>/dev/null
    as "$user" mosquitto_pub -r -t "$base/alarms/00000000-0000-0000-0000-000000000001" -m '{"forged":true}' 2>/dev/null
    as "$user" mosquitto_pub -t "$base/events" -m '{"event":"forged"}' 2>/dev/null
done
sleep 0.5
status="$(retained observer "$base/status")"
check "the node's retained status is still its own 'online' after forgeries by alarmctl, homeassistant and guest" \
    grep -q '"state":"online"' <<<"$status"
check "no forged retained alarm document is kept" test -z "$(retained observer "$base/alarms/00000000-0000-0000-0000-000000000001")"
check "no forged event reaches subscribers" sh -c "! grep -q forged '$work/observed'"

# Scheduling without the right: guest and homeassistant publish a schedule; the node never sees it.
schedule='{"configuration":{"countdownDuration":{"preAlert":3600},"attributes":{"presentation":{"alert":{"title":"Forged"}},"tintColor":"#FF0000"}},"replyTo":"alarmd-clients/x/reply"}'
for user in guest homeassistant; do
    as "$user" mosquitto_pub -q 1 -t "$base/cmd/schedule" -m "$schedule" 2>/dev/null
done
sleep 1
check "guest and homeassistant cannot schedule (the node still holds one alarm)" test "$(alarms_now)" = 1
check "their commands never reach the node (no reply was sent)" sh -c "! grep -q '^alarmd-clients/x/reply' '$work/observed'"

# --- Intents: only where both the node's configuration and the broker allow ----------------------
request() { # request OPERATION JSON: the node's reply, as user alarmctl
    as alarmctl mosquitto_rr -V 5 -t "$base/cmd/$1" -e "alarmd-clients/acl$$/reply" -m "$2" -W 5 2>/dev/null
}
intent_alarm() { # intent_alarm TOPIC: schedules a 1 s timer whose stop intent publishes to TOPIC; prints its id
    request schedule "{\"configuration\":{\"countdownDuration\":{\"preAlert\":1},\"attributes\":{\"presentation\":{\"alert\":{\"title\":\"Intent\"}},\"tintColor\":\"#FF0000\"},\"stopIntent\":{\"publish\":{\"topic\":\"$1\",\"payload\":\"{alarmID}\",\"retain\":false}}}}" |
        python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["alarm"]["id"] if r.get("ok") else "refused " + r["error"]["field"] + " " + r["error"]["message"])'
}
refused="$(intent_alarm garage/open)"
check "the node refuses an intent outside intents.allow at schedule (invalidConfiguration on stopIntent.publish.topic)" \
    grep -q "^refused configuration.stopIntent.publish.topic .*intents.allow" <<<"$refused"
refused="$(intent_alarm "alarmd/other/cmd/cancel")"
check "the node refuses an intent to another node's commands" grep -q "^refused configuration.stopIntent.publish.topic" <<<"$refused"
granted="$(intent_alarm home/lights/set)"
ungranted="$(intent_alarm home/door/unlock)"
if [[ "$granted" =~ ^[0-9A-F-]{36}$ ]] && [[ "$ungranted" =~ ^[0-9A-F-]{36}$ ]]; then
    pass "intents inside intents.allow are scheduled (home/lights/set, home/door/unlock)"
    wait_for 10 sh -c "grep -c '\"event\":\"alerting\"' '$work/observed' | grep -qx 2"
    for id in "$granted" "$ungranted"; do request stop "{\"id\":\"$id\"}" >/dev/null; done
    check "the intent the broker grants the node is published (home/lights/set)" \
        wait_for 5 grep -q "^home/lights/set $granted" "$work/observed"
    check "both stops report an intent event" \
        wait_for 5 sh -c "[ \$(grep -c '\"event\":\"intent\"' '$work/observed') -ge 2 ]"
    check "the one the broker does not grant never reaches anyone (home/door/unlock)" \
        sh -c "! grep -q '^home/door/unlock' '$work/observed'"
else
    fail "intents inside intents.allow are scheduled" "$granted / $ungranted"
fi
# A reply addressed where the node may not publish is dropped by the broker too.
as alarmctl mosquitto_pub -q 1 -t "$base/cmd/list" -m '{"replyTo":"home/door/unlock"}' 2>/dev/null
sleep 1
check "a reply to a topic outside the node's grant (replyTo home/door/unlock) is dropped" \
    sh -c "! grep -q '^home/door/unlock' '$work/observed'"

# --- Home Assistant: reads state, presses the entities' buttons, cannot command -----------------
check "homeassistant reads the node's retained status" grep -q '"online"' <<<"$(retained homeassistant "$base/status")"
check "homeassistant cannot read the node's alarms" test -z "$(retained homeassistant "$base/alarms/+")"

# --- TLS with a client certificate: the certificate's CN is the user -----------------------------
tls_ctl() { # tls_ctl SUBCOMMAND ARGS...: alarmctl on the TLS listener
    local subcommand="$1"
    shift
    "$bin_dir/alarmctl" "$subcommand" --broker "127.0.0.1:$tls_port" --node "$node" --ca-file "$tls/ca.crt" "$@"
}
if out="$(tls_ctl timer 2h --title Tls --cert-file "$tls/alarmctl.crt" --key-file "$tls/alarmctl.key" 2>&1)" &&
    grep -q "scheduled timer" <<<"$out"; then
    pass "alarmctl over TLS with the 'alarmctl' client certificate schedules (CN as user name)"
else
    fail "alarmctl over TLS with a client certificate" "$out"
fi
out="$(tls_ctl list --timeout 2 2>&1)"
check "without a client certificate the TLS listener refuses alarmctl" test $? -ne 0 -a -n "$out"
echo "  (alarmctl said: $(head -1 <<<"$out"))"
mosquitto_pub -h 127.0.0.1 -p "$tls_port" --cafile "$tls/ca.crt" --cert "$tls/stranger.crt" --key "$tls/stranger.key" \
    -q 1 -t "$base/cmd/schedule" -m "$schedule" 2>/dev/null
mosquitto_pub -h 127.0.0.1 -p "$tls_port" --cafile "$tls/ca.crt" --cert "$tls/alarmctl.crt" --key "$tls/alarmctl.key" \
    -r -t "$base/status" -m '{"state":"offline"}' 2>/dev/null
sleep 1
check "a certificate whose CN has no rights (stranger) cannot schedule" test "$(alarms_now)" = 2
check "the 'alarmctl' certificate cannot change the node's retained status" \
    grep -q '"state":"online"' <<<"$(retained observer "$base/status")"

# --- A group: alarmctl commands it, the node takes the group's commands ------------------------
out="$(ALARMD_PASSWORD="$secret-alarmctl" "$bin_dir/alarmctl" --group house timer 3h --title Group \
    --broker "127.0.0.1:$port" --username alarmctl 2>&1)"
check "alarmctl commands the group 'house' and its member answers" grep -q "group house: 1 answered" <<<"$out"
check "the member holds the group's timer" test "$(alarms_now)" = 3

# --- Home Assistant's entities: the Schedule line, the alarms sensor, events, Cancel all timers ---
holds_alarms() { test "$(alarms_now)" = "$1"; }
ha_sensor_lists() { grep -q "$1" <<<"$(retained homeassistant "$base/ha/alarms")"; }
as homeassistant mosquitto_pub -q 1 -t "$base/ha/schedule" -m "4h FromHA" 2>/dev/null
check "homeassistant schedules through the Schedule text entity" wait_for 5 holds_alarms 4
check "homeassistant reads the Schedule entity's result" grep -q '"state":"scheduled:' <<<"$(retained homeassistant "$base/ha/schedule-result")"
check "homeassistant reads the alarms sensor's list" wait_for 5 ha_sensor_lists FromHA
check "homeassistant receives the node's events (the event entity)" grep -q '"event":"scheduled"' "$work/ha-events"
as homeassistant mosquitto_pub -q 1 -t "$base/ha/cancel-timers" -m PRESS 2>/dev/null
check "homeassistant's Cancel all timers button cancels every timer" wait_for 5 holds_alarms 0
check "alarmd is still running" kill -0 "${background[2]}"

# --- Renaming or retiring a node (install.md): its own user clears what it left retained --------
kill "${background[2]}"
wait "${background[2]}" 2>/dev/null
left_retained() { as observer mosquitto_sub -t "$base/#" -t "homeassistant/+/alarmd_$node/#" --retained-only -W 1 -v 2>/dev/null; }
before="$(left_retained | wc -l)"
as alarmd mosquitto_sub -t "$base/#" -t "homeassistant/+/alarmd_$node/#" --remove-retained --retained-only -W 2 >/dev/null 2>&1
check "the node's user clears the $before messages its node left retained (renaming a node)" test "$before" -gt 5 -a -z "$(left_retained)"
finish
