// An MCP client as its users write one: the official TypeScript SDK
// (@modelcontextprotocol/sdk) over Streamable HTTP with a Bearer API key.
// internal/api's TestMCPNodeClient runs it against a live platform:
//
//   AP_KEY=<key> node mcp-client.mjs <endpoint URL> <tool> <json arguments> <failing tool> <json arguments>
//
// It lists the tools, calls the first tool (which should succeed) and the
// second (which should answer isError), and prints
// {tools: [{name, inputSchema}], ok: <result>, failed: <result>} as JSON.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, okTool, okArgs, failTool, failArgs] = process.argv.slice(2);
const key = process.env.AP_KEY;
if (!url || !okTool || !failTool || !key) {
  console.error("usage: AP_KEY=<key> node mcp-client.mjs <url> <tool> <json> <failing tool> <json>");
  process.exit(2);
}

const client = new Client({ name: "agentplatform-node-check", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
await client.connect(transport);
const { tools } = await client.listTools();
const ok = await client.callTool({ name: okTool, arguments: JSON.parse(okArgs) });
const failed = await client.callTool({ name: failTool, arguments: JSON.parse(failArgs) });
await client.close();
console.log(JSON.stringify({
  tools: tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema })),
  ok,
  failed,
}));
