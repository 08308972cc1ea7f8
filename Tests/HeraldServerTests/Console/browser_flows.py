#!/usr/bin/env python3
"""The console in a real browser: Debian's chromium, headless, driven by Playwright.

Run by ConsoleBrowserTests (swift test), one scenario per test, each against a `herald serve` of its own:
    browser_flows.py <scenario> <base URL> <one-time sign-in path> <screenshot folder>
    browser_flows.py --list
Each scenario signs in with the link and sets up what it needs through the API, so that one failing hides no other.
Exits non-zero with a message when the scenario fails, and keeps a screenshot of each page it saw in the folder
(<scenario>-failed.png too, on a failure).
"""
import concurrent.futures
import datetime
import http.server
import json
import os
import re
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
import zoneinfo

from playwright.sync_api import expect, sync_playwright

BASE = LINK = SHOTS = ""
CHROMIUM = os.environ.get("HERALD_CHROMIUM", "/usr/bin/chromium")
BULK = int(os.environ.get("HERALD_BROWSER_BULK", "5000"))
TOKEN_A = "a1" * 32
TOKEN_B = "b2" * 32
# A Live Activity's push-to-start token and, once started, its update token; the id needs percent-encoding in paths.
TOKEN_START = "c3" * 32
TOKEN_UPDATE = "d4" * 32
ACTIVITY = "order 42/a"
# The browser's time zone, so the test knows which instant a datetime-local value means.
ZONE = "Europe/Paris"


def step(text):
    print("==>", text, flush=True)


def api(method, path, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE + path, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def register(token, **fields):
    status, body = api("POST", "/api/token", {"token": token, **fields})
    if status not in (200, 201):
        raise SystemExit(f"registering {token[-8:]} answered {status}: {body}")


def shot(page, name):
    page.screenshot(path=os.path.join(SHOTS, name + ".png"))


class Session:
    """A signed-in browser page, with what the page reported and the confirm questions it asked."""

    def __init__(self, browser):
        self.browser = browser
        self.context = browser.new_context(viewport={"width": 1200, "height": 800}, timezone_id=ZONE)
        self.page = self.context.new_page()
        self.page.set_default_timeout(20_000)
        self.problems = []
        # Requests the page made that the server refused: a page must not fire a request it knows is incomplete.
        self.refused = []
        # Pages that answer 401 on purpose make chromium log "Failed to load resource": only policy violations count.
        self.page.on("console", lambda m: self.problems.append(m.text) if "Content Security Policy" in m.text else None)
        self.page.on("pageerror", lambda e: self.problems.append(str(e)))
        self.page.on("response", lambda r: self.refused.append(f"{r.status} {r.url}")
                     if r.status == 400 and "/api/" in r.url else None)
        # Every confirm question is kept; the scenarios answer OK unless they set dialog_answer["accept"] to False.
        self.dialogs = []
        self.dialog_answer = {"accept": True}
        self.page.on("dialog", self.answer_dialog)

    def answer_dialog(self, dialog):
        self.dialogs.append(dialog.message)
        if self.dialog_answer["accept"]:
            dialog.accept()
        else:
            dialog.dismiss()

    def sign_in(self):
        self.page.goto(BASE + LINK)
        expect(self.page).to_have_url(re.compile(r"/console$"))

    def begin(self, alice=False):
        """Signs in, and registers alice's two devices when asked; returns the page."""
        self.sign_in()
        if alice:
            register_alice()
        return self.page

    def api_status(self, path):
        return self.page.request.get(BASE + path).json().get("status")

    def csrf(self):
        return self.page.locator("meta[name=herald-csrf]").get_attribute("content")

    def send(self, body):
        """Sends through the API with the console session (as the console's scripts do)."""
        answer = self.page.request.post(BASE + "/api/send", headers={"X-Herald-CSRF": self.csrf()}, data=body)
        if answer.status not in (200, 202):
            raise SystemExit(f"sending {body} answered {answer.status}: {answer.text()}")
        return answer.json()

    def click_confirmed(self, button, question, path, status_before):
        """Clicks a button whose form asks first: answered Cancel (the record at path keeps status_before), then OK."""
        for accept in (False, True):
            asked = len(self.dialogs)
            self.dialog_answer["accept"] = accept
            button.click()
            if len(self.dialogs) != asked + 1 or question not in self.dialogs[-1]:
                raise SystemExit(f"{question!r} was not asked first: {self.dialogs}")
            if not accept and self.api_status(path) != status_before:
                raise SystemExit(f"answering Cancel to {question!r} changed {path}")

    def check_quiet(self):
        if self.problems:
            raise SystemExit("the browser reported errors: " + "; ".join(self.problems))
        if self.refused:
            raise SystemExit("the page made requests the server refused with 400: " + "; ".join(self.refused))


def register_alice():
    register(TOKEN_A, debug=True, userId="alice", tags=["beta"], platform="iOS", preferredLanguages=["en"])
    register(TOKEN_B, debug=False, userId="alice", platform="macOS")


def sign_in(s):
    step("sign in with the one-time link; the link works once")
    page = s.begin()
    expect(page.locator("h1")).to_have_text("Overview")
    expect(page.get_by_text("No devices yet")).to_be_visible()
    # herald doctor's checks run beside the start: a page rendered before they finish says so.
    if page.locator("#checks-pending").count():
        page.reload()
    expect(page.locator("#deployment-checks")).to_contain_text("database")
    expect(page.locator("#checks-summary")).to_contain_text("0 failures")
    shot(page, "overview-empty")
    page.goto(BASE + LINK)
    expect(page.get_by_role("alert")).to_contain_text("used already")
    step("with devices counted for this view, the overview gives no age for its figures")
    register_alice()
    page.goto(BASE + "/console")
    expect(page.locator("main svg").first).to_be_visible()
    expect(page.locator("#devices-counted")).to_have_count(0)


def compose(s):
    step("an empty form shows a prompt and asks nothing; compose with a mistake, fix it, preview, send to a user")
    page = s.begin(alice=True)
    page.goto(BASE + "/console/compose")
    expect(page.locator("#validity")).to_contain_text("Choose who to send to")
    expect(page.locator("#validity")).not_to_have_class(re.compile(r"\bbad\b"))
    shot(page, "compose-empty")
    page.select_option("#target-kind", "user")
    page.fill("#target-value", "alice")
    page.fill("#title", "Hello from the console")
    page.fill("#body", "Your order shipped")
    page.fill("#collapse-id", "x" * 70)
    expect(page.locator("#validity")).to_contain_text("BadCollapseId")
    shot(page, "compose-error")
    # The dry run that refused the collapse id is the point of this step, not a stray request.
    s.refused.clear()
    page.fill("#collapse-id", "order-42")
    expect(page.locator("#validity")).to_contain_text("Ready to send to 2 devices")
    expect(page.locator("#target-count")).to_have_text("2")
    expect(page.locator("#preview-title")).to_have_text("Hello from the console")
    expect(page.locator("#payload")).to_contain_text('"title": "Hello from the console"')
    expect(page.locator("#headers")).to_contain_text("apns-collapse-id: order-42")
    shot(page, "compose")
    page.click("#send")
    expect(page).to_have_url(re.compile(r"/console/sends/[0-9a-f-]{36}$"))
    expect(page.locator("#send-status")).to_have_text("completed")
    expect(page.locator("#count-accepted")).to_have_text("2")


def background_send(s):
    step(f"register {BULK} devices and watch a background send reach 100 %; its page and the list")
    page = s.begin()

    def register_bulk(n):
        register(f"{n:064x}", debug=n % 2 == 0, tags=["bulk"])
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(register_bulk, range(1, BULK + 1)))
    page.goto(BASE + "/console/compose")
    page.select_option("#target-kind", "tag")
    page.fill("#target-value", "bulk")
    page.fill("#title", "Big news")
    expect(page.locator("#validity")).to_contain_text(f"Ready to send to {BULK} devices")
    expect(page.locator("#target-count")).to_contain_text("in the background")
    page.click("#send")
    expect(page).to_have_url(re.compile(r"/console/sends/[0-9a-f-]{36}$"))
    send_url = page.url
    expect(page.locator("#send-percent")).to_have_text("100 %", timeout=180_000)
    expect(page.locator("#send-status")).to_have_text("completed", timeout=30_000)
    expect(page.locator("#send-bar")).to_have_attribute("value", str(BULK))
    expect(page.locator("#rate-received")).to_have_text("0 %")
    expect(page.locator("#cancel-send")).to_have_count(0)
    shot(page, "send-progress")
    page.goto(send_url)
    expect(page.locator("#count-accepted")).to_have_text(str(BULK))
    expect(page.locator("#count-received")).to_have_text("0")
    expect(page.locator("#groups + table")).to_contain_text("accepted")
    shot(page, "send")
    page.goto(BASE + "/console/sends")
    expect(page.locator("tbody tr")).to_have_count(1)
    shot(page, "sends")


def schedule(s):
    step("schedule a send at a time (a past one is refused next to the field), see it scheduled, cancel it")
    page = s.begin(alice=True)
    page.goto(BASE + "/console/compose")
    page.select_option("#target-kind", "user")
    page.fill("#target-value", "alice")
    page.fill("#title", "See you tomorrow")
    expect(page.locator("#validity")).to_contain_text("Ready to send to 2 devices")
    expect(page.locator("#when-at-fields")).to_be_hidden()
    page.focus("#when-now")
    page.keyboard.press("ArrowDown")
    expect(page.locator("#when-at")).to_be_checked()
    expect(page.locator("#when-at-fields")).to_be_visible()
    expect(page.locator("#send")).to_have_text("Schedule")
    page.fill("#send-at", "2020-01-01T09:00")
    expect(page.locator("#send-at-error")).to_contain_text('"sendAt"')
    expect(page.locator("#send-at")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#validity")).to_contain_text("has passed")
    shot(page, "compose-schedule-error")
    # The dry run that refused the past time is the point of this step, not a stray request.
    s.refused.clear()
    later = (datetime.datetime.now(zoneinfo.ZoneInfo(ZONE)) + datetime.timedelta(days=2)).replace(
        hour=9, minute=30, second=0, microsecond=0)
    page.fill("#send-at", later.strftime("%Y-%m-%dT%H:%M"))
    expect(page.locator("#validity")).to_contain_text("Ready to schedule for 2 devices")
    expect(page.locator("#send-at-error")).to_have_count(0)
    expect(page.locator("#send-at-zone")).to_contain_text(ZONE)
    page.fill("#rate", "50")
    expect(page.locator("#validity")).to_contain_text("Ready to schedule for 2 devices")
    shot(page, "compose-schedule")
    page.click("#send")
    expect(page).to_have_url(re.compile(r"/console/sends/[0-9a-f-]{36}$"))
    scheduled_url = page.url
    expect(page.locator("#send-status")).to_have_text("queued")
    expect(page.locator("#send-schedule")).to_contain_text("Scheduled for")
    expect(page.locator("#send-at-local")).to_contain_text(ZONE)
    answer = page.request.get(BASE + "/api/sends/" + scheduled_url.rsplit("/", 1)[1])
    meant = later.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if answer.json().get("sendAt") != meant:
        raise SystemExit(f"the send is scheduled for {answer.json().get('sendAt')}, not {meant}")
    expect(page.locator("#send-at")).to_have_text(meant.replace("T", " ").replace("Z", " UTC"))
    shot(page, "send-scheduled")
    page.goto(BASE + "/console/sends")
    expect(page.locator("tbody tr").first).to_contain_text("Scheduled for")
    page.goto(scheduled_url)
    page.click("#cancel-send button")
    expect(page.locator("#send-status")).to_have_text("cancelled")
    expect(page.locator("#send-schedule")).to_have_count(0)
    expect(page.locator("#count-accepted")).to_have_text("0")


def device(s):
    step("find a device and see its delivery")
    page = s.begin(alice=True)
    s.send({"target": {"user": "alice"}, "alert": {"title": "Hello from the console"}})
    page.goto(BASE + "/console/devices")
    page.fill("#q", TOKEN_A[-8:])
    page.keyboard.press("Enter")
    page.click(f"a[href='/console/devices/{TOKEN_A}']")
    expect(page.locator("h1")).to_contain_text(TOKEN_A[-8:])
    expect(page.locator("#deliveries + div")).to_contain_text("accepted")
    expect(page.locator("#deliveries + div")).to_contain_text("user alice")
    shot(page, "device")


def preferences(s):
    step("a device's notification preferences: an admin turns marketing on for alice")
    page = s.begin(alice=True)
    page.goto(BASE + f"/console/devices/{TOKEN_A}")
    section = page.locator("section.preferences")
    expect(section).to_contain_text("user alice, on all their devices")
    expect(section.locator("tr[data-category=orders]")).to_contain_text("cannot be turned off")
    marketing = section.locator("tr[data-category=marketing]")
    expect(marketing).to_contain_text("off by default")
    expect(marketing.locator(".badge")).to_have_text("off")
    section.locator("select[name='category.marketing']").select_option("on")
    section.get_by_role("button", name="Save preferences").click()
    expect(page.locator("p.notice")).to_contain_text("The preferences were saved.")
    marketing = page.locator("section.preferences tr[data-category=marketing]")
    expect(marketing.locator(".badge")).to_have_text("on")
    expect(marketing).to_contain_text("their choice")
    shot(page, "device-preferences")

    step("the user view shows alice's choices; social turned off there holds on her other device")
    page.goto(BASE + "/console/devices?user=alice")
    section = page.locator("section.preferences")
    expect(section.locator("tr[data-category=marketing] .badge")).to_have_text("on")
    section.locator("select[name='category.social']").select_option("off")
    section.get_by_role("button", name="Save preferences").click()
    expect(page.locator("p.notice")).to_contain_text("The preferences were saved.")
    expect(page.locator("section.preferences tr[data-category=social] .badge")).to_have_text("off")
    shot(page, "user-preferences")
    other = page.request.get(BASE + f"/api/devices/{TOKEN_B}/preferences").json()
    enabled = {category["name"]: category["enabled"] for category in other["categories"]}
    if enabled != {"orders": True, "social": False, "marketing": True}:
        raise SystemExit(f"alice's other device has {enabled}")

    step("a viewer reads the choices and has nothing to change")
    made = page.request.post(BASE + "/api/keys", headers={"X-Herald-CSRF": s.csrf()},
                             data={"name": "viewer", "scopes": ["read"]})
    if made.status != 201:
        raise SystemExit(f"creating a read key answered {made.status}: {made.text()}")
    viewer = s.browser.new_context(viewport={"width": 1200, "height": 800}).new_page()
    viewer.goto(BASE + "/console/sign-in")
    viewer.fill("#key", made.json()["secret"])
    viewer.click("button[type=submit]")
    viewer.wait_for_url(re.compile(r"/console$"))
    viewer.goto(BASE + f"/console/devices/{TOKEN_B}")
    section = viewer.locator("section.preferences")
    expect(section.locator("tr[data-category=social]")).to_contain_text("their choice")
    expect(section.locator("select")).to_have_count(0)
    expect(section.get_by_role("button", name="Save preferences")).to_have_count(0)
    shot(viewer, "device-preferences-viewer")


def emulator_and_overview(s):
    step("the emulator's inboxes, the overview with APNs' figures, and both on a phone")
    page = s.begin(alice=True)
    s.send({"target": {"user": "alice"}, "alert": {"title": "Hello from the console"}})
    page.goto(BASE + "/console/emulator?q=" + TOKEN_A[-8:])
    expect(page.locator("main")).to_contain_text("Hello from the console")
    shot(page, "emulator")
    page.goto(BASE + "/console")
    expect(page.locator("main svg").first).to_be_visible()
    expect(page.locator("#apns-empty")).to_have_count(0)
    expect(page.locator("#apns-p99")).not_to_have_text("—")
    expect(page.locator("#apns-open")).not_to_have_text("0")
    shot(page, "overview")
    page.locator("#apns-title").scroll_into_view_if_needed()
    shot(page, "overview-apns")
    phone = s.browser.new_context(viewport={"width": 390, "height": 844}, storage_state=s.context.storage_state())
    phone_page = phone.new_page()
    phone_page.goto(BASE + "/console")
    phone_page.screenshot(path=os.path.join(SHOTS, "overview-phone.png"))
    phone_page.goto(BASE + "/console/compose")
    phone_page.check("#when-local")
    phone_page.locator("#when-local-fields").scroll_into_view_if_needed()
    phone_page.screenshot(path=os.path.join(SHOTS, "compose-schedule-phone.png"))
    phone.close()


def keys(s):
    step("create an API key (secret shown once) and revoke it")
    page = s.begin(alice=True)
    page.goto(BASE + "/console/keys")
    page.fill("#name", "ci-backend")
    page.click("button:has-text('Create key')")
    secret = page.locator("#secret").inner_text()
    if not secret.startswith("hrld_"):
        raise SystemExit(f"the new key's secret is not shown: {secret!r}")
    status, _ = api("POST", "/api/send?dryRun=true", {"target": {"user": "alice"}, "alert": "x"},
                    {"Authorization": "Bearer " + secret})
    if status != 200:
        raise SystemExit(f"the created key does not work: {status}")
    shot(page, "keys-created")
    page.click("button[aria-label='Revoke ci-backend']")
    expect(page.get_by_role("status")).to_contain_text("revoked")
    status, _ = api("POST", "/api/send?dryRun=true", {"target": {"user": "alice"}, "alert": "x"},
                    {"Authorization": "Bearer " + secret})
    if status != 401:
        raise SystemExit(f"the revoked key still works: {status}")
    page.goto(BASE + "/console/keys")
    if secret in page.content():
        raise SystemExit("the secret is shown again")
    shot(page, "keys")


def live_activities(s):
    step("Live Activities: start one, see it with its update token, end it through the confirm dialog")
    page = s.begin()
    register(TOKEN_START, debug=True, userId="lena", tokenKind="liveactivity-start", activityType="DeliveryAttributes")
    started = page.request.post(BASE + "/api/activities", headers={"X-Herald-CSRF": s.csrf()}, data={
        "activityId": ACTIVITY, "activityType": "DeliveryAttributes", "target": {"user": "lena"},
        "attributes": {"orderNumber": 42}, "contentState": {"stop": 1},
        "alert": {"title": "On its way", "body": "Order 42 left"}})
    if started.status != 200 or started.json()["counts"]["accepted"] != 1:
        raise SystemExit(f"starting the activity answered {started.status}: {started.text()}")
    register(TOKEN_UPDATE, debug=True, userId="lena", tokenKind="liveactivity", activityId=ACTIVITY)
    page.click("header nav a:has-text('Live Activities')")
    expect(page.locator("h1")).to_have_text("Live Activities")
    row = page.locator("#activities tbody tr", has_text=ACTIVITY)
    expect(row).to_contain_text("active")
    expect(row.locator("td").nth(4)).to_have_text("1")
    shot(page, "activities")
    activity_path = "/api/activities/" + urllib.parse.quote(ACTIVITY, safe="")
    s.click_confirmed(row.get_by_role("button", name="End " + ACTIVITY), "End the activity", activity_path, "active")
    expect(page.locator("#activity-ended")).to_contain_text(f"Activity “{ACTIVITY}” ended")
    expect(page.locator("#activities tbody tr", has_text=ACTIVITY)).to_contain_text("ended")
    expect(page.locator("#activities tbody tr", has_text=ACTIVITY).get_by_role("button")).to_have_count(0)
    shot(page, "activity-ended")
    if s.api_status(activity_path) != "ended":
        raise SystemExit("the activity is not ended")
    page.goto(BASE + "/console/emulator?q=" + TOKEN_UPDATE[-8:])
    expect(page.locator("main")).to_contain_text(re.compile(r'"event":\s*"end"'))


def channels(s):
    step("broadcast channels: create one, see it listed, delete it through the confirm dialog")
    page = s.begin()
    page.goto(BASE + "/console/activities")
    page.click("nav.tabs a:has-text('Broadcast channels')")
    expect(page.locator("#channels-title")).to_contain_text("Live channels")
    expect(page.locator("#channels tbody tr")).to_have_count(0)
    page.select_option("#create-environment", "development")
    page.check("input[name=storagePolicy][value='1']")
    page.click("button:has-text('Create channel')")
    expect(page.locator("#channel-notice")).to_contain_text("created on APNs")
    row = page.locator("#channels tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("development")
    expect(row).to_contain_text("keeps the newest message")
    channel = row.locator("td").first.inner_text()
    shot(page, "channels")
    channel_path = "/api/channels/" + urllib.parse.quote(channel, safe="")
    s.click_confirmed(row.get_by_role("button", name="Delete " + channel), "Delete the channel", channel_path, "live")
    expect(page.locator("#channel-notice")).to_contain_text("deleted")
    expect(page.locator("#channels tbody tr")).to_have_count(0)
    if s.api_status(channel_path) != "deleted":
        raise SystemExit("the channel is not deleted")


def webhooks(s):
    step("webhooks: register an endpoint (secret shown once), send a test event, see it delivered, pause and resume")
    page = s.begin()
    received = threading.Event()

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200 if b"webhook.test" in body else 500)
            self.end_headers()
            received.set()

        def log_message(self, *args):
            pass

    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
        page.click("header nav a:has-text('Webhooks')")
        expect(page.locator("h1")).to_have_text("Webhooks")
        page.fill("#url", hook)
        page.check("input[name=event][value='notification.rejected']")
        page.check("input[name=event][value='token.removed']")
        page.click("button:has-text('Register endpoint')")
        webhook_secret = page.locator("#secret").inner_text()
        if not webhook_secret.startswith("whsec_"):
            raise SystemExit(f"the endpoint's secret is not shown: {webhook_secret!r}")
        page.goto(BASE + "/console/webhooks")
        if webhook_secret in page.content():
            raise SystemExit("the webhook secret is shown again")
        page.click("button:has-text('Send a test event')")
        expect(page.get_by_role("status")).to_contain_text("test event is queued")
        if not received.wait(30):
            raise SystemExit("the test event never reached the receiver")
        for _ in range(50):
            page.goto(BASE + "/console/webhooks")
            if page.locator("article.webhook table").count() > 0:
                break
            page.wait_for_timeout(100)
        expect(page.locator("article.webhook tbody tr").first).to_contain_text("delivered")
        expect(page.locator("article.webhook tbody tr").first).to_contain_text("200")
        page.click("article.webhook button:has-text('Pause')")
        expect(page.locator("article.webhook")).to_contain_text("Why paused: Paused by an administrator.")
        shot(page, "webhooks")
        page.click("article.webhook button:has-text('Resume')")
        expect(page.locator("article.webhook")).to_contain_text("active")
    finally:
        receiver.shutdown()


def sign_out(s):
    step("sign out; the old session is refused by pages and the API")
    page = s.begin()
    old_cookies = s.context.cookies()
    page.click("button:has-text('Sign out')")
    expect(page).to_have_url(re.compile(r"/console/sign-in$"))
    shot(page, "sign-in")
    replay = s.browser.new_context()
    replay.add_cookies(old_cookies)
    replayed = replay.new_page()
    replayed.goto(BASE + "/console/devices")
    expect(replayed).to_have_url(re.compile(r"/console/sign-in$"))
    answer = replayed.request.get(BASE + "/api/sends/00000000-0000-0000-0000-000000000000")
    if answer.status != 401:
        raise SystemExit(f"the old session still reads the API: {answer.status}")
    replay.close()


# The scenarios, by the name ConsoleBrowserTests passes; each starts from a fresh server.
SCENARIOS = {
    "sign-in": sign_in,
    "compose": compose,
    "background-send": background_send,
    "schedule": schedule,
    "device": device,
    "preferences": preferences,
    "emulator-and-overview": emulator_and_overview,
    "keys": keys,
    "live-activities": live_activities,
    "channels": channels,
    "webhooks": webhooks,
    "sign-out": sign_out,
}


def main():
    global BASE, LINK, SHOTS
    if sys.argv[1:] == ["--list"]:
        print("\n".join(SCENARIOS))
        return
    if len(sys.argv) != 5 or sys.argv[1] not in SCENARIOS:
        sys.exit(f"usage: browser_flows.py <{'|'.join(SCENARIOS)}> <base URL> <sign-in path> <screenshot folder>")
    name, BASE, LINK, SHOTS = sys.argv[1:]
    os.makedirs(SHOTS, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        session = Session(browser)
        try:
            SCENARIOS[name](session)
            session.check_quiet()
        except BaseException:
            session.page.screenshot(path=os.path.join(SHOTS, name + "-failed.png"))
            raise
        finally:
            browser.close()
    step(f"{name} passed")


if __name__ == "__main__":
    main()
