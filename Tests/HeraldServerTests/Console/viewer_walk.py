#!/usr/bin/env python3
"""A one-app viewer walks the console in a real browser and finds no trace of the other app (issue 29, item 5).

Run by ConsoleViewerWalkTests against a `herald serve` with two apps and an admin key:
    viewer_walk.py <base URL> <admin key> <screenshot folder>
Makes both apps' devices, sends and channels through the API with the admin key, makes a read-only key for
com.alpha.app, signs in with it, follows every link the console offers it (GET only) and opens beta's resources by their
links: no page may hold beta's bundle id, device tokens, user, send ids or channel ids. Exits non-zero on the first trace.
"""
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request

from playwright.sync_api import sync_playwright

BASE, ADMIN, SHOTS = sys.argv[1], sys.argv[2], sys.argv[3]
CHROMIUM = os.environ.get("HERALD_CHROMIUM", "/usr/bin/chromium")
ALPHA, BETA = "com.alpha.app", "com.beta.app"


def step(text):
    print("==>", text, flush=True)


def api(method, path, body=None, key=ADMIN):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE + path, data=data, method=method, headers={"Authorization": "Bearer " + key})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read().decode() or "null")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def must(status, body, what):
    if not 200 <= status < 300:
        raise SystemExit(f"{what} answered {status}: {body}")
    return body


def main():
    os.makedirs(SHOTS, exist_ok=True)
    step("both apps get devices, sends and channels")
    traces = {BETA, "beta-user", "beta-tag"}
    for app, prefix in ((ALPHA, "a"), (BETA, "b")):
        for index in range(3):
            token = (prefix + str(index)) * 32
            body = {"token": token, "debug": index == 0, "topic": app, "userId": app.split(".")[1] + "-user",
                    "tags": [app.split(".")[1] + "-tag"]}
            status, answer = api("POST", "/api/token", body)
            must(status, answer, f"registering {app}'s device {index}")
            if app == BETA:
                traces.update({token, token[-8:]})
        sent = must(*api("POST", "/api/send", {"target": {"user": app.split(".")[1] + "-user"}, "topic": app,
                                                "alert": {"title": "To " + app}}), f"a send to {app}")
        channel = must(*api("POST", "/api/channels", {"topic": app, "environment": "production"}), f"{app}'s channel")
        if app == BETA:
            traces.update({sent["id"], channel["channel"]["id"], "To " + BETA})
            beta_send, beta_channel, beta_token = sent["id"], channel["channel"]["id"], ("b0" * 32)
    made = must(*api("POST", "/api/keys", {"name": "alpha-viewer", "scopes": ["read"], "apps": [ALPHA]}),
                "the viewer's key")
    viewer = made["secret"]

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_context(viewport={"width": 1200, "height": 800}).new_page()
        page.set_default_timeout(20_000)
        step("sign in as alpha's viewer")
        page.goto(BASE + "/console/sign-in")
        page.fill("#key", viewer)
        page.click("button[type=submit]")
        page.wait_for_url(re.compile(r"/console$"))

        def check(url, name, echoed=()):
            """Opens a page; none of beta's traces may be on it but the search terms it echoes back."""
            answer = page.goto(url)
            html = page.content()
            found = sorted(trace for trace in traces - set(echoed) if trace in html)
            if found:
                raise SystemExit(f"{url} shows beta's {found}")
            if name:
                page.screenshot(path=os.path.join(SHOTS, "viewer-" + name + ".png"))
            return answer.status, html

        step("follow every link the console offers the viewer")
        seen, queue, walked = set(), ["/console"], 0
        while queue and walked < 150:
            path = queue.pop(0)
            if path in seen:
                continue
            seen.add(path)
            status, html = check(BASE + path, re.sub(r"[^a-z0-9]+", "-", path.strip("/"))[:60] if walked < 12 else None)
            walked += 1
            if status >= 500:
                raise SystemExit(f"{path} answered {status}")
            for href in re.findall(r'href="([^"]+)"', html):
                href = href.replace("&amp;", "&")
                target = urllib.parse.urljoin(BASE + path, href).split("#")[0]
                if not target.startswith(BASE + "/console") or "/assets/" in target or "sign-" in target:
                    continue
                queue.append(target[len(BASE):])
        for required in ("/console", "/console/sends", "/console/devices", "/console/activities"):
            if required not in seen:
                raise SystemExit(f"the walk never reached {required}: {sorted(seen)}")
        if any(path.startswith(("/console/keys", "/console/audit", "/console/emulator")) for path in seen):
            raise SystemExit(f"the viewer was offered a page above its role or limits: {sorted(seen)}")
        step(f"walked {walked} pages without a trace of {BETA}")

        step("beta's resources by their links are not found; beta's app in a picker falls back to alpha")
        for path in (f"/console/sends/{beta_send}", f"/console/devices/{beta_token}"):
            status, _ = check(BASE + path, None)
            if status != 404:
                raise SystemExit(f"{path} answered {status}, not 404")
        for path, echoed in ((f"/console/devices?app={BETA}", ()), (f"/console/channels?app={BETA}", ()),
                             (f"/console/activities?app={BETA}", ()), ("/console/devices?user=beta-user", ("beta-user",)),
                             ("/console/devices?tag=beta-tag", ("beta-tag",)),
                             (f"/console/devices?q={beta_token[-8:]}", (beta_token[-8:],))):
            status, _ = check(BASE + path, None, echoed)
            if status != 200:
                raise SystemExit(f"{path} answered {status}")
        status, _ = check(BASE + "/console/emulator", None)
        if status != 403:
            raise SystemExit(f"the emulator's inboxes answered {status} to a scoped session, not 403")
        browser.close()
    step("done")


if __name__ == "__main__":
    main()
