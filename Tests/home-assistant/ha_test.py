"""The node in a real Home Assistant (docs/home-assistant.md), checked through Home Assistant's REST API.

Run by Tests/home-assistant/test-ha.sh with the Python of the Home Assistant venv (paho-mqtt comes
with it). Starts a private mosquitto on a free loopback port, the real alarmd with simulated
hardware, and Home Assistant headless with a minimal configuration; completes onboarding and adds
the MQTT integration through the REST API (the config flow the UI uses), then checks:

- the device and every entity exist, with their event types and diagnostics;
- the states follow a timer (countdown, ringing, stopped), with the events on the event entity;
- Home Assistant's Stop, Snooze and Cancel-all-timers buttons act on the node, as `home-assistant`;
- the text entity schedules on the node, and shows an error for a line it cannot read;
- SIGTERM and SIGKILL of alarmd make the entities unavailable, and a restart brings them back;
- a timer due while alarmd was down rings at its start, and the documented automation sees it;
- after Home Assistant restarts with the retained discovery topics wiped, the node re-announces.

Prints "ha-test: ok <check>" per check; exits 1 on the first failure (with the logs' tails).
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import paho.mqtt.client as mqtt

NODE = "hatest"
DEVICE = f"alarmd {NODE}"
PREFIX = f"alarmd_{NODE}"
BASE = f"alarmd/{NODE}"
ENTITIES = {
    "next_alarm": f"sensor.{PREFIX}_next_alarm",
    "ringing": f"binary_sensor.{PREFIX}_ringing",
    "countdown_end": f"sensor.{PREFIX}_countdown_ends",
    "alarms": f"sensor.{PREFIX}_alarms",
    "events": f"event.{PREFIX}_events",
    "schedule": f"text.{PREFIX}_schedule",
    "stop": f"button.{PREFIX}_stop",
    "snooze": f"button.{PREFIX}_snooze",
    "cancel_timers": f"button.{PREFIX}_cancel_all_timers",
    "clock": f"binary_sensor.{PREFIX}_clock_synchronized",
    "authorization": f"sensor.{PREFIX}_authorization",
    "time_zone": f"sensor.{PREFIX}_time_zone",
}


class Failure(Exception):
    pass


def free_port():
    """A loopback port free now, below the kernel's ephemeral range: Home Assistant takes seconds to
    listen on it, and a port from that range may meanwhile become an outgoing connection's."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as file:
        ephemeral_start = int(file.read().split()[0])
    for _ in range(1000):
        port = random.randrange(10000, max(ephemeral_start, 10001))
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise Failure("no free loopback port below the ephemeral range after 1000 tries")


def wait_for(what, predicate, timeout=30.0, interval=0.2):
    """The first truthy value of predicate() within timeout seconds; Failure naming `what` otherwise."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except (Failure, urllib.error.URLError, ConnectionError, json.JSONDecodeError) as error:
            last = error
            value = None
        else:
            value = last
        if value:
            return value
        time.sleep(interval)
    raise Failure(f"{what}: not within {timeout:.0f} s (last seen: {last!r})")


class Broker:
    def __init__(self, work):
        self.port = free_port()
        config = os.path.join(work, "mosquitto.conf")
        with open(config, "w") as file:
            file.write(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        self.log = open(os.path.join(work, "mosquitto.log"), "w")
        self.process = subprocess.Popen(["mosquitto", "-c", config], stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("mosquitto listening", lambda: socket.create_connection(("127.0.0.1", self.port), timeout=1).close() or True,
                 timeout=10)

    def stop(self):
        self.process.terminate()
        self.process.wait(10)


class Watcher:
    """An MQTT client that keeps the retained messages and the events it sees."""

    def __init__(self, port):
        self.lock = threading.Lock()
        self.retained = {}
        self.events = []
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"ha-test-{os.getpid()}")
        self.client.on_message = self.on_message
        self.client.connect("127.0.0.1", port)
        self.client.subscribe([(f"{BASE}/#", 1), (f"homeassistant/+/{PREFIX}/+/config", 1)])
        self.client.loop_start()

    def on_message(self, client, userdata, message):
        with self.lock:
            if message.topic == f"{BASE}/events":
                self.events.append(json.loads(message.payload))
            elif message.payload:
                self.retained[message.topic] = message.payload
            else:
                self.retained.pop(message.topic, None)

    def event(self, name, after=0, **fields):
        """The first event `name` with `fields`, among those seen after the first `after`."""
        with self.lock:
            return next((event for event in self.events[after:] if event["event"] == name
                         and all(event.get(key) == value for key, value in fields.items())), None)

    def count(self):
        with self.lock:
            return len(self.events)

    def discovery_topics(self):
        with self.lock:
            return [topic for topic in self.retained if topic.startswith("homeassistant/")]

    def wipe(self, topics):
        for topic in topics:
            self.client.publish(topic, b"", qos=1, retain=True).wait_for_publish(5)

    def stop(self):
        self.client.loop_stop()
        self.client.disconnect()


class Daemon:
    def __init__(self, binary, broker, work):
        self.binary, self.broker, self.work = binary, broker, work
        self.config = os.path.join(work, "alarmd.toml")
        with open(self.config, "w") as file:
            file.write(f'[node]\nid = "{NODE}"\ntime-zone = "Europe/Berlin"\nauthorization = "authorized"\n'
                       '[home-assistant]\ndiscovery = true\n')
        self.log = open(os.path.join(work, "alarmd.log"), "a")
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [self.binary, "--config", self.config, "--broker", f"127.0.0.1:{self.broker.port}",
             "--state-dir", os.path.join(self.work, "state"), "--simulate-hardware"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def signal(self, number):
        self.process.send_signal(number)
        self.process.wait(20)
        self.process = None

    def stop(self):
        if self.process:
            self.signal(signal.SIGTERM)


class HomeAssistant:
    def __init__(self, venv, work):
        self.venv, self.config = venv, os.path.join(work, "ha-config")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = None
        os.makedirs(self.config)
        with open(os.path.join(self.config, "configuration.yaml"), "w") as file:
            file.write(f"""homeassistant:
  name: alarmd test
  time_zone: Europe/Berlin
  unit_system: metric
http:
  server_host: 127.0.0.1
  server_port: {self.port}
api:
websocket_api:
onboarding:
config:
logger:
  default: warning
# docs/home-assistant.md's automation, with an input_boolean for the light.
input_boolean:
  bedroom_light:
automation:
  - alias: "Bedroom lights when the alarm rings"
    triggers:
      - trigger: state
        entity_id: {ENTITIES["events"]}
    conditions:
      - condition: template
        value_template: >-
          {{{{ trigger.from_state.state != 'unavailable'
             and trigger.to_state.attributes.event_type == 'alerting' }}}}
    actions:
      - action: input_boolean.turn_on
        target:
          entity_id: input_boolean.bedroom_light
  - alias: "Lights off when the alarm is stopped at the bedside"
    triggers:
      - trigger: state
        entity_id: {ENTITIES["events"]}
    conditions:
      - condition: template
        value_template: >-
          {{{{ trigger.from_state.state != 'unavailable'
             and trigger.to_state.attributes.event_type == 'stopped'
             and trigger.to_state.attributes.source == 'button' }}}}
    actions:
      - action: input_boolean.turn_off
        target:
          entity_id: input_boolean.bedroom_light
# docs/home-assistant.md's "what rings": the list is whole when Ringing turns on.
input_text:
  ringing:
automation ringing:
  - alias: "Note what rings"
    triggers:
      - trigger: state
        entity_id: {ENTITIES["ringing"]}
        from: "off"
        to: "on"
    actions:
      - action: input_text.set_value
        target:
          entity_id: input_text.ringing
        data:
          value: >-
            {{{{ state_attr('{ENTITIES["alarms"]}', 'alarms') | selectattr('state', 'eq', 'alerting')
               | map(attribute='title') | join(', ') }}}}
""")
        self.log_path = os.path.join(work, "home-assistant.log")
        self.process = None

    def start(self):
        self.log = open(self.log_path, "a")
        self.process = subprocess.Popen([os.path.join(self.venv, "bin", "hass"), "--config", self.config],
                                        stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("Home Assistant answering on its port", self.answers, timeout=600, interval=1)

    def answers(self):
        if self.process.poll() is not None:
            raise Failure(f"Home Assistant exited with {self.process.returncode}")
        try:
            with urllib.request.urlopen(f"{self.url}/api/onboarding", timeout=5) as response:
                return response.status == 200
        except urllib.error.HTTPError as error:
            # Onboarded: the onboarding view is gone, the API asks for a token.
            return error.code in (401, 404)
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    def stop(self):
        if self.process:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def request(self, method, path, body=None, form=None, auth=True):
        data, headers = None, {}
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if auth and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(f"{self.url}{path}", data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            raise Failure(f"{method} {path}: HTTP {error.code}: {error.read().decode()[:500]}") from None
        return json.loads(text) if text else None

    def onboard(self):
        client_id = f"{self.url}/"
        user = self.request("POST", "/api/onboarding/users", {
            "client_id": client_id, "name": "Test", "username": "test", "password": "alarmd-test-password", "language": "en"})
        token = self.request("POST", "/auth/token", form={
            "grant_type": "authorization_code", "code": user["auth_code"], "client_id": client_id})
        self.token = token["access_token"]
        self.request("POST", "/api/onboarding/core_config", {})
        self.request("POST", "/api/onboarding/analytics", {})
        self.request("POST", "/api/onboarding/integration", {"client_id": client_id, "redirect_uri": f"{self.url}/?auth_callback=1"})

    def add_mqtt(self, broker_port):
        flow = self.request("POST", "/api/config/config_entries/flow", {"handler": "mqtt"})
        for _ in range(5):
            if flow.get("type") == "create_entry":
                return
            if flow.get("type") == "menu":
                flow = self.request("POST", f"/api/config/config_entries/flow/{flow['flow_id']}", {"next_step_id": "broker"})
                continue
            if flow.get("type") != "form":
                raise Failure(f"the MQTT config flow ended with {flow}")
            flow = self.request("POST", f"/api/config/config_entries/flow/{flow['flow_id']}",
                                {"broker": "127.0.0.1", "port": broker_port})
        raise Failure(f"the MQTT config flow did not finish: {flow}")

    def state(self, entity_id):
        try:
            return self.request("GET", f"/api/states/{entity_id}")
        except Failure as error:
            if "HTTP 404" in str(error):
                return None
            raise

    def state_is(self, key, predicate):
        state = self.state(ENTITIES[key])
        return state if state and predicate(state) else None

    def template(self, text):
        request = urllib.request.Request(f"{self.url}/api/template", data=json.dumps({"template": text}).encode(),
                                         headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
                                         method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.read().decode()

    def call(self, domain, service, **data):
        self.request("POST", f"/api/services/{domain}/{service}", data)


def tail(path, lines=40):
    try:
        with open(path, errors="replace") as file:
            return "".join(file.readlines()[-lines:])
    except OSError:
        return ""


def ok(check):
    print(f"ha-test: ok {check}", flush=True)


def live(state):
    return state["state"] not in ("unavailable", "unknown")


def run(args, work):
    broker = Broker(work)
    watcher = Watcher(broker.port)
    daemon = Daemon(args.alarmd, broker, work)
    home_assistant = HomeAssistant(args.venv, work)
    try:
        daemon.start()
        wait_for("alarmd online", lambda: json.loads(watcher.retained.get(f"{BASE}/status", b"{}")).get("state") == "online")
        wait_for("alarmd's discovery", lambda: len(watcher.discovery_topics()) == len(ENTITIES))

        started = time.monotonic()
        home_assistant.start()
        home_assistant.onboard()
        home_assistant.add_mqtt(broker.port)
        ok(f"Home Assistant {args.version} started, onboarded, MQTT added over REST ({time.monotonic() - started:.0f} s)")

        # The device and every entity.
        for key, entity_id in ENTITIES.items():
            wait_for(f"{entity_id} exists", lambda: home_assistant.state(entity_id), timeout=60)
        device_entities = json.loads(home_assistant.template(
            f"{{{{ device_entities(device_id('{ENTITIES['next_alarm']}')) | to_json }}}}"))
        if sorted(device_entities) != sorted(ENTITIES.values()):
            raise Failure(f"the device's entities are {sorted(device_entities)}")
        if home_assistant.template(f"{{{{ device_attr(device_id('{ENTITIES['next_alarm']}'), 'name') }}}}") != DEVICE:
            raise Failure("the device is not named after the node")
        event_types = home_assistant.state(ENTITIES["events"])["attributes"].get("event_types", [])
        for name in ("alerting", "stopped", "snoozed", "silenced", "missed", "button"):
            if name not in event_types:
                raise Failure(f"the event entity does not declare {name}: {event_types}")
        wait_for("authorization shown", lambda: home_assistant.state_is("authorization", lambda s: s["state"] == "authorized"))
        wait_for("time zone shown", lambda: home_assistant.state_is("time_zone", lambda s: s["state"] == "Europe/Berlin"))
        wait_for("clock synchronization shown", lambda: home_assistant.state_is("clock", lambda s: s["state"] in ("on", "off")))
        wait_for("no alarms", lambda: home_assistant.state_is("alarms", lambda s: s["state"] == "0"))
        ok(f"one device '{DEVICE}' with its {len(ENTITIES)} entities, event types and diagnostics")

        # A timer from the text entity: countdown, ringing, stopped by Home Assistant's Stop.
        home_assistant.call("text", "set_value", entity_id=ENTITIES["schedule"], value="4s Tea")
        scheduled = wait_for("the timer scheduled on the node", lambda: watcher.event("scheduled", source="home-assistant"))
        tea = scheduled["alarmID"]
        wait_for("the node's retained document of the timer", lambda: f"{BASE}/alarms/{tea}" in watcher.retained)
        wait_for("the text shows what was scheduled",
                 lambda: home_assistant.state_is("schedule", lambda s: s["state"].startswith("scheduled: Tea")))
        wait_for("the countdown's end shown", lambda: home_assistant.state_is("countdown_end", live))
        alarms = wait_for("the alarms sensor lists the timer", lambda: home_assistant.state_is(
            "alarms", lambda s: s["state"] == "1" and s["attributes"].get("alarms", [{}])[0].get("title") == "Tea"))
        if alarms["attributes"]["alarms"][0]["state"] != "countdown" or alarms["attributes"]["alarms"][0]["id"] != tea:
            raise Failure(f"the alarms sensor shows {alarms['attributes']}")
        ok("a timer set through the text entity is scheduled on the node; countdown end and alarms sensor follow")
        wait_for("ringing", lambda: home_assistant.state_is("ringing", lambda s: s["state"] == "on"), timeout=20)
        wait_for("the alerting event on the event entity",
                 lambda: home_assistant.state_is("events", lambda s: s["attributes"].get("event_type") == "alerting"))
        home_assistant.call("button", "press", entity_id=ENTITIES["stop"])
        stopped = wait_for("stopped by Home Assistant", lambda: watcher.event("stopped", alarmID=tea))
        if stopped.get("source") != "home-assistant":
            raise Failure(f"the stop's event is {stopped}")
        wait_for("not ringing", lambda: home_assistant.state_is("ringing", lambda s: s["state"] == "off"))
        wait_for("the stopped event on the event entity", lambda: home_assistant.state_is(
            "events", lambda s: s["attributes"].get("event_type") == "stopped" and s["attributes"].get("source") == "home-assistant"))
        wait_for("no countdown", lambda: home_assistant.state_is("countdown_end", lambda s: s["state"] == "unknown"))
        ok("states follow the timer (countdown, ringing, stopped); Stop acts as home-assistant; events reach the event entity")
        noted = home_assistant.state("input_text.ringing")["state"]
        if noted != "Tea":
            raise Failure(f"the automation started by Ringing read {noted!r} as what rings, not 'Tea'")
        ok("an automation that Ringing starts reads what rings from the Alarms sensor's list")
        light = "input_boolean.bedroom_light"
        wait_for("the automation turned the light on", lambda: home_assistant.state(light)["state"] == "on")
        time.sleep(1)
        if home_assistant.state(light)["state"] != "on":
            raise Failure("the light went off after a stop from Home Assistant, whose source is not button")

        # Snooze from Home Assistant, then Cancel all timers.
        seen = watcher.count()
        home_assistant.call("text", "set_value", entity_id=ENTITIES["schedule"], value="3s Eggs")
        eggs = wait_for("the second timer", lambda: watcher.event("scheduled", after=seen, source="home-assistant"))["alarmID"]
        wait_for("ringing again", lambda: home_assistant.state_is("ringing", lambda s: s["state"] == "on"), timeout=20)
        home_assistant.call("button", "press", entity_id=ENTITIES["snooze"])
        snoozed = wait_for("snoozed by Home Assistant", lambda: watcher.event("snoozed", alarmID=eggs))
        if snoozed.get("source") != "home-assistant":
            raise Failure(f"the snooze's event is {snoozed}")
        wait_for("counting down again", lambda: home_assistant.state_is("countdown_end", live))
        home_assistant.call("button", "press", entity_id=ENTITIES["cancel_timers"])
        cancelled = wait_for("cancelled by Home Assistant", lambda: watcher.event("cancelled", alarmID=eggs))
        if cancelled.get("source") != "home-assistant":
            raise Failure(f"the cancel's event is {cancelled}")
        wait_for("no alarms left", lambda: home_assistant.state_is("alarms", lambda s: s["state"] == "0"))
        ok("Snooze and Cancel all timers act on the node as home-assistant")

        # An alarm from the text entity, and a line that cannot be read.
        home_assistant.call("text", "set_value", entity_id=ENTITIES["schedule"], value="07:00 weekdays Work")
        work_alarm = wait_for("the alarm listed", lambda: home_assistant.state_is(
            "alarms", lambda s: s["state"] == "1" and s["attributes"]["alarms"][0]["repeats"] == "weekdays"))
        if work_alarm["attributes"]["alarms"][0]["title"] != "Work":
            raise Failure(f"the alarm is {work_alarm['attributes']}")
        wait_for("the next alarm shown", lambda: home_assistant.state_is("next_alarm", live))
        home_assistant.call("text", "set_value", entity_id=ENTITIES["schedule"], value="10x Tea")
        refused = wait_for("the error state", lambda: home_assistant.state_is("schedule", lambda s: s["state"].startswith("error: ")))
        if "10m Tea" not in refused["attributes"].get("error", ""):
            raise Failure(f"the error does not name the accepted forms: {refused}")
        # An automation's evening reschedule, two lines back to back: no copies pile up.
        home_assistant.call("text", "set_value", entity_id=ENTITIES["schedule"], value="cancel Work")
        home_assistant.call("text", "set_value", entity_id=ENTITIES["schedule"], value="07:00 weekdays Work")
        first_id = work_alarm["attributes"]["alarms"][0]["id"]
        wait_for("the alarm replaced", lambda: home_assistant.state_is(
            "alarms", lambda s: s["state"] == "1" and s["attributes"]["alarms"][0]["id"] != first_id))
        ok("an alarm from '07:00 weekdays Work'; '10x Tea' shows an error naming the accepted forms; 'cancel Work' then the line again replaces it")

        # The node's own stop button: source button, which the documented automation tells apart.
        # The light is off first, so that the stop cannot overtake the alerting's turn_on.
        home_assistant.call("input_boolean", "turn_off", entity_id=light)
        wait_for("the light off by hand", lambda: home_assistant.state(light)["state"] == "off")
        seen = watcher.count()
        home_assistant.call("text", "set_value", entity_id=ENTITIES["schedule"], value="2s Toast")
        toast = wait_for("the third timer", lambda: watcher.event("alerting", after=seen), timeout=20)["alarmID"]
        wait_for("the automation turned the light on again", lambda: home_assistant.state(light)["state"] == "on")
        watcher.client.publish(f"{BASE}/sim/press", json.dumps({"button": "stop", "duration": 0.1}), qos=1)
        stopped = wait_for("stopped at the bedside", lambda: watcher.event("stopped", after=seen, alarmID=toast))
        if stopped.get("source") != "button":
            raise Failure(f"the press's event is {stopped}")
        wait_for("the automation turned the light off", lambda: home_assistant.state(light)["state"] == "off")
        ok("docs/home-assistant.md's automation: light on when the alarm rings, off only for a stop at the bedside")

        # SIGTERM, then SIGKILL: unavailable; back after each restart, with the last event (the
        # bedside stop) on the event entity, which must not switch the light off again.
        home_assistant.call("input_boolean", "turn_on", entity_id=light)
        wait_for("the light on by hand", lambda: home_assistant.state(light)["state"] == "on")
        for name, number in (("SIGTERM", signal.SIGTERM), ("SIGKILL", signal.SIGKILL)):
            daemon.signal(number)
            for key in ("next_alarm", "ringing", "stop", "events", "clock"):
                wait_for(f"{key} unavailable after {name}", lambda: home_assistant.state_is(key, lambda s: s["state"] == "unavailable"))
            daemon.start()
            wait_for(f"back after {name}", lambda: home_assistant.state_is("next_alarm", live))
            wait_for(f"diagnostics back after {name}", lambda: home_assistant.state_is("time_zone", live))
            wait_for(f"the last event back after {name}", lambda: home_assistant.state_is(
                "events", lambda s: s["attributes"].get("event_type") == "stopped" and s["attributes"].get("source") == "button"))
            time.sleep(1)
            if home_assistant.state(light)["state"] != "on":
                raise Failure(f"the bedside-stop automation switched the light off again after {name} of alarmd")
        ok("SIGTERM and SIGKILL of alarmd make the entities unavailable; a restart brings them back and triggers no automation")

        # A timer that fell due while alarmd was down rings as it starts: the node says it is
        # online before that alerting event, so the automation (which leaves out changes from
        # unavailable) sees the event and turns the light on.
        home_assistant.call("input_boolean", "turn_off", entity_id=light)
        wait_for("the light off by hand", lambda: home_assistant.state(light)["state"] == "off")
        home_assistant.call("text", "set_value", entity_id=ENTITIES["schedule"], value="4s Late")
        wait_for("the late timer scheduled", lambda: home_assistant.state_is("schedule", lambda s: s["state"].startswith("scheduled: Late")))
        daemon.signal(signal.SIGTERM)
        wait_for("unavailable while alarmd is down", lambda: home_assistant.state_is("ringing", lambda s: s["state"] == "unavailable"))
        time.sleep(5)
        if home_assistant.state(light)["state"] != "off":
            raise Failure("the late timer rang before alarmd stopped: the host was too slow for this check")
        seen = watcher.count()
        daemon.start()
        late = wait_for("the late timer rings at the start", lambda: watcher.event("alerting", after=seen), timeout=20)
        wait_for("the automation turned the light on for it", lambda: home_assistant.state(light)["state"] == "on")
        home_assistant.call("button", "press", entity_id=ENTITIES["stop"])
        wait_for("the late timer stopped", lambda: watcher.event("stopped", after=seen, alarmID=late["alarmID"]))
        ok("a timer due while alarmd was down rings at its start, and the automation turns the light on for it")

        # Home Assistant restarts while the retained discovery is wiped: the node re-announces.
        home_assistant.stop()
        topics = watcher.discovery_topics()
        watcher.wipe(topics)
        wait_for("the discovery wiped", lambda: not watcher.discovery_topics())
        home_assistant.start()
        wait_for("the discovery announced again", lambda: len(watcher.discovery_topics()) == len(ENTITIES), timeout=120)
        for key in ENTITIES:
            wait_for(f"{key} back after Home Assistant's restart",
                     lambda: home_assistant.state_is(key, lambda s: s["state"] != "unavailable" and not s["attributes"].get("restored")),
                     timeout=60)
        wait_for("the alarm still listed", lambda: home_assistant.state_is("alarms", lambda s: s["state"] == "1"))
        ok("after Home Assistant restarts with the discovery wiped, the node re-announces and every entity returns")
    finally:
        home_assistant.stop()
        daemon.stop()
        watcher.stop()
        broker.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--alarmd", required=True)
    parser.add_argument("--venv", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, configuration)")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="alarmd-ha-test-")
    try:
        run(args, work)
    except Failure as error:
        print(f"ha-test: FAILED {error}", file=sys.stderr)
        for name in ("alarmd.log", "home-assistant.log", "mosquitto.log"):
            print(f"--- {name} (last lines) ---\n{tail(os.path.join(work, name))}", file=sys.stderr)
        sys.exit(1)
    finally:
        if args.keep:
            print(f"ha-test: work folder kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
