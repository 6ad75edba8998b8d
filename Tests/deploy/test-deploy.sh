#!/usr/bin/env bash
# Tests deploy/: install.sh (into a throwaway root, and as root into a private mount namespace
# whose /etc, /usr/local and /var are overlays, so the machine's users and files stay
# untouched), the systemd unit (systemd-analyze verify and its security rating), the example
# configurations, and the real alarmd as systemd would run it: the example config against a
# broker set up from deploy/mosquitto/alarmd.conf, sd_notify READY/WATCHDOG/STOPPING, SIGHUP,
# SIGTERM, and (under strace) no system call or socket family the unit's filters forbid.
#
#   Tests/deploy/test-deploy.sh              uses the binaries of `swift build --show-bin-path`
#   ALARMD_BIN_DIR=DIR Tests/deploy/test-deploy.sh
#
# scripts/test runs it after the Swift tests. It prints PASS/FAIL/SKIPPED lines and, last,
# "N passed, M failed"; it exits 1 when a check failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
repo="$(pwd -P)"

# The security rating the unit must not exceed (systemd-analyze security: 0 = locked down, 10 = exposed).
max_exposure="2.0"

# --- Inside the private mount namespace (re-executed by the system-install check below) ----------

# The checks below run `sh -c` on single-quoted text on purpose: it expands in the inner shell.
# shellcheck disable=SC2016
if [ "${1:-}" = "--inside-namespace" ]; then
    bin_dir="$2" scratch="$3"
    ok() { echo "PASS system install: $1"; }
    bad() { echo "FAIL system install: $1"; }
    expect() { # expect DESCRIPTION COMMAND...
        local description="$1"
        shift
        if "$@"; then ok "$description"; else bad "$description"; fi
    }
    mount -t tmpfs tmpfs "$scratch" || { echo "SETUP-FAILED cannot mount a tmpfs"; exit 3; }
    for dir in /etc /usr/local /var; do
        name="${dir//\//_}"
        mkdir -p "$scratch/$name.upper" "$scratch/$name.work"
        mount -t overlay overlay -o "lowerdir=$dir,upperdir=$scratch/$name.upper,workdir=$scratch/$name.work" "$dir" \
            || { echo "SETUP-FAILED cannot mount an overlay on $dir"; exit 3; }
    done
    # No systemd or udev in here, whatever the machine runs: nothing may reach the real ones.
    mount -t tmpfs tmpfs /run || { echo "SETUP-FAILED cannot mount a tmpfs on /run"; exit 3; }

    log="$scratch/install.log"
    expect "install.sh exits 0" deploy/install.sh --skip-build "$bin_dir" --no-packages >"$log" 2>&1 || cat "$log"
    expect "the gpio group exists" sh -c "getent group gpio >/dev/null"
    expect "the alarmd system user exists, in the gpio group" sh -c 'id -nG alarmd | tr " " "\n" | grep -qx gpio'
    expect "alarmd's shell is nologin" sh -c 'getent passwd alarmd | grep -q ":/usr/sbin/nologin$"'
    expect "alarmd is a system user (uid below 1000)" sh -c '[ "$(id -u alarmd)" -lt 1000 ]'
    expect "/etc/alarmd/alarmd.toml is 0640 root:alarmd" sh -c '[ "$(stat -c "%a %U %G" /etc/alarmd/alarmd.toml)" = "640 root alarmd" ]'
    expect "/var/lib/alarmd is 0700 alarmd:alarmd" sh -c '[ "$(stat -c "%a %U %G" /var/lib/alarmd)" = "700 alarmd alarmd" ]'
    expect "/usr/local/bin/alarmd is 0755 root:root" sh -c '[ "$(stat -c "%a %U %G" /usr/local/bin/alarmd)" = "755 root root" ]'
    expect "the config was checked as the alarmd user" grep -q "alarmd.toml is valid" "$log"
    expect "it says systemd is not running" grep -q "systemd is not running" "$log"
    uid_before="$(id -u alarmd)"
    echo "# edited" >>/etc/alarmd/alarmd.toml
    expect "a second run exits 0" deploy/install.sh --skip-build "$bin_dir" --no-packages >"$log" 2>&1 || cat "$log"
    expect "a second run keeps the user" sh -c "[ \"\$(id -u alarmd)\" = $uid_before ]"
    expect "a second run keeps the edited config" grep -q "^# edited" /etc/alarmd/alarmd.toml
    expect "alarmd.toml.new is 0640 root:alarmd" sh -c '[ "$(stat -c "%a %U %G" /etc/alarmd/alarmd.toml.new)" = "640 root alarmd" ]'
    expect "--uninstall --purge exits 0" deploy/install.sh --uninstall --purge >"$log" 2>&1 || cat "$log"
    expect "--purge removes the alarmd user" sh -c '! getent passwd alarmd >/dev/null'
    expect "--purge removes /etc/alarmd and /var/lib/alarmd" sh -c '[ ! -e /etc/alarmd ] && [ ! -e /var/lib/alarmd ]'
    expect "--purge keeps the gpio group" sh -c "getent group gpio >/dev/null"
    exit 0
fi

# --- Bookkeeping -------------------------------------------------------------------------------

passed=0
failed=0
skipped=0
pass() {
    echo "PASS $1"
    passed=$((passed + 1))
}
fail() {
    echo "FAIL $1${2:+: $2}"
    failed=$((failed + 1))
}
skip() {
    echo "SKIPPED $1: $2"
    skipped=$((skipped + 1))
}
# check DESCRIPTION COMMAND...: passes when COMMAND succeeds.
check() {
    local description="$1"
    shift
    if "$@"; then pass "$description"; else fail "$description"; fi
}
mode_of() { stat -c %a "$1" 2>/dev/null; }

work="$(mktemp -d)"
chmod 0755 "$work" # mosquitto drops to its own user and must read its files in here
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
    echo "$skipped skipped"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}

# --- The binaries ------------------------------------------------------------------------------

bin_dir="${ALARMD_BIN_DIR:-}"
if [ -z "$bin_dir" ]; then
    bin_dir="$("${SWIFT:-swift}" build --show-bin-path 2>/dev/null)" || bin_dir=""
fi
if [ -z "$bin_dir" ] || [ ! -x "$bin_dir/alarmd" ]; then
    fail "alarmd binary" "no alarmd in '${bin_dir:-?}': build it first (swift build --product alarmd), or set ALARMD_BIN_DIR"
    finish
fi
echo "testing deploy/ with the binaries in $bin_dir"
alarmd="$bin_dir/alarmd"

users_before="$(getent passwd alarmd || true)|$(getent group gpio || true)"

# --- 1. install.sh into a throwaway root -------------------------------------------------------

root="$work/root"
out="$work/install.out"
if deploy/install.sh --root "$root" --skip-build "$bin_dir" >"$out" 2>&1; then
    pass "install.sh --root exits 0"
else
    fail "install.sh --root exits 0" "$(tail -5 "$out")"
fi
check "alarmd is installed, mode 755, identical" \
    sh -c "[ \"$(mode_of "$root/usr/local/bin/alarmd")\" = 755 ] && cmp -s '$alarmd' '$root/usr/local/bin/alarmd'"
if [ -x "$bin_dir/alarmctl" ]; then
    check "alarmctl is installed, mode 755, identical" \
        sh -c "[ \"$(mode_of "$root/usr/local/bin/alarmctl")\" = 755 ] && cmp -s '$bin_dir/alarmctl' '$root/usr/local/bin/alarmctl'"
else
    skip "alarmctl is installed" "$bin_dir has no alarmctl"
fi
check "the unit is installed, mode 644, as in deploy/" \
    sh -c "[ \"$(mode_of "$root/etc/systemd/system/alarmd.service")\" = 644 ] && cmp -s deploy/alarmd.service '$root/etc/systemd/system/alarmd.service'"
check "the udev rule is installed, mode 644" \
    sh -c "[ \"$(mode_of "$root/etc/udev/rules.d/99-alarmd-gpio.rules")\" = 644 ] && cmp -s deploy/99-alarmd-gpio.rules '$root/etc/udev/rules.d/99-alarmd-gpio.rules'"
check "the config is installed, mode 640, as in deploy/" \
    sh -c "[ \"$(mode_of "$root/etc/alarmd/alarmd.toml")\" = 640 ] && cmp -s deploy/alarmd.toml '$root/etc/alarmd/alarmd.toml'"
check "the state directory is created, mode 700" sh -c "[ \"$(mode_of "$root/var/lib/alarmd")\" = 700 ]"
check "it says what it would do instead of useradd, groupadd, systemctl and udevadm" \
    sh -c "grep -q 'would.*useradd' '$out' && grep -q 'would.*groupadd' '$out' && grep -q 'would run: systemctl' '$out' && grep -q 'would run: udevadm' '$out'"
check "it installs nothing outside the root" sh -c "[ ! -e '$root$root' ]"

echo "# my edit" >>"$root/etc/alarmd/alarmd.toml"
if deploy/install.sh --root "$root" --skip-build "$bin_dir" >"$out" 2>&1; then
    pass "a second run exits 0"
else
    fail "a second run exits 0" "$(tail -5 "$out")"
fi
check "a second run keeps the edited config" grep -q "^# my edit" "$root/etc/alarmd/alarmd.toml"
check "a second run puts the example beside it as alarmd.toml.new (mode 640) and says so" \
    sh -c "cmp -s deploy/alarmd.toml '$root/etc/alarmd/alarmd.toml.new' && [ \"$(mode_of "$root/etc/alarmd/alarmd.toml.new" || echo none)\" = 640 ] && grep -q 'alarmd.toml.new' '$out'"
check "a third run exits 0 and still keeps the edit" \
    sh -c "deploy/install.sh --root '$root' --skip-build '$bin_dir' >/dev/null 2>&1 && grep -q '^# my edit' '$root/etc/alarmd/alarmd.toml'"

prefixed="$work/prefixed"
check "--prefix /opt/alarmd installs there and points ExecStart at it" \
    sh -c "deploy/install.sh --root '$prefixed' --prefix /opt/alarmd --skip-build '$bin_dir' >/dev/null 2>&1 \
        && [ -x '$prefixed/opt/alarmd/bin/alarmd' ] \
        && grep -qx 'ExecStart=/opt/alarmd/bin/alarmd --config /etc/alarmd/alarmd.toml' '$prefixed/etc/systemd/system/alarmd.service'"
check "DESTDIR= works like --root" \
    sh -c "DESTDIR='$work/destdir' deploy/install.sh --skip-build '$bin_dir' >/dev/null 2>&1 && [ -x '$work/destdir/usr/local/bin/alarmd' ]"

if deploy/install.sh --root "$root" --uninstall >"$out" 2>&1; then
    pass "--uninstall exits 0"
else
    fail "--uninstall exits 0" "$(tail -5 "$out")"
fi
check "--uninstall removes the programs, the unit and the rule" \
    sh -c "[ ! -e '$root/usr/local/bin/alarmd' ] && [ ! -e '$root/usr/local/bin/alarmctl' ] && [ ! -e '$root/etc/systemd/system/alarmd.service' ] && [ ! -e '$root/etc/udev/rules.d/99-alarmd-gpio.rules' ]"
check "--uninstall keeps the config and the state directory" \
    sh -c "grep -q '^# my edit' '$root/etc/alarmd/alarmd.toml' && [ -d '$root/var/lib/alarmd' ]"
check "--uninstall --purge removes /etc/alarmd and /var/lib/alarmd" \
    sh -c "deploy/install.sh --root '$root' --uninstall --purge >/dev/null 2>&1 && [ ! -e '$root/etc/alarmd' ] && [ ! -e '$root/var/lib/alarmd' ]"
check "--skip-build with a missing folder fails and says why" \
    sh -c "! deploy/install.sh --root '$work/bad' --skip-build '$work/nowhere' >'$work/bad.out' 2>&1 && grep -q 'nowhere' '$work/bad.out'"
check "an unknown option fails and says why" \
    sh -c "! deploy/install.sh --root '$work/bad' --frobnicate >'$work/bad.out' 2>&1 && grep -q 'unknown option' '$work/bad.out'"

if command -v shellcheck >/dev/null 2>&1; then
    check "shellcheck deploy/install.sh" shellcheck deploy/install.sh
    check "shellcheck Tests/deploy/test-deploy.sh" shellcheck Tests/deploy/test-deploy.sh
else
    skip "shellcheck" "shellcheck is not installed (apt-get install shellcheck)"
fi

# --- 1b. install.sh as root, into a private mount namespace ------------------------------------

if [ "$(id -u)" -ne 0 ]; then
    skip "system install (useradd, ownership, --purge)" "needs root, to overlay /etc, /usr/local and /var in a private mount namespace"
elif ! command -v unshare >/dev/null 2>&1; then
    skip "system install (useradd, ownership, --purge)" "unshare (util-linux) is missing"
else
    mkdir -p "$work/ns"
    ns_out="$work/ns.out"
    unshare --mount --propagation private "$repo/Tests/deploy/test-deploy.sh" --inside-namespace "$bin_dir" "$work/ns" >"$ns_out" 2>&1
    if grep -q "^SETUP-FAILED" "$ns_out"; then
        skip "system install (useradd, ownership, --purge)" "$(grep -m1 '^SETUP-FAILED' "$ns_out" | sed 's/^SETUP-FAILED //') (overlayfs or mount namespaces unavailable here)"
    elif ! grep -q "^PASS system install" "$ns_out"; then
        fail "system install" "no result from the namespace: $(tail -5 "$ns_out")"
    else
        while IFS= read -r line; do
            case "$line" in
                "PASS "*) pass "${line#PASS }" ;;
                "FAIL "*) fail "${line#FAIL }" ;;
                *) echo "    $line" ;;
            esac
        done <"$ns_out"
    fi
fi
check "the machine's alarmd user and gpio group are untouched" \
    sh -c "[ \"\$(getent passwd alarmd || true)|\$(getent group gpio || true)\" = '$users_before' ]"

# --- 2, 3. The systemd unit --------------------------------------------------------------------

if ! command -v systemd-analyze >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing systemd for systemd-analyze (apt-get install systemd)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd >/dev/null 2>&1 \
        || echo "apt-get install systemd failed"
fi
if ! command -v systemd-analyze >/dev/null 2>&1; then
    why="systemd-analyze is missing and this script is not root, so it cannot apt-get install systemd"
    [ "$(id -u)" -eq 0 ] && why="systemd-analyze is missing and apt-get install systemd failed"
    skip "systemd-analyze verify" "$why"
    skip "systemd-analyze security" "$why"
else
    # verify: the unit as installed, with ExecStart pointing at the copy installed into a root.
    unit_root="$work/unit-root"
    deploy/install.sh --root "$unit_root" --skip-build "$bin_dir" >/dev/null 2>&1
    mkdir -p "$work/unit"
    sed "s|^ExecStart=/usr/local/bin/alarmd |ExecStart=$unit_root/usr/local/bin/alarmd |" \
        "$unit_root/etc/systemd/system/alarmd.service" >"$work/unit/alarmd.service"
    if ! grep -q "^ExecStart=$unit_root/usr/local/bin/alarmd " "$work/unit/alarmd.service"; then
        fail "systemd-analyze verify" "could not point ExecStart at the installed binary"
    elif verify_out="$(systemd-analyze verify "$work/unit/alarmd.service" 2>&1)" \
        && ! grep -q "alarmd.service" <<<"$verify_out"; then
        pass "systemd-analyze verify deploy/alarmd.service (ExecStart at the installed copy)"
    else
        fail "systemd-analyze verify deploy/alarmd.service" "$verify_out"
    fi
    # The same check must notice a broken unit, or it proves nothing.
    mkdir -p "$work/broken"
    sed "s|^ExecStart=/usr/local/bin/alarmd |ExecStart=$work/missing/alarmd |" deploy/alarmd.service >"$work/broken/alarmd.service"
    check "systemd-analyze verify rejects the unit when ExecStart's binary is missing" \
        sh -c "! systemd-analyze verify '$work/broken/alarmd.service' >/dev/null 2>&1"

    security_out="$(systemd-analyze security --offline=true deploy/alarmd.service 2>&1)"
    exposure="$(sed -n 's/.*Overall exposure level for alarmd.service: \([0-9][0-9.]*\).*/\1/p' <<<"$security_out")"
    if [ -z "$exposure" ]; then
        fail "systemd-analyze security" "no overall exposure level in its output: $(tail -3 <<<"$security_out")"
    elif awk -v e="$exposure" -v m="$max_exposure" 'BEGIN { exit !(e + 0 <= m + 0) }'; then
        pass "systemd-analyze security --offline=true: exposure $exposure (at most $max_exposure)"
    else
        fail "systemd-analyze security: exposure $exposure is above $max_exposure" \
            "$(grep '✗' <<<"$security_out")"
    fi
fi

# What alarmd relies on, which a hardening edit could take away.
unit_has() { grep -Eq "^$1\$" deploy/alarmd.service; }
check "the unit: Type=notify, NotifyAccess=main, WatchdogSec, ExecReload sends SIGHUP" \
    sh -c "grep -qx 'Type=notify' deploy/alarmd.service && grep -qx 'NotifyAccess=main' deploy/alarmd.service \
        && grep -Eq '^WatchdogSec=[1-9]' deploy/alarmd.service && grep -qx 'ExecReload=/bin/kill -HUP \$MAINPID' deploy/alarmd.service"
check "the unit: user alarmd in gpio, StateDirectory=alarmd, GPIO devices allowed" \
    sh -c "grep -qx 'User=alarmd' deploy/alarmd.service && grep -qx 'SupplementaryGroups=gpio' deploy/alarmd.service \
        && grep -qx 'StateDirectory=alarmd' deploy/alarmd.service && grep -Eq '^DeviceAllow=(char-gpiochip|/dev/gpiochip\*) rw' deploy/alarmd.service"
if unit_has "ProtectClock=(yes|true|1|on)" || unit_has "PrivateDevices=(yes|true|1|on)"; then
    fail "the unit keeps adjtimex and the GPIO devices" "ProtectClock= blocks the read-only adjtimex and PrivateDevices= hides /dev/gpiochip*"
else
    pass "the unit has neither ProtectClock= (blocks the read-only adjtimex) nor PrivateDevices= (hides /dev/gpiochip*)"
fi
check "the unit does not wait for the network (no Requires=/Wants=network-online.target)" \
    sh -c "! grep -Eq '^(Requires|Wants|BindsTo)=.*network-online' deploy/alarmd.service"

# --- 4. The example configuration --------------------------------------------------------------

if check_out="$("$alarmd" check-config deploy/alarmd.toml 2>&1)"; then
    pass "alarmd check-config deploy/alarmd.toml"
else
    fail "alarmd check-config deploy/alarmd.toml" "$check_out"
fi
# Every key of docs/configuration.md's tables is in the example (set, or commented out).
missing_keys=()
documented_keys=0
section=""
while IFS= read -r line; do
    if [[ "$line" =~ ^\#\#\ \`\[([a-z-]+)\]\` ]]; then
        section="${BASH_REMATCH[1]}"
        grep -qx "\[$section\]" deploy/alarmd.toml || missing_keys+=("[$section]")
    elif [[ "$line" =~ ^\#\# ]]; then
        section=""
    elif [ -n "$section" ] && [[ "$line" =~ ^\|\ \`([a-z-]+)\`(,\ \`([a-z-]+)\`)* ]]; then
        first_cell="$(cut -d'|' -f2 <<<"$line")"
        # shellcheck disable=SC2016 # backquotes, not an expansion
        for key in $(grep -o '`[a-z-]*`' <<<"$first_cell" | tr -d '`'); do
            documented_keys=$((documented_keys + 1))
            grep -Eq "^(# )?$key = " deploy/alarmd.toml || missing_keys+=("$section.$key")
        done
    fi
done <docs/configuration.md
if [ "$documented_keys" -lt 20 ]; then
    fail "deploy/alarmd.toml lists every key of docs/configuration.md" "found only $documented_keys keys in docs/configuration.md's tables: did their format change?"
elif [ "${#missing_keys[@]}" -eq 0 ]; then
    pass "deploy/alarmd.toml lists every key of docs/configuration.md ($documented_keys keys)"
else
    fail "deploy/alarmd.toml lists every key of docs/configuration.md" "missing: ${missing_keys[*]}"
fi

# --- 5, 6. The broker example and alarmd as systemd runs it ------------------------------------

needed=()
for program in mosquitto mosquitto_passwd mosquitto_pub mosquitto_sub python3; do
    command -v "$program" >/dev/null 2>&1 || needed+=("$program")
done
if [ "${#needed[@]}" -gt 0 ]; then
    skip "broker example and alarmd under sd_notify" "missing ${needed[*]} (apt-get install mosquitto mosquitto-clients python3)"
    skip "system call audit" "needs the run above"
    finish
fi

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() { # wait_for SECONDS COMMAND...
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

broker="$work/broker"
mkdir -p "$broker"
chmod 0755 "$broker"
port="$(free_port)"
mosquitto_passwd -c -b "$broker/passwd" alarmd "deploy-test-secret" >/dev/null 2>&1
chmod 0644 "$broker/passwd"
# Without the ACL, which Tests/broker/test-broker-acl.sh tests: it is written for the node "bedroom".
sed -e "s|^listener 1883 127.0.0.1\$|listener $port 127.0.0.1|" -e "s|^password_file .*|password_file $broker/passwd|" \
    -e "/^acl_file /d" deploy/mosquitto/alarmd.conf >"$broker/mosquitto.conf"
if ! grep -q "^listener $port 127.0.0.1$" "$broker/mosquitto.conf" || ! grep -q "^password_file $broker/passwd$" "$broker/mosquitto.conf"; then
    fail "broker example" "deploy/mosquitto/alarmd.conf has no 'listener 1883 127.0.0.1' or 'password_file' line to test with"
    finish
fi
mosquitto -c "$broker/mosquitto.conf" >"$broker/log" 2>&1 &
background+=($!)
if wait_for 10 mosquitto_pub -h 127.0.0.1 -p "$port" -u alarmd -P deploy-test-secret -t deploy-test/ping -m 1 2>/dev/null; then
    pass "mosquitto runs deploy/mosquitto/alarmd.conf and accepts alarmd's password"
else
    fail "mosquitto runs deploy/mosquitto/alarmd.conf" "$(tail -5 "$broker/log")"
    finish
fi
check "the broker refuses anonymous clients" \
    sh -c "! mosquitto_pub -h 127.0.0.1 -p $port -t deploy-test/ping -m 1 >/dev/null 2>&1"
check "the broker refuses a wrong password" \
    sh -c "! mosquitto_pub -h 127.0.0.1 -p $port -u alarmd -P wrong -t deploy-test/ping -m 1 >/dev/null 2>&1"

# The example config, changed only where a test must: the port, the credentials, a state
# directory of its own, simulated hardware, a fixed node id.
node="deploytest$$"
printf 'deploy-test-secret\n' >"$work/broker-password"
sed -e "s/^port = 1883\$/port = $port/" \
    -e 's/^# username = "alarmd"$/username = "alarmd"/' \
    -e "s|^# password-file = \"/etc/alarmd/broker-password\".*|password-file = \"$work/broker-password\"|" \
    -e "s|^state-directory = \"/var/lib/alarmd\"\$|state-directory = \"$work/state\"|" \
    -e 's/^mode = "auto"$/mode = "simulated"/' \
    -e "s/^# id = \"bedroom\"\$/id = \"$node\"/" \
    deploy/alarmd.toml >"$work/alarmd.toml"
changed="$(diff deploy/alarmd.toml "$work/alarmd.toml" | grep -c '^>')"
if [ "$changed" -ne 6 ]; then
    fail "test config" "expected 6 changed lines from deploy/alarmd.toml, got $changed: the example's defaults moved; update this test"
    finish
fi

# systemd's side of sd_notify: a datagram socket that logs each message on a line.
notify_socket="$work/notify.sock"
notify_log="$work/notify.log"
: >"$notify_log"
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        log.write(s.recv(4096).decode().replace("\n", " ") + "\n")
' "$notify_socket" "$notify_log" &
background+=($!)
wait_for 5 test -S "$notify_socket" || { fail "notify socket" "python3 could not bind $notify_socket"; finish; }

trace="$work/trace"
use_strace=0
if ! command -v strace >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing strace for the system call audit (apt-get install strace)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends strace >/dev/null 2>&1 \
        || echo "apt-get install strace failed"
fi
if command -v strace >/dev/null 2>&1; then
    use_strace=1
fi
export NOTIFY_SOCKET="$notify_socket" WATCHDOG_USEC=1000000
if [ "$use_strace" -eq 1 ]; then
    strace -f -qq -o "$trace" -- "$alarmd" --config "$work/alarmd.toml" >"$work/alarmd.out" 2>"$work/alarmd.err" &
    runner=$!
    wait_for 10 pgrep -P "$runner" >/dev/null
    daemon="$(pgrep -P "$runner" | head -1)"
else
    "$alarmd" --config "$work/alarmd.toml" >"$work/alarmd.out" 2>"$work/alarmd.err" &
    runner=$!
    daemon=$runner
fi
unset NOTIFY_SOCKET WATCHDOG_USEC
background+=("$runner")

if wait_for 30 grep -qx "READY=1" "$notify_log"; then
    pass "alarmd sends READY=1 to \$NOTIFY_SOCKET (Type=notify)"
else
    fail "alarmd sends READY=1" "$(tail -5 "$work/alarmd.err")"
fi
if wait_for 10 sh -c "[ \$(grep -cx 'WATCHDOG=1' '$notify_log') -ge 3 ]"; then
    pass "alarmd feeds the watchdog (WATCHDOG=1, at half of \$WATCHDOG_USEC)"
else
    fail "alarmd feeds the watchdog" "$(grep -c WATCHDOG "$notify_log") WATCHDOG=1 messages"
fi
status="$(mosquitto_sub -h 127.0.0.1 -p "$port" -u alarmd -P deploy-test-secret -t "alarmd/$node/status" -C 1 -W 10 2>&1)"
if grep -q '"state":"online"' <<<"$status"; then
    pass "alarmd logs in with the example config's password-file and publishes its status"
else
    fail "alarmd publishes its status with the example config" "got '$status'; $(tail -3 "$work/alarmd.err")"
fi
kill -HUP "$daemon" 2>/dev/null
if wait_for 10 grep -q "SIGHUP: reading the configuration again" "$work/alarmd.err" && sleep 1 && kill -0 "$daemon" 2>/dev/null; then
    pass "systemctl reload's SIGHUP re-reads the configuration and alarmd keeps running"
else
    fail "SIGHUP (ExecReload)" "$(tail -3 "$work/alarmd.err")"
fi
kill -TERM "$daemon" 2>/dev/null
exit_status=0
wait "$runner" || exit_status=$?
if [ "$exit_status" -eq 0 ] && grep -qx "STOPPING=1" "$notify_log"; then
    pass "SIGTERM (systemctl stop): STOPPING=1 and exit 0"
else
    fail "SIGTERM (systemctl stop)" "exit status $exit_status; notify messages: $(sort -u "$notify_log" | tr '\n' ' ')"
fi
status="$(mosquitto_sub -h 127.0.0.1 -p "$port" -u alarmd -P deploy-test-secret -t "alarmd/$node/status" -C 1 -W 5 2>&1)"
check "after SIGTERM the retained status says offline" grep -q '"state":"offline"' <<<"$status"

# --- 7. System calls and socket families against the unit's filters ----------------------------

if [ "$use_strace" -eq 0 ]; then
    skip "system call audit" "strace is not installed and could not be (apt-get install strace, as root)"
    finish
fi
if ! command -v systemd-analyze >/dev/null 2>&1; then
    skip "system call audit" "systemd-analyze is missing (it expands the unit's @groups)"
    finish
fi
# Expands a SystemCallFilter= item (a name or an @group) into system call names.
expand() {
    local item="$1" line
    if [[ "$item" != @* ]]; then
        echo "$item"
        return
    fi
    systemd-analyze syscall-filter "$item" 2>/dev/null | while IFS= read -r line; do
        [[ "$line" =~ ^\ +([@a-z0-9_-]+)$ ]] || continue
        expand "${BASH_REMATCH[1]}"
    done
}
declare -A allowed=()
while IFS= read -r value; do
    deny=0
    if [[ "$value" == "~"* ]]; then
        deny=1
        value="${value#\~}"
    fi
    for item in $value; do
        while IFS= read -r name; do
            if [ "$deny" -eq 1 ]; then unset "allowed[$name]"; else allowed[$name]=1; fi
        done < <(expand "$item")
    done
done < <(sed -n 's/^SystemCallFilter=//p' deploy/alarmd.service)
if [ "${#allowed[@]}" -lt 100 ]; then
    fail "system call audit" "the unit's SystemCallFilter= expands to only ${#allowed[@]} calls; is it an allow list?"
    finish
fi
used="$(sed -En 's/^[0-9]+ +([a-z0-9_]+)\(.*/\1/p; s/^[0-9]+ +<\.\.\. ([a-z0-9_]+) resumed>.*/\1/p' "$trace" | sort -u)"
forbidden=()
for name in $used; do
    [ -n "${allowed[$name]:-}" ] || forbidden+=("$name")
done
if [ -z "$used" ]; then
    fail "system call audit" "strace recorded no system calls"
elif [ "${#forbidden[@]}" -eq 0 ]; then
    pass "every system call alarmd made ($(wc -w <<<"$used") kinds) passes the unit's SystemCallFilter="
else
    fail "system calls outside the unit's SystemCallFilter=" "${forbidden[*]}"
fi
families_allowed="$(sed -n 's/^RestrictAddressFamilies=//p' deploy/alarmd.service)"
families_used="$(grep -oE 'socket(pair)?\(AF_[A-Z0-9]+' "$trace" | sed 's/.*(//' | sort -u)"
bad_families=()
for family in $families_used; do
    grep -qw -- "$family" <<<"$families_allowed" || bad_families+=("$family")
done
if [ "${#bad_families[@]}" -eq 0 ]; then
    pass "every socket family alarmd opened ($(echo "$families_used" | tr '\n' ' ')) passes RestrictAddressFamilies="
else
    fail "socket families outside RestrictAddressFamilies=" "${bad_families[*]}"
fi
if grep -Eq 'clock_adjtime|adjtimex' "$trace"; then
    pass "alarmd read the clock's synchronization (adjtimex) and the unit allows it"
else
    fail "alarmd read the clock's synchronization" "no adjtimex/clock_adjtime in the trace"
fi

finish
