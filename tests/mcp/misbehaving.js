#!/usr/bin/env node
// A stdio MCP server for hearth's tests that fails on request: `crash`
// exits in the middle of a call, `hang` never answers, `garbage` answers
// with a line that is not JSON, and `grow` answers, then says its tool list
// changed and lists one tool more. `echo` works. With the argument
// `--log FILE`, every start appends a line to FILE, so tests can count
// restarts. It writes a line to stderr at start, for the daemon's log.

const fs = require("fs");
const readline = require("readline");

const logAt = process.argv.indexOf("--log");
if (logAt > 0) fs.appendFileSync(process.argv[logAt + 1], `started ${process.pid}\n`);
process.stderr.write("misbehaving server ready\n");

const text = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };
const none = { type: "object", properties: {} };
let tools = [
  { name: "echo", description: "Says the text back.", inputSchema: text, annotations: { readOnlyHint: true } },
  { name: "crash", description: "Exits in the middle of the call.", inputSchema: none },
  { name: "hang", description: "Never answers.", inputSchema: none },
  { name: "garbage", description: "Answers with a line that is not JSON.", inputSchema: none },
  { name: "grow", description: "Adds a tool and says the list changed.", inputSchema: none },
];

function send(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

function answer(id, result) {
  send({ jsonrpc: "2.0", id, result });
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  const { id, method, params } = message;
  if (method === "initialize") {
    answer(id, {
      protocolVersion: params.protocolVersion,
      capabilities: { tools: { listChanged: true } },
      serverInfo: { name: "misbehaving", version: "1.0.0" },
    });
  } else if (method === "tools/list") {
    answer(id, { tools });
  } else if (method === "tools/call") {
    const name = params.name;
    if (name === "echo") {
      answer(id, { content: [{ type: "text", text: `echo: ${params.arguments.text}` }] });
    } else if (name === "crash") {
      process.stderr.write("crashing on purpose\n");
      process.exit(3);
    } else if (name === "hang") {
      // Never answers.
    } else if (name === "garbage") {
      process.stdout.write("this is not json\n");
    } else if (name === "grow") {
      answer(id, { content: [{ type: "text", text: "grown" }] });
      tools = tools.concat([{ name: "extra", description: "The tool grow added.", inputSchema: none }]);
      send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
    } else {
      send({ jsonrpc: "2.0", id, error: { code: -32602, message: `no tool ${name}` } });
    }
  } else if (method === "notifications/cancelled") {
    process.stderr.write(`cancelled request ${params.requestId}: ${params.reason}\n`);
  } else if (id !== undefined) {
    send({ jsonrpc: "2.0", id, error: { code: -32601, message: `no method ${method}` } });
  }
});
