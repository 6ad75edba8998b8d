# Helpers for guest test scripts (busybox sh): . /hil/lib.sh
# Set by init: HIL_BIN, HIL_CHIP, HIL_CHIP_LABEL, HIL_SIM_DIR, HIL_LINES.

# fail TEXT: records the reason for the HIL-RESULT line and exits 1.
fail() {
    echo "FAIL: $*"
    echo "$*" > /tmp/hil-reason
    exit 1
}

# line_offset NAME: the simulated line's offset.
line_offset() {
    i=0
    for line in $HIL_LINES; do
        [ "$line" = "$1" ] && { echo $i; return 0; }
        i=$((i + 1))
    done
    fail "no simulated line named $1"
}

# sim_value NAME: the physical level (0/1) the chip sees on the line.
sim_value() { cat "$HIL_SIM_DIR/sim_gpio$(line_offset "$1")/value"; }

# sim_pull NAME up|down: drives an input line from the outside.
sim_pull() { echo "pull-$2" > "$HIL_SIM_DIR/sim_gpio$(line_offset "$1")/pull"; }

# sleep_ms N: sleeps without forking (read times out on a FIFO nobody writes).
[ -p /tmp/.hil-sleep ] || mkfifo /tmp/.hil-sleep
sleep_ms() { read -t "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))" _ <> /tmp/.hil-sleep; }

# bounce NAME LEVEL [COUNT] [PAUSE_WRITES]: contact bounce ending at LEVEL
# (up|down): COUNT quick toggles, a pause, COUNT more toggles, then LEVEL.
# Only shell builtins run, and the pause is made of PAUSE_WRITES (default 16)
# rewrites of the same level, which cause no edge: a fork costs 10-20 ms under
# TCG and the guest's timers are coarse (sleep_ms 1 takes 8-10 ms), while a
# write takes about 0.3 ms.
bounce() {
    pull="$HIL_SIM_DIR/sim_gpio$(line_offset "$1")/pull"
    other=up; [ "$2" = up ] && other=down
    for half in 1 2; do
        n=${3:-3}
        while [ "$n" -gt 0 ]; do
            echo "pull-$2" > "$pull"
            echo "pull-$other" > "$pull"
            n=$((n - 1))
        done
        n=${4:-16}
        while [ "$half" = 1 ] && [ "$n" -gt 0 ]; do
            echo "pull-$other" > "$pull"
            n=$((n - 1))
        done
    done
    echo "pull-$2" > "$pull"
}

# wait_for FILE PATTERN SECONDS: waits until FILE contains PATTERN (grep -E).
wait_for() {
    n=$(($3 * 20))
    while [ "$n" -gt 0 ]; do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep_ms 50
        n=$((n - 1))
    done
    return 1
}
