// The page's entry: the connection, the conversation and the other pages,
// the tabs between them, and the service worker that keeps the page (never
// the conversation) for offline starts.

import { Connection, sessionKey } from "./connection.js";
import { Chat } from "./chat.js";
import * as pages from "./pages.js";

const runs = [];
let chat = null;
const connection = new Connection({
  onState(state) {
    const badge = document.querySelector("#state");
    const words = { live: "live", offline: "reconnecting…", login: "log in again: run hearth web" };
    badge.textContent = words[state] ?? "connecting…";
    badge.className = state;
  },
  onWelcome(frame, first) {
    chat.welcomed(frame, first);
  },
  onEvent(event) {
    if (event.kind === "subagent") runs.unshift({ at: new Date().toISOString(), text: event.text ?? "" });
    chat.event(event);
  },
});

const openers = {
  costs: (root) => pages.costs(connection, root),
  memory: (root) => pages.memory(connection, root),
  schedules: (root) => pages.schedules(connection, root),
  agents: (root) => pages.agents(connection, root, runs),
  bridges: (root) => pages.bridges(connection, root),
};

function show(name) {
  for (const page of document.querySelectorAll(".page")) page.hidden = page.id !== name;
  for (const tab of document.querySelectorAll("nav button")) {
    tab.classList.toggle("current", tab.dataset.page === name);
  }
  document.querySelector("#bottom").hidden = name !== "chat";
  openers[name]?.(document.querySelector(`#${name}`));
}

// The login's key leaves the address bar at once, before anything else runs.
sessionKey();

document.addEventListener("DOMContentLoaded", () => {
  chat = new Chat(connection, document.body);
  for (const tab of document.querySelectorAll("nav button")) {
    tab.addEventListener("click", () => show(tab.dataset.page));
  }
  connection.open();
  if ("serviceWorker" in navigator) navigator.serviceWorker.register("/sw.js").catch(() => {});
});

// For tests and the curious: the page's state, read-only in spirit.
window.hearth = { connection, get chat() { return chat; }, show };
