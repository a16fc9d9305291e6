// Moves buckets of users between D1 databases while the service runs (README, "Sharding").
//
//   npm run shards:move -- --env shards --buckets 512-767 --from DB_1 --to DB_2            local (wrangler dev's state)
//   npm run shards:move -- --env NAME --buckets 512-767 --from DB_1 --to DB_2 --remote     Cloudflare
//
// Options: --config FILE (default wrangler.toml), --persist-to DIR (local state as `wrangler dev --persist-to`),
// --settle-seconds N (wait after the switch, still frozen; default 0 locally, 30 remotely),
// --propagation-seconds N (remote: wait after each deploy of the settings; default 30),
// --worker-url URL (the running worker: each settings change is waited for until it reports them at
// /status/shard-config; default http://127.0.0.1:8787 locally, none remotely), --no-worker (local: no worker
// runs on this configuration, nothing to wait for).
// The target database gets the migrations first. The steps are in scripts/shards/move.ts.
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { getPlatformProxy } from "wrangler";
import { parseBucketRange } from "../src/shards";
import { wranglerTomlStore } from "./shards/config-store";
import { d1Executor, moveBuckets, retryingOnLocalLock, type ShardExecutor } from "./shards/move";
import { DEFAULT_CONFIG, type Target, targetFlags, wrangler } from "./shards/wrangler";
import { wranglerExecutor } from "./shards/wrangler-executor";

const { values } = parseArgs({
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
  },
});
if (!values.buckets || !values.from || !values.to) {
  console.error(
    "usage: npm run shards:move -- --buckets FIRST-LAST --from BINDING --to BINDING [--env NAME] [--remote]",
  );
  process.exit(2);
}

const target: Target = {
  config: resolve(values.config),
  env: values.env,
  remote: values.remote,
  persistTo: values["persist-to"] && resolve(values["persist-to"]),
};
const buckets = parseBucketRange(values.buckets, "--buckets");
/** Where `wrangler dev` (npm run dev:shards) serves by default. */
const LOCAL_WORKER = "http://127.0.0.1:8787";
const seconds = (text: string | undefined, fallback: number) => (text === undefined ? fallback : Number(text)) * 1000;

console.log(`== migrations on ${values.to}`);
wrangler(["d1", "migrations", "apply", values.to, ...targetFlags(target)], { quiet: true });

let executor: ShardExecutor;
let dispose = async () => {};
if (target.remote) {
  executor = wranglerExecutor(target);
} else {
  // The local databases through wrangler's platform proxy: the same state `wrangler dev` uses.
  const persistRoot = target.persistTo ?? join(dirname(target.config), ".wrangler", "state");
  const proxy = await getPlatformProxy<Record<string, D1Database>>({
    configPath: target.config,
    environment: target.env,
    persist: { path: join(persistRoot, "v3") },
  });
  // wrangler dev may be writing the same SQLite files: a statement that meets its lock is run again.
  executor = retryingOnLocalLock(d1Executor((name) => proxy.env[name]));
  dispose = () => proxy.dispose();
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
    from: values.from,
    to: values.to,
    executor,
    config,
    settleMs: seconds(values["settle-seconds"], target.remote ? 30 : 0),
    log: (line) => console.log(`== ${line}`),
  });
  console.log(JSON.stringify(report, null, 2));
} finally {
  await dispose();
}
