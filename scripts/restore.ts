// Restores one database of a backup (scripts/backup.ts) into a fresh, empty D1 database (docs/README-ops.md,
// "Backups"): the export's schema, rows and triggers, as they were, D1's migration table included (so later
// `npm run db:migrate:*` runs apply only what came after the backup).
//
//   npm run restore -- DIR/DB.sql --to NAME --remote           a database created for it (wrangler d1 create NAME)
//   npm run restore -- DIR/DB.sql --to DB --local --persist-to DIR   a fresh local state directory
//
// It refuses a target that holds any table: restoring over data would mix two histories. Prints what it will do
// and asks first unless --yes.
import { existsSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { ask, fail as failWith, parseOrFail } from "./command-line";
import { localStateDir, TARGET_OPTIONS, type Target, targetFlags, wrangler } from "./shards/wrangler";
import { closeLocalDatabases, wranglerD1 } from "./shards/wrangler-d1";

const USAGE = `Usage: npm run restore -- FILE.sql --to DATABASE [--remote | --local [--persist-to DIR]] [--env NAME] [--yes]

Restores one file of a backup (npm run backup) into an empty D1 database: remotely one you created for it
(npx wrangler d1 create NAME; --to takes its name or a binding of the config), locally a binding of the config
in a fresh state directory. Refuses a database that holds any table. Asks first unless --yes.
`;

const TOOL = "restore";

function fail(message: string, status: number): never {
  return failWith(TOOL, message, status);
}

function parse() {
  return parseOrFail(TOOL, USAGE, {
    allowPositionals: true,
    options: {
      to: { type: "string" },
      ...TARGET_OPTIONS,
      yes: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
}

async function main(): Promise<void> {
  const { values, positionals } = parse();
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (positionals.length !== 1) fail(`name one backup file (a .sql of npm run backup).\n${USAGE}`, 2);
  if (!values.to) fail(`--to DATABASE is required.\n${USAGE}`, 2);
  if (values.local && values.remote) fail("--local and --remote exclude each other.", 2);
  if (values["persist-to"] !== undefined && !values.local) fail("--persist-to needs --local.", 2);
  const file = resolve(positionals[0]);
  if (!existsSync(file) || !statSync(file).isFile()) fail(`${positionals[0]} is not a file.`, 2);
  const persistTo = values.local ? localStateDir(values["persist-to"]) : undefined;
  const target: Target = {
    config: resolve(values.config),
    env: values.env,
    remote: !values.local,
    persistTo: persistTo && resolve(persistTo),
  };
  const where = `${values.to} (${target.remote ? "remote" : `local${target.persistTo ? `, ${target.persistTo}` : ""}`})`;
  const { results } = await wranglerD1(target, values.to)
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'",
    )
    .all<{ name: string }>();
  // The local database is closed before wrangler writes the file into it (one process on its SQLite files).
  await closeLocalDatabases();
  if (results.length > 0) {
    fail(
      `${where} is not empty (tables ${results.map((row) => row.name).join(", ")}): restore into a fresh database, never over data.`,
      1,
    );
  }
  console.log(
    `restore ${file} (${statSync(file).size.toLocaleString("en-US")} bytes) into the empty database ${where}`,
  );
  if (!values.yes) {
    const answer = await ask("Restore? [y/N] ");
    if (answer === undefined)
      fail("nothing was changed: no answer could be read (stdin is closed). Run it again with --yes.", 1);
    if (!/^y(es)?$/i.test(answer)) fail("nothing was changed.", 1);
  }
  // Remotely wrangler runs a file as an import (the fresh database is unavailable meanwhile); locally as one batch.
  wrangler(["d1", "execute", values.to, ...targetFlags(target), "--file", file, "--yes"], { quiet: true });
  console.log(
    `restored into ${where}. To serve it, point the binding's database_id at it (or move the users' buckets to it).`,
  );
}

try {
  await main();
} catch (err) {
  fail(err instanceof Error ? err.message : String(err), 1);
}
