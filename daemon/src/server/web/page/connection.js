// The live connection to hearthd: the socket's protocol as JSON over a
// WebSocket on this page's own origin. Every request frame is answered by
// exactly one frame, in order, so answers are matched to requests by a
// queue. After a drop (a daemon restart, a network change) it reconnects
// and says `since` = the last message id it saw, so nothing is missed and
// nothing comes twice.
//
// The socket needs the session's key as well as its cookie: the browser
// sends the cookie to every port of this host, so another local server the
// owner visits gets it, but the key lives in this origin's storage alone.
// The login hands it over in the address's fragment (`/#key=…`, never sent
// to a server); it is kept here and dropped from the address bar.

const KEY = "hearth-key";

// The session's key: taken from the address once, then from storage.
export function sessionKey() {
  const handed = /^#key=([0-9a-f]{64})$/.exec(location.hash);
  if (handed) {
    localStorage.setItem(KEY, handed[1]);
    history.replaceState(null, "", location.pathname + location.search);
  }
  return localStorage.getItem(KEY);
}

const ANSWERS = new Set([
  "ack", "interrupted", "history", "status", "receipt", "schedules",
  "backed_up", "state", "image_stored", "image", "stats", "error",
  "web_login", "web_sessions", "search_results", "memory", "memory_node",
  "facts", "stopping", "reloaded",
]);

export class Connection {
  // `agent`: follow that agent's log (a subagent's) rather than the top agent's.
  constructor(handlers, agent = null) {
    this.handlers = handlers; // onWelcome(frame, first), onEvent(event), onState(text)
    this.agent = agent;
    this.closed = false;
    this.lastId = null;
    this.pending = [];
    this.socket = null;
    this.delay = 250;
    this.greeted = false;
  }

  open() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const key = sessionKey();
    if (!key) {
      this.handlers.onState("login");
      return;
    }
    const socket = new WebSocket(`${scheme}//${location.host}/ws`, ["hearth", `hearth-key.${key}`]);
    this.socket = socket;
    this.greeted = false;
    this.handlers.onState("connecting");
    socket.addEventListener("open", () => {
      const hello = { type: "hello", client: "web", version: 1 };
      if (this.lastId !== null) hello.since = this.lastId;
      if (this.agent) hello.agent = this.agent;
      socket.send(JSON.stringify(hello));
    });
    socket.addEventListener("message", (message) => this.receive(message.data));
    socket.addEventListener("close", () => this.dropped(socket));
  }

  receive(data) {
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      return;
    }
    if (!this.greeted) {
      if (frame.type === "welcome") {
        this.greeted = true;
        this.delay = 250;
        const first = this.lastId === null;
        if (first && frame.last_id !== null && frame.last_id !== undefined) {
          this.lastId = frame.last_id;
        }
        this.handlers.onState("live");
        this.handlers.onWelcome(frame, first);
      }
      return;
    }
    if (frame.type === "event") {
      if (frame.id !== undefined && isMessage(frame.kind)) {
        if (this.lastId === null || frame.id > this.lastId) this.lastId = frame.id;
      }
      this.handlers.onEvent(frame);
      return;
    }
    if (ANSWERS.has(frame.type)) {
      const waiting = this.pending.shift();
      if (!waiting) return;
      if (frame.type === "error") waiting.reject(new Error(frame.message));
      else waiting.resolve(frame);
    }
  }

  dropped(socket) {
    if (socket !== this.socket) return;
    for (const waiting of this.pending.splice(0)) {
      waiting.reject(new Error("the connection to hearthd dropped"));
    }
    if (this.closed) return;
    this.handlers.onState("offline");
    setTimeout(() => this.open(), this.delay);
    this.delay = Math.min(this.delay * 2, 5000);
  }

  // Sends a frame and resolves with its answer (rejects on an `error`).
  request(frame) {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN || !this.greeted) {
      return Promise.reject(new Error("not connected to hearthd"));
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.socket.send(JSON.stringify(frame));
    });
  }

  close() {
    this.closed = true;
    this.socket?.close();
  }
}

// The newest `limit` messages of `agent`'s log, read over a connection of
// their own.
export function readLog(agent, limit) {
  return new Promise((resolve, reject) => {
    const connection = new Connection({
      onState() {},
      onEvent() {},
      onWelcome(frame) {
        const request = { type: "history", limit };
        if (frame.last_id !== null && frame.last_id !== undefined) request.before = frame.last_id + 1;
        connection.request(request).then((answer) => resolve(answer.messages), reject)
          .finally(() => connection.close());
      },
    }, agent);
    connection.open();
  });
}

export function isMessage(kind) {
  return ["user", "reply", "echo", "tool", "note", "work"].includes(kind);
}
