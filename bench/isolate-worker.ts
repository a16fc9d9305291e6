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
import { appPasswordStatements } from "../src/db/app-passwords";
import { deviceStatements } from "../src/db/devices";
import app from "../src/index";
import {
  type D1Operation,
  FORMAT_FLOOR_HEADER,
  type FormatFloor,
  HOLD_HEADER,
  isD1Binding,
  isRateLimitBinding,
  type RecordedCall,
  type Recordings,
  SCENARIO_HEADER,
  warmUpName,
} from "./recording";

/** A bookmark of the shape D1 returns, so the response carries the header it carries when deployed. */
const BOOKMARK = "00000085-0000024c-00004c6d-8e61117bf38d7adb71b934ebbf891683";

let recordings: Map<string, RecordedCall[]> = new Map();

/** The calls of one request, consumed in order. */
class Tape {
  private next = 0;

  constructor(
    private readonly calls: RecordedCall[],
    private readonly scenario: string,
    private readonly warmUp: RecordedCall[] = [],
    /** Batches are held until released (HOLD_HEADER). */
    readonly holding = false,
  ) {}

  play<T>(op: D1Operation, sql: string[]): Promise<T> {
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

export default {
  async fetch(request: Request, env: Cloudflare.Env, ctx: ExecutionContext): Promise<Response> {
    chooseConsole(env);
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
    const path = new URL(request.url).pathname;
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
