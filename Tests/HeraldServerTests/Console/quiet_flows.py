#!/usr/bin/env python3
"""Quiet hours in the console, in a real browser (chromium through Playwright).

Run by ConsoleQuietHoursBrowserTests (swift test), one scenario per test, against a `herald serve` of its own whose
app window (HERALD_QUIET_HOURS) holds the moment the test started in UTC, so that a device in UTC is quiet and one
twelve hours away is not:
    quiet_flows.py <scenario> <base URL> <one-time sign-in path> <screenshot folder> <a window that is not quiet now>
    quiet_flows.py --list
Each scenario registers three devices through the API: one in UTC on the app's window (quiet), one at UTC-12 (awake),
and nora's in UTC with her own window, one that is not quiet now (awake). Exits non-zero with a message when the
scenario fails; keeps a screenshot of each page it saw (<scenario>-failed.png too, on a failure).
"""
import json
import os
import re
import sys
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright

BASE = LINK = SHOTS = AWAKE = ""
CHROMIUM = os.environ.get("HERALD_CHROMIUM", "/usr/bin/chromium")
TOKEN_QUIET = "f1" * 32
TOKEN_AWAKE = "f2" * 32
TOKEN_NORA = "f3" * 32


def step(text):
    print("==>", text, flush=True)


def api(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read().decode() or "null")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def setup():
    for token, fields in [(TOKEN_QUIET, {"timeZone": "UTC", "userId": "quinn"}),
                          (TOKEN_AWAKE, {"timeZone": "Etc/GMT+12", "userId": "ava"}),
                          (TOKEN_NORA, {"timeZone": "UTC", "userId": "nora"})]:
        status, body = api("POST", "/api/token", {"token": token, "debug": True, **fields})
        if status not in (200, 201):
            raise SystemExit(f"registering {token[-8:]} answered {status}: {body}")
    status, body = api("PUT", f"/api/preferences/{TOKEN_NORA}", {"quietHours": AWAKE})
    if status != 200 or body["quietHours"]["window"] != AWAKE:
        raise SystemExit(f"setting nora's own window answered {status}: {body}")


def shot(page, name):
    page.screenshot(path=os.path.join(SHOTS, name + ".png"))


def compose_to_everyone(page, quiet_hours):
    page.goto(BASE + "/console/compose")
    page.select_option("#target-kind", "topic")
    page.fill("#title", "Your weekly summary")
    page.select_option("#quiet-hours", quiet_hours)
    expect(page.locator("#validity")).to_contain_text("Ready to")


def compose(page):
    step("the compose page's dry run says how many devices quiet hours defer, then drop")
    compose_to_everyone(page, "")
    expect(page.locator("#suppressed-count")).to_have_text("Rules: 1 deferred to the end of their quiet hours.")
    expect(page.locator("#target-count")).to_have_text(re.compile(r"^3\b"))
    shot(page, "compose-quiet-deferred")
    page.select_option("#quiet-hours", "drop")
    expect(page.locator("#suppressed-count")).to_have_text("Rules: 1 dropped in their quiet hours.")
    expect(page.locator("#target-count")).to_have_text(re.compile(r"^2\b"))
    shot(page, "compose-quiet-dropped")


def send(page):
    step("a deferring send waits in the queue and its page says how many devices wait; a dropping one says so too")
    compose_to_everyone(page, "")
    page.click("#send")
    expect(page).to_have_url(re.compile(r"/console/sends/[0-9a-f-]{36}$"))
    expect(page.locator("#send-suppressed")).to_have_text("Rules: 1 deferred to the end of their quiet hours.")
    expect(page.locator("#send-status")).to_have_text("queued")
    shot(page, "send-quiet-deferred")
    compose_to_everyone(page, "drop")
    page.click("#send")
    expect(page).to_have_url(re.compile(r"/console/sends/[0-9a-f-]{36}$"))
    expect(page.locator("#send-status")).to_have_text("completed")
    expect(page.locator("#send-suppressed")).to_have_text("Rules: 1 dropped in their quiet hours.")
    shot(page, "send-quiet-dropped")


def preferences(page):
    step("a person's own window shows on their device's page; an admin sets none, then the app's again")
    page.goto(BASE + f"/console/devices/{TOKEN_NORA}")
    section = page.locator("section.preferences")
    expect(section.locator(".quiet-hours")).to_contain_text(AWAKE + " (their choice")
    expect(section.locator("input[name=quietHours]")).to_have_value(AWAKE)
    section.locator("input[name=quietHours]").fill("off")
    section.get_by_role("button", name="Save preferences").click()
    expect(page.locator("p.notice")).to_contain_text("The preferences were saved.")
    expect(page.locator("section.preferences .quiet-hours")).to_contain_text("none (their choice")
    shot(page, "device-quiet-hours")
    status, body = api("GET", f"/api/preferences/{TOKEN_NORA}")
    if body["quietHours"]["own"] != "off":
        raise SystemExit(f"nora's window after the console's change: {body}")
    page.locator("section.preferences input[name=quietHours]").fill("")
    page.locator("section.preferences").get_by_role("button", name="Save preferences").click()
    expect(page.locator("p.notice")).to_contain_text("The preferences were saved.")
    expect(page.locator("section.preferences .quiet-hours")).to_contain_text("(the app's window")
    status, body = api("GET", f"/api/preferences/{TOKEN_NORA}")
    if body["quietHours"]["chosen"]:
        raise SystemExit(f"nora's window after going back to the app's: {body}")


SCENARIOS = {"compose": compose, "send": send, "preferences": preferences}


def main():
    global BASE, LINK, SHOTS, AWAKE
    if sys.argv[1:] == ["--list"]:
        print("\n".join(SCENARIOS))
        return
    if len(sys.argv) != 6 or sys.argv[1] not in SCENARIOS:
        sys.exit(f"usage: quiet_flows.py <{'|'.join(SCENARIOS)}> <base URL> <sign-in path> <screenshots> <window>")
    name, BASE, LINK, SHOTS, AWAKE = sys.argv[1:]
    os.makedirs(SHOTS, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
        page.set_default_timeout(20_000)
        problems = []
        page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        # Sending to every device of the app asks first: the scenarios answer OK.
        page.on("dialog", lambda dialog: dialog.accept())
        try:
            page.goto(BASE + LINK)
            expect(page).to_have_url(re.compile(r"/console$"))
            setup()
            SCENARIOS[name](page)
            if problems:
                raise SystemExit("the browser reported errors: " + "; ".join(problems))
        except BaseException:
            page.screenshot(path=os.path.join(SHOTS, "quiet-" + name + "-failed.png"))
            raise
        finally:
            browser.close()
    step(f"{name} passed")


if __name__ == "__main__":
    main()
