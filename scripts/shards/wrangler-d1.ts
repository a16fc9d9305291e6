// A D1 database reached through `wrangler d1 execute` (remote, or the local state of `wrangler dev`), shaped
// as the worker's own binding, so that operator tools run the db functions of src/db themselves: the same
// statements, rendered by the same code, bound with the same values. Only what those functions call is here
// (prepare, bind, all, first, run, raw, batch).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { wranglerMessage } from "../wrangler-message.mjs";
import { LOCAL_LOCK_ERROR } from "./move";
import { type Target, targetFlags, WranglerError, wrangler } from "./wrangler";
import { inline } from "./wrangler-executor";

/** A failed `wrangler d1 execute`, told in one line (wrangler's own error text, never the SQL it ran). */
export class D1CommandError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "D1CommandError";
  }
}

/**
 * The longest command passed on the command line (Linux refuses one argument over 128 KiB). A longer one goes in a
 * file locally (wrangler runs a file as it runs a command: one batch); remotely a file runs as an import, which
 * holds the database, so a longer batch is refused there.
 */
const MAX_COMMAND_BYTES = 100_000;
/** Local lock retries (wrangler dev holds the same SQLite files): as scripts/shards/move.ts does. */
const LOCAL_ATTEMPTS = 8;

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
 * Runs the statements in one `wrangler d1 execute --command` call: locally wrangler runs them as one D1 batch (one
 * transaction); remotely as one call of D1's query API, in order. Callers' statements are safe to repeat.
 */
async function execute(target: Target, binding: string, statements: readonly Bound[]): Promise<Result[]> {
  const command = statements.map((statement) => inline(statement)).join(";\n");
  const long = Buffer.byteLength(command) > MAX_COMMAND_BYTES;
  if (long && target.remote) {
    throw new D1CommandError(`${statements.length} statements are too long for one wrangler d1 execute call.`);
  }
  const where = `${binding} (${target.remote ? "remote" : "local"}${target.env ? `, env ${target.env}` : ""})`;
  const scratch = long ? mkdtempSync(join(tmpdir(), "wrangler-d1-")) : undefined;
  const input = scratch ? ["--file", join(scratch, "batch.sql")] : ["--command", command];
  if (scratch) writeFileSync(join(scratch, "batch.sql"), `${command};\n`);
  try {
    return await run(target, binding, where, input);
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

async function run(target: Target, binding: string, where: string, input: string[]): Promise<Result[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      const output = parseOutput(
        wrangler(["d1", "execute", binding, ...targetFlags(target), "--json", ...input], { quiet: true }),
      );
      if ("error" in output) throw new D1CommandError(`${where}: ${output.error}`);
      return output;
    } catch (err) {
      const message = err instanceof D1CommandError ? err.message : `${where}: ${failure(err)}`;
      if (!target.remote && attempt < LOCAL_ATTEMPTS && LOCAL_LOCK_ERROR.test(message)) {
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
        continue;
      }
      throw new D1CommandError(message);
    }
  }
}

interface Bound {
  sql: string;
  params: readonly unknown[];
}

/** The database `binding` of the target, for the db functions of src/db (see the file's head). */
export function wranglerD1(target: Target, binding: string): D1Database {
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
