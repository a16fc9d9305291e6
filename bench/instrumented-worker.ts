// The app, unchanged, with its D1 bindings wrapped so that every response tells how many rows the
// request read and wrote (summed from D1's result `meta`). Used only for the sequential probes of
// `npm run bench`, never for the load runs, so the wrapping costs nothing in the rps figures.
//
// Response headers added:
//   X-Bench-Rows-Read     sum of meta.rows_read of every D1 result of the request
//   X-Bench-Rows-Written  sum of meta.rows_written
//   X-Bench-D1-Calls      number of D1 round trips (one statement call or one batch each)
//
// With the request header X-Bench-Record, the answer is instead a JSON envelope (RecordingEnvelope in
// bench/recording.ts): the app's status and body plus every D1 call of the request with what it
// returned, the tape that the isolate-only worker (bench/isolate-worker.ts) replays.
//
// Drizzle runs selects through `stmt.raw()`, whose result carries no meta: here raw() is served by
// all() (which does) and each row object is turned back into an array with Object.values, which
// keeps the column order of the SELECT (this assumes distinct, non-numeric column names, true of
// every query the app issues). first() is served by all() too. batch() results carry meta as is.
import app from "../src/index";
import { type D1Operation, isD1Binding, RECORD_HEADER, type RecordedCall, type RecordingEnvelope } from "./recording";

interface Counter {
  rowsRead: number;
  rowsWritten: number;
  calls: number;
  /** Every D1 call with its result, when the request asked for a recording. */
  tape?: RecordedCall[];
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
    this.counter.calls++;
    const result = await this.inner.all<T>();
    count(this.counter, result.meta);
    return result;
  }

  async all<T>(): Promise<D1Result<T>> {
    return record(this.counter, "all", [this as unknown as D1PreparedStatement], await this.allCounted<T>());
  }

  async run<T>(): Promise<D1Result<T>> {
    this.counter.calls++;
    const result = await this.inner.run<T>();
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
          counter.calls++;
          const results = await object.batch(statements.map(unwrap));
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

export default {
  async fetch(request: Request, env: Cloudflare.Env, ctx: ExecutionContext): Promise<Response> {
    const recording = request.headers.has(RECORD_HEADER);
    const counter: Counter = { rowsRead: 0, rowsWritten: 0, calls: 0, ...(recording ? { tape: [] } : {}) };
    const response = await app.fetch(request, countingEnv(env, counter), ctx);
    if (counter.tape) {
      const envelope: RecordingEnvelope = { status: response.status, body: await response.text(), calls: counter.tape };
      return Response.json(envelope);
    }
    // A streamed answer (the OPML export, the gpodder GETs) makes its D1 calls while its body is read: read it
    // all before counting, so the headers report the whole request, not the part before the response started.
    const counted = new Response(await response.arrayBuffer(), response);
    counted.headers.set("X-Bench-Rows-Read", String(counter.rowsRead));
    counted.headers.set("X-Bench-Rows-Written", String(counter.rowsWritten));
    counted.headers.set("X-Bench-D1-Calls", String(counter.calls));
    return counted;
  },
} satisfies ExportedHandler<Cloudflare.Env>;
