#!/usr/bin/env node
// A stdio MCP server for hearth's tests that makes the daemon's start hard:
// `unruly.js silent` reads its input and never answers (not even
// `initialize`); `unruly.js crowded N` answers, and lists N tools.

const readline = require("readline");

const mode = process.argv[2];
const count = Number(process.argv[3] || 0);
const schema = { type: "object", properties: { text: { type: "string", description: "Any text." } } };

function send(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  if (mode === "silent") return;
  const { id, method, params } = JSON.parse(line);
  if (method === "initialize") {
    send({
      jsonrpc: "2.0",
      id,
      result: {
        protocolVersion: params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "unruly", version: "1.0.0" },
      },
    });
  } else if (method === "tools/list") {
    const tools = [];
    for (let i = 0; i < count; i++) {
      tools.push({ name: `tool_${i}`, description: `Tool number ${i}, which does nothing at all.`, inputSchema: schema });
    }
    send({ jsonrpc: "2.0", id, result: { tools } });
  } else if (id !== undefined) {
    send({ jsonrpc: "2.0", id, error: { code: -32601, message: `no method ${method}` } });
  }
});
