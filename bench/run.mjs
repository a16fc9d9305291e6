// `npm run bench`: builds the worker, serves it in workerd (Miniflare), seeds D1, measures each
// endpoint against a bare Hono worker (the ceiling) and a D1 floor (the ceiling plus the binding calls
// every app request makes) in the same process and the same way, measures the app's own isolate CPU
// with D1 and the rate limiters replayed in the isolate, probes D1 rows read/written per request, and
// writes bench/results.json and bench/RESULTS.md. `npm run bench -- --help` for the options.
// Exit code: 0 when the harness ran (whatever the targets say), 1 when the harness itself broke,
// 2 for a bad option.
import { parseOptions, USAGE } from "./lib/options.mjs";

let options;
try {
  options = parseOptions(process.argv.slice(2), process.env);
} catch (err) {
  console.error(`bench: ${err.message}\n\n${USAGE}`);
  process.exit(2);
}
if (options.help) {
  console.log(USAGE);
  process.exit(0);
}

const { randomBytes } = await import("node:crypto");
const { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } = await import("node:fs");
const { tmpdir } = await import("node:os");
const { join, resolve } = await import("node:path");
const { fileURLToPath } = await import("node:url");
const { analyseBundle, buildWorker } = await import("./lib/build.mjs");
const { countEpisodes, countRows, episodeFeedCount, seed } = await import("./lib/data.mjs");
const { combine, cpuMs, percentile, runSample } = await import("./lib/load.mjs");
const { heavyListener, heavyUsers } = await import("./lib/heavy-listener.mjs");
const { machine, renderMarkdown, summarise } = await import("./lib/report.mjs");
const scenario = await import("./lib/scenario.mjs");
const { applyMigrations, startServer } = await import("./lib/server.mjs");
const feeds = await import("./lib/feeds.mjs");
const { PEER_FIGURES, SQL_RUNS, sqlTimer } = await import("./lib/sql-time.mjs");

const {
  BULK_SIZES,
  EPISODE_NAMES,
  FORMAT_FLOOR_NAMES,
  GPODDER_NAMES,
  SCALING_SIZES,
  STATEMENT_FLOOR_NAMES,
  pastEndPage,
} = scenario;
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BENCH_DIR = fileURLToPath(new URL(".", import.meta.url));
const RECORD_HEADER = "X-Bench-Record";
const SCENARIO_HEADER = "X-Bench-Scenario";
const FORMAT_FLOOR_HEADER = "X-Bench-Format-Floor";
const D1_DELAY_HEADER = "X-Bench-D1-Delay";
const HOLD_HEADER = "X-Bench-Hold-D1";
/** Runs of the heap measure per request (the median is reported). */
const HEAP_RUNS = 3;
/** The far edge: what every D1 call waits in the far-edge run (bench/README.md). */
const FAR_EDGE_DELAY_MS = 50;
/** The isolate scenarios whose targets are ratios to the ceiling: each sample is paired with the ceiling's just before. */
const CEILING_PAIRED = ["list", "get-one"];
/** The isolate scenarios that read a list page: their recordings count the subscriptions shown (`uses.shown`). */
const LIST_PAGES = ["list", "list-include-podcast"];
/** The recordings key of a scenario's warm-up calls (warmUpName in bench/recording.ts). */
const warmUpName = (scenario) => `warm-up:${scenario}`;
const { settings } = options;

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
    if (workDir && !options.keepTmp) rmSync(workDir, { recursive: true, force: true });
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
  if (workDir && !options.keepTmp) rmSync(workDir, { recursive: true, force: true });
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

/** An optional endpoint that this build does not serve (yet): it answers one of these statuses. */
const ABSENT_STATUSES = [404, 405, 415];

class ProbeFailure extends Error {}

/** Sends one request; throws when its status is not the expected one. */
async function send(base, endpoint, extraHeaders = {}) {
  const { method, path, headers, body } = endpoint.next();
  const started = process.hrtime.bigint();
  const response = await fetch(new URL(path, base), { method, headers: { ...headers, ...extraHeaders }, body });
  const text = await response.text();
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  return { method, path, response, text, ms };
}

function checkStatus(endpoint, status, text, method, path) {
  if (endpoint.expected.includes(status)) return;
  const failure = new ProbeFailure(
    `probe ${endpoint.name}: ${method} ${path} answered ${status}, expected ${endpoint.expected}: ${text.slice(0, 500)}`,
  );
  failure.absent = endpoint.optional === true && ABSENT_STATUSES.includes(status);
  throw failure;
}

function checkSummary(endpoint, text) {
  if (endpoint.podcastsShown !== undefined) checkPodcasts(endpoint, text);
  if (endpoint.adds === undefined && endpoint.imports === undefined) return;
  const meta = JSON.parse(text).meta;
  if (endpoint.adds !== undefined && (meta?.succeeded !== endpoint.adds || meta?.failed !== 0)) {
    throw new Error(`probe ${endpoint.name}: expected ${endpoint.adds} successful adds, got ${JSON.stringify(meta)}`);
  }
  if (endpoint.imports !== undefined && meta?.imported !== endpoint.imports) {
    throw new Error(`probe ${endpoint.name}: expected ${endpoint.imports} imported feeds, got ${JSON.stringify(meta)}`);
  }
}

/** A page with its podcasts (`include=podcast`): one podcast per subscription shown, each of the expected status. */
function checkPodcasts(endpoint, text) {
  const { data, included } = JSON.parse(text);
  const statuses = (included ?? []).map((podcast) => podcast.attributes?.status);
  if (data.length === 0 || statuses.length !== data.length || statuses.some((s) => s !== endpoint.podcastsShown)) {
    throw new Error(
      `${endpoint.name}: expected a ${endpoint.podcastsShown} podcast per subscription shown (${data.length}), got ${JSON.stringify(statuses)}`,
    );
  }
}

/** The resources a JSON:API page shows (its `data`), counted for the rows-per-row targets. */
const shownOf = (text) => JSON.parse(text).data.length;

/** Sends one request that must answer `status`; returns the response's text. */
async function sendExpecting(base, request, status) {
  const { response, text } = await send(base, { next: () => request });
  if (response.status !== status) {
    throw new Error(
      `${request.method} ${request.path} answered ${response.status}, expected ${status}: ${text.slice(0, 300)}`,
    );
  }
  return text;
}

/**
 * The gpodder users' app passwords, minted through the API with their bearer tokens (two for the users of
 * the isolate-only scenarios), then what an app does first through the app worker: sign in, create its
 * device, and (the uploaders) subscribe to the podcasts their actions name.
 */
async function prepareGpodder(base, u, tokens) {
  const { all, isolate, podcasts } = scenario.gpodderUsers(u, { withWriters: !options.isolateOnly });
  const mint = async (user, label) => {
    const text = await sendExpecting(base, scenario.appPasswordRequest(tokens, user, label), 201);
    const { username, password } = JSON.parse(text).data.attributes;
    return { username, password };
  };
  for (const user of all) user.gpodder = await mint(user, "bench");
  for (const user of isolate) user.gpodderIsolate = await mint(user, "bench isolate-only");
  for (const user of all) {
    for (const request of scenario.gpodderWarmUp(user.gpodder)) await sendExpecting(base, request, 200);
  }
  for (const user of podcasts) await sendExpecting(base, scenario.gpodderPodcastsRequest(user.gpodder, user), 200);
  return all.length;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Sequential requests through the instrumented worker: status check, D1 rows and calls per request. */
async function probe(base, endpoint, times, workerdPid) {
  const reads = [];
  const writes = [];
  const calls = [];
  const sequential = [];
  const latencies = [];
  const cpuBefore = cpuMs(workerdPid);
  for (let i = 0; i < times; i++) {
    const { method, path, response, text, ms } = await send(base, endpoint);
    checkStatus(endpoint, response.status, text, method, path);
    checkSummary(endpoint, text);
    const header = (name) => {
      const value = response.headers.get(name);
      if (value === null) throw new Error(`probe ${endpoint.name}: the instrumented worker sent no ${name}`);
      return Number(value);
    };
    reads.push(header("x-bench-rows-read"));
    writes.push(header("x-bench-rows-written"));
    calls.push(header("x-bench-d1-calls"));
    sequential.push(header("x-bench-d1-sequential"));
    latencies.push(ms);
  }
  const cpuAfter = cpuMs(workerdPid);
  return {
    rowsRead: median(reads),
    rowsWritten: median(writes),
    d1Calls: median(calls),
    d1Sequential: median(sequential),
    p50: percentile(latencies, 50),
    cpuUsPerRequest: cpuBefore !== undefined && cpuAfter !== undefined ? ((cpuAfter - cpuBefore) * 1000) / times : null,
    spread: { read: [Math.min(...reads), Math.max(...reads)], written: [Math.min(...writes), Math.max(...writes)] },
  };
}

/** The answer time below which the ceiling shows workerd idle again (it answers in about 1 ms when nothing waits). */
const DRAINED_MS = 50;
/** How long to wait for a backlog to drain before measuring on regardless. */
const DRAIN_LIMIT_MS = 180_000;

/**
 * Waits until workerd has worked off what a load sample left under way: until the ceiling answers within DRAINED_MS
 * (it shares the process with the app and the local D1). Logs a wait longer than a second.
 */
async function drained(ceiling, after) {
  const started = Date.now();
  for (;;) {
    const asked = Date.now();
    await fetch(ceiling).then((response) => response.arrayBuffer());
    if (Date.now() - asked <= DRAINED_MS) break;
    if (Date.now() - started > DRAIN_LIMIT_MS) {
      log(`bench: workerd was still busy ${DRAIN_LIMIT_MS / 1000} s after the ${after} sample; measuring on`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const waited = Date.now() - started;
  if (waited > 1000)
    log(`  (waited ${(waited / 1000).toFixed(1)} s after ${after} for workerd to work off its backlog)`);
}

/** RFC 3339 times in a response body, replaced by one placeholder (see the replay check). */
function maskTimes(body) {
  return body.replace(/"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"/g, '"<time>"');
}

/**
 * One request through the instrumented worker, recorded: its envelope (status, headers, body, tape, D1 use). With
 * `sql` (a sqlTimer of bench/lib/sql-time.mjs), the D1 files are snapshotted just before it and its statements timed
 * in SQLite on the snapshot afterwards (`envelope.sql`).
 */
async function recordRequest(base, request, sql) {
  sql?.before();
  const text = await sendExpecting(base, { ...request, headers: { ...request.headers, [RECORD_HEADER]: "1" } }, 200);
  const envelope = JSON.parse(text);
  if (sql) envelope.sql = await sql.after(envelope.calls);
  return envelope;
}

/**
 * Records each isolate-only scenario once against the real local D1 (through the instrumented
 * worker), then the heavy listener's requests (bench/lib/heavy-listener.mjs), loads the tapes into the
 * isolate-only worker, and checks that the replay answers exactly what the real run answered (status and
 * body). Returns the scenarios that this build serves, their tapes and what each asked of D1.
 */
async function recordIsolateScenarios(urls, isolateEndpoints, heavy, databases, sql) {
  const recordings = {};
  const answers = {};
  const uses = {};
  const served = [];
  const absent = [];
  // Warm-up calls by credential: recorded the first time only (the worker verifies a credential once).
  const warmUps = new Map();
  for (const endpoint of isolateEndpoints) {
    if (endpoint.warmUp) {
      const requests = endpoint.warmUp();
      const key = requests[0].headers.authorization;
      if (!warmUps.has(key)) {
        const calls = [];
        for (const request of requests) {
          const envelope = await recordRequest(urls.probe, request);
          if (envelope.status !== 200)
            throw new Error(
              `recording the warm-up of ${endpoint.name}: ${envelope.status} ${envelope.body.slice(0, 300)}`,
            );
          calls.push(...envelope.calls);
        }
        warmUps.set(key, calls);
      }
      recordings[warmUpName(endpoint.name)] = warmUps.get(key);
    }
    sql.before();
    const { method, path, response, text } = await send(urls.probe, endpoint, { [RECORD_HEADER]: "1" });
    if (response.status !== 200)
      throw new Error(`recording ${endpoint.name}: ${response.status} ${text.slice(0, 300)}`);
    const envelope = JSON.parse(text);
    envelope.sql = await sql.after(envelope.calls);
    try {
      checkStatus(endpoint, envelope.status, envelope.body, method, path);
    } catch (err) {
      if (err.absent) {
        absent.push(endpoint.name);
        continue;
      }
      throw err;
    }
    checkSummary(endpoint, envelope.body);
    recordings[endpoint.name] = envelope.calls;
    answers[endpoint.name] = envelope;
    uses[endpoint.name] = {
      ...envelope.use,
      sql: envelope.sql,
      responseBytes: Buffer.byteLength(envelope.body),
      ...(LIST_PAGES.includes(endpoint.name) ? { shown: shownOf(envelope.body) } : {}),
    };
    served.push(endpoint);
  }
  if (heavy) {
    // What the account page shows (its rows read are held to that plus a constant): the stats row, the app
    // passwords and the devices, counted where the instrumented worker reads them.
    const shownRows = async (userId) => {
      const db = Object.values(databases)[0];
      const row = await db
        .prepare(
          "SELECT 1 + (SELECT count(*) FROM app_passwords WHERE user_id = ?1) + (SELECT count(*) FROM devices WHERE user_id = ?1) AS shown",
        )
        .bind(userId)
        .first();
      return row.shown;
    };
    const recorded = await heavy.record(
      (request, timed) => recordRequest(urls.probe, request, timed?.sql ? sql : undefined),
      sendExpecting,
      urls.app,
      shownRows,
    );
    for (const row of heavy.rows.filter((r) => !r.existing)) {
      const envelope = recorded.envelopes[row.name];
      const endpoint = {
        name: row.name,
        expected: row.expected,
        dynamic: false,
        next: () => row.recorded,
        mask: row.mask,
        // The rare uploads of up to 16 MiB, one at a time (ten at once would hold ten times their memory).
        ...(row.exempt ? { connections: 1 } : {}),
      };
      try {
        checkStatus(
          { ...endpoint, optional: row.optional },
          envelope.status,
          envelope.body,
          row.recorded.method,
          row.recorded.path,
        );
      } catch (err) {
        // A build that does not take the request yet (the 10 000-URL upload: 413 until the defects branch).
        if (err.absent || (row.optional && envelope.status === 413)) {
          absent.push(row.name);
          continue;
        }
        throw err;
      }
      if (recorded.warmUps[row.name]) recordings[warmUpName(row.name)] = recorded.warmUps[row.name];
      recordings[row.name] = envelope.calls;
      answers[row.name] = envelope;
      uses[row.name] = { ...envelope.use, sql: envelope.sql, responseBytes: Buffer.byteLength(envelope.body) };
      served.push(endpoint);
    }
  }
  for (const base of [urls.isolate, urls["isolate-console"], urls.baseline].filter(Boolean)) {
    const load = await fetch(new URL("/__bench/recordings", base), {
      method: "POST",
      body: JSON.stringify(recordings),
    });
    if (load.status !== 204) throw new Error(`loading the recordings answered ${load.status}: ${await load.text()}`);
    // The baseline (another commit) replays only the scenarios both builds have.
    const replayed = base === urls.baseline ? served.filter((endpoint) => !endpoint.name.startsWith("heavy:")) : served;
    // An upload naming feeds subscribed under other guids than their URLs' (heavy rows) is recorded once the
    // instrumented isolate knows their guids: this isolate learns them from one replay first (its guesses were
    // wrong, so it asked for a second batch the tape does not have: answered 503, not checked).
    for (const endpoint of replayed.filter((e) => heavy?.rows.find((row) => row.name === e.name)?.feedGuesses)) {
      await send(base, endpoint, { [SCENARIO_HEADER]: endpoint.name });
    }
    for (const endpoint of replayed) {
      const { response, text } = await send(base, endpoint, { [SCENARIO_HEADER]: endpoint.name });
      const recorded = answers[endpoint.name];
      // The workers listen on different ports: links built from the request's origin differ by it alone.
      // A write's time is the clock's when the request ran (the row holds the same), so times are masked.
      // A body with secrets made anew each time (a Login Flow's tokens) is compared without them.
      const masked = (body, origin) => (endpoint.mask ?? ((t) => t))(maskTimes(body.replaceAll(origin, "")));
      const same = masked(text, base.origin) === masked(recorded.body, urls.probe.origin);
      if (response.status !== recorded.status || !same) {
        const which = base === urls.baseline ? `baseline ${options.compare}` : "isolate";
        throw new Error(
          `${which} replay of ${endpoint.name} answered ${response.status} ${text.slice(0, 300)}; the real run answered ${recorded.status} ${recorded.body.slice(0, 300)}`,
        );
      }
    }
  }
  return {
    served,
    absent,
    recordings,
    uses,
    calls: Object.fromEntries(Object.entries(recordings).map(([n, c]) => [n, c.length])),
  };
}

/**
 * One request of the far-edge run: through the instrumented worker, every D1 call delayed by `delayMs`. Returns
 * the wall time, the response's text and cookie, and what the request asked of D1.
 */
async function farEdgeRequest(base, request, delayMs) {
  const { response, text, ms } = await send(base, { next: () => request }, { [D1_DELAY_HEADER]: String(delayMs) });
  if (response.status >= 500)
    throw new Error(`far edge: ${request.method} ${request.path} answered ${response.status}`);
  const header = (name) => Number(response.headers.get(name) ?? 0);
  return {
    ms,
    text,
    setCookie: response.headers.get("set-cookie"),
    use: {
      calls: header("x-bench-d1-calls"),
      queries: header("x-bench-d1-queries"),
      sequential: header("x-bench-d1-sequential"),
    },
  };
}

/**
 * The isolate-only worker around the app of git `ref`: the ref's tree is extracted into the temporary
 * directory, this tree's measuring instrument (bench/isolate-worker.ts, bench/recording.ts) is put in,
 * and wrangler builds it with this tree's node_modules.
 */
async function buildBaseline(ref) {
  const { execFileSync } = await import("node:child_process");
  const { copyFileSync, symlinkSync } = await import("node:fs");
  const tree = join(workDir, "baseline-tree");
  mkdirSync(tree);
  const archive = execFileSync("git", ["-C", ROOT, "archive", "--format=tar", ref], { maxBuffer: 1 << 30 });
  execFileSync("tar", ["-x", "-C", tree], { input: archive });
  mkdirSync(join(tree, "bench"), { recursive: true });
  for (const file of ["isolate-worker.ts", "recording.ts"])
    copyFileSync(join(BENCH_DIR, file), join(tree, "bench", file));
  symlinkSync(join(ROOT, "node_modules"), join(tree, "node_modules"));
  const commit = execFileSync("git", ["-C", ROOT, "rev-parse", "--short", ref], { encoding: "utf8" }).trim();
  log(`bench: baseline ${ref} (${commit}) extracted; building its isolate-only worker ...`);
  return buildWorker({
    root: tree,
    outdir: join(workDir, "baseline"),
    entry: "bench/isolate-worker.ts",
    env: options.env,
  });
}

/**
 * `--profile`: each named isolate scenario served under load for BENCH_PROFILE_SECONDS while V8's sampling
 * profiler runs in the isolate-only worker's isolate (workerd's inspector); the profile is written as
 * <name>.cpuprofile and its largest self times printed.
 */
async function profileScenarios(urls, served, inspectorUrl, load) {
  const { connectInspector } = await import("./lib/inspector.mjs");
  const { profileWhile, selfTimes } = await import("./lib/profile.mjs");
  const byName = new Map(served.map((endpoint) => [endpoint.name, endpoint]));
  const outDir = options.out ? resolve(options.out) : join(tmpdir(), "subscriptions-bench-profiles");
  mkdirSync(outDir, { recursive: true });
  const wake = () => fetch(urls.isolate).then((response) => response.text());
  const inspector = await connectInspector(Number(inspectorUrl.port), wake, "/core:user:isolate");
  try {
    for (const name of options.profile) {
      const endpoint = byName.get(name);
      if (!endpoint) throw new Error(`--profile ${name}: no such isolate scenario (${[...byName.keys()].join(", ")})`);
      await load(endpoint); // warm: the replay's first requests fill the caches and compile the code
      let responses = 0;
      const profile = await profileWhile(inspector, async () => {
        responses = (await load(endpoint)).responses;
      });
      const file = join(outDir, `${name.replaceAll(":", "_")}.cpuprofile`);
      writeFileSync(file, JSON.stringify(profile));
      log(`\nbench: ${name}: ${responses} requests profiled, ${file}`);
      for (const { name: fn, share } of selfTimes(profile).slice(0, 30)) {
        log(`  ${(100 * share).toFixed(1).padStart(5)} %  ${fn}`);
      }
    }
  } finally {
    inspector.close();
  }
}

/**
 * The isolate's heap a request holds while its D1 batch is under way (bench/README.md, "What an upload holds"): the
 * isolate-only worker replays it with its batch held (HOLD_HEADER) until released; meanwhile the inspector collects
 * garbage and reads the heap (V8's heap and the array buffers' backing stores), the idle isolate's, read just
 * before, subtracted. The median of HEAP_RUNS runs, in MiB.
 */
async function measureHeapHeld(urls, inspectorUrl, endpoints) {
  if (endpoints.length === 0 || !inspectorUrl) return {};
  const { connectInspector } = await import("./lib/inspector.mjs");
  const wake = () => fetch(new URL("/__bench/held", urls.isolate)).then((response) => response.text());
  const inspector = await connectInspector(Number(inspectorUrl.port), wake, "/core:user:isolate");
  const heldNow = async (method = "GET") => (await fetch(new URL("/__bench/held", urls.isolate), { method })).json();
  const usage = async () => {
    const { used } = await inspector.heapUsage();
    const raw = await inspector.send("Runtime.getHeapUsage");
    return used + (raw.backingStorageSize ?? 0);
  };
  const measured = {};
  try {
    for (const endpoint of endpoints) {
      const runs = [];
      let body = 0;
      for (let run = 0; run < HEAP_RUNS; run++) {
        const idle = await usage();
        const request = endpoint.next();
        body = Buffer.byteLength(request.body ?? "");
        const answered = fetch(new URL(request.path, urls.isolate), {
          method: request.method,
          headers: { ...request.headers, [SCENARIO_HEADER]: endpoint.name, [HOLD_HEADER]: "1" },
          body: request.body,
        }).then((response) => response.text());
        const deadline = Date.now() + 60_000;
        while ((await heldNow()) === null) {
          if (Date.now() > deadline) throw new Error(`${endpoint.name}: its batch was never held`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const during = await usage();
        await heldNow("POST");
        await answered;
        runs.push((during - idle) / 1024 ** 2);
      }
      measured[endpoint.name] = {
        body_mib: Math.round((body / 1024 ** 2) * 100) / 100,
        held_mib: Math.round(median(runs) * 10) / 10,
        runs_mib: runs.map((v) => Math.round(v * 10) / 10),
      };
    }
  } finally {
    inspector.close();
  }
  return measured;
}

function readPlainResults(dir) {
  try {
    return JSON.parse(readFileSync(join(dir, "results.json"), "utf8"));
  } catch {
    return undefined;
  }
}

/** Applies the migrations to, and seeds, every D1 database (each shard holds every bench user: see README). */
async function prepareData(databases, userList, checked) {
  let migrations;
  let seeded = 0;
  for (const db of Object.values(databases)) {
    migrations = await applyMigrations(db, join(ROOT, "drizzle"));
    seeded += await seed(db, userList);
    for (const user of checked) {
      const rows = await countRows(db, user.id);
      if (rows.active !== user.active + episodeFeedCount(user) || rows.tombstones !== (user.tombstones ?? 0)) {
        throw new Error(`seed of ${user.id} went wrong: ${JSON.stringify(rows)}`);
      }
      if ((user.episodes ?? 0) !== (await countEpisodes(db, user.id))) {
        throw new Error(`seed of ${user.id} went wrong: not ${user.episodes} episode states`);
      }
    }
  }
  return { migrations, seeded };
}

async function main() {
  const started = new Date();
  const loadAverageBefore = machine().loadAverage;
  workDir = mkdtempSync(join(tmpdir(), "subscriptions-bench-"));
  const skip = options.skip;
  log(`bench: temporary directory ${workDir}${options.env ? `; wrangler environment ${options.env}` : ""}`);

  // 1. Builds: the app exactly as `npm run build` makes it, the instrumented app, the isolate-only
  //    app, the references.
  log("bench: building with wrangler (deploy --dry-run --minify) ...");
  const entries = {
    app: undefined,
    probe: "bench/instrumented-worker.ts",
    isolate: "bench/isolate-worker.ts",
    ceiling: "bench/ceiling-worker.ts",
    ...(options.isolateOnly || options.feedsOnly
      ? {}
      : { floor: "bench/d1-floor-worker.ts", statements: "bench/statement-floor-worker.ts" }),
  };
  const builds = Object.fromEntries(
    await Promise.all(
      Object.entries(entries).map(async ([name, entry]) => [
        name,
        await buildWorker({
          root: ROOT,
          outdir: join(workDir, name),
          entry,
          env: options.env,
          // A profile names the app's own functions.
          minify: !(options.profile && name === "isolate"),
        }),
      ]),
    ),
  );
  if (options.compare) builds.baseline = await buildBaseline(options.compare);
  const bundle = analyseBundle(builds.app);
  log(`bench: app bundle ${fmt(bundle.bytes / 1024, 2)} KiB minified, ${fmt(bundle.gzip / 1024, 2)} KiB gzip`);

  // 2. One workerd for all the workers, each on its own loopback socket.
  const secret = randomBytes(32).toString("hex");
  server = await startServer({
    root: ROOT,
    stateDir: join(workDir, "state"),
    secret,
    env: options.env,
    bundles: {
      ...Object.fromEntries(Object.entries(builds).map(([name, build]) => [name, build.script])),
      // The isolate-only bundle again, keeping local workerd's console: what that costs, reported apart.
      "isolate-console": builds.isolate.script,
    },
    // The feed round fetches the bench's feed server on loopback (bench/lib/feeds.mjs): allowed in the workers that
    // record and replay it, as in the tests, never in a deployment.
    bindings: {
      "isolate-console": { BENCH_CONSOLE: "local" },
      probe: { FEED_FETCH_ALLOW_PRIVATE: "true" },
      isolate: { FEED_FETCH_ALLOW_PRIVATE: "true" },
    },
    // workerd's inspector: the profiles (--profile), and the heap an upload holds (measureHeapHeld).
    inspector: true,
  });
  const { urls, databases, workerdPid, logs } = server;
  const sockets = Object.entries(urls).map(([name, url]) => `${name} ${url.host}`);
  log(`bench: workerd ${workerdPid ?? "(pid unknown)"}: ${sockets.join(", ")}`);

  if (options.feedsOnly) return feedsOnly(urls, databases, secret, workerdPid, started);

  // 3. Schema and data.
  const loadSeconds = settings.warmupSeconds + settings.rounds * settings.seconds + 1;
  const u = scenario.users(loadSeconds);
  const withHeavy = !skip.has("heavy-listener");
  const heavyUserSet = heavyUsers();
  // An isolate-only run sends no load and no probes: their pools of writers are not seeded.
  const withFeeds = !skip.has("feeds") && !options.profile;
  const userList = [
    ...scenario.allUsers(u, { withWriters: !options.isolateOnly }),
    ...(withHeavy ? Object.values(heavyUserSet) : []),
    ...(withFeeds ? [FEED_USER] : []),
  ];
  const { migrations, seeded } = await prepareData(databases, userList, [
    u.list,
    ...Object.values(u.scaling),
    u.episodeFeed,
    ...(withHeavy ? [heavyUserSet.listener] : []),
  ]);
  log(
    `bench: ${Object.keys(databases).join(", ")}: migrations ${migrations.join(", ")}; seeded ${seeded} rows (incl. trigger writes)`,
  );
  const tokens = await scenario.tokensFor(userList, secret);
  const gpodderUsers = await prepareGpodder(urls.app, u, tokens);
  log(`bench: ${gpodderUsers} gpodder users signed in with app passwords minted through the API`);
  const heavy = withHeavy ? heavyListener({ users: heavyUserSet, tokens, startedAt: Date.now() }) : undefined;
  if (heavy) await heavy.prepare(sendExpecting, urls.app, Object.values(databases));

  // 4. Rows per request: sequential probes through the instrumented worker (not under load).
  const rows = {};
  const absent = new Set();
  const scalingRows = {};
  const syncRows = {};
  const episodeFeedRows = {};
  if (!options.isolateOnly) {
    for (const endpoint of scenario.endpoints(u, u.probe, tokens)) {
      if (skip.has(endpoint.name)) continue;
      // The steady state: the credentials and the device known to the instrumented worker's isolate.
      for (const request of endpoint.warmUp?.() ?? []) await sendExpecting(urls.probe, request, 200);
      try {
        rows[endpoint.name] = await probe(urls.probe, endpoint, settings.probes, workerdPid);
      } catch (err) {
        if (!err.absent) throw err;
        absent.add(endpoint.name);
        log(`bench: ${endpoint.name} is not served by this build (${err.message.slice(0, 160)})`);
      }
    }
    for (const size of SCALING_SIZES) {
      for (const page of [1, pastEndPage(size), 40]) {
        const endpoint = scenario.scalingEndpoint(u, tokens, size, page);
        scalingRows[`${size}:${page}`] = await probe(urls.probe, endpoint, settings.probes, workerdPid);
      }
    }
    if (!skip.has("sync")) {
      for (const since of [0, 5000]) {
        syncRows[since] = await probe(urls.probe, scenario.syncEndpoint(u, tokens, since), settings.probes, workerdPid);
      }
    }
    if (!skip.has("episode-feed")) {
      for (const since of [0, 25000]) {
        const endpoint = scenario.episodeFeedEndpoint(u, tokens, since);
        episodeFeedRows[since] = await probe(urls.probe, endpoint, settings.probes, workerdPid);
      }
    }
    log(`bench: row probes done (list page 1: ${rows.list?.rowsRead} rows read)`);
  }

  // 5. The isolate-only scenarios: recorded against the real D1, replayed in the isolate.
  const isolate = await recordIsolateScenarios(
    urls,
    scenario.isolateEndpoints(u, tokens).filter((endpoint) => !skip.has(endpoint.name)),
    heavy,
    databases,
    // Every recorded request's own statements, timed in SQLite (bench/lib/sql-time.mjs; README, "The SQL time").
    sqlTimer(join(workDir, "state"), join(workDir, "sql-snapshot")),
  );
  for (const name of isolate.absent) absent.add(name);
  // Kept with BENCH_KEEP_TMP=1: the tapes and their requests, to replay them elsewhere (a profiler).
  writeFileSync(
    join(workDir, "isolate-scenarios.json"),
    JSON.stringify({
      secret,
      recordings: isolate.recordings,
      requests: Object.fromEntries(isolate.served.map((endpoint) => [endpoint.name, endpoint.next()])),
    }),
  );
  log(
    `bench: isolate-only scenarios recorded and replayed identically: ${isolate.served.map((e) => `${e.name} (${isolate.calls[e.name]} D1 calls)`).join(", ")}`,
  );

  // The far edge: the heavy listener's full syncs from zero again, every D1 call FAR_EDGE_DELAY_MS later.
  let farEdge;
  if (heavy && !skip.has("far-edge") && !options.profile) {
    log(`bench: far edge: the full syncs from zero with ${FAR_EDGE_DELAY_MS} ms before every D1 call ...`);
    farEdge = {
      delayMs: FAR_EDGE_DELAY_MS,
      clients: await heavy.farEdge(
        (request, delayMs) => farEdgeRequest(urls.probe, request, delayMs),
        FAR_EDGE_DELAY_MS,
      ),
    };
    for (const [client, f] of Object.entries(farEdge.clients)) {
      log(`  far edge ${client}: ${f.requests} requests, ${f.sequential} sequential D1 round trips, ${f.ms} ms`);
    }
  }

  // The statement floor runs the read scenarios' own statements on the real D1.
  const statementScenarios = isolate.served.filter((endpoint) => STATEMENT_FLOOR_NAMES.includes(endpoint.name));
  if (urls.statements) {
    const load = await fetch(new URL("/__bench/statements", urls.statements), {
      method: "POST",
      body: JSON.stringify(Object.fromEntries(statementScenarios.map((e) => [e.name, isolate.recordings[e.name]]))),
    });
    if (load.status !== 204) throw new Error(`loading the statement floor answered ${load.status}`);
  }

  // 6. Load. Warm-up of every target, then rounds that interleave ceiling samples with the endpoints,
  //    so that a drift of the machine (other processes) spreads over all figures alike.
  const reference = (name) => ({
    name,
    expected: [200],
    dynamic: false,
    next: () => ({ method: "GET", path: "/", headers: {} }),
  });
  const statementFloor = (endpoint) => ({
    base: urls.statements,
    endpoint: {
      ...reference(`statement-floor:${endpoint.name}`),
      next: () => ({ method: "GET", path: "/", headers: { [SCENARIO_HEADER]: endpoint.name } }),
    },
  });
  const isolateTarget = (endpoint, base = urls.isolate, headers = {}) => ({
    base,
    seconds: settings.isolateSeconds,
    endpoint: {
      ...endpoint,
      next: () => {
        const request = endpoint.next();
        return { ...request, headers: { ...request.headers, [SCENARIO_HEADER]: endpoint.name, ...headers } };
      },
    },
  });
  const floorScenarios = isolate.served.filter((endpoint) => FORMAT_FLOOR_NAMES.includes(endpoint.name));
  const formatFloors = Object.fromEntries(
    floorScenarios.flatMap((endpoint) =>
      ["request", "answer"].map((floor) => [
        `format-floor-${floor}:${endpoint.name}`,
        isolateTarget(endpoint, urls.isolate, { [FORMAT_FLOOR_HEADER]: floor }),
      ]),
    ),
  );
  const loadEndpoints = options.isolateOnly
    ? []
    : scenario
        .endpoints(u, u.load, tokens)
        .filter((endpoint) => !skip.has(endpoint.name) && !absent.has(endpoint.name) && endpoint.imports === undefined);
  const targets = {
    ceiling: { base: urls.ceiling, endpoint: reference("ceiling") },
    ...(options.isolateOnly ? {} : { "d1-floor": { base: urls.floor, endpoint: reference("d1-floor") } }),
    ...(urls.statements
      ? Object.fromEntries(statementScenarios.map((e) => [`statement-floor:${e.name}`, statementFloor(e)]))
      : {}),
    ...Object.fromEntries(loadEndpoints.map((endpoint) => [endpoint.name, { base: urls.app, endpoint }])),
    ...Object.fromEntries(isolate.served.map((endpoint) => [`isolate:${endpoint.name}`, isolateTarget(endpoint)])),
    ...Object.fromEntries(
      isolate.served
        .filter((endpoint) => endpoint.name === "get-one")
        .map((endpoint) => ["isolate-console:get-one", isolateTarget(endpoint, urls["isolate-console"])]),
    ),
    ...(urls.baseline
      ? Object.fromEntries(
          isolate.served
            .filter((endpoint) => !endpoint.name.startsWith("heavy:"))
            .map((endpoint) => [`baseline:${endpoint.name}`, isolateTarget(endpoint, urls.baseline)]),
        )
      : {}),
    ...formatFloors,
  };
  const sample = ({ base, endpoint, seconds }, fallback) =>
    runSample({
      base,
      endpoint,
      seconds: seconds ?? fallback,
      connections: endpoint.connections ?? settings.connections,
      workerdPid,
    });

  if (options.profile) {
    await profileScenarios(urls, isolate.served, server.inspectorUrl, (endpoint) =>
      sample(isolateTarget(endpoint), settings.profileSeconds),
    );
    return;
  }

  log(`bench: warm-up (${settings.warmupSeconds} s each) ...`);
  for (const target of Object.values(targets)) await sample(target, settings.warmupSeconds);
  await drained(urls.ceiling, "the warm-up");

  const has = (name) => targets[name] !== undefined;
  // Each isolate scenario's samples sit beside what its targets divide it by: list and get-one right after a
  // ceiling sample, a scenario with format floors right before them; with --compare, the baseline right after.
  // Every target is then the median over the rounds of the ratio of a sample to its neighbour's (bench/README.md).
  const isolateBlock = isolate.served.flatMap((endpoint) => [
    ...(CEILING_PAIRED.includes(endpoint.name) ? ["ceiling"] : []),
    `isolate:${endpoint.name}`,
    ...(urls.baseline && !endpoint.name.startsWith("heavy:") ? [`baseline:${endpoint.name}`] : []),
    ...(endpoint.name === "get-one" ? ["isolate-console:get-one"] : []),
    ...(FORMAT_FLOOR_NAMES.includes(endpoint.name)
      ? [`format-floor-answer:${endpoint.name}`, `format-floor-request:${endpoint.name}`]
      : []),
  ]);
  const schedule = [
    "ceiling",
    "d1-floor",
    "list",
    "statement-floor:list",
    "get-one",
    "statement-floor:get-one",
    "ceiling",
    "post-existing",
    "post-new",
    "delete",
    "patch",
    "sync",
    "statement-floor:sync",
    "ceiling",
    ...BULK_SIZES.map((n) => `bulk-${n}`),
    "ceiling",
    ...EPISODE_NAMES,
    "ceiling",
    ...GPODDER_NAMES,
    "ceiling",
    ...isolateBlock,
    "ceiling",
  ].filter(has);
  const samples = Object.fromEntries(Object.keys(targets).map((name) => [name, []]));
  const ceilingTimeline = [];
  for (let round = 1; round <= settings.rounds; round++) {
    const names = round === settings.rounds ? [...schedule, "ceiling"] : schedule;
    let lastCeilingCpu = null;
    for (const name of names) {
      const result = await sample(targets[name], settings.seconds);
      // A load sample on the real D1 leaves requests under way in workerd (the 10 000-row gpodder GETs take seconds
      // each under load, and D1 answers one at a time): the next samples would measure that backlog, not their own
      // target (a run at load average 15 answered nothing for 15 samples, the ceiling's included).
      if (targets[name].base === urls.app) await drained(urls.ceiling, name);
      const rps = result.responses / result.seconds;
      const cpu = result.cpuMs !== undefined && result.responses > 0 ? (result.cpuMs * 1000) / result.responses : null;
      samples[name].push({ ...result, round, ceilingCpu: lastCeilingCpu });
      if (name === "ceiling") {
        ceilingTimeline.push(rps);
        lastCeilingCpu = cpu;
      }
      const errors = result.errors > 0 ? `  errors ${result.errors} ${JSON.stringify(result.statuses)}` : "";
      log(
        `  round ${round}/${settings.rounds}  ${name.padEnd(24)} ${fmt(rps, 0).padStart(6)} req/s ${fmt(cpu, 0).padStart(6)} µs CPU${errors}`,
      );
    }
  }

  // What the uploads hold in the isolate's heap while their batch goes out (after the load: the inspector's
  // collections would weigh on its samples).
  if (heavy) {
    heavy.heapHeld = await measureHeapHeld(
      urls,
      server.inspectorUrl,
      isolate.served.filter((endpoint) => heavy.rows.find((row) => row.name === endpoint.name)?.holdHeap),
    );
    for (const [name, h] of Object.entries(heavy.heapHeld)) {
      log(
        `bench: ${name} holds ${fmt(h.held_mib, 1)} MiB of heap while its batch goes out (body ${fmt(h.body_mib, 1)} MiB)`,
      );
    }
  }

  // The feed rounds (bench/lib/feeds.mjs), after the load: a recorded run pushes every seeded feed out of the round,
  // and its retention job purges and keys a slice of the seeded rows. Measured in rounds of their own.
  const feedRounds = withFeeds ? await recordFeeds(urls, databases, tokens, isolate.recordings) : undefined;
  const feedFigures = feedRounds
    ? await feeds.measureFeeds({
        urls,
        runs: feedRounds.runs,
        move: feedRounds.move,
        settings,
        workerdPid,
        ceilingTarget: targets.ceiling,
        log,
      })
    : undefined;

  // 7. Results.
  const figures = Object.fromEntries(Object.entries(samples).map(([name, list]) => [name, combine(list)]));
  const pools = Object.entries(scenario.pools(u))
    .filter(([, pool]) => pool.exhausted)
    .map(([name]) => name);
  if (pools.length > 0) log(`bench: WARNING the user pools of ${pools.join(", ")} ran dry (see README)`);
  const summary = summarise({
    figures,
    samples,
    heavy: heavy && { rows: heavy.rows, farEdge, heapHeld: heavy.heapHeld },
    rows,
    scalingRows,
    syncRows,
    episodeFeedRows,
    bundle,
    isolate,
    absent: [...absent],
    skipped: [...skip],
    env: options.env,
    compare: options.compare,
  });

  log("");
  log(summary.table);
  if (summary.heavyTable.length > 0) {
    log("\nThe heavy listener (bench/README.md):");
    for (const line of summary.heavyTable) log(line);
  }
  if (summary.sqlTable.length > 0) {
    log(`\nThe SQL time of the isolate scenarios (median of ${SQL_RUNS} runs; bench/README.md, "The SQL time"):`);
    for (const line of summary.sqlTable) log(line);
  }
  log(`\nSide by side with the peer (${PEER_FIGURES.source}):`);
  for (const line of summary.peerTable) log(line);
  for (const [name, f] of Object.entries(summary.results.details.format_floor_us)) {
    log(
      `  format floor of ${name}: request + response ${fmt(f.request_us, 0)} µs, + D1 answers ${fmt(f.answer_us, 0)} µs (the app: ${fmt(f.app_us, 0)} µs)`,
    );
  }
  const withPodcasts = summary.results.details.list_include_podcast;
  if (withPodcasts) {
    const ratios = summary.results.details.isolate_ratio_rounds.isolate_list_include_podcast_vs_list;
    log(
      `  list with include=podcast: ${summary.results.isolate_cpu_us["list-include-podcast"]} µs (the list ${summary.results.isolate_cpu_us.list}; rounds ${ratios.join(", ")}), ${withPodcasts.rows_read} rows read for ${withPodcasts.shown} shown (the list ${withPodcasts.rows_read_list}, its constant ${withPodcasts.list_constant_rows}), ${withPodcasts.response_bytes} bytes (the list ${withPodcasts.response_bytes_list})`,
    );
  }
  if (feedFigures) {
    summary.results.feeds = feedFigures;
    Object.assign(summary.results.targets, feeds.feedTargetsOf(feedFigures));
    Object.assign(summary.directions, feeds.FEED_TARGET_DIRECTIONS);
    logFeeds(feedFigures);
  }
  if (summary.comparison) log(`\n${summary.comparison}`);
  log("");
  for (const [name, target] of Object.entries(summary.results.targets)) {
    if (target.value === null) log(`  -   ${name}: not measured in this run`);
    else
      log(`${target.pass ? "PASS" : "MISS"}  ${name}: ${target.value} (${summary.directions[name]} ${target.limit})`);
  }
  const localConsole = summary.results.details.isolate_local_console;
  if (localConsole) {
    log(
      `  isolate get-one keeping local workerd's console: ${fmt(localConsole.get_one_cpu_us, 0)} µs CPU (${fmt(localConsole.extra_cpu_us, 0)} µs for its one console line; see bench/README.md)`,
    );
  }
  if (logs.byLevel.error)
    log(`bench: the workers logged ${logs.byLevel.error} error lines, e.g. ${logs.lastErrors[0]}`);
  if (options.isolateOnly) {
    log(`\nbench: isolate-only run, nothing written (${fmt((Date.now() - started.getTime()) / 1000, 0)} s)`);
    return;
  }

  const outDir = options.out ? resolve(options.out) : BENCH_DIR;
  mkdirSync(outDir, { recursive: true });
  const suffix = options.env ? `-${options.env}` : "";
  writeFileSync(join(outDir, `results${suffix}.json`), `${JSON.stringify(summary.results, null, 2)}\n`);
  writeFileSync(
    join(outDir, `RESULTS${suffix}.md`),
    renderMarkdown({
      summary,
      figures,
      rows,
      scalingRows,
      syncRows,
      bundle,
      ceilingTimeline,
      settings,
      started,
      finished: new Date(),
      loadAverageBefore,
      logs: server.logs,
      pools,
      env: options.env,
      databases: Object.keys(databases),
      // With --env, the figures of the last run without it (if any) stand beside this run's.
      plain: options.env ? readPlainResults(outDir) : undefined,
    }) + (feedFigures ? feeds.renderFeeds(feedFigures) : ""),
  );
  log(
    `\nbench: wrote ${join(outDir, `results${suffix}.json`)} and RESULTS${suffix}.md in ${fmt((Date.now() - started.getTime()) / 1000, 0)} s`,
  );
}

/** The user whose subscriptions name the feed round's feeds (bench/lib/feeds.mjs). */
const FEED_USER = { id: "bench-feeds", no: 990_001, active: 0 };

/** Records the feed rounds (after the recordings already loaded, `recordings`), loads and checks their replays. */
async function recordFeeds(urls, databases, tokens, recordings) {
  const recorded = await feeds.recordFeedRounds({
    urls,
    databases,
    token: tokens[FEED_USER.id],
    send: (base, request, status) => sendExpecting(base, request, status),
    log,
  });
  // The move of a feed with 10 000 subscribers, after the rounds (it pushes their feeds out of the round too).
  const move = await feeds.recordFeedMove({
    urls,
    databases,
    user: FEED_USER.id,
    token: tokens[FEED_USER.id],
    send: (base, request, status) => sendExpecting(base, request, status),
    log,
  });
  const load = await fetch(new URL("/__bench/recordings", urls.isolate), {
    method: "POST",
    body: JSON.stringify({ ...recordings, ...recorded.recordings, ...move.recordings }),
  });
  if (load.status !== 204) throw new Error(`loading the feed recordings answered ${load.status}`);
  await feeds.checkFeedReplays({
    urls,
    fetches: { ...recorded.fetches, ...move.fetches },
    runs: { ...recorded.runs, ...move.runs },
  });
  log(
    `bench: feed rounds recorded and replayed identically: ${Object.keys(recorded.runs).join(", ")}, and the ${Object.keys(move.runs).length} runs of the move`,
  );
  return { ...recorded, move };
}

/** Prints the feed figures (bench/README.md, "The feed round"). */
function logFeeds(figures) {
  log(`\nThe feed round (isolate CPU, the median over the rounds; the ceiling ${figures.ceiling_cpu_us} µs):`);
  for (const [name, s] of Object.entries(figures.scenarios)) {
    log(
      `${s.pass ? "PASS" : "MISS"}  ${name}: ${s.isolate_cpu_us} µs (${s.isolate_cpu_us_above_ceiling} above the ceiling; rounds ${s.isolate_cpu_us_rounds.join(", ")}), ${s.subrequests} subrequests (${s.fetches} fetches + ${s.d1_calls} D1 calls, ${s.d1_statements} statements); ${s.round.fetched} fetched, ${s.round.deferred} deferred, ${Math.round(s.fetched_bytes / 1024)} KiB read`,
    );
  }
  for (const [name, p] of Object.entries(figures.parse)) {
    log(
      `${p.pass ? "PASS" : "MISS"}  parse of ${name} (${p.bytes} bytes): ${p.isolate_cpu_us} µs (rounds ${p.rounds_us.join(", ")}; target ${feeds.PARSE_TARGET_US}; saxes alone ${p.saxes_only_us} µs)`,
    );
  }
  const { move } = figures;
  if (!move) return;
  log(
    `${move.pass.runs ? "PASS" : "MISS"}  move of a feed with ${move.subscribers} subscribers: ${move.runs} runs (moved ${move.moved_per_run.join(", ")}); isolate CPU µs per run ${move.isolate_cpu_us_per_run.join(", ")}; subrequests per run ${move.subrequests_per_run.join(", ")}`,
  );
  for (const [label, u] of [
    ["1 alias", move.uploads.one_alias],
    [`${move.lookups.aliases} aliases`, move.uploads.many_aliases],
  ]) {
    log(
      `${u.alias.d1_calls <= u.stored.d1_calls ? "PASS" : "MISS"}  upload of ${move.uploads.actions} actions, B with ${label}: naming A ${u.alias.d1_calls} D1 calls (first ${u.alias.first_d1_calls}), ${u.alias.rows_read} rows read; naming B ${u.stored.d1_calls} (first ${u.stored.first_d1_calls}), ${u.stored.rows_read} rows read`,
    );
  }
  const l = move.lookups;
  log(
    `${move.pass.lookup ? "PASS" : "MISS"}  lookup of a URL with ${l.aliases} aliases: ${l.alias_rows_read} rows read naming A, ${l.stored_rows_read} naming B (one alias: ${l.one_alias_rows_read}; target 2 × ${l.aliases} + ${feeds.LOOKUP_CONSTANT_ROWS})`,
  );
}

/** `--feeds-only`: the schema, the feed user, the feed rounds recorded, replayed and measured; nothing written. */
async function feedsOnly(urls, databases, secret, workerdPid, started) {
  for (const db of Object.values(databases)) await applyMigrations(db, join(ROOT, "drizzle"));
  const tokens = await scenario.tokensFor([FEED_USER], secret);
  const recorded = await recordFeeds(urls, databases, tokens, {});
  const figures = await feeds.measureFeeds({
    urls,
    runs: recorded.runs,
    move: recorded.move,
    settings,
    workerdPid,
    ceilingTarget: {
      base: urls.ceiling,
      endpoint: {
        name: "ceiling",
        expected: [200],
        dynamic: false,
        next: () => ({ method: "GET", path: "/", headers: {} }),
      },
    },
    log,
  });
  logFeeds(figures);
  for (const [name, target] of Object.entries(feeds.feedTargetsOf(figures))) {
    log(
      `${target.pass ? "PASS" : "MISS"}  ${name}: ${target.value} (${feeds.FEED_TARGET_DIRECTIONS[name]} ${target.limit})`,
    );
  }
  if (process.env.BENCH_FEEDS_JSON) writeFileSync(process.env.BENCH_FEEDS_JSON, JSON.stringify(figures, null, 2));
  log(`\nbench: feeds-only run, nothing written (${fmt((Date.now() - started.getTime()) / 1000, 0)} s)`);
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
