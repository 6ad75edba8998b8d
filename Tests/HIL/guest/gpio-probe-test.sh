# Guest test for gpio-probe (see Tests/HIL/gpio-probe/main.swift).
#   Tests/HIL/run-hil.sh .build/release/gpio-probe Tests/HIL/guest/gpio-probe-test.sh
# Lines: buzzer (active-high output), led (active-low output),
# stop and snooze (active-low inputs with pull-up, pressed = pulled down).
. /hil/lib.sh
out=/tmp/probe.out
err=/tmp/probe.err

show_logs() {
    echo "--- probe stdout"; cat "$out"
    echo "--- probe stderr (last 40 lines)"; tail -n 40 "$err"
}
check() { # check TEXT COMMAND...: fails with TEXT unless COMMAND succeeds
    text="$1"; shift
    "$@" || { show_logs; fail "$text"; }
    echo "ok: $text"
}
expect_error() { # expect_error CODE MESSAGE-REGEX ARGS...: the probe fails with that GPIOError
    code="$1"; pattern="$2"; shift 2
    result="$("$HIL_BIN" "$@" </dev/null 2>/dev/null)"
    echo "$result" | grep -q "code=$code message=" || fail "expected $code from '$*', got: $result"
    echo "$result" | grep -qE "$pattern" || fail "unexpected message for $code: $result"
    echo "ok: $code: ${result#*message=}"
}
# press NAME HOLD_MS: a bouncy press and a bouncy release (active-low: pressed = pull-down).
press() {
    bounce "$1" down
    sleep_ms "$2"
    bounce "$1" up
}

gpiodetect
expect_error chipNotFound "no GPIO chip 'gpiochip9': list chips with gpiodetect" run --chip gpiochip9
expect_error chipNotFound "no GPIO chip labelled 'pinctrl-rp1'" run --chip pinctrl-rp1

LOG_LEVEL=trace "$HIL_BIN" run --chip "$HIL_CHIP_LABEL" --buzzer buzzer --led led,active-low \
    --stop stop,active-low,pull-up --snooze snooze,active-low,pull-up >"$out" 2>"$err" &
probe=$!
check "probe ready" wait_for "$out" "ready buzzer=on" 30
check "chip opened by label" grep -q "chip name=$HIL_CHIP label=$HIL_CHIP_LABEL" "$out"
check "buzzer on (physical 1)" [ "$(sim_value buzzer)" = 1 ]
check "active-low LED off (physical 1)" [ "$(sim_value led)" = 1 ]
check "pull-up bias applied to stop" [ "$(sim_value stop)" = 1 ]
gpioinfo "$HIL_CHIP"

expect_error lineBusy "another process holds line 0 'buzzer' on $HIL_CHIP \(consumer 'gpio-probe'\): find it with gpioinfo" \
    request --chip "$HIL_CHIP" --line buzzer
expect_error lineNotFound "no line named 'nosuch' on $HIL_CHIP: list line names with gpioinfo" \
    request --chip "$HIL_CHIP" --line nosuch
expect_error lineNotFound "$HIL_CHIP has no line 9 \(it has 4 lines\)" request --chip "$HIL_CHIP" --line 9

press stop 200
check "short stop press switches the buzzer off" wait_for "$out" "buzzer=off" 10
check "buzzer off (physical 0)" [ "$(sim_value buzzer)" = 0 ]

press snooze 150
check "short snooze press lights the LED" wait_for "$out" "led=on" 10
check "active-low LED on (physical 0)" [ "$(sim_value led)" = 0 ]

bounce stop down
check "long stop press reported while still held" wait_for "$out" "press button=stop kind=long" 10
check "buzzer back on while the button is held" wait_for "$out" "buzzer=on$" 5
check "buzzer on (physical 1)" [ "$(sim_value buzzer)" = 1 ]
bounce stop up

bounce snooze down
check "long snooze press" wait_for "$out" "press button=snooze kind=long" 10
bounce snooze up
check "probe done" wait_for "$out" "PROBE done" 10
wait "$probe"
check "probe exit status 0" [ $? = 0 ]
check "released buzzer falls back to the pull-down" [ "$(sim_value buzzer)" = 0 ]

# Gaps between consecutive raw edges within a burst (< 100 ms), from the kernel timestamps.
awk '/button edge/ {
        match($0, /timestamp=[0-9]+/); t = substr($0, RSTART + 10, RLENGTH - 10) / 1e6
        if (seen && t - last < 100) { g = t - last; count++; sum += g; if (count == 1 || g < min) min = g; if (g > max) max = g }
        last = t; seen = 1
    }
    END { if (count) printf "bounce gaps: %d, min %.2f ms, mean %.2f ms, max %.2f ms\n", count, min, sum / count, max
          if (max >= 30) { print "the emulator spread a bounce burst wider than the 30 ms window: harness too slow, not a product failure"; exit 1 } }' "$err" \
    || fail "bounce gaps reached the debounce window (guest too slow)"
presses="$(grep -c 'press button=' "$out")"
check "exactly 4 presses despite bounce (got $presses)" [ "$presses" = 4 ]
check "press order" [ "$(grep -o 'button=[a-z]* kind=[a-z]*' "$out" | tr '\n' ' ')" = \
    "button=stop kind=short button=snooze kind=short button=stop kind=long button=snooze kind=long " ]
edges="$(grep -c 'button edge' "$err")"
check "bounce reached the probe as raw edges (got $edges)" [ "$edges" -ge 20 ]
echo "all gpio-probe checks passed"
