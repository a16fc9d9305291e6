// The tape that links the two bench-only workers: the instrumented worker (bench/instrumented-worker.ts)
// records every D1 call a request makes against the real local D1; the isolate-only worker
// (bench/isolate-worker.ts) replays those answers in the isolate. Measuring instruments only: no test
// and no deployment uses either.

/** A D1 method the app (through Drizzle) calls on a prepared statement, or a batch on the database. */
export type D1Operation = "all" | "run" | "raw" | "first" | "batch";

/** One D1 round trip of a request, in the order the request made it. */
export interface RecordedCall {
  op: D1Operation;
  /** The statement's SQL (one element); for a batch, each statement's SQL in order. */
  sql: string[];
  /** The values bound to each statement (the statement floor runs them again; the replay ignores them). */
  params: unknown[][];
  /**
   * What the call returned to the app, as JSON text. The replay parses it anew on every call, as the
   * deployed D1 binding parses D1's answer in the isolate.
   */
  result: string;
}

/**
 * `POST /__bench/recordings` body of the isolate-only worker: each scenario's calls, by scenario name, and
 * under `warmUpName(scenario)` the calls an isolate makes once to fill its own caches before that scenario's
 * steady state (a gpodder sign-in, every 60 s; a device the isolate does not know, every 10 min).
 */
export type Recordings = Record<string, RecordedCall[]>;

/** The recordings key of a scenario's warm-up calls. */
export const warmUpName = (scenario: string): string => `warm-up:${scenario}`;

/** The request header that names the scenario whose tape the isolate-only worker replays. */
export const SCENARIO_HEADER = "X-Bench-Scenario";

/**
 * The request header that asks the isolate-only worker for a scenario's format floor instead of the app: only
 * the JSON work the scenario cannot avoid, `request` (parse the request body, send the app's response
 * text) or `answer` (that, and parse the recorded D1 answers). See bench/isolate-worker.ts.
 */
export const FORMAT_FLOOR_HEADER = "X-Bench-Format-Floor";
export type FormatFloor = "request" | "answer";

/** The request header that asks the instrumented worker for the recording envelope instead of the response. */
export const RECORD_HEADER = "X-Bench-Record";

/**
 * The request header that makes the instrumented worker wait this many milliseconds before every D1 call it
 * passes on: a database far from the isolate (the far-edge scenario, bench/README.md).
 */
export const D1_DELAY_HEADER = "X-Bench-D1-Delay";

/**
 * On a request to the isolate-only worker: each D1 batch of the replay is held (its statements with their values,
 * and the JSON text the D1 binding sends for them, kept alive) until the harness sends `POST /__bench/release`, so
 * the harness can read the isolate's heap while the request holds what it holds when its batch goes out.
 */
export const HOLD_HEADER = "X-Bench-Hold-D1";

/**
 * What the instrumented worker counts of one request's D1 use (response headers `X-Bench-<Name>`, and the
 * envelope of a recorded request).
 */
export interface D1Use {
  /** Sum of `meta.rows_read` / `meta.rows_written` of every D1 result. */
  rowsRead: number;
  rowsWritten: number;
  /** Round trips: one statement call or one batch each. */
  calls: number;
  /** Statements sent, a batch counting each of its statements: the queries Cloudflare's plans limit per invocation. */
  queries: number;
  /**
   * Round trips that started while no other was under way: the ones a request waits for one after the other
   * (calls made together with `Promise.all` overlap and count once).
   */
  sequential: number;
  /** Bytes of D1's answers as JSON text: all of them, and the largest one the request held at once. */
  answerBytes: number;
  largestAnswerBytes: number;
}

/** The instrumented worker's answer to a recorded request: the app's response plus the tape. */
export interface RecordingEnvelope {
  status: number;
  /** The response headers the harness needs again (`set-cookie`: a gpodder session the next requests send). */
  headers: Record<string, string>;
  body: string;
  calls: RecordedCall[];
  use: D1Use;
}

/** A binding that behaves as a D1 database (or session): the ones both bench workers wrap or stand in for. */
export function isD1Binding(value: unknown): value is D1Database {
  const candidate = value as Partial<D1Database> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.prepare === "function" &&
    typeof candidate.batch === "function" &&
    typeof candidate.withSession === "function"
  );
}

/** A binding that behaves as a Workers Rate Limiting binding. */
export function isRateLimitBinding(value: unknown): value is RateLimit {
  const candidate = value as Partial<RateLimit> | null;
  return (
    typeof candidate === "object" && candidate !== null && typeof candidate.limit === "function" && !isD1Binding(value)
  );
}

// ---------------------------------------------------------------------------------------------
// The scheduled run (the Cron Trigger: retention and the feed round, src/scheduled.ts), recorded and replayed
// like a request: `POST SCHEDULED_PATH` runs the worker's `scheduled` handler. The instrumented worker records its
// D1 calls and its fetches (the feed hosts' answers, as the round read them); the isolate-only worker replays both.

/** The path of both bench workers that runs the scheduled handler (with SCENARIO_HEADER in the isolate-only one). */
export const SCHEDULED_PATH = "/__bench/scheduled";
/** The path of the isolate-only worker that loads the recorded fetches (`POST`, a RecordedFetches body). */
export const FETCHES_PATH = "/__bench/fetches";
/** The path of the isolate-only worker that loads channel heads (`POST`, name -> text) and parses them (`GET`). */
export const HEADS_PATH = "/__bench/heads";

/** One fetch of a scheduled run: the request, and the answer as the round read it (its body's chunks, base64). */
export interface RecordedFetch {
  url: string;
  method: string;
  status: number;
  headers: [string, string][];
  /** The chunks the round read, in order; it read no further (the fetch stops at the first item or 1 MiB). */
  chunks: string[];
}

/** `POST FETCHES_PATH` body: the fetches of every scheduled scenario, by scenario name. */
export type RecordedFetches = Record<string, RecordedFetch[]>;

/** The instrumented worker's answer to a recorded scheduled run. */
export interface ScheduledEnvelope {
  /** Whether the handler resolved (true) or threw (its error). */
  ok: boolean;
  error?: string;
  /** The console lines the run wrote (its summaries: `cron_run`, `tombstone_retention`, `feed_round`). */
  lines: string[];
  calls: RecordedCall[];
  fetches: RecordedFetch[];
  use: D1Use;
}
