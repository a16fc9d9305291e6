// Moves buckets of users between D1 databases while the service runs (docs/sharding.md).
//
//   npm run shards:move -- --env shards --buckets 512-767 --from DB_1 --to DB_2            local (wrangler dev's state)
//   npm run shards:move -- --buckets 512-527 --from DB --to DB_2 --remote                  Cloudflare (top level)
//
// Options: USAGE below (`npm run shards:move -- --help`). The local state is --persist-to, else DEV_STATE_DIR,
// else .wrangler/state. The target database gets the migrations first. The steps are in scripts/shards/move.ts.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { type BucketRange, parseBucketRange } from "../src/shards";
import { wranglerTomlStore } from "./shards/config-store";
import { d1Executor, moveBuckets, retryingOnLocalLock, type ShardExecutor, UnmigratedDatabase } from "./shards/move";
import { DEFAULT_CONFIG, localStateDir, type Target, targetFlags, wrangler } from "./shards/wrangler";
import { closeLocalDatabases, localDatabases } from "./shards/wrangler-d1";
import { wranglerExecutor } from "./shards/wrangler-executor";

const USAGE = `Usage: npm run shards:move -- --buckets FIRST-LAST --from BINDING --to BINDING [options]

Moves the users of the buckets from one D1 database to another while the service runs (docs/sharding.md,
"Moving buckets"): freeze, copy, verify, switch the map, unfreeze, delete the old rows.

  --buckets FIRST-LAST      the buckets to move (one bucket: N)
  --from BINDING, --to BINDING
                            D1 bindings of the environment (--to gets the migrations first)
  --env NAME                an environment of the config (default: the top level)
  --remote                  Cloudflare's databases; each settings change is deployed (default: local state)
  --config FILE             the wrangler config whose SHARD_MAP and SHARD_FROZEN are rewritten (default wrangler.toml)
  --persist-to DIR          local state directory, as \`wrangler dev --persist-to\`
  --worker-url URL          the running worker, waited for after each settings change
                            (default http://127.0.0.1:8787 locally; none remotely)
  --no-worker               local: no worker runs on this configuration
  --settle-seconds N        wait after the switch, still frozen (default 0 locally, 30 remotely)
  --propagation-seconds N   remote: wait after each deploy of the settings (default 30)
`;

/** A mistake on the command line: one line and the usage, exit status 2. */
function usageError(message: string): never {
  console.error(`shards:move: ${message}\nSee npm run shards:move -- --help.`);
  process.exit(2);
}

function parse() {
  try {
    return parseArgs({
      options: {
        buckets: { type: "string" },
        from: { type: "string" },
        to: { type: "string" },
        env: { type: "string" },
        remote: { type: "boolean", default: false },
        config: { type: "string", default: DEFAULT_CONFIG },
        "persist-to": { type: "string" },
        "settle-seconds": { type: "string" },
        "propagation-seconds": { type: "string", default: "30" },
        "worker-url": { type: "string" },
        "no-worker": { type: "boolean", default: false },
        help: { type: "boolean", default: false },
      },
    });
  } catch (err) {
    return usageError((err as Error).message);
  }
}

const { values } = parse();
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
if (!values.buckets || !values.from || !values.to) usageError("--buckets, --from and --to are required.");
const from = values.from;
const to = values.to;
for (const name of ["settle-seconds", "propagation-seconds"] as const) {
  const text = values[name];
  if (text !== undefined && !(Number(text) >= 0)) usageError(`--${name} takes a number of seconds, not "${text}".`);
}
const resolveOptional = (path: string | undefined) => (path === undefined ? undefined : resolve(path));

const target: Target = {
  config: resolve(values.config),
  env: values.env,
  remote: values.remote,
  persistTo: values.remote ? undefined : resolveOptional(localStateDir(values["persist-to"])),
};
function bucketsOf(text: string): BucketRange {
  try {
    return parseBucketRange(text, "--buckets");
  } catch (err) {
    return usageError((err as Error).message);
  }
}
const buckets = bucketsOf(values.buckets);
/** Where `wrangler dev` (npm run dev:shards) serves by default. */
const LOCAL_WORKER = "http://127.0.0.1:8787";
const seconds = (text: string | undefined, fallback: number) => (text === undefined ? fallback : Number(text)) * 1000;

try {
  await run();
} catch (err) {
  // wrangler's failures in its own words, anything else likewise: one line, never a stack trace.
  const hint = err instanceof UnmigratedDatabase ? ` (${migrateCommand(target)}), then move` : "";
  console.error(`shards:move: ${err instanceof Error ? err.message : String(err)}${hint}`);
  process.exitCode = 1;
}

/** The command that applies the migrations to every database of the move's environment and state. */
function migrateCommand(where: Target): string {
  const options = [
    ...(where.env ? ["--env", where.env] : []),
    ...(where.persistTo && values["persist-to"] ? ["--persist-to", values["persist-to"]] : []),
  ];
  return `npm run db:migrate:${where.remote ? "remote" : "local"}${options.length > 0 ? ` -- ${options.join(" ")}` : ""}`;
}

async function run(): Promise<void> {
  console.log(`== migrations on ${to}`);
  wrangler(["d1", "migrations", "apply", to, ...targetFlags(target)], { quiet: true });

  let executor: ShardExecutor;
  if (target.remote) {
    executor = wranglerExecutor(target);
  } else {
    // The local databases in this process (scripts/shards/wrangler-d1.ts): the same state `wrangler dev` uses.
    const databases = await localDatabases(target);
    // wrangler dev may be writing the same SQLite files: a statement that meets its lock is run again.
    executor = retryingOnLocalLock(d1Executor((name) => databases[name]));
  }

  const workerUrl = values["no-worker"]
    ? undefined
    : (values["worker-url"] ?? (target.remote ? undefined : LOCAL_WORKER));
  const config = wranglerTomlStore(target, {
    propagationMs: seconds(values["propagation-seconds"], 30),
    worker: workerUrl === undefined ? undefined : { url: workerUrl },
  });

  try {
    await config.checkWorker();
    const report = await moveBuckets({
      buckets,
      from,
      to,
      executor,
      config,
      settleMs: seconds(values["settle-seconds"], target.remote ? 30 : 0),
      log: (line) => console.log(`== ${line}`),
    });
    console.log(JSON.stringify(report, null, 2));
  } finally {
    await closeLocalDatabases();
  }
}
