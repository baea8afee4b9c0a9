// The scripted model server on its own: replies chosen by the number of tool results, side
// requests, every wire format, and the request log.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { DONE_TEXT, SIDE_TEXT, startScriptedModel, toolResultsOf } from "../lib/scripted-model.mjs";

let model;
before(async () => {
  model = await startScriptedModel([
    { tool: { namespace: "mcp__satyrn", name: "read", arguments: { path: "src/a.txt" } } },
    { text: "second" },
  ]);
});
after(() => model?.close());

const post = (path, body) =>
  fetch(`${model.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

/** The `data:` payloads of a server-sent event stream. */
async function events(response) {
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type"), /^text\/event-stream/);
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => JSON.parse(block.split("\n").find((l) => l.startsWith("data: ")).slice(6)));
}

const tools = [{ type: "function", name: "x" }];

test("responses: no tool result → script[0], a namespaced function call", async () => {
  const evs = await events(await post("/v1/responses", { input: [{ type: "message", role: "user" }], tools }));
  assert.deepEqual(evs.map((e) => e.type), ["response.created", "response.output_item.added", "response.output_item.done", "response.completed"]);
  const item = evs[2].item;
  assert.equal(item.type, "function_call");
  assert.equal(item.namespace, "mcp__satyrn");
  assert.equal(item.name, "read");
  assert.deepEqual(JSON.parse(item.arguments), { path: "src/a.txt" });
  assert.equal(evs[3].response.output[0].call_id, item.call_id);
});

test("responses: the count of *_output items picks the step, past the end a closing text", async () => {
  const one = await events(await post("/v1/responses", { input: [{ type: "function_call_output", output: "r" }], tools }));
  assert.equal(one.find((e) => e.type === "response.output_item.done").item.content[0].text, "second");
  const input = [{ type: "function_call_output" }, { type: "custom_tool_call_output" }, { type: "function_call_output" }];
  const three = await events(await post("/v1/responses", { input, tools }));
  assert.equal(three.find((e) => e.type === "response.output_item.done").item.content[0].text, DONE_TEXT);
});

test("messages: tool_result blocks are counted, tool_use streamed as input_json_delta, non-streaming as JSON", async () => {
  const evs = await events(await post("/v1/messages", { stream: true, messages: [{ role: "user", content: "go" }], tools }));
  assert.deepEqual(evs.map((e) => e.type), ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
  assert.equal(evs[1].content_block.type, "tool_use");
  assert.deepEqual(JSON.parse(evs[2].delta.partial_json), { path: "src/a.txt" });
  assert.equal(evs[4].delta.stop_reason, "tool_use");

  const messages = [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: "PATH_UNDECLARED: no", is_error: true }] }];
  const plain = await (await post("/v1/messages", { messages, tools })).json();
  assert.deepEqual(plain.content, [{ type: "text", text: "second" }]);
  assert.equal(plain.stop_reason, "end_turn");
});

test("side requests (no tools) get a short text; count_tokens a count; other paths 404; all logged", async () => {
  const before = model.requests.length;
  const side = await (await post("/v1/messages", { messages: [{ role: "user", content: "title?" }] })).json();
  assert.deepEqual(side.content, [{ type: "text", text: SIDE_TEXT }]);
  assert.deepEqual(await (await post("/v1/messages/count_tokens", {})).json(), { input_tokens: 100 });
  assert.equal((await fetch(`${model.url}/v1/models`)).status, 404);
  const logged = model.requests.slice(before);
  assert.deepEqual(logged.map((r) => r.kind), ["messages", "count_tokens", "other"]);
  assert.deepEqual(logged[0].body.messages[0].content, "title?");
});

test("toolResultsOf reads what the model was sent back", () => {
  const logged = model.requests.find((r) => r.kind === "messages" && r.toolResults === 1);
  assert.deepEqual(toolResultsOf(logged), [{ text: "PATH_UNDECLARED: no", isError: true }]);
});

test("chat completions: tool messages are counted, a tool call streamed as one chunk, then [DONE]", async () => {
  const response = await post("/v1/chat/completions", { messages: [{ role: "user", content: "go" }], tools });
  assert.equal(response.status, 200);
  const payloads = (await response.text()).split("\n\n").filter((b) => b.startsWith("data: ")).map((b) => b.slice(6));
  assert.equal(payloads.at(-1), "[DONE]");
  const chunks = payloads.slice(0, -1).map((p) => JSON.parse(p));
  const call = chunks[0].choices[0].delta.tool_calls[0];
  assert.equal(call.function.name, "read");
  assert.deepEqual(JSON.parse(call.function.arguments), { path: "src/a.txt" });
  assert.equal(chunks[1].choices[0].finish_reason, "tool_calls");
  const after = await post("/v1/chat/completions", { messages: [{ role: "user", content: "go" }, { role: "tool", content: "r" }], tools });
  const text = JSON.parse((await after.text()).split("\n\n")[0].slice(6));
  assert.equal(text.choices[0].delta.content, "second");
});

test("a freeform tool call is a custom_tool_call; a react step is a function of the request", async () => {
  const custom = await startScriptedModel([
    { tool: { name: "apply_patch", custom: true, input: "*** Begin Patch\n*** End Patch" } },
    { react: (body) => ({ text: `saw ${body.input.length} items` }) },
  ]);
  try {
    const first = await (await fetch(`${custom.url}/v1/responses`, { method: "POST", body: JSON.stringify({ input: [], tools }) })).text();
    const item = JSON.parse(first.split("\n\n")[2].split("\n")[1].slice(6)).item;
    assert.equal(item.type, "custom_tool_call");
    assert.equal(item.input, "*** Begin Patch\n*** End Patch");
    const input = [{ type: "message" }, { type: "custom_tool_call_output", output: "x" }];
    const second = await (await fetch(`${custom.url}/v1/responses`, { method: "POST", body: JSON.stringify({ input, tools }) })).text();
    assert.match(second, /saw 2 items/);
  } finally {
    await custom.close();
  }
});
