// The app, unchanged, with its D1 bindings wrapped so that every response tells what the request asked of
// D1 (D1Use in bench/recording.ts). Used only for the sequential probes and recordings of `npm run bench`,
// never for the load runs, so the wrapping costs nothing in the rps figures.
//
// Response headers added:
//   X-Bench-Rows-Read     sum of meta.rows_read of every D1 result of the request
//   X-Bench-Rows-Written  sum of meta.rows_written
//   X-Bench-D1-Calls      number of D1 round trips (one statement call or one batch each)
//   X-Bench-D1-Queries    statements sent (each statement of a batch counts)
//   X-Bench-D1-Sequential round trips that started while no other was under way (what the request waits for in turn)
//   X-Bench-D1-Answer-Bytes, X-Bench-D1-Largest-Answer-Bytes  D1's answers as JSON text (UTF-8): all, and the largest
//
// With the request header X-Bench-Record, the answer is instead a JSON envelope (RecordingEnvelope in
// bench/recording.ts): the app's status, headers and body plus every D1 call of the request with what it
// returned, the tape that the isolate-only worker (bench/isolate-worker.ts) replays, and the counts above.
// With X-Bench-D1-Delay: <ms>, every D1 call waits that long before it goes out (the far-edge scenario).
// `POST /__bench/alias-lookup` ({userId, url}): the rows D1 reads for the lookup every API makes of a URL
// (`subscriptionsNamedBySql`, src/db/feed-aliases.ts) in each database, as the bench's alias figures report them.
//
// Drizzle runs selects through `stmt.raw()`, whose result carries no meta: here raw() is served by
// all() (which does) and each row object is turned back into an array with Object.values, which
// keeps the column order of the SELECT (this assumes distinct, non-numeric column names, true of
// every query the app issues). first() is served by all() too. batch() results carry meta as is.
import { sql } from "drizzle-orm";
import { ALIASES_PER_PODCAST, subscriptionsNamedBySql } from "../src/db/feed-aliases";
import { statement } from "../src/db/statements";
import { urlKey } from "../src/db/url-key";
import app from "../src/index";
import {
  D1_DELAY_HEADER,
  type D1Operation,
  type D1Use,
  isD1Binding,
  RECORD_HEADER,
  type RecordedCall,
  type RecordedFetch,
  type RecordingEnvelope,
  SCHEDULED_PATH,
  type ScheduledEnvelope,
} from "./recording";

interface Counter extends D1Use {
  /** Round trips under way now (to tell the sequential ones). */
  inFlight: number;
  /** Milliseconds every call waits before it goes out. */
  delayMs: number;
  /** Every D1 call with its result, when the request asked for a recording. */
  tape?: RecordedCall[];
}

const encoder = new TextEncoder();

/** One round trip of `queries` statements: counted, delayed when asked, its answer measured. */
async function roundTrip<T>(counter: Counter, queries: number, send: () => Promise<T>): Promise<T> {
  counter.calls++;
  counter.queries += queries;
  if (counter.inFlight === 0) counter.sequential++;
  counter.inFlight++;
  try {
    if (counter.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, counter.delayMs));
    const result = await send();
    const bytes = encoder.encode(JSON.stringify(result)).byteLength;
    counter.answerBytes += bytes;
    counter.largestAnswerBytes = Math.max(counter.largestAnswerBytes, bytes);
    return result;
  } finally {
    counter.inFlight--;
  }
}

interface Meta {
  rows_read?: number;
  rows_written?: number;
}

function count(counter: Counter, meta: Meta | undefined): void {
  counter.rowsRead += meta?.rows_read ?? 0;
  counter.rowsWritten += meta?.rows_written ?? 0;
}

function record<T>(counter: Counter, op: D1Operation, statements: D1PreparedStatement[], result: T): T {
  if (counter.tape) {
    const taped = statements.map(counted);
    counter.tape.push({
      op,
      sql: taped.map((statement) => statement.sql),
      params: taped.map((statement) => statement.params),
      result: JSON.stringify(result),
    });
  }
  return result;
}

class CountingStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    readonly sql: string,
    private readonly counter: Counter,
    readonly params: unknown[] = [],
  ) {}

  bind(...values: unknown[]): CountingStatement {
    return new CountingStatement(this.inner.bind(...values), this.sql, this.counter, values);
  }

  private async allCounted<T>(): Promise<D1Result<T>> {
    const result = await roundTrip(this.counter, 1, () => this.inner.all<T>());
    count(this.counter, result.meta);
    return result;
  }

  async all<T>(): Promise<D1Result<T>> {
    return record(this.counter, "all", [this as unknown as D1PreparedStatement], await this.allCounted<T>());
  }

  async run<T>(): Promise<D1Result<T>> {
    const result = await roundTrip(this.counter, 1, () => this.inner.run<T>());
    count(this.counter, result.meta);
    return record(this.counter, "run", [this as unknown as D1PreparedStatement], result);
  }

  async raw(options?: { columnNames?: boolean }): Promise<unknown[][]> {
    const { results } = await this.allCounted<Record<string, unknown>>();
    const rows = results.map((row) => Object.values(row));
    return record(
      this.counter,
      "raw",
      [this as unknown as D1PreparedStatement],
      options?.columnNames ? [Object.keys(results[0] ?? {}), ...rows] : rows,
    );
  }

  async first(column?: string): Promise<unknown> {
    const { results } = await this.allCounted<Record<string, unknown>>();
    const row = results[0];
    const value = row === undefined ? null : column === undefined ? row : (row[column] ?? null);
    return record(this.counter, "first", [this as unknown as D1PreparedStatement], value);
  }
}

function unwrap(statement: D1PreparedStatement): D1PreparedStatement {
  const candidate = statement as unknown;
  return candidate instanceof CountingStatement ? candidate.inner : statement;
}

function counted(statement: D1PreparedStatement): CountingStatement {
  const candidate = statement as unknown;
  if (candidate instanceof CountingStatement) return candidate;
  throw new Error("a batch holds a statement that was not prepared through the counting wrapper");
}

type Batchable = Pick<D1Database, "prepare" | "batch">;

/** Wraps a D1Database or a D1DatabaseSession: prepare and batch count; everything else passes through. */
function counting<T extends Batchable>(target: T, counter: Counter): T {
  return new Proxy(target, {
    get(object, property) {
      if (property === "prepare") {
        return (query: string) => new CountingStatement(object.prepare(query), query, counter);
      }
      if (property === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          const results = await roundTrip(counter, statements.length, () => object.batch(statements.map(unwrap)));
          for (const result of results) count(counter, result.meta);
          return record(counter, "batch", statements, results);
        };
      }
      if (property === "withSession") {
        return (constraint?: string) => counting((object as unknown as D1Database).withSession(constraint), counter);
      }
      const value = Reflect.get(object, property, object);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
}

/** The environment with every D1 binding (one, or one per shard) wrapped around the same counter. */
function countingEnv(env: Cloudflare.Env, counter: Counter): Cloudflare.Env {
  const wrapped: Record<string, unknown> = { ...env };
  for (const [name, value] of Object.entries(env)) {
    if (isD1Binding(value)) wrapped[name] = counting(value, counter);
  }
  return wrapped as unknown as Cloudflare.Env;
}

/** The counts of a request, without the bookkeeping. */
function useOf({ inFlight: _inFlight, delayMs: _delayMs, tape: _tape, ...use }: Counter): D1Use {
  return use;
}

/** Bytes as base64, in slices (String.fromCharCode of a whole 1 MiB chunk would overflow the stack). */
function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  }
  return btoa(binary);
}

/**
 * The real fetch, each answer's body passed through a stream that keeps every chunk the caller reads: what the
 * isolate-only worker replays (the round reads a feed's body only to its first item or 1 MiB, then cancels it).
 */
function recordingFetch(real: typeof fetch, fetches: RecordedFetch[]): typeof fetch {
  return async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const response = await real(request);
    const recorded: RecordedFetch = {
      url: request.url,
      method: request.method,
      status: response.status,
      headers: [...response.headers],
      chunks: [],
    };
    fetches.push(recorded);
    if (!response.body) return response;
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        recorded.chunks.push(base64(value));
        controller.enqueue(value);
      },
      cancel: (reason) => reader.cancel(reason),
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** A fresh count of one request's (or scheduled run's) D1 use, recording its calls when `recording`. */
function newCounter(delayMs: number, recording: boolean): Counter {
  return {
    rowsRead: 0,
    rowsWritten: 0,
    calls: 0,
    queries: 0,
    sequential: 0,
    answerBytes: 0,
    largestAnswerBytes: 0,
    inFlight: 0,
    delayMs,
    ...(recording ? { tape: [] } : {}),
  };
}

/**
 * `POST SCHEDULED_PATH` with RECORD_HEADER: the worker's scheduled handler (the Cron Trigger's run: retention and
 * the feed round) with every D1 call counted and recorded, every fetch recorded, and its console lines kept.
 * The harness sends one at a time: fetch and console are swapped for the run's duration.
 */
async function recordScheduled(request: Request, env: Cloudflare.Env, ctx: ExecutionContext): Promise<Response> {
  const counter = newCounter(0, true);
  const scheduledTime = Number(new URL(request.url).searchParams.get("at") ?? Date.now());
  const controller = { scheduledTime, cron: "*/10 * * * *", noRetry() {} } as ScheduledController;
  const fetches: RecordedFetch[] = [];
  const lines: string[] = [];
  const realFetch = globalThis.fetch;
  const { log, error } = console;
  globalThis.fetch = recordingFetch(realFetch, fetches);
  console.log = (...args: unknown[]) => lines.push(args.map(String).join(" "));
  console.error = console.log;
  let envelope: ScheduledEnvelope;
  try {
    await app.scheduled(controller, countingEnv(env, counter), ctx);
    envelope = { ok: true, lines, calls: counter.tape ?? [], fetches, use: useOf(counter) };
  } catch (err) {
    envelope = { ok: false, error: String(err), lines, calls: counter.tape ?? [], fetches, use: useOf(counter) };
  } finally {
    globalThis.fetch = realFetch;
    console.log = log;
    console.error = error;
  }
  return Response.json(envelope);
}

/** The lookup of `namedSubscriptionsSql` alone, as one statement (the shape the feed-moves test measures). */
const aliasLookup = statement(
  subscriptionsNamedBySql(sql.placeholder("userId"), sql.placeholder("url"), sql.placeholder("urlKey")),
);

/** `POST ALIAS_LOOKUP_PATH`: the lookup of `url` for `userId` in every database, its rows read and found. */
async function lookUpAlias(request: Request, env: Cloudflare.Env): Promise<Response> {
  const { userId, url } = (await request.json()) as { userId: string; url: string };
  const databases = [];
  for (const [name, value] of Object.entries(env)) {
    if (!isD1Binding(value)) continue;
    const { results, meta } = await aliasLookup.bind(value, { userId, url, urlKey: urlKey(url) }).all();
    databases.push({ name, rowsRead: meta.rows_read, found: results.length });
  }
  return Response.json({ aliasesPerPodcast: ALIASES_PER_PODCAST, databases });
}

const ALIAS_LOOKUP_PATH = "/__bench/alias-lookup";

const USE_HEADERS: Record<keyof D1Use, string> = {
  rowsRead: "X-Bench-Rows-Read",
  rowsWritten: "X-Bench-Rows-Written",
  calls: "X-Bench-D1-Calls",
  queries: "X-Bench-D1-Queries",
  sequential: "X-Bench-D1-Sequential",
  answerBytes: "X-Bench-D1-Answer-Bytes",
  largestAnswerBytes: "X-Bench-D1-Largest-Answer-Bytes",
};

export default {
  async fetch(request: Request, env: Cloudflare.Env, ctx: ExecutionContext): Promise<Response> {
    const recording = request.headers.has(RECORD_HEADER);
    if (recording && request.method === "POST" && new URL(request.url).pathname === SCHEDULED_PATH) {
      return recordScheduled(request, env, ctx);
    }
    if (request.method === "POST" && new URL(request.url).pathname === ALIAS_LOOKUP_PATH) {
      return lookUpAlias(request, env);
    }
    const counter = newCounter(Number(request.headers.get(D1_DELAY_HEADER) ?? 0) || 0, recording);
    const response = await app.fetch(request, countingEnv(env, counter), ctx);
    if (counter.tape) {
      const headers: Record<string, string> = {};
      const cookie = response.headers.get("set-cookie");
      if (cookie !== null) headers["set-cookie"] = cookie;
      const envelope: RecordingEnvelope = {
        status: response.status,
        headers,
        body: await response.text(),
        calls: counter.tape,
        use: useOf(counter),
      };
      return Response.json(envelope);
    }
    // A streamed answer (the OPML export, the gpodder GETs) makes its D1 calls while its body is read: read it
    // all before counting, so the headers report the whole request, not the part before the response started.
    const counted = new Response(await response.arrayBuffer(), response);
    for (const [name, value] of Object.entries(useOf(counter))) {
      counted.headers.set(USE_HEADERS[name as keyof D1Use], String(value));
    }
    return counted;
  },
} satisfies ExportedHandler<Cloudflare.Env>;
