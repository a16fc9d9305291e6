// Serving for the bench: one Miniflare instance (one workerd process) holding the bench workers, each
// reachable on its own direct socket on 127.0.0.1, so nothing but workerd's HTTP server stands in
// front of the code: no Miniflare entry worker (which costs more than the ceiling worker itself),
// no request logging through Node, no dev registry.
//   app      the plain minified build of src/index.ts (the load runs)
//   probe    the instrumented build (bench/instrumented-worker.ts; the row probes)
//   ceiling  the bare Hono worker (bench/ceiling-worker.ts)
//   floor    the bare Hono worker plus one rate-limit call and one `SELECT 1` on D1 per request
//            (bench/d1-floor-worker.ts)
//   isolate  the app with D1 and the rate limiters answered in the isolate (bench/isolate-worker.ts)
//   isolate-console  the same bundle keeping local workerd's console (its cost is reported apart)
// All get the bindings wrangler.toml declares (as `wrangler dev` would; those of the wrangler
// environment `env` when one is given) plus AUTH_JWT_SECRET, and share the D1 databases, persisted
// under the run's temporary directory. Three departures from
// `wrangler dev`, each so that the load measures the worker's own code path:
//   - static assets are left out: the measured routes (/v1, /ext) always run the worker first, and an
//     assets router would stand in front of every request;
//   - rate-limit bindings stay (their calls cost what they cost) but with a limit no run can reach,
//     or the load of one user would be answered 429 after the configured budget;
//   - the workers' log lines are counted, not printed: printing them through Node would load the
//     harness process that also drives autocannon.
import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { convertV4MiniflareOptions, Miniflare, NoOpLog } from "miniflare";
import { unstable_getMiniflareWorkerOptions, unstable_splitSqlQuery } from "wrangler";

const LOOPBACK = "127.0.0.1";

/**
 * @param {{ root: string, stateDir: string, secret: string, env?: string, bundles: Record<string, string>,
 *   bindings?: Record<string, Record<string, string>>, inspector?: boolean }} options `bindings`: extra vars of some
 *   workers, by name; `inspector`: workerd's inspector on a free port (`--profile`), its URL returned
 */
export async function startServer({ root, stateDir, secret, env, bundles, bindings = {}, inspector = false }) {
  // modulesRules only matter to wrangler's own bundling (and cannot be converted to Miniflare 5's options).
  const {
    modulesRules: _rules,
    assets: _assets,
    ...workerOptions
  } = unstable_getMiniflareWorkerOptions(join(root, "wrangler.toml"), env).workerOptions;
  const ratelimits = Object.fromEntries(
    Object.entries(workerOptions.ratelimits ?? {}).map(([name, config]) => [
      name,
      { ...config, simple: { ...config.simple, limit: 1_000_000_000 } },
    ]),
  );
  const logs = { lines: 0, byLevel: {}, lastErrors: [] };
  const common = {
    ...workerOptions,
    ratelimits,
    rootPath: root,
    // The account pages and the Login Flow's grant page answer only where sign-in is configured: an issuer that is
    // never asked (the bench seeds the listener's session as a sign-in stores it; nobody signs in).
    bindings: {
      ...workerOptions.bindings,
      AUTH_JWT_SECRET: secret,
      OIDC_ISSUER: "https://issuer.bench.invalid",
      OIDC_CLIENT_ID: "bench",
    },
    modules: true,
  };
  const worker = (name, scriptPath) => ({
    ...common,
    bindings: { ...common.bindings, ...bindings[name] },
    name,
    scriptPath,
    modulesRoot: dirname(scriptPath),
    unsafeDirectSockets: [{ host: LOOPBACK, port: 0 }],
  });
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      host: LOOPBACK,
      port: 0,
      logRequests: false,
      enableDevRegistry: false,
      telemetry: { enabled: false },
      log: new NoOpLog(),
      handleStructuredLogs: ({ level, message }) => {
        logs.lines++;
        logs.byLevel[level] = (logs.byLevel[level] ?? 0) + 1;
        if (level === "error" && logs.lastErrors.length < 5) logs.lastErrors.push(message.slice(0, 500));
      },
      resourcePersistencePath: stateDir,
      ...(inspector ? { inspectorPort: 0 } : {}),
      workers: Object.entries(bundles).map(([name, scriptPath]) => worker(name, scriptPath)),
    }),
  );
  try {
    await mf.ready;
    const urls = {};
    for (const name of Object.keys(bundles)) urls[name] = await mf.unsafeGetDirectURL(name);
    // Every D1 binding (one, or one per shard), by binding name; the first is the app's DB.
    const databases = {};
    for (const binding of Object.keys(workerOptions.d1Databases ?? {})) {
      databases[binding] = await mf.getD1Database(binding, "app");
    }
    const inspectorUrl = inspector ? await mf.getInspectorURL() : undefined;
    return { mf, urls, databases, logs, workerdPid: findChild("workerd"), inspectorUrl };
  } catch (err) {
    await mf.dispose().catch(() => {});
    throw err;
  }
}

/** The pid of this process's child named `name` (Miniflare spawns workerd directly), or undefined. */
function findChild(name) {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === process.pid && comm === name) return Number(entry);
    } catch {
      // the process went away while we looked
    }
  }
  return undefined;
}

/** Applies drizzle/*.sql in name order, split exactly as `wrangler d1 migrations apply` splits them. */
export async function applyMigrations(db, migrationsDir) {
  const files = readdirSync(migrationsDir)
    .filter((file) => file.endsWith(".sql"))
    .sort();
  for (const file of files) {
    const statements = unstable_splitSqlQuery(readFileSync(join(migrationsDir, file), "utf8"));
    await db.batch(statements.map((statement) => db.prepare(statement)));
  }
  return files.map((file) => basename(file));
}
