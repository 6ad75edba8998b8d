#!/bin/busybox sh
# PID 1 of the HIL guest: mounts the kernel file systems, loads configfs,
# irq_sim and gpio-sim, creates a simulated chip with named lines, runs
# /hil/test.sh and reports the verdict on the console and via isa-debug-exit.
/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/hil/bin:/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp

# verdict CODE TEXT: 0 is PASS. QEMU exits with (CODE << 1) | 1.
verdict() {
    if [ "$1" = 0 ]; then echo "HIL-RESULT: PASS $2"; else echo "HIL-RESULT: FAIL $2"; fi
    printf "\\$(printf '%03o' "$1")" | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
    poweroff -f
}

. /hil/env
export HIL_BIN HIL_LINES

grep -qw configfs /proc/filesystems || insmod /hil/modules/configfs.ko || verdict 1 "insmod configfs failed"
mount -t configfs configfs /sys/kernel/config || verdict 1 "cannot mount configfs"
insmod /hil/modules/irq_sim.ko || verdict 1 "insmod irq_sim failed"
insmod /hil/modules/gpio-sim.ko || verdict 1 "insmod gpio-sim failed"

export HIL_CHIP_LABEL=alarmd-hil
sim=/sys/kernel/config/gpio-sim/hil
mkdir "$sim" "$sim/bank0" || verdict 1 "cannot create the gpio-sim device"
echo "$HIL_CHIP_LABEL" > "$sim/bank0/label"
set -- $HIL_LINES
echo $# > "$sim/bank0/num_lines"
i=0
for line in "$@"; do
    mkdir "$sim/bank0/line$i"
    echo "$line" > "$sim/bank0/line$i/name"
    i=$((i + 1))
done
echo 1 > "$sim/live" || verdict 1 "cannot bring the gpio-sim chip live"
HIL_CHIP="$(cat "$sim/bank0/chip_name")"
HIL_SIM_DIR="/sys/devices/platform/$(cat "$sim/dev_name")/$HIL_CHIP"
export HIL_CHIP HIL_SIM_DIR
echo "hil: $HIL_CHIP ($HIL_CHIP_LABEL) at $HIL_SIM_DIR, lines: $HIL_LINES"

cd /tmp
set --
if [ -f /hil/args ]; then
    while IFS= read -r arg; do set -- "$@" "$arg"; done < /hil/args
fi
sh /hil/test.sh "$@"
rc=$?
reason="$(cat /tmp/hil-reason 2>/dev/null)"
verdict "$rc" "${reason:-test exited $rc}"
