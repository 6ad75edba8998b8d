#!/bin/bash
# The field test's checks, run in the booted guest by alarmd-field-check.service after alarmd
# has started (scripts/test-field). It reports on the serial console:
#   FIELD PASS|FAIL <what>        one check
#   FIELD DATA <name> <json>      alarmctl's list of the alarms, compared by the host
#   FIELD-RESULT: PASS|FAIL ...   the verdict, then the guest powers off
# The first boot checks the running service and reboots; the second checks what the reboot
# restored and the package's remove, install and purge.
# The checks run `sh -c` on single-quoted text on purpose; functions are called through check.
# shellcheck disable=SC2016,SC2317
set -u
phase_file=/root/field-phase
phase="$(cat "$phase_file" 2>/dev/null || echo first-boot)"
failed=0
pass() { echo "FIELD PASS $*"; }
fail() {
    echo "FIELD FAIL $*"
    failed=$((failed + 1))
}
check() { # check DESCRIPTION COMMAND...
    local description="$1"
    shift
    if "$@"; then pass "$description"; else fail "$description"; fi
}
finish() {
    if [ "$failed" -eq 0 ]; then echo "FIELD-RESULT: PASS $phase"; else echo "FIELD-RESULT: FAIL $phase: $failed checks failed"; fi
    systemctl poweroff
    exit 0
}
export ALARMD_NODE=field
# ctl ARGS...: alarmctl, patient with a guest slowed down by a busy host.
ctl() { alarmctl "$@" --timeout 60 >/tmp/ctl.out 2>&1 || { fail "alarmctl $*: $(tr '\n' ' ' </tmp/ctl.out)"; return 1; }; }
data() { echo "FIELD DATA $1 $(alarmctl list --json --timeout 60 2>&1 | tr -d '\n')"; }
# wait_until SECONDS COMMAND...: polls every half second.
wait_until() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.5
    done
}
alarmd_active() { [ "$(systemctl is-active alarmd)" = active ]; }
sim_dir="$(cat /run/alarmd-field/sim-dir)"

echo "FIELD INFO $phase: $(uname -r), systemd $(systemctl --version | head -1 | cut -d' ' -f2), alarmd $(alarmd --version 2>&1)"

if [ "$phase" = first-boot ]; then
    # Type=notify: this unit is ordered after alarmd, so systemd started it only after READY=1.
    check "systemctl is-active alarmd: active after Type=notify readiness" alarmd_active
    check "the unit is Type=notify, from /lib/systemd/system, enabled" \
        sh -c '[ "$(systemctl show -p Type --value alarmd)" = notify ] && [ "$(systemctl show -p FragmentPath --value alarmd)" = /lib/systemd/system/alarmd.service ] && [ "$(systemctl is-enabled alarmd)" = enabled ]'
    chip="/dev/$(basename "$sim_dir")"
    check "the udev rule gives $chip to the gpio group (crw-rw---- root:gpio)" \
        sh -c "[ \"\$(stat -c '%U:%G %a' $chip)\" = 'root:gpio 660' ]"
    check "alarmd runs as alarmd, in the gpio group" \
        sh -c 'pid=$(systemctl show -p MainPID --value alarmd); [ "$(stat -c %U /proc/$pid)" = alarmd ] && id -nG alarmd | grep -qw gpio'
    check "the hardened alarmd opened the GPIO chip: its lines are in use by alarmd" \
        sh -c 'gpioinfo alarmd-field | grep -E "\"(buzzer|led|stop|snooze)\"" | grep -c "\"alarmd-" | grep -qx 4'
    check "alarmd uses the real chip, not the simulation" \
        sh -c '! journalctl -u alarmd -b --no-pager | grep -qi "simulated hardware"'

    # The buzzer line toggles while a timer alerts.
    ctl timer 2s --title "Field buzzer" --id 00000000-0000-4000-8000-00000000b022
    check "the buzzer line goes high when the timer alerts" wait_until 60 sh -c "[ \"\$(cat $sim_dir/sim_gpio0/value)\" = 1 ]"
    # Sampled with bash builtins only (a fork takes tens of milliseconds in this guest).
    toggles=0
    read -r last <"$sim_dir/sim_gpio0/value"
    end=$((SECONDS + 8))
    while [ "$SECONDS" -lt "$end" ]; do
        read -r value <"$sim_dir/sim_gpio0/value"
        [ "$value" != "$last" ] && toggles=$((toggles + 1))
        last="$value"
    done
    if [ "$toggles" -ge 4 ]; then pass "the buzzer line toggles while the timer alerts ($toggles edges in 8 s)"; else fail "the buzzer line toggles while the timer alerts (only $toggles edges in 8 s)"; fi
    ctl stop 00000000
    check "after stop the buzzer line is low" wait_until 10 sh -c "[ \"\$(cat $sim_dir/sim_gpio0/value)\" = 0 ]"

    # journald: the service's log, as JSON with its fields.
    journal="$(journalctl -u alarmd -b -o json --no-pager)"
    entry="$(grep -m1 'GPIO opened' <<<"$journal" || true)"
    echo "FIELD DATA journal ${entry:-none}"

    # Alarms to keep through the watchdog restart and the reboot.
    ctl timer 1h --title "Field countdown" --id 00000000-0000-4000-8000-0000000000c1
    ctl timer 2h --title "Field paused" --id 00000000-0000-4000-8000-0000000000c2
    ctl pause 00000000-0000-4000-8000-0000000000c2
    ctl alarm 07:00 mon,wed,fri --title "Field weekly" --id 00000000-0000-4000-8000-0000000000c3
    data before-watchdog

    # The watchdog: a frozen alarmd is killed and started again.
    watchdog="$(systemctl show -p WatchdogUSec --value alarmd)"
    restart="$(systemctl show -p RestartUSec --value alarmd)"
    old_pid="$(systemctl show -p MainPID --value alarmd)"
    started=$SECONDS
    kill -STOP "$old_pid"
    restarted() {
        local pid
        pid="$(systemctl show -p MainPID --value alarmd)"
        [ "$pid" != 0 ] && [ "$pid" != "$old_pid" ] && alarmd_active
    }
    if wait_until 120 restarted; then
        took=$((SECONDS - started))
        echo "FIELD INFO watchdog: stopped alarmd was running again after $took s (WatchdogSec=$watchdog, RestartSec=$restart)"
        check "after kill -STOP systemd restarted alarmd within WatchdogSec + RestartSec (30 s + 5 s, +10 s for start-up under TCG): $took s" \
            test "$took" -le 45
    else
        fail "after kill -STOP systemd restarted alarmd (not within 120 s)"
    fi
    check "the journal names the watchdog" sh -c 'journalctl -u alarmd -b --no-pager | grep -q "Watchdog timeout"'
    data after-watchdog

    # systemctl reload checks the file first (ExecReload=alarmd check-config): a broken one fails
    # the reload with its problem in the journal, and alarmd runs on as it was, unsignalled.
    journal_count() { journalctl -u alarmd -b --no-pager | grep -c "$1"; }
    journal_has() { journalctl -u alarmd -b --no-pager | grep -q "$1"; }
    sighups() { journal_count "SIGHUP: reading the configuration again"; }
    applied() { journal_count "time zone in force"; }
    more_applied_than() { [ "$(applied)" -gt "$1" ]; }
    reloaded() { systemctl reload alarmd && wait_until 20 more_applied_than "$1"; }
    check "systemctl reload alarmd: alarmd reads its configuration again" reloaded "$(applied)"
    cp -p /etc/alarmd/alarmd.toml /root/alarmd.toml.good
    echo 'not toml [' >>/etc/alarmd/alarmd.toml
    refused() { # refused MAINPID
        ! systemctl reload alarmd 2>/dev/null && wait_until 20 journal_has "is not valid TOML at line" \
            && [ "$(systemctl show -p MainPID --value alarmd)" = "$1" ] && alarmd_active
    }
    before="$(sighups)"
    check "with a broken file systemctl reload fails, the journal says why, and alarmd runs on" \
        refused "$(systemctl show -p MainPID --value alarmd)"
    mv /root/alarmd.toml.good /etc/alarmd/alarmd.toml
    # The next good reload is a barrier: alarmd logs its lines after any that the refused one caused.
    only_one_sighup_more() { reloaded "$(applied)" && [ "$(sighups)" -eq $(($1 + 1)) ]; }
    check "the refused reload did not signal alarmd: after the next good one, one SIGHUP more is logged" \
        only_one_sighup_more "$before"

    # The companion display: installed, not enabled; enabled, it serves the page with this node on it.
    check "alarmd-companion.service is installed, not enabled" sh -c '[ "$(systemctl is-enabled alarmd-companion)" = disabled ]'
    systemctl enable --now alarmd-companion >/dev/null 2>&1
    companion_get() { # companion_get PATH: the reply to a GET on 127.0.0.1:8080 (bash's /dev/tcp: no curl here)
        exec 3<>/dev/tcp/127.0.0.1/8080 || return 1
        printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$1" >&3
        timeout 10 cat <&3
        exec 3<&-
    }
    companion_shows_field() {
        local reply
        reply="$(companion_get /api/state 2>/dev/null)" && grep -q '"id":"field"' <<<"$reply" && grep -q '"stateText":"online since' <<<"$reply"
    }
    check "enabled, alarmd-companion serves the page on 127.0.0.1:8080, with node field online" wait_until 90 companion_shows_field
    check "alarmd-companion runs as a dynamic user, not root" \
        sh -c 'pid=$(systemctl show -p MainPID --value alarmd-companion); [ "$pid" != 0 ] && [ "$(stat -c %u /proc/$pid)" != 0 ]'
    # docs/install.md's page password: a drop-in, the password file passed as a credential.
    install -d /etc/systemd/system/alarmd-companion.service.d
    printf 'field secret\n' | install -m 0600 /dev/stdin /etc/alarmd/companion-password
    printf '[Service]\nLoadCredential=page-password:/etc/alarmd/companion-password\nExecStart=\nExecStart=/usr/bin/alarmd-companion --listen 0.0.0.0:8080 --password-file %%d/page-password\n' \
        >/etc/systemd/system/alarmd-companion.service.d/password.conf
    systemctl daemon-reload
    systemctl restart alarmd-companion
    companion_asks_password() { companion_get /api/state 2>/dev/null | head -1 | grep -q ' 401 '; }
    check "with install.md's drop-in it listens on 0.0.0.0:8080 and asks for the password (401)" wait_until 90 companion_asks_password
    rm -rf /etc/systemd/system/alarmd-companion.service.d /etc/alarmd/companion-password
    systemctl daemon-reload
    systemctl disable --now alarmd-companion >/dev/null 2>&1

    # The units' exposure, measured by the systemd that runs them.
    for unit in alarmd alarmd-companion; do
        security="$(systemd-analyze security "$unit" 2>&1)"
        exposure="$(sed -n "s/.*Overall exposure level for $unit.service: \([0-9.]*\).*/\1/p" <<<"$security")"
        check "systemd-analyze security $unit in the booted system: ${exposure:-?} (at most 2.0)" \
            awk -v e="${exposure:-99}" 'BEGIN { exit !(e + 0 <= 2.0) }'
    done

    data before-reboot
    echo second-boot >"$phase_file"
    echo "FIELD INFO rebooting"
    sync
    systemctl reboot
    exit 0
fi

# --- Second boot ---------------------------------------------------------------------------------
check "after the reboot systemctl is-active alarmd: active" alarmd_active
data after-reboot

# An upgrade (here the same package again) that finds a file the new version refuses leaves the
# running alarmd alone; with the file fixed, the next one restarts it.
main_pid() { systemctl show -p MainPID --value alarmd; }
pid_before="$(main_pid)"
cp -p /etc/alarmd/alarmd.toml /root/alarmd.toml.good
echo 'not toml [' >>/etc/alarmd/alarmd.toml
dpkg -i /root/alarmd.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; fail "dpkg -i with a refused configuration exits 0"; }
check "an upgrade with a refused configuration says so and leaves alarmd running as it was" \
    sh -c "grep -q 'not (re)started: this version refuses' /tmp/dpkg.log && grep -q 'is not valid TOML at line' /tmp/dpkg.log \
        && [ \"\$(systemctl show -p MainPID --value alarmd)\" = $pid_before ] && systemctl is-active --quiet alarmd"
refusal_in_journal() { journalctl -b -t alarmd -p crit --no-pager | grep -q 'not (re)started'; }
check "the refused upgrade is in the journal, as critical" wait_until 10 refusal_in_journal
mv /root/alarmd.toml.good /etc/alarmd/alarmd.toml
dpkg -i /root/alarmd.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; fail "dpkg -i exits 0"; }
restarted_by_upgrade() { [ "$(main_pid)" != 0 ] && [ "$(main_pid)" != "$1" ] && alarmd_active; }
check "an upgrade with a good configuration restarts alarmd" wait_until 60 restarted_by_upgrade "$pid_before"
data after-upgrade

apt-get remove -y -q alarmd >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt-get remove alarmd"; }
check "apt remove: alarmd stopped, its programs gone" \
    sh -c '! systemctl is-active --quiet alarmd && [ ! -e /usr/bin/alarmd ] && [ ! -e /usr/bin/alarmctl ] && [ ! -e /usr/bin/alarmd-companion ]'
check "apt remove keeps the state (/var/lib/alarmd/alarms holds the 3 alarms) and the configuration" \
    sh -c '[ "$(ls /var/lib/alarmd/alarms/*.json | wc -l)" = 3 ] && [ -f /etc/alarmd/alarmd.toml ]'

apt-get install -y -q /root/alarmd.deb >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt-get install ./alarmd.deb"; }
check "apt install starts alarmd (deb-systemd-invoke under systemd)" wait_until 60 alarmd_active
check "apt install leaves alarmd enabled" sh -c '[ "$(systemctl is-enabled alarmd)" = enabled ]'
check "the edited configuration was kept (conffile)" grep -q '^chip = "alarmd-field"' /etc/alarmd/alarmd.toml
check "/etc/alarmd/alarmd.toml is 0640 root:alarmd" sh -c '[ "$(stat -c "%a %U:%G" /etc/alarmd/alarmd.toml)" = "640 root:alarmd" ]'
data after-reinstall

apt-get purge -y -q alarmd >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt-get purge alarmd"; }
check "apt purge deletes the state and the configuration" sh -c '[ ! -e /var/lib/alarmd ] && [ ! -e /etc/alarmd ]'
check "apt purge leaves alarmd stopped and its unit gone" \
    sh -c '! systemctl is-active --quiet alarmd && [ ! -e /lib/systemd/system/alarmd.service ]'
finish
