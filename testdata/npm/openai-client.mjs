// An OpenAI client as its users write one: the official `openai` package
// with the platform's base URL and an API key. internal/api's
// TestOpenAINodeClient runs it against a live platform:
//
//   AP_KEY=<key> node openai-client.mjs <base URL> <model>
//
// It makes a plain chat completion, a streamed one with usage, and one
// offering a tool of the caller's that the model calls (the echo provider
// calls a tool when the prompt is `call <tool> <json>`), then continues
// with the tool's result; it prints what each answered as JSON.
import OpenAI from "openai";

const [baseURL, model] = process.argv.slice(2);
const apiKey = process.env.AP_KEY;
if (!baseURL || !model || !apiKey) {
  console.error("usage: AP_KEY=<key> node openai-client.mjs <base URL> <model>");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });

const models = await client.models.list();

const plain = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "hello from node" }],
});

const stream = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "stream these words" }],
  stream: true,
  stream_options: { include_usage: true },
});
const streamed = { id: "", chunks: 0, content: "", finish_reason: null, usage: null, done: false };
for await (const chunk of stream) {
  streamed.id = chunk.id;
  streamed.chunks++;
  for (const c of chunk.choices) {
    streamed.content += c.delta?.content ?? "";
    if (c.finish_reason) streamed.finish_reason = c.finish_reason;
  }
  if (chunk.usage) streamed.usage = chunk.usage;
}
streamed.done = true;

const tools = [{
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
}];
const messages = [{ role: "user", content: 'call get_weather {"city": "Paris"}' }];
const toolCall = await client.chat.completions.create({ model, messages, tools });
const calls = toolCall.choices[0].message.tool_calls ?? [];
messages.push(toolCall.choices[0].message);
for (const call of calls) {
  messages.push({ role: "tool", tool_call_id: call.id, content: '{"sky": "sunny"}' });
}
const afterTools = await client.chat.completions.create({ model, messages, tools });

console.log(JSON.stringify({
  models: models.data.map((m) => m.id),
  plain,
  streamed,
  tool_call: toolCall,
  after_tools: afterTools,
}));
