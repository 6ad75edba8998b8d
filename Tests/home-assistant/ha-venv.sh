#!/usr/bin/env bash
# Creates (once) the virtualenv with Home Assistant that Tests/home-assistant/test-ha.sh runs,
# and prints its folder. Cached outside git, in $ALARMD_HA_VENV (default
# ~/.cache/alarmd-ha-venv); a venv whose install did not finish is built again.
#
# Home Assistant 2026.3 and later need Python >= 3.14.2, 2025.5 to 2026.2 need >= 3.13.2:
# 2025.4.4 is the newest release that installs on Python 3.13.0. It is installed with its own
# package_constraints.txt as constraints, plus paho-mqtt 2.1.0 (its MQTT integration's
# requirement, installed here rather than by Home Assistant at start-up) and pycares < 5 (5.x
# breaks its aiodns). The requirements Home Assistant would otherwise pip-install at its first
# start (the frontend, the integrations onboarding sets up, the TOTP module) are installed here
# too, under the same pins: at start-up it would take pycares 5. About 5 minutes the first time
# on an idle machine (18 under a load of 19: pyspeex-noise compiles from source, with g++).
#
# Exit status: 0 with the venv's folder on stdout; 3 when no Python >= 3.13 exists or the
# install fails (the reason on stderr, in a line starting "unavailable: ").
set -euo pipefail

ha_version="${ALARMD_HA_VERSION:-2025.4.4}"
venv="${ALARMD_HA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/alarmd-ha-venv}"
log() { printf '[ha-venv %s] %s\n' "$(date +%T)" "$*" >&2; }
unavailable() { printf 'unavailable: %s\n' "$*" >&2; exit 3; }

pins() { printf 'paho-mqtt==2.1.0\npycares<5\n' > "$1"; }

# The requirements of the frontend, of what onboarding sets up (met, radio_browser,
# google_translate) and of the TOTP module, with the constraints the venv was built with.
install_start_up_requirements() {
    [[ -f "$venv/.start-up-requirements" ]] && return 0
    local folder
    folder="$(mktemp -d)"
    "$venv/bin/python" - "$folder" <<'PY' || unavailable "Home Assistant's start-up requirements cannot be listed"
import json, pathlib, sys
import homeassistant
from homeassistant.auth.mfa_modules.totp import REQUIREMENTS
components = pathlib.Path(homeassistant.__file__).parent / "components"
requirements = list(REQUIREMENTS)
for name in ("frontend", "met", "radio_browser", "google_translate"):
    requirements += json.loads((components / name / "manifest.json").read_text()).get("requirements", [])
pathlib.Path(sys.argv[1], "requirements.txt").write_text("\n".join(requirements) + "\n")
constraints = (pathlib.Path(homeassistant.__file__).parent / "package_constraints.txt").read_text().splitlines()
pathlib.Path(sys.argv[1], "constraints.txt").write_text(
    "\n".join(line for line in constraints if line.strip() and not line.startswith(("-e", "#")) and "://" not in line) + "\n")
PY
    pins "$folder/pins.txt"
    "$venv/bin/python" -m pip --disable-pip-version-check --quiet install \
        -c "$folder/constraints.txt" -c "$folder/pins.txt" -r "$folder/requirements.txt" "pycares<5" >&2 \
        || { rm -rf "$folder"; unavailable "pip could not install Home Assistant's start-up requirements (see above)"; }
    rm -rf "$folder"
    touch "$venv/.start-up-requirements"
}

if [[ -f "$venv/.installed-$ha_version" ]]; then
    install_start_up_requirements
    echo "$venv"
    exit 0
fi

# A Python 3.13 that runs: on the PATH, or one pyenv installed (pyenv's shim on the PATH
# fails unless 3.13 is selected, so it is run, not only looked up).
python=""
for candidate in python3.13 "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.13*/bin/python3.13; do
    if "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 13)' >/dev/null 2>&1; then
        python="$(command -v "$candidate")"
        break
    fi
done
[[ -n "$python" ]] || unavailable "no python3.13 on the PATH or in pyenv; Home Assistant $ha_version needs Python 3.13"

log "creating $venv with $python and Home Assistant $ha_version (about 5 minutes)"
rm -rf "$venv"
"$python" -m venv "$venv" || unavailable "$python cannot create a venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --quiet)
"${pip[@]}" install --upgrade pip wheel >&2 || unavailable "pip cannot reach PyPI"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"${pip[@]}" download --no-deps --dest "$work" "homeassistant==$ha_version" >&2 \
    || unavailable "homeassistant $ha_version cannot be downloaded from PyPI"
"$venv/bin/python" - "$work" <<'PY' || unavailable "the homeassistant wheel has no package_constraints.txt"
import glob, sys, zipfile
folder = sys.argv[1]
with zipfile.ZipFile(glob.glob(f"{folder}/homeassistant-*.whl")[0]) as wheel:
    text = wheel.read("homeassistant/package_constraints.txt").decode()
# Lines pip cannot take as constraints (editable or URL requirements) are left out.
lines = [line for line in text.splitlines() if line.strip() and not line.startswith(("-e", "#")) and "://" not in line]
open(f"{folder}/constraints.txt", "w").write("\n".join(lines) + "\n")
PY
pins "$work/pins.txt"
"${pip[@]}" install -c "$work/constraints.txt" -c "$work/pins.txt" "$work"/homeassistant-*.whl paho-mqtt==2.1.0 >&2 \
    || unavailable "pip could not install homeassistant $ha_version (see above)"
touch "$venv/.installed-$ha_version"
install_start_up_requirements
log "installed"
echo "$venv"
