// MEASURING INSTRUMENT, NOT A TEST DOUBLE: no test uses it and it is never deployed.
//
// The app's own bundle with D1 and the rate limiters answered inside the isolate, so that the workerd
// CPU of a request is what the app's JavaScript costs, without the local D1 simulator and the local
// rate-limit Durable Object (both of which run in the same workerd and cost several times the app
// locally, while a deployed worker pays little CPU for them: its D1 and rate-limit calls are I/O).
//
// - D1: every call replays the answer the real local D1 gave to the very same request (recorded by
//   bench/instrumented-worker.ts, loaded here by the harness with `POST /__bench/recordings`). The
//   request names its tape with the X-Bench-Scenario header; each call must come in the recorded
//   order with the recorded SQL, or the request fails (500), so a replay can never pass for a
//   different code path. The one exception: a call that is not the next one but is among the
//   scenario's recorded warm-up calls (a gpodder sign-in, a device the isolate does not know yet: the
//   calls that fill the app's per-isolate caches) is answered from those, the tape staying where it is.
//   The tape itself is the steady state (caches warm); the warm-up costs what it costs once per 60 s. The recorded result is parsed from JSON text on every call, as the
//   deployed binding parses D1's answer in the isolate.
// - Rate limiters: always allow (a deployed call is about 0.1 ms, mostly waiting).
// - console: what a deployed isolate does with a console call, and no more. Deployed, workerd only
//   adds the call to the request's trace (Workers Logs), each argument serialised to JSON. Local
//   workerd (console mode STDOUT) also resolves its Node-style inspector module, formats the call
//   with it, and writes and flushes the line to stdout, one write per line (Worker::handleLog in
//   workerd's src/workerd/io/worker.c++): 50 to 90 µs a call here whatever the line, more than the
//   app's whole access log. The stand-in serialises the arguments as the trace does and keeps the
//   last lines in memory. A worker bound with BENCH_CONSOLE=local keeps the real console: the
//   harness serves the same bundle that way too and reports the difference (bench/README.md).
// - Held batches (header X-Bench-Hold-D1): a D1 batch waits, with what the deployed binding would hold for it (the
//   statements' values and the JSON request made of them), until the harness releases it: what the request holds
//   then is read from the isolate's heap through the inspector (bench/README.md, "What an upload holds").
// - Format floor (header X-Bench-Format-Floor): instead of the app, only the JSON a scenario cannot avoid:
//   parse the request body and send the app's own response text (captured from one app request), and with
//   `answer` parse the recorded D1 answers too. What a bulk or feed row costs beyond that is the
//   app's; a target below the floor is out of reach whatever the app does (bench/README.md).

import { SaxesParser } from "saxes";
import { appPasswordStatements } from "../src/db/app-passwords";
import { deviceStatements } from "../src/db/devices";
import { parseChannelHead } from "../src/feeds/parse";
import app from "../src/index";
import {
  type D1Operation,
  FETCHES_PATH,
  FORMAT_FLOOR_HEADER,
  type FormatFloor,
  HEADS_PATH,
  HOLD_HEADER,
  isD1Binding,
  isRateLimitBinding,
  type RecordedCall,
  type RecordedFetches,
  type Recordings,
  SCENARIO_HEADER,
  SCHEDULED_PATH,
  warmUpName,
} from "./recording";

/** A bookmark of the shape D1 returns, so the response carries the header it carries when deployed. */
const BOOKMARK = "00000085-0000024c-00004c6d-8e61117bf38d7adb71b934ebbf891683";

let recordings: Map<string, RecordedCall[]> = new Map();

/** The calls of one request, consumed in order. */
class Tape {
  private next = 0;
  /** Any order (a scheduled run): the calls already answered. */
  private readonly answered: boolean[] = [];

  constructor(
    private readonly calls: RecordedCall[],
    private readonly scenario: string,
    private readonly warmUp: RecordedCall[] = [],
    /** Batches are held until released (HOLD_HEADER). */
    readonly holding = false,
    /**
     * A scheduled run's jobs (retention, the feed round) run side by side, so their calls interleave as the real
     * D1's latencies had them: each call is answered by the first recorded call not answered yet with its SQL.
     */
    private readonly anyOrder = false,
  ) {}

  play<T>(op: D1Operation, sql: string[]): Promise<T> {
    if (this.anyOrder) {
      const at = this.calls.findIndex((c, i) => !this.answered[i] && c.op === op && sameStatements(c.sql, sql));
      if (at < 0) {
        return Promise.reject(
          new Error(`replay of ${this.scenario}: no recorded ${op} ${sql.join("; ").slice(0, 200)}`),
        );
      }
      this.answered[at] = true;
      return Promise.resolve(JSON.parse(this.calls[at].result) as T);
    }
    const call = this.calls[this.next];
    if (call === undefined || call.op !== op || !sameStatements(call.sql, sql)) {
      const warming = this.warmUp.find((candidate) => candidate.op === op && sameStatements(candidate.sql, sql));
      if (warming) return Promise.resolve(JSON.parse(warming.result) as T);
      const withDevice =
        op === "batch" && call?.op === "batch"
          ? namingDevice(sql, call.sql, () => JSON.parse(call.result) as unknown[])
          : undefined;
      if (withDevice) {
        this.next++;
        return Promise.resolve(withDevice as T);
      }
    }
    this.next++;
    if (call === undefined || call.op !== op || !sameStatements(call.sql, sql)) {
      return Promise.reject(
        new Error(
          `replay of ${this.scenario}: call ${this.next} is ${op} ${sql.join("; ").slice(0, 200)}; recorded ${call ? `${call.op} ${call.sql.join("; ").slice(0, 200)}` : "nothing"}`,
        ),
      );
    }
    return Promise.resolve(JSON.parse(call.result) as T);
  }
}

/**
 * A batch that creates the device its path names besides the recorded statements: what a request makes in an
 * isolate that does not know the device yet (once per 10 minutes; the tape is the steady state). The device's upsert
 * and guard come after the credential's guard (a read's batch has one only for them); they are answered as they are
 * when the device exists (the guards pass, the upsert stores), the rest from the recording. Undefined for any other
 * batch.
 */
const SYNTHESIZED = (row: Record<string, unknown>) => ({
  success: true,
  results: [row],
  meta: { duration: 0, rows_read: 1, rows_written: 0, changes: 0, last_row_id: 0, changed_db: false, size_after: 0 },
});

function namingDevice(sql: string[], recorded: string[], answers: () => unknown[]): unknown[] | undefined {
  const at = sql.findIndex(
    (text, i) => text === deviceStatements.upsert.sql && sql[i + 1] === deviceStatements.guard.sql,
  );
  if (at < 0) return undefined;
  const withGuard =
    at > 0 && sql[at - 1] === appPasswordStatements.credentialGuard.sql && sql.length === recorded.length + 3;
  const from = withGuard && recorded[at - 1] !== sql[at - 1] ? at - 1 : at;
  const rest = [...sql.slice(0, from), ...sql.slice(at + 2)];
  if (!sameStatements(recorded, rest)) return undefined;
  const added = [
    ...(from < at ? [SYNTHESIZED({ ended: null })] : []),
    SYNTHESIZED({ stored: 1 }),
    SYNTHESIZED({ refused: null }),
  ];
  const recordedAnswers = answers();
  return [...recordedAnswers.slice(0, from), ...added, ...recordedAnswers.slice(from)];
}

/**
 * Compares the app's SQL with the recorded SQL, statement by statement. A match stores the app's own
 * string in the tape: the app renders each statement once per isolate, so from then on the comparison
 * is of one string with itself (no character-by-character work that would weigh on the measure).
 */
function sameStatements(recorded: string[], sql: string[]): boolean {
  if (recorded.length !== sql.length) return false;
  for (let i = 0; i < sql.length; i++) {
    if (recorded[i] !== sql[i]) return false;
    recorded[i] = sql[i];
  }
  return true;
}

class ReplayStatement {
  /** Kept only while batches are held: what the deployed binding would send. */
  values: unknown[] = [];

  constructor(
    private readonly tape: Tape,
    readonly sql: string,
  ) {}

  // The replayed answer already holds what these values selected.
  bind(...values: unknown[]): ReplayStatement {
    if (!this.tape.holding) return this;
    const bound = new ReplayStatement(this.tape, this.sql);
    bound.values = values;
    return bound;
  }

  all<T>(): Promise<D1Result<T>> {
    return this.tape.play("all", [this.sql]);
  }

  run<T>(): Promise<D1Result<T>> {
    return this.tape.play("run", [this.sql]);
  }

  raw<T>(): Promise<T[]> {
    return this.tape.play("raw", [this.sql]);
  }

  first<T>(): Promise<T | null> {
    return this.tape.play("first", [this.sql]);
  }
}

/** Stands in for a D1Database and for the sessions it opens. */
class ReplayDatabase {
  constructor(private readonly tape: Tape) {}

  prepare(sql: string): ReplayStatement {
    return new ReplayStatement(this.tape, sql);
  }

  async batch<T>(statements: ReplayStatement[]): Promise<D1Result<T>[]> {
    if (this.tape.holding) {
      // The request the deployed binding makes of a batch: every statement's SQL and values as one JSON text.
      const sent = JSON.stringify(statements.map((statement) => ({ sql: statement.sql, params: statement.values })));
      await new Promise<void>((release) => {
        held = { release, bytes: sent.length };
      });
    }
    return this.tape.play(
      "batch",
      statements.map((statement) => statement.sql),
    );
  }

  withSession(): ReplayDatabase {
    return this;
  }

  getBookmark(): string {
    return BOOKMARK;
  }
}

/** The batch held now (HOLD_HEADER), and the length of the request text made for it. */
let held: { release: () => void; bytes: number } | undefined;

const allow: RateLimit = { limit: () => Promise.resolve({ success: true }) };

/** The last console lines, as the deployed trace would hold them (bounded: the bench sends millions). */
const trace: string[] = new Array(64);
let traced = 0;

function traceConsoleCall(...args: unknown[]): void {
  trace[traced++ % trace.length] = `[${args.map((arg) => JSON.stringify(arg) ?? "null").join(", ")}]`;
}

let consoleChosen = false;

/** Once per isolate: the trace-only console, unless this worker is bound with BENCH_CONSOLE=local. */
function chooseConsole(env: Cloudflare.Env): void {
  if (consoleChosen) return;
  consoleChosen = true;
  if ((env as unknown as Record<string, unknown>).BENCH_CONSOLE === "local") return;
  for (const level of ["debug", "info", "log", "warn", "error"] as const) console[level] = traceConsoleCall;
}

/** Which bindings are D1 databases and which are rate limiters: found once per isolate. */
let standIns: { d1: string[]; rateLimits: string[] } | undefined;

function replayEnv(env: Cloudflare.Env, tape: Tape): Cloudflare.Env {
  standIns ??= {
    d1: Object.keys(env).filter((name) => isD1Binding(env[name as keyof Cloudflare.Env])),
    rateLimits: Object.keys(env).filter((name) => isRateLimitBinding(env[name as keyof Cloudflare.Env])),
  };
  const replaced: Record<string, unknown> = { ...env };
  const database = new ReplayDatabase(tape);
  for (const name of standIns.d1) replaced[name] = database;
  for (const name of standIns.rateLimits) replaced[name] = allow;
  return replaced as unknown as Cloudflare.Env;
}

/**
 * Each scenario's response as the app answered it once. The floor sends its text as it is: whatever builds a
 * response must at least send those bytes (the app writes some documents as text, SQLite having written their
 * items, so even `JSON.stringify` of the document would be no floor).
 */
const floorResponses = new Map<string, { status: number; headers: Headers; text: string }>();

async function formatFloor(
  request: Request,
  scenario: string,
  calls: RecordedCall[],
  floor: FormatFloor,
  appResponse: () => Promise<Response>,
): Promise<Response> {
  let answered = floorResponses.get(scenario);
  if (!answered) {
    const response = await appResponse();
    answered = { status: response.status, headers: response.headers, text: await response.text() };
    floorResponses.set(scenario, answered);
  }
  const body = await request.text();
  if (body !== "") JSON.parse(body);
  if (floor === "answer") for (const call of calls) JSON.parse(call.result);
  return new Response(answered.text, { status: answered.status, headers: answered.headers });
}

// ---------------------------------------------------------------------------------------------
// The scheduled run (bench/README.md, "The feed round"): its D1 calls from the tape, its fetches from the recorded
// answers of the feed hosts.

interface ReplayedFetch {
  status: number;
  headers: [string, string][];
  chunks: Uint8Array[];
}

/** The recorded answers by URL (each scenario's URLs are its own). */
const replayedFetches = new Map<string, ReplayedFetch>();
let realFetch: typeof fetch | undefined;

function bytesOf(base64: string): Uint8Array {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function loadFetches(fetches: RecordedFetches): void {
  replayedFetches.clear();
  // A URL recorded twice must have answered the same both times (the move's target: fetched after A's 301 in one
  // run, then as its own feed in the next): replayed by URL, the answer is one.
  const recorded = new Map<string, string>();
  for (const [scenario, list] of Object.entries(fetches)) {
    for (const { url, status, headers, chunks } of list) {
      const answer = JSON.stringify([status, chunks]);
      const before = recorded.get(url);
      if (before !== undefined && before !== answer) throw new Error(`${scenario}: ${url} answered differently twice`);
      recorded.set(url, answer);
      replayedFetches.set(url, { status, headers, chunks: chunks.map(bytesOf) });
    }
  }
  // The feed hosts' answers, as a response whose body gives the recorded chunks (arrived from the network when
  // deployed); any other URL goes out as usual.
  realFetch ??= globalThis.fetch;
  const passOn = realFetch;
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = input instanceof Request ? input.url : String(input);
    const answer = replayedFetches.get(url);
    if (!answer) return passOn(input, init);
    let next = 0;
    const body =
      answer.chunks.length === 0
        ? null
        : new ReadableStream<Uint8Array>({
            pull(controller) {
              if (next < answer.chunks.length) controller.enqueue(answer.chunks[next++]);
              else controller.close();
            },
          });
    return new Response(body, { status: answer.status, headers: answer.headers });
  };
}

async function replayScheduled(request: Request, env: Cloudflare.Env, ctx: ExecutionContext): Promise<Response> {
  const scenario = request.headers.get(SCENARIO_HEADER) ?? "";
  const calls = recordings.get(scenario);
  if (calls === undefined) return new Response(`no recording for ${scenario}`, { status: 500 });
  const scheduledTime = Number(new URL(request.url).searchParams.get("at") ?? Date.now());
  const controller = { scheduledTime, cron: "*/10 * * * *", noRetry() {} } as ScheduledController;
  const tape = new Tape(calls, scenario, [], false, true);
  const from = traced;
  try {
    await app.scheduled(controller, replayEnv(env, tape) as never, ctx);
  } catch (err) {
    return new Response(String(err), { status: 500 });
  }
  // The run's console lines (whole only when it ran alone, as the harness's check runs it).
  const lines: string[] = [];
  for (let n = from; n < traced && n - from < trace.length; n++) lines.push(trace[n % trace.length]);
  return Response.json(lines);
}

/** Channel heads to parse, by name (`POST HEADS_PATH`). */
let heads = new Map<string, string>();

/** saxes alone, as parseChannelHead sets it up, with no handler but the errors': what the parse costs at least. */
function saxesOnly(head: string): null {
  const parser = new SaxesParser({ xmlns: true, position: false });
  parser.on("error", () => {});
  parser.write(head).close();
  return null;
}

/**
 * `GET HEADS_PATH?head=<name>&times=<n>`: the head parsed n times (0: the request alone), the facts answered; with
 * `&saxes`, by saxes alone.
 */
function parseHeads(url: URL): Response {
  const head = heads.get(url.searchParams.get("head") ?? "");
  if (head === undefined) return new Response("no such head", { status: 404 });
  const times = Number(url.searchParams.get("times") ?? 1);
  const parse = url.searchParams.has("saxes") ? saxesOnly : parseChannelHead;
  let facts: unknown = null;
  for (let n = 0; n < times; n++) facts = parse(head);
  return Response.json(facts);
}

export default {
  async fetch(request: Request, env: Cloudflare.Env, ctx: ExecutionContext): Promise<Response> {
    chooseConsole(env);
    const path = new URL(request.url).pathname;
    if (path === SCHEDULED_PATH && request.method === "POST") return replayScheduled(request, env, ctx);
    if (path === FETCHES_PATH && request.method === "POST") {
      loadFetches((await request.json()) as RecordedFetches);
      return new Response(null, { status: 204 });
    }
    if (path === HEADS_PATH) {
      if (request.method !== "POST") return parseHeads(new URL(request.url));
      heads = new Map(Object.entries((await request.json()) as Record<string, string>));
      return new Response(null, { status: 204 });
    }
    const scenario = request.headers.get(SCENARIO_HEADER);
    if (scenario !== null) {
      const calls = recordings.get(scenario);
      if (calls === undefined) return new Response(`no recording for ${scenario}`, { status: 500 });
      const replay = async (forApp: Request): Promise<Response> => {
        const holding = request.headers.has(HOLD_HEADER);
        const tape = new Tape(calls, scenario, recordings.get(warmUpName(scenario)), holding);
        return app.fetch(forApp, replayEnv(env, tape), ctx);
      };
      const floor = request.headers.get(FORMAT_FLOOR_HEADER);
      if (floor === "request" || floor === "answer") {
        return formatFloor(request, scenario, calls, floor, () => replay(request.clone()));
      }
      return replay(request);
    }
    if (path === "/__bench/held") {
      // Whether a batch is held now, and its request's length; POST releases it.
      const now = held;
      if (request.method === "POST" && now) {
        held = undefined;
        now.release();
      }
      return Response.json(now ? { bytes: now.bytes } : null);
    }
    if (request.method === "POST" && path === "/__bench/recordings") {
      recordings = new Map(Object.entries((await request.json()) as Recordings));
      return new Response(null, { status: 204 });
    }
    return new Response(`send ${SCENARIO_HEADER}, or POST /__bench/recordings`, { status: 400 });
  },
} satisfies ExportedHandler<Cloudflare.Env>;
