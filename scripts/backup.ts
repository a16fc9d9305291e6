// Backups past D1's 30 days of Time Travel (docs/README-ops.md, "Backups"): every database of an environment
// exported as SQL, with a manifest, into one directory. The scheduled workflow .github/workflows/backup.yml runs
// it remotely and keeps the directory as a workflow artifact.
//
//   npm run backup -- --out DIR [--remote] [--env NAME]            the Cloudflare databases
//   npm run backup -- --out DIR --local [--persist-to DIR]         the local state of `wrangler dev`
//
// Each database is `wrangler d1 export <binding>` (schema and data; D1's own tables left out), written as
// <binding>.sql; manifest.json names the environment, each database (binding, name, id, the buckets the
// environment's SHARD_MAP gives it), the file's bytes and SHA-256, and when the export ran. Restoring one:
// `npm run restore` (scripts/restore.ts).
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { formatBucketSet, parseShardMap } from "../src/shards";
import { fail as failWith, parseOrFail } from "./command-line";
import {
  declaredDatabases,
  environmentVars,
  localStateDir,
  mappedDatabases,
  TARGET_OPTIONS,
  type Target,
  wrangler,
  wranglerConfig,
} from "./shards/wrangler";

const USAGE = `Usage: npm run backup -- --out DIR [--remote | --local [--persist-to DIR]] [--env NAME] [--config FILE]

Exports every D1 database of the environment (the ones its SHARD_MAP names, then the spare ones it declares)
with \`wrangler d1 export\`, one <binding>.sql each, plus manifest.json (sizes, SHA-256, buckets). Remote by
default. Restore one into a fresh database: npm run restore -- --help.
`;

export interface BackupManifest {
  createdAt: string;
  environment: string;
  remote: boolean;
  shardMap: string;
  databases: {
    binding: string;
    name: string;
    id: string;
    buckets: string;
    file: string;
    bytes: number;
    sha256: string;
  }[];
}

const TOOL = "backup";

function fail(message: string, status: number): never {
  return failWith(TOOL, message, status);
}

function parse() {
  return parseOrFail(TOOL, USAGE, {
    options: {
      out: { type: "string" },
      ...TARGET_OPTIONS,
      help: { type: "boolean", default: false },
    },
  });
}

type Config = ReturnType<typeof wranglerConfig>;

/** What the config declares of a D1 database. */
interface DeclaredDatabase {
  binding: string;
  database_name?: string;
  database_id?: string;
  preview_database_id?: string;
}

const declaredIn = (config: Config) => (config.d1_databases ?? []) as DeclaredDatabase[];

/**
 * `wrangler d1 export` of one database into `file`. Locally, wrangler 4.156's export has no --persist-to: it reads
 * the state beside its config file. So for another state directory it is given a config of the environment's
 * databases alone in a scratch directory whose .wrangler/state is a link to that directory.
 */
function exportDatabase(target: Target, config: Config, binding: string, file: string): void {
  if (target.remote || target.persistTo === undefined) {
    const flags = ["--config", target.config, target.remote ? "--remote" : "--local"];
    wrangler(["d1", "export", binding, ...flags, ...(target.env ? ["--env", target.env] : []), "--output", file], {
      quiet: true,
    });
    return;
  }
  const scratch = mkdtempSync(join(tmpdir(), "backup-config-"));
  try {
    mkdirSync(target.persistTo, { recursive: true });
    mkdirSync(join(scratch, ".wrangler"));
    symlinkSync(target.persistTo, join(scratch, ".wrangler", "state"), "dir");
    const databases = declaredIn(config).map(({ binding, database_name, database_id, preview_database_id }) => ({
      binding,
      database_name,
      database_id,
      preview_database_id,
    }));
    const scratchConfig = join(scratch, "wrangler.json");
    writeFileSync(scratchConfig, JSON.stringify({ name: config.name, d1_databases: databases }));
    wrangler(["d1", "export", binding, "--config", scratchConfig, "--local", "--output", file], { quiet: true });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function main(): void {
  const { values } = parse();
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (!values.out) fail(`--out DIR is required.\n${USAGE}`, 2);
  if (values.local && values.remote) fail("--local and --remote exclude each other.", 2);
  if (values["persist-to"] !== undefined && !values.local) fail("--persist-to needs --local.", 2);
  const persistTo = values.local ? localStateDir(values["persist-to"]) : undefined;
  const target: Target = {
    config: resolve(values.config),
    env: values.env,
    remote: !values.local,
    persistTo: persistTo && resolve(persistTo),
  };
  const config = wranglerConfig(target);
  const map = environmentVars(target).SHARD_MAP;
  const shardMap = typeof map === "string" ? map : "";
  const owners = parseShardMap(shardMap).owners;
  const out = resolve(values.out);
  mkdirSync(out, { recursive: true });
  const manifest: BackupManifest = {
    createdAt: new Date().toISOString(),
    environment: target.env ?? "(top level)",
    remote: target.remote,
    shardMap,
    databases: [],
  };
  for (const binding of [...new Set([...mappedDatabases(target), ...declaredDatabases(target)])]) {
    const declared = declaredIn(config).find((database) => database.binding === binding);
    const file = `${binding}.sql`;
    console.log(`== ${binding} (${declared?.database_name ?? "?"}), ${target.remote ? "remote" : "local"} -> ${file}`);
    exportDatabase(target, config, binding, join(out, file));
    const bytes = readFileSync(join(out, file));
    manifest.databases.push({
      binding,
      name: declared?.database_name ?? "",
      id: declared?.database_id ?? "",
      buckets: formatBucketSet(new Set(owners.flatMap((owner, bucket) => (owner === binding ? [bucket] : [])))),
      file,
      bytes: bytes.length,
      sha256: createHash("sha256").update(bytes).digest("hex"),
    });
  }
  writeFileSync(join(out, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`${manifest.databases.length} database(s) exported to ${out} (manifest.json lists them).`);
}

try {
  main();
} catch (err) {
  // wrangler's failures carry its output; anything else is one line. Never a stack trace.
  fail(err instanceof Error ? err.message : String(err), 1);
}
