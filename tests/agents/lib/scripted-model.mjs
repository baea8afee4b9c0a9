/**
 * A scripted stand-in for an LLM, for driving real agent CLIs offline.
 *
 * One HTTP server on 127.0.0.1 (port 0, so the kernel picks a free one) that speaks three
 * streaming wire formats:
 *
 * - OpenAI Responses (`POST …/responses`, Codex CLI): server-sent `response.*` events;
 * - Anthropic Messages (`POST …/messages`, Claude Code): server-sent `message_*` /
 *   `content_block_*` events (a non-streaming request gets the same message as one JSON);
 * - OpenAI chat completions (`POST …/chat/completions`, Pi): `chat.completion.chunk` events.
 *
 * A reply is chosen by counting the tool results already present in the request: with N
 * results the model answers with `script[N]` (and a closing text once the script is over).
 * That makes the story independent of retries and of how many side requests a client sends.
 * A request that offers no tools (title generation, summaries, …) is a side request and gets
 * a short text. `count_tokens` gets a fixed count; anything else is a 404.
 *
 * Every request (method, URL, parsed body) is logged in `requests`, so a test can prove what
 * reached the model, e.g. that a refusal travelled back as a tool result.
 */

import { createServer } from "node:http";

/**
 * A step of the script: a tool call (`custom: true` with `input` for a Responses freeform
 * tool such as Codex's `apply_patch`), a text, or `react`: a function of the request that
 * returns the step (a model that acts on what it was told).
 * @typedef {{ tool: { name: string, namespace?: string, arguments?: Record<string, unknown>,
 *   custom?: boolean, input?: string } }
 *   | { text: string }
 *   | { react: (body: any, kind: string) => Step }} Step
 */

/**
 * A logged request; `at` is `Date.now()` when it arrived.
 * @typedef {{ method: string, url: string, kind: string, toolResults: number, body: any, at: number }} Logged
 */

/** The text a side request (one that offers no tools) receives. */
export const SIDE_TEXT = "Scripted title";
/** The text once the script is over. */
export const DONE_TEXT = "The scripted story is over.";

/**
 * Counts the tool results in an OpenAI Responses request (`input` items of a `*_output` type).
 * @param {any} body
 */
export function responsesToolResults(body) {
  const input = Array.isArray(body?.input) ? body.input : [];
  return input.filter(
    (item) =>
      item &&
      typeof item.type === "string" &&
      /^(function_call|custom_tool_call|mcp_call|local_shell_call)_output$/.test(item.type),
  ).length;
}

/**
 * Counts the tool results in an Anthropic Messages request (`tool_result` content blocks).
 * @param {any} body
 */
export function messagesToolResults(body) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  let n = 0;
  for (const message of messages) {
    if (!Array.isArray(message?.content)) continue;
    for (const block of message.content) if (block?.type === "tool_result") n += 1;
  }
  return n;
}

/**
 * Counts the tool results in an OpenAI chat completions request (`tool` messages).
 * @param {any} body
 */
export function chatToolResults(body) {
  const messages = Array.isArray(body?.messages) ? body.messages : [];
  return messages.filter((m) => m?.role === "tool").length;
}

/**
 * The tool results of a logged request, as text the model would read (for assertions).
 * @param {Logged} logged
 * @returns {Array<{ text: string, isError: boolean | undefined }>}
 */
export function toolResultsOf(logged) {
  const out = [];
  if (logged.kind === "responses") {
    for (const item of logged.body?.input ?? []) {
      if (typeof item?.type === "string" && item.type.endsWith("_output")) {
        out.push({ text: flatten(item.output), isError: undefined });
      }
    }
  } else if (logged.kind === "messages") {
    for (const message of logged.body?.messages ?? []) {
      if (!Array.isArray(message?.content)) continue;
      for (const block of message.content) {
        if (block?.type === "tool_result") {
          out.push({ text: flatten(block.content), isError: block.is_error });
        }
      }
    }
  }
  return out;
}

/** @param {unknown} value */
function flatten(value) {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(flatten).join("\n");
  if (value && typeof value === "object") {
    const v = /** @type {any} */ (value);
    if (typeof v.text === "string") return v.text;
    if (v.content !== undefined) return flatten(v.content);
    return JSON.stringify(value);
  }
  return String(value ?? "");
}

/**
 * Starts the server.
 * @param {Step[]} script
 * @returns {Promise<{ url: string, requests: Logged[], close(): Promise<void> }>}
 *   `url` is `http://127.0.0.1:PORT` (no path; clients add `/v1/...`).
 */
export async function startScriptedModel(script) {
  /** @type {Logged[]} */
  const requests = [];
  let ids = 0;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body = null;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        body = { unparsed: raw };
      }
      const url = req.url ?? "";
      const path = url.split("?")[0];
      ids += 1;
      const id = ids;
      const at = Date.now();
      if (req.method === "POST" && path.endsWith("/messages/count_tokens")) {
        requests.push({ method: "POST", url, kind: "count_tokens", toolResults: 0, body, at });
        json(res, 200, { input_tokens: 100 });
      } else if (req.method === "POST" && path.endsWith("/responses")) {
        const n = responsesToolResults(body);
        requests.push({ method: "POST", url, kind: "responses", toolResults: n, body, at });
        respondResponses(res, id, pick(script, n, body, "responses"));
      } else if (req.method === "POST" && path.endsWith("/chat/completions")) {
        const n = chatToolResults(body);
        requests.push({ method: "POST", url, kind: "chat", toolResults: n, body, at });
        respondChat(res, id, pick(script, n, body, "chat"));
      } else if (req.method === "POST" && path.endsWith("/messages")) {
        const n = messagesToolResults(body);
        requests.push({ method: "POST", url, kind: "messages", toolResults: n, body, at });
        respondMessages(res, id, pick(script, n, body, "messages"), body);
      } else {
        requests.push({ method: req.method ?? "", url, kind: "other", toolResults: 0, body, at });
        json(res, 404, { error: { type: "not_found", message: `scripted model: no ${path}` } });
      }
    });
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve(undefined));
  });
  const address = /** @type {import("node:net").AddressInfo} */ (server.address());
  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve(undefined));
      }),
  };
}

/**
 * @param {Step[]} script
 * @param {number} n
 * @param {any} body
 * @param {string} kind
 * @returns {Step}
 */
function pick(script, n, body, kind) {
  const tools = body?.tools;
  if (!Array.isArray(tools) || tools.length === 0) return { text: SIDE_TEXT };
  const step = script[n] ?? { text: DONE_TEXT };
  return "react" in step ? step.react(body, kind) : step;
}

function json(res, status, value) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

function sse(res) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  return (event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/**
 * OpenAI Responses streaming: created, the output item (added, done), completed.
 * @param {import("node:http").ServerResponse} res
 * @param {number} id
 * @param {Step} step
 */
function respondResponses(res, id, step) {
  const responseId = `resp_${id}`;
  let item;
  if ("tool" in step && step.tool.custom) {
    item = {
      type: "custom_tool_call",
      id: `ctc_${id}`,
      call_id: `call_${id}`,
      name: step.tool.name,
      input: step.tool.input ?? "",
      status: "completed",
    };
  } else if ("tool" in step) {
    item = {
      type: "function_call",
      id: `fc_${id}`,
      call_id: `call_${id}`,
      name: step.tool.name,
      arguments: JSON.stringify(step.tool.arguments),
      ...(step.tool.namespace ? { namespace: step.tool.namespace } : {}),
    };
  } else {
    item = {
      type: "message",
      id: `msg_${id}`,
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: step.text, annotations: [] }],
    };
  }
  const send = sse(res);
  const base = { id: responseId, object: "response", model: "scripted", status: "in_progress" };
  send("response.created", { type: "response.created", response: { ...base, output: [] } });
  send("response.output_item.added", { type: "response.output_item.added", output_index: 0, item });
  if (!("tool" in step)) {
    send("response.output_text.delta", {
      type: "response.output_text.delta",
      item_id: item.id,
      output_index: 0,
      content_index: 0,
      delta: step.text,
    });
  }
  send("response.output_item.done", { type: "response.output_item.done", output_index: 0, item });
  send("response.completed", {
    type: "response.completed",
    response: {
      ...base,
      status: "completed",
      output: [item],
      usage: {
        input_tokens: 100,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 10,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 110,
      },
    },
  });
  res.end();
}

/**
 * OpenAI chat completions, streamed: one `chat.completion.chunk` with the text or the tool
 * call, one with the finish reason, then `[DONE]` (Pi's `openai-completions` provider).
 * @param {import("node:http").ServerResponse} res
 * @param {number} id
 * @param {Step} step
 */
function respondChat(res, id, step) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const chunk = (delta, finish) =>
    res.write(
      `data: ${JSON.stringify({ id: `chat_${id}`, object: "chat.completion.chunk", created: 0, model: "scripted", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
    );
  if ("tool" in step) {
    chunk(
      {
        role: "assistant",
        content: null,
        tool_calls: [{ index: 0, id: `call_${id}`, type: "function", function: { name: step.tool.name, arguments: JSON.stringify(step.tool.arguments ?? {}) } }],
      },
      null,
    );
    chunk({}, "tool_calls");
  } else {
    chunk({ role: "assistant", content: step.text }, null);
    chunk({}, "stop");
  }
  res.end("data: [DONE]\n\n");
}

/**
 * Anthropic Messages: streamed events, or one JSON message when `stream` is not true.
 * @param {import("node:http").ServerResponse} res
 * @param {number} id
 * @param {Step} step
 * @param {any} body
 */
function respondMessages(res, id, step, body) {
  const block =
    "tool" in step
      ? { type: "tool_use", id: `toolu_${id}`, name: step.tool.name, input: step.tool.arguments }
      : { type: "text", text: step.text };
  const stopReason = "tool" in step ? "tool_use" : "end_turn";
  const message = {
    id: `msg_${id}`,
    type: "message",
    role: "assistant",
    model: body?.model ?? "scripted",
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 100, output_tokens: 0 },
  };
  if (body?.stream !== true) {
    json(res, 200, {
      ...message,
      content: [block],
      stop_reason: stopReason,
      usage: { input_tokens: 100, output_tokens: 10 },
    });
    return;
  }
  const send = sse(res);
  send("message_start", { type: "message_start", message });
  if (block.type === "tool_use") {
    send("content_block_start", {
      type: "content_block_start",
      index: 0,
      content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
    });
    send("content_block_delta", {
      type: "content_block_delta",
      index: 0,
      delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
    });
  } else {
    send("content_block_start", {
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "" },
    });
    send("content_block_delta", {
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text: block.text },
    });
  }
  send("content_block_stop", { type: "content_block_stop", index: 0 });
  send("message_delta", {
    type: "message_delta",
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: 10 },
  });
  send("message_stop", { type: "message_stop" });
  res.end();
}
