// A TypeScript-SDK MCP client that offers sampling and answers it as scripted agents.
//
// usage: node sampling_client.mjs '<json>'   with json = {
//   "command": "/path/massgen-mcp", "args": [...], "cwd": "/dir", "task": "...",
//   "final": "FINAL text the presenting agent gives", "model": "model name to report" }
//
// It spawns the server over stdio (environment inherited from this process, so the caller
// decides which keys the server sees), lists the tools, calls run_consensus with a progress
// handler and prints ONE JSON object on stdout:
//   { tools, protocolVersion, result, progress: [{progress, total, message}], late: [...],
//     errors: [...], sampling: {...} }
// Anything else goes to stderr.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const opts = JSON.parse(process.argv[2] ?? "{}");
const model = opts.model ?? "ts-scripted-model";
const final = opts.final ?? "FINAL from the TypeScript client";

const textOf = (message) => {
  const blocks = Array.isArray(message.content) ? message.content : [message.content];
  return blocks.map((b) => (b && b.type === "text" ? b.text : "")).join("");
};

// The same behaviour as tests/agents.py answer_then_vote, seen through the sampling
// backend's JSON tool protocol: answer once, then vote for agent1, then present `final`.
const sampling = { requests: 0, answers: 0, votes: 0, presentations: 0, systemPrompts: 0 };
function reply(params) {
  sampling.requests += 1;
  if (params.systemPrompt && params.systemPrompt.includes('"tool"')) sampling.systemPrompts += 1;
  const users = params.messages.filter((m) => m.role === "user");
  const last = users.length ? textOf(users[users.length - 1]) : "";
  if (last.includes("Present the best final")) {
    sampling.presentations += 1;
    return { tool: "new_answer", arguments: { content: final } };
  }
  if (!last.includes("Your own latest")) {
    sampling.answers += 1;
    return { tool: "new_answer", arguments: { content: `Answer ${sampling.answers} via sampling` } };
  }
  sampling.votes += 1;
  return { tool: "vote", arguments: { agent_id: "agent1", reason: "agent1 is the clearest" } };
}

const client = new Client(
  { name: "massgen-mcp-ts-test", version: "1.0.0" },
  { capabilities: { sampling: {} } },
);
client.setRequestHandler(CreateMessageRequestSchema, async (request) => ({
  role: "assistant",
  content: { type: "text", text: JSON.stringify(reply(request.params)) },
  model,
  stopReason: "endTurn",
}));

const transport = new StdioClientTransport({
  command: opts.command,
  args: opts.args ?? [],
  cwd: opts.cwd,
  env: { ...process.env },
  stderr: "inherit",
});

// TypeScript SDK 1.x runs notification handlers a microtask late but a response at once, so
// progress sent just before the result can reach it after its handler is gone: it reports
// them to onerror as "unknown token" (typescript-sdk issue #2580). Keep those as `late`.
const late = [];
const errors = [];
client.onerror = (error) => {
  const match = /progress notification for an unknown token: (.*)$/s.exec(error.message);
  if (match) late.push(JSON.parse(match[1]).params);
  else errors.push(String(error));
};

// The client reports the negotiated version to transports that want it; stdio does not,
// so this hook only records it.
let protocolVersion = null;
transport.setProtocolVersion = (version) => {
  protocolVersion = version;
};

const progress = [];
try {
  await client.connect(transport);
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const result = await client.callTool(
    { name: "run_consensus", arguments: { task: opts.task ?? "Which queue should we use?" } },
    undefined,
    {
      onprogress: (p) => progress.push(p),
      timeout: 60_000,
      resetTimeoutOnProgress: true,
    },
  );
  process.stdout.write(
    JSON.stringify({ tools, protocolVersion, result, progress, late, errors, sampling }) + "\n",
  );
} finally {
  await client.close();
}
