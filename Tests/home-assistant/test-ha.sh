#!/usr/bin/env bash
# The node in a real Home Assistant (docs/home-assistant.md): Home Assistant from PyPI in a cached
# venv (Tests/home-assistant/ha-venv.sh), a private mosquitto, and the debug alarmd built by
# `swift build`; Tests/home-assistant/ha_test.py drives it all through Home Assistant's REST API.
#
# Prints "SKIPPED home-assistant test: <reason>" and exits 0 when no Python 3.13 exists, the
# install fails, or mosquitto is missing; exits 1 when a check fails.
# Environment: ALARMD_HA_VENV (the venv's folder), ALARMD_HA_KEEP=1 keeps the work folder.
set -euo pipefail
cd "$(dirname "$0")/../.."

started=$SECONDS
alarmd="$(swift build --show-bin-path)/alarmd"
[[ -x "$alarmd" ]] || { echo "FAILED home-assistant test: no $alarmd; run swift build first" >&2; exit 1; }
if ! command -v mosquitto >/dev/null; then
    echo "SKIPPED home-assistant test: no mosquitto (apt-get install mosquitto)"
    exit 0
fi

venv_log="$(mktemp)"
trap 'rm -f "$venv_log"' EXIT
venv_status=0
venv="$(Tests/home-assistant/ha-venv.sh 2>"$venv_log")" || venv_status=$?
if [[ $venv_status -ne 0 ]]; then
    cat "$venv_log" >&2
    reason="$(grep -a -m1 '^unavailable: ' "$venv_log" | sed 's/^unavailable: //' || true)"
    echo "SKIPPED home-assistant test: ${reason:-the Home Assistant venv could not be built (exit $venv_status)}"
    exit 0
fi
version="$("$venv/bin/python" -c 'from homeassistant.const import __version__; print(__version__)')"

"$venv/bin/python" Tests/home-assistant/ha_test.py --alarmd "$alarmd" --venv "$venv" --version "$version" \
    ${ALARMD_HA_KEEP:+--keep}
echo "home-assistant test passed against Home Assistant $version in $((SECONDS - started)) s"
