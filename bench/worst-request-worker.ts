// The app, unchanged, for `bench/worst-request.mjs`: its D1 bindings and its per-user rate limiter wrapped so that
// each request's D1 round trips, rows and SQL time (D1's own `meta.duration`) and what it was charged (calls of
// USER_RATE_LIMITER for its user) are counted, including what a streamed answer does while its body is read. The
// answer is passed through untouched (the harness counts its bytes); the counts are read afterwards from
// `GET /__worst/<id>`, the id being the request's `X-Worst-Id`.
import app from "../src/index";
import { isD1Binding } from "./recording";

interface Counts {
  d1Calls: number;
  rowsRead: number;
  rowsWritten: number;
  sqlMs: number;
  charged: number;
}

/** The counts of finished requests, by id (the harness reads each once). */
const finished = new Map<string, Counts>();

function count(counts: Counts, meta: D1Meta | undefined): void {
  counts.rowsRead += meta?.rows_read ?? 0;
  counts.rowsWritten += meta?.rows_written ?? 0;
  counts.sqlMs += meta?.duration ?? 0;
}

/** A statement whose runs are counted: every way of running one goes through all() or run(). */
function countedStatement(statement: D1PreparedStatement, counts: Counts): D1PreparedStatement {
  return new Proxy(statement, {
    get(target, property) {
      if (property === "bind") return (...values: unknown[]) => countedStatement(target.bind(...values), counts);
      if (property === "all" || property === "run" || property === "first" || property === "raw") {
        return async (...args: unknown[]) => {
          counts.d1Calls++;
          const result = await target.all<Record<string, unknown>>();
          count(counts, result.meta);
          if (property === "all" || property === "run") return result;
          if (property === "raw") return result.results.map((row) => Object.values(row));
          const row = result.results[0] ?? null;
          const column = args[0] as string | undefined;
          return column === undefined || row === null ? row : (row[column] ?? null);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

const inner = new WeakMap<object, D1PreparedStatement>();

function counting<T extends Pick<D1Database, "prepare" | "batch">>(target: T, counts: Counts): T {
  return new Proxy(target, {
    get(object, property) {
      if (property === "prepare") {
        return (query: string) => {
          const real = object.prepare(query);
          const wrapped = countedStatement(real, counts);
          inner.set(wrapped, real);
          return wrapped;
        };
      }
      if (property === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          counts.d1Calls++;
          const results = await object.batch(statements.map((statement) => inner.get(statement) ?? statement));
          for (const result of results) count(counts, result.meta);
          return results;
        };
      }
      if (property === "withSession") {
        return (constraint?: string) => counting((object as unknown as D1Database).withSession(constraint), counts);
      }
      const value = Reflect.get(object, property, object);
      return typeof value === "function" ? value.bind(object) : value;
    },
  });
}

export default {
  async fetch(request: Request, env: Cloudflare.Env, ctx: ExecutionContext): Promise<Response> {
    const path = new URL(request.url).pathname;
    if (path.startsWith("/__worst/")) {
      const id = path.slice("/__worst/".length);
      const counts = finished.get(id);
      finished.delete(id);
      return counts ? Response.json(counts) : new Response("unknown id", { status: 404 });
    }
    const id = request.headers.get("X-Worst-Id");
    const counts: Counts = { d1Calls: 0, rowsRead: 0, rowsWritten: 0, sqlMs: 0, charged: 0 };
    const wrapped: Record<string, unknown> = { ...env };
    for (const [name, value] of Object.entries(env)) {
      if (isD1Binding(value)) wrapped[name] = counting(value, counts);
    }
    const limiter = env.USER_RATE_LIMITER;
    wrapped.USER_RATE_LIMITER = {
      limit: (options: { key: string }) => {
        counts.charged++;
        return limiter.limit(options);
      },
    };
    const response = await app.fetch(request, wrapped as unknown as Cloudflare.Env, ctx);
    if (id === null) return response;
    if (!response.body) {
      finished.set(id, counts);
      return response;
    }
    // The counts are complete once the body (whose pages make D1 calls as it is read) has been read to its end.
    const done = new TransformStream<Uint8Array, Uint8Array>({
      flush() {
        finished.set(id, counts);
      },
    });
    return new Response(response.body.pipeThrough(done), response);
  },
} satisfies ExportedHandler<Cloudflare.Env>;
