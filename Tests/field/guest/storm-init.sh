#!/bin/busybox sh
# PID 1 of the power-cut guest (scripts/test-field, Tests/field/field.py): a light initramfs
# whose only disk, /dev/vda, holds alarmd's state on ext4 (default mount: data=ordered). The host
# kills QEMU at a random instant and boots this again on the same disk. Each boot:
#   1. checks the file system as a boot would (e2fsck -p replays the journal), then fully
#      (e2fsck -fn must find nothing);
#   2. starts mosquitto and alarmd on that state and prints what alarmd restored;
#   3. reads the storm the host types on the console after STORM READY (made from the state
#      printed here) and runs it one command at a time, printing each acknowledgement as it
#      arrives.
# Console lines: STORM FSCK-PREEN rc, STORM FSCK-FULL rc, STORM MOUNTED, STORM STARTED,
# STORM WAITING <alarmd's last log line>, STORM DAMAGED n, STORM FILES n,
# STORM LIST <json>, STORM READY, STORM ACK <seq> <reply>, STORM DONE, STORM ERROR <text>.
/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/storm/bin:/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
error() {
    echo "STORM ERROR $*"
    while true; do sleep 3600; done
}
while read -r module; do
    insmod "/storm/modules/$module" || error "insmod $module failed"
done </storm/modules/order
n=0
until [ -b /dev/vda ]; do
    n=$((n + 1))
    [ "$n" -lt 100 ] || error "no /dev/vda"
    sleep 0.1
done

e2fsck -p /dev/vda >/tmp/fsck.log 2>&1
echo "STORM FSCK-PREEN $?"
e2fsck -fn /dev/vda >>/tmp/fsck.log 2>&1
rc=$?
echo "STORM FSCK-FULL $rc"
[ "$rc" -eq 0 ] || sed 's/^/STORM FSCK-LOG /' /tmp/fsck.log
mkdir -p /state
mount -t ext4 /dev/vda /state || error "cannot mount /dev/vda"
mkdir -p /state/alarmd
echo "STORM MOUNTED"

ip link set lo up || error "cannot bring up the loopback interface"
mosquitto -c /storm/mosquitto.conf >/tmp/mosquitto.log 2>&1 &
alarmd --config /storm/alarmd.toml >/tmp/alarmd.log 2>&1 &
echo "STORM STARTED"
# Waits for alarmd's retained "online" status. mosquitto_sub's -W counts from its start, so
# connect, subscribe and the status must fit in it in real time, while a TCG guest on a busy host
# runs ten times slower and more: each try may take a minute (it returns as soon as the status
# comes). A progress line every 30 s (between tries) with alarmd's last log line; after 5 minutes
# (alarmd comes online 1-3 s after its start here, 50 s with QEMU held to 5 % of a core) an error
# with alarmd's and mosquitto's logs.
started=$(date +%s)
next=$((started + 30))
until mosquitto_sub -h 127.0.0.1 -t alarmd/storm/status -C 1 -W 60 2>/dev/null | grep -q '"state":"online"'; do
    now=$(date +%s)
    if [ "$now" -ge "$next" ]; then
        echo "STORM WAITING for alarmd ($((now - started)) s): $(tail -1 /tmp/alarmd.log)"
        next=$((now + 30))
    fi
    [ $((now - started)) -lt 300 ] || { sed 's/^/STORM LOG /' /tmp/alarmd.log /tmp/mosquitto.log; error "alarmd did not come online"; }
    sleep 0.2
done
echo "STORM DAMAGED $(ls /state/alarmd/alarms 2>/dev/null | grep -c damaged)"
echo "STORM FILES $(ls /state/alarmd/alarms 2>/dev/null | grep -c '\.json$')"
list="$(mosquitto_rr -h 127.0.0.1 -q 1 -t alarmd/storm/cmd/list -e storm/list -m '' -W 30 2>&1)"
echo "STORM LIST $list"
grep -i damaged /tmp/alarmd.log | sed 's/^/STORM LOG /'

# The storm arrives on the console: no echo, so the console carries only what this prints.
stty -echo </dev/console
echo "STORM READY"
while read -r seq operation payload; do
    [ "$seq" != END ] || break
    [ -n "$seq" ] || continue
    reply="$(mosquitto_rr -h 127.0.0.1 -q 1 -t "alarmd/storm/cmd/$operation" -e storm/reply -m "$payload" -W 30 2>&1)"
    echo "STORM ACK $seq $reply"
done </dev/console
echo "STORM DONE"
while true; do sleep 3600; done
