// The field app's service worker: it caches the app shell, so that after one visit the
// app opens with no network at all. The node writes the app's version below (a hash of
// the app's files and of the shared ones under /shared/): a new binary with other files
// is a new worker, which replaces the old one at once and drops its cache. The API is
// never cached.

const VERSION = "__FIELD_VERSION__";
const CACHE = "field-" + VERSION;
const SHELL = [
  "/field/",
  "/field/index.html",
  "/field/field.css",
  "/field/manifest.webmanifest",
  "/field/icon-192.png",
  "/field/icon-512.png",
  "/field/js/app.js",
  "/field/js/db.js",
  "/field/js/outbox.js",
  "/shared/app.css",
  "/shared/dom.js",
  "/shared/api.js",
  "/shared/moves.js",
  "/shared/moves.json",
  "/shared/words.js",
];

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    await cache.addAll(SHELL.map((u) => new Request(u, { cache: "reload" })));
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith("field-") && name !== CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

self.addEventListener("message", (event) => {
  if (event.data === "version" && event.source) event.source.postMessage({ version: VERSION });
});

self.addEventListener("fetch", (event) => {
  const req = event.request;
  const url = new URL(req.url);
  if (req.method !== "GET" || url.origin !== self.location.origin || url.pathname.startsWith("/v1/")) return;
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    const key = req.mode === "navigate" && url.pathname.startsWith("/field/") ? "/field/" : url.pathname;
    const hit = await cache.match(key);
    if (hit) return hit;
    return fetch(req);
  })());
});
