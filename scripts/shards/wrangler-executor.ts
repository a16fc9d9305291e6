// Runs the move's SQL on remote D1 databases through `wrangler d1 execute` (no bound parameters there:
// values are written into the SQL as literals).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Row, ShardExecutor, SqlValue, Statement } from "./move";
import { type Target, targetFlags, wrangler } from "./wrangler";

function literal(value: SqlValue): string {
  if (value === null) return "NULL";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error(`cannot write ${value} into SQL`);
    return String(value);
  }
  return `'${value.replaceAll("'", "''")}'`;
}

/** The statement with each `?` replaced by its value (the move's SQL has no `?` inside string literals). */
export function inline({ sql, params }: Statement): string {
  let next = 0;
  const text = sql.replace(/\?/g, () => {
    if (next >= params.length) throw new Error(`too few parameters for: ${sql}`);
    return literal(params[next++]);
  });
  if (next !== params.length) throw new Error(`too many parameters for: ${sql}`);
  return text;
}

function results(stdout: string): Row[] {
  const parsed = JSON.parse(stdout.slice(stdout.indexOf("["))) as { results: Row[] }[];
  return parsed.flatMap((result) => result.results);
}

export function wranglerExecutor(target: Target): ShardExecutor {
  const execute = (database: string, args: string[]) =>
    wrangler(["d1", "execute", database, ...targetFlags(target), "--json", ...args], { quiet: true });
  return {
    async all(database, statement) {
      return results(execute(database, ["--command", inline(statement)]));
    },
    async batch(database, statements) {
      if (statements.length === 0) return;
      const dir = mkdtempSync(join(tmpdir(), "shards-move-"));
      try {
        const file = join(dir, "batch.sql");
        writeFileSync(file, statements.map((statement) => `${inline(statement)};`).join("\n"));
        execute(database, ["--file", file]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
