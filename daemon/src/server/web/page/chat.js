// The conversation: messages with their source and time, the reply as it
// streams, the activity line, approvals, images, paging back through the
// history, jumping to a date, and search: the hits listed, each opened in
// its context.

import { renderMarkdown, el } from "./markdown.js";

const PAGE = 50;
const CONTEXT = 10; // messages shown above a search hit opened

// The line shown after a reply that is not a whole answer, by its status:
// the same words as every other client (protocol/src/ending.rs; a test in
// web/page.rs keeps them equal).
export const REPLY_NOTES = {
  cut_max_tokens: `[cut off: the answer reached its output limit; raise max_tokens in [model] of config.toml]`,
  cut_content_filter: `[cut off by the provider's content filter]`,
  cut_context_window: `[cut off: the model's context window is full; use a model with a larger window, or layout = "small" in [agent]]`,
  refused: `[the model refused to answer]`,
};

export class Chat {
  constructor(connection, root) {
    this.connection = connection;
    this.list = root.querySelector("#messages");
    this.older = root.querySelector("#older");
    this.newer = root.querySelector("#newer");
    this.activity = root.querySelector("#activity");
    this.approvals = root.querySelector("#approvals");
    this.attachments = root.querySelector("#attachments");
    this.input = root.querySelector("#input");
    this.interruptButton = root.querySelector("#interrupt");
    this.agent = null;
    this.lastId = null; // the newest message in the log, as far as we know
    this.shown = []; // ids shown, ascending, contiguous
    this.streaming = null;
    this.streamText = "";
    this.pendingImages = [];
    this.images = new Map(); // sha256 -> Promise<object URL>
    this.busy = false;
    this.wire(root);
  }

  wire(root) {
    root.querySelector("#composer").addEventListener("submit", (event) => {
      event.preventDefault();
      this.send();
    });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.send();
      }
    });
    this.interruptButton.addEventListener("click", () => {
      this.connection.request({ type: "interrupt" }).catch((err) => this.problem(err));
    });
    this.older.addEventListener("click", () => this.loadOlder());
    this.newer.addEventListener("click", () => this.loadNewest());
    root.querySelector("#file").addEventListener("change", (event) => {
      this.attach([...event.target.files]);
      event.target.value = "";
    });
    this.input.addEventListener("paste", (event) => {
      const files = [...(event.clipboardData?.files ?? [])].filter((f) => f.type.startsWith("image/"));
      if (files.length) {
        event.preventDefault();
        this.attach(files);
      }
    });
    const chat = root.querySelector("#chat");
    chat.addEventListener("dragover", (event) => event.preventDefault());
    chat.addEventListener("drop", (event) => {
      event.preventDefault();
      this.attach([...event.dataTransfer.files].filter((f) => f.type.startsWith("image/")));
    });
    root.querySelector("#jump").addEventListener("change", (event) => {
      if (event.target.value) this.jumpToDate(event.target.value);
    });
    root.querySelector("#search").addEventListener("submit", (event) => {
      event.preventDefault();
      const query = root.querySelector("#query").value.trim();
      if (query) this.search(query);
    });
  }

  // After `welcome`: the first time, the newest page; after a reconnect the
  // daemon sends what was missed as events.
  welcomed(frame, first) {
    this.agent = frame.agent;
    this.setBusy(frame.busy);
    if (frame.last_id !== null && frame.last_id !== undefined) {
      this.lastId = Math.max(this.lastId ?? -1, frame.last_id);
    }
    if (first) this.loadNewest();
  }

  event(event) {
    switch (event.kind) {
      case "delta":
        this.stream(event.text ?? "");
        break;
      case "busy":
        this.setBusy(true);
        break;
      case "idle":
        this.setBusy(false);
        this.endStream();
        break;
      case "error":
        this.setBusy(false);
        this.endStream();
        this.showActivity(event.text ?? "the turn failed", "error");
        break;
      case "approval":
        this.approval(event);
        break;
      case "activity":
        this.showActivity(describe(event.activity), "");
        break;
      case "subagent":
        this.showActivity(event.text ?? "a subagent started", "");
        break;
      case "ready":
        break;
      default:
        if (event.id !== undefined) this.live(event);
    }
  }

  live(message) {
    if (message.kind === "reply" || message.kind === "echo") this.endStream();
    this.lastId = Math.max(this.lastId ?? -1, message.id);
    const end = this.shown.length ? this.shown[this.shown.length - 1] : null;
    // Only when the window reaches the log's end; otherwise "Newest" brings it.
    if (end === null || message.id === end + 1) {
      this.add(message);
      this.scrollToEnd();
    }
    this.updateButtons();
  }

  add(message) {
    if (this.shown.includes(message.id)) return;
    const node = this.render(message);
    const after = this.shown.findIndex((id) => id > message.id);
    if (after === -1) {
      this.list.append(node);
      this.shown.push(message.id);
    } else {
      this.list.insertBefore(node, this.list.querySelector(`[data-id="${this.shown[after]}"]`));
      this.shown.splice(after, 0, message.id);
    }
    this.link(node, message);
  }

  // A voice note's transcript is shown once: as the voice note's words, in
  // place of `[voice 0:42, transcribing]`, its own message kept hidden;
  // as a message of its own only while the voice note is not shown (on an
  // older page). A second transcript (`hearth transcribe`) replaces the first.
  link(node, message) {
    const of = message.transcript_of;
    if (of !== undefined && of !== null) {
      node.dataset.transcriptOf = String(of);
      node.transcript = message;
      const voice = this.list.querySelector(`[data-id="${of}"]`);
      if (voice) this.hear(voice, node);
      return;
    }
    for (const transcript of this.list.querySelectorAll(`[data-transcript-of="${message.id}"]`)) {
      this.hear(node, transcript);
    }
  }

  hear(voice, node) {
    const transcript = node.transcript;
    node.classList.add("linked");
    if (Number(voice.dataset.heard ?? -1) > transcript.id) return;
    voice.dataset.heard = String(transcript.id);
    voice.classList.add("heard");
    const words = renderMarkdown(transcript.text ?? "");
    const said = voice.querySelector(":scope > .md");
    if (said) said.replaceWith(words);
    else voice.querySelector("header").after(words);
  }

  render(message) {
    const article = el("article");
    article.className = `message kind-${message.kind}`;
    article.dataset.id = String(message.id);
    const head = el("header");
    head.append(el("span", message.source || message.agent), " ");
    head.append(el("span", message.kind), " ");
    const time = el("time", when(message.at));
    time.dateTime = message.at ?? "";
    head.append(time, " ");
    head.append(el("span", `#${message.id}`));
    if (message.status) head.append(" ", el("span", message.status));
    for (const span of head.querySelectorAll("span")) span.className = "meta";
    article.append(head);
    const text = message.text ?? "";
    if (message.kind === "tool") {
      const details = el("details");
      details.append(el("summary", text.split("\n", 1)[0].slice(0, 120)));
      details.append(el("pre", text));
      article.append(details);
    } else if (message.kind === "note") {
      article.append(el("p", text));
    } else if (text) {
      article.append(renderMarkdown(text));
    }
    const ending = message.kind === "reply" && REPLY_NOTES[message.status];
    if (ending) {
      const note = el("p", ending);
      note.className = "ending";
      article.append(note);
    }
    if (message.images?.length) {
      const images = el("div");
      images.className = "images";
      for (const image of message.images) images.append(this.image(image));
      article.append(images);
    }
    return article;
  }

  // An image of a message, fetched once with `image_get`.
  image(ref) {
    const img = el("img");
    img.alt = ref.name ?? `image ${ref.sha256.slice(0, 12)}`;
    if (ref.width && ref.height) {
      img.width = ref.width;
      img.height = ref.height;
    }
    if (!this.images.has(ref.sha256)) {
      this.images.set(ref.sha256, this.connection
        .request({ type: "image_get", sha256: ref.sha256 })
        .then((frame) => URL.createObjectURL(blob(frame.data_base64, frame.media_type))));
    }
    this.images.get(ref.sha256).then((url) => { img.src = url; }, () => {
      this.images.delete(ref.sha256);
      img.alt = `${img.alt} (not available)`;
    });
    return img;
  }

  stream(piece) {
    if (!this.streaming) {
      this.streaming = el("article");
      this.streaming.className = "message kind-reply streaming";
      this.streaming.id = "streaming";
      const head = el("header");
      head.append(el("span", this.agent ?? "hearth"), " ", el("span", "writing…"));
      for (const span of head.querySelectorAll("span")) span.className = "meta";
      this.streaming.append(head, el("div"));
      this.list.after(this.streaming);
      this.streamText = "";
    }
    this.streamText += piece;
    this.streaming.lastChild.replaceWith(renderMarkdown(this.streamText));
    this.scrollToEnd();
  }

  endStream() {
    this.streaming?.remove();
    this.streaming = null;
    this.streamText = "";
  }

  setBusy(busy) {
    this.busy = busy;
    this.interruptButton.disabled = !busy;
    this.showActivity(busy ? "working…" : "", "");
  }

  showActivity(text, className) {
    this.activity.textContent = text;
    this.activity.className = className;
  }

  problem(err) {
    this.showActivity(err.message ?? String(err), "error");
  }

  approval(event) {
    const approval = event.approval;
    if (!approval) return;
    let card = this.approvals.querySelector(`[data-approval="${CSS.escape(approval.id)}"]`);
    if (approval.allowed !== undefined && approval.allowed !== null) {
      card?.remove();
      this.showActivity(event.text ?? "", "");
      return;
    }
    if (card) return;
    card = el("div");
    card.className = "approval";
    card.dataset.approval = approval.id;
    card.append(el("p", event.text ?? approval.tool));
    const args = el("pre", approval.arguments);
    card.append(args);
    const answer = (allow) => {
      for (const button of card.querySelectorAll("button")) button.disabled = true;
      this.connection
        .request({ type: "approve", id: approval.id, allow })
        .catch((err) => {
          card.remove();
          this.problem(err);
        });
    };
    const allow = el("button", "Allow");
    allow.className = "allow";
    allow.addEventListener("click", () => answer(true));
    const deny = el("button", "Deny");
    deny.className = "deny";
    deny.addEventListener("click", () => answer(false));
    const row = el("div");
    row.className = "row";
    row.append(allow, deny);
    card.append(row);
    this.approvals.append(card);
  }

  async attach(files) {
    for (const file of files) {
      try {
        const data = await base64(file);
        const stored = await this.connection.request({
          type: "image_put", media_type: file.type, data_base64: data,
        });
        this.pendingImages.push(stored.sha256);
        const thumb = el("img");
        thumb.alt = file.name;
        thumb.src = URL.createObjectURL(file);
        thumb.dataset.sha256 = stored.sha256;
        this.attachments.append(thumb);
      } catch (err) {
        this.problem(err);
      }
    }
  }

  async send() {
    const text = this.input.value;
    if (!text.trim() && !this.pendingImages.length) return;
    const frame = { type: "submit", text, source: "web" };
    if (this.pendingImages.length) frame.images = [...this.pendingImages];
    try {
      await this.connection.request(frame);
      this.input.value = "";
      this.pendingImages = [];
      this.attachments.replaceChildren();
    } catch (err) {
      this.problem(err);
    }
  }

  async page(before, limit) {
    const frame = { type: "history", limit };
    if (before !== null) frame.before = before;
    return (await this.connection.request(frame)).messages;
  }

  async loadNewest() {
    this.list.replaceChildren();
    this.shown = [];
    if (this.lastId !== null) {
      for (const message of await this.page(this.lastId + 1, PAGE)) this.add(message);
    }
    this.updateButtons();
    this.scrollToEnd();
  }

  async loadOlder() {
    if (!this.shown.length) return;
    const first = this.list.firstElementChild;
    const messages = await this.page(this.shown[0], PAGE);
    for (const message of messages.reverse()) this.add(message);
    this.updateButtons();
    first?.scrollIntoView();
  }

  // Shows the messages from `id` on, as a window that "Newest" leaves.
  async showFrom(id) {
    this.list.replaceChildren();
    this.shown = [];
    for (const message of await this.page(id + PAGE, PAGE)) this.add(message);
    this.updateButtons();
    this.list.querySelector(`[data-id="${id}"]`)?.scrollIntoView();
  }

  // The first message written on or after `day` (YYYY-MM-DD), found by
  // bisecting the log: ids are dense and in time order.
  async jumpToDate(day) {
    if (this.lastId === null) return;
    const start = new Date(`${day}T00:00:00`).getTime();
    let low = 0;
    let high = this.lastId;
    while (low < high) {
      const middle = Math.floor((low + high) / 2);
      const [message] = await this.page(middle + 1, 1);
      if (new Date(message.at).getTime() < start) low = middle + 1;
      else high = middle;
    }
    await this.showFrom(low);
  }

  // Shows the messages around a search hit (`n` messages from `id`), the
  // hit marked and in the middle of the screen, a few earlier messages
  // above it: the hit in its context, as a window "Newest" leaves.
  async showAround(id, n) {
    this.list.replaceChildren();
    this.shown = [];
    for (const message of await this.page(id + PAGE - CONTEXT, PAGE)) this.add(message);
    this.updateButtons();
    for (const node of this.list.querySelectorAll("[data-id]")) {
      const at = Number(node.dataset.id);
      if (at >= id && at < id + n) node.classList.add("found");
    }
    this.list.querySelector(".found")?.scrollIntoView({ block: "center" });
  }

  async search(query) {
    const results = document.querySelector("#results");
    results.replaceChildren();
    try {
      const frame = await this.connection.request({ type: "search", query, limit: 20 });
      if (!frame.hits.length) results.append(el("li", "nothing found"));
      for (const hit of frame.hits) {
        const item = el("li");
        const button = el("button");
        button.dataset.id = String(hit.id);
        const what = hit.kind === "line" ? `summary of ${hit.n}` : hit.source || hit.kind;
        button.append(el("span", `#${hit.id} ${when(hit.at)} ${what}: `), snippet(hit.snippet));
        button.addEventListener("click", () => this.showAround(hit.id, hit.n ?? 1));
        item.append(button);
        results.append(item);
      }
    } catch (err) {
      results.append(el("li", `Search is not available: ${err.message}. Jump by date instead.`));
    }
  }

  updateButtons() {
    const first = this.shown[0];
    const last = this.shown[this.shown.length - 1];
    this.older.hidden = !this.shown.length || first === 0;
    this.newer.hidden = !this.shown.length || last === this.lastId;
    document.querySelector("#first").hidden = first !== 0;
  }

  scrollToEnd() {
    const end = this.streaming ?? this.list.lastElementChild;
    end?.scrollIntoView({ block: "end" });
  }
}

// What an `activity` event says, in one line.
export function describe(activity) {
  if (!activity) return "";
  const doing = activity.doing ?? {};
  let text = "";
  switch (doing.state) {
    case "thinking": text = "thinking…"; break;
    case "tool":
      text = `running ${doing.name}${doing.detail ? `: ${doing.detail}` : ""}`;
      if (doing.line) text += ` | ${doing.line}`;
      break;
    case "retrying":
      text = `retrying (${doing.attempt} of ${doing.attempts}) in ${(doing.wait_ms / 1000).toFixed(1)} s: ${doing.reason}`;
      break;
    case "summaries":
      text = `waiting for ${doing.pending} memory summaries`;
      if (doing.waiting_for) text += ` until the model answers again: ${doing.waiting_for}`;
      break;
    default: text = "";
  }
  if (activity.compacting > 0) {
    text = text ? `${text} · summarizing (${activity.compacting})` : `summarizing memory (${activity.compacting})`;
  }
  return text;
}

export function when(at) {
  if (!at) return "";
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return at;
  const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return date.toDateString() === new Date().toDateString()
    ? time
    : `${date.toLocaleDateString([], { month: "short", day: "numeric" })} ${time}`;
}

// A hit's snippet with its matched words (the daemon puts them in `[` `]`)
// marked, as text: nothing in it is read as HTML.
function snippet(text) {
  const span = el("span");
  for (const [n, part] of text.split(/\[([^\]]*)\]/).entries()) {
    if (part) span.append(n % 2 ? el("mark", part) : part);
  }
  return span;
}

function blob(data, type) {
  const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
  return new Blob([bytes], { type });
}

function base64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(",", 2)[1] ?? "");
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}
