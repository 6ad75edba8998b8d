"""Drives the companion's page in Debian's headless Chromium (run by test-companion.sh).

The browser's clock is set 7 minutes ahead of the machine's, so every countdown check also
checks that the page corrects for the difference between its clock and the server's.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

URL = os.environ["COMPANION_URL"]
ALARMCTL = os.environ["ALARMCTL"]
BROKER = os.environ["ALARMD_BROKER"]
SHOTS = os.environ["SCREENSHOTS"]
ATTIC_PID = int(os.environ["ATTIC_PID"])
BROKER_PID = int(os.environ["BROKER_PID"])
COMPANION = os.environ["COMPANION"]
COMPANION_PID = int(os.environ["COMPANION_PID"])
PHONE = (360, 740)
KIOSK = (800, 480)
SKEW_MS = 7 * 60 * 1000

passed = 0
failed = 0
started = []  # processes this script started, stopped at its end


def check(what, condition):
    global passed, failed
    if condition:
        passed += 1
        print(f"PASS companion: {what}", flush=True)
    else:
        failed += 1
        print(f"FAIL companion: {what}", flush=True)
    return condition


def wait_until(what, probe, timeout=15.0):
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        try:
            value = probe()
        except Exception:  # the element is being redrawn
            value = None
        if value:
            return check(what, True) and value
        time.sleep(0.1)
    check(f"{what} (within {timeout:.0f} s)", False)
    return None


def alarmctl(node, *arguments):
    environment = dict(os.environ, ALARMD_BROKER=BROKER, ALARMD_NODE=node)
    result = subprocess.run([ALARMCTL, *arguments, "--json"], capture_output=True, text=True, env=environment, timeout=30)
    if result.returncode != 0:
        raise RuntimeError(f"alarmctl {' '.join(arguments)}: {result.stderr.strip()}")
    return json.loads(result.stdout)


def alarms(node):
    """The node's alarm documents (`alarmctl list --json`)."""
    return alarmctl(node, "list")


def alarm_ids(node):
    return {alarm["id"] for alarm in alarms(node)}


def viewport(driver, size):
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": size[0], "height": size[1], "deviceScaleFactor": 1, "mobile": size == PHONE})


def remaining(driver, alarm_id):
    return driver.find_element(By.CSS_SELECTOR, f'[data-remaining="{alarm_id}"]').text


def seconds(clock):
    parts = [int(part) for part in clock.split(":")]
    total = 0
    for part in parts:
        total = total * 60 + part
    return total


def button(driver, key):
    return driver.find_element(By.CSS_SELECTOR, f'button[data-key="{key}"]')


def pill(driver, node):
    return driver.find_element(By.XPATH, f'//h2[text()="{node}"]/following-sibling::span').text


def listening(address):
    try:
        socket.create_connection(address, timeout=1).close()
        return True
    except OSError:
        return False


def restart_companion(driver):
    """Stops the companion (SIGTERM) and starts a new one on the same address: new tokens, no sessions."""
    host, port = URL.split("//")[1].rstrip("/").rsplit(":", 1)
    os.kill(COMPANION_PID, signal.SIGTERM)
    wait_until("the companion stops", lambda: not listening((host, int(port))))
    wait_until("meanwhile the page blames its lost connection, not the nodes, which are online", lambda: driver.execute_script(
        'const details = [...document.querySelectorAll(".alarm.stale .detail")].map(d => d.textContent);'
        'return details.some(d => d.startsWith("this page lost the companion")) && !details.some(d => d.includes("offline"))'), 20)
    check("and its nodes' pills say 'not known', not 'online'", pill(driver, "kitchen") == "not known: this page lost the companion")
    log = open(os.path.join(os.environ["TMPDIR"], "companion-restarted.log"), "w")
    started.append(subprocess.Popen([COMPANION, "--broker", BROKER, "--listen", f"{host}:{port}"], stdout=log, stderr=subprocess.STDOUT))
    wait_until("the companion starts again on the same port", lambda: listening((host, int(port))), 30)


def another_companion(password, broker=BROKER):
    """Starts another companion on a free loopback port, asking for `password` unless it is None: its URL."""
    arguments = [COMPANION, "--broker", broker, "--listen", "127.0.0.1:0"]
    if password is not None:
        path = os.path.join(os.environ["TMPDIR"], "companion-password")
        with open(path, "w") as file:
            file.write(password + "\n")
        os.chmod(path, 0o600)
        arguments += ["--password-file", path]
    log_path = os.path.join(os.environ["TMPDIR"], f"companion-{len(started)}.log")
    started.append(subprocess.Popen(arguments, stdout=open(log_path, "w"), stderr=subprocess.STDOUT))
    serving = wait_until("another companion starts",
                         lambda: [word for word in open(log_path).read().split() if word.startswith("http://")], 30)
    return serving[0] if serving else URL


def closed_port():
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def sign_in(driver, password):
    driver.find_element(By.CSS_SELECTOR, "input[type=password]").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "form button, form input[type=submit]").click()


def cross_site_page(companion, target):
    """Another site (another origin) whose page POSTs to the companion as soon as it opens."""
    page = f"""<!doctype html><title>Another site</title>
<form id="f" method="post" action="{companion}{target}" enctype="text/plain"><input name="x" value="1"></form>
<script>fetch("{companion}{target}", {{method: "POST", mode: "no-cors"}}).finally(() => document.getElementById("f").submit());</script>"""

    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self):
            body = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *arguments):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://localhost:{server.server_address[1]}/"


def main():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--hide-scrollbars", "--force-color-profile=srgb", "--lang=en-US"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        run(driver)
    finally:
        driver.quit()
        for process in started:
            process.terminate()
            process.wait()
    print(f"companion browser test: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def run(driver):
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                           {"source": f"const realNow = Date.now; Date.now = () => realNow() + {SKEW_MS};"})
    viewport(driver, PHONE)
    driver.get(URL)
    wait_until("the page shows both nodes online",
               lambda: pill(driver, "kitchen").startswith("online") and pill(driver, "attic").startswith("online"), 30)

    # A timer scheduled with alarmctl counts down on the page by itself.
    work = alarmctl("attic", "alarm", "07:00", "weekdays", "--title", "Work")["id"]
    tea = alarmctl("kitchen", "timer", "5m", "--title", "Tea")["id"]
    first = wait_until("the timer appears with its remaining time", lambda: remaining(driver, tea))
    check(f"despite a browser clock 7 min ahead, it shows about 5 minutes ({first})", first and 285 <= seconds(first) <= 300)
    check("the header shows the time here, on the companion's clock rather than the browser's", driver.execute_script(
        'const shown = document.getElementById("now").textContent;'
        'const format = (ms) => new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });'
        'return shown === format(realNow()) || shown === format(realNow() - 60000)'))
    time.sleep(2.2)
    later = remaining(driver, tea)
    check(f"it counts down by itself ({first} → {later})", first and seconds(later) <= seconds(first) - 2)
    offset = driver.find_element(By.CSS_SELECTOR, f'[data-ring="{tea}"]').get_attribute("stroke-dashoffset")
    check("its progress ring is drawn", offset is not None and float(offset) > 0)
    wait_until("the scheduled alarm shows its next alert and days",
               lambda: "weekdays" in driver.find_element(By.CSS_SELECTOR, f'[data-alarm="{work}"]').text)
    check("the countdown is a timer for screen readers, not a live region",
          driver.execute_script(f'const e = document.querySelector(\'[data-remaining="{tea}"]\');'
                                'return e.getAttribute("role") === "timer" && !e.hasAttribute("aria-live") '
                                '&& /left$/.test(e.getAttribute("aria-label"))'))
    check("every control is a button or a labelled field",
          driver.execute_script('return [...document.querySelectorAll("button")].every(b => (b.getAttribute("aria-label") || b.textContent).trim())'
                                ' && document.querySelector("label[for=new-text]") !== null'))
    check("nothing scrolls sideways at 360 px",
          driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth"))
    driver.save_screenshot(os.path.join(SHOTS, "companion-phone.png"))

    # Pause and resume from the page.
    button(driver, f"{tea}/pause").click()
    wait_until("Pause on the page pauses it (the Resume button shows)", lambda: button(driver, f"{tea}/resume"))
    paused_at = remaining(driver, tea)
    time.sleep(1.5)
    check(f"a paused countdown stands still ({paused_at})", remaining(driver, tea) == paused_at)
    check("the node holds it paused", any(a["id"] == tea and a["state"] == "paused" for a in alarms("kitchen")))
    button(driver, f"{tea}/resume").click()
    wait_until("Resume on the page resumes it", lambda: button(driver, f"{tea}/pause"))
    time.sleep(1.2)
    check("it counts down again", seconds(remaining(driver, tea)) < seconds(paused_at))

    # A group's timer: one card in the group's section naming its members, whose actions go to the group.
    family = alarmctl("kitchen", "--group", "house", "timer", "10m", "--title", "Family")
    family_id = family["answered"][0]["alarm"]["id"]
    card = f'[aria-labelledby="group-house"] [data-alarm="{family_id}"]'
    wait_until("a group's timer is one card, in the group's section, naming both members",
               lambda: driver.execute_script(
                   f'return document.querySelectorAll(\'[data-alarm="{family_id}"]\').length === 1'
                   f' && document.querySelector(\'{card}\').textContent.includes("on attic, kitchen")'))
    button(driver, f"{family_id}/pause").click()
    wait_until("Pause on the group's card pauses it on both members",
               lambda: all(any(a["id"] == family_id and a["state"] == "paused" for a in alarms(node)) for node in ("kitchen", "attic")))
    paused = {node: next(a for a in alarms(node) if a["id"] == family_id)["presentationState"]["previouslyElapsedDuration"]
              for node in ("kitchen", "attic")}
    check(f"both members paused it at the same point ({paused})", abs(paused["kitchen"] - paused["attic"]) < 0.002)
    alarmctl("kitchen", "resume", family_id)
    wait_until("where the members differ, the card says each one's state",
               lambda: "attic: paused · kitchen: counting down" in driver.find_element(By.CSS_SELECTOR, card).text)
    driver.save_screenshot(os.path.join(SHOTS, "companion-group.png"))
    button(driver, f"{family_id}/cancel").click()
    check("one tap on Cancel asks for a second one", button(driver, f"{family_id}/cancel").text == "Confirm")
    button(driver, f"{family_id}/cancel").click()
    check("a second tap at once (a bounce, a double click) cancels nothing", family_id in alarm_ids("kitchen") and family_id in alarm_ids("attic"))
    wait_until("a Cancel not tapped again reads Cancel again after 4 s", lambda: button(driver, f"{family_id}/cancel").text == "Cancel", 8)
    check("and cancelled nothing", family_id in alarm_ids("kitchen") and family_id in alarm_ids("attic"))
    button(driver, f"{family_id}/cancel").click()
    time.sleep(0.6)
    button(driver, f"{family_id}/cancel").click()
    wait_until("Cancel tapped twice on the group's card removes it from both members, and the card goes",
               lambda: family_id not in alarm_ids("kitchen") and family_id not in alarm_ids("attic")
               and not driver.find_elements(By.CSS_SELECTOR, f'[data-alarm="{family_id}"]'))

    # A new timer typed in alarmctl's syntax; a line it cannot read is answered in its words.
    field = driver.find_element(By.ID, "new-text")
    driver.execute_script('document.getElementById("new-node").value = "kitchen"')
    field.send_keys("2m Soup")
    driver.find_element(By.CSS_SELECTOR, "#new-alarm button[type=submit]").click()
    wait_until("a timer typed on the page ('2m Soup') appears", lambda: "Soup" in driver.find_element(By.TAG_NAME, "main").text)
    check("the node holds it", any(a["attributes"]["presentation"]["alert"]["title"] == "Soup"
                                   for a in alarms("kitchen")))
    wait_until("the form says what it added, and where", lambda: driver.find_element(By.ID, "new-done").text == "Added to kitchen: 2m Soup")
    field.send_keys("soup in ten")
    driver.find_element(By.CSS_SELECTOR, "#new-alarm button[type=submit]").click()
    wait_until("a line it cannot read shows the forms it takes",
               lambda: "10m Tea" in driver.find_element(By.ID, "new-error").text)
    check("and no longer what it added before", driver.find_element(By.ID, "new-done").text == "")
    field.clear()

    # The kiosk: the countdowns, then an alert full screen, stopped from the page.
    viewport(driver, KIOSK)
    time.sleep(0.5)
    check("nothing scrolls sideways at 800 px",
          driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth"))
    driver.save_screenshot(os.path.join(SHOTS, "companion-kiosk.png"))
    # The companion restarts under the open page (an upgrade, a crash): the page reconnects, and its
    # buttons act with the new process's token, with no reload a kiosk could not do.
    restart_companion(driver)
    pasta = alarmctl("kitchen", "timer", "3s", "--title", "Pasta")["id"]
    wait_until("the alert covers the whole screen",
               lambda: driver.execute_script(
                   'const a = document.getElementById("alert"); const r = a.getBoundingClientRect();'
                   'return !a.hidden && r.width === innerWidth && r.height === innerHeight && a.textContent.includes("Pasta")'), 20)
    check("the tab's title says what rings", driver.title == "Ringing: Pasta")
    check("the alert's stop button has the focus", driver.execute_script(
        'return document.activeElement && document.activeElement.classList.contains("stop")'))
    check("the stop button's label contrasts with it at least 4.5:1 (WCAG AA)", driver.execute_script("""
        const b = document.querySelector("#alert button.stop"), style = getComputedStyle(b);
        const luminance = color => {
          const [r, g, b] = color.match(/[\\d.]+/g).slice(0, 3).map(c => c / 255)
            .map(c => c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
          return 0.2126 * r + 0.7152 * g + 0.0722 * b;
        };
        const [light, dark] = [luminance(style.color), luminance(style.backgroundColor)].sort((x, y) => y - x);
        return (light + 0.05) / (dark + 0.05) >= 4.5"""))
    driver.save_screenshot(os.path.join(SHOTS, "companion-alert.png"))
    driver.find_element(By.CSS_SELECTOR, "#alert button.stop").click()
    wait_until("Stop on the page ends the alert", lambda: driver.execute_script('return document.getElementById("alert").hidden'))
    check("the node removed the stopped timer", pasta not in alarm_ids("kitchen"))
    check("the tab's title is the page's again", driver.title == "Alarms")
    # Four alerts at once, one titled with 120 letters: every Stop shows without scrolling; stopping
    # one leaves the focus on another's Stop.
    for title in ["Tea", "Rice", "Eggs", "W" * 120]:
        alarmctl("kitchen", "timer", "3s", "--title", title)
    stops = 'return document.querySelectorAll("#alert button.stop").length'
    wait_until("the four alerts show", lambda: driver.execute_script(stops) == 4, 20)
    check("every alert's Stop shows on the 800×480 screen, none scrolled out of view", driver.execute_script(
        'return [...document.querySelectorAll("#alert button.stop")].every(b => {'
        ' const r = b.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; })'))
    check("the focus stays on the alert as the second one comes", driver.execute_script(
        'return document.getElementById("alert").contains(document.activeElement)'))
    for _ in range(4):
        driver.switch_to.active_element.send_keys(Keys.TAB)
    check("Tab keeps to the alert's buttons, never the page behind it", driver.execute_script(
        'return document.getElementById("alert").contains(document.activeElement) || document.activeElement === document.body'))
    driver.find_element(By.CSS_SELECTOR, "#alert button.stop").click()
    wait_until("three alerts are left", lambda: driver.execute_script(stops) == 3)
    check("the focus is on a Stop of an alert left", driver.execute_script(
        'return document.activeElement && document.activeElement.matches("#alert button.stop")'))
    for left in [2, 1, 0]:
        driver.find_element(By.CSS_SELECTOR, "#alert button.stop").click()
        if left: wait_until(f"{left} left", lambda: driver.execute_script(stops) == left)
    wait_until("stopping the last ends the alert", lambda: driver.execute_script('return document.getElementById("alert").hidden'))

    # An alert nobody answers: the attic silences it after 5 s, and the page names it under the node.
    viewport(driver, PHONE)
    alarmctl("attic", "timer", "1s", "--title", "Medicine")
    wait_until("an alert nobody answered is named under its node, once silenced", lambda: "Medicine rang unanswered, today"
               in driver.find_element(By.CSS_SELECTOR, '[aria-labelledby="node-attic"]').text and driver.execute_script(
                   'return document.getElementById("alert").hidden'), 30)

    # A node going offline: shown as such, never as a frozen countdown.
    alarmctl("attic", "timer", "20m", "--title", "Bread")
    wait_until("the attic's timer shows", lambda: "Bread" in driver.find_element(By.TAG_NAME, "main").text)
    os.kill(ATTIC_PID, signal.SIGTERM)
    wait_until("the stopped node shows offline", lambda: pill(driver, "attic").startswith("offline"), 20)
    check("its alarms are marked stale, with no countdown and no buttons", driver.execute_script(
        'const s = document.querySelector(\'[aria-labelledby="node-attic"]\');'
        'return s.querySelectorAll(".alarm.stale").length === 2 && !s.querySelector("[data-remaining]") && !s.querySelector("button")'))
    driver.save_screenshot(os.path.join(SHOTS, "companion-offline.png"))
    check("a new alarm can only go to the node that is online", driver.execute_script(
        'return [...document.querySelectorAll("#new-node option")].map(o => o.value).join()') == "kitchen")

    # Another site's page POSTs to the companion: refused, and nothing changes.
    server, evil = cross_site_page(URL.rstrip("/"), f"/api/nodes/kitchen/alarms/{tea}/cancel")
    try:
        driver.get(evil)
        wait_until("the cross-site form lands on the companion's refusal",
                   lambda: driver.current_url.startswith(URL) and "forbidden" in driver.find_element(By.TAG_NAME, "body").text, 15)
    finally:
        server.shutdown()
    check("the timer is still there", tea in alarm_ids("kitchen"))

    # A companion with a password, as for a phone: the browser signs in with its form.
    guarded = another_companion("a long passphrase")
    driver.get(guarded)
    wait_until("the page asks for the password", lambda: driver.find_elements(By.CSS_SELECTOR, "input[type=password]"))
    sign_in(driver, "not the passphrase")
    wait_until("a wrong password shows the form again, saying so",
               lambda: "not the companion's" in driver.find_element(By.TAG_NAME, "body").text, 15)
    sign_in(driver, "a long passphrase")
    wait_until("the right password opens the page, with the nodes", lambda: pill(driver, "kitchen").startswith("online"), 15)

    # The companion loses the broker: no node is shown as current, no countdown runs.
    driver.get(URL)
    wait_until("the page is back", lambda: pill(driver, "kitchen").startswith("online"))
    os.kill(BROKER_PID, signal.SIGTERM)
    wait_until("without the broker every node is 'not known', with no countdown",
               lambda: pill(driver, "kitchen").startswith("not known") and not driver.find_elements(By.CSS_SELECTOR, "[data-remaining]"), 20)
    check("the page's header names the broker it cannot reach, not the nodes", driver.execute_script(
        'const header = document.getElementById("connection").textContent;'
        'const details = [...document.querySelectorAll(".alarm.stale .detail")].map(d => d.textContent);'
        f'return header.startsWith("The companion cannot reach the broker {BROKER}") && details.length > 0'
        ' && details.some(d => d.startsWith("the companion cannot reach the broker"))'
        ' && !details.some(d => d.startsWith("the node is offline") || d.startsWith("its members are offline"))'))

    # A companion given a broker that is not there says so, rather than waiting for nodes.
    port = closed_port()
    nowhere = another_companion(None, broker=f"127.0.0.1:{port}")
    driver.get(nowhere)
    empty_text = lambda: driver.find_element(By.CSS_SELECTOR, "main .empty").text
    wait_until("a companion that never reached its broker says so on the page",
               lambda: empty_text().startswith("The companion cannot reach the broker"), 20)
    # Once a broker answers there, the page says so, though no node is known yet.
    config = os.path.join(os.environ["TMPDIR"], "late-broker.conf")
    with open(config, "w") as file:
        file.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
    started.append(subprocess.Popen(["mosquitto", "-c", config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    wait_until("with the broker there, the page waits for nodes instead", lambda: empty_text() == "No node has published its status yet.", 30)


if __name__ == "__main__":
    sys.exit(main())
