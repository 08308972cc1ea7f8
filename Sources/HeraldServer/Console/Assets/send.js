// A send's page: while the send is queued or running, polls GET /api/sends/{id} and moves the progress bar and the
// receipt counts. A scheduled send is polled less often, and its time is also shown in the browser's time zone.
"use strict";
(function () {
  const panel = document.getElementById("send-progress");
  if (!panel) return;
  const id = panel.dataset.send;
  const $ = (name) => document.getElementById(name);

  // The server writes times in UTC; the person reading may think in another zone.
  function showScheduled(instant) {
    const at = $("send-at");
    if (!at) return;
    if (instant && instant !== at.getAttribute("datetime")) {
      at.setAttribute("datetime", instant);
      at.textContent = new Date(instant).toISOString().replace("T", " ").replace(/(\.\d+)?Z$/, " UTC");
    }
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    $("send-at-local").textContent = " (" + new Date(at.getAttribute("datetime")).toLocaleString() + " in your time zone, " + zone + ")";
  }

  function isScheduled(send) {
    return send.status === "queued" && send.sendAt && new Date(send.sendAt).getTime() > Date.now();
  }

  async function poll() {
    let send;
    try {
      const response = await fetch("/api/sends/" + encodeURIComponent(id) + "?limit=1&shards=none", { credentials: "same-origin" });
      if (!response.ok) { $("send-live").textContent = "Progress unavailable (" + response.status + ")."; return; }
      send = await response.json();
    } catch (e) {
      $("send-live").textContent = "Progress unavailable: retrying…";
      setTimeout(poll, 2000);
      return;
    }
    const counts = send.counts;
    // Devices a frequency cap left out are done too: they are among the target count, and get nothing.
    const capped = (send.suppressed && send.suppressed.frequencyCap) || 0;
    const done = counts.accepted + counts.rejected + counts.failed + capped;
    const total = send.targetCount || done || 1;
    const percent = Math.min(100, Math.floor((done * 100) / total));
    $("send-bar").max = total;
    $("send-bar").value = done;
    $("send-bar").textContent = percent + " %";
    $("send-percent").textContent = percent + " %";
    $("send-done").textContent = done + " of " + total + " devices";
    $("count-accepted").textContent = counts.accepted;
    $("count-rejected").textContent = counts.rejected;
    $("count-failed").textContent = counts.failed;
    $("count-capped").textContent = capped;
    const receipts = send.receipts || {};
    const rate = (share) => (share === undefined ? "—" : Math.round(share * 1000) / 10 + " %");
    $("count-received").textContent = receipts.received || 0;
    $("count-opened").textContent = receipts.opened || 0;
    $("count-actions").textContent = receipts.actions || 0;
    $("count-dismissed").textContent = receipts.dismissed || 0;
    $("rate-received").textContent = rate(receipts.receivedRate);
    $("rate-opened").textContent = rate(receipts.openedRate);
    $("send-status").textContent = send.status;
    $("send-status").className = "status-" + send.status;
    panel.dataset.status = send.status;
    if (isScheduled(send)) {
      showScheduled(send.sendAt);
    } else if ($("send-schedule")) {
      $("send-schedule").remove();
    }
    if (send.status === "queued" || send.status === "running") {
      setTimeout(poll, isScheduled(send) ? 10000 : 1000);
    } else {
      const cancel = $("cancel-send");
      if (cancel) cancel.remove();
      $("send-live").textContent = "The send is " + send.status + ". Reload for the outcomes by reason and device.";
    }
  }

  showScheduled();
  if (panel.dataset.status === "queued" || panel.dataset.status === "running") poll();
})();
