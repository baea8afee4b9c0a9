/**
 * Where the tools' protocol requests go: one `satyrn-host protocol` process each
 * ([`processChannel`], lib/exchange.ts), or, inside a confined run, one connection to the
 * run's broker for the whole Pi session ([`BrokerSession`]).
 *
 * The broker's protocol session (crates/confine/src/broker.rs): the first line is the run's
 * secret and ` protocol`; then each request is framed as its length in bytes, a newline
 * and the JSON, and each answer is the exit status on a line, then the response line.
 * Requests go one at a time, in the order they were sent; the broker answers them in that
 * order.
 */

import { createConnection, type Socket } from "node:net";

import type { MutationContext } from "./context.ts";
import { describe, exchange, MAX_RESPONSE_BYTES, parseResponse, type ExchangeOptions, type ExchangeOutcome } from "./exchange.ts";

/** Sends one protocol request and waits for its outcome. Never rejects. */
export interface Channel {
  send(request: unknown): Promise<ExchangeOutcome>;
}

/** One `satyrn-host protocol` process per request (lib/exchange.ts). */
export function processChannel(host: string, options: ExchangeOptions = {}): Channel {
  return { send: (request) => exchange(host, request, options) };
}

/** The broker session when the context names a broker, else one process per request. */
export function openChannel(context: MutationContext, options: ExchangeOptions = {}): Channel {
  if (context.broker !== undefined) return new BrokerSession(context.broker.socket, context.broker.secret, options);
  return processChannel(context.host, options);
}

const CLOSED = "the broker closed the connection without an answer (a wrong SATYRN_BROKER_SECRET?)";

/** The request in flight: how to finish it. */
interface Pending {
  settle(outcome: ExchangeOutcome): void;
  timer: NodeJS.Timeout;
}

/**
 * One connection to a confined run's broker, opened at the first request and kept for the
 * session. A request that cannot be sent, is not answered within the deadline (default
 * 30 s), is answered with more than `maxResponseBytes` (default 1 MiB) or with anything
 * but a status line and one response line is a `transport` outcome, and the connection is
 * dropped (a late answer is never taken for the next request's); the next request opens a
 * new one. The socket does not keep Node's event loop alive while no request is in flight.
 */
export class BrokerSession implements Channel {
  private socket: Socket | undefined;
  private received: Buffer[] = [];
  private size = 0;
  private pending: Pending | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly path: string,
    private readonly secret: string,
    private readonly options: ExchangeOptions = {},
  ) {}

  send(request: unknown): Promise<ExchangeOutcome> {
    const turn = this.queue.then(() => this.ask(request));
    this.queue = turn;
    return turn;
  }

  /** Ends the session (a request in flight is a transport outcome). */
  close(): void {
    this.drop("the session was closed");
  }

  private ask(request: unknown): Promise<ExchangeOutcome> {
    return new Promise<ExchangeOutcome>((resolve) => {
      let body: Buffer;
      try {
        body = Buffer.from(JSON.stringify(request), "utf8");
      } catch (error) {
        resolve({ kind: "transport", reason: `cannot encode the request: ${describe(error)}` });
        return;
      }
      const deadlineMs = this.options.deadlineMs ?? 30_000;
      const timer = setTimeout(() => this.drop(`the broker did not answer within ${deadlineMs} ms`), deadlineMs);
      this.pending = {
        timer,
        settle: (outcome) => {
          clearTimeout(timer);
          this.pending = undefined;
          this.socket?.unref();
          resolve(outcome);
        },
      };
      const socket = this.connection();
      socket.ref();
      socket.write(Buffer.concat([Buffer.from(`${body.length}\n`, "ascii"), body]));
    });
  }

  private connection(): Socket {
    if (this.socket !== undefined) return this.socket;
    const socket = createConnection(this.path);
    socket.on("data", (chunk: Buffer) => this.receive(socket, chunk));
    socket.on("error", (error: NodeJS.ErrnoException) => {
      // A broker that refused the first line (a wrong secret) closes the connection: the
      // request then fails to send (EPIPE) or is reset, as often as it meets the close.
      const refused = error.code === "EPIPE" || error.code === "ECONNRESET";
      this.drop(refused ? CLOSED : `the broker connection failed: ${describe(error)}`, socket);
    });
    socket.on("close", () => this.drop(CLOSED, socket));
    socket.write(`${this.secret} protocol\n`);
    this.socket = socket;
    this.received = [];
    this.size = 0;
    return socket;
  }

  private receive(socket: Socket, chunk: Buffer): void {
    if (socket !== this.socket) return;
    if (this.pending === undefined) {
      this.drop("the broker sent an answer nobody asked for");
      return;
    }
    this.size += chunk.length;
    const max = this.options.maxResponseBytes ?? MAX_RESPONSE_BYTES;
    if (this.size > max) {
      this.drop(`the broker answered more than ${max} bytes`);
      return;
    }
    this.received.push(chunk);
    const all = Buffer.concat(this.received);
    const first = all.indexOf(0x0a);
    const second = first < 0 ? -1 : all.indexOf(0x0a, first + 1);
    if (second < 0) {
      this.received = [all];
      return;
    }
    const status = all.subarray(0, first).toString("ascii");
    const line = all.subarray(first + 1, second + 1).toString("utf8");
    if (second + 1 !== all.length || !/^\d{1,3}$/.test(status)) {
      this.drop("malformed answer from the broker");
      return;
    }
    this.received = [];
    this.size = 0;
    const parsed = parseResponse(line);
    if (typeof parsed === "string") {
      this.drop(`malformed response from the broker: ${parsed}`);
      return;
    }
    this.pending.settle({ kind: "response", response: parsed, exitCode: Number(status) });
  }

  /** Closes the connection (`only` it, when given) and ends the request in flight with `reason`. */
  private drop(reason: string, only?: Socket): void {
    if (only !== undefined && only !== this.socket) return;
    const socket = this.socket;
    this.socket = undefined;
    socket?.destroy();
    this.pending?.settle({ kind: "transport", reason });
  }
}
