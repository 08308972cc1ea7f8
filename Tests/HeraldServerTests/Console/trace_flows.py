#!/usr/bin/env python3
"""The delivery trace and the Live Activity budget in the console, in a real browser (chromium through Playwright).

Run by ConsoleTraceBrowserTests (swift test) against a `herald serve` it started with HERALD_LIVE_ACTIVITY_BUDGET=2:
    trace_flows.py <base URL> <one-time sign-in path> <screenshot folder>
Exits non-zero with a message on the first check that fails. Keeps a screenshot of each page in the folder.
"""
import json
import os
import re
import sys
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright

BASE, LINK, SHOTS = sys.argv[1], sys.argv[2], sys.argv[3]
CHROMIUM = os.environ.get("HERALD_CHROMIUM", "/usr/bin/chromium")
TOKEN = "e5" * 32
TOKEN_START = "e6" * 32
TOKEN_UPDATE = "e7" * 32
ACTIVITY = "order-7"


def step(text):
    print("==>", text, flush=True)


def register(token, **fields):
    request = urllib.request.Request(
        BASE + "/api/token", data=json.dumps({"token": token, **fields}).encode(), method="POST",
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            if response.status not in (200, 201):
                raise SystemExit(f"registering {token[-8:]} answered {response.status}")
    except urllib.error.HTTPError as error:
        raise SystemExit(f"registering {token[-8:]} answered {error.code}: {error.read().decode()}")


def shot(page, name):
    page.screenshot(path=os.path.join(SHOTS, name + ".png"))


def main():
    os.makedirs(SHOTS, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_context(viewport={"width": 1200, "height": 800}).new_page()
        page.set_default_timeout(20_000)
        problems = []
        page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
        page.on("pageerror", lambda e: problems.append(str(e)))

        step("sign in, send to a development device from compose")
        page.goto(BASE + LINK)
        expect(page).to_have_url(re.compile(r"/console$"))
        register(TOKEN, debug=True, userId="tess")
        page.goto(BASE + "/console/compose")
        page.select_option("#target-kind", "user")
        page.fill("#target-value", "tess")
        page.fill("#title", "Where is my order?")
        expect(page.locator("#validity")).to_contain_text("Ready to send to 1 device")
        page.click("#send")
        expect(page).to_have_url(re.compile(r"/console/sends/[0-9a-f-]{36}$"))
        expect(page.locator("#send-status")).to_have_text("completed")
        send_path = page.url[len(BASE):]

        step("the send's device links to its trace: timeline, verdict, apns-unique-id for Apple's console")
        page.click("a:has-text('trace')")
        expect(page).to_have_url(re.compile(r"/console/sends/[0-9a-f-]{36}/devices/" + TOKEN + "$"))
        expect(page.locator("h1")).to_have_text("Delivery to …" + TOKEN[-8:])
        expect(page.locator("#trace-verdict-text")).to_contain_text("APNs accepted it; the device never reported it")
        expect(page.locator("#trace-unique-id")).to_contain_text("Push Notifications Console")
        unique = page.locator("#trace-unique-id .mono").inner_text()
        if not re.fullmatch(r"[0-9a-f-]{36}", unique):
            raise SystemExit(f"the apns-unique-id is not shown: {unique!r}")
        expect(page.locator("#trace-timeline li")).to_have_count(2)
        expect(page.locator("#trace-timeline li[data-event=accepted]")).to_contain_text("Herald accepted the send")
        expect(page.locator("#trace-timeline li[data-event=attempt]")).to_contain_text("accepted")
        shot(page, "trace")
        # The same trace through the API, with the console's session.
        answer = page.request.get(BASE + page.url[len(BASE):].replace("/console/", "/api/"))
        if answer.status != 200 or answer.json()["apnsUniqueId"] != unique:
            raise SystemExit(f"the API's trace differs: {answer.status} {answer.text()}")

        step("the device's deliveries link to the same trace")
        page.goto(BASE + "/console/devices/" + TOKEN)
        page.click("a:has-text('trace')")
        expect(page.locator("#trace-verdict")).to_be_visible()
        page.click("a:has-text('← Send to')")
        expect(page).to_have_url(re.compile(re.escape(send_path) + "$"))

        step("a Live Activity over its budget of 2: the console shows the count and what went at priority 5")
        register(TOKEN_START, debug=True, userId="tess", tokenKind="liveactivity-start", activityType="DeliveryAttributes")
        csrf = page.locator("meta[name=herald-csrf]").get_attribute("content")
        started = page.request.post(BASE + "/api/activities", headers={"X-Herald-CSRF": csrf}, data={
            "activityId": ACTIVITY, "activityType": "DeliveryAttributes", "target": {"user": "tess"},
            "attributes": {"orderNumber": 7}, "contentState": {"stop": 1}, "alert": {"title": "On its way"}})
        if started.status != 200:
            raise SystemExit(f"starting the activity answered {started.status}: {started.text()}")
        register(TOKEN_UPDATE, debug=True, userId="tess", tokenKind="liveactivity", activityId=ACTIVITY)
        priorities = []
        for stop in (2, 3, 4):
            updated = page.request.patch(BASE + "/api/activities/" + ACTIVITY, headers={"X-Herald-CSRF": csrf}, data={
                "contentState": {"stop": stop}, "alert": {"title": f"Stop {stop}"}})
            if updated.status != 200:
                raise SystemExit(f"updating the activity answered {updated.status}: {updated.text()}")
            priorities.append(updated.json()["budget"]["priority"])
        if priorities != [10, 10, 5]:
            raise SystemExit(f"the updates went at {priorities}, not 10, 10, 5")
        page.goto(BASE + "/console/activities")
        row = page.locator("#activities tbody tr", has_text=ACTIVITY)
        expect(row.locator("td.budget")).to_have_text("2 of 2 · 1 sent at priority 5")
        shot(page, "activities-budget")

        if problems:
            raise SystemExit("the browser reported errors: " + "; ".join(problems))
        browser.close()
    step("all flows passed")


if __name__ == "__main__":
    main()
