#!/usr/bin/env python3
"""herald-web.js and herald-sw.js in a real browser (chromium through Playwright).

Run by WebPushBrowserTests (swift test) against a `herald serve` in emulator mode whose app has a VAPID key and
HERALD_WEB_ORIGIN=http://127.0.0.1:<site port>:
    web_push_flow.py <Herald URL> <emulator admin URL> <site port> <VAPID public key> <API key> <console sign-in path>

A website on the site port serves a page that loads herald-web.js from Herald, and a service worker that imports
herald-sw.js. The browser cannot reach a push service here, so the page registers a subscription made at the
emulator's push service (as pushManager.subscribe() would have made one); a send through Herald's API reaches it,
the emulator decrypts it, and the message is delivered to the service worker through the DevTools protocol
(ServiceWorker.deliverPushMessage). The worker shows it and reports it received; the send's receipts count it. The
console's compose page counts the subscription and previews the notification as a browser shows it.
Exits non-zero with a message on the first check that fails.
"""
import functools
import http.server
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright

HERALD, ADMIN, SITE_PORT, VAPID_PUBLIC, API_KEY, SIGN_IN = (
    sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6])
SITE = f"http://127.0.0.1:{SITE_PORT}"
CHROMIUM = os.environ.get("HERALD_CHROMIUM", "/usr/bin/chromium")
TOPIC = "com.example.app"

PAGE = f"""<!doctype html><html><head><meta charset="utf-8"><title>Shop</title>
<script src="{HERALD}/herald-web.js"></script></head><body><h1>Shop</h1></body></html>"""
WORKER = f"""importScripts("{HERALD}/herald-sw.js");"""


def step(text):
    print("==>", text, flush=True)


def fail(text):
    raise SystemExit("FAILED: " + text)


def call(method, url, body=None, headers=None):
    request = urllib.request.Request(
        url, data=None if body is None else json.dumps(body).encode(), method=method,
        headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null"), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null"), dict(error.headers)


class Site(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        files = {"/": ("text/html", PAGE), "/sw.js": ("text/javascript", WORKER)}
        if self.path not in files:
            self.send_error(404)
            return
        kind, text = files[self.path]
        body = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", kind + "; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def wait_for(what, check, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    fail(f"{what} did not happen within {seconds} s")


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", SITE_PORT), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    step("Herald serves the scripts")
    for path in ("/herald-web.js", "/herald-sw.js"):
        with urllib.request.urlopen(HERALD + path, timeout=30) as response:
            if response.status != 200 or "javascript" not in response.headers["Content-Type"]:
                fail(f"{path}: {response.status} {response.headers['Content-Type']}")

    step("CORS: the site's origin may register, another may not")
    preflight = urllib.request.Request(HERALD + "/api/token", method="OPTIONS", headers={
        "Origin": SITE, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    with urllib.request.urlopen(preflight, timeout=30) as response:
        if response.status != 204 or response.headers["Access-Control-Allow-Origin"] != SITE:
            fail(f"preflight from the site: {response.status} {dict(response.headers)}")
    status, body, _ = call("OPTIONS", HERALD + "/api/token", headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
    if status != 403 or body.get("reason") != "originNotAllowed":
        fail(f"preflight from another origin: {status} {body}")

    step("A subscription made at the emulator's push service")
    status, made, _ = call("POST", ADMIN + "/subscriptions", {"applicationServerKey": VAPID_PUBLIC})
    if status != 201:
        fail(f"POST /subscriptions: {status} {made}")
    subscription = {"endpoint": made["endpoint"], "expirationTime": None, "keys": made["keys"]}

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context()
        context.grant_permissions(["notifications"], origin=SITE)
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        cdp = context.new_cdp_session(page)
        registrations = []
        cdp.on("ServiceWorker.workerRegistrationUpdated",
               lambda event: registrations.extend(event.get("registrations", [])))
        cdp.send("ServiceWorker.enable")

        step("The page loads herald-web.js from Herald and registers the subscription")
        page.goto(SITE + "/")
        token = page.evaluate("""async ([server, topic, key, subscription]) => {
            await navigator.serviceWorker.register("/sw.js");
            await navigator.serviceWorker.ready;
            const herald = new HeraldWeb({server, topic, applicationServerKey: key});
            return herald.register(subscription, {userId: "ada", tags: ["web"]});
        }""", [HERALD, TOPIC, VAPID_PUBLIC, subscription])
        if errors:
            fail(f"page errors: {errors}")
        if page.evaluate("localStorage.getItem('herald-web.queue')") not in ("[]", None):
            fail("the registration is still queued: " + page.evaluate("localStorage.getItem('herald-web.queue')"))
        status, device, _ = call("GET", f"{HERALD}/api/devices/{token}", headers={"Authorization": f"Bearer {API_KEY}"})
        if status != 200 or device.get("tokenKind") != "webpush" or device.get("userId") != "ada":
            fail(f"the registry after the page registered: {status} {device}")

        step("A send to the user reaches the subscription at the emulator, decrypted")
        status, sent, _ = call("POST", HERALD + "/api/send", {
            "target": {"user": "ada"}, "alert": {"title": "Order shipped", "body": "It leaves today"},
            "data": {"navigate": "https://example.com/orders/42", "actions": [
                {"action": "track", "title": "Track it", "navigate": "https://example.com/track/42"}]}},
            headers={"Authorization": f"Bearer {API_KEY}"})
        if status != 200 or sent["counts"]["accepted"] != 1:
            fail(f"the send: {status} {sent}")
        status, inbox, _ = call("GET", f"{ADMIN}/subscriptions/{made['id']}/messages")
        if status != 200 or len(inbox) != 1:
            fail(f"the emulator's inbox: {status} {inbox}")
        message = inbox[0]["payload"]
        if message["notification"]["title"] != "Order shipped" or message["herald"]["send"] != sent["id"]:
            fail(f"the message: {message}")

        step("Delivered to the service worker, it shows the notification and reports it received")
        registration = wait_for("the service worker's registration", lambda: next(
            (r for r in registrations if r.get("scopeURL", "").startswith(SITE)), None))
        cdp.send("ServiceWorker.deliverPushMessage", {
            "origin": SITE + "/", "registrationId": registration["registrationId"], "data": json.dumps(message)})
        shown = wait_for("the notification", lambda: page.evaluate("""async () => {
            const registration = await navigator.serviceWorker.ready;
            const shown = await registration.getNotifications();
            return shown.map(n => ({title: n.title, body: n.body, tag: n.tag, data: n.data, actions: n.actions}));
        }""") or None)
        if shown[0]["title"] != "Order shipped" or shown[0]["body"] != "It leaves today":
            fail(f"the notification shown: {shown}")
        if shown[0]["data"]["navigate"] != "https://example.com/orders/42":
            fail(f"where a click goes: {shown}")
        if [a["title"] for a in shown[0]["actions"]] != ["Track it"] or \
                shown[0]["data"]["links"].get("track") != "https://example.com/track/42":
            fail(f"the notification's button and where it goes: {shown}")

        def received():
            status, record, _ = call("GET", f"{HERALD}/api/sends/{sent['id']}",
                                     headers={"Authorization": f"Bearer {API_KEY}"})
            return record if status == 200 and record["receipts"]["received"] == 1 else None
        wait_for("the received receipt", received)

        step("The page reports it opened")
        page.evaluate("""async ([server, topic, key, sendId]) => {
            await new HeraldWeb({server, topic, applicationServerKey: key}).report("opened", sendId);
        }""", [HERALD, TOPIC, VAPID_PUBLIC, sent["id"]])
        wait_for("the opened receipt", lambda: call(
            "GET", f"{HERALD}/api/sends/{sent['id']}",
            headers={"Authorization": f"Bearer {API_KEY}"})[1]["receipts"]["opened"] == 1)

        step("The console's compose page counts the subscription and previews it for a browser")
        console = browser.new_context().new_page()
        console.set_default_timeout(20_000)
        console.goto(HERALD + SIGN_IN)
        console.goto(HERALD + "/console/compose")
        console.select_option("#target-kind", "user")
        console.fill("#target-value", "ada")
        console.fill("#title", "Back in stock")
        console.fill("#body", "Your size is back")
        console.fill("#data", '{"navigate": "https://example.com/p/7"}')
        expect(console.locator("#validity")).to_contain_text("Ready to send to 1 device")
        expect(console.locator("#target-count")).to_contain_text("1 of them in browsers")
        expect(console.locator("#web-preview-card")).to_be_visible()
        expect(console.locator("#web-title")).to_have_text("Back in stock")
        expect(console.locator("#web-body")).to_have_text("Your size is back")
        expect(console.locator("#web-site")).to_have_text("Opens https://example.com/p/7")

        step("The console's device page names the subscription's push service")
        console.goto(f"{HERALD}/console/devices/{token}")
        expect(console.locator("dl.record")).to_contain_text("Push service")
        expect(console.locator("dl.record")).to_contain_text("https://127.0.0.1:")
        expect(console.locator("dl.record")).to_contain_text("webpush")
        browser.close()
    server.shutdown()
    step("done")


if __name__ == "__main__":
    main()
