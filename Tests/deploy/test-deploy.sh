#!/usr/bin/env bash
# Tests deploy/: the Debian package of scripts/package, made from the binaries under test (its
# contents, control file, conffile and lintian; as root, dpkg installs, upgrades, removes and purges it in a
# private mount namespace whose /etc, /usr and /var are overlays, so the machine's users and
# files stay untouched), the systemd unit (systemd-analyze verify and its security rating), the
# example configurations, and the real alarmd as systemd would run it: the example config against
# a broker set up from deploy/mosquitto/alarmd.conf, sd_notify READY/WATCHDOG/STOPPING, SIGHUP,
# SIGTERM, and (under strace) no system call or socket family the unit's filters forbid.
# scripts/test-field installs the real package into a booted Debian system.
#
#   Tests/deploy/test-deploy.sh              uses the binaries of `swift build --show-bin-path`
#   ALARMD_BIN_DIR=DIR Tests/deploy/test-deploy.sh
#   ALARMD_PACKAGE_BIN_DIR=DIR    package the release binaries in DIR instead of building them
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
    deb="$2" scratch="$3"
    ok() { echo "PASS dpkg: $1"; }
    bad() { echo "FAIL dpkg: $1"; }
    expect() { # expect DESCRIPTION COMMAND...
        local description="$1"
        shift
        if "$@"; then ok "$description"; else bad "$description"; fi
    }
    # expect_logged DESCRIPTION COMMAND...: as expect, with COMMAND's output in $log, shown when it fails.
    expect_logged() {
        local description="$1"
        shift
        if "$@" >"$log" 2>&1; then ok "$description"; else bad "$description"; cat "$log"; fi
    }
    mount -t tmpfs tmpfs "$scratch" || { echo "SETUP-FAILED cannot mount a tmpfs"; exit 3; }
    for dir in /etc /usr /var; do
        name="${dir//\//_}"
        mkdir -p "$scratch/$name.upper" "$scratch/$name.work"
        mount -t overlay overlay -o "lowerdir=$dir,upperdir=$scratch/$name.upper,workdir=$scratch/$name.work" "$dir" \
            || { echo "SETUP-FAILED cannot mount an overlay on $dir"; exit 3; }
    done
    # No systemd or udev in here, whatever the machine runs: nothing may reach the real ones.
    mount -t tmpfs tmpfs /run || { echo "SETUP-FAILED cannot mount a tmpfs on /run"; exit 3; }
    # The machine may have them already; the package must create them.
    if getent passwd alarmd >/dev/null; then userdel alarmd 2>/dev/null; fi
    if getent group alarmd >/dev/null; then groupdel alarmd 2>/dev/null; fi

    log="$scratch/dpkg.log"
    expect_logged "dpkg -i exits 0" dpkg -i "$deb"
    expect "the gpio group exists" sh -c "getent group gpio >/dev/null"
    expect "the alarmd system user exists, in the gpio group" sh -c 'id -nG alarmd | tr " " "\n" | grep -qx gpio'
    expect "alarmd's shell is nologin and its home /var/lib/alarmd" sh -c 'getent passwd alarmd | grep -q ":/var/lib/alarmd:/usr/sbin/nologin$"'
    expect "alarmd is a system user (uid below 1000)" sh -c '[ "$(id -u alarmd)" -lt 1000 ]'
    expect "/etc/alarmd/alarmd.toml is 0640 root:alarmd" sh -c '[ "$(stat -c "%a %U %G" /etc/alarmd/alarmd.toml)" = "640 root alarmd" ]'
    expect "/var/lib/alarmd is 0700 alarmd:alarmd" sh -c '[ "$(stat -c "%a %U %G" /var/lib/alarmd)" = "700 alarmd alarmd" ]'
    expect "/usr/bin/alarmd is 0755 root:root" sh -c '[ "$(stat -c "%a %U %G" /usr/bin/alarmd)" = "755 root root" ]'
    expect "the service is enabled (deb-systemd-helper's link in multi-user.target.wants)" \
        sh -c '[ "$(readlink /etc/systemd/system/multi-user.target.wants/alarmd.service)" = /lib/systemd/system/alarmd.service ]'
    expect "the companion's unit is installed, not enabled (an admin enables it)" \
        sh -c '[ -f /lib/systemd/system/alarmd-companion.service ] && [ ! -e /etc/systemd/system/multi-user.target.wants/alarmd-companion.service ]'
    expect "the installed alarmd reads the installed configuration as the alarmd user" \
        runuser -u alarmd -- /usr/bin/alarmd check-config /etc/alarmd/alarmd.toml
    uid_before="$(id -u alarmd)"
    echo "# edited" >>/etc/alarmd/alarmd.toml
    mkdir -p /var/lib/alarmd/alarms
    echo "{}" >/var/lib/alarmd/alarms/kept.json
    expect_logged "installing again exits 0" dpkg -i "$deb"
    expect "installing again keeps the user" sh -c "[ \"\$(id -u alarmd)\" = $uid_before ]"
    expect "installing again keeps the edited conffile" grep -q "^# edited" /etc/alarmd/alarmd.toml
    # An upgrade whose example changed too: dpkg keeps the edited file (--force-confold answers
    # its question as apt's default does) and puts the new example beside it.
    newer="$scratch/newer"
    dpkg-deb -R "$deb" "$newer"
    sed -i 's/^Version: .*/&.1/' "$newer/DEBIAN/control"
    echo "# new in the upgrade" >>"$newer/etc/alarmd/alarmd.toml"
    dpkg-deb --root-owner-group -Zgzip -z1 --build "$newer" "$scratch/newer.deb" >/dev/null
    expect_logged "an upgrade whose example changed exits 0" dpkg -i --force-confold "$scratch/newer.deb"
    expect "the upgrade keeps the edited conffile, 0640 root:alarmd, the new example beside it as .dpkg-dist" \
        sh -c 'grep -q "^# edited" /etc/alarmd/alarmd.toml && [ "$(stat -c "%a %U %G" /etc/alarmd/alarmd.toml)" = "640 root alarmd" ] \
            && grep -q "^# new in the upgrade" /etc/alarmd/alarmd.toml.dpkg-dist'
    expect "the upgrade keeps the state" test -f /var/lib/alarmd/alarms/kept.json
    expect_logged "dpkg -r exits 0" dpkg -r alarmd
    expect "remove deletes the programs and the units" sh -c '[ ! -e /usr/bin/alarmd ] && [ ! -e /usr/bin/alarmctl ] && [ ! -e /usr/bin/alarmd-companion ] \
        && [ ! -e /lib/systemd/system/alarmd.service ] && [ ! -e /lib/systemd/system/alarmd-companion.service ]'
    expect "remove keeps the state and the edited configuration" \
        sh -c '[ -f /var/lib/alarmd/alarms/kept.json ] && grep -q "^# edited" /etc/alarmd/alarmd.toml'
    expect_logged "dpkg -P exits 0" dpkg -P alarmd
    expect "purge deletes /var/lib/alarmd and /etc/alarmd" sh -c '[ ! -e /var/lib/alarmd ] && [ ! -e /etc/alarmd ]'
    expect "purge removes the enablement link" sh -c '[ ! -e /etc/systemd/system/multi-user.target.wants/alarmd.service ]'
    expect "purge keeps the alarmd user and the gpio group (Debian's rule for system users)" \
        sh -c "getent passwd alarmd >/dev/null && getent group gpio >/dev/null"
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

# --- 1. The Debian package ------------------------------------------------------------------------

# scripts/package builds the static release binaries (in .build-hil, beside the HIL test's), or
# packages those in ALARMD_PACKAGE_BIN_DIR: the debug build above links the Swift runtime
# dynamically, which a package must not.
package_options=(--out "$work/dist" --no-lintian)
[ -n "${ALARMD_PACKAGE_BIN_DIR:-}" ] && package_options+=(--bin-dir "$ALARMD_PACKAGE_BIN_DIR")
deb=""
if ! command -v dpkg-deb >/dev/null 2>&1; then
    skip "the Debian package" "dpkg-deb is missing (this is not a Debian machine)"
elif deb="$(scripts/package "${package_options[@]}" 2>"$work/package.err")"; then
    pass "scripts/package makes $(basename "$deb")"
else
    fail "scripts/package" "$(tail -5 "$work/package.err")"
    deb=""
fi
if [ -n "$deb" ]; then
    arch="$(dpkg --print-architecture)"
    version="$(sed -n 's/.*static let current = "\([^"]*\)".*/\1/p' Sources/AlarmKit/Protocol/NodeTopics.swift)"
    check "it is named alarmd_<version>_<arch>.deb" test "$(basename "$deb")" = "alarmd_${version}_$arch.deb"
    dpkg-deb -x "$deb" "$work/unpacked"
    dpkg-deb -e "$deb" "$work/unpacked/DEBIAN"
    listing="$(dpkg-deb -c "$deb" | awk '{ print $1, $2, $6 }')"
    if grep -qxF -- '-rwxr-xr-x root/root ./usr/bin/alarmd' <<<"$listing" \
        && grep -qxF -- '-rwxr-xr-x root/root ./usr/bin/alarmctl' <<<"$listing" \
        && grep -qxF -- '-rwxr-xr-x root/root ./usr/bin/alarmd-companion' <<<"$listing"; then
        pass "it holds /usr/bin/alarmd, alarmctl and alarmd-companion, 0755 root"
    else
        fail "it holds /usr/bin/alarmd, alarmctl and alarmd-companion, 0755 root" "$(grep usr/bin <<<"$listing")"
    fi
    check "it holds the companion's unit, as in deploy/" \
        cmp -s "$work/unpacked/lib/systemd/system/alarmd-companion.service" deploy/alarmd-companion.service
    check "it holds the unit in /lib/systemd/system, with ExecStart=/usr/bin/alarmd" \
        grep -qx 'ExecStart=/usr/bin/alarmd --config /etc/alarmd/alarmd.toml' "$work/unpacked/lib/systemd/system/alarmd.service"
    check "it holds the udev rule in /lib/udev/rules.d, as in deploy/" \
        cmp -s "$work/unpacked/lib/udev/rules.d/99-alarmd-gpio.rules" deploy/99-alarmd-gpio.rules
    check "it holds README.md and docs/ in /usr/share/doc/alarmd, which alarmctl --help names" \
        sh -c "cmp -s '$work/unpacked/usr/share/doc/alarmd/README.md' README.md && diff -qr docs '$work/unpacked/usr/share/doc/alarmd/docs'"
    check "it holds /etc/alarmd/alarmd.toml as in deploy/, mode 0640, and marks it a conffile" \
        sh -c "cmp -s '$work/unpacked/etc/alarmd/alarmd.toml' deploy/alarmd.toml && [ \"\$(stat -c %a '$work/unpacked/etc/alarmd/alarmd.toml')\" = 640 ] \
            && grep -qx /etc/alarmd/alarmd.toml '$work/unpacked/DEBIAN/conffiles'"
    check "its binaries are stripped" sh -c "for b in alarmd alarmctl alarmd-companion; do ! readelf -S --wide '$work/unpacked/usr/bin/'\$b | grep -q ' .symtab ' || exit 1; done"
    check "it has postinst, prerm and postrm, as in deploy/debian" \
        sh -c "for s in postinst prerm postrm; do cmp -s '$work/unpacked/DEBIAN/'\$s deploy/debian/\$s || exit 1; done"
    depends="$(dpkg-deb --field "$deb" Depends)"
    echo "    Depends: $depends"
    check "Depends: names libc6, libmosquitto1, libgpiod2, adduser and init-system-helpers" \
        sh -c "for p in libc6 libmosquitto1 libgpiod2 adduser init-system-helpers; do echo '$depends' | grep -q \"\$p\" || exit 1; done"
    if command -v dpkg-shlibdeps >/dev/null 2>&1; then
        # dpkg-shlibdeps, Debian's own tool, must find no library package that Depends: lacks.
        mkdir -p "$work/shlibs/debian" "$work/shlibs/bin"
        printf 'Source: alarmd\n\nPackage: alarmd\nArchitecture: any\n' >"$work/shlibs/debian/control"
        cp "$work/unpacked/usr/bin/alarmd" "$work/unpacked/usr/bin/alarmctl" "$work/unpacked/usr/bin/alarmd-companion" "$work/shlibs/bin/"
        shlibs="$(cd "$work/shlibs" && dpkg-shlibdeps -O bin/alarmd bin/alarmctl bin/alarmd-companion 2>/dev/null | sed 's/^shlibs:Depends=//')"
        missing_packages=()
        for package in $(tr ',' '\n' <<<"$shlibs" | awk '{ print $1 }'); do
            grep -q -- "$package" <<<"$depends" || missing_packages+=("$package")
        done
        if [ -z "$shlibs" ]; then
            fail "Depends: against dpkg-shlibdeps" "dpkg-shlibdeps printed nothing"
        elif [ "${#missing_packages[@]}" -eq 0 ]; then
            pass "Depends: covers what dpkg-shlibdeps finds ($shlibs)"
        else
            fail "Depends: covers what dpkg-shlibdeps finds" "missing ${missing_packages[*]} (dpkg-shlibdeps: $shlibs)"
        fi
    else
        skip "Depends: against dpkg-shlibdeps" "dpkg-shlibdeps is missing (apt-get install dpkg-dev)"
    fi
    if command -v lintian >/dev/null 2>&1; then
        # TMPDIR: lintian leaves its cache files (mldbm-elf-*) there; $work goes at the end.
        lintian_out="$(TMPDIR="$work" lintian "$deb" 2>&1 || true)"
        if grep -q '^E:' <<<"$lintian_out"; then
            fail "lintian finds no error" "$(grep '^E:' <<<"$lintian_out")"
        else
            pass "lintian finds no error"
        fi
        while read -r tag; do
            [ -n "$tag" ] || continue
            check "lintian's warning $tag is explained in docs/install.md" grep -qF "\`$tag\`" docs/install.md
        done < <(sed -n 's/^W: alarmd[^:]*: \([a-z0-9-]*\).*/\1/p' <<<"$lintian_out" | sort -u)
    else
        skip "lintian" "lintian is not installed (apt-get install lintian)"
    fi
    check "scripts/package --arch with an unknown architecture fails and says why" \
        sh -c "! scripts/package --arch mips --out '$work/bad' >'$work/bad.out' 2>&1 && grep -q 'amd64 or arm64' '$work/bad.out'"
fi
if command -v shellcheck >/dev/null 2>&1; then
    check "shellcheck: scripts/package, scripts/test-field, the maintainer scripts, the guest scripts, this test" \
        shellcheck -x scripts/package scripts/test-field deploy/debian/postinst deploy/debian/prerm deploy/debian/postrm \
        Tests/field/guest/check.sh Tests/field/guest/gpio-sim.sh Tests/deploy/test-deploy.sh
else
    skip "shellcheck" "shellcheck is not installed (apt-get install shellcheck)"
fi

# --- 1b. dpkg as root, in a private mount namespace ----------------------------------------------

if [ -z "$deb" ]; then
    skip "dpkg install, remove, purge" "no package was made (above)"
elif [ "$(id -u)" -ne 0 ]; then
    skip "dpkg install, remove, purge" "needs root, to overlay /etc, /usr and /var in a private mount namespace"
elif ! command -v unshare >/dev/null 2>&1; then
    skip "dpkg install, remove, purge" "unshare (util-linux) is missing"
else
    mkdir -p "$work/ns"
    ns_out="$work/ns.out"
    unshare --mount --propagation private "$repo/Tests/deploy/test-deploy.sh" --inside-namespace "$deb" "$work/ns" >"$ns_out" 2>&1
    if grep -q "^SETUP-FAILED" "$ns_out"; then
        skip "dpkg install, remove, purge" "$(grep -m1 '^SETUP-FAILED' "$ns_out" | sed 's/^SETUP-FAILED //') (overlayfs or mount namespaces unavailable here)"
    elif ! grep -q "^PASS dpkg" "$ns_out"; then
        fail "dpkg install" "no result from the namespace: $(tail -5 "$ns_out")"
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
    # verify: the unit as packaged, with ExecStart and ExecReload's check pointing at the binary under test.
    mkdir -p "$work/unit"
    sed "s|^\(Exec[A-Za-z]*\)=/usr/bin/alarmd |\1=$alarmd |" deploy/alarmd.service >"$work/unit/alarmd.service"
    if ! grep -q "^ExecStart=$alarmd " "$work/unit/alarmd.service" || ! grep -q "^ExecReload=$alarmd check-config " "$work/unit/alarmd.service"; then
        fail "systemd-analyze verify" "could not point ExecStart and ExecReload at the binary under test"
    elif verify_out="$(systemd-analyze verify "$work/unit/alarmd.service" 2>&1)" \
        && ! grep -q "alarmd.service" <<<"$verify_out"; then
        pass "systemd-analyze verify deploy/alarmd.service (ExecStart at the binary under test)"
    else
        fail "systemd-analyze verify deploy/alarmd.service" "$verify_out"
    fi
    # The same check must notice a broken unit, or it proves nothing: only ExecStart's binary is missing.
    mkdir -p "$work/broken"
    sed "s|^ExecStart=/usr/bin/alarmd |ExecStart=$work/missing/alarmd |; s|^ExecReload=/usr/bin/alarmd |ExecReload=$alarmd |" \
        deploy/alarmd.service >"$work/broken/alarmd.service"
    check "systemd-analyze verify rejects the unit when ExecStart's binary is missing" \
        sh -c "! systemd-analyze verify '$work/broken/alarmd.service' >/dev/null 2>&1"

    sed "s|^ExecStart=/usr/bin/alarmd-companion\$|ExecStart=$bin_dir/alarmd-companion|" deploy/alarmd-companion.service \
        >"$work/unit/alarmd-companion.service"
    if ! grep -q "^ExecStart=$bin_dir/alarmd-companion$" "$work/unit/alarmd-companion.service"; then
        fail "systemd-analyze verify deploy/alarmd-companion.service" "could not point ExecStart at the binary under test"
    elif verify_out="$(systemd-analyze verify "$work/unit/alarmd-companion.service" 2>&1)" \
        && ! grep -q "alarmd-companion.service" <<<"$verify_out"; then
        pass "systemd-analyze verify deploy/alarmd-companion.service (ExecStart at the binary under test)"
    else
        fail "systemd-analyze verify deploy/alarmd-companion.service" "$verify_out"
    fi

    for unit in alarmd.service alarmd-companion.service; do
        security_out="$(systemd-analyze security --offline=true "deploy/$unit" 2>&1)"
        exposure="$(sed -n "s/.*Overall exposure level for $unit: \([0-9][0-9.]*\).*/\1/p" <<<"$security_out")"
        if [ -z "$exposure" ]; then
            fail "systemd-analyze security $unit" "no overall exposure level in its output: $(tail -3 <<<"$security_out")"
        elif awk -v e="$exposure" -v m="$max_exposure" 'BEGIN { exit !(e + 0 <= m + 0) }'; then
            pass "systemd-analyze security --offline=true $unit: exposure $exposure (at most $max_exposure)"
        else
            fail "systemd-analyze security $unit: exposure $exposure is above $max_exposure" \
                "$(grep '✗' <<<"$security_out")"
        fi
    done
fi

# What alarmd relies on, which a hardening edit could take away.
unit_has() { grep -Eq "^$1\$" deploy/alarmd.service; }
check "the unit: Type=notify, NotifyAccess=main, WatchdogSec, ExecReload checks the file, then sends SIGHUP" \
    sh -c "grep -qx 'Type=notify' deploy/alarmd.service && grep -qx 'NotifyAccess=main' deploy/alarmd.service \
        && grep -Eq '^WatchdogSec=[1-9]' deploy/alarmd.service && grep -A1 -x 'ExecReload=/usr/bin/alarmd check-config /etc/alarmd/alarmd.toml' \
        deploy/alarmd.service | grep -qx 'ExecReload=/bin/kill -HUP \$MAINPID'"
check "the unit: user alarmd in gpio, StateDirectory=alarmd, GPIO devices allowed, spared by the OOM killer" \
    sh -c "grep -qx 'User=alarmd' deploy/alarmd.service && grep -qx 'SupplementaryGroups=gpio' deploy/alarmd.service \
        && grep -Eqx 'OOMScoreAdjust=-[1-9][0-9]*' deploy/alarmd.service \
        && grep -qx 'StateDirectory=alarmd' deploy/alarmd.service && grep -Eq '^DeviceAllow=(char-gpiochip|/dev/gpiochip\*) rw' deploy/alarmd.service"
if unit_has "ProtectClock=(yes|true|1|on)" || unit_has "PrivateDevices=(yes|true|1|on)"; then
    fail "the unit keeps adjtimex and the GPIO devices" "ProtectClock= blocks the read-only adjtimex and PrivateDevices= hides /dev/gpiochip*"
else
    pass "the unit has neither ProtectClock= (blocks the read-only adjtimex) nor PrivateDevices= (hides /dev/gpiochip*)"
fi
# An exit status for input that restarting cannot fix, which the unit would otherwise retry every 5 s for ever.
bad_value=0; timeout 20 "$alarmd" --max-alarms 0 >/dev/null 2>&1 || bad_value=$?
bad_flag=0; timeout 20 "$alarmd" --no-such-flag >/dev/null 2>&1 || bad_flag=$?
check "the unit does not restart alarmd after an invalid configuration (exit $bad_value) or an unreadable command line (exit $bad_flag)" \
    sh -c "[ $bad_value -gt 1 ] && [ $bad_flag -gt 1 ] && grep -x 'RestartPreventExitStatus=.*' deploy/alarmd.service | tr ' =' '\n\n' | grep -qx $bad_value \
        && grep -x 'RestartPreventExitStatus=.*' deploy/alarmd.service | tr ' =' '\n\n' | grep -qx $bad_flag"
check "the units wait neither for the network nor for a clock sync (not after or wanting network-online.target or time-sync.target)" \
    sh -c "! grep -Eq '^(After|Requires|Wants|BindsTo)=.*(network-online|time-sync)' deploy/alarmd.service deploy/alarmd-companion.service"

# --- 4. The example configuration --------------------------------------------------------------

if check_out="$("$alarmd" check-config deploy/alarmd.toml 2>&1)"; then
    pass "alarmd check-config deploy/alarmd.toml"
else
    fail "alarmd check-config deploy/alarmd.toml" "$check_out"
fi
# What the node answers to: its topics and groups (a --group on the command line replaces them).
printf '[node]\nid = "kitchen"\ngroups = ["house", "downstairs"]\n' > "$work/groups.toml"
check "check-config names the node's topics and groups" \
    grep -q "is valid: node kitchen, broker localhost:1883, topics alarmd/kitchen/…, groups house, downstairs" <<<"$("$alarmd" check-config "$work/groups.toml")"
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

# shellcheck source=Tests/test-helpers.sh
. "$(dirname "${BASH_SOURCE[0]}")/../test-helpers.sh"

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
if [ -z "$families_used" ]; then
    # alarmd opens at least its MQTT socket and the notify socket: none found means nothing was checked.
    fail "socket families against RestrictAddressFamilies=" "no socket() call found in the trace"
elif [ "${#bad_families[@]}" -eq 0 ]; then
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
