// The app, unchanged, with its D1 binding wrapped so that every response tells how many rows the
// request read and wrote (summed from D1's result `meta`). Used only for the sequential row probes
// of `npm run bench`, never for the load runs, so the wrapping costs nothing in the rps figures.
//
// Response headers added:
//   X-Bench-Rows-Read     sum of meta.rows_read of every D1 result of the request
//   X-Bench-Rows-Written  sum of meta.rows_written
//   X-Bench-D1-Calls      number of D1 round trips (one statement call or one batch each)
//
// Drizzle runs selects through `stmt.raw()`, whose result carries no meta: here raw() is served by
// all() (which does) and each row object is turned back into an array with Object.values, which
// keeps the column order of the SELECT (this assumes distinct, non-numeric column names, true of
// every query the app issues). first() is served by all() too. batch() results carry meta as is.
import app from "../src/index";

interface Counter {
  rowsRead: number;
  rowsWritten: number;
  calls: number;
}

interface Meta {
  rows_read?: number;
  rows_written?: number;
}

function count(counter: Counter, meta: Meta | undefined): void {
  counter.rowsRead += meta?.rows_read ?? 0;
  counter.rowsWritten += meta?.rows_written ?? 0;
}

class CountingStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    private readonly counter: Counter,
  ) {}

  bind(...values: unknown[]): CountingStatement {
    return new CountingStatement(this.inner.bind(...values), this.counter);
  }

  private async allCounted<T>(): Promise<D1Result<T>> {
    this.counter.calls++;
    const result = await this.inner.all<T>();
    count(this.counter, result.meta);
    return result;
  }

  all<T>(): Promise<D1Result<T>> {
    return this.allCounted<T>();
  }

  async run<T>(): Promise<D1Result<T>> {
    this.counter.calls++;
    const result = await this.inner.run<T>();
    count(this.counter, result.meta);
    return result;
  }

  async raw(options?: { columnNames?: boolean }): Promise<unknown[][]> {
    const { results } = await this.allCounted<Record<string, unknown>>();
    const rows = results.map((row) => Object.values(row));
    return options?.columnNames ? [Object.keys(results[0] ?? {}), ...rows] : rows;
  }

  async first(column?: string): Promise<unknown> {
    const { results } = await this.allCounted<Record<string, unknown>>();
    const row = results[0];
    if (row === undefined) return null;
    return column === undefined ? row : (row[column] ?? null);
  }
}

function unwrap(statement: D1PreparedStatement): D1PreparedStatement {
  const candidate = statement as unknown;
  return candidate instanceof CountingStatement ? candidate.inner : statement;
}

type Batchable = Pick<D1Database, "prepare" | "batch">;

/** Wraps a D1Database or a D1DatabaseSession: prepare and batch count; everything else passes through. */
function counting<T extends Batchable>(target: T, counter: Counter): T {
  return new Proxy(target, {
    get(object, property) {
      if (property === "prepare") {
        return (query: string) => new CountingStatement(object.prepare(query), counter);
      }
      if (property === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          counter.calls++;
          const results = await object.batch(statements.map(unwrap));
          for (const result of results) count(counter, result.meta);
          return results;
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

export default {
  async fetch(request: Request, env: Cloudflare.Env, ctx: ExecutionContext): Promise<Response> {
    const counter: Counter = { rowsRead: 0, rowsWritten: 0, calls: 0 };
    const response = await app.fetch(request, { ...env, DB: counting(env.DB, counter) }, ctx);
    const counted = new Response(response.body, response);
    counted.headers.set("X-Bench-Rows-Read", String(counter.rowsRead));
    counted.headers.set("X-Bench-Rows-Written", String(counter.rowsWritten));
    counted.headers.set("X-Bench-D1-Calls", String(counter.calls));
    return counted;
  },
} satisfies ExportedHandler<Cloudflare.Env>;
