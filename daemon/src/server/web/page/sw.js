// The service worker: keeps the page's own files so the app starts when
// hearthd cannot be reached. It never stores the conversation: only the
// files below are cached, and the WebSocket (where every message travels)
// is not a fetch it sees.

const CACHE = "hearth-page-1";
const PAGE = [
  "/", "/app.css", "/app.js", "/connection.js", "/markdown.js", "/chat.js",
  "/pages.js", "/chart.js", "/manifest.webmanifest", "/icon.svg",
];

self.addEventListener("install", (event) => {
  event.waitUntil(self.skipWaiting());
});

self.addEventListener("activate", (event) => {
  event.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((key) => key !== CACHE).map((key) => caches.delete(key))))
    .then(() => self.clients.claim()));
});

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== location.origin || !PAGE.includes(url.pathname)) {
    return;
  }
  // The network first, so a new hearthd's page is used; the cache offline.
  event.respondWith(fetch(event.request).then((response) => {
    if (response.ok) {
      const copy = response.clone();
      caches.open(CACHE).then((cache) => cache.put(url.pathname, copy));
    }
    return response;
  }).catch(() => caches.match(url.pathname).then((cached) => cached ?? Response.error())));
});
