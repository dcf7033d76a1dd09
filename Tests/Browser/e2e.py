#!/usr/bin/env python3
"""End-to-end test of the web client in two headless Chromium sessions (two users) against a running
chronir-server (CHRONIR_URL). Ana (desktop width) registers, creates a group, rotates the invite code;
Bea (phone width) registers through /join/<CODE> and joins; Ana creates an alarm assigned to both with
rule `all`; Bea completes; Ana's page must show Bea's answer within 2 s without a reload; Ana completes;
both pages show the occurrence closed and the next fire time advanced; Ana removes Bea; Bea's page
shows that her access was revoked. Then notifications on Ana's browser (docs/notifications.md#web-client):
/sw.js is served as JavaScript; the "Notifications on this browser" switch with permission denied, then
granted (headless Chromium has no push service: its subscribe never settles, so the client's timeout and
error are asserted — or, in a browser that has one, the registered device), a subscription made by the
test registered through the client's own push.js and turned off again; a push message delivered to the
service worker with the DevTools protocol (ServiceWorker.deliverPushMessage) shows its notification;
the worker's click handling takes the page to the alarm; the group's mute switch reaches the server.
Issue 21 (the web client's second version): a step for each of its bugs 1–7 (each failed before its fix:
run with E2E_REPRODUCE=1 and PUBLIC_DIR=<an older Public/> to see them fail one by one without stopping), the
settings page (profile and zone, sessions signed out one and all, password, synced settings), My alarms
(create, live change, switch off, edit, delete; a free account told why it cannot write), My tasks
(/tasks: Bea's alarms across groups, filters, live, Mark done seen live on Ana's page), one line per
alarm (six folded alarms measured on both sizes), attachments (a real PNG added, its thumbnail and lightbox, seen
by Bea, removed), the session cookie (HttpOnly, SameSite=Strict, persistent, out of scripts' reach, a new tab
signed in, a write without the CSRF header refused), no Apple/Google button without a configured provider, an
answer queued offline and sent when the network returns, issue 33's web items 10–14 (a step each that a
script can see — message placement and clearing, live rename on My tasks, focus after each action, touch
targets and a one-line header on the phone, Back's scroll position, a double tap on ✓ answering once, Enter
in the note, the alarm form's defaults; also under E2E_REPRODUCE=1: `bug("33.N", …)`), and axe-core on
every page (0 serious or critical violations; the results in SCREENSHOT_DIR/axe-results.json).
A screenshot of every step goes to SCREENSHOT_DIR (default .build/screenshots/NN-name.png): Ana's at desktop
size 1280×900, Bea's at phone size 390×844. Any browser console message at level SEVERE fails the test.

The alarm is created after Bea joins: an occurrence's required set is fixed when it opens, so an
alarm created before she joined would not wait for her until its next occurrence.
"""
import json
import os
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import ElementNotInteractableException, StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait
import websocket  # websocket-client (.ci/browser.sh installs it): a DevTools connection of our own
from axe_selenium_python import Axe  # axe-core for Selenium (.ci/browser.sh installs it)

BASE = os.environ["CHRONIR_URL"].rstrip("/")
SHOTS = os.environ.get("SCREENSHOT_DIR", ".build/screenshots")
CHROME = os.environ.get("CHROME_BIN", "/usr/bin/chromium")
DRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
LIVE_DEADLINE_S = 2.0  # the issue: the other member's answer shows within 2 s, without reload
STEP_TIMEOUT_S = 15.0
SUBSCRIBE_TIMEOUT_S = 15.0  # push.js SUBSCRIBE_TIMEOUT_MS: how long the client waits for a push service

ADMIN = os.environ.get("CHRONIR_ADMIN", ".build/debug/chronir-admin")
DATA_DIR = os.environ.get("CHRONIR_DATA_DIR")
REPRODUCE = os.environ.get("E2E_REPRODUCE") == "1"
PASSWORD = "correct horse battery"

console_errors = []
step_no = 0
reproduced = []
axe_results = []  # {page, who, url, violations: {impact: count}, serious_or_critical: [ids]}


def bug(number, what, check):
    """A step for bug `number` of `check` must pass. With E2E_REPRODUCE=1 a failing check is
    reported and the run goes on, so one run against the old client shows every bug step failing."""
    try:
        check()
        print(f"   bug {number} ok: {what}")
    except Exception as e:  # noqa: BLE001 — an old client may lack an element altogether
        if not REPRODUCE:
            raise
        reproduced.append(f"bug {number}: {what}")
        print(f"   bug {number} REPRODUCED (the step fails): {what}: {(str(e).splitlines() or [type(e).__name__])[0]}")


def axe_check(d, page, who):
    """Runs axe-core on the page as it is now; any serious or critical violation fails the test."""
    axe = Axe(d)
    axe.inject()
    results = axe.run()
    version = d.execute_script("return window.axe && axe.version")
    counts = {}
    bad = []
    others = []
    for v in results["violations"]:
        counts[v["impact"]] = counts.get(v["impact"], 0) + 1
        others.append(f"{v['id']} ({v['impact']}) at " + ", ".join(str(n["target"][0]) for n in v["nodes"][:3]))
        if v["impact"] in ("serious", "critical"):
            bad.append(f"{v['id']} ({v['impact']}): {v['help']} — " + "; ".join(n["target"][0] if isinstance(n["target"][0], str) else str(n["target"][0]) for n in v["nodes"][:5]))
    axe_results.append({"page": page, "who": who, "url": d.current_url, "axe_version": version,
                        "passes": len(results["passes"]), "violations": counts, "rules_violated": others,
                        "serious_or_critical": bad})
    with open(os.path.join(SHOTS, "axe-results.json"), "w") as f:
        json.dump(axe_results, f, indent=1)
    print(f"   axe {page} ({who}): {len(results['passes'])} rules pass, violations by impact {counts or 'none'} {', '.join(others)}")
    if bad and REPRODUCE:  # an older client is run for its bug steps, not its accessibility
        print(f"   axe: serious or critical violations on {page} (not failing with E2E_REPRODUCE=1): {bad}")
    elif bad:
        raise AssertionError(f"axe: serious or critical violations on {page}:\n" + "\n".join(bad))


def http(method, path, body=None, token=None):
    """Calls the API from the test itself (a third user, another device): (status, body)."""
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=STEP_TIMEOUT_S) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None)
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, (json.loads(raw) if raw else None)


def admin(*args):
    """chronir-admin against the server's data directory."""
    out = subprocess.run([ADMIN, *args, "--data-dir", DATA_DIR], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"chronir-admin {' '.join(args)}: {out.stderr or out.stdout}"
    return out.stdout


def title_is(d, expected):
    return wait(d, lambda drv: drv.title == expected or None, f"the tab title {expected!r} (is {d.title!r})")


def gone(d, selector):
    return wait(d, lambda drv: not any(e.is_displayed() for e in drv.find_elements(By.CSS_SELECTOR, selector)) or None,
                f"{selector} gone")


def browser(width, height, profile, mobile=False):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROME
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={width},{height}", f"--user-data-dir={profile}", "--no-first-run",
                "--disable-extensions", "--force-prefers-reduced-motion=false", "--lang=en-GB"):
        opts.add_argument(arg)
    # One language for every run (times follow the browser's language and clock): British English, 24 h.
    opts.add_experimental_option("prefs", {"intl.accept_languages": "en-GB"})
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=DRIVER))
    # The viewport exactly (a headless window is at least 500 px wide and its size includes no chrome).
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
    return d


# The failed requests that negative steps make on purpose: (URL path fragment, status). Chromium logs each
# as a SEVERE "Failed to load resource"; these and only these are not console errors.
expected_failures = []


def expect_failed_request(path, status):
    expected_failures.append((path, status))


def drain_console(name, d):
    for entry in d.get_log("browser"):
        line = f"[{name}] {entry['level']}: {entry['message']}"
        print("   console", line)
        expected = any(path in entry["message"] and f"status of {status} " in entry["message"] for path, status in expected_failures)
        if entry["level"] == "SEVERE" and not expected:
            console_errors.append(line)


def shot(d, name, who, show=None):
    """Saves step NN's screenshot; `show` (a CSS selector) is scrolled to the top of the view first."""
    global step_no
    step_no += 1
    d.execute_script("const el = arguments[0] && document.querySelector(arguments[0]);"
                     "if (el) el.scrollIntoView({block: 'start'}); else if (!arguments[0]) window.scrollTo(0, 0);", show)
    path = os.path.join(SHOTS, f"{step_no:02d}-{name}.png")
    d.save_screenshot(path)
    print(f"== {step_no:02d} {name} ({who}) -> {path}")
    for n, drv in drivers.items():
        drain_console(n, drv)
    if console_errors:
        raise AssertionError("browser console errors:\n" + "\n".join(console_errors))


def wait(d, condition, what, timeout=STEP_TIMEOUT_S):
    try:
        # Live updates re-render parts of the page, so an element found a moment ago may be gone.
        return WebDriverWait(d, timeout, poll_frequency=0.05,
                             ignored_exceptions=(StaleElementReferenceException,)).until(lambda drv: condition(drv))
    except Exception as e:  # noqa: BLE001 — re-raised with what we waited for
        raise AssertionError(f"timed out after {timeout} s waiting for: {what}") from e


def css(d, selector):
    found = d.find_elements(By.CSS_SELECTOR, selector)
    return found[0] if found else None


def wait_css(d, selector, text=None, timeout=STEP_TIMEOUT_S):
    def check(drv):
        for el in drv.find_elements(By.CSS_SELECTOR, selector):
            if el.is_displayed() and (text is None or text in el.text):
                return el
        return None
    return wait(d, check, f"{selector}" + (f" containing {text!r}" if text else ""), timeout)


def attr(d, selector, name):
    """An attribute of the element `selector` names, found afresh (a re-render may replace it)."""
    return wait(d, lambda drv: (wait_css(drv, selector).get_attribute(name) or "") or None,
                f"{selector}[{name}]")


def fill(d, selector, value):
    def act(drv):
        el = wait_css(drv, selector)
        try:
            el.clear()
            el.send_keys(value)
        except ElementNotInteractableException:  # replaced or moved by a live re-render meanwhile: again
            return None
        return el.get_attribute("value") == value or None
    wait(d, act, f"type into {selector}")


def click(d, selector, text=None):
    def act(drv):  # find and click in one go: a re-render in between makes it stale, then retry
        el = wait_css(drv, selector, text)
        drv.execute_script("arguments[0].scrollIntoView({block: 'center'})", el)
        el.click()
        return True
    wait(d, act, f"click {selector}" + (f" containing {text!r}" if text else ""))


def click_button(d, label, scope="main"):
    def act(drv):
        for b in drv.find_elements(By.CSS_SELECTOR, f"{scope} button"):
            if b.is_displayed() and b.is_enabled() and b.text.strip() == label:
                drv.execute_script("arguments[0].scrollIntoView({block: 'center'})", b)
                b.click()
                return True
        return None
    wait(d, act, f"click button {label!r}")


def expand(d, card):
    """Opens an alarm card's details (its disclosure button) unless they are open: the one-line card
    shows the title, the state and the check; schedule, facts, who answered, the note and history are
    behind the button."""
    sel = card if card.startswith("#") else f"#{card}"

    def act(drv):
        button = wait_css(drv, f"{sel} button.disclosure")
        if button.get_attribute("aria-expanded") != "true":
            drv.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
            button.click()
        return css(drv, f"{sel} button.disclosure").get_attribute("aria-expanded") == "true" or None
    wait(d, act, f"{sel}'s details open")


def connection_live(d):
    el = css(d, "#connection")
    return el is not None and el.get_attribute("data-state") == "live"


def page_api(d, method, path, body=None):
    """Calls the API from the page with its session cookie (and the CSRF header writes need): {status, body}."""
    return d.execute_async_script("""
        const [method, path, body, done] = arguments;
        const headers = { 'X-Chronir-CSRF': '1' };
        if (body !== null) headers['Content-Type'] = 'application/json';
        fetch(path, { method, headers, body: body === null ? undefined : JSON.stringify(body) })
          .then(async (r) => done({ status: r.status, body: r.status === 204 ? null : await r.json() }))
          .catch((e) => done({ status: 0, body: String(e) }));""", method, path, body)


class DevTools:
    """A DevTools protocol connection of our own to one target of a browser (beside chromedriver's), for
    what execute_cdp_cmd cannot do: wait for events (ServiceWorker.workerRegistrationUpdated) and talk to
    the service worker's target."""

    def __init__(self, d, kind, url_prefix):
        address = d.capabilities["goog:chromeOptions"]["debuggerAddress"]
        targets = json.load(urllib.request.urlopen(f"http://{address}/json", timeout=STEP_TIMEOUT_S))
        target = next(t for t in targets if t["type"] == kind and t["url"].startswith(url_prefix))
        # No Origin header: Chromium refuses DevTools sockets from origins it was not told to allow.
        self.ws = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=STEP_TIMEOUT_S, suppress_origin=True)
        self.last_id = 0
        self.received = []

    def call(self, method, params=None):
        self.last_id += 1
        self.ws.send(json.dumps({"id": self.last_id, "method": method, "params": params or {}}))
        while True:
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.received.append(msg)
            elif msg.get("id") == self.last_id:
                if "error" in msg:
                    raise AssertionError(f"{method}: {msg['error']}")
                return msg["result"]

    def events(self, method, count, predicate=lambda params: True, timeout=STEP_TIMEOUT_S):
        """The first `count` events `method` whose params satisfy `predicate` (seen already or to come)."""
        deadline = time.monotonic() + timeout
        while True:
            found = [m["params"] for m in self.received if m["method"] == method and predicate(m["params"])]
            if len(found) >= count:
                return found[:count]
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {count} DevTools events {method}: {found}")
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.received.append(msg)

    def close(self):
        self.ws.close()


def notifications_shown(d):
    return d.execute_async_script("""
        const done = arguments[0];
        navigator.serviceWorker.ready.then((r) => r.getNotifications())
          .then((ns) => done(ns.map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data,
                                                requireInteraction: n.requireInteraction }))))
          .catch((e) => done(String(e)));""")


def register(d, name, email):
    fill(d, "input[name=display_name]", name)
    fill(d, "input[name=email]", email)
    fill(d, "input[name=password]", PASSWORD)
    click(d, "form button[type=submit]")


def main():
    os.makedirs(SHOTS, exist_ok=True)
    import tempfile
    profiles = tempfile.mkdtemp(prefix="chronir-e2e-")
    a = browser(1280, 900, os.path.join(profiles, "a"))  # desktop
    drivers["ana"] = a
    b = browser(390, 844, os.path.join(profiles, "b"), mobile=True)  # phone
    drivers["bea"] = b
    stamp = str(int(time.time() * 1000))

    # — the welcome page: its own title once (bug 4), accessible —
    a.get(BASE + "/")
    wait_css(a, "h1", "Chronir")
    bug(4, "the welcome page's title is 'Chronir'", lambda: title_is(a, "Chronir"))
    axe_check(a, "welcome", "ana")
    shot(a, "welcome", "ana")

    # — Ana registers and creates a group —
    a.get(BASE + "/register")
    wait_css(a, "h1", "Create an account")
    axe_check(a, "register", "ana")
    register(a, "Ana", f"ana-{stamp}@example.com")
    wait_css(a, "h1", "My groups")
    wait(a, connection_live, "Ana's realtime connection is live")
    axe_check(a, "my groups (empty)", "ana")
    shot(a, "ana-registered-my-groups", "ana")

    fill(a, "form[aria-labelledby=new-group-h] input", "Flat 4B")
    click_button(a, "Create group")
    wait_css(a, "#group-head h1", "Flat 4B")
    wait_css(a, "#members-head", "Members (1)")
    group_id = a.current_url.rsplit("/", 1)[1]
    axe_check(a, "group (owner)", "ana")
    shot(a, "ana-group-created", "ana")

    # — Ana rotates the invite code —
    click(a, "#rotate-code")
    link = attr(a, "#share-link", "value")
    code = link.rsplit("/", 1)[1]
    assert len(code) == 6 and link.startswith(BASE + "/join/"), link
    shot(a, "ana-invite-code-rotated", "ana", "#invite-slot")

    # — Bea opens the join link logged out, registers there, joins —
    # The landing page names the group and who invited (GET /v1/join/{code}, a join attempt to the
    # server's limiter; docs/security.md#invite-code-previews).
    b.get(link)
    wait_css(b, "h1", "Ana invited you to join Flat 4B")
    wait_css(b, "#landing-facts", "Flat 4B has 1 member")
    wait_css(b, "main .code", code)
    axe_check(b, "join landing (signed out)", "bea")
    shot(b, "bea-join-landing-logged-out", "bea")
    register(b, "Bea", f"bea-{stamp}@example.com")
    click(b, "#join-button")
    wait_css(b, "#group-head h1", "Flat 4B")
    wait(b, connection_live, "Bea's realtime connection is live")
    wait_css(a, "#members-head", "Members (2)")  # Ana sees Bea join live
    wait_css(a, "ul.members", "Bea")
    axe_check(b, "group (member, phone)", "bea")
    shot(b, "bea-joined-group", "bea")

    # — Ana creates an alarm assigned to both, rule all —
    click_button(a, "New alarm")
    wait_css(a, "form.alarm-form")
    fill(a, "form.alarm-form input[name=title]", "Pay the rent")
    # The form sits in a slot that re-renders never replace.
    for box in a.find_elements(By.CSS_SELECTOR, "form.alarm-form input[name=assignee]"):
        if not box.is_selected():
            box.find_element(By.XPATH, "following-sibling::label").click()
    Select(css(a, "form.alarm-form select[name=timezone]")).select_by_value("Europe/Berlin")
    # Every day: its next occurrence is always within the default 24-hour lead window, so it can be
    # answered now (a monthly one may be weeks away: "Answers open in …", docs/design.md#occurrence-states).
    Select(css(a, "form.alarm-form select[name=schedule_type]")).select_by_value("custom_days")
    interval_days = css(a, "form.alarm-form input[name=interval_days]")
    interval_days.clear()
    interval_days.send_keys("1")
    css(a, "form.alarm-form input[type=radio][value=all]").find_element(By.XPATH, "following-sibling::label").click()
    assert len(a.find_elements(By.CSS_SELECTOR, "form.alarm-form input[name=assignee]:checked")) == 2
    axe_check(a, "group with the alarm form", "ana")
    shot(a, "ana-alarm-form", "ana", "form.alarm-form")
    click_button(a, "Create alarm")
    alarm_id = wait(a, lambda drv: wait_css(drv, "li.alarm", "Pay the rent").get_attribute("id"), "the alarm's card")
    wait_css(a, f"#{alarm_id} .alarm-status", "0 of 2 answered")  # the one line: state and count
    expand(a, alarm_id)
    wait_css(a, f"#{alarm_id} .schedule", "Every day at 09:00")
    wait_css(a, f"#{alarm_id} .progress", "0 of 2 answered")
    # Shown in the alarm's zone and in the viewer's (the browsers run in UTC).
    wait_css(a, f"#{alarm_id} .next-fire", "09:00 (Europe/Berlin)")
    wait_css(a, f"#{alarm_id} .next-fire", "your time (UTC)")
    first_fire = attr(a, f"#{alarm_id}", "data-next-fire")
    assert first_fire, "the alarm has a next fire time"
    # Bea sees it appear without a reload, waiting for both of them.
    expand(b, alarm_id)
    wait_css(b, f"#{alarm_id} .progress", "0 of 2 answered; waiting for")
    wait_css(b, f"#{alarm_id} button.done")
    shot(a, "ana-alarm-created", "ana", "#alarms-h")
    shot(b, "bea-sees-new-alarm-live", "bea", "#alarms-h")

    # — Bea completes with a note; Ana's page shows it within 2 s —
    fill(b, f"#{alarm_id} input.note-input", "Paid by transfer")
    click(b, f"#{alarm_id} button.done")
    wait_css(b, f"#{alarm_id} .progress", "1 of 2 answered")
    answered_at = time.monotonic()
    wait_css(a, f"#{alarm_id} .progress", "1 of 2 answered", timeout=LIVE_DEADLINE_S)
    wait_css(a, f"#{alarm_id} .progress li.answered", "Bea", timeout=LIVE_DEADLINE_S)
    seen_after = time.monotonic() - answered_at
    print(f"   Ana saw Bea's answer {seen_after * 1000:.0f} ms after Bea's page had it (limit {LIVE_DEADLINE_S} s)")
    assert seen_after <= LIVE_DEADLINE_S
    wait_css(a, "section[aria-labelledby=activity-h]", "Paid by transfer")
    shot(b, "bea-completed", "bea", "#alarms-h")
    shot(a, "ana-sees-bea-answer-live", "ana", "#alarms-h")

    # — Ana completes: the occurrence closes, the next fire advances on both pages —
    click(a, f"#{alarm_id} button.done")
    for d, who in ((a, "ana"), (b, "bea")):
        wait_css(d, f"#{alarm_id} .previous", "closed")
        wait_css(d, f"#{alarm_id} .progress", "0 of 2 answered")
        wait(d, lambda drv: attr(drv, f"#{alarm_id}", "data-next-fire") > first_fire,
             f"{who}'s page shows the next fire time advanced past {first_fire}")
    print(f"   next fire: {first_fire} -> {attr(a, '#' + alarm_id, 'data-next-fire')}")
    shot(a, "ana-completed-occurrence-closed", "ana", "#alarms-h")
    shot(b, "bea-sees-occurrence-closed", "bea", "#alarms-h")
    answer_photo(a, b, group_id)

    # — history, editing (Bea sees the new schedule live), a link invitation created and revoked —
    click(a, f"#{alarm_id} details.history summary")
    wait_css(a, f"#{alarm_id} details.history ol", "Paid by transfer")
    assert len(a.find_elements(By.CSS_SELECTOR, f"#{alarm_id} details.history ol li")) == 2
    click(a, f"[data-key=edit-{alarm_id.removeprefix('alarm-')}]")
    wait_css(a, "form.alarm-form")
    # Still every day (answerable within the lead window for the steps below), now at 07:30.
    a.execute_script("arguments[0].value = '07:30'", css(a, "form.alarm-form input[type=time]"))  # locale-free
    click_button(a, "Save changes")
    wait_css(a, f"#{alarm_id} .schedule", "Every day at 07:30")
    wait_css(b, f"#{alarm_id} .schedule", "Every day at 07:30")
    wait_css(a, f"#{alarm_id} details.history ol", "Paid by transfer")  # stays open across re-renders
    shot(b, "bea-sees-edited-schedule-live", "bea", "#alarms-h")

    issue21_bugs(a, b, group_id, alarm_id, stamp)
    my_tasks(a, b, group_id, alarm_id, stamp)
    attachments(a, b, group_id, alarm_id)
    issue21_left(a, b, group_id, stamp)
    issue33_web(a, b, group_id, stamp)
    issue33_archive(a, b, group_id, stamp)
    click_button(a, "Create invitation")
    invite_link = wait(a, lambda drv: (v := attr(drv, "#share-link", "value")) and "/invite/" in v and v, "a link invitation URL")
    wait_css(a, "ul.invitations li", "Link invitation")
    shot(a, "ana-link-invitation-created", "ana", "#invite-slot")
    # The link's landing page names the group and the inviter (GET /v1/invitations/{token}: the token is
    # the secret, no limit); Bea, signed in, looks without accepting.
    b.get(invite_link)
    wait_css(b, "h1", "Ana invited you to join Flat 4B")
    wait_css(b, "#landing-facts", "Flat 4B has 2 members")
    wait_css(b, "#join-button", "Accept the invitation")
    axe_check(b, "invite landing (signed in, phone)", "bea")
    shot(b, "bea-invite-landing", "bea")
    click(a, "ul.invitations li button", "Revoke")
    wait_css(a, "#no-invitations", "None.")
    # Revoked: the landing page says so and offers nothing to press.
    expect_failed_request("/v1/invitations/", 404)
    b.get(invite_link)
    wait_css(b, "#landing-refused", "This invitation link does not work")
    gone(b, "#join-button")
    axe_check(b, "invite landing (revoked)", "bea")
    b.get(f"{BASE}/groups/{group_id}")
    wait_css(b, "#group-head h1", "Flat 4B")
    wait(b, connection_live, "Bea's realtime connection is live")

    # — Ana removes Bea; Bea's page says her access ended —
    bea_id = attr(a, "ul.members li:nth-child(2)", "id").removeprefix("member-")
    wait_css(a, f"#member-{bea_id}", "Bea")
    click(a, f"[data-key=remove-{bea_id}]")  # arms
    click(a, f"[data-key=remove-{bea_id}]", "Confirm")
    wait_css(a, "#members-head", "Members (1)")
    shot(a, "ana-removed-bea", "ana", "#members-h")
    wait_css(b, "#flash", "Flat 4B. It is no longer in your groups.")  # the reason's wording may vary
    wait_css(b, "h1", "My groups")
    wait(b, lambda drv: "Flat 4B" not in css(drv, "#group-list").text, "Flat 4B gone from Bea's groups")
    shot(b, "bea-access-revoked", "bea")

    # — Bea signs out and back in (the session is an HttpOnly cookie: never in a script, a URL or storage) —
    click_button(b, "Sign out", scope="header")
    wait_css(b, "#flash", "You are signed out.")
    gone(b, "#offline-note")  # signing out is not being offline
    assert not any(c["name"] == "chronir_session" and c["value"] for c in b.execute_cdp_cmd("Network.getCookies", {"urls": [BASE]})["cookies"])
    assert b.execute_script("return localStorage.getItem('chronir.signed-in')") is None
    click(b, "header a[href='/login']")
    wait_css(b, "h1", "Sign in")
    # Sign in with Apple/Google: this server configures no provider, so no button (GET /v1/auth/providers
    # answered an empty list); the rendering logic shows one only for a provider with a web client id
    wait(b, lambda drv: drv.execute_script("const e = document.getElementById('provider-signin'); return e && e.dataset.state") == "none" or None,
         "the providers asked, none to show")
    assert not b.find_elements(By.CSS_SELECTOR, "button.provider"), "a provider button without a provider"
    assert http("GET", "/v1/auth/providers") == (200, {"providers": []})
    rendered = b.execute_async_script("""
        const done = arguments[0];
        import('/js/signin.js').then((m) => done(m.buttonsFor({ providers: [
          { provider: 'apple', web_client_id: null }, { provider: 'google', web_client_id: 'web.apps.example' },
          { provider: 'facebook', web_client_id: 'x' }] }).map((b) => [b.textContent, b.dataset.provider])));""")
    assert rendered == [["Sign in with Google", "google"]], rendered
    # the return from a provider (/login#id_token=…&state=…): a state this browser did not start is
    # refused without a request; a started one goes to POST /v1/auth/oidc (here 404: no provider is
    # configured), and either way the token leaves the address bar and the pending sign-in ends
    pending = "sessionStorage.setItem('chronir.oidc', JSON.stringify({ provider: 'google', nonce: 'n-1', state: 's-1' }))"
    for state, says in (("forged", "This sign-in was not started here"), ("s-1", "is not configured on this server")):
        b.execute_script(pending)
        b.get("about:blank")
        if state == "s-1":
            expect_failed_request("/v1/auth/oidc", 404)
        b.get(BASE + f"/login#id_token=a.b.c&state={state}")
        wait_css(b, "main .error", says)
        assert b.execute_script("return [location.hash, sessionStorage.getItem('chronir.oidc')]") == ["", None]
    wait_css(b, "form button[type=submit]")
    axe_check(b, "sign in (phone)", "bea")
    fill(b, "input[name=email]", f"bea-{stamp}@example.com")
    fill(b, "input[name=password]", PASSWORD)
    click(b, "form button[type=submit]")
    wait_css(b, "h1", "My groups")
    wait(b, connection_live, "Bea's realtime connection is live again")
    assert "token" not in b.current_url.lower()
    shot(b, "bea-signed-in-again", "bea")
    session_cookie(b)

    # — a typed invite code opens its join page; this one is older than Bea's removal, so it is refused in words —
    # typed as people type it: lower case, a space and a dash, spaces around
    def typed_code():
        fill(b, "#join-by-code input[name=invite_code]", f" {code[:3].lower()} - {code[3:].lower()} ")
        click_button(b, "Continue")
        wait_css(b, "h1", "Ana invited you to join Flat 4B", timeout=5)  # the code is live: the preview shows
        assert b.current_url == f"{BASE}/join/{code}", b.current_url
    bug("33.13", "the invite code field forgives spaces, dashes and lower case", typed_code)
    if REPRODUCE and b.current_url != f"{BASE}/join/{code}":
        b.get(f"{BASE}/join/{code}")
        wait_css(b, "h1", "Ana invited you to join Flat 4B")
    # Bea was removed after this code was made: the landing says so (the preview names her standing)
    # rather than offering a join that would blame the code
    bug("33.5", "a removed member's landing says what is true, with no join button", lambda: (
        wait_css(b, "#landing-refused", "You are no longer in this group"), gone(b, "#join-button")))
    shot(b, "bea-typed-code-refused", "bea")
    # A code that is no code: the landing page refuses at once, in the join's words, with no form.
    expect_failed_request("/v1/join", 404)
    b.get(f"{BASE}/join/ZZZZZZ")
    wait_css(b, "#landing-refused", "This invite code does not work")
    gone(b, "#join-button")
    axe_check(b, "join landing (unknown code)", "bea")
    click(b, "#account-nav a[href='/']")
    wait_css(b, "h1", "My groups")

    # — keyboard: a page load focuses its heading; Tab reaches the next control with a visible ring —
    a.get(BASE + "/")
    wait_css(a, "h1", "My groups")
    wait(a, lambda drv: drv.switch_to.active_element.tag_name == "h1", "the heading has focus after load")
    ActionChains(a).send_keys(Keys.TAB).perform()
    focused = a.switch_to.active_element
    assert focused.tag_name in ("a", "button", "input"), focused.tag_name
    outline = a.execute_script("return getComputedStyle(arguments[0]).outlineStyle", focused)
    assert outline == "solid", f"focused {focused.tag_name} {focused.text!r} has outline {outline!r}"
    shot(a, "ana-keyboard-focus-visible", "ana")

    appearance(a, group_id)
    offline(a, group_id, alarm_id, stamp)
    settings(a, stamp)
    my_alarms(a, b, stamp)
    click(a, "#account-nav a[href='/']")
    notifications(a, group_id, alarm_id.removeprefix("alarm-"))

    for n, drv in drivers.items():
        drain_console(n, drv)
    if console_errors:
        raise AssertionError("browser console errors:\n" + "\n".join(console_errors))


def issue21_bugs(a, b, group_id, alarm_id, stamp):
    """Issue 21's bugs 1–7, each a step that failed before its fix. Ana (owner) and Bea (member) are on the
    group page; Cy is a third account the test drives over HTTP."""
    group_card = f"#group-{group_id}"

    # — the invite panel folds on a group that has people (it opened by itself on the group of one) —
    if not REPRODUCE:
        a.refresh()
        wait_css(a, "#group-head h1", "Flat 4B")
        wait(a, lambda drv: css(drv, "#invite-panel") is not None and css(drv, "#invite-panel").get_attribute("open") is None or None,
             "the invite panel folded")
        shot(a, "invite-panel-folded", "ana", "#members-h")
        click(a, "#invite-panel summary")
        wait_css(a, "#invite-panel[open] [data-key=invite-email]")

    # — bug 6: a one-use link box goes once the link is used; bug 1: My groups follows member counts —
    click_button(a, "Create invitation")
    link = wait(a, lambda drv: (v := attr(drv, "#share-link", "value")) and "/invite/" in v and v, "a link invitation URL")
    token = link.rsplit("/", 1)[1]
    click(b, "nav.crumbs a", "My groups")
    wait_css(b, "h1", "My groups")
    wait_css(b, f"{group_card} .meta", "2 members")
    status, cy = http("POST", "/v1/auth/register", {"email": f"cy-{stamp}@example.com", "password": PASSWORD, "display_name": "Cy"})
    assert status == 201, (status, cy)
    status, joined = http("POST", f"/v1/invitations/{token}/accept", token=cy["token"])
    assert status == 200, (status, joined)
    wait_css(a, "#members-head", "Members (3)")
    bug(6, "the used one-use link leaves Ana's page", lambda: gone(a, "#invite-slot .secret"))
    shot(a, "bug6-used-link-gone", "ana", "#invite-slot")
    bug(1, "Bea's My groups shows the third member", lambda: wait_css(b, f"{group_card} .meta", "3 members"))
    status, _ = http("DELETE", f"/v1/groups/{group_id}/members/{cy['user']['id']}", token=cy["token"])
    assert status == 204, status
    wait_css(a, "#members-head", "Members (2)")
    bug(1, "Bea's My groups shows the count after Cy left", lambda: wait_css(b, f"{group_card} .meta", "2 members"))
    if not REPRODUCE:  # the activity feed says who came and went, in words
        wait_css(a, "#activity", "Cy joined the group")
        wait_css(a, "#activity", "Cy left the group")
    renamed = "Flat 4B (2nd floor)"
    if REPRODUCE:  # the client before its second version has no group settings form
        assert page_api(a, "PATCH", f"/v1/groups/{group_id}", {"name": renamed})["status"] == 200
    else:  # the group settings form: name, description, colour, icon
        click(a, "#edit-group")
        wait_css(a, "#group-form")
        fill(a, "#group-form input[name=name]", renamed)
        fill(a, "#group-form textarea[name=description]", "Top floor, shared bills")
        a.execute_script("const c = document.querySelector('#group-form input[type=color]'); c.value = '#1b6b2f'; c.dispatchEvent(new Event('input', { bubbles: true }));")
        Select(css(a, "#group-form select[name=icon_name]")).select_by_value("house")
        axe_check(a, "group settings form", "ana")
        shot(a, "group-settings-form", "ana", "#group-head")
        click_button(a, "Save group")
        wait_css(a, "#group-head h1", renamed)
        wait_css(a, "#group-head", "Top floor, shared bills")
        saved = page_api(a, "GET", f"/v1/groups/{group_id}")["body"]["group"]
        assert saved["color_tag"] == "#1B6B2F" and saved["icon_name"] == "house", saved
        assert css(a, "#group-form") is None
    bug(1, "Bea's My groups shows the rename live", lambda: wait_css(b, f"{group_card} a", renamed))
    if not REPRODUCE:
        wait_css(b, f"{group_card} .group-badge", "🏠")
    axe_check(b, "my groups (phone)", "bea")
    shot(b, "bug1-my-groups-live", "bea")

    # — bug 4: the tab title follows a live rename —
    click(b, f"{group_card} a")
    wait_css(b, "#group-head h1", renamed)
    title_is(b, f"{renamed} · Chronir")
    assert page_api(a, "PATCH", f"/v1/groups/{group_id}", {"name": "Flat 4B"})["status"] == 200
    wait_css(b, "#group-head h1", "Flat 4B")
    bug(4, "Bea's tab title follows the rename", lambda: title_is(b, "Flat 4B · Chronir"))

    # — bug 2: live updates keep armed confirm buttons, half-typed notes and fields, and focus —
    click(b, "[data-key=leave-group]")
    wait_css(b, "[data-key=leave-group]", "Confirm: leave group")
    expand(b, alarm_id)
    fill(b, f"#{alarm_id} input.note-input", "Half-typed")
    fill(a, "[data-key=invite-email]", "dee@")
    today = a.execute_script("return new Date().toISOString().slice(0, 10)")
    created = page_api(a, "POST", f"/v1/groups/{group_id}/alarms", {
        "title": "Water the plants", "schedule": {"type": "custom_days", "interval_days": 3, "start_date": today},
        "times_of_day": [{"hour": 8, "minute": 0}], "timezone": "UTC"})
    assert created["status"] == 201, created
    wait_css(b, "li.alarm", "Water the plants")
    wait_css(a, "li.alarm", "Water the plants")
    if not REPRODUCE:
        wait_css(b, "#activity", "“Water the plants” was created")

    def kept():
        assert css(b, "[data-key=leave-group]").text == "Confirm: leave group", css(b, "[data-key=leave-group]").text
        assert css(b, f"#{alarm_id} input.note-input").get_attribute("value") == "Half-typed"
        assert b.switch_to.active_element.get_attribute("data-key") == f"note-{alarm_id.removeprefix('alarm-')}"
        assert css(a, "[data-key=invite-email]").get_attribute("value") == "dee@"
    bug(2, "a live re-render keeps Bea's armed Leave, her typed note and focus, and Ana's typed email", kept)
    shot(b, "bug2-armed-and-typed-kept", "bea", "#alarms-h")
    fill(a, "[data-key=invite-email]", "")
    fill(b, f"#{alarm_id} input.note-input", "")

    # — bug 3: an error banner is centred on the desktop like the page —
    a.execute_async_script("const done = arguments[0]; import('/js/app.js').then((m) => { m.flash('Test banner: something failed.', 'error'); done(); });")
    wait_css(a, "#flash .flash.error", "Test banner")

    def centred():
        left, right = a.execute_script("const r = document.querySelector('#flash .flash').getBoundingClientRect();"
                                       "return [r.left, window.innerWidth - document.documentElement.clientLeft - r.right - (window.innerWidth - document.documentElement.clientWidth)];")
        assert left > 50 and abs(left - right) < 2, f"banner at left {left}, right gap {right}"
    bug(3, "the error banner is centred", centred)
    shot(a, "bug3-error-banner-centred", "ana")
    click(a, "#flash button[aria-label='Dismiss message']")

    # — bug 5: the zone picker: current names, UTC, the browser's zone first, search —
    click_button(a, "New alarm")
    wait_css(a, "form.alarm-form")
    zones = a.execute_script("return [...document.querySelectorAll('form.alarm-form select[name=timezone] option')].map((o) => o.value)")

    def zone_list():
        assert zones[0] == "UTC", f"first zone {zones[0]} (the browsers run in UTC)"
        for z in ("UTC", "Asia/Kolkata", "Europe/Kyiv", "Asia/Ho_Chi_Minh", "Europe/Berlin"):
            assert z in zones, f"{z} missing"
        for z in ("Asia/Calcutta", "Europe/Kiev", "Asia/Saigon"):
            assert z not in zones, f"{z} offered"
        fill(a, "form.alarm-form input.zone-search", "kolk")
        shown = a.execute_script("return [...document.querySelectorAll('form.alarm-form select[name=timezone] option')].map((o) => o.value)")
        assert "Asia/Kolkata" in shown and "Europe/Berlin" not in shown, shown
        assert Select(css(a, "form.alarm-form select[name=timezone]")).first_selected_option.get_attribute("value") == "Asia/Kolkata"
    bug(5, "the zone picker offers current names and UTC, the browser's zone first, with search", zone_list)

    # — bug 7: messages for people (the form's own check, and the server's words turned into sentences) —
    words = a.execute_async_script("""
        const done = arguments[0];
        import('/js/api.js').then(({ ApiError }) => done([
          new ApiError(422, { error: { code: 'CA017', message: 'password must be at least 8 bytes', field: 'password' } }).message,
          new ApiError(429, { error: { code: 'CA020', message: 'too many attempts; retry later', retry_after: 120 } }).message,
          new ApiError(422, { error: { code: 'CA008', message: 'schedule.end_date is before schedule.start_date', field: 'schedule.end_date' } }).message,
        ]));""")

    def in_words():
        assert words[0] == "The password needs at least 8 characters.", words[0]
        assert words[1] == "Too many attempts. Try again in 2 minutes.", words[1]
        assert words[2].startswith("The end date is before the start date"), words[2]
    bug(7, "server messages in words: characters not bytes, the wait a 429 gave", in_words)
    fill(a, "form.alarm-form input[name=title]", "Check the smoke alarm")
    a.execute_script("const f = document.querySelector('form.alarm-form');"
                     "f.querySelector('[name=start_date]').value = '2030-03-10'; f.querySelector('[name=end_date]').value = '2030-03-01';")
    click_button(a, "Create alarm")

    def end_before_start():
        text = wait_css(a, "form.alarm-form .error").text
        assert text.startswith("The end date is before the start date") and "schedule." not in text, text
    bug(7, "an end date before the start is said in words", end_before_start)
    shot(a, "bug7-form-error-in-words", "ana", "form.alarm-form")
    a.execute_script("document.querySelector('form.alarm-form [name=end_date]').value = ''")
    click_button(a, "Create alarm")
    kolkata = wait(a, lambda drv: wait_css(drv, "li.alarm", "Check the smoke alarm").get_attribute("id"), "the Kolkata alarm's card")
    wait_css(a, f"#{kolkata} .alarm-status .state-upcoming", "Upcoming · in ")
    expand(a, kolkata)
    wait_css(a, f"#{kolkata} .next-fire", "(Asia/Kolkata)")  # the server takes the current name  # April 2030: not "Open now"
    shot(a, "issue21-upcoming-state", "ana", f"#{kolkata}")
    compact_cards(a, b, group_id, stamp)


def issue33_archive(a, b, group_id, stamp):
    """Issue 33 item 8: a finished one-time alarm is "Done" — its card offers no Pause or Switch off, Ana
    (owner) gets Archive — and archived it leaves the list for "Archived (1)", on Bea's page too, live;
    the group's list over HTTP leaves it out unless asked (?archived=true)."""
    g = f"/v1/groups/{group_id}"
    status, login = http("POST", "/v1/auth/login", {"email": f"ana-{stamp}@example.com", "password": PASSWORD})
    assert status == 200, (status, login)
    token = login["token"]
    # Two hours from now (UTC), inside the default one-day answer window: answerable at once.
    at = time.gmtime(time.time() + 2 * 3600)
    books = create_alarm(token, group_id, {
        "title": "Return the library books", "schedule": {"type": "one_time", "date": time.strftime("%Y-%m-%d", at)},
        "times_of_day": [{"hour": at.tm_hour, "minute": at.tm_min}], "timezone": "UTC"})
    card = f"alarm-{books['id']}"
    wait_css(a, f"#alarm-list #{card}")
    status, answered = http("POST", f"{g}/alarms/{books['id']}/completions",
                            {"status": "completed", "scheduled_at": books["occurrence"]["scheduled_at"]}, token=token)
    assert status in (200, 201), (status, answered)
    wait_css(a, f"#{card} .alarm-status", "Done")
    expand(a, card)

    def done_controls():
        assert not a.find_elements(By.CSS_SELECTOR, f"[data-key=pause-{books['id']}], [data-key=disable-{books['id']}]"), \
            "a done alarm offers no Pause or Switch off"
        assert css(a, f"[data-key=archive-{books['id']}]").text == "Archive"
    bug("33.8", "a done one-time alarm offers Archive, not Pause or Switch off", done_controls)
    shot(a, "ana-done-alarm-offers-archive", "ana", f"#{card}")
    click(a, f"[data-key=archive-{books['id']}]")
    wait_css(a, "#archived-alarms > summary", "Archived (1)")
    wait_css(b, "#archived-alarms > summary", "Archived (1)")  # live, no reload

    def archived():
        for d in (a, b):
            assert not d.find_elements(By.CSS_SELECTOR, f"#alarm-list #{card}"), "the archived alarm left the list"
            assert d.find_elements(By.CSS_SELECTOR, f"#archived-list #{card}"), "it is under Archived"
        listed = [x["id"] for x in page_api(a, "GET", f"{g}/alarms")["body"]["alarms"]]
        assert books["id"] not in listed, listed
        only = [x["id"] for x in page_api(a, "GET", f"{g}/alarms?archived=true")["body"]["alarms"]]
        assert only == [books["id"]], only
    bug("33.8", "archived: out of the list into 'Archived (1)' on both pages, out of GET …/alarms", archived)
    focus_is(a, "not on <body>", lambda f: True, timeout=3)
    shot(b, "bea-sees-archived-live", "bea", "#archived-alarms")
    assert http("POST", "/v1/auth/logout", token=token)[0] == 204  # Settings counts Ana's sessions later


def create_alarm(token, group_id, body):
    """Creates a shared alarm over HTTP; shared-alarm creation is limited to 5 a minute per user
    (docs/design.md), so a 429 waits for the Retry-After the server gives and tries once more."""
    status, made = http("POST", f"/v1/groups/{group_id}/alarms", body, token=token)
    if status == 429:
        time.sleep(made["error"]["retry_after"] + 1)
        status, made = http("POST", f"/v1/groups/{group_id}/alarms", body, token=token)
    assert status == 201, (status, made)
    return made


def session_cookie(b):
    """The web client's session is an HttpOnly, SameSite=Strict cookie that outlives the browser session:
    no script can read it (nothing in document.cookie or storage), a new tab is signed in, and a write
    without the CSRF header is refused (403 CA042) even from the page itself."""
    assert "chronir_session" not in b.execute_script("return document.cookie")
    assert b.execute_script("return sessionStorage.getItem('chronir.token')") is None
    stored = b.execute_script("return Object.keys(localStorage).map((k) => localStorage.getItem(k)).join(' ')")
    cookie = next(c for c in b.execute_cdp_cmd("Network.getCookies", {"urls": [BASE]})["cookies"] if c["name"] == "chronir_session")
    assert cookie["value"] not in stored, "the token in localStorage"
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/" and not cookie["secure"], cookie
    assert not cookie["session"] and cookie["expires"] > time.time() + 29 * 86400, f"not a persistent cookie: {cookie}"
    first = b.current_window_handle
    b.switch_to.new_window("tab")
    try:
        b.get(BASE + "/tasks")
        wait_css(b, "h1", "My tasks")
        wait(b, connection_live, "the new tab's realtime connection is live (the socket authenticated by the cookie)")
        shot(b, "bea-new-tab-signed-in", "bea")
    finally:
        b.close()
        b.switch_to.window(first)
    expect_failed_request("/v1/me", 403)
    refused = b.execute_async_script("""
        const done = arguments[0];
        fetch('/v1/me', { method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: '{"display_name":"Mallory"}' })
          .then(async (r) => done([r.status, (await r.json()).error.code]));""")
    assert refused == [403, "CA042"], refused
    assert page_api(b, "GET", "/v1/me")["body"]["display_name"] == "Bea"


def compact_cards(a, b, group_id, stamp):
    """Six alarms make a short page: one line per alarm (state, count, a check), details on demand.
    Before, each card showed everything and six made a 4,200 px page."""
    today = a.execute_script("return new Date().toISOString().slice(0, 10)")
    extra = []
    # From another session of Ana's over HTTP; alarm creation is limited to 5 a minute per user, so the
    # third may have to wait for the Retry-After the server gives.
    status, login = http("POST", "/v1/auth/login", {"email": f"ana-{stamp}@example.com", "password": PASSWORD})
    assert status == 200, (status, login)
    for title in ("Descale the kettle", "Change the HVAC filter", "Check the backup"):
        body = {"title": title, "schedule": {"type": "custom_days", "interval_days": 7, "start_date": today},
                "times_of_day": [{"hour": 18, "minute": 0}], "timezone": "UTC"}
        extra.append(create_alarm(login["token"], group_id, body)["id"])
    for d in (a, b):
        wait(d, lambda drv: len(drv.find_elements(By.CSS_SELECTOR, "#alarm-list > li.alarm")) == 6 or None, "six alarm cards")
        for button in d.find_elements(By.CSS_SELECTOR, "#alarm-list button.disclosure[aria-expanded=true]"):
            # centred first: a card at the top of the view lies under the sticky header (the order of the
            # cards follows their next fire, so where the rent's card is depends on the time of day)
            d.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
            button.click()
        wait(d, lambda drv: not drv.find_elements(By.CSS_SELECTOR, "#alarm-list button.disclosure[aria-expanded=true]") or None, "every card folded")
    heights = {}
    # A phone wraps a long title onto two lines and the state onto three, and how long the state is
    # depends on today's date ("answers open Friday, 18:00", "tomorrow, 06:30"): 176 px holds 2 + 3
    # lines on any day (152 px on a Saturday; each unfolded card was 700 px).
    for d, who, limit in ((a, "ana", 80), (b, "bea", 176)):
        cards = d.execute_script("return [...document.querySelectorAll('#alarm-list > li.alarm')].map((li) => li.getBoundingClientRect().height)")
        total = d.execute_script("return document.getElementById('alarm-list').getBoundingClientRect().height")
        heights[who] = (max(cards), total)
        assert max(cards) <= limit, f"{who}: a folded card is {max(cards)} px high (limit {limit})"
        assert total <= 6 * limit + 5 * 16, f"{who}: six alarms take {total} px"
        # every line says the state and has something to answer with or a mark that says why not
        for li in d.find_elements(By.CSS_SELECTOR, "#alarm-list > li.alarm"):
            assert li.find_elements(By.CSS_SELECTOR, ".alarm-status .state"), li.text
            assert li.find_elements(By.CSS_SELECTOR, "button.check, .check-mark"), li.text
    print(f"   six folded alarms: desktop {heights['ana'][1]:.0f} px (tallest card {heights['ana'][0]:.0f}), "
          f"phone {heights['bea'][1]:.0f} px (tallest {heights['bea'][0]:.0f})")
    axe_check(a, "group with six folded alarms", "ana")
    axe_check(b, "group with six folded alarms (phone)", "bea")
    shot(a, "compact-cards-desktop", "ana", "#alarms-h")
    shot(b, "compact-cards-phone", "bea", "#alarms-h")
    # details on demand: the button opens them in place and says so
    first = css(b, "#alarm-list > li.alarm").get_attribute("id")
    expand(b, first)
    wait_css(b, f"#{first} .alarm-details .schedule")
    assert css(b, f"#{first} button.disclosure").text == "Less"
    click(b, f"#{first} button.disclosure")
    gone(b, f"#{first} .alarm-details")
    for x in extra:
        assert http("DELETE", f"/v1/groups/{group_id}/alarms/{x}", token=login["token"])[0] == 204
    assert http("POST", "/v1/auth/logout", token=login["token"])[0] == 204
    for d in (a, b):
        wait(d, lambda drv: len(drv.find_elements(By.CSS_SELECTOR, "#alarm-list > li.alarm")) == 3 or None, "three alarm cards again")


def task_ids(d):
    # One script call, so a re-render between finding the cards and reading their ids (the page's
    # minute tick, a live change) cannot leave a stale element behind.
    return d.execute_script("return Array.from(document.querySelectorAll('#task-list li.task'), (li) => li.id);")


def my_tasks(a, b, group_id, alarm_id, stamp):
    """My tasks (/tasks): Bea's shared alarms across her groups (GET /v1/me/shared-alarms) with
    their state and group; a reload stays there (an app-shell route); the filters; an alarm created and
    deleted in the group shows and goes live; Bea marks the rent done from there and Ana's group page
    shows her answer live. Ana is on the group page, Bea on it too (both leave it as they found it)."""
    aid = alarm_id.removeprefix("alarm-")
    card = f"#task-{aid}"
    expand(a, alarm_id)
    wait_css(a, f"#{alarm_id} .progress", "0 of 2 answered")
    click(b, "#account-nav a[href='/tasks']")
    wait_css(b, "h1", "My tasks")
    assert b.current_url == f"{BASE}/tasks", b.current_url
    b.refresh()  # the server answers /tasks with the app shell
    wait_css(b, "h1", "My tasks")
    wait(b, connection_live, "Bea's realtime connection is live on /tasks")
    wait_css(b, f"{card} h2", "Pay the rent")
    wait_css(b, f"{card} .task-group", "Flat 4B")  # the group's name, from the user feed
    state = attr(b, card, "data-state")
    assert state in ("upcoming", "due", "overdue"), state
    # upcoming: "Upcoming · in 5 h", or 12 h and more ahead by its day: "Upcoming · tomorrow, 07:30"
    wait_css(b, f"{card} .state", {"upcoming": "Upcoming · ", "due": "Due now", "overdue": "Overdue "}[state])
    wait_css(b, f"{card} button.done", "Mark done")  # answerable (daily: inside the lead window) and Bea is pending
    assert attr(b, "#account-nav a[href='/tasks']", "aria-current") == "page"
    waiting = task_ids(b)
    axe_check(b, "my tasks (phone)", "bea")
    shot(b, "bea-my-tasks", "bea")

    # — filters: everything in the group (not only what waits for Bea), then only what is upcoming —
    # Two a page, so Bea's three alarms take a "Load more" (the next page from next_cursor, in order).
    b.execute_async_script("const done = arguments[0]; import('/js/tasks.js').then((m) => { m.paging.size = 2; done(); });")
    click(b, "label[for=tasks-assigned]")
    wait(b, lambda drv: len(task_ids(drv)) == 2 or None, "the first page of two")
    first_page = task_ids(b)
    click(b, "#tasks-more", "Load more")
    wait(b, lambda drv: len(task_ids(drv)) == 3 or None, "three alarms after Load more")
    assert task_ids(b)[:2] == first_page, (first_page, task_ids(b))
    gone(b, "#tasks-more")  # no next_cursor: that was all
    wait_css(b, "#task-list li.task:last-child", "Check the smoke alarm")  # April 2030: the last to fire
    wait_css(b, "#task-list li.task", "Water the plants")
    b.execute_async_script("const done = arguments[0]; import('/js/tasks.js').then((m) => { m.paging.size = 20; done(); });")
    smoke = wait_css(b, "#task-list li.task", "Check the smoke alarm")
    assert "Upcoming · in " in smoke.text, smoke.text  # April 2030
    click(b, "label[for=tasks-state-upcoming]")
    wait(b, lambda drv: all(li.get_attribute("data-state") == "upcoming" for li in drv.find_elements(By.CSS_SELECTOR, "#task-list li.task"))
         and "Check the smoke alarm" in css(drv, "#task-list").text or None, "only upcoming alarms listed")
    click(b, "label[for=tasks-state-all]")
    click(b, "label[for=tasks-assigned]")
    wait(b, lambda drv: task_ids(drv) == waiting or None, f"the list of what waits for Bea again: {waiting}")
    wait_css(b, f"{card} button.done")

    # — live: an alarm created in the group appears without a reload, and goes when it is deleted —
    status, login = http("POST", "/v1/auth/login", {"email": f"ana-{stamp}@example.com", "password": PASSWORD})
    assert status == 200, (status, login)
    bins = create_alarm(login["token"], group_id, {
        "title": "Take the bins out",
        "schedule": {"type": "custom_days", "interval_days": 1, "start_date": a.execute_script("return new Date().toISOString().slice(0, 10)")},
        "times_of_day": [{"hour": 20, "minute": 0}], "timezone": "UTC"})["id"]
    wait_css(b, f"#task-{bins}", "Take the bins out")
    assert http("DELETE", f"/v1/groups/{group_id}/alarms/{bins}", token=login["token"])[0] == 204
    assert http("POST", "/v1/auth/logout", token=login["token"])[0] == 204
    gone(b, f"#task-{bins}")

    # — Bea marks the rent done from My tasks; Ana's group page shows it within 2 s —
    click(b, f"{card} button.done", "Mark done")
    wait_css(b, "#flash", "Marked done: Pay the rent.")
    answered_at = time.monotonic()
    wait_css(a, f"#{alarm_id} .progress", "1 of 2 answered", timeout=LIVE_DEADLINE_S)
    wait_css(a, f"#{alarm_id} .progress li.answered", "Bea", timeout=LIVE_DEADLINE_S)
    print(f"   Ana saw Bea's answer from My tasks {(time.monotonic() - answered_at) * 1000:.0f} ms after Bea's page said so")
    gone(b, card)  # it no longer waits for her
    shot(b, "bea-my-tasks-answered", "bea")
    shot(a, "ana-sees-answer-from-my-tasks", "ana", "#alarms-h")
    click(b, "label[for=tasks-assigned]")  # with everything shown it is there, answered
    wait_css(b, card, "You have answered this occurrence.")
    click(b, "#account-nav a[href='/']")
    wait_css(b, "h1", "My groups")
    click(b, f"#group-{group_id} a")
    wait_css(b, "#group-head h1", "Flat 4B")


def issue21_left(a, b, group_id, stamp):
    """Issue 21's last items, each a step: an alarm's own colour and icon on its cards (3); the lead
    window set in the alarm form, pause until a day, resume, switch off and on — live on Bea's group
    page and My tasks (2); My tasks' filters in the address and its relative times drawn again on the
    minute tick (5); the group's activity history from the server after a reload (4). Ana is on the
    group page, Bea too; both end there."""
    status, login = http("POST", "/v1/auth/login", {"email": f"ana-{stamp}@example.com", "password": PASSWORD})
    assert status == 200, (status, login)
    today = a.execute_script("return new Date().toISOString().slice(0, 10)")
    hour = (a.execute_script("return new Date().getUTCHours()") + 6) % 24  # its next fire some 5–6 h ahead
    boiler = create_alarm(login["token"], group_id, {
        "title": "Check the boiler", "schedule": {"type": "custom_days", "interval_days": 1, "start_date": today},
        "times_of_day": [{"hour": hour, "minute": 0}], "timezone": "UTC", "color_tag": "#B00020", "icon_name": "wrench"})["id"]
    card = f"#alarm-{boiler}"

    # — 3: the alarm's own colour and icon on its card, on both pages —
    wait_css(a, f"{card} .alarm-title .alarm-badge", "🔧")
    wait_css(b, f"{card} .alarm-title .alarm-badge", "🔧")
    assert "176, 0, 32" in a.execute_script(
        f"return getComputedStyle(document.querySelector('{card} .alarm-badge')).borderTopColor"), "the alarm's colour"

    # — 2: the lead window and the icon from the alarm form —
    expand(a, f"alarm-{boiler}")
    click(a, f"[data-key=edit-{boiler}]")
    if REPRODUCE and css(a, "form.alarm-form input[name=answer_lead]") is None:  # an older client's field, in minutes
        fill(a, "form.alarm-form input[name=answer_lead_minutes]", "60")
    else:
        fill(a, "form.alarm-form input[name=answer_lead]", "1")  # in hours, sent as 60 minutes
        Select(css(a, "form.alarm-form select[name=answer_lead_unit]")).select_by_value("hours")
    Select(css(a, "form.alarm-form select[name=icon_name]")).select_by_value("leaf")
    axe_check(a, "alarm form with lead window, colour and icon", "ana")
    shot(a, "ana-alarm-form-lead-and-looks", "ana", "form.alarm-form")
    click_button(a, "Save changes")
    wait_css(a, f"{card} .fact-lead", "1 h before its time")
    wait_css(a, f"{card} .alarm-badge", "🌿")
    wait_css(b, f"{card} .alarm-badge", "🌿")
    wait_css(b, f"{card} .alarm-status", "answers open in")  # some 5 h ahead, answers open 1 h before

    # — 2: pause until a day three days on (the start of that day in the alarm's zone), live for Bea —
    day = a.execute_script("return new Date(Date.now() + 3 * 86400000).toISOString().slice(0, 10)")
    a.execute_script("const i = document.getElementById(arguments[0]); i.value = arguments[1];"
                     "i.dispatchEvent(new Event('input', { bubbles: true }));", f"pause-date-{boiler}", day)
    click(a, f"[data-key=pause-{boiler}]", "Pause")
    wait_css(a, "#flash", "Paused: Check the boiler.")
    wait_css(a, f"{card} .alarm-status .paused", "paused until")
    wait_css(a, f"{card} .fact-paused", "nothing rings or is due before then")
    status, doc = http("GET", f"/v1/groups/{group_id}/alarms/{boiler}", token=login["token"])
    assert status == 200 and doc["paused_until"].startswith(day), (status, doc.get("paused_until"))
    wait_css(b, f"{card} .alarm-status .paused", "paused until", timeout=LIVE_DEADLINE_S)
    wait_css(a, "#activity", "“Check the boiler” was paused until")  # live, on the page that paused it too
    wait_css(b, "#activity", "“Check the boiler” was paused until")
    axe_check(a, "group with a paused alarm and its controls", "ana")
    shot(a, "ana-alarm-paused", "ana", card)

    # Bea's My tasks says so too, with the alarm's icon
    click(b, "#account-nav a[href='/tasks']")
    wait_css(b, "h1", "My tasks")
    wait_css(b, f"#task-{boiler} .paused", "Paused until")
    wait_css(b, f"#task-{boiler} .alarm-badge", "🌿")
    axe_check(b, "my tasks with a paused alarm (phone)", "bea")
    shot(b, "bea-my-tasks-paused", "bea")
    click(a, f"[data-key=resume-{boiler}]", "Resume now")
    wait_css(a, "#flash", "Resumed: Check the boiler.")
    gone(a, f"{card} .alarm-status .paused")
    gone(b, f"#task-{boiler} .paused")  # live: My tasks fetched the list again
    click(a, f"[data-key=disable-{boiler}]", "Switch off")
    click(a, f"[data-key=disable-{boiler}]", "Confirm")
    wait_css(a, f"{card} .state-off", "Switched off")
    gone(b, f"#task-{boiler}")  # no next fire: not a task
    click(a, f"[data-key=enable-{boiler}]", "Switch on")
    wait_css(b, f"#task-{boiler}", "Check the boiler")

    # — 5: the filters live in the address; a reload keeps them —
    click(b, "label[for=tasks-state-upcoming]")
    wait(b, lambda drv: drv.current_url == f"{BASE}/tasks?state=upcoming" or None, "the state filter in the address")
    click(b, "label[for=tasks-assigned]")
    wait(b, lambda drv: drv.current_url == f"{BASE}/tasks?state=upcoming&assigned=all" or None, "both filters in the address")
    b.refresh()
    wait_css(b, "h1", "My tasks")
    wait_css(b, f"#task-{boiler}", "Check the boiler")
    assert css(b, "#tasks-state-upcoming").is_selected() and not css(b, "#tasks-assigned").is_selected()
    click(b, "label[for=tasks-state-all]")
    click(b, "label[for=tasks-assigned]")
    wait(b, lambda drv: drv.current_url == f"{BASE}/tasks" or None, "no filter in the address")
    # — 5: relative times move on with the clock (the tick made short; the page's clock moved 2 h on) —
    b.execute_async_script("const done = arguments[0]; import('/js/tasks.js').then((m) => { m.ticking.ms = 500; done(); });")
    click(b, "#account-nav a[href='/']")
    wait_css(b, "h1", "My groups")
    click(b, "#account-nav a[href='/tasks']")
    before = wait_css(b, f"#task-{boiler} .state", "Upcoming · in ").text
    b.execute_script("window.realNow = window.realNow || Date.now; Date.now = () => window.realNow() + 2 * 3600 * 1000;")
    after = wait(b, lambda drv: (t := css(drv, f"#task-{boiler} .state").text) != before and t, "the relative time drawn again")
    print(f"   My tasks' tick: {before!r} → {after!r}")
    b.execute_script("Date.now = window.realNow;")
    b.execute_async_script("const done = arguments[0]; import('/js/tasks.js').then((m) => { m.ticking.ms = 60000; done(); });")

    # — 4: the activity history: after a reload Bea's group page still tells what happened before —
    b.get(f"{BASE}/groups/{group_id}")
    wait_css(b, "#group-head h1", "Flat 4B")
    wait(b, connection_live, "Bea's realtime connection is live")
    wait_css(b, "#activity li.event.past", "“Check the boiler” was created by Ana")  # who did it, from the history's actor
    for words in ("was paused until", "was resumed", "was switched off", "was switched on"):  # the controls, in words
        wait_css(b, "#activity li.event.past", f"“Check the boiler” {words}")
    for _ in range(6):  # Cy came and went earlier: further back, behind "Show earlier activity"
        if "Cy joined the group" in css(b, "#activity").text:
            break
        click(b, "#activity-more", "Show earlier activity")
        time.sleep(0.3)
    wait_css(b, "#activity li.event.past", "Cy joined the group")
    wait_css(b, "#activity li.event.past", "Cy left the group")
    axe_check(b, "group with its activity history (phone)", "bea")
    shot(b, "bea-activity-history", "bea", "#activity-h")
    assert http("DELETE", f"/v1/groups/{group_id}/alarms/{boiler}", token=login["token"])[0] == 204
    assert http("POST", "/v1/auth/logout", token=login["token"])[0] == 204
    gone(a, card)
    gone(b, card)


def active(d):
    """What has keyboard focus: {tag, key, id, card} (card: the alarm card it is in), or None for <body>."""
    return d.execute_script("""
        const el = document.activeElement;
        if (!el || el === document.body) return null;
        const card = el.closest('li.alarm');
        return { tag: el.tagName.toLowerCase(), key: el.dataset.key || null, id: el.id || null, card: card ? card.id : null };""")


def focus_is(d, what, check, timeout=STEP_TIMEOUT_S):
    """Waits until focus satisfies `check` (given `active(d)`); never <body>."""
    return wait(d, lambda drv: (f := active(drv)) is not None and check(f) and f, f"focus {what} (is {active(d)})", timeout)


def issue33_web(a, b, group_id, stamp):
    """Issue 33's web items, a step each that a script can see. Ana (desktop) and Bea (phone) are on the
    group page; both end there. 12: the alarm form (Daily by default, Add a time proposes a free
    time, windows in days and hours) and "0 of 2 answered" not said of an "any" alarm; 14: focus after
    Cancel, Create, ✓ and navigation, never on <body>; 13: Enter in the note answers; 3/13: a double tap
    on ✓ sends one answer (the second tap lands on a ✓ drawn again while the first is on its way);
    10: a message shows in the viewport where the action was and goes with the next action; 11: My
    tasks follows a group's rename live; 14: on the phone the sticky header is one line, every touch
    target is at least 44 px each way, and Back restores the scroll position."""
    g = f"/v1/groups/{group_id}"
    wait_css(a, "#group-head h1", "Flat 4B")
    wait_css(b, "#group-head h1", "Flat 4B")

    # — 12: the form's defaults —
    click_button(a, "New alarm")
    wait_css(a, "form.alarm-form")

    def form_defaults():
        assert Select(css(a, "form.alarm-form select[name=schedule_type]")).first_selected_option.get_attribute("value") == "daily"
        times = lambda: a.execute_script("return [...document.querySelectorAll('form.alarm-form input[type=time]')].map((i) => i.value)")  # noqa: E731
        assert times() == ["09:00"], times()
        click_button(a, "Add a time")
        assert times() == ["09:00", "10:00"], f"Add a time proposes the next free hour: {times()}"
        for name in ("answer_lead", "grace"):
            amount = css(a, f"form.alarm-form input[name={name}]").get_attribute("value")
            unit = Select(css(a, f"form.alarm-form select[name={name}_unit]")).first_selected_option.get_attribute("value")
            assert (amount, unit) == ("1", "days"), (name, amount, unit)
    bug("33.12", "the form: Daily at 09:00 by default, Add a time proposes 10:00, windows of 1 day", form_defaults)
    # — 14: Cancel puts focus back on what opened the form —
    click_button(a, "Cancel")
    bug("33.14", "focus on New alarm after Cancel", lambda: focus_is(a, "on New alarm after Cancel", lambda f: f["key"] == "new-alarm", timeout=3))
    # — 14: Create puts focus on the new card (rule `all`: both answer, so both can below) —
    click_button(a, "New alarm")
    fill(a, "form.alarm-form input[name=title]", "Take out the bins")
    if REPRODUCE and not a.find_elements(By.CSS_SELECTOR, "form.alarm-form select[name=schedule_type] option[value=daily]"):
        Select(css(a, "form.alarm-form select[name=schedule_type]")).select_by_value("custom_days")  # an older form: every 1 day
        fill(a, "form.alarm-form input[name=interval_days]", "1")
    css(a, "form.alarm-form input[type=radio][value=all]").find_element(By.XPATH, "following-sibling::label").click()
    deadline = time.monotonic() + 75  # alarm creation is limited to 5 a minute: wait out a refusal
    while True:
        click_button(a, "Create alarm")
        made = wait(a, lambda drv: (c := css(drv, "#alarm-list li.alarm[id]")) is not None and (
            [x.get_attribute("id") for x in drv.find_elements(By.CSS_SELECTOR, "#alarm-list li.alarm") if "Take out the bins" in x.text]
            or (css(drv, "form.alarm-form .error") and css(drv, "form.alarm-form .error").text) or None), "the bins alarm or a refusal")
        if isinstance(made, list) or time.monotonic() > deadline:
            break
        time.sleep(5)
    assert isinstance(made, list), made
    bins = made[0]
    bug("33.14", "focus on the new card after Create",
        lambda: focus_is(a, "on the new card's Details", lambda f: f["key"] == f"more-{bins.removeprefix('alarm-')}", timeout=3))

    # — 12: an `any` alarm does not say "0 of 2 answered" —
    alarms = page_api(a, "GET", f"{g}/alarms")["body"]["alarms"]
    anyone = next(x for x in alarms if x["completion_rule"] == "any" and x.get("occurrence") and not (x["occurrence"].get("answered") or []))

    def any_rule():
        status = wait_css(a, f"#alarm-{anyone['id']} .alarm-status").text
        assert "answered" not in status and "closes it" in status, status
    bug("33.12", "an any-rule card does not say '0 of 2 answered'", any_rule)

    # — 13: Enter in the note answers (Bea, phone) —
    expand(b, bins)
    fill(b, f"#{bins} input.note-input", "Bins out")
    css(b, f"#{bins} input.note-input").send_keys(Keys.ENTER)

    def enter_answers():
        wait_css(b, f"#{bins} .progress", "1 of 2 answered", timeout=5)
        wait_css(a, f"#{bins} .alarm-status", "1 of 2 answered")  # Ana's page, live
    bug("33.13", "Enter in the note sends the answer with its note", enter_answers)

    # — 3/13: a double tap on ✓ sends one answer, even when the page is drawn again in between —
    a.execute_script("""
        const real = window.fetch;
        let release;
        const held = new Promise((r) => { release = r; });
        window.__e2e = { posts: 0, release, real };
        window.fetch = function (url, init) {
          if (init && init.method === 'POST' && String(url).includes('/completions')) { window.__e2e.posts += 1; return held.then(() => real.call(this, url, init)); }
          return real.call(this, url, init);
        };""")
    check = f"#{bins} [data-key=done-{bins.removeprefix('alarm-')}]"
    click(a, check)
    a.execute_script("document.querySelector(arguments[0]).classList.add('e2e-first')", check)
    # Bea mutes the group and unmutes it: two live changes, each draws Ana's page again
    for on in (False, True):
        assert page_api(b, "PATCH", f"{g}/membership", {"notification_enabled": on})["status"] == 200
    wait(a, lambda drv: (el := css(drv, check)) is not None and "e2e-first" not in (el.get_attribute("class") or "") or None,
         "Ana's ✓ drawn again while her answer is on its way")
    # — 14: focus stays in the card through the redraw (on the ✓ drawn again, or, while that one is
    # disabled, the card's next control), never on <body> —
    bug("33.14", "focus stays in the card while the answer is on its way", lambda: focus_is(a, "in the card", lambda f: f["card"] == bins, timeout=3))
    second = css(a, check)
    try:
        second.click()  # the second tap
    except Exception:  # noqa: BLE001 — a disabled button may refuse the click: that is the point
        pass
    posts = a.execute_script("return window.__e2e.posts")
    disabled = a.execute_script("const el = document.querySelector(arguments[0]); return el ? el.disabled : null", check)
    if REPRODUCE:
        expect_failed_request("/completions", 409)  # the old client's second answer, refused by the server
    a.execute_script("window.__e2e.release(); window.fetch = window.__e2e.real;")

    def one_answer():
        assert posts == 1, f"a double tap sent {posts} answers"
        assert disabled is True, "the ✓ drawn again while the answer is on its way is disabled"
    bug("33.13", "a double tap on ✓ with a redraw between sends one answer", one_answer)
    wait(a, lambda drv: len([c for c in page_api(drv, "GET", f"{g}/alarms/{bins.removeprefix('alarm-')}/completions")["body"]["completions"]
                             if c["completed_by_name"] == "Ana"]) == 1 or None, "one answer of Ana's on the server")
    # after the answer the card is drawn again: focus is somewhere, never on <body> (the second tap on a
    # disabled ✓ put it on <main>, the nearest focusable ancestor, as a browser does)
    bug("33.14", "focus is not lost to <body> after the answer", lambda: focus_is(a, "not on <body>", lambda f: True, timeout=3))

    # — 3: Undo beside "Marked done" takes Ana's answer back: the occurrence it closed opens again —
    def undo():
        click(a, "#flash button[data-key=undo-answer]")
        wait_css(a, "#flash", "taken back", timeout=5)
        alarm = page_api(a, "GET", f"{g}/alarms/{bins.removeprefix('alarm-')}")["body"]
        assert alarm["occurrence"]["status"] == "open" and len(alarm["occurrence"]["answered"]) == 1, alarm["occurrence"]
        mine = [c for c in page_api(a, "GET", f"{g}/alarms/{bins.removeprefix('alarm-')}/completions")["body"]["completions"]
                if c["completed_by_name"] == "Ana"]
        assert len(mine) == 1 and mine[0]["withdrawn_at"], mine
        wait_css(a, f"#{bins} .alarm-status", "1 of 2 answered")
    bug("33.3", "Undo takes the answer back and the occurrence opens again", undo)

    # — 10: a message appears where the person is (phone, far down the page) and goes with the next action —
    import tempfile
    fake = os.path.join(tempfile.mkdtemp(prefix="chronir-att-"), "shopping-list.png")
    with open(fake, "w") as f:
        f.write("milk, eggs, bread\n")  # text, not a picture: the server refuses it (415)
    # Bea's own answer in the activity list, below the alarms and the members, takes a photo
    upload = wait_css(b, "#activity input[type=file]")
    b.execute_script("arguments[0].scrollIntoView({block: 'center'})", upload)
    expect_failed_request("/attachments", 415)
    upload.send_keys(fake)
    msg = wait_css(b, "#flash .flash.error")
    box = b.execute_script("const r = document.querySelector('#flash .flash').getBoundingClientRect(); return [r.top, r.bottom, innerHeight, scrollY];")
    b.save_screenshot(os.path.join(SHOTS, "issue33-message-in-view.png"))  # as the phone shows it, not scrolled by shot()
    print(f"   the refusal {msg.text.splitlines()[0]!r} at {box[0]:.0f}–{box[1]:.0f} px of {box[2]} (page scrolled {box[3]} px)")

    def in_view():
        assert box[3] > 300, f"the upload field is far down the page (scrollY {box[3]})"
        assert 0 <= box[0] and box[1] <= box[2], f"the refusal is in the viewport: top {box[0]}, bottom {box[1]}, viewport {box[2]}"
    bug("33.10", "a refusal far down the phone's page shows in the viewport", in_view)
    # "The group is saved." goes when Ana saves an alarm next
    click(a, "#edit-group")
    click_button(a, "Save group")
    wait_css(a, "#flash", "The group is saved.")
    expand(a, bins)
    click(a, f"[data-key=edit-{bins.removeprefix('alarm-')}]")
    wait_css(a, "form.alarm-form")
    click_button(a, "Save changes")
    gone(a, "form.alarm-form")

    def cleared():
        assert not a.execute_script("return document.getElementById('flash').textContent.trim()"), "the earlier message went with the next action"
    bug("33.10", "'The group is saved.' goes when an alarm is saved next", cleared)

    # — 14: the phone's header is one line, and every touch target is at least 44 px each way —
    b.execute_script("window.scrollTo(0, 0)")
    def measure(d):
        return d.execute_script("""
            const small = [];
            const sel = 'main button, main select, main input:not([type=checkbox]):not([type=radio]):not([type=hidden]), main summary, '
              + 'main .crumbs a, #account-nav a, #account-nav button, header.top a.brand, #flash button';
            for (const el of document.querySelectorAll(sel)) {
              const r = el.getBoundingClientRect();
              if (!r.width || !r.height) continue;
              if (r.width < 43.5 || r.height < 43.5) small.push(`${el.tagName.toLowerCase()} ${JSON.stringify((el.textContent || el.name || el.type || '').trim().slice(0, 30))} ${Math.round(r.width)}×${Math.round(r.height)}`);
            }
            for (const el of document.querySelectorAll('main input[type=checkbox], main input[type=radio]')) {
              const box = el.closest('.check') || el.parentElement;
              const r = box.getBoundingClientRect();
              if (r.width && r.height < 43.5) small.push(`${el.type} ${JSON.stringify(box.textContent.trim().slice(0, 30))} ${Math.round(r.width)}×${Math.round(r.height)}`);
            }
            const top = document.querySelector('header.top');
            const parts = [...top.children].filter((c) => c.getClientRects().length).map((c) => { const r = c.getBoundingClientRect(); return (r.top + r.bottom) / 2; });
            return { small, header: top.getBoundingClientRect().height, centres: parts };""")
    for where in ("group", "tasks"):
        if where == "tasks":
            click(b, "#account-nav a[href='/tasks']")
            wait_css(b, "h1", "My tasks")
            wait_css(b, "#task-list li")
        else:
            expand(b, bins)
        m = measure(b)
        print(f"   {where} page on the phone: header {m['header']:.0f} px, {len(m['small'])} targets under 44 px")

        def targets():
            assert not m["small"], f"touch targets under 44 px on the phone's {where} page: {m['small']}"
            assert max(m["centres"]) - min(m["centres"]) < 6 and m["header"] < 60, f"the phone's header is not one line: {m}"
        bug("33.14", f"the phone's {where} page: a one-line header, every touch target at least 44 px", targets)
    shot(b, "issue33-phone-header-and-targets", "bea")

    # — 11: My tasks follows a rename of the group live —
    b.get(BASE + "/tasks?assigned=all")
    wait_css(b, "h1", "My tasks")
    wait(b, connection_live, "Bea's connection is live on /tasks")
    wait_css(b, f"#task-{bins.removeprefix('alarm-')} .task-group", "Flat 4B")
    for name in ("Flat 4B & garden", "Flat 4B"):
        version = page_api(a, "GET", g)["body"]["group"]["version"]
        assert page_api(a, "PATCH", g, {"name": name, "version": version})["status"] == 200
        bug("33.11", f"My tasks says the group's new name {name!r} live", lambda: wait(
            b, lambda drv: (el := css(drv, f"#task-{bins.removeprefix('alarm-')} .task-group")) is not None and el.text.strip().endswith(name) or None,  # after the group's badge
            f"Bea's My tasks says the group's new name {name!r}", timeout=5))

    # — 14: navigation puts focus on the page's heading; Back restores where the page was scrolled —
    b.get(f"{BASE}/groups/{group_id}")
    wait_css(b, "#group-head h1", "Flat 4B")
    wait(b, connection_live, "Bea's connection is live")
    b.execute_script("document.getElementById('members-h').scrollIntoView({block: 'start'})")
    y = b.execute_script("return scrollY")
    assert y > 300, y
    b.execute_script("document.querySelector(\"#account-nav a[href='/tasks']\").click()")  # a script's click: no scrolling first
    wait_css(b, "h1", "My tasks")
    bug("33.14", "focus on the heading after navigation", lambda: focus_is(b, "on My tasks' heading after navigation", lambda f: f["tag"] == "h1", timeout=3))
    b.back()
    wait_css(b, "#group-head h1", "Flat 4B")
    bug("33.14", f"Back restores the scroll position ({y} px)", lambda: wait(
        b, lambda drv: abs(drv.execute_script("return scrollY") - y) < 8 or None, f"Back restores the scroll position {y}", timeout=5))
    bug("33.14", "focus on the heading after Back", lambda: focus_is(b, "on the group's heading after Back", lambda f: f["tag"] == "h1", timeout=3))
    b.execute_script("window.scrollTo(0, 0)")


def small_png(path, width=64, height=48):
    """Writes a real PNG (an RGB gradient, zlib-compressed) of width × height to `path`."""
    import struct
    import zlib
    rows = b"".join(b"\x00" + bytes(v for x in range(width) for v in (x * 4 % 256, y * 5 % 256, 160)) for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def attachments(a, b, group_id, alarm_id):
    """Ana adds a real PNG to the rent from the card's details: its thumbnail shows, opens the lightbox
    (a modal dialog with the whole photo), Bea sees it in her card's details, and Ana removes it."""
    import tempfile
    aid = alarm_id.removeprefix("alarm-")
    png = os.path.join(tempfile.mkdtemp(prefix="chronir-att-"), "new-filter.png")
    small_png(png)
    expand(a, alarm_id)
    expand(b, alarm_id)  # Bea's card is open before the upload: the photo reaches it live
    wait_css(a, f"#{alarm_id} .att-empty", "No photos or files yet.")
    wait_css(b, f"#{alarm_id} .att-empty", "No photos or files yet.")
    wait_css(a, f"#{alarm_id} input[type=file]").send_keys(png)
    wait_css(a, "#flash", "Added new-filter.png to “Pay the rent”.")
    thumb = wait(a, lambda drv: (img := css(drv, f"#{alarm_id} .attachments img")) and img.get_attribute("src").startswith("data:image/jpeg") and img or None,
                 "the thumbnail (a JPEG from the server)")
    assert a.execute_script("return arguments[0].naturalWidth", thumb) > 0
    listed = page_api(a, "GET", f"/v1/groups/{group_id}/alarms/{aid}/attachments")["body"]["attachments"]
    assert len(listed) == 1 and listed[0]["file_type"] == "image/png" and (listed[0]["width"], listed[0]["height"]) == (64, 48), listed
    axe_check(a, "group with an attachment", "ana")
    shot(a, "attachment-added", "ana", f"#{alarm_id}")

    # the lightbox: the whole photo in a modal dialog; Escape closes it and focus returns to the thumbnail
    click(a, f"#{alarm_id} button.att-open")
    wait_css(a, "dialog.lightbox[open] img")
    size = a.execute_script("const i = document.querySelector('dialog.lightbox img'); return [i.naturalWidth, i.naturalHeight, i.src.slice(0, 15)]")
    assert size == [64, 48, "data:image/png;"], size
    assert "added by Ana" in css(a, "dialog.lightbox figcaption").text
    axe_check(a, "lightbox", "ana")
    shot(a, "attachment-lightbox", "ana")
    ActionChains(a).send_keys(Keys.ESCAPE).perform()
    gone(a, "dialog.lightbox")
    wait(a, lambda drv: "att-open" in (drv.switch_to.active_element.get_attribute("class") or "") or None, "focus back on the thumbnail")

    # another member sees it in the card's details, live (an `attachment` change on the group's topic)
    wait(b, lambda drv: (img := css(drv, f"#{alarm_id} .attachments img")) and img.get_attribute("src").startswith("data:image/jpeg") or None,
         "Bea's thumbnail")
    assert css(b, f"#{alarm_id} .attachment [data-key^=att-remove-]") is None  # not hers, and she is a member
    shot(b, "attachment-seen-by-bea", "bea", f"#{alarm_id}")

    # removed by its uploader (two presses), gone from the page and the server
    click(a, f"#{alarm_id} [data-key^=att-remove-]")
    click(a, f"#{alarm_id} [data-key^=att-remove-]", "Confirm")
    wait_css(a, f"#{alarm_id} .att-empty", "No photos or files yet.")
    wait_css(b, f"#{alarm_id} .att-empty", "No photos or files yet.")  # gone from Bea's page live too
    assert page_api(a, "GET", f"/v1/groups/{group_id}/alarms/{aid}/attachments")["body"]["attachments"] == []


def answer_photo(a, b, group_id):
    """Ana adds a photo to the answer she just gave ("the new filter"), from the activity list: only she
    may (her answer alone has the file input), and Bea sees the thumbnail live and opens it in the lightbox."""
    import tempfile
    png = os.path.join(tempfile.mkdtemp(prefix="chronir-att-"), "new-filter.png")
    small_png(png)
    mine = wait(a, lambda drv: next((li for li in drv.find_elements(By.CSS_SELECTOR, "#activity li[id^=completion-]")
                                     if li.text.startswith("Ana") and li.find_elements(By.CSS_SELECTOR, "input[type=file]")), None),
                "Ana's answer with its file input")
    cid = mine.get_attribute("id")
    mine.find_element(By.CSS_SELECTOR, "input[type=file]").send_keys(png)
    wait_css(a, "#flash", "Added new-filter.png to your answer to “Pay the rent”.")
    wait(a, lambda drv: (img := css(drv, f"#{cid} .attachments img")) and img.get_attribute("src").startswith("data:image/jpeg") or None,
         "the thumbnail on Ana's answer")
    listed = page_api(a, "GET", f"/v1/groups/{group_id}/completions/{cid.removeprefix('completion-')}/attachments")["body"]["attachments"]
    assert len(listed) == 1 and listed[0]["owner_kind"] == "shared_completion", listed
    # Bea: the thumbnail arrives live (an `attachment` change), no file input or Remove on Ana's answer
    wait(b, lambda drv: (img := css(drv, f"#{cid} .attachments img")) and img.get_attribute("src").startswith("data:image/jpeg") or None,
         "Bea sees the thumbnail on Ana's answer")
    assert css(b, f"#{cid} input[type=file]") is None and css(b, f"#{cid} [data-key^=att-remove-]") is None
    click(b, f"#{cid} button.att-open")
    wait_css(b, "dialog.lightbox[open] img")
    assert "Ana’s answer to “Pay the rent”, added by Ana" in css(b, "dialog.lightbox figcaption").text
    axe_check(b, "answer with a photo, lightbox", "bea")
    shot(b, "answer-photo-seen-by-bea", "bea")
    ActionChains(b).send_keys(Keys.ESCAPE).perform()
    gone(b, "dialog.lightbox")
    axe_check(a, "answer with a photo", "ana")
    shot(a, "answer-photo-added", "ana", f"#{cid}")


def appearance(a, group_id):
    """Installable (the manifest and its icons) and dark mode (prefers-color-scheme), checked by axe there too."""
    href = a.execute_script("const l = document.querySelector('link[rel=manifest]'); return l && l.getAttribute('href')")
    assert href == "/manifest.webmanifest", href
    with urllib.request.urlopen(BASE + href, timeout=STEP_TIMEOUT_S) as r:
        assert r.headers["Content-Type"].startswith("application/manifest+json"), r.headers["Content-Type"]
        manifest = json.load(r)
    assert manifest["name"] == "Chronir" and manifest["start_url"] == "/" and manifest["display"] == "standalone", manifest
    for icon in manifest["icons"]:
        with urllib.request.urlopen(BASE + icon["src"], timeout=STEP_TIMEOUT_S) as r:
            assert r.status == 200 and r.headers["Content-Type"] == icon["type"], (icon, r.headers["Content-Type"])
    # the service worker keeps the app shell for when the network is gone (and never the API)
    def shell_cached(drv):
        kept = drv.execute_async_script("""
            const done = arguments[0];
            caches.open('chronir-shell-v2').then((c) => c.keys()).then((ks) => done(ks.map((k) => new URL(k.url).pathname)), (e) => done([String(e)]));""")
        return (all(p in kept for p in ("/index.html", "/app.css", "/js/app.js", "/js/group.js", "/js/group-alarms.js", "/js/attachments.js")) and kept) or None
    kept = wait(a, shell_cached, "the app shell in the service worker's cache")
    assert not any(p.startswith("/v1/") for p in kept), kept

    def background():
        return a.execute_script("return getComputedStyle(document.documentElement).backgroundColor")
    light = background()
    a.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        wait(a, lambda drv: background() != light or None, "a dark background")
        rgb = [int(x) for x in background().removeprefix("rgb(").rstrip(")").split(",")[:3]]
        assert sum(rgb) < 3 * 60, f"dark mode background {rgb}"
        axe_check(a, "my groups (dark)", "ana")
        shot(a, "dark-my-groups", "ana")
        click(a, f"#group-{group_id} a")
        wait_css(a, "#group-head h1", "Flat 4B")
        wait_css(a, "li.alarm")
        axe_check(a, "group (dark)", "ana")
        shot(a, "dark-group", "ana", "#alarms-h")
    finally:
        a.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    click(a, "#account-nav a[href='/']")
    wait_css(a, "h1", "My groups")


def offline(a, group_id, alarm_id, stamp):
    """The network goes away (DevTools' offline emulation: no HTTP, the socket cut): the header says so at
    once, a note stays in view and the page's actions are paused, but an answer is queued on this device;
    back online, the socket proves itself, the actions return and the queued answer is sent, with a note
    that says so."""
    click(a, f"#group-{group_id} a")
    wait_css(a, "#group-head h1", "Flat 4B")
    wait(a, connection_live, "Ana's connection is live")
    a.execute_cdp_cmd("Network.enable", {})
    a.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    try:
        wait_css(a, "#connection[data-state=offline]", "Offline")
        wait_css(a, "#offline-note", "You are offline")
        wait(a, lambda drv: not css(drv, "[data-key=new-alarm]").is_enabled() or None, "New alarm paused while offline")
        # an answer made offline is kept on this device (outbox.js), not sent and not lost
        wait_css(a, f"#{alarm_id} .alarm-status", "1 of 2 answered")  # Bea answered from My tasks; Ana has not
        expand(a, alarm_id)
        fill(a, f"#{alarm_id} input.note-input", "Paid offline")
        click(a, f"#{alarm_id} button.done")
        wait_css(a, f"#{alarm_id} .check-mark.queued")
        wait_css(a, f"#{alarm_id} .alarm-status", "Marked done: Pay the rent: waiting to be sent")
        wait_css(a, "#outbox-status", "1 action waiting to be sent")
        wait_css(a, "#flash", "is kept on this device")
        assert not css(a, "[data-key=new-alarm]").is_enabled(), "a re-render while offline keeps the other actions paused"
        stored = a.execute_script("return JSON.parse(localStorage.getItem('chronir.outbox'))")
        assert len(stored) == 1 and stored[0]["body"]["status"] == "completed" and stored[0]["body"]["note"] == "Paid offline", stored
        axe_check(a, "group (offline)", "ana")
        shot(a, "offline-answer-queued", "ana")
    finally:
        a.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    wait(a, connection_live, "Ana's connection is live again")
    gone(a, "#offline-note")
    wait(a, lambda drv: css(drv, "[data-key=new-alarm]").is_enabled() or None, "New alarm back")
    # back online: the queue is sent, the page says so, the server has the answer with its note
    wait_css(a, "#flash", "Sent now that the connection is back: Marked done: Pay the rent (made offline at")
    gone(a, "#outbox-status")
    gone(a, f"#{alarm_id} .check-mark.queued")
    wait_css(a, f"#{alarm_id} .previous", "Bea done, Ana done")  # Ana's answer closed that occurrence (rule all)
    assert a.execute_script("return localStorage.getItem('chronir.outbox')") is None
    history = page_api(a, "GET", f"/v1/groups/{group_id}/alarms/{alarm_id.removeprefix('alarm-')}/completions?limit=5")["body"]["completions"]
    assert any(c["note"] == "Paid offline" and c["status"] == "completed" for c in history), history
    shot(a, "offline-queue-sent", "ana", "#alarms-h")

    # My tasks queues its Mark done the same way (an alarm made for it: daily, two hours from now, so
    # answerable inside the lead window at any time of day)
    status, login = http("POST", "/v1/auth/login", {"email": f"ana-{stamp}@example.com", "password": PASSWORD})
    assert status == 200, (status, login)
    soon = a.execute_script("const d = new Date(Date.now() + 2 * 3600 * 1000); return [d.toISOString().slice(0, 10), d.getUTCHours()]")
    cat = create_alarm(login["token"], group_id, {
        "title": "Feed the cat", "schedule": {"type": "custom_days", "interval_days": 1, "start_date": soon[0]},
        "times_of_day": [{"hour": soon[1], "minute": 0}], "timezone": "UTC"})["id"]
    click(a, "#account-nav a[href='/tasks']")
    wait_css(a, "h1", "My tasks")
    wait_css(a, f"#task-{cat} button.done")
    wait(a, connection_live, "Ana's connection is live on My tasks")
    a.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    try:
        wait_css(a, "#connection[data-state=offline]", "Offline")
        click(a, f"#task-{cat} button.done")
        wait_css(a, f"#task-{cat} .queued-note", "Marked done: Feed the cat: waiting to be sent.")
        wait_css(a, "#outbox-status", "1 action waiting to be sent")
    finally:
        a.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})
    wait_css(a, "#flash", "Sent now that the connection is back: Marked done: Feed the cat")
    gone(a, "#outbox-status")
    gone(a, f"#task-{cat} .queued-note")
    done = page_api(a, "GET", f"/v1/groups/{group_id}/alarms/{cat}/completions?limit=5")["body"]["completions"]
    assert [c["status"] for c in done] == ["completed"], done
    assert http("DELETE", f"/v1/groups/{group_id}/alarms/{cat}", token=login["token"])[0] == 204
    assert http("POST", "/v1/auth/logout", token=login["token"])[0] == 204
    click(a, "#account-nav a[href='/']")
    wait_css(a, "h1", "My groups")


def settings(a, stamp):
    """Ana's settings page: zone, sessions (one signed out, then all others), password, synced settings."""
    email = f"ana-{stamp}@example.com"
    status, other = http("POST", "/v1/auth/login", {"email": email, "password": PASSWORD})
    assert status == 200, (status, other)
    click(a, "#account-nav a[href='/settings']")
    wait_css(a, "h1", "Settings")
    title_is(a, "Settings · Chronir")
    wait(a, lambda drv: len(drv.find_elements(By.CSS_SELECTOR, "#session-list li.session")) == 2 or None, "two sessions listed")
    wait_css(a, "#session-list li.session", "this browser")
    wait_css(a, "#synced-settings input[name=use_24_hour_format]")
    axe_check(a, "settings", "ana")
    shot(a, "settings", "ana")

    # the zone: search, pick, save; the server has it
    zone_options = a.execute_script("return [...document.querySelectorAll('#profile select[name=timezone] option')].map((o) => o.value)")
    assert zone_options[0] == "UTC" and "Asia/Calcutta" not in zone_options, zone_options[:3]
    fill(a, "#profile input.zone-search", "berlin")
    assert Select(css(a, "#profile select[name=timezone]")).first_selected_option.get_attribute("value") == "Europe/Berlin"
    click_button(a, "Save profile")
    wait_css(a, "#profile-status", "Saved.")
    assert page_api(a, "GET", "/v1/me")["body"]["timezone"] == "Europe/Berlin"

    # sessions: sign the other one out, then everywhere else
    click(a, "#session-list li.session button", "Sign out")
    click(a, "#session-list li.session button", "Confirm")
    wait(a, lambda drv: len(drv.find_elements(By.CSS_SELECTOR, "#session-list li.session")) == 1 or None, "one session left")
    assert http("GET", "/v1/me", token=other["token"])[0] == 401
    status, third = http("POST", "/v1/auth/login", {"email": email, "password": PASSWORD})
    assert status == 200
    a.refresh()
    wait(a, lambda drv: len(drv.find_elements(By.CSS_SELECTOR, "#session-list li.session")) == 2 or None, "two sessions again")
    click(a, "#revoke-others")
    wait_css(a, "#sessions-status", "1 other session was signed out.")
    assert http("GET", "/v1/me", token=third["token"])[0] == 401

    # password: a wrong current one is said plainly; then changed, the new one signs in
    expect_failed_request("/v1/me/password", 401)
    fill(a, "#password input[name=current_password]", "not my password")
    fill(a, "#password input[name=new_password]", PASSWORD + " staple")
    click_button(a, "Change password")
    wait_css(a, "#password .error", "Your current password is not right.")
    fill(a, "#password input[name=current_password]", PASSWORD)
    fill(a, "#password input[name=new_password]", PASSWORD + " staple")
    click_button(a, "Change password")
    wait_css(a, "#password-status", "Password changed.")
    assert http("POST", "/v1/auth/login", {"email": email, "password": PASSWORD + " staple"})[0] == 200
    wait(a, connection_live, "Ana's connection stays live after her own password change")

    # synced settings
    box = css(a, "#synced-settings input[name=use_24_hour_format]")
    before = box.is_selected()
    assert before is False, "the default is the language's own clock, stored as false"
    box.click()
    fill(a, "#synced-settings input[name=default_snooze_minutes]", "15")
    click_button(a, "Save preferences")
    wait_css(a, "#settings-status", "Saved.")
    saved = page_api(a, "GET", "/v1/me/settings")["body"]
    assert saved["use_24_hour_format"] is (not before) and saved["default_snooze_minutes"] == 15 and saved["version"] >= 1, saved
    assert css(a, "#push-settings #push-switch") is not None  # this browser's notifications, linked here
    shot(a, "settings-saved", "ana", "#synced-settings")


def my_alarms(a, b, stamp):
    """Ana's personal alarms with the shared form; a change from another device shows live; Bea, made a
    free account, reads and is told why she cannot write."""
    click(a, "#account-nav a[href='/alarms']")
    wait_css(a, "h1", "My alarms")
    wait_css(a, "#personal-list .empty", "No personal alarms yet")
    axe_check(a, "my alarms (empty)", "ana")
    click(a, "#new-personal")
    wait_css(a, "form.alarm-form")
    assert css(a, "form.alarm-form input[name=assignee]") is None  # the personal variant: no group parts
    fill(a, "form.alarm-form input[name=title]", "Take vitamins")
    Select(css(a, "form.alarm-form select[name=schedule_type]")).select_by_value("weekly")
    a.execute_script("arguments[0].value = '07:30'", css(a, "form.alarm-form input[type=time]"))
    axe_check(a, "my alarms (form)", "ana")
    click_button(a, "Create alarm")
    card = wait(a, lambda drv: wait_css(drv, "#personal-list li.personal", "Take vitamins").get_attribute("id"), "the personal alarm's card")
    alarm_id = card.removeprefix("personal-")
    wait_css(a, f"#{card} .schedule", "Every week on Monday at 07:30")
    wait_css(a, f"#{card} .next-fire", "(Europe/Berlin)")  # the zone chosen in settings
    listed = page_api(a, "GET", "/v1/me/alarms")["body"]["alarms"]
    assert [x["id"] for x in listed] == [alarm_id], listed
    shot(a, "my-alarms-created", "ana")

    # another device of Ana's renames it: the page follows the user feed
    token = http("POST", "/v1/auth/login", {"email": f"ana-{stamp}@example.com", "password": PASSWORD + " staple"})[1]["token"]
    status, doc = http("PATCH", f"/v1/me/alarms/{alarm_id}", {"title": "Take vitamin D", "version": listed[0]["version"]}, token=token)
    assert status == 200, (status, doc)
    wait_css(a, f"#{card} .alarm-title", "Take vitamin D")

    # the 12-hour clock chosen on another device: times follow at once
    assert a.execute_script("return navigator.language") == "en-GB"
    current = page_api(a, "GET", "/v1/me/settings")["body"]
    assert current["use_24_hour_format"] is True, current  # chosen in settings above
    status, _ = http("PATCH", "/v1/me/settings", {"use_24_hour_format": False, "version": current["version"]}, token=token)
    assert status == 200, status
    wait_css(a, f"#{card} .schedule", "Every week on Monday at 7:30 am")
    wait_css(a, f"#{card} .next-fire", "7:30 am (Europe/Berlin)")
    shot(a, "my-alarms-12-hour-clock", "ana")

    # a photo on the personal alarm: added here, its thumbnail shows; removed on another device, it goes live
    import tempfile
    png = os.path.join(tempfile.mkdtemp(prefix="chronir-att-"), "vitamins.png")
    small_png(png)
    wait_css(a, f"#{card} .att-empty", "No photos or files yet.")
    wait_css(a, f"#{card} input[type=file]").send_keys(png)
    wait_css(a, "#flash", "Added vitamins.png to “Take vitamin D”.")
    wait(a, lambda drv: (img := css(drv, f"#{card} .attachments img")) and img.get_attribute("src").startswith("data:image/jpeg") or None,
         "the personal alarm's thumbnail")
    listed = page_api(a, "GET", f"/v1/me/alarms/{alarm_id}/attachments")["body"]["attachments"]
    assert len(listed) == 1 and listed[0]["owner_kind"] == "personal_alarm", listed
    axe_check(a, "my alarms with a photo", "ana")
    shot(a, "my-alarms-photo", "ana", f"#{card}")
    status, _ = http("DELETE", f"/v1/me/alarms/{alarm_id}/attachments/{listed[0]['id']}", token=token)
    assert status == 204, status
    wait_css(a, f"#{card} .att-empty", "No photos or files yet.")  # the user feed's `attachment` change

    # off, edit, delete
    click(a, f"#{card} label[for='on-{alarm_id}']")
    wait_css(a, f"#{card} .next-fire", "Off: it will not ring.")
    assert page_api(a, "GET", f"/v1/me/alarms/{alarm_id}")["body"]["is_enabled"] is False
    click(a, f"[data-key=edit-{alarm_id}]")
    wait_css(a, "form.alarm-form")
    fill(a, "form.alarm-form input[name=title]", "Vitamin D with breakfast")
    click_button(a, "Save changes")
    wait_css(a, f"#{card} .alarm-title", "Vitamin D with breakfast")
    click(a, f"[data-key=pdelete-{alarm_id}]")
    click(a, f"[data-key=pdelete-{alarm_id}]", "Confirm")
    wait_css(a, "#personal-list .empty", "No personal alarms yet")
    assert page_api(a, "GET", "/v1/me/alarms")["body"]["alarms"] == []

    # a free account: reads, is not offered what it would be refused, and is told why and how to get
    # the tier on a self-hosted server
    admin("users", "set-tier", f"bea-{stamp}@example.com", "free", "--reason", "browser e2e: the free tier")
    b.get(BASE + "/alarms")
    wait_css(b, "h1", "My alarms")

    def not_offered():
        wait_css(b, "#tier-notice", "need a Plus or Premium account", timeout=5)
        wait_css(b, "#tier-notice", "chronir-admin users set-tier", timeout=1)
        gone(b, "#new-personal")
    bug("33.10", "a free account is not offered New alarm, and is told why and how to get the tier", not_offered)
    # the server still refuses a write (here from the page's own API call, as an old tab would send it)
    refused = page_api(b, "PUT", "/v1/me/alarms/5f0c2b0e-6b1c-4c59-9a0e-3c1d2f4b5a6d", {
        "title": "Stretch", "schedule": {"type": "custom_days", "interval_days": 1, "start_date": "2030-01-01"},
        "times_of_day": [{"hour": 9, "minute": 0}], "timezone": "UTC"})
    expect_failed_request("/v1/me/alarms/", 403)
    assert refused["status"] == 403 and refused["body"]["error"]["code"] == "CA002", refused
    axe_check(b, "my alarms (free, phone)", "bea")
    shot(b, "my-alarms-free-tier", "bea")
    # My groups: no Create group form, the reason instead
    click(b, "#account-nav a[href='/']")
    wait_css(b, "h1", "My groups")
    bug("33.10", "a free account is not offered Create a group, and is told why", lambda: (
        wait_css(b, "#create-group-tier", "chronir-admin users set-tier", timeout=5), gone(b, "#create-group")))
    # after an upgrade the box goes and New alarm comes back, without a reload
    click(b, "#account-nav a[href='/alarms']")
    wait_css(b, "h1", "My alarms")
    if not REPRODUCE:
        wait_css(b, "#tier-notice", "need a Plus or Premium account")
    else:  # an older client says so only after a refused write
        click(b, "#new-personal")
        fill(b, "form.alarm-form input[name=title]", "Stretch")
        click_button(b, "Create alarm")
        wait_css(b, "#tier-notice", "need a Plus or Premium account")
    admin("users", "set-tier", f"bea-{stamp}@example.com", "plus", "--reason", "browser e2e: upgraded")
    bug("33.11", "after an upgrade the tier notice goes and New alarm is back, live", lambda: (
        gone(b, "#tier-notice"), wait_css(b, "#new-personal", "New alarm", timeout=5)))


def notifications(a, group_id, alarm_id):
    """Ana's browser: the service worker, the switch, a push shown, a click routed, the group's mute."""
    # — the worker is served from the root as JavaScript, under a CSP that lets it run (no worker-src:
    #   default-src/script-src 'self' cover it) —
    with urllib.request.urlopen(BASE + "/sw.js", timeout=STEP_TIMEOUT_S) as r:
        assert r.headers["Content-Type"].startswith("text/javascript"), r.headers["Content-Type"]
        csp = r.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "worker-src" not in csp, csp

    # — the switch starts off; with notifications blocked it says so and stays off —
    wait_css(a, "h1", "My groups")
    wait_css(a, "#push-status[data-state=ok]", "Off")
    assert not css(a, "#push-switch").is_selected()
    a.execute_cdp_cmd("Browser.setPermission", {"origin": BASE, "permission": {"name": "notifications"}, "setting": "denied"})
    click(a, "#push-switch")
    wait_css(a, "#push-status[data-state=error]", "Notifications are blocked for this site")
    assert not css(a, "#push-switch").is_selected()
    shot(a, "ana-notifications-blocked", "ana", "#push-settings")

    # — granted: the client subscribes at the browser's push service. Headless Chromium has none (no
    #   GCM): its subscribe never settles, so the client gives up after its timeout and says why —
    a.execute_cdp_cmd("Browser.grantPermissions", {"origin": BASE, "permissions": ["notifications"]})
    click(a, "#push-switch")
    outcome = wait(a, lambda drv: (wait_css(drv, "#push-status").get_attribute("data-state") or "busy") != "busy"
                   and wait_css(drv, "#push-status").get_attribute("data-state"),
                   "the switch settles", timeout=SUBSCRIBE_TIMEOUT_S + STEP_TIMEOUT_S)
    devices = page_api(a, "GET", "/v1/me/devices")["body"]["devices"]
    if outcome == "error":
        wait_css(a, "#push-status", "could not get a subscription from its push service")
        assert not css(a, "#push-switch").is_selected()
        assert devices == [], devices
        print(f"   pushManager.subscribe: {css(a, '#push-status').text}")
    else:  # a browser with a push service: the subscription is registered
        assert outcome == "ok" and css(a, "#push-switch").is_selected(), outcome
        assert len(devices) == 1 and devices[0]["provider"] == "webpush", devices
        print(f"   pushManager.subscribe succeeded: {devices[0]['subscription']['endpoint']}")
    shot(a, "ana-push-subscribe-outcome", "ana", "#push-settings")

    # — a subscription made by the test, registered through the client's own push.js —
    made = a.execute_async_script("""
        const done = arguments[0];
        (async () => {
          const b64u = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
          const pair = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits']);
          const p256dh = b64u(new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey)));
          const auth = b64u(crypto.getRandomValues(new Uint8Array(16)));
          const endpoint = `https://push.example.test/e2e/${Date.now()}`;
          const push = await import('/js/push.js');
          const device = await push.register({ endpoint, keys: { p256dh, auth } });
          return { endpoint, device, stored: localStorage.getItem('chronir.push-device') };
        })().then(done, (e) => done({ error: String(e) }));""")
    assert "error" not in made, made
    a.refresh()
    wait_css(a, "#push-status[data-state=ok]", "On")
    assert css(a, "#push-switch").is_selected()
    devices = page_api(a, "GET", "/v1/me/devices")["body"]["devices"]
    assert [(x["device_id"], x["platform"], x["provider"], x["subscription"]["endpoint"]) for x in devices] == \
        [(made["stored"], "web", "webpush", made["endpoint"])], devices
    shot(a, "ana-push-switch-on", "ana", "#push-settings")
    click(a, "#push-switch")  # off: the device is deleted
    wait_css(a, "#push-status[data-state=ok]", "Off")
    assert page_api(a, "GET", "/v1/me/devices")["body"]["devices"] == []

    # — a push message delivered to the page's service worker shows its notification. DevTools'
    #   Background Services record says when each push event has completed: getNotifications() asked
    #   while a notification is being displayed can drop it (Chromium reconciles its notification
    #   store with what is displayed: 8 of 15 runs that polled at once saw none) —
    page = DevTools(a, "page", BASE)
    try:
        page.call("ServiceWorker.enable")
        for service in ("pushMessaging", "notifications"):
            page.call("BackgroundService.startObserving", {"service": service})
            page.call("BackgroundService.setRecording", {"service": service, "shouldRecord": True})
        registration = page.events("ServiceWorker.workerRegistrationUpdated", 1, lambda p: any(
            r["scopeURL"] == BASE + "/" and not r["isDeleted"] for r in p["registrations"]))[0]
        registration_id = next(r["registrationId"] for r in registration["registrations"] if r["scopeURL"] == BASE + "/")
        fired = {"notification": {"title": "Pay the rent", "body": "Due now · Flat 4B"},
                 "data": {"type": "alarm_fired", "group_id": group_id, "alarm_id": alarm_id}}
        for data in (json.dumps(fired), "not JSON"):
            page.call("ServiceWorker.deliverPushMessage", {"origin": BASE, "registrationId": registration_id, "data": data})

        def recorded(name):
            return lambda p: p["backgroundServiceEvent"]["eventName"] == name
        displayed = page.events("BackgroundService.backgroundServiceEventReceived", 2, recorded("Notification displayed"))
        completed = page.events("BackgroundService.backgroundServiceEventReceived", 2, recorded("Push event completed"))
    finally:
        page.close()
    assert all({"key": "Status", "value": "Success"} in e["backgroundServiceEvent"]["eventMetadata"] for e in completed), completed
    titles = sorted(m["value"] for e in displayed for m in e["backgroundServiceEvent"]["eventMetadata"] if m["key"] == "Title")
    assert titles == ["Chronir", "Pay the rent"], displayed
    shown = notifications_shown(a)
    print(f"   notifications: {shown}")
    alarm = next(n for n in shown if n["title"] == "Pay the rent")
    assert alarm["body"] == "Due now · Flat 4B" and alarm["tag"] == f"alarm-{alarm_id}" and alarm["requireInteraction"], alarm
    assert alarm["data"] == fired["data"], alarm
    assert any(n["title"] == "Chronir" and n["body"] == "not JSON" for n in shown) and len(shown) == 2, shown

    # — what a click does: the worker sends the open page to the alarm (called in the worker's own
    #   context: DevTools cannot click a notification; focusing needs that click, so its refusal is expected) —
    worker = DevTools(a, "service_worker", BASE + "/sw.js")
    try:
        worker.call("Runtime.evaluate", {"expression": f"showInApp({json.dumps(alarm['data'])}).catch((e) => e.name)",
                                         "awaitPromise": True, "returnByValue": True})
    finally:
        worker.close()
    wait(a, lambda drv: drv.current_url == f"{BASE}/groups/{group_id}#alarm-{alarm_id}", "the page at the alarm")
    wait_css(a, "#group-head h1", "Flat 4B")
    shot(a, "ana-opened-from-notification", "ana", f"#alarm-{alarm_id}")

    # — the group's mute switch reaches the server and survives a reload —
    ana_id = page_api(a, "GET", "/v1/me")["body"]["id"]

    def notification_enabled():
        detail = page_api(a, "GET", f"/v1/groups/{group_id}")["body"]
        return next(m for m in detail["members"] if m["user_id"] == ana_id)["notification_enabled"]
    assert css(a, "#group-notify").is_selected() and notification_enabled() is True
    click(a, "#group-notify")
    wait_css(a, "#group-notify-hint", "Muted")
    assert not css(a, "#group-notify").is_selected() and notification_enabled() is False
    shot(a, "ana-group-muted", "ana")
    a.refresh()
    wait_css(a, "#group-notify-hint", "Muted")
    assert not css(a, "#group-notify").is_selected()
    click(a, "#group-notify")
    wait_css(a, "#group-notify-hint", "Your devices get pushes about this group")
    assert css(a, "#group-notify").is_selected() and notification_enabled() is True


drivers = {}

if __name__ == "__main__":
    failed = 0
    try:
        main()
    except Exception:  # noqa: BLE001 — report, screenshot and fail
        failed = 1
        traceback.print_exc()
        for n, d in drivers.items():
            try:
                d.save_screenshot(os.path.join(SHOTS, f"99-failure-{n}.png"))
                drain_console(n, d)
            except Exception:  # noqa: BLE001
                pass
    finally:
        for d in drivers.values():
            try:
                d.quit()
            except Exception:  # noqa: BLE001
                pass
    if REPRODUCE:
        print(f"reproduced (failing bug steps): {len(reproduced)}")
        for line in reproduced:
            print(f"   {line}")
    for r in axe_results:
        print(f"   axe {r['page']} ({r['who']}): {r['violations'] or 'no violations'}")
    print(f"browser e2e: {step_no} steps, axe on {len(axe_results)} pages; {1 - failed} passed, {failed} failed")
    sys.exit(failed)
