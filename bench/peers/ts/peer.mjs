// Serves `add` as the sdk server `calc` through the TypeScript agent SDK to the benchmark's
// fake CLI (`node peer.mjs CLI`): one prompt, drained until its result.
import { createSdkMcpServer, query, tool } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";

const add = tool("add", "Add two numbers", { x: z.number(), y: z.number() }, async ({ x, y }) => ({
  content: [{ type: "text", text: String(x + y) }],
}));
const calc = createSdkMcpServer({ name: "calc", version: "1.0.0", tools: [add] });

for await (const message of query({
  prompt: "benchmark",
  options: {
    mcpServers: { calc },
    pathToClaudeCodeExecutable: process.argv[2],
    stderr: (data) => process.stderr.write(data),
  },
})) {
  if (message.type === "result") break;
}
