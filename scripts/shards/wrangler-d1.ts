// A D1 database reached through wrangler, shaped as the worker's own binding, so that operator tools run the db
// functions of src/db themselves: the same statements, rendered by the same code, bound with the same values. Only
// what those functions call is here (prepare, bind, all, first, run, raw, batch). A remote database is reached
// through `wrangler d1 execute`; a local one (the state of `wrangler dev`) is opened in this process, through
// wrangler's public getPlatformProxy: the real D1 binding of a local workerd, started once per process and
// environment. Each `wrangler d1 execute --local` started wrangler and a workerd of its own for every statement or
// batch (2 to 3 s of CPU each, two or three times per admin command); now a tool pays one start (docs/decisions.md,
// issue 38). A tool that opened a local database calls closeLocalDatabases() before it ends.
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import type { PlatformProxy } from "wrangler";
import { wranglerMessage } from "../wrangler-message.mjs";
import { retriedOnLocalLock } from "./move";
import { localStateDir, type Target, targetFlags, WranglerError, wrangler } from "./wrangler";
import { inline } from "./wrangler-executor";

/** A failed `wrangler d1 execute`, told in one line (wrangler's own error text, never the SQL it ran). */
export class D1CommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "D1CommandError";
  }
}

/**
 * The longest command passed on the command line (Linux refuses one argument over 128 KiB). Remotely a file runs as
 * an import, which holds the database, so a longer batch is refused.
 */
const MAX_COMMAND_BYTES = 100_000;

type Result = D1Result<Record<string, unknown>>;

/** What `--json` prints: one result per statement, or `{"error": {"text"}}` on failure. */
function parseOutput(stdout: string): Result[] | { error: string } {
  const start = stdout.search(/[[{]/);
  if (start < 0) return { error: stdout.trim() || "wrangler printed nothing" };
  const parsed = JSON.parse(stdout.slice(start)) as
    | { results?: Record<string, unknown>[]; success?: boolean; meta?: D1Meta }[]
    | { error?: { text?: string } };
  if (!Array.isArray(parsed)) return { error: parsed.error?.text ?? JSON.stringify(parsed) };
  return parsed.map((result) => ({
    results: result.results ?? [],
    success: true as const,
    meta: (result.meta ?? {}) as D1Meta & Record<string, unknown>,
  }));
}

function failure(err: unknown): string {
  if (!(err instanceof WranglerError)) return String(err);
  try {
    const parsed = parseOutput(err.stdout);
    if ("error" in parsed) return parsed.error;
  } catch {
    // Not JSON: wrangler's own error line.
  }
  return wranglerMessage(err.stdout, err.stderr);
}

/**
 * Runs the statements in one `wrangler d1 execute --remote --command` call: one call of D1's query API, in order.
 */
async function execute(target: Target, binding: string, statements: readonly Bound[]): Promise<Result[]> {
  const command = statements.map((statement) => inline(statement)).join(";\n");
  if (Buffer.byteLength(command) > MAX_COMMAND_BYTES) {
    throw new D1CommandError(`${statements.length} statements are too long for one wrangler d1 execute call.`);
  }
  const where = `${binding} (remote${target.env ? `, env ${target.env}` : ""})`;
  try {
    const output = parseOutput(
      wrangler(["d1", "execute", binding, ...targetFlags(target), "--json", "--command", command], { quiet: true }),
    );
    if ("error" in output) throw new D1CommandError(`${where}: ${output.error}`);
    return output;
  } catch (err) {
    throw err instanceof D1CommandError ? err : new D1CommandError(`${where}: ${failure(err)}`);
  }
}

interface Bound {
  sql: string;
  params: readonly unknown[];
}

const proxies = new Map<string, Promise<PlatformProxy<Record<string, unknown>>>>();

function proxyOf(target: Target): Promise<PlatformProxy<Record<string, unknown>>> {
  // `wrangler dev --persist-to DIR` keeps its state in DIR/v3 (DIR defaults to .wrangler/state beside the config);
  // getPlatformProxy takes that inner directory.
  const state = join(resolve(localStateDir(target.persistTo) ?? join(target.config, "..", ".wrangler", "state")), "v3");
  const key = `${target.config}\n${target.env ?? ""}\n${state}`;
  let proxy = proxies.get(key);
  if (proxy === undefined) {
    // wrangler logs to stdout what it starts with ("Using secrets defined in .dev.vars", which `npm run dev` writes),
    // where the tools print their answers (`--json` among them); `wrangler d1 execute` was run with its output
    // captured. So its info lines stay hidden unless the operator sets WRANGLER_LOG; warnings still show.
    process.env.WRANGLER_LOG ??= "warn";
    // Loaded on first use, as wranglerConfig does (wrangler.ts): `--help` and refusals never pay for it.
    const { getPlatformProxy } = createRequire(import.meta.url)("wrangler") as typeof import("wrangler");
    proxy = getPlatformProxy({
      configPath: target.config,
      environment: target.env,
      persist: { path: state },
      remoteBindings: false,
    });
    proxies.set(key, proxy);
  }
  return proxy;
}

/** The local databases of the target's environment, by binding (the same state `wrangler dev` uses). */
export async function localDatabases(target: Target): Promise<Record<string, D1Database>> {
  return (await proxyOf(target)).env as Record<string, D1Database>;
}

/** Stops the local workerds this process started (its exit would otherwise wait on them). */
export async function closeLocalDatabases(): Promise<void> {
  const started = [...proxies.values()];
  proxies.clear();
  await Promise.all(started.map(async (proxy) => (await proxy).dispose()));
}

/** `call`, retried on `wrangler dev`'s lock as scripts/shards/move.ts does; its last error told in one line. */
async function retried<T>(where: string, call: () => Promise<T>): Promise<T> {
  try {
    return await retriedOnLocalLock(call);
  } catch (err) {
    throw new D1CommandError(`${where}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * The database `binding` of a local target, as the db functions of src/db use it (prepare, bind, all, first, run,
 * raw, batch). Synchronous like the remote one: the workerd starts on the first statement.
 */
function localD1(target: Target, binding: string): D1Database {
  const where = `${binding} (local${target.env ? `, env ${target.env}` : ""})`;
  const database = async () => {
    const found = (await localDatabases(target))[binding] as D1Database | undefined;
    if (found === undefined) throw new Error(`no D1 binding ${binding} in this environment`);
    return found;
  };
  const prepared = (sql: string, params: readonly unknown[] = []) => {
    const real = async () => (await database()).prepare(sql).bind(...params);
    const statement = {
      sql,
      params,
      real,
      bind: (...values: unknown[]) => prepared(sql, values),
      all: () => retried(where, async () => (await real()).all()),
      run: () => retried(where, async () => (await real()).run()),
      first: (column?: string) =>
        retried(where, async () => (column === undefined ? (await real()).first() : (await real()).first(column))),
      raw: () => retried(where, async () => (await real()).raw()),
    };
    return statement;
  };
  const local = {
    prepare: (sql: string) => prepared(sql),
    batch: (statements: ReturnType<typeof prepared>[]) =>
      retried(where, async () => (await database()).batch(await Promise.all(statements.map((s) => s.real())))),
  };
  // Only the members the db functions use exist (see above); the rest of D1Database is never called here.
  return local as unknown as D1Database;
}

/** The database `binding` of the target, for the db functions of src/db (see the file's head). */
export function wranglerD1(target: Target, binding: string): D1Database {
  if (!target.remote) return localD1(target, binding);
  const prepared = (sql: string, params: readonly unknown[] = []) => {
    const statement = {
      sql,
      params,
      bind: (...values: unknown[]) => prepared(sql, values),
      all: async () => (await execute(target, binding, [statement]))[0],
      run: async () => (await execute(target, binding, [statement]))[0],
      first: async (column?: string) => {
        const row = (await statement.all()).results[0];
        if (row === undefined) return null;
        return column === undefined ? row : (row[column] ?? null);
      },
      raw: async () => (await statement.all()).results.map((row) => Object.values(row)),
    };
    return statement;
  };
  const database = {
    prepare: (sql: string) => prepared(sql),
    batch: (statements: Bound[]) => execute(target, binding, statements),
  };
  // Only the members the db functions use exist (see above); the rest of D1Database is never called here.
  return database as unknown as D1Database;
}
