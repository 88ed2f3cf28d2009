// The pages besides the conversation: costs, memory, schedules, agents and
// bridges. Each asks the daemon when it is opened.

import { el } from "./markdown.js";
import { barChart, legend } from "./chart.js";
import { when } from "./chat.js";
import { readLog } from "./connection.js";

const dollars = (value) => `$${value < 1 ? value.toFixed(3) : value.toFixed(2)}`;
const tokens = (value) => (value >= 1e6 ? `${(value / 1e6).toFixed(1)}M` : value >= 1e3 ? `${(value / 1e3).toFixed(1)}k` : String(Math.round(value)));

function table(headings, rows) {
  const t = el("table");
  const head = el("tr");
  for (const h of headings) head.append(el("th", h));
  t.append(head);
  for (const row of rows) {
    const tr = el("tr");
    for (const cell of row) tr.append(cell instanceof Node ? wrap(cell) : el("td", String(cell)));
    t.append(tr);
  }
  return t;
}

function wrap(node) {
  const td = el("td");
  td.append(node);
  return td;
}

function failed(root, err) {
  root.replaceChildren(el("p", `Could not load this page: ${err.message}`));
}

export async function costs(connection, root, days = 14) {
  try {
    const [stats, status] = await Promise.all([
      connection.request({ type: "stats", days }),
      connection.request({ type: "status" }),
    ]);
    const dayList = [];
    const today = new Date();
    for (let back = stats.days - 1; back >= 0; back -= 1) {
      const day = new Date(today.getFullYear(), today.getMonth(), today.getDate() - back);
      const iso = `${day.getFullYear()}-${String(day.getMonth() + 1).padStart(2, "0")}-${String(day.getDate()).padStart(2, "0")}`;
      dayList.push(iso);
    }
    const agents = [...new Set(stats.rows.map((row) => row.agent))];
    const priced = stats.rows.some((row) => row.cost_usd > 0);
    const measure = priced ? (row) => row.cost_usd : (row) => row.input_tokens + row.output_tokens;
    const series = agents.map((agent) => ({
      name: agent,
      values: new Map(stats.rows.filter((row) => row.agent === agent).map((row) => [row.day, measure(row)])),
    }));
    const total = (pick) => stats.rows.reduce((sum, row) => sum + pick(row), 0);
    const input = total((row) => row.input_tokens);
    const cached = total((row) => row.cached_input_tokens);
    const parts = [
      el("h2", priced ? `Spend per day, last ${stats.days} days` : `Tokens per day, last ${stats.days} days`),
      barChart(dayList, series, priced ? dollars : tokens),
      legend(series),
      el("p", `${dollars(total((row) => row.cost_usd))} in all · ${tokens(input)} input tokens, ${input ? Math.round((100 * cached) / input) : 0}% of them cached · ${tokens(total((row) => row.output_tokens))} output tokens · ${total((row) => row.requests)} requests`),
    ];
    if (status.plan) parts.push(plan(status.plan));
    if (stats.budget) parts.push(budget(stats.budget));
    else if (status.cost_today_usd !== undefined && status.cost_today_usd !== null) {
      parts.push(el("p", `Today: ${dollars(status.cost_today_usd)}; no budget is set.`));
    }
    parts.push(table(
      ["agent", "calls", "input", "cached", "output", "USD"],
      agents.map((agent) => {
        const rows = stats.rows.filter((row) => row.agent === agent);
        const sum = (pick) => rows.reduce((s, row) => s + pick(row), 0);
        const agentInput = sum((row) => row.input_tokens);
        return [agent, sum((row) => row.requests), tokens(agentInput),
          `${agentInput ? Math.round((100 * sum((row) => row.cached_input_tokens)) / agentInput) : 0}%`,
          tokens(sum((row) => row.output_tokens)), dollars(sum((row) => row.cost_usd))];
      }),
    ));
    root.replaceChildren(...parts);
  } catch (err) {
    failed(root, err);
  }
}

// A ChatGPT plan's limits: each window's use and reset; its requests are
// metered in tokens, never priced.
function plan(limits) {
  const box = el("div");
  box.className = "budget";
  box.append(el("h3", limits.plan ? `ChatGPT ${limits.plan} plan` : "ChatGPT plan"));
  const when = (at) => new Date(at).toLocaleString();
  for (const window of limits.windows || []) {
    const meter = el("meter");
    meter.min = 0;
    meter.max = 100;
    meter.value = Math.min(window.used_percent, 100);
    meter.high = 80;
    const span = window.window_minutes ? `${window.window_minutes / 60} h window` : "window";
    const reset = window.resets_at ? `, resets ${when(window.resets_at)}` : "";
    const line = el("p", `${span}: ${Math.round(window.used_percent)}% used${reset} `);
    line.append(meter);
    box.append(line);
  }
  if (limits.limited_until) box.append(el("p", `Usage limit reached; requests resume ${when(limits.limited_until)}.`));
  box.append(el("p", "Requests on the plan are counted in tokens, not priced."));
  return box;
}

function budget(use) {
  const box = el("div");
  box.className = "budget";
  box.append(el("h3", "Budget"));
  for (const [label, spent, limit] of [["today", use.today_usd, use.daily_usd], ["this month", use.month_usd, use.monthly_usd]]) {
    if (limit === null || limit === undefined) {
      box.append(el("p", `${label}: ${dollars(spent)} (no limit)`));
      continue;
    }
    const meter = el("meter");
    meter.min = 0;
    meter.max = limit;
    meter.value = Math.min(spent, limit);
    meter.high = limit * 0.8;
    const line = el("p", `${label}: ${dollars(spent)} of ${dollars(limit)} `);
    line.append(meter);
    box.append(line);
  }
  return box;
}

export async function memory(connection, root) {
  try {
    const [view, facts] = await Promise.all([
      connection.request({ type: "memory" }),
      connection.request({ type: "facts" }),
    ]);
    const list = el("ol");
    list.className = "memory";
    for (const line of view.lines) list.append(memoryLine(connection, line));
    root.replaceChildren(
      el("h2", "Memory"),
      searchForm(connection),
      factsList(facts),
      el("h3", "The view"),
      el("p", `${view.lines.length} lines cover messages 0 to ${view.applied - 1}; ${view.newer} newer messages join at the next turn. ${view.bytes} bytes.`),
      list,
    );
  } catch (err) {
    root.replaceChildren(el("h2", "Memory"), el("p", `The memory view is not available from this hearthd: ${err.message}`));
  }
}

// Search the whole memory (every message and summary line) by words.
function searchForm(connection) {
  const box = el("section");
  box.id = "memory-search";
  const form = el("form");
  form.className = "inline-form";
  const input = el("input");
  input.type = "search";
  input.placeholder = "words, or \"a phrase\"";
  input.setAttribute("aria-label", "search the memory");
  form.append(input, el("button", "Search"));
  const hits = el("ol");
  hits.className = "hits";
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const query = input.value.trim();
    if (!query) return;
    try {
      const answer = await connection.request({ type: "search", query, limit: 20 });
      const found = answer.hits.map((hit) =>
        el("li", `${hit.id}+${hit.n} ${hit.kind}${hit.source ? ` ${hit.source}` : ""} ${when(hit.at)}: ${hit.snippet}`));
      hits.replaceChildren(...(found.length ? found : [el("li", "nothing found")]));
    } catch (err) {
      hits.replaceChildren(el("li", err.message));
    }
  });
  box.append(el("h3", "Search"), form, hits);
  return box;
}

// The facts the agent keeps pinned in view.
function factsList(facts) {
  const box = el("section");
  box.id = "facts";
  box.append(el("h3", `Pinned facts (${facts.bytes} of ${facts.limit} bytes)`));
  if (facts.facts.length) {
    const list = el("ul");
    for (const fact of facts.facts) list.append(el("li", fact));
    box.append(list);
  } else {
    box.append(el("p", "No pinned facts yet."));
  }
  return box;
}

function memoryLine(connection, line) {
  const item = el("li");
  const button = el("button", `${line.id}+${line.n}`);
  button.className = "node";
  button.title = "open what this line was made from";
  const text = el("span", line.text || "(not written yet)");
  const dates = el("span", ` ${when(line.from)}${line.n > 1 ? ` – ${when(line.to)}` : ""}`);
  dates.className = "meta";
  item.append(button, " ", text, dates);
  const children = el("ol");
  item.append(children);
  button.addEventListener("click", async () => {
    if (children.childElementCount) {
      children.replaceChildren();
      return;
    }
    try {
      const node = await connection.request({ type: "memory_show", id: line.id, n: line.n });
      if (node.message) children.append(el("li", `${node.message.kind} ${node.message.source}: ${node.message.text}`));
      for (const part of node.parts ?? []) children.append(memoryLine(connection, part));
    } catch (err) {
      children.append(el("li", err.message));
    }
  });
  return item;
}

export async function schedules(connection, root) {
  const form = el("form");
  form.className = "inline-form";
  const whenInput = el("input");
  whenInput.placeholder = "tomorrow 9am, in 20 minutes, 2026-12-24 18:00 or 0 9 * * 1-5";
  whenInput.setAttribute("aria-label", "when");
  const textInput = el("input");
  textInput.placeholder = "what to say";
  textInput.setAttribute("aria-label", "text");
  const add = el("button", "Add");
  form.append(whenInput, textInput, add);
  const message = el("p");
  const list = el("div");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await connection.request({ type: "schedule_add", when: whenInput.value, text: textInput.value });
      whenInput.value = "";
      textInput.value = "";
      message.textContent = "";
      await refresh();
    } catch (err) {
      message.textContent = err.message;
    }
  });
  async function refresh() {
    const frame = await connection.request({ type: "schedule_list" });
    list.replaceChildren(table(["#", "next", "repeats", "text", ""], frame.schedules.map((s) => {
      const cancel = el("button", "Cancel");
      cancel.addEventListener("click", async () => {
        try {
          await connection.request({ type: "schedule_cancel", id: s.id });
          await refresh();
        } catch (err) {
          message.textContent = err.message;
        }
      });
      // A one-off is stored as its time: shown once, under next.
      const repeats = /^\d{4}-\d{2}-\d{2}T/.test(s.when) ? "once" : s.when;
      return [s.id, when(s.next), repeats, s.text, cancel];
    })));
  }
  root.replaceChildren(el("h2", "Schedules"), form, message, list);
  try {
    await refresh();
  } catch (err) {
    message.textContent = err.message;
  }
}

export async function agents(connection, root, runs) {
  try {
    const status = await connection.request({ type: "status" });
    const all = status.agents ?? [];
    const parts = [el("h2", "Agents"), table(["agent", "now"], all.map((a) => [a.name, a.busy ? "working" : "idle"]))];
    for (const child of all.slice(1)) {
      const box = el("div");
      const open = el("button", `Runs of ${child.name}`);
      open.addEventListener("click", async () => {
        try {
          box.replaceChildren(runTable(await readLog(child.name, 40)));
        } catch (err) {
          box.replaceChildren(el("p", err.message));
        }
      });
      parts.push(open, box);
    }
    parts.push(el("h3", "Started while this page was open"));
    const list = el("ul");
    for (const run of runs) list.append(el("li", `${when(run.at)} ${run.text}`));
    if (!runs.length) list.append(el("li", "none yet; reports arrive in the conversation as work messages"));
    parts.push(list);
    root.replaceChildren(...parts);
  } catch (err) {
    failed(root, err);
  }
}

// A child's runs from its log: each task (a user message from its parent)
// and the reply that ended it.
function runTable(messages) {
  const rows = [];
  for (const message of messages) {
    if (message.kind === "user") rows.push([`#${message.id}`, when(message.at), message.text, "running"]);
    if (message.kind === "reply" && rows.length) rows[rows.length - 1][3] = message.text;
  }
  if (!rows.length) return el("p", "no runs yet");
  return table(["task", "when", "what", "answer"], rows.reverse());
}

export async function bridges(connection, root) {
  try {
    const status = await connection.request({ type: "status" });
    const parts = [el("h2", "Bridges and daemon")];
    const list = status.bridges ?? [];
    if (list.length) {
      parts.push(table(["bridge", "state"], list.map((b) => [b.name ?? b.bridge ?? "?", describeBridge(b)])));
    } else {
      parts.push(el("p", "No bridge is enabled (or this hearthd does not report them)."));
    }
    parts.push(table(["", ""], [
      ["model", status.model ?? "none configured"],
      ["clients", status.clients],
      ["version", status.version],
      ["up for", `${Math.round(status.uptime_secs / 60)} min`],
      ["next schedule", status.next_schedule ?? "none"],
    ]));
    root.replaceChildren(...parts);
  } catch (err) {
    failed(root, err);
  }
}

function describeBridge(bridge) {
  return Object.entries(bridge)
    .filter(([key]) => key !== "name")
    .map(([key, value]) => `${key}: ${typeof value === "object" ? JSON.stringify(value) : value}`)
    .join(", ");
}
