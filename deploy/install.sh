#!/usr/bin/env bash
# Installs alarmd (and alarmctl) as a systemd service on Debian 12 / Raspberry Pi OS bookworm.
# Run from a checkout of the repository; docs/install.md walks through it. Safe to run again
# (an upgrade is the same command). `deploy/install.sh --help` lists the options.
set -euo pipefail
umask 022

usage() {
    cat <<'EOF'
Usage: deploy/install.sh [OPTIONS]

Installs alarmd as a systemd service:
  $PREFIX/bin/alarmd, $PREFIX/bin/alarmctl     the programs (PREFIX defaults to /usr/local)
  /etc/systemd/system/alarmd.service           the unit (deploy/alarmd.service)
  /etc/udev/rules.d/99-alarmd-gpio.rules        the gpio group may use /dev/gpiochip*
  /etc/alarmd/alarmd.toml                       the configuration, only if there is none yet;
                                                otherwise alarmd.toml.new is put beside it
  /var/lib/alarmd                               the state directory
and the Debian packages of scripts/debian-packages, a `gpio` group and an `alarmd` system user.

Options:
  --skip-build BINDIR  install the alarmd (and alarmctl) already built in BINDIR instead of
                       building them (e.g. .build/release)
  --scratch-path DIR   when building, keep the build in DIR instead of .build
  --prefix DIR         install the programs into DIR/bin (default: $PREFIX, else /usr/local)
  --root DIR           install into DIR as if it were / (same as DESTDIR=DIR): for tests and
                       packaging. Touches no users, groups, packages or services; prints what
                       it would do instead. Needs no root privileges.
  --no-packages        do not install the Debian packages
  --uninstall          stop and remove the service, the programs, the unit and the udev rule;
                       keeps /etc/alarmd and /var/lib/alarmd
  --purge              with --uninstall (implies it): also remove /etc/alarmd, /var/lib/alarmd
                       and the alarmd user and group (the gpio group stays)
  -h, --help           show this help

Environment: PREFIX, DESTDIR (as --prefix, --root), SWIFT (the swift program to build with).
EOF
}

say() { printf 'install.sh: %s\n' "$*"; }
fail() {
    printf 'install.sh: error: %s\n' "$*" >&2
    exit 1
}

# --- Options -----------------------------------------------------------------------------------

prefix="${PREFIX:-/usr/local}"
root="${DESTDIR:-}"
bin_dir=""
scratch_path=""
packages=1
uninstall=0
purge=0
while [ $# -gt 0 ]; do
    case "$1" in
        --skip-build)
            [ $# -ge 2 ] || fail "--skip-build needs the folder holding the built alarmd, e.g. --skip-build .build/release"
            bin_dir="$2"
            shift 2
            ;;
        --skip-build=*) bin_dir="${1#*=}"; shift ;;
        --scratch-path)
            [ $# -ge 2 ] || fail "--scratch-path needs a folder, e.g. --scratch-path .build-release"
            scratch_path="$2"
            shift 2
            ;;
        --scratch-path=*) scratch_path="${1#*=}"; shift ;;
        --prefix)
            [ $# -ge 2 ] || fail "--prefix needs a folder, e.g. --prefix /usr/local"
            prefix="$2"
            shift 2
            ;;
        --prefix=*) prefix="${1#*=}"; shift ;;
        --root)
            [ $# -ge 2 ] || fail "--root needs a folder, e.g. --root /tmp/alarmd-root"
            root="$2"
            shift 2
            ;;
        --root=*) root="${1#*=}"; shift ;;
        --no-packages) packages=0; shift ;;
        --uninstall) uninstall=1; shift ;;
        --purge) uninstall=1; purge=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) fail "unknown option '$1' (see deploy/install.sh --help)" ;;
    esac
done

case "$prefix" in
    /*) ;;
    *) fail "--prefix must be an absolute path, not '$prefix'" ;;
esac
prefix="${prefix%/}"
[ -n "$prefix" ] || prefix=/usr

# A root of "/" is the real system.
if [ "$root" = "/" ]; then root=""; fi
if [ -n "$root" ]; then
    mkdir -p "$root" || fail "cannot create the install root '$root'"
    root="$(cd "$root" && pwd -P)"
    [ "$root" != "/" ] || root=""
fi
staged=0
[ -n "$root" ] && staged=1

if [ "$staged" -eq 0 ] && [ "$(id -u)" -ne 0 ]; then
    fail "installing into the system needs root: run 'sudo $0 $*' (or --root DIR to install into a folder)"
fi

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
deploy="$repo/deploy"
for file in alarmd.service 99-alarmd-gpio.rules alarmd.toml; do
    [ -f "$deploy/$file" ] || fail "$deploy/$file is missing: run this script from a complete checkout of alarmd"
done

# Paths, all under the install root.
bin_target="$root$prefix/bin"
unit_target="$root/etc/systemd/system/alarmd.service"
rule_target="$root/etc/udev/rules.d/99-alarmd-gpio.rules"
config_dir="$root/etc/alarmd"
config_target="$config_dir/alarmd.toml"
state_dir="$root/var/lib/alarmd"
programs=(alarmd alarmctl)

# Runs a command on the real system, or, in a staged install, says what it would run.
system() {
    if [ "$staged" -eq 1 ]; then
        say "would run: $*"
    else
        say "running: $*"
        "$@"
    fi
}

systemd_running() { [ "$staged" -eq 0 ] && [ -d /run/systemd/system ]; }

# --- Uninstall ---------------------------------------------------------------------------------

if [ "$uninstall" -eq 1 ]; then
    if systemd_running; then
        if [ -e "$unit_target" ]; then
            system systemctl disable --now alarmd.service || say "could not stop alarmd.service; removing it anyway"
        fi
    elif [ "$staged" -eq 1 ]; then
        say "would run: systemctl disable --now alarmd.service"
    fi
    for program in "${programs[@]}"; do
        if [ -e "$bin_target/$program" ]; then
            rm -f "$bin_target/$program"
            say "removed $bin_target/$program"
        fi
    done
    for file in "$unit_target" "$rule_target"; do
        if [ -e "$file" ]; then
            rm -f "$file"
            say "removed $file"
        fi
    done
    if systemd_running; then system systemctl daemon-reload; fi
    if [ "$staged" -eq 1 ]; then
        say "would run: systemctl daemon-reload; udevadm control --reload"
    elif command -v udevadm >/dev/null 2>&1 && [ -d /run/udev ]; then
        system udevadm control --reload || true
    fi
    if [ "$purge" -eq 1 ]; then
        for dir in "$config_dir" "$state_dir" "$root/etc/systemd/system/alarmd.service.d"; do
            if [ -e "$dir" ]; then
                rm -rf "$dir"
                say "removed $dir"
            fi
        done
        if [ "$staged" -eq 1 ]; then
            say "would run: userdel alarmd; groupdel alarmd (the gpio group stays)"
        else
            if getent passwd alarmd >/dev/null; then
                system userdel alarmd || fail "userdel alarmd failed: is an alarmd process still running? (pgrep -u alarmd)"
            fi
            if getent group alarmd >/dev/null; then
                system groupdel alarmd || say "warning: groupdel alarmd failed; remove the group by hand"
            fi
        fi
        say "alarmd is uninstalled and purged (the gpio group and the Debian packages stay)"
    else
        say "alarmd is uninstalled; kept ${config_dir} (configuration) and ${state_dir} (alarms): --purge removes them"
    fi
    exit 0
fi

# --- Debian packages ---------------------------------------------------------------------------

wanted_packages=()
while read -r line; do
    line="${line%%#*}"
    for package in $line; do wanted_packages+=("$package"); done
done <"$repo/scripts/debian-packages"

if [ "$packages" -eq 0 ]; then
    say "not installing Debian packages (--no-packages)"
elif [ "$staged" -eq 1 ]; then
    say "would install the Debian packages that are missing from: ${wanted_packages[*]}"
else
    missing=()
    for package in "${wanted_packages[@]}"; do
        status="$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)"
        [ "$status" = "install ok installed" ] || missing+=("$package")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        say "installing Debian packages: ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" \
            || fail "apt-get could not install ${missing[*]}: run 'sudo apt-get update' and try again"
    else
        say "Debian packages already installed"
    fi
fi

# --- Build -------------------------------------------------------------------------------------

has_alarmctl=0
grep -Eq 'name: *"alarmctl"' "$repo/Package.swift" && has_alarmctl=1

if [ -z "$bin_dir" ]; then
    swift="${SWIFT:-$(command -v swift || true)}"
    if [ -z "$swift" ] || [ ! -x "$swift" ]; then
        fail "no swift toolchain found (sudo resets PATH): run again as 'sudo SWIFT=\"\$(command -v swift)\" $0', or build first and pass --skip-build .build/release (docs/install.md)"
    fi
    build=("$swift" build -c release --static-swift-stdlib --package-path "$repo")
    [ -n "$scratch_path" ] && build+=(--scratch-path "$scratch_path")
    products=(alarmd)
    [ "$has_alarmctl" -eq 1 ] && products+=(alarmctl)
    # Under sudo, build as the user who owns the checkout, so .build does not become root's.
    as_user=()
    if [ "$(id -u)" -eq 0 ] && [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ]; then
        user_home="$(getent passwd "$SUDO_USER" | cut -d: -f6)"
        as_user=(runuser -u "$SUDO_USER" -- env "HOME=$user_home")
    fi
    for product in "${products[@]}"; do
        say "building $product (release; the first build takes several minutes on a Raspberry Pi)"
        "${as_user[@]}" "${build[@]}" --product "$product" \
            || fail "building $product failed (see above); fix it, or build elsewhere and use --skip-build"
    done
    bin_dir="$("${as_user[@]}" "${build[@]}" --show-bin-path)"
fi

[ -d "$bin_dir" ] || fail "--skip-build: '$bin_dir' is not a folder; build with 'swift build -c release --static-swift-stdlib --product alarmd' and pass its --show-bin-path"
[ -x "$bin_dir/alarmd" ] || fail "$bin_dir/alarmd is missing or not executable: build it with 'swift build -c release --static-swift-stdlib --product alarmd'"
if [ "$has_alarmctl" -eq 1 ] && [ ! -x "$bin_dir/alarmctl" ]; then
    say "warning: $bin_dir/alarmctl is missing; installing alarmd only (build it with --product alarmctl)"
fi

# --- Users and groups --------------------------------------------------------------------------

if [ "$staged" -eq 1 ]; then
    say "would create the gpio group if missing: groupadd --system gpio"
    say "would create the alarmd system user if missing: useradd --system --user-group --groups gpio --home-dir /var/lib/alarmd --no-create-home --shell /usr/sbin/nologin alarmd"
else
    if ! getent group gpio >/dev/null; then system groupadd --system gpio; fi
    if ! getent passwd alarmd >/dev/null; then
        group_option=(--user-group)
        getent group alarmd >/dev/null && group_option=(--gid alarmd)
        system useradd --system "${group_option[@]}" --groups gpio --home-dir /var/lib/alarmd \
            --no-create-home --shell /usr/sbin/nologin --comment "alarmd alarm node" alarmd
    elif ! id -nG alarmd | tr ' ' '\n' | grep -qx gpio; then
        system usermod -a -G gpio alarmd
    else
        say "user alarmd exists and is in the gpio group"
    fi
fi

# --- Files -------------------------------------------------------------------------------------

# Copies $1 to $2 with mode $3 through a temporary file and a rename, so a running program or a
# reader never sees half a file.
put() {
    local source="$1" target="$2" mode="$3"
    mkdir -p "$(dirname "$target")"
    local temporary="$target.install-$$"
    install -m "$mode" "$source" "$temporary"
    mv -f "$temporary" "$target"
}

for program in "${programs[@]}"; do
    [ -x "$bin_dir/$program" ] || continue
    put "$bin_dir/$program" "$bin_target/$program" 0755
    say "installed $bin_target/$program"
done

# The unit names /usr/local/bin/alarmd; another prefix changes ExecStart.
unit_source="$deploy/alarmd.service"
if [ "$prefix" != /usr/local ]; then
    unit_source="$(mktemp)"
    trap 'rm -f "$unit_source"' EXIT
    sed "s|^ExecStart=/usr/local/bin/alarmd |ExecStart=$prefix/bin/alarmd |" "$deploy/alarmd.service" >"$unit_source"
fi
put "$unit_source" "$unit_target" 0644
say "installed $unit_target"
put "$deploy/99-alarmd-gpio.rules" "$rule_target" 0644
say "installed $rule_target"

# The configuration: never overwrite one that exists (it may be edited).
if [ ! -d "$config_dir" ]; then
    mkdir -p "$config_dir"
    chmod 0755 "$config_dir"
fi
config_group() {
    # The file may hold the broker password: root and the alarmd group may read it.
    if [ "$staged" -eq 1 ]; then
        say "would run: chown root:alarmd $1"
    else
        chown root:alarmd "$1"
    fi
}
if [ ! -e "$config_target" ]; then
    put "$deploy/alarmd.toml" "$config_target" 0640
    say "installed $config_target (every key at its default; edit it, then check it with: alarmd check-config /etc/alarmd/alarmd.toml)"
    config_group "$config_target"
elif cmp -s "$deploy/alarmd.toml" "$config_target"; then
    say "kept $config_target (same as the example)"
else
    put "$deploy/alarmd.toml" "$config_target.new" 0640
    say "kept your $config_target (it differs from the example); the example is beside it as $config_target.new: compare them with 'diff -u $config_target $config_target.new'"
    config_group "$config_target.new"
fi

# systemd's StateDirectory= creates and owns this too; creating it here helps `alarmd
# reset-authorization` and runs outside systemd.
if [ ! -d "$state_dir" ]; then
    mkdir -p "$state_dir"
    chmod 0700 "$state_dir"
    if [ "$staged" -eq 1 ]; then
        say "would run: chown alarmd:alarmd $state_dir"
    else
        chown alarmd:alarmd "$state_dir"
    fi
    say "created $state_dir"
fi

# --- Checks and activation ---------------------------------------------------------------------

if "$bin_target/alarmd" --version >/dev/null 2>&1; then
    if [ "$staged" -eq 1 ]; then
        "$bin_target/alarmd" check-config "$config_target" \
            || say "warning: $config_target has problems (listed above): fix them before starting alarmd"
    else
        runuser -u alarmd -- "$bin_target/alarmd" check-config "$config_target" \
            || say "warning: $config_target has problems (listed above); fix them, then: systemctl restart alarmd"
    fi
else
    say "warning: $bin_target/alarmd does not run on this machine (built for another architecture?)"
fi

if [ "$staged" -eq 1 ]; then
    say "would run: udevadm control --reload; udevadm trigger --subsystem-match=gpio --action=add"
    say "would run: systemctl daemon-reload; systemctl try-restart alarmd.service"
    say "installed into $root"
    exit 0
fi

if command -v udevadm >/dev/null 2>&1 && [ -d /run/udev ]; then
    system udevadm control --reload
    system udevadm trigger --subsystem-match=gpio --action=add
else
    say "udev is not running: the rule takes effect at the next boot"
fi
if systemd_running; then
    system systemctl daemon-reload
    if systemctl is-active --quiet alarmd.service; then
        system systemctl restart alarmd.service
        say "alarmd restarted with the new version"
    fi
else
    say "systemd is not running here: start alarmd with 'systemctl enable --now alarmd' once it is"
fi

cat <<EOF
install.sh: done. Next:
  1. edit /etc/alarmd/alarmd.toml (broker credentials, GPIO lines), then
     alarmd check-config /etc/alarmd/alarmd.toml
  2. set up the broker: docs/install.md, "The broker" (deploy/mosquitto/alarmd.conf)
  3. systemctl enable --now alarmd
  4. journalctl -u alarmd -f
EOF
