// Compose: builds the send body from the form, asks the send API for a dry run as you type, shows its verdict,
// the payload, the headers and a banner preview, and sends. Text is only ever set with textContent.
"use strict";
(function () {
  const form = document.getElementById("compose");
  if (!form) return;
  const csrf = document.querySelector('meta[name="herald-csrf"]').content;
  const $ = (id) => document.getElementById(id);
  const text = (id) => $(id).value.trim();
  let timer = null;
  let generation = 0;

  function parseJSON(id, label) {
    const value = text(id);
    if (value === "") return undefined;
    try { return JSON.parse(value); } catch (e) { throw new Error(label + " is not valid JSON: " + e.message); }
  }

  function number(id, label) {
    const value = text(id);
    if (value === "") return undefined;
    const parsed = Number(value);
    if (!Number.isFinite(parsed)) throw new Error(label + " must be a number.");
    return parsed;
  }

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
    const data = parseJSON("data", "Custom data");
    if (data !== undefined) request.data = data;
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

  function setValidity(ok, message) {
    const validity = $("validity");
    validity.textContent = message;
    validity.className = "validity " + (ok ? "ok" : "bad");
  }

  function showPreview(request) {
    const alert = request.alert || {};
    $("preview-app").textContent = request.topic || "";
    $("preview-title").textContent = alert.title || "";
    $("preview-subtitle").textContent = alert.subtitle || "";
    $("preview-body").textContent = alert.body || (request.contentAvailable ? "(silent: nothing is shown)" : "");
  }

  async function check() {
    const mine = ++generation;
    let request;
    try { request = body(); } catch (e) { setValidity(false, e.message); return; }
    showPreview(request);
    const { status, answer } = await call("/api/send?dryRun=true", request);
    if (mine !== generation) return;
    if (status !== 200) {
      setValidity(false, (answer.reason ? answer.reason + ": " : "") + (answer.error || "The check failed."));
      $("target-count").textContent = "–";
      return;
    }
    const first = answer.notifications[0];
    $("target-count").textContent = String(answer.targetCount) + (answer.background ? " (sent in the background)" : "");
    $("headers").textContent = Object.keys(first.headers).sort().map((k) => k + ": " + first.headers[k]).join("\n");
    $("payload").textContent = answer.notifications.map((n) =>
      (n.language ? "// " + n.language + "\n" : "") + JSON.stringify(n.payload, null, 2)).join("\n\n");
    $("payload-size").textContent = "(" + first.payloadBytes + " of " + first.payloadLimit + " bytes)";
    setValidity(true, "Ready to send to " + answer.targetCount + " device" + (answer.targetCount === 1 ? "" : "s") + ".");
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(check, 250);
  }

  async function send(targetOverride) {
    let request;
    try { request = body(targetOverride); } catch (e) { setValidity(false, e.message); return; }
    $("result").textContent = "Sending…";
    const { status, answer } = await call("/api/send", request);
    if (status === 200 || status === 202) {
      window.location.assign("/console/sends/" + encodeURIComponent(answer.id));
    } else {
      $("result").textContent = (answer.reason ? answer.reason + ": " : "") + (answer.error || "The send failed.");
    }
  }

  form.addEventListener("input", schedule);
  form.addEventListener("change", schedule);
  form.addEventListener("submit", (event) => event.preventDefault());
  $("send").addEventListener("click", () => send());
  $("send-test").addEventListener("click", () => {
    const token = text("test-token");
    if (!token) { $("result").textContent = "Give the token of a registered device to test with."; $("test-token").focus(); return; }
    send({ token: token });
  });
  check();
})();
