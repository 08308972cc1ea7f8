// Compose: builds the send body from the form, asks the send API for a dry run as you type, shows its verdict (next
// to the field it names, when it names one), the payload, the headers and a banner preview, and sends or schedules.
// Text is only ever set with textContent.
"use strict";
(function () {
  const form = document.getElementById("compose");
  if (!form) return;
  const csrf = document.querySelector('meta[name="herald-csrf"]').content;
  const $ = (id) => document.getElementById(id);
  const text = (id) => $(id).value.trim();
  let timer = null;
  let generation = 0;
  // The send API's field names, and the APNs reasons that are about one field, to the input that holds it.
  const inputs = {
    sendAt: "send-at", localTime: "local-time", timeZone: "time-zone", rate: "rate", badge: "badge", sound: "sound",
    category: "category", threadId: "thread-id", interruptionLevel: "interruption-level",
    relevanceScore: "relevance-score", priority: "priority", expiration: "expiration", collapseId: "collapse-id",
    data: "data", localizations: "localizations", pushType: "push-type", quietHours: "quiet-hours",
    BadCollapseId: "collapse-id", BadPriority: "priority", BadExpirationDate: "expiration",
  };

  function fieldError(id, message) {
    const error = new Error(message);
    error.field = id;
    return error;
  }

  function parseJSON(id, label) {
    const value = text(id);
    if (value === "") return undefined;
    try { return JSON.parse(value); } catch (e) { throw fieldError(id, label + " is not valid JSON: " + e.message); }
  }

  function number(id, label) {
    const value = text(id);
    if (value === "") return undefined;
    const parsed = Number(value);
    if (!Number.isFinite(parsed)) throw fieldError(id, label + " must be a number.");
    return parsed;
  }

  function clearFieldErrors() {
    for (const shown of form.querySelectorAll(".field-error")) {
      const input = $(shown.dataset.for);
      input.removeAttribute("aria-invalid");
      const described = (input.getAttribute("aria-describedby") || "").split(" ").filter((d) => d && d !== shown.id);
      if (described.length) input.setAttribute("aria-describedby", described.join(" ")); else input.removeAttribute("aria-describedby");
      shown.remove();
    }
  }

  // Shows a message under its input, tied to it for screen readers.
  function showFieldError(id, message) {
    const input = $(id);
    if (!input) return;
    const shown = document.createElement("p");
    shown.className = "field-error";
    shown.id = id + "-error";
    shown.dataset.for = id;
    shown.textContent = message;
    input.insertAdjacentElement("afterend", shown);
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", ((input.getAttribute("aria-describedby") || "") + " " + shown.id).trim());
  }

  function when() { return form.querySelector('input[name="when"]:checked').value; }

  const pad = (n) => String(n).padStart(2, "0");

  // A datetime-local value in the browser's zone as RFC 3339 with that zone's offset on that date. The parts come
  // from the parsed date, so a time a daylight-saving change skips is the time the browser moved it to.
  function instant(value) {
    const date = new Date(value);
    if (value === "" || Number.isNaN(date.getTime())) return null;
    const offset = -date.getTimezoneOffset();
    const sign = offset >= 0 ? "+" : "-";
    return date.getFullYear() + "-" + pad(date.getMonth() + 1) + "-" + pad(date.getDate()) + "T" +
      pad(date.getHours()) + ":" + pad(date.getMinutes()) + ":" + pad(date.getSeconds()) +
      sign + pad(Math.floor(Math.abs(offset) / 60)) + ":" + pad(Math.abs(offset) % 60);
  }

  function showWhen() {
    const choice = when();
    $("when-at-fields").hidden = choice !== "at";
    $("when-local-fields").hidden = choice !== "local";
    $("send").textContent = choice === "now" ? "Send" : "Schedule";
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const at = instant($("send-at").value);
    $("send-at-zone").textContent = at
      ? "In your browser's time zone, " + zone + ": " + at + ", that is " +
        new Date(at).toISOString().replace("T", " ").replace(/:00\.000Z$/, " UTC").replace(/\.000Z$/, " UTC") + "."
      : "In your browser's time zone, " + zone + ".";
  }

  function schedule(request) {
    const choice = when();
    if (choice === "at") {
      const at = instant($("send-at").value);
      if (!at) throw fieldError("send-at", "Choose the date and time to send at.");
      request.sendAt = at;
    } else if (choice === "local") {
      const local = $("local-time").value.slice(0, 19);
      if (!local) throw fieldError("local-time", "Choose the date and time each device should get it at.");
      request.localTime = local;
      if (text("time-zone")) request.timeZone = text("time-zone");
    }
    const rate = number("rate", "Rate");
    if (rate !== undefined) request.rate = rate;
  }

  // A test goes to one device now: the schedule and rate are for the send.
  function body(targetOverride) {
    const request = {};
    const kind = $("target-kind").value;
    const value = text("target-value");
    request.target = targetOverride || (kind === "topic" ? { topic: $("app").value } : { [kind]: value });
    request.topic = $("app").value;
    if ($("environment").value) request.environment = $("environment").value;
    const alert = {};
    if (text("title")) alert.title = text("title");
    if (text("subtitle")) alert.subtitle = text("subtitle");
    if (text("body")) alert.body = $("body").value;
    if (Object.keys(alert).length) request.alert = alert;
    const localizations = parseJSON("localizations", "Other languages");
    if (localizations !== undefined) request.localizations = localizations;
    const badge = number("badge", "Badge");
    if (badge !== undefined) request.badge = badge;
    if (text("sound")) request.sound = text("sound");
    if (text("category")) request.category = text("category");
    if (text("thread-id")) request.threadId = text("thread-id");
    if ($("interruption-level").value) request.interruptionLevel = $("interruption-level").value;
    const relevance = number("relevance-score", "Relevance");
    if (relevance !== undefined) request.relevanceScore = relevance;
    if ($("push-type").value !== "alert") request.pushType = $("push-type").value;
    if ($("priority").value) request.priority = Number($("priority").value);
    const expiration = number("expiration", "Expiration");
    if (expiration !== undefined) request.expiration = expiration;
    if (text("collapse-id")) request.collapseId = $("collapse-id").value;
    if ($("content-available").checked) request.contentAvailable = true;
    if ($("mutable-content").checked) request.mutableContent = true;
    if ($("encrypt").checked) request.encrypt = true;
    if ($("quiet-hours").value) request.quietHours = $("quiet-hours").value;
    const data = parseJSON("data", "Custom data");
    if (data !== undefined) request.data = data;
    if (!targetOverride) schedule(request);
    return request;
  }

  async function call(path, request) {
    const response = await fetch(path, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Herald-CSRF": csrf },
      body: JSON.stringify(request),
    });
    let answer = {};
    try { answer = await response.json(); } catch (e) { answer = { error: "The server answered " + response.status + "." }; }
    return { status: response.status, answer: answer };
  }

  function refuse(error) {
    setValidity(false, error.message);
    if (error.field) showFieldError(error.field, error.message);
  }

  // The send API names a bad field in its message ("The field \"sendAt\" is invalid: …") or by an APNs reason.
  function refused(answer) {
    const message = (answer.reason ? answer.reason + ": " : "") + (answer.error || "The check failed.");
    const named = /The field "([^"]+)"/.exec(answer.error || "");
    const id = named ? inputs[named[1]] : inputs[answer.reason];
    return id ? fieldError(id, message) : new Error(message);
  }

  // ok: true (ready), false (refused) or null (nothing to check yet: neither good nor bad).
  function setValidity(ok, message) {
    const validity = $("validity");
    validity.textContent = message;
    validity.className = ok === null ? "validity" : "validity " + (ok ? "ok" : "bad");
  }

  function showPreview(request) {
    const alert = request.alert || {};
    $("preview-app").textContent = request.topic || "";
    $("preview-title").textContent = alert.title || "";
    $("preview-subtitle").textContent = alert.subtitle || "";
    $("preview-body").textContent = alert.body || (request.contentAvailable ? "(silent: nothing is shown)" : "");
  }

  // What the target's web subscriptions show (docs/web-push.md): a body alone becomes the title; a click opens the
  // send's data.navigate, else the app's web origin.
  function showWebPreview(request, count) {
    $("web-preview-card").hidden = count === 0;
    if (count === 0) return;
    const alert = request.alert || {};
    $("web-count").textContent = "(" + count + " web subscription" + (count === 1 ? "" : "s") + ")";
    $("web-title").textContent = alert.title || alert.body || "";
    $("web-body").textContent = alert.title ? (alert.body || "") : "";
    const link = request.data && typeof request.data.navigate === "string" ? request.data.navigate : null;
    $("web-site").textContent = "Opens " + (link || "the app's web origin");
  }

  async function check() {
    const mine = ++generation;
    showWhen();
    clearFieldErrors();
    // An empty form is not a mistake: until it names who to send to, there is nothing for a dry run to check.
    if ($("target-kind").value !== "topic" && text("target-value") === "") {
      setValidity(null, "Choose who to send to, then write the notification: it is checked as you type.");
      $("target-count").textContent = "–";
      return;
    }
    let request;
    try { request = body(); } catch (e) { refuse(e); return; }
    showPreview(request);
    const { status, answer } = await call("/api/send?dryRun=true", request);
    if (mine !== generation) return;
    if (status !== 200) {
      refuse(refused(answer));
      $("target-count").textContent = "–";
      return;
    }
    const first = answer.notifications[0];
    const queued = answer.background || request.sendAt || request.localTime || request.rate;
    const web = answer.webSubscriptionCount || 0;
    $("target-count").textContent = String(answer.targetCount) + (web ? ", " + web + " of them in browsers" : "") +
      (queued ? " (sent in the background)" : "");
    showWebPreview(request, web);
    showSuppressed(answer.suppressed);
    $("headers").textContent = Object.keys(first.headers).sort().map((k) => k + ": " + first.headers[k]).join("\n");
    $("payload").textContent = answer.notifications.map((n) =>
      (n.language ? "// " + n.language + "\n" : "") + JSON.stringify(n.payload, null, 2)).join("\n\n");
    $("payload-size").textContent = "(" + first.payloadBytes + " of " + first.payloadLimit + " bytes)";
    const devices = answer.targetCount + " device" + (answer.targetCount === 1 ? "" : "s");
    if (request.sendAt) {
      setValidity(true, "Ready to schedule for " + devices + " at " + request.sendAt + ".");
    } else if (request.localTime) {
      setValidity(true, "Ready to schedule for " + devices + " at " + request.localTime + " in each device's time zone.");
    } else {
      setValidity(true, "Ready to send to " + devices + ".");
    }
  }

  // What each rule about the person removes or defers, from the dry run: nothing shown when no rule applies.
  function showSuppressed(suppressed) {
    const line = $("suppressed-count");
    const parts = [];
    if (suppressed && suppressed.preference) parts.push(suppressed.preference + " opted out of the category");
    if (suppressed && suppressed.frequencyCap) parts.push("about " + suppressed.frequencyCap + " over a frequency cap");
    if (suppressed && suppressed.quietHoursDropped) parts.push(suppressed.quietHoursDropped + " dropped in their quiet hours");
    if (suppressed && suppressed.quietHoursDeferred) parts.push(suppressed.quietHoursDeferred + " deferred to the end of their quiet hours");
    line.textContent = parts.length ? "Rules: " + parts.join(", ") + "." : "";
    line.hidden = parts.length === 0;
  }

  function checkSoon() {
    clearTimeout(timer);
    timer = setTimeout(check, 250);
  }

  async function send(targetOverride) {
    clearFieldErrors();
    let request;
    try { request = body(targetOverride); } catch (e) { refuse(e); $("result").textContent = e.message; return; }
    $("result").textContent = request.sendAt || request.localTime ? "Scheduling…" : "Sending…";
    const { status, answer } = await call("/api/send", request);
    if (status === 200 || status === 202) {
      window.location.assign("/console/sends/" + encodeURIComponent(answer.id));
    } else {
      const error = refused(answer);
      $("result").textContent = error.message;
      if (error.field) showFieldError(error.field, error.message);
    }
  }

  form.addEventListener("input", checkSoon);
  form.addEventListener("change", () => { showWhen(); checkSoon(); });
  form.addEventListener("submit", (event) => event.preventDefault());
  $("send").addEventListener("click", () => send());
  $("send-test").addEventListener("click", () => {
    const token = text("test-token");
    if (!token) { $("result").textContent = "Give the token of a registered device to test with."; $("test-token").focus(); return; }
    send({ token: token });
  });
  if (Intl.supportedValuesOf) {
    const list = $("time-zones");
    for (const zone of Intl.supportedValuesOf("timeZone")) {
      const option = document.createElement("option");
      option.value = zone;
      list.appendChild(option);
    }
  }
  check();
})();
