// `npm run bench`: builds the worker, serves it in workerd (Miniflare), seeds D1, measures each
// endpoint against a bare Hono worker (the ceiling) in the same process and the same way, probes
// D1 rows read/written per request, and writes bench/results.json and bench/RESULTS.md. A second
// reference, the "D1 floor" (the ceiling plus one trivial D1 call), shows what the local D1
// simulator alone costs.
// Exit code: 0 when the harness ran (whatever the targets say), 1 when the harness itself broke.
// Knobs (environment): BENCH_SECONDS (2) per sample, BENCH_ROUNDS (4) samples per endpoint,
// BENCH_WARMUP_SECONDS (1), BENCH_CONNECTIONS (10), BENCH_KEEP_TMP=1 keeps the temporary directory.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { analyseBundle, buildWorker } from "./lib/build.mjs";
import { countRows, seed } from "./lib/data.mjs";
import { combine, runSample } from "./lib/load.mjs";
import { machine, renderMarkdown, summarise } from "./lib/report.mjs";
import {
  allUsers,
  BULK_SIZES,
  endpoints,
  PAGE_SIZE,
  SCALING_PAGES,
  SCALING_SIZES,
  scalingEndpoint,
  tokensFor,
  users,
} from "./lib/scenario.mjs";
import { applyMigrations, startServer } from "./lib/server.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BENCH_DIR = fileURLToPath(new URL(".", import.meta.url));

const numberFrom = (name, fallback) => {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
};
const settings = {
  seconds: numberFrom("BENCH_SECONDS", 2),
  rounds: Math.round(numberFrom("BENCH_ROUNDS", 4)),
  warmupSeconds: numberFrom("BENCH_WARMUP_SECONDS", 1),
  connections: Math.round(numberFrom("BENCH_CONNECTIONS", 10)),
  scalingSeconds: numberFrom("BENCH_SCALING_SECONDS", 2),
  probes: 5,
};

const log = (message) => console.log(message);
const fmt = (value, digits = 1) => (value === null || value === undefined ? "-" : value.toFixed(digits));

let server;
let workDir;
let cleaning;

/** Stops workerd (through Miniflare, else by its pid) and removes the temporary directory; idempotent. */
function cleanup() {
  cleaning ??= (async () => {
    if (server) {
      const { mf, workerdPid } = server;
      server = undefined;
      try {
        await mf.dispose();
      } catch (err) {
        console.error(
          `Miniflare did not stop cleanly (${err.message}); killing workerd ${workerdPid ?? "(pid unknown)"}`,
        );
        if (workerdPid !== undefined) {
          try {
            process.kill(workerdPid, "SIGKILL");
          } catch {
            // already gone
          }
        }
      }
    }
    if (workDir && process.env.BENCH_KEEP_TMP !== "1") rmSync(workDir, { recursive: true, force: true });
  })();
  return cleaning;
}

// Miniflare's own signal handlers stop workerd and exit at once, before any asynchronous cleanup
// can run: whatever must happen on every way out is done synchronously here.
process.on("exit", () => {
  if (server?.workerdPid !== undefined) {
    try {
      process.kill(server.workerdPid, "SIGKILL");
    } catch {
      // already stopped
    }
  }
  if (workDir && process.env.BENCH_KEEP_TMP !== "1") rmSync(workDir, { recursive: true, force: true });
});
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
  ["SIGHUP", 129],
]) {
  process.on(signal, () => {
    console.error(`\n${signal}: stopping the bench servers`);
    cleanup().finally(() => process.exit(code));
  });
}

/** Sequential requests through the instrumented worker: status check and D1 rows per request. */
async function probe(base, endpoint, times) {
  const reads = [];
  const writes = [];
  const calls = [];
  for (let i = 0; i < times; i++) {
    const { method, path, headers, body } = endpoint.next();
    const response = await fetch(new URL(path, base), { method, headers, body });
    const text = await response.text();
    if (!endpoint.expected.includes(response.status)) {
      throw new Error(
        `probe ${endpoint.name}: ${method} ${path} answered ${response.status}, expected ${endpoint.expected}: ${text.slice(0, 500)}`,
      );
    }
    if (endpoint.adds !== undefined) {
      const summary = JSON.parse(text).meta;
      if (summary?.succeeded !== endpoint.adds || summary?.failed !== 0) {
        throw new Error(
          `probe ${endpoint.name}: expected ${endpoint.adds} successful adds, got ${JSON.stringify(summary)}`,
        );
      }
    }
    const header = (name) => {
      const value = response.headers.get(name);
      if (value === null) throw new Error(`probe ${endpoint.name}: the instrumented worker sent no ${name}`);
      return Number(value);
    };
    reads.push(header("x-bench-rows-read"));
    writes.push(header("x-bench-rows-written"));
    calls.push(header("x-bench-d1-calls"));
  }
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  return {
    rowsRead: median(reads),
    rowsWritten: median(writes),
    d1Calls: median(calls),
    spread: { read: [Math.min(...reads), Math.max(...reads)], written: [Math.min(...writes), Math.max(...writes)] },
  };
}

async function main() {
  const started = new Date();
  const loadAverageBefore = machine().loadAverage;
  workDir = mkdtempSync(join(tmpdir(), "subscriptions-bench-"));
  log(`bench: temporary directory ${workDir}`);

  // 1. Builds: the app exactly as `npm run build` makes it, the instrumented app, the references.
  log("bench: building with wrangler (deploy --dry-run --minify) ...");
  const [appBuild, probeBuild, ceilingBuild, floorBuild] = await Promise.all([
    buildWorker({ root: ROOT, outdir: join(workDir, "app") }),
    buildWorker({ root: ROOT, outdir: join(workDir, "probe"), entry: "bench/instrumented-worker.ts" }),
    buildWorker({ root: ROOT, outdir: join(workDir, "ceiling"), entry: "bench/ceiling-worker.ts" }),
    buildWorker({ root: ROOT, outdir: join(workDir, "floor"), entry: "bench/d1-floor-worker.ts" }),
  ]);
  const bundle = analyseBundle(appBuild);
  log(`bench: app bundle ${fmt(bundle.bytes / 1024, 2)} KiB minified, ${fmt(bundle.gzip / 1024, 2)} KiB gzip`);

  // 2. One workerd for all four workers, each on its own loopback socket.
  const secret = randomBytes(32).toString("hex");
  server = await startServer({
    root: ROOT,
    stateDir: join(workDir, "state"),
    secret,
    bundles: { app: appBuild.script, probe: probeBuild.script, ceiling: ceilingBuild.script, floor: floorBuild.script },
  });
  const { urls, db, workerdPid, logs } = server;
  const sockets = Object.entries(urls).map(([name, url]) => `${name} ${url.host}`);
  log(`bench: workerd ${workerdPid ?? "(pid unknown)"}: ${sockets.join(", ")}`);

  // 3. Schema and data.
  const migrations = await applyMigrations(db, join(ROOT, "drizzle"));
  // Enough subscriptions for the DELETE runs to remove a different one per request at up to 10 000/s.
  const deletePool = Math.ceil(10000 * (settings.rounds * settings.seconds + settings.warmupSeconds + 1));
  const u = users(deletePool);
  const seeded = await seed(db, allUsers(u));
  for (const user of [u.list, ...Object.values(u.scaling)]) {
    const rows = await countRows(db, user.id);
    if (rows.active !== user.active || rows.tombstones !== user.tombstones) {
      throw new Error(`seed of ${user.id} went wrong: ${JSON.stringify(rows)}`);
    }
  }
  log(`bench: migrations ${migrations.join(", ")}; seeded ${seeded} rows (incl. trigger writes)`);
  const tokens = await tokensFor(allUsers(u), secret);

  // 4. Rows per request: sequential probes through the instrumented worker (not under load).
  const probeEndpoints = endpoints(u, u.probe, tokens);
  const rows = {};
  for (const endpoint of probeEndpoints) rows[endpoint.name] = await probe(urls.probe, endpoint, settings.probes);
  const scalingRows = {};
  for (const size of SCALING_SIZES) {
    for (const page of SCALING_PAGES) {
      scalingRows[`${size}:${page}`] = await probe(urls.probe, scalingEndpoint(u, tokens, size, page), settings.probes);
    }
  }
  log(`bench: row probes done (list page 1: ${rows.list.rowsRead} rows read)`);

  // 5. Load. Warm-up of every target, then rounds that interleave ceiling samples with the endpoints,
  //    so that a drift of the machine (other processes) spreads over all figures alike.
  const loadEndpoints = endpoints(u, u.load, tokens);
  const reference = (name) => ({
    name,
    expected: [200],
    dynamic: false,
    next: () => ({ method: "GET", path: "/", headers: {} }),
  });
  const targets = {
    ceiling: { base: urls.ceiling, endpoint: reference("ceiling") },
    "d1-floor": { base: urls.floor, endpoint: reference("d1-floor") },
    ...Object.fromEntries(loadEndpoints.map((endpoint) => [endpoint.name, { base: urls.app, endpoint }])),
  };
  const sample = ({ base, endpoint }, seconds) =>
    runSample({ base, endpoint, seconds, connections: settings.connections, workerdPid });

  log(`bench: warm-up (${settings.warmupSeconds} s each) ...`);
  for (const target of Object.values(targets)) await sample(target, settings.warmupSeconds);

  const schedule = [
    "ceiling",
    "d1-floor",
    "list",
    "get-one",
    "ceiling",
    "post-existing",
    "post-new",
    "delete",
    "ceiling",
    ...BULK_SIZES.map((n) => `bulk-${n}`),
  ];
  const samples = Object.fromEntries(Object.keys(targets).map((name) => [name, []]));
  const ceilingTimeline = [];
  for (let round = 1; round <= settings.rounds; round++) {
    const names = round === settings.rounds ? [...schedule, "ceiling"] : schedule;
    for (const name of names) {
      const result = await sample(targets[name], settings.seconds);
      samples[name].push(result);
      const rps = result.responses / result.seconds;
      if (name === "ceiling") ceilingTimeline.push(rps);
      const errors = result.errors > 0 ? `  errors ${result.errors} ${JSON.stringify(result.statuses)}` : "";
      log(`  round ${round}/${settings.rounds}  ${name.padEnd(14)} ${fmt(rps, 0).padStart(6)} req/s${errors}`);
    }
  }

  log(`bench: list scaling (${settings.scalingSeconds} s each) ...`);
  const scaling = {};
  for (const size of SCALING_SIZES) {
    for (const page of SCALING_PAGES) {
      const target = { base: urls.app, endpoint: scalingEndpoint(u, tokens, size, page) };
      await sample(target, Math.min(settings.warmupSeconds, 0.5));
      scaling[`${size}:${page}`] = combine([await sample(target, settings.scalingSeconds)]);
    }
  }

  // 6. Results.
  const figures = Object.fromEntries(Object.entries(samples).map(([name, list]) => [name, combine(list)]));
  const summary = summarise({ figures, rows, scaling, scalingRows, bundle, pageSize: PAGE_SIZE });
  writeFileSync(join(BENCH_DIR, "results.json"), `${JSON.stringify(summary.results, null, 2)}\n`);
  writeFileSync(
    join(BENCH_DIR, "RESULTS.md"),
    renderMarkdown({
      summary,
      figures,
      rows,
      scaling,
      scalingRows,
      bundle,
      ceilingTimeline,
      settings,
      started,
      finished: new Date(),
      loadAverageBefore,
      deletePool,
      logs: server.logs,
    }),
  );

  log("");
  log(summary.table);
  log("");
  for (const [name, target] of Object.entries(summary.results.targets)) {
    log(`${target.pass ? "PASS" : "MISS"}  ${name}: ${target.value} (${summary.directions[name]} ${target.limit})`);
  }
  if (logs.byLevel.error)
    log(`bench: the workers logged ${logs.byLevel.error} error lines, e.g. ${logs.lastErrors[0]}`);
  log(`\nbench: wrote bench/results.json and bench/RESULTS.md in ${fmt((Date.now() - started.getTime()) / 1000, 0)} s`);
}

let exitCode = 0;
try {
  await main();
} catch (err) {
  console.error(`bench: the harness failed: ${err.stack ?? err}`);
  exitCode = 1;
} finally {
  await cleanup();
}
process.exit(exitCode);
