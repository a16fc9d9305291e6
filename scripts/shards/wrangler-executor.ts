// Runs the move's SQL on remote D1 databases through `wrangler d1 execute` (no bound parameters there:
// values are written into the SQL as literals).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Row, ShardExecutor, SqlValue } from "./move";
import { type Target, targetFlags, wrangler } from "./wrangler";

function literal(value: SqlValue | boolean | bigint): string {
  if (value === null) return "NULL";
  if (typeof value === "boolean") return value ? "1" : "0";
  if (typeof value === "bigint") return String(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error(`cannot write ${value} into SQL`);
    return String(value);
  }
  if (typeof value !== "string") throw new Error(`cannot write a ${typeof value} into SQL`);
  return `'${value.replaceAll("'", "''")}'`;
}

/**
 * The statement with each parameter replaced by its value: `?` takes the next one, `?N` the Nth (the numbered
 * form src/db/statements.ts renders, each bound once however often it appears). A `?` inside a quoted string
 * or identifier is text, as SQLite reads it.
 */
export function inline({ sql, params }: { sql: string; params: readonly unknown[] }): string {
  let next = 0;
  const used = new Set<number>();
  let text = "";
  let quote: string | undefined;
  for (let i = 0; i < sql.length; i++) {
    const char = sql[i];
    if (quote !== undefined) {
      if (char === quote) quote = undefined;
    } else if (char === "'" || char === '"' || char === "`") {
      quote = char;
    } else if (char === "?") {
      const digits = /^\d*/.exec(sql.slice(i + 1))?.[0] ?? "";
      const index = digits === "" ? next++ : Number(digits) - 1;
      if (index < 0 || index >= params.length) throw new Error(`too few parameters for: ${sql}`);
      used.add(index);
      text += literal(params[index] as SqlValue);
      i += digits.length;
      continue;
    }
    text += char;
  }
  if (used.size !== params.length) throw new Error(`too many parameters for: ${sql}`);
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
