#!/usr/bin/env python3
"""The host side of scripts/test-field's two QEMU runs.

  field.py boot  --kernel K --initrd I --disk D [--timeout S]
      boots the installed Debian root (systemd as PID 1) and reads the serial console: the guest's
      Tests/field/guest/check.sh reports FIELD PASS/FAIL lines over two boots, and FIELD DATA lists
      of the alarms, which are compared here (the watchdog restart and the reboot keep every alarm).

  field.py cuts  --kernel K --initrd I --disk D --cuts N [--seed S]
      the power-cut loop: boots the storm guest (Tests/field/guest/storm-init.sh) on the state disk
      D, SIGKILLs QEMU at a random acknowledgement of the storm plus a random delay, and checks on
      the next boot that the file system is clean and that the state alarmd restored is the
      state after a prefix of the storm that holds every acknowledged command. A boot whose guest
      falls silent before its storm (the guest itself stood still: while it waits for alarmd it
      prints a line every 30 s) is killed and booted again, at most --retries times a run, each
      retry printed as a RETRY line and counted; the cut before it is checked by the boot
      that follows, never counted unchecked.

Both print PASS/FAIL lines and, last, "N passed, M failed"; the exit status is 1 when a check
failed, 2 on a setup error (QEMU did not boot).
"""

import argparse
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import time
import uuid

# The firmware's and the kernel's terminal escapes (a reset, clearing the screen) end up at the
# start of the guest's first line.
ESCAPES = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|c)")
# What the guest reports starts a line, but the firmware's "Booting from ROM..." has no line end.
REPORT = re.compile(r"(STORM |FIELD[ -]).*")
QEMU = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-smp", "2", "-nographic", "-nic", "none"]


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, text):
        print(("PASS " if ok else "FAIL ") + text, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed", flush=True)
        sys.exit(1 if self.failed else 0)


class Guest:
    """A QEMU process whose serial console is read line by line."""

    def __init__(self, arguments, log):
        self.log = log
        self.process = subprocess.Popen(QEMU + arguments, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT)
        self.buffer = b""
        self.started = time.monotonic()

    def record(self, text):
        """Writes a console line to the log, after the seconds since QEMU started."""
        self.log.write(f"{time.monotonic() - self.started:8.2f} {text}\n")

    def lines(self, idle):
        """Yields console lines until QEMU exits, or until the guest prints nothing for `idle`
        seconds (then yields None): a busy host slows a TCG guest down by ten times and more,
        so only silence counts as stuck."""
        stream = self.process.stdout
        deadline = time.monotonic() + idle
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                text = ESCAPES.sub("", line.decode("utf-8", "replace").rstrip("\r"))
                self.record(text)
                report = REPORT.search(text)
                text = report.group(0) if report else text
                deadline = time.monotonic() + idle
                yield text
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                yield None
                return
            ready, _, _ = select.select([stream], [], [], min(remaining, 1.0))
            if ready:
                chunk = os.read(stream.fileno(), 65536)
                if not chunk:
                    if self.buffer:
                        self.buffer += b"\n"
                        continue
                    return
                self.buffer += chunk

    def send(self, data):
        """Types DATA on the guest's serial console."""
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def kill(self):
        """Power cut: SIGKILL, so nothing the guest had not written to its disk survives."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def drain(self):
        """The console output QEMU wrote before it died."""
        rest = self.process.stdout.read() or b""
        self.buffer += rest
        lines = [ESCAPES.sub("", line.decode("utf-8", "replace").rstrip("\r")) for line in self.buffer.split(b"\n") if line]
        lines = [(REPORT.search(line) or re.match(".*", line)).group(0) for line in lines]
        self.buffer = b""
        for line in lines:
            self.record(line)
        return lines


def alarms_by_id(text):
    """alarmctl's or the node's list (an array, or {"ok":true,"alarms":[...]}) as {id: document}."""
    value = json.loads(text)
    if isinstance(value, dict):
        if not value.get("ok"):
            raise ValueError(f"the list failed: {text[:200]}")
        value = value["alarms"]
    ids = [alarm["id"] for alarm in value]
    if len(ids) != len(set(ids)):
        raise ValueError(f"an alarm is listed twice: {sorted(ids)}")
    return {alarm["id"].upper(): alarm for alarm in value}


# --- field.py boot --------------------------------------------------------------------------------

def boot(arguments):
    report = Report()
    log = open(arguments.log, "w", buffering=1) if arguments.log else open(os.devnull, "w")
    started = time.monotonic()
    guest = Guest(["-m", "1024", "-kernel", arguments.kernel, "-initrd", arguments.initrd,
                   "-append", "root=/dev/vda rw console=ttyS0 quiet systemd.show_status=false no_timer_check",
                   "-drive", f"file={arguments.disk},format=raw,if=virtio"], log)
    data = {}
    result = None
    for line in guest.lines(arguments.timeout):
        if line is None:
            break
        if "Kernel panic" in line:
            report.check(False, f"the guest's kernel panicked: {line}")
            break
        if line.startswith("FIELD PASS "):
            report.check(True, line[len("FIELD PASS "):])
        elif line.startswith("FIELD FAIL "):
            report.check(False, line[len("FIELD FAIL "):])
        elif line.startswith("FIELD INFO "):
            print("    " + line[len("FIELD INFO "):], flush=True)
        elif line.startswith("FIELD DATA "):
            _, _, name, text = line.split(" ", 3)
            data[name] = text
            if name == "journal":
                print("    journal entry: " + text[:600], flush=True)
        elif line.startswith("FIELD-RESULT:"):
            result = line
            print("    " + line, flush=True)
    guest.kill()
    print(f"    boot test took {time.monotonic() - started:.0f} s", flush=True)
    if result is None:
        report.check(False, f"the guest finished its checks (no FIELD-RESULT line; silent for {arguments.timeout:.0f} s; "
                            f"console in {arguments.log or 'the log'})")

    try:
        entry = json.loads(data.get("journal", "null")) or {}
    except ValueError:
        entry = {}
    fields = sorted(key for key in entry if not key.startswith("_"))
    print("    journal fields of 'GPIO opened': " + " ".join(fields), flush=True)
    report.check(entry.get("_SYSTEMD_UNIT") == "alarmd.service" and entry.get("PRIORITY") == "5"
                 and entry.get("SYSLOG_IDENTIFIER") == "alarmd" and entry.get("LABEL") == "alarmd-field"
                 and "CHIP" in entry and "'buzzer'" in entry.get("LINES", "") and "CODE_FILE" in entry,
                 "journalctl -u alarmd -o json: the entry 'GPIO opened' has its metadata as fields (CHIP, "
                 "LABEL=alarmd-field, LINES naming each part's line), PRIORITY=5 (notice), SYSLOG_IDENTIFIER=alarmd, CODE_FILE")

    def same(before, after, what):
        if before not in data or after not in data:
            report.check(False, f"{what}: the guest reported no {before if before not in data else after} list")
            return
        try:
            old, new = alarms_by_id(data[before]), alarms_by_id(data[after])
        except (ValueError, KeyError) as error:
            report.check(False, f"{what}: {error}")
            return
        changed = [key for key in old if key in new and old[key] != new[key]]
        report.check(len(old) >= 3 and old.keys() == new.keys() and not changed,
                     f"{what}: every alarm is back, unchanged ({len(new)} of {len(old)}"
                     + (f"; changed: {changed}" if changed else "") + ")")

    same("before-watchdog", "after-watchdog", "the watchdog restart")
    same("before-reboot", "after-reboot", "the reboot")
    same("before-reboot", "after-upgrade", "an upgrade, refused then restarting alarmd")
    same("before-reboot", "after-reinstall", "apt remove then apt install")
    report.finish()


# --- field.py cuts --------------------------------------------------------------------------------

class Storm:
    """Random schedule/pause/resume/cancel commands, each valid in the state the previous ones leave."""

    def __init__(self, rng, cycle):
        self.rng = rng
        self.cycle = cycle

    def commands(self, model, count):
        model = dict(model)
        commands = []
        for number in range(count):
            countdown = [key for key, value in model.items() if value[0] == "countdown"]
            paused = [key for key, value in model.items() if value[0] == "paused"]
            choices = ["schedule"] * (3 if len(model) < 24 else 0)
            choices += ["pause"] * (2 if countdown else 0) + ["resume"] * (2 if paused else 0)
            choices += ["cancel"] * (1 if len(model) < 12 else 3) * (1 if model else 0)
            choices += ["replace"] * (1 if model else 0)
            operation = self.rng.choice(choices)
            title = f"c{self.cycle}n{number}"
            if operation in ("schedule", "replace"):
                key = str(uuid.UUID(int=self.rng.getrandbits(128), version=4)).upper() if operation == "schedule" \
                    else self.rng.choice(sorted(model))
                seconds = self.rng.randrange(3600, 86400)
                payload = {"id": key, "configuration": {
                    "countdownDuration": {"preAlert": seconds},
                    "attributes": {"presentation": {
                        "alert": {"title": title, "stopButton": {"text": "Stop", "textColor": "#FFFFFF",
                                                                 "systemImageName": "stop"}},
                        "countdown": {"title": title}}, "tintColor": "#FF9500"}}}
                model[key] = ("countdown", title)
                commands.append(("schedule", payload, dict(model)))
                continue
            key = self.rng.choice({"pause": countdown, "resume": paused}.get(operation, sorted(model)))
            if operation == "cancel":
                del model[key]
            else:
                model[key] = ("paused" if operation == "pause" else "countdown", model[key][1])
            commands.append((operation, {"id": key}, dict(model)))
        return commands


def summary(alarms):
    """{id: (state, alert title)}: what the storm decides about each alarm."""
    return {key: (alarm["state"], alarm["attributes"]["presentation"]["alert"]["title"])
            for key, alarm in alarms.items()}


class StormBoot:
    """What one boot of the storm guest reported, up to the cut."""

    def __init__(self):
        self.commands = []      # the storm sent to this boot: (operation, payload, state after it)
        self.acknowledged = -1  # the last acknowledged command
        self.restored = None    # the alarms alarmd restored: {id: (state, title)}
        self.problem = None     # why this boot failed
        self.stalled = False    # the guest fell silent before its storm began (see run_storm_boot)
        self.last_line = ""
        self.cut_position = None
        self.preen_ok = self.full_ok = False
        self.damaged = self.files = -1


def run_storm_boot(arguments, rng, log, cycle, target, delay):
    """Boots the storm guest once, sends it a storm made from what it restored (none on the last
    boot, target None), and cuts its power at acknowledgement TARGET plus DELAY seconds."""
    boot = StormBoot()
    guest = Guest(["-m", "512", "-kernel", arguments.kernel, "-initrd", arguments.initrd,
                   "-append", "console=ttyS0 quiet loglevel=3 panic=-1 no_timer_check",
                   "-drive", f"file={arguments.disk},format=raw,if=virtio"], log)
    kill_at = None
    for line in guest.lines(arguments.timeout):
        if line is None:
            boot.problem = f"the guest was silent for {arguments.timeout:.0f} s after '{boot.last_line[:200]}'"
            # Until its storm, the guest prints a line at least every 30 s once alarmd runs
            # (STORM WAITING); silence there means the guest itself stood still, not alarmd.
            boot.stalled = not boot.commands
            break
        boot.last_line = line
        if "Kernel panic" in line:
            boot.problem = f"the guest's kernel panicked: {line}"
            break
        if line.startswith("STORM FSCK-PREEN "):
            # 0 clean, 1 repaired by itself (the journal replayed); 4 and up: manual repair.
            boot.preen_ok = int(line.split()[2]) in (0, 1)
        elif line.startswith("STORM FSCK-FULL "):
            boot.full_ok = int(line.split()[2]) == 0
        elif line.startswith("STORM DAMAGED "):
            boot.damaged = int(line.split()[2])
        elif line.startswith("STORM FILES "):
            boot.files = int(line.split()[2])
        elif line.startswith("STORM LIST "):
            try:
                boot.restored = summary(alarms_by_id(line[len("STORM LIST "):]))
            except (ValueError, KeyError, TypeError) as error:
                boot.problem = f"the restored list does not parse: {error}: {line[:300]}"
                break
        elif line.startswith("STORM ERROR "):
            boot.problem = line
            break
        elif line.startswith("STORM READY"):
            if target is None or boot.restored is None:
                break
            # The storm starts from the state this boot restored; the guest reads it from
            # its console, one command per line, and acknowledges each before the next.
            boot.commands = Storm(rng, cycle).commands(boot.restored, arguments.storm)
            text = "".join(f"{number} {operation} {json.dumps(payload, separators=(',', ':'))}\n"
                           for number, (operation, payload, _) in enumerate(boot.commands)) + "END\n"
            guest.send(text.encode())
        elif line.startswith("STORM ACK "):
            _, _, seq, reply = line.split(" ", 3)
            number = int(seq)
            try:
                ok = json.loads(reply).get("ok") is True
            except ValueError:
                ok = False
            if not ok or number != boot.acknowledged + 1:
                boot.problem = (f"command {number} ({boot.commands[number][0]}) was not acknowledged as "
                                f"expected: {reply[:300]}")
                break
            boot.acknowledged = number
            if number == target:
                # Acknowledgements that arrive during the delay are read after the cut.
                kill_at = time.monotonic() + delay
                boot.cut_position = (number + 1) / arguments.storm
                break
        elif line.startswith("STORM DONE"):
            kill_at = time.monotonic()
            boot.cut_position = 1.0
            break
    if kill_at is not None:
        remaining = kill_at - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
    guest.kill()
    for line in guest.drain():
        if line.startswith("STORM ACK "):
            boot.acknowledged = max(boot.acknowledged, int(line.split(" ", 3)[2]))
    return boot


def cuts(arguments):
    report = Report()
    rng = random.Random(arguments.seed)
    print(f"    power cuts: {arguments.cuts}, seed {arguments.seed}", flush=True)
    log = open(arguments.log, "w", buffering=1) if arguments.log else open(os.devnull, "w")
    model = {}            # what the last boot restored, checked
    previous = None       # (states after each command of the last storm, index of the last acknowledgement)
    acknowledged_total = 0
    cut_positions = []
    retries = 0
    started = time.monotonic()
    for cycle in range(arguments.cuts + 1):
        final = cycle == arguments.cuts
        target = rng.randrange(0, arguments.storm) if not final else None
        delay = rng.uniform(0, arguments.jitter)
        while True:
            log.write(f"=== boot {cycle}\n")
            boot_started = time.monotonic()
            boot = run_storm_boot(arguments, rng, log, cycle, target, delay)
            if not (boot.stalled and retries < arguments.retries):
                break
            # The stalled boot verified nothing: the same cut is checked by the next boot of the
            # same disk (killing the stalled one is one more power cut, before any storm).
            retries += 1
            print(f"    RETRY boot {cycle} ({retries} of at most {arguments.retries} in this run): {boot.problem}, "
                  f"{time.monotonic() - boot_started:.0f} s after QEMU started; QEMU killed, the same disk booted again",
                  flush=True)
        if boot.problem:
            report.check(False, f"boot {cycle}: {boot.problem}")
            break
        restored = boot.restored
        if restored is None:
            report.check(False, f"boot {cycle}: alarmd reported no restored state")
            break

        # What this boot found, against the storm before it.
        clean = boot.preen_ok and boot.full_ok and boot.damaged == 0 and boot.files == len(restored)
        if previous is None:
            expected_ok = restored == model
            prefix = None
        else:
            states, last_acknowledged = previous
            candidates = [index for index in range(last_acknowledged, len(states)) if states[index] == restored]
            expected_ok = bool(candidates)
            prefix = candidates[0] if candidates else None
        if not (clean and expected_ok) or arguments.verbose:
            report.check(clean and expected_ok,
                         f"boot {cycle}: fsck clean ({boot.preen_ok and boot.full_ok}), no damaged file "
                         f"({boot.damaged}), {boot.files} files = {len(restored)} alarms, restored state = a "
                         f"prefix of the storm holding every acknowledged command (prefix {prefix}, "
                         f"acknowledged {previous[1] if previous else '-'})")
        if not (clean and expected_ok):
            break
        model = restored
        if not final:
            if boot.cut_position is None:
                report.check(False, f"boot {cycle}: the storm ended without a cut ({boot.last_line[:200]})")
                break
            cut_positions.append(boot.cut_position)
            acknowledged_total += boot.acknowledged + 1
            # states[i]: after commands 0..i-1; the restored state must be states[j], j > last ack.
            states = [dict(model)] + [state for _, _, state in boot.commands]
            previous = (states, boot.acknowledged + 1)
            print(f"    cut {cycle + 1}/{arguments.cuts}: after {boot.acknowledged + 1} of {arguments.storm} "
                  f"acknowledgements (+{delay * 1000:.0f} ms), {len(model)} alarms before the storm, "
                  f"{time.monotonic() - boot_started:.0f} s", flush=True)
    else:
        report.check(True, f"{arguments.cuts} power cuts: every acknowledged change survived, nothing "
                           f"doubled, every state parsed, fsck clean each boot "
                           f"({acknowledged_total} acknowledged commands; {retries} boots retried after "
                           f"the guest stood still)")
    if cut_positions:
        buckets = [0] * 4
        for position in cut_positions:
            buckets[min(3, int(position * 4))] += 1
        elapsed = time.monotonic() - started
        print(f"    cut points by quarter of the storm: {buckets}; {elapsed:.0f} s, "
              f"{elapsed / (arguments.cuts + 1):.1f} s a boot", flush=True)
    report.finish()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("boot", "cuts"):
        command = sub.add_parser(name)
        command.add_argument("--kernel", required=True)
        command.add_argument("--initrd", required=True)
        command.add_argument("--disk", required=True)
        command.add_argument("--log")
        command.add_argument("--timeout", type=float, default=900 if name == "boot" else 300,
                             help="seconds of silence on the console that end a boot")
    cut = sub.choices["cuts"]
    cut.add_argument("--cuts", type=int, default=30)
    cut.add_argument("--storm", type=int, default=40, help="commands per storm")
    cut.add_argument("--jitter", type=float, default=0.15, help="largest extra delay after the chosen ack, s")
    cut.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "little"))
    cut.add_argument("--retries", type=int, default=3,
                     help="boots that fell silent before their storm and are booted again, at most, per run")
    cut.add_argument("--verbose", action="store_true")
    arguments = parser.parse_args()
    if arguments.command == "boot":
        boot(arguments)
    else:
        cuts(arguments)


if __name__ == "__main__":
    main()
