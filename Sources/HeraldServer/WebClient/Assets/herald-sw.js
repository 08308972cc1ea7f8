/*
 * herald-sw.js — Herald's part of a website's service worker (docs/web-push.md, "From a page").
 *
 * In the site's own service worker:   importScripts("https://push.example.com/herald-sw.js");
 *
 * Shows what Herald sends — Declarative Web Push ({"web_push": 8030, "notification": {…}}) in browsers that do not
 * show it themselves, and the classic format (the same "notification" without "web_push") everywhere — sets the app
 * badge, opens the notification's page (or its button's) when it is clicked, and reports `received` and `opened` to
 * Herald (POST /api/events) for the send the message names, as the iOS SDK does. The page's herald-web.js left the server, registration key and token in the Cache API for it.
 */
(function () {
  "use strict";

  var CACHE = "herald-web";
  var RETRY_DELAYS = [1000, 2000, 4000];

  async function config() {
    var cache = await caches.open(CACHE);
    var found = await cache.match("/herald-web/config");
    return found ? found.json() : null;
  }

  function sleep(ms) {
    return new Promise(function (resolve) { setTimeout(resolve, ms); });
  }

  async function report(type, sendId) {
    if (!sendId) return;
    var settings = await config();
    if (!settings || !settings.token) return;
    var headers = {"Content-Type": "application/json"};
    if (settings.registrationKey) headers["X-Herald-Registration-Key"] = settings.registrationKey;
    var body = JSON.stringify({events: [{type: type, token: settings.token, sendId: sendId, at: new Date().toISOString()}]});
    for (var attempt = 0; ; attempt++) {
      var status = 0;
      try {
        status = (await fetch(settings.server + "/api/events", {method: "POST", headers: headers, body: body})).status;
        if (status < 300 || (status < 500 && status !== 429)) return;
      } catch (error) { /* offline: retried */ }
      if (attempt >= RETRY_DELAYS.length) return;
      await sleep(RETRY_DELAYS[attempt]);
    }
  }

  /** The message a push carries: Herald's declarative JSON, or null for a payload it cannot read. */
  function messageOf(event) {
    if (!event.data) return null;
    try { return event.data.json(); } catch (error) { return null; }
  }

  self.addEventListener("push", function (event) {
    var message = messageOf(event);
    if (!message || !message.notification || !message.notification.title) return;
    var shown = message.notification;
    var sendId = message.herald && message.herald.send;
    var links = {};
    var actions = (Array.isArray(shown.actions) ? shown.actions : []).map(function (button) {
      if (button.navigate) links[button.action] = button.navigate;
      return {action: button.action, title: button.title};
    });
    var options = {
      body: shown.body, tag: shown.tag, lang: shown.lang, dir: shown.dir || "auto", silent: shown.silent === true,
      timestamp: shown.timestamp, actions: actions,
      data: {navigate: shown.navigate, links: links, sendId: sendId}
    };
    var work = [self.registration.showNotification(shown.title, options), report("received", sendId)];
    if (typeof message.app_badge === "number" && self.navigator && self.navigator.setAppBadge) {
      work.push(self.navigator.setAppBadge(message.app_badge).catch(function () {}));
    }
    event.waitUntil(Promise.all(work));
  });

  self.addEventListener("notificationclick", function (event) {
    var data = event.notification.data || {};
    event.notification.close();
    var work = [report("opened", data.sendId)];
    // A button opens its own page; the notification its link, or (classic messages may have none) the site.
    var link = (event.action && data.links && data.links[event.action]) || data.navigate || self.registration.scope;
    work.push(self.clients.openWindow(link));
    event.waitUntil(Promise.all(work));
  });
})();
