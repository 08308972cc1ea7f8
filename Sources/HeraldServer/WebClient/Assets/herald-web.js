/*
 * herald-web.js — a website's side of Herald's Web Push (docs/web-push.md, "From a page").
 *
 *   <script src="https://push.example.com/herald-web.js"></script>
 *   const herald = new HeraldWeb({server: "https://push.example.com", topic: "com.example.app",
 *                                 applicationServerKey: "BPx…", serviceWorker: "/sw.js"});
 *   button.onclick = () => herald.subscribe({userId: "ada", tags: ["news"]});
 *
 * The site's own service worker (/sw.js above) imports Herald's:  importScripts("https://push.example.com/herald-sw.js");
 *
 * subscribe() asks for permission (call it from a click), subscribes with the app's VAPID public key and registers the
 * subscription with Herald. Registrations are queued (localStorage) and retried like the iOS SDK's: network errors,
 * 429 and 5xx after about 1, 2 and 4 seconds, then again at the next page load; a 4xx is dropped with its reason.
 */
(function (global) {
  "use strict";

  var QUEUE = "herald-web.queue";
  var CACHE = "herald-web";
  var RETRY_DELAYS = [1000, 2000, 4000];

  function base64UrlToBytes(text) {
    var padded = (text + "===".slice((text.length + 3) % 4)).replace(/-/g, "+").replace(/_/g, "/");
    var raw = atob(padded);
    var bytes = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    return bytes;
  }

  function sleep(ms) {
    return new Promise(function (resolve) { setTimeout(resolve, ms); });
  }

  /** The registry token of a subscription: the SHA-256 of its endpoint, in hex, as Herald stores it. */
  async function tokenOf(endpoint) {
    var digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(endpoint));
    return Array.from(new Uint8Array(digest)).map(function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  function HeraldWeb(options) {
    if (!options || !options.server || !options.topic) {
      throw new Error("HeraldWeb needs {server: Herald's URL, topic: the app's bundle id}.");
    }
    this.server = options.server.replace(/\/+$/, "");
    this.topic = options.topic;
    this.applicationServerKey = options.applicationServerKey || null;
    this.serviceWorker = options.serviceWorker || "/sw.js";
    this.registrationKey = options.registrationKey || null;
    this.retryDelays = options.retryDelays || RETRY_DELAYS;
    this.onError = options.onError || function (error) { console.warn("herald-web:", error.message); };
    // What the page could not deliver last time goes first.
    this.flush();
  }

  HeraldWeb.isSupported = function () {
    return "serviceWorker" in navigator && "PushManager" in global && "Notification" in global;
  };

  HeraldWeb.tokenOf = tokenOf;

  /**
   * Asks for permission, subscribes (or reuses the subscription this browser has) and registers it with Herald, with
   * the same optional fields as a device: userId, tags, preferredLanguages (the browser's by default), timeZone (the
   * browser's by default), installationId, appVersion. Resolves to the registry token.
   */
  HeraldWeb.prototype.subscribe = async function (fields) {
    if (!HeraldWeb.isSupported()) throw new Error("This browser has no Web Push (a service worker and the Push API).");
    if (!this.applicationServerKey) throw new Error("HeraldWeb needs applicationServerKey: the app's VAPID public key.");
    var registration = await navigator.serviceWorker.register(this.serviceWorker);
    await navigator.serviceWorker.ready;
    var permission = await Notification.requestPermission();
    if (permission !== "granted") throw new Error("Notifications are not allowed (" + permission + ").");
    var subscription = await registration.pushManager.getSubscription();
    if (!subscription) {
      subscription = await registration.pushManager.subscribe({
        userVisibleOnly: true, applicationServerKey: base64UrlToBytes(this.applicationServerKey)
      });
    }
    return this.register(subscription.toJSON(), fields);
  };

  /**
   * Registers a subscription (PushSubscription.toJSON()) with Herald: queued, then sent. Resolves to the registry
   * token once Herald took it, or once it is queued for a later try.
   */
  HeraldWeb.prototype.register = async function (subscription, fields) {
    var body = Object.assign({
      tokenKind: "webpush", topic: this.topic, subscription: subscription,
      preferredLanguages: navigator.languages ? Array.from(navigator.languages).slice(0, 10) : undefined,
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone
    }, fields || {});
    var token = await tokenOf(subscription.endpoint);
    await this.remember(token);
    this.enqueue({method: "POST", path: "/api/token", body: body});
    await this.flush();
    return token;
  };

  /** Removes this browser's subscription from Herald and unsubscribes it. */
  HeraldWeb.prototype.unsubscribe = async function () {
    var registration = await navigator.serviceWorker.getRegistration(this.serviceWorker);
    var subscription = registration && await registration.pushManager.getSubscription();
    var token = await this.rememberedToken() || (subscription && await tokenOf(subscription.endpoint));
    if (subscription) await subscription.unsubscribe();
    if (token) {
      this.enqueue({method: "DELETE", path: "/api/token/" + token});
      await this.flush();
    }
  };

  /** Reports a notification opened from the page (the service worker reports received and opened by itself). */
  HeraldWeb.prototype.report = async function (type, sendId) {
    var token = await this.rememberedToken();
    if (!token || !sendId) return;
    this.enqueue({method: "POST", path: "/api/events", body: {events: [
      {type: type, token: token, sendId: sendId, at: new Date().toISOString()}]}});
    await this.flush();
  };

  // The service worker reads what it needs to report receipts from the Cache API, which it shares with the page.
  HeraldWeb.prototype.remember = async function (token) {
    if (!global.caches) return;
    var cache = await caches.open(CACHE);
    await cache.put("/herald-web/config", new Response(JSON.stringify({
      server: this.server, registrationKey: this.registrationKey, token: token
    }), {headers: {"Content-Type": "application/json"}}));
  };

  HeraldWeb.prototype.rememberedToken = async function () {
    if (!global.caches) return null;
    var cache = await caches.open(CACHE);
    var found = await cache.match("/herald-web/config");
    return found ? (await found.json()).token : null;
  };

  HeraldWeb.prototype.queue = function () {
    try { return JSON.parse(localStorage.getItem(QUEUE) || "[]"); } catch (e) { return []; }
  };

  HeraldWeb.prototype.saveQueue = function (items) {
    try { localStorage.setItem(QUEUE, JSON.stringify(items.slice(-50))); } catch (e) { /* private mode: memory only */ }
  };

  HeraldWeb.prototype.enqueue = function (item) {
    var items = this.queue();
    items.push(item);
    this.saveQueue(items);
  };

  /** Sends what is queued, oldest first; what cannot be sent now stays for the next call or page load. */
  HeraldWeb.prototype.flush = async function () {
    var self = this;
    // One flush at a time; a call during one waits for it and then sends what was queued meanwhile.
    if (this.flushing) return this.flushing.then(function () { return self.flush(); });
    this.flushing = (async function () {
      var items = self.queue();
      while (items.length > 0) {
        var outcome = await self.send(items[0]);
        if (outcome === "retry") return;
        items = self.queue();
        items.shift();
        self.saveQueue(items);
      }
    })().finally(function () { self.flushing = null; });
    return this.flushing;
  };

  /** One queued request with its retries: "done" (taken, or refused for good) or "retry" (later). */
  HeraldWeb.prototype.send = async function (item) {
    var headers = {"Content-Type": "application/json"};
    if (this.registrationKey) headers["X-Herald-Registration-Key"] = this.registrationKey;
    for (var attempt = 0; ; attempt++) {
      var status = 0, reason = "";
      try {
        var answer = await fetch(this.server + item.path, {
          method: item.method, headers: headers, body: item.body ? JSON.stringify(item.body) : undefined,
          mode: "cors", credentials: "omit"
        });
        status = answer.status;
        if (status < 300) return "done";
        try { reason = (await answer.json()).error || ""; } catch (e) { reason = ""; }
      } catch (error) {
        reason = error.message;
      }
      var transient = status === 0 || status === 429 || status >= 500;
      if (!transient) {
        this.onError(new Error(item.method + " " + item.path + " was refused (" + status + "): " + reason));
        return "done";
      }
      if (attempt >= this.retryDelays.length) return "retry";
      await sleep(this.retryDelays[attempt]);
    }
  };

  global.HeraldWeb = HeraldWeb;
})(typeof self !== "undefined" ? self : this);
