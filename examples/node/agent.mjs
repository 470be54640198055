// A standalone tool-using agent in Node.js: the official `openai` package for its model and
// the official MCP TypeScript SDK (`@modelcontextprotocol/sdk`) for its tools. No chaoseval
// import; install its pinned packages with `npm ci` here (or `make frameworks`), then:
//
//   chaoseval run --agent 'exec:node examples/node/agent.mjs' -s vending-refund-not-dispensed
//
// chaoseval starts it once per trial with the trial's model channel in OPENAI_BASE_URL /
// OPENAI_API_KEY (the SDK reads both itself) and the trial's tools in CHAOSEVAL_MCP_URL; the
// task comes on stdin. The last line it prints is its answer as JSON:
// {"answer": ..., "gave_up": ..., "data": ...}.
import OpenAI from "openai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const SYSTEM =
  "You are an operations agent. Use the tools to complete the task. When you are done, reply " +
  'with JSON: {"answer": "...", "gave_up": false, "data": {}}.';
const MAX_TURNS = 40;

function final(content) {
  try {
    const parsed = JSON.parse(content);
    if (parsed && typeof parsed === "object" && "answer" in parsed) return parsed;
  } catch {
    // not JSON: the text itself is the answer
  }
  return { answer: content };
}

async function readStdin() {
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  return text.trim();
}

async function solve(task) {
  const model = process.env.CHAOSEVAL_MODEL || process.env.OPENAI_MODEL || "gpt-4o-mini";
  const openai = new OpenAI({ timeout: Number(process.env.AGENT_MODEL_TIMEOUT || 10) * 1000 });
  const mcp = new Client({ name: "operations-agent", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(process.env.CHAOSEVAL_MCP_URL)));
  try {
    const { tools } = await mcp.listTools();
    const offered = tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description ?? "", parameters: tool.inputSchema },
    }));
    const messages = [
      { role: "system", content: SYSTEM },
      { role: "user", content: task },
    ];
    for (let turn = 0; turn < MAX_TURNS; turn++) {
      const response = await openai.chat.completions.create({ model, messages, tools: offered });
      const message = response.choices[0].message;
      messages.push(message);
      if (!message.tool_calls?.length) return final(message.content ?? "");
      for (const call of message.tool_calls) {
        const result = await mcp.callTool({
          name: call.function.name,
          arguments: JSON.parse(call.function.arguments || "{}"),
        });
        // The result's text as the tool message; an error result is its message as text.
        const text = result.content.map((part) => part.text ?? "").join("");
        messages.push({ role: "tool", tool_call_id: call.id, content: text });
      }
    }
    return { answer: `no answer after ${MAX_TURNS} turns`, gave_up: true };
  } finally {
    await mcp.close();
  }
}

const task = (await readStdin()) || process.env.CHAOSEVAL_INSTRUCTION || "";
console.log(JSON.stringify(await solve(task)));
