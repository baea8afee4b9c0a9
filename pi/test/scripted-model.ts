/**
 * A scripted stand-in for an LLM: an OpenAI-compatible `/v1/chat/completions` server on
 * 127.0.0.1 that answers each request with the next scripted step, streamed as
 * server-sent `chat.completion.chunk` events (tool-call deltas, then `finish_reason`,
 * then `[DONE]`), the way Pi's `openai-completions` provider reads them. It records every
 * request body so tests can see what reached the model.
 */

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export type Step =
  | { toolCalls: Array<{ name: string; arguments: Record<string, unknown> }> }
  | { text: string };

export interface ScriptedModel {
  /** `http://127.0.0.1:PORT/v1` */
  baseUrl: string;
  /** Every request body received, in order. */
  requests: Array<Record<string, unknown>>;
  /** The URL of every other request (answered 404). */
  others: string[];
  close(): Promise<void>;
}

export const PROVIDER = "satyrn-scripted";
export const MODEL_ID = "scripted-model";
/** The `--model` value for Pi. */
export const MODEL = `${PROVIDER}/${MODEL_ID}`;

export async function startScriptedModel(script: Step[]): Promise<ScriptedModel> {
  const requests: Array<Record<string, unknown>> = [];
  const others: string[] = [];
  let next = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
        others.push(req.url ?? "");
        res.writeHead(404).end();
        return;
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      } catch {
        // recorded as empty
      }
      requests.push(body);
      const step: Step = script[next] ?? { text: "The script is over." };
      next += 1;
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const send = (delta: Record<string, unknown>, finish: string | null) =>
        res.write(
          `data: ${JSON.stringify({
            id: `scripted-${next}`,
            object: "chat.completion.chunk",
            created: 0,
            model: MODEL_ID,
            choices: [{ index: 0, delta, finish_reason: finish }],
          })}\n\n`,
        );
      if ("toolCalls" in step) {
        step.toolCalls.forEach((call, index) => {
          send(
            {
              role: "assistant",
              content: null,
              tool_calls: [
                {
                  index,
                  id: `call_${next}_${index}`,
                  type: "function",
                  function: { name: call.name, arguments: JSON.stringify(call.arguments) },
                },
              ],
            },
            null,
          );
        });
        send({}, "tool_calls");
      } else {
        send({ role: "assistant", content: step.text }, null);
        send({}, "stop");
      }
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    others,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Writes an isolated Pi agent directory whose only model is the scripted one, plus
 * `extraModels` (more model ids of the same provider, answered by the same server). */
export function writeAgentDir(dir: string, baseUrl: string, extraModels: string[] = []): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "models.json"),
    JSON.stringify(
      {
        providers: {
          [PROVIDER]: {
            baseUrl,
            api: "openai-completions",
            apiKey: "scripted",
            compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
            models: [MODEL_ID, ...extraModels].map((id) => ({ id, name: `Scripted model ${id} (stands in for an LLM)` })),
          },
        },
      },
      null,
      2,
    ),
  );
  return dir;
}

/** The text of every tool-result message in a recorded request. */
export function toolResults(request: Record<string, unknown>): string[] {
  const messages = (request.messages as Array<Record<string, unknown>> | undefined) ?? [];
  return messages
    .filter((m) => m.role === "tool")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
}

/** The tool definitions offered in a recorded request, by name. */
export function offeredTools(request: Record<string, unknown>): Map<string, string> {
  const tools = (request.tools as Array<{ function?: { name?: string; description?: string } }> | undefined) ?? [];
  return new Map(tools.map((t) => [t.function?.name ?? "", t.function?.description ?? ""]));
}
