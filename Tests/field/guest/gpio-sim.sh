#!/bin/sh
# Run in the field guest before alarmd (alarmd-field-gpio.service): a gpio-sim chip labelled
# alarmd-field with the lines buzzer, led, stop and snooze stands in for the board's GPIO, as a
# board's kernel driver would. Its sysfs folder is written to /run/alarmd-field/sim-dir.
set -eu
modprobe configfs
mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
modprobe gpio-sim
sim=/sys/kernel/config/gpio-sim/field
mkdir "$sim" "$sim/bank0"
echo alarmd-field >"$sim/bank0/label"
echo 4 >"$sim/bank0/num_lines"
i=0
for line in buzzer led stop snooze; do
    mkdir "$sim/bank0/line$i"
    echo "$line" >"$sim/bank0/line$i/name"
    i=$((i + 1))
done
echo 1 >"$sim/live"
mkdir -p /run/alarmd-field
echo "/sys/devices/platform/$(cat "$sim/dev_name")/$(cat "$sim/bank0/chip_name")" >/run/alarmd-field/sim-dir
# The buttons are active-low with pull-ups: released, they read high.
for offset in 2 3; do echo pull-up >"$(cat /run/alarmd-field/sim-dir)/sim_gpio$offset/pull"; done
