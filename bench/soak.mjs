#!/usr/bin/env node
// Soak test (`npm run soak`): `wrangler dev` on loopback under mixed traffic, then proof that nothing was lost.
//
// 1. Applies the local D1 migrations to a fresh temporary directory and starts `wrangler dev` on 127.0.0.1 on
//    a free port with that directory as --persist-to and a random HS256 secret in a temporary --env-file
//    (so the developer's .dev.vars and .wrangler/state are neither read nor touched).
// 2. Finds the concurrency the machine sustains (a short ramp; skipped when SOAK_CONCURRENCY is set), then
//    drives mixed traffic for SOAK_SECONDS (default 60) from several users: list, get, get of an unknown
//    guid, POST new, POST existing, POST of an unsubscribed guid (revive), DELETE, and bulk adds of 1-20
//    operations (mostly new guids, some already subscribed, some unsubscribed, sometimes one twice).
//    Guids in flight are locked, so a serial model of each user predicts every answer exactly.
// 3. Verifies: every subscription that should be live (each 201, each successful bulk add, minus later
//    DELETEs) answers GET 200 with its feedUrl; every unsubscribed one answers 404; each user's list holds
//    exactly the live set and meta.total counts it.
// 4. Writes the report to bench/SOAK.md (SOAK_REPORT to write elsewhere) and exits non-zero on any 5xx,
//    network error, unexpected status or lost write. 429 (rate limited) is counted, retried in the
//    verification, and is not a failure.
//
// Settings (environment): SOAK_SECONDS (60), SOAK_CONCURRENCY (auto), SOAK_USERS (200), SOAK_SEED (random),
// SOAK_REPORT (bench/SOAK.md), SOAK_KEEP=1 keeps the temporary directory (database and wrangler log),
// SOAK_SELF_TEST=lose-write loses one write on purpose before the verification (the run must fail).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { sign } from "hono/jwt";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const WRANGLER = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const JSONAPI = "application/vnd.api+json";
const ATOMIC = `${JSONAPI};ext="https://jsonapi.org/ext/atomic"`;

const SECONDS = positiveNumber("SOAK_SECONDS", 60);
const USERS = positiveNumber("SOAK_USERS", 200);
const FIXED_CONCURRENCY = process.env.SOAK_CONCURRENCY ? positiveNumber("SOAK_CONCURRENCY", 1) : undefined;
const SEED = process.env.SOAK_SEED ? Number(process.env.SOAK_SEED) : randomBytes(4).readUInt32LE(0);
const REPORT = process.env.SOAK_REPORT ?? join(ROOT, "bench", "SOAK.md");
const KEEP = process.env.SOAK_KEEP === "1";
const RAMP = [2, 4, 8, 16, 32, 64];
const RAMP_SECONDS = 4;
const REQUEST_TIMEOUT_MS = 30_000;

// Share of each kind of operation in the traffic (weights).
const MIX = {
  list: 18,
  get: 20,
  "get-missing": 3,
  "post-new": 17,
  "post-existing": 9,
  "post-revive": 4,
  delete: 12,
  bulk: 8,
};

function positiveNumber(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${raw}`);
  return value;
}

// ---------------------------------------------------------------------------------------------------------
// Deterministic choices (mulberry32), so a seed reproduces the mix; timing still varies run to run.
let rngState = SEED >>> 0;
function random() {
  rngState = (rngState + 0x6d2b79f5) >>> 0;
  let t = rngState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const randomInt = (n) => Math.floor(random() * n);
const KINDS = Object.keys(MIX);
const TOTAL_WEIGHT = Object.values(MIX).reduce((a, b) => a + b, 0);
function pickKind() {
  let r = random() * TOTAL_WEIGHT;
  for (const kind of KINDS) {
    r -= MIX[kind];
    if (r < 0) return kind;
  }
  return KINDS[0];
}

/** A set with O(1) add, delete and random pick. */
class PickSet {
  items = [];
  index = new Map();
  get size() {
    return this.items.length;
  }
  add(value) {
    if (this.index.has(value)) return;
    this.index.set(value, this.items.length);
    this.items.push(value);
  }
  delete(value) {
    const i = this.index.get(value);
    if (i === undefined) return;
    const last = this.items.pop();
    if (i < this.items.length) {
      this.items[i] = last;
      this.index.set(last, i);
    }
    this.index.delete(value);
  }
  /** A random member not in `busy`, or undefined after a few tries. */
  pick(busy) {
    for (let tries = 0; tries < 8 && this.items.length > 0; tries++) {
      const value = this.items[randomInt(this.items.length)];
      if (!busy.has(value)) return value;
    }
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------
// The model: per user, what the server must hold. Only settled answers change it.
class User {
  constructor(id, token) {
    this.id = id;
    this.token = token;
    this.live = new PickSet(); // guids subscribed now
    this.dead = new PickSet(); // guids unsubscribed (tombstones)
    this.feedUrl = new Map(); // guid -> feedUrl the server must return
    this.busy = new Set(); // guids with a request in flight
    this.feeds = 0;
  }
  newFeedUrl() {
    this.feeds += 1;
    return `https://feeds.soak.test/${this.id}/show-${this.feeds}-${randomInt(1e9)}.xml`;
  }
  subscribed(guid, feedUrl) {
    this.dead.delete(guid);
    this.live.add(guid);
    this.feedUrl.set(guid, feedUrl);
  }
  unsubscribed(guid) {
    this.live.delete(guid);
    this.dead.add(guid);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Measurements.
const stats = {
  phase: "ramp",
  samples: [], // { phase, kind, ms, end, status }
  networkErrors: 0,
  unexpected: 0,
  failures: [], // first problems, for the report
  writes: { single201: 0, singleRevived: 0, bulkAdded: 0, bulkRevived: 0, deleted: 0 },
};
let base = "";

function problem(text) {
  if (stats.failures.length < 25) stats.failures.push(text);
}

/** One HTTP request, timed; the body is read (JSON when there is one). */
async function request(kind, user, method, path, { body, contentType, accept = JSONAPI } = {}) {
  const headers = { Authorization: `Bearer ${user.token}`, Accept: accept };
  if (contentType) headers["Content-Type"] = contentType;
  const started = performance.now();
  let status = 0;
  let json;
  try {
    const response = await fetch(base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    status = response.status;
    const text = await response.text();
    json = text ? JSON.parse(text) : undefined;
  } catch (error) {
    stats.networkErrors += 1;
    problem(`${kind} ${method} ${path}: ${status ? `status ${status}, unreadable body` : "network error"}: ${error}`);
  }
  const ended = performance.now();
  if (stats.phase !== "verify") {
    stats.samples.push({ phase: stats.phase, kind, ms: ended - started, end: ended, status });
  }
  if (status >= 500) problem(`${kind} ${method} ${path}: ${status} ${JSON.stringify(json)?.slice(0, 300)}`);
  return { status, json };
}

/** Records an answer the model did not predict (a 429 is allowed: rate limited, nothing done). */
function expectStatus(kind, got, expected, context) {
  if (got === expected || got === 429 || got === 0 || got >= 500) return got === expected;
  stats.unexpected += 1;
  problem(`${kind}: expected ${expected}, got ${got} (${context})`);
  return false;
}

function checkResource(kind, resource, guid, feedUrl) {
  const ok =
    resource?.type === "subscription" &&
    resource.id === guid &&
    resource.attributes?.feedUrl === feedUrl &&
    typeof resource.attributes?.userSubscribedAt === "string";
  if (!ok) {
    stats.unexpected += 1;
    problem(`${kind}: resource ${JSON.stringify(resource)?.slice(0, 300)} is not ${guid} with ${feedUrl}`);
  }
  return ok;
}

const subscriptionBody = (guid, feedUrl) => ({ data: { type: "subscription", id: guid, attributes: { feedUrl } } });

// ---------------------------------------------------------------------------------------------------------
// The operations. Each locks the guids it touches until its answer has updated the model.
async function withLocks(user, guids, run) {
  for (const guid of guids) user.busy.add(guid);
  try {
    return await run();
  } finally {
    for (const guid of guids) user.busy.delete(guid);
  }
}

const operations = {
  async list(user) {
    const size = [10, 25, 100][randomInt(3)];
    const pages = Math.max(1, Math.ceil(user.live.size / size));
    const number = 1 + randomInt(pages + 1);
    const { status, json } = await request(
      "list",
      user,
      "GET",
      `/v1/subscriptions?page[number]=${number}&page[size]=${size}`,
    );
    if (expectStatus("list", status, 200, `page ${number} size ${size}`)) {
      if (!Array.isArray(json?.data) || json.data.length > size || typeof json?.meta?.total !== "number") {
        stats.unexpected += 1;
        problem(`list: malformed page ${JSON.stringify(json)?.slice(0, 300)}`);
      }
    }
  },

  async get(user) {
    const guid = user.live.pick(user.busy);
    if (guid === undefined) return operations["post-new"](user);
    await withLocks(user, [guid], async () => {
      const { status, json } = await request("get", user, "GET", `/v1/subscriptions/${guid}`);
      if (expectStatus("get", status, 200, guid)) checkResource("get", json?.data, guid, user.feedUrl.get(guid));
    });
  },

  async "get-missing"(user) {
    const { status } = await request("get-missing", user, "GET", `/v1/subscriptions/${randomUUID()}`);
    expectStatus("get-missing", status, 404, "never subscribed");
  },

  async "post-new"(user) {
    const guid = randomUUID();
    const feedUrl = user.newFeedUrl();
    await withLocks(user, [guid], async () => {
      const { status, json } = await request("post-new", user, "POST", "/v1/subscriptions", {
        body: subscriptionBody(guid, feedUrl),
        contentType: JSONAPI,
      });
      if (expectStatus("post-new", status, 201, guid) && checkResource("post-new", json?.data, guid, feedUrl)) {
        user.subscribed(guid, feedUrl);
        stats.writes.single201 += 1;
      }
    });
  },

  async "post-existing"(user) {
    const guid = user.live.pick(user.busy);
    if (guid === undefined) return operations["post-new"](user);
    await withLocks(user, [guid], async () => {
      // Half the time with another feedUrl: an existing subscription is answered unchanged.
      const sent = random() < 0.5 ? user.feedUrl.get(guid) : user.newFeedUrl();
      const { status, json } = await request("post-existing", user, "POST", "/v1/subscriptions", {
        body: subscriptionBody(guid, sent),
        contentType: JSONAPI,
      });
      if (expectStatus("post-existing", status, 200, guid)) {
        checkResource("post-existing", json?.data, guid, user.feedUrl.get(guid));
      }
    });
  },

  async "post-revive"(user) {
    const guid = user.dead.pick(user.busy);
    if (guid === undefined) return operations.delete(user);
    const feedUrl = user.newFeedUrl();
    await withLocks(user, [guid], async () => {
      const { status, json } = await request("post-revive", user, "POST", "/v1/subscriptions", {
        body: subscriptionBody(guid, feedUrl),
        contentType: JSONAPI,
      });
      if (expectStatus("post-revive", status, 201, guid) && checkResource("post-revive", json?.data, guid, feedUrl)) {
        user.subscribed(guid, feedUrl);
        stats.writes.single201 += 1;
        stats.writes.singleRevived += 1;
      }
    });
  },

  async delete(user) {
    const guid = user.live.pick(user.busy);
    if (guid === undefined) return operations["post-new"](user);
    await withLocks(user, [guid], async () => {
      const { status } = await request("delete", user, "DELETE", `/v1/subscriptions/${guid}`);
      if (expectStatus("delete", status, 204, guid)) {
        user.unsubscribed(guid);
        stats.writes.deleted += 1;
      }
    });
  },

  async bulk(user) {
    const count = 1 + randomInt(20);
    const plan = []; // { guid, feedUrl, expect: "add" | "conflict" }
    const seen = new Set();
    for (let i = 0; i < count; i++) {
      const r = random();
      let guid;
      if (r < 0.08 && plan.length > 0)
        guid = plan[randomInt(plan.length)].guid; // the same guid twice
      else if (r < 0.18) guid = user.live.pick(user.busy);
      else if (r < 0.26) guid = user.dead.pick(user.busy);
      if (guid === undefined) guid = randomUUID();
      const expect = seen.has(guid) || user.live.index.has(guid) ? "conflict" : "add";
      seen.add(guid);
      plan.push({ guid, feedUrl: user.newFeedUrl(), expect });
    }
    await withLocks(user, [...seen], async () => {
      const { status, json } = await request("bulk", user, "POST", "/v1/operations", {
        body: { "atomic:operations": plan.map((p) => ({ op: "add", ...subscriptionBody(p.guid, p.feedUrl) })) },
        contentType: ATOMIC,
        accept: ATOMIC,
      });
      if (!expectStatus("bulk", status, 200, `${count} operations`)) return;
      const results = json?.["atomic:results"];
      if (!Array.isArray(results) || results.length !== plan.length) {
        stats.unexpected += 1;
        problem(`bulk: ${plan.length} operations, results ${JSON.stringify(results)?.slice(0, 300)}`);
        return;
      }
      plan.forEach((p, i) => {
        const result = results[i];
        if (p.expect === "add") {
          if (checkResource("bulk", result?.data, p.guid, p.feedUrl)) {
            if (user.dead.index.has(p.guid)) stats.writes.bulkRevived += 1;
            user.subscribed(p.guid, p.feedUrl);
            stats.writes.bulkAdded += 1;
          }
        } else if (result?.errors?.[0]?.status !== "409") {
          stats.unexpected += 1;
          problem(`bulk: operation ${i} on ${p.guid} should be 409, got ${JSON.stringify(result)?.slice(0, 300)}`);
        }
      });
    });
  },
};

/** `concurrency` workers send operations until `deadline` (performance.now() ms). */
async function drive(users, concurrency, deadline) {
  const worker = async () => {
    while (performance.now() < deadline) {
      await operations[pickKind()](users[randomInt(users.length)]);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

// ---------------------------------------------------------------------------------------------------------
// Verification after the traffic.
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** GET with retries on 429 (Retry-After) and on network errors (counted already). */
async function verifyRequest(user, path) {
  for (let attempt = 0; ; attempt++) {
    const started = performance.now();
    let response;
    try {
      response = await fetch(base + path, {
        headers: { Authorization: `Bearer ${user.token}`, Accept: JSONAPI },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      stats.networkErrors += 1;
      problem(`verify GET ${path}: network error ${error}`);
      if (attempt >= 3) return { status: 0 };
      await sleep(500);
      continue;
    }
    const text = await response.text();
    verification.requests += 1;
    verification.ms.push(performance.now() - started);
    if (response.status === 429 && attempt < 20) {
      verification.throttled += 1;
      await sleep(1000 * Math.min(10, Number(response.headers.get("Retry-After")) || 1));
      continue;
    }
    if (response.status >= 500) problem(`verify GET ${path}: ${response.status} ${text.slice(0, 300)}`);
    return { status: response.status, json: text ? JSON.parse(text) : undefined };
  }
}

const verification = {
  requests: 0,
  throttled: 0,
  ms: [],
  liveChecked: 0,
  deadChecked: 0,
  lost: 0,
  wrongFeedUrl: 0,
  resurrected: 0,
  listMismatches: 0,
  totalMismatches: 0,
  serverErrors: 0,
};

async function verifyUser(user, concurrency) {
  const checks = [...user.live.items.map((g) => [g, true]), ...user.dead.items.map((g) => [g, false])];
  let next = 0;
  const worker = async () => {
    while (next < checks.length) {
      const [guid, live] = checks[next++];
      const { status, json } = await verifyRequest(user, `/v1/subscriptions/${guid}`);
      if (status >= 500) verification.serverErrors += 1;
      if (live) {
        verification.liveChecked += 1;
        if (status !== 200) {
          verification.lost += 1;
          problem(`lost write: ${user.id} ${guid} answers ${status}`);
        } else if (json?.data?.attributes?.feedUrl !== user.feedUrl.get(guid)) {
          verification.wrongFeedUrl += 1;
          problem(`wrong feedUrl: ${user.id} ${guid}: ${json?.data?.attributes?.feedUrl} != ${user.feedUrl.get(guid)}`);
        }
      } else {
        verification.deadChecked += 1;
        if (status !== 404) {
          verification.resurrected += 1;
          problem(`unsubscribed but readable: ${user.id} ${guid} answers ${status}`);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));

  // The list, page by page, must hold exactly the live set, and meta.total must count it.
  const listed = new Set();
  for (let number = 1; ; number++) {
    const { status, json } = await verifyRequest(user, `/v1/subscriptions?page[number]=${number}&page[size]=100`);
    if (status !== 200) {
      verification.serverErrors += status >= 500 ? 1 : 0;
      verification.listMismatches += 1;
      problem(`list of ${user.id} page ${number}: ${status}`);
      return;
    }
    if (json.meta?.total !== user.live.size) {
      verification.totalMismatches += 1;
      problem(`meta.total of ${user.id}: ${json.meta?.total}, expected ${user.live.size}`);
    }
    for (const resource of json.data) listed.add(resource.id);
    if (json.data.length < 100 || json.links?.next == null) break;
  }
  const missing = user.live.items.filter((g) => !listed.has(g)).length;
  const extra = [...listed].filter((g) => !user.live.index.has(g)).length;
  if (missing > 0 || extra > 0 || listed.size !== user.live.size) {
    verification.listMismatches += 1;
    problem(`list of ${user.id}: ${missing} live missing, ${extra} not live listed`);
  }
}

/**
 * Self-test of the verification (SOAK_SELF_TEST=lose-write): unsubscribes one live subscription behind the
 * model's back, so the run must report one lost write (and a list mismatch) and exit non-zero.
 */
async function loseOneWrite(users) {
  const user = users.find((u) => u.live.size > 0);
  if (!user) return;
  const guid = user.live.items[0];
  const { status } = await request("self-test", user, "DELETE", `/v1/subscriptions/${guid}`);
  console.log(`soak: self-test: unsubscribed ${user.id} ${guid} behind the model's back (${status})`);
}

// ---------------------------------------------------------------------------------------------------------
// The server: wrangler dev in its own process group, killed (group and all) whatever happens.
let server; // { child, logPath }
let temp;

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

function runWrangler(args) {
  const run = spawnSync(process.execPath, [WRANGLER, ...args], {
    cwd: ROOT,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
  });
  if (run.status !== 0) throw new Error(`wrangler ${args.join(" ")} failed:\n${run.stdout}\n${run.stderr}`);
}

async function startServer() {
  temp = mkdtempSync(join(os.tmpdir(), "soak-"));
  const persist = join(temp, "state");
  const secret = randomBytes(32).toString("hex");
  const envFile = join(temp, "soak.env");
  writeFileSync(envFile, `AUTH_JWT_SECRET=${secret}\n`, { mode: 0o600 });
  runWrangler(["d1", "migrations", "apply", "DB", "--local", "--persist-to", persist]);

  const [port, inspectorPort] = [await freePort(), await freePort()];
  const logPath = join(temp, "wrangler-dev.log");
  const log = openSync(logPath, "a");
  const child = spawn(
    process.execPath,
    [
      WRANGLER,
      "dev",
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      String(inspectorPort),
      "--persist-to",
      persist,
      "--env-file",
      envFile,
      "--show-interactive-dev-session=false",
      "--live-reload=false",
    ],
    {
      cwd: ROOT,
      detached: true, // its own process group: stopping it stops workerd too
      stdio: ["ignore", log, log],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
    },
  );
  closeSync(log);
  const started = { child, logPath, exited: false };
  server = started;
  child.on("exit", () => {
    started.exited = true;
  });
  base = `http://127.0.0.1:${port}`;

  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (server.exited) throw new Error(`wrangler dev exited early:\n${tail(logPath)}`);
    try {
      await fetch(`${base}/ext/link-method`, { signal: AbortSignal.timeout(2000) });
      return secret;
    } catch {
      await sleep(250);
    }
  }
  throw new Error(`wrangler dev did not answer within 90 s:\n${tail(logPath)}`);
}

/** Error lines in the wrangler dev log: wrangler's own errors and the Worker's JSON error logs. */
function serverErrorLines(path) {
  try {
    return readFileSync(path, "utf8")
      .split("\n")
      .filter((line) => /\[ERROR\]|Uncaught|"level":"error"/.test(line));
  } catch {
    return [];
  }
}

function tail(path, lines = 40) {
  try {
    return readFileSync(path, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function stopServer() {
  if (!server) return;
  const pgid = server.child.pid;
  server = undefined;
  try {
    process.kill(-pgid, "SIGTERM");
  } catch {
    // already gone
  }
  for (let i = 0; i < 50 && groupAlive(pgid); i++) await sleep(100);
  if (groupAlive(pgid)) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/**
 * The wrangler dev process group (wrangler, workerd) from /proc: resident memory in MiB and CPU time in
 * clock ticks (1/100 s). Zero where /proc is missing.
 */
function serverUsage() {
  const usage = { mib: 0, ticks: 0, byProcess: new Map() };
  if (!server) return usage;
  const pgid = server.child.pid;
  try {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (Number(fields[2]) !== pgid) continue;
        const mib = (Number(fields[21]) * 4096) / 2 ** 20;
        usage.mib += mib;
        usage.ticks += Number(fields[11]) + Number(fields[12]);
        const label = processLabel(readFileSync(`/proc/${entry}/cmdline`, "utf8"));
        usage.byProcess.set(label, (usage.byProcess.get(label) ?? 0) + mib);
      } catch {
        // the process ended meanwhile
      }
    }
  } catch {
    // no /proc
  }
  return usage;
}

/** What a process of the wrangler dev group is, from its command line. */
function processLabel(cmdline) {
  if (cmdline.includes("esbuild")) return "esbuild (bundler service)";
  if (cmdline.includes("workerd")) {
    return cmdline.includes(`entry=${new URL(base).host}`) ? "workerd (dev proxy)" : "workerd (the Worker and D1)";
  }
  if (cmdline.includes("wrangler-dist")) return "wrangler (Node.js)";
  return "wrangler launcher (Node.js)";
}

/** Busy CPU clock ticks of the whole machine, all cores (from /proc/stat); 0 where it is missing. */
function machineBusyTicks() {
  try {
    const [, ...values] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).map(Number);
    const [user, nice, system, , , irq, softirq, steal] = values;
    return user + nice + system + irq + softirq + steal;
  } catch {
    return 0;
  }
}

/** CPU counters now: the server group, this client process, the whole machine. */
function cpuSnapshot() {
  const client = process.cpuUsage();
  return {
    t: performance.now(),
    server: serverUsage().ticks,
    client: (client.user + client.system) / 1e6,
    machine: machineBusyTicks(),
  };
}

/** CPU used between two snapshots, in cores (1.0 = one core busy all the time). */
function cpuBetween(a, b) {
  const seconds = (b.t - a.t) / 1000;
  const server = (b.server - a.server) / 100 / seconds;
  const client = (b.client - a.client) / seconds;
  const machine = (b.machine - a.machine) / 100 / seconds;
  return { server, client, machine, other: Math.max(0, machine - server - client) };
}

// ---------------------------------------------------------------------------------------------------------
// Statistics and the report.
function percentile(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function summarize(samples) {
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  return {
    count: samples.length,
    p50: percentile(ms, 50),
    p90: percentile(ms, 90),
    p99: percentile(ms, 99),
    max: ms[ms.length - 1] ?? Number.NaN,
    errors5xx: samples.filter((s) => s.status >= 500).length,
    throttled: samples.filter((s) => s.status === 429).length,
  };
}

const cores = (n) => `${n.toFixed(2)} cores`;
const fmt = (ms) => (Number.isNaN(ms) ? "-" : ms < 10 ? ms.toFixed(2) : ms.toFixed(1));

function gitDescribe() {
  const head = spawnSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).stdout.trim();
  const dirty = spawnSync("git", ["status", "--porcelain", "--", "src", "drizzle", "wrangler.toml"], {
    cwd: ROOT,
    encoding: "utf8",
  }).stdout.trim();
  return head ? `${head}${dirty ? " (with uncommitted changes in src/, drizzle/ or wrangler.toml)" : ""}` : "unknown";
}

function wranglerVersion() {
  try {
    return JSON.parse(readFileSync(join(ROOT, "node_modules", "wrangler", "package.json"), "utf8")).version;
  } catch {
    return "unknown";
  }
}

function report({ started, concurrency, ramp, soakStart, soakEnd, rss, failed, cpu, loadBefore, logErrors, memory }) {
  const soak = stats.samples.filter((s) => s.phase === "soak");
  const all = summarize(soak);
  const errors5xx = summarize(stats.samples).errors5xx + verification.serverErrors;
  const seconds = (soakEnd - soakStart) / 1000;
  const cpus = os.cpus();
  const lines = [];
  const row = (cells) => lines.push(`| ${cells.join(" | ")} |`);
  lines.push("# Soak test", "");
  lines.push(
    `${failed ? "**FAILED**" : "**Passed**"}: ${errors5xx} responses 5xx, ${stats.networkErrors} network errors, ` +
      `${verification.lost} lost writes, ${stats.unexpected} unexpected answers, ` +
      `${verification.resurrected} unsubscribed subscriptions still readable, ${verification.listMismatches} list mismatches.`,
    "",
  );
  lines.push(
    "Produced by `npm run soak` (bench/soak.mjs): `wrangler dev` on 127.0.0.1 with a fresh local D1 database",
    "(migrations applied first), HS256 tokens, mixed traffic from several users at a fixed concurrency, then",
    "verification that every write that should be live is readable. Timings are client-side, per request",
    "(send to last body byte), from a Node.js client on the same machine as the server.",
    "",
  );
  lines.push("## Run", "");
  row(["", ""]);
  row(["---", "---"]);
  row(["Date", started.toISOString()]);
  row([
    "Machine",
    `${cpus.length} × ${cpus[0]?.model ?? "unknown CPU"}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM`,
  ]);
  row(["OS", `${os.type()} ${os.release()} (${os.arch()})`]);
  row(["Load before the run", `load average ${loadBefore.map((l) => l.toFixed(2)).join(", ")} (1, 5, 15 min)`]);
  row([
    "CPU during the soak",
    `${cores(cpu.server)} wrangler dev (workerd and wrangler), ${cores(cpu.client)} the load client, ` +
      `${cores(cpu.other)} other processes, of ${cpus.length} cores`,
  ]);
  row(["Runtime", `Node.js ${process.version} (client and wrangler), wrangler ${wranglerVersion()}`]);
  row(["Code", `commit ${gitDescribe()}`]);
  row([
    "Duration",
    `${seconds.toFixed(1)} s of soak (after a 2 s warm-up${ramp.length ? ` and a ${ramp.length * RAMP_SECONDS} s ramp` : ""})`,
  ]);
  row([
    "Concurrency",
    `${concurrency} requests in flight${FIXED_CONCURRENCY ? " (SOAK_CONCURRENCY)" : " (chosen by the ramp)"}`,
  ]);
  row(["Users", `${USERS}, one random user per operation`]);
  row(["Seed", `${SEED} (SOAK_SEED reproduces the choices)`]);
  row(["Mix (weights)", KINDS.map((k) => `${k} ${MIX[k]}`).join(", ")]);
  lines.push("");

  if (ramp.length > 0) {
    lines.push("## Ramp: finding the sustainable concurrency", "");
    lines.push(
      `${RAMP_SECONDS} s at each level; the soak uses the lowest level within 10 % of the best throughput (the knee: more in flight only queues).`,
      "",
    );
    row(["Concurrency", "Requests/s", "p50 ms", "p99 ms", "5xx"]);
    row(["---:", "---:", "---:", "---:", "---:"]);
    for (const r of ramp) row([r.concurrency, r.rps.toFixed(0), fmt(r.p50), fmt(r.p99), r.errors5xx]);
    lines.push("");
  }

  lines.push("## Latency and outcomes during the soak", "");
  lines.push(
    `${all.count} requests in ${seconds.toFixed(1)} s: **${(all.count / seconds).toFixed(0)} requests/s**.`,
    "",
  );
  row(["Kind", "Requests", "p50 ms", "p90 ms", "p99 ms", "max ms", "Statuses"]);
  row(["---", "---:", "---:", "---:", "---:", "---:", "---"]);
  const statuses = (samples) => {
    const counts = new Map();
    for (const { status } of samples) counts.set(status, (counts.get(status) ?? 0) + 1);
    return [...counts.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, n]) => `${status || "network error"}: ${n}`)
      .join(", ");
  };
  row(["**all**", all.count, fmt(all.p50), fmt(all.p90), fmt(all.p99), fmt(all.max), statuses(soak)]);
  for (const kind of KINDS) {
    const samples = soak.filter((x) => x.kind === kind);
    const s = summarize(samples);
    row([kind, s.count, fmt(s.p50), fmt(s.p90), fmt(s.p99), fmt(s.max), statuses(samples)]);
  }
  lines.push("");
  lines.push(
    "A kind whose target was not available (no live or unsubscribed guid free for that user) ran as",
    "post-new or delete instead and is counted as that. Bulk requests carry 1-20 add operations (10.5 on",
    "average); their inline results are checked one by one (new guids added, already subscribed ones 409).",
    "",
  );

  lines.push("## Over time", "");
  row(["Window", "Requests/s", "p50 ms", "p99 ms", "5xx", "429", "Server RSS MiB"]);
  row(["---", "---:", "---:", "---:", "---:", "---:", "---:"]);
  const windowSeconds = seconds >= 30 ? 10 : 5;
  for (let from = 0; from < seconds - 0.5; from += windowSeconds) {
    const to = Math.min(seconds, from + windowSeconds);
    const inWindow = soak.filter((s) => s.end >= soakStart + from * 1000 && s.end < soakStart + to * 1000);
    const s = summarize(inWindow);
    const memory = rss.filter((m) => m.t >= soakStart + from * 1000 && m.t < soakStart + to * 1000);
    const mib = memory.length ? memory[memory.length - 1].mib.toFixed(0) : "-";
    row([
      `${from}-${to.toFixed(0)} s`,
      (s.count / (to - from)).toFixed(0),
      fmt(s.p50),
      fmt(s.p99),
      s.errors5xx,
      s.throttled,
      mib,
    ]);
  }
  lines.push("");

  lines.push("Resident memory of the `wrangler dev` processes at the start and the end of the soak (MiB):", "");
  row(["Process", "Start", "End", "Change"]);
  row(["---", "---:", "---:", "---:"]);
  for (const label of [...new Set([...memory.start.keys(), ...memory.end.keys()])].sort()) {
    const [a, b] = [memory.start.get(label) ?? 0, memory.end.get(label) ?? 0];
    row([label, a.toFixed(0), b.toFixed(0), `${b >= a ? "+" : ""}${(b - a).toFixed(0)}`]);
  }
  lines.push("");

  const live = (users) => users.reduce((n, u) => n + u.live.size, 0);
  lines.push("## Writes and their verification", "");
  lines.push("Counted over the warm-up, the ramp and the soak: every write is verified.", "");
  row(["", ""]);
  row(["---", "---"]);
  row([
    "Single POSTs answered 201",
    `${stats.writes.single201} (${stats.writes.singleRevived} of them revived a tombstone)`,
  ]);
  row([
    "Bulk add operations that succeeded",
    `${stats.writes.bulkAdded} (${stats.writes.bulkRevived} of them revived a tombstone)`,
  ]);
  row(["DELETEs answered 204", stats.writes.deleted]);
  row(["Subscriptions that must be live", `${verification.liveChecked} (sum over users: ${live(usersForReport)})`]);
  row(["Unsubscribed that must answer 404", verification.deadChecked]);
  row(["**Lost writes** (live, but not 200)", `**${verification.lost}**`]);
  row(["Wrong feedUrl", verification.wrongFeedUrl]);
  row(["Unsubscribed but still readable", verification.resurrected]);
  row(["Lists not equal to the live set", `${verification.listMismatches} of ${usersForReport.length} users`]);
  row(["`meta.total` not equal to the live count", verification.totalMismatches]);
  row([
    "Verification requests",
    `${verification.requests} (p50 ${fmt(
      percentile(
        [...verification.ms].sort((a, b) => a - b),
        50,
      ),
    )} ms, ${verification.throttled} retried after 429)`,
  ]);
  lines.push("");
  lines.push("## Errors", "");
  lines.push(
    `5xx responses (warm-up, ramp, soak and verification): ${errors5xx}. Network errors: ${stats.networkErrors}. Unexpected answers: ${stats.unexpected}. ` +
      `Error lines in the wrangler dev log (wrangler errors, Worker error logs): ${logErrors.length}.`,
  );
  if (logErrors.length > 0) lines.push("", "```", ...logErrors.slice(0, 10).map((l) => l.slice(0, 300)), "```");
  if (stats.failures.length > 0) {
    lines.push("", "First problems:", "", "```");
    lines.push(...stats.failures);
    lines.push("```");
  }
  lines.push("");
  lines.push("## Reproduce", "");
  lines.push(
    "```sh",
    "npm run soak                          # 60 s, concurrency from the ramp, writes this file",
    "SOAK_SECONDS=10 npm run soak          # a quick trial",
    "SOAK_CONCURRENCY=16 SOAK_USERS=50 SOAK_SEED=1 SOAK_REPORT=/tmp/soak.md npm run soak",
    "```",
    "",
  );
  writeFileSync(REPORT, lines.join("\n"));
  // The project's formatter lays out the Markdown tables, so the committed report passes `npm run lint`.
  spawnSync(
    process.execPath,
    [join(ROOT, "node_modules", "@biomejs", "biome", "bin", "biome"), "format", "--write", REPORT],
    {
      cwd: ROOT,
      stdio: "ignore",
    },
  );
}

let usersForReport = [];

// ---------------------------------------------------------------------------------------------------------
async function main() {
  const started = new Date();
  console.log(`soak: seed ${SEED}, ${USERS} users, ${SECONDS} s, report ${relative(ROOT, REPORT)}`);
  console.log("soak: applying local migrations and starting wrangler dev ...");
  const secret = await startServer();
  console.log(`soak: wrangler dev is up at ${base}`);

  const now = Math.floor(Date.now() / 1000);
  const users = [];
  for (let i = 0; i < USERS; i++) {
    const id = `soak-user-${String(i).padStart(3, "0")}`;
    users.push(new User(id, await sign({ sub: id, iat: now, exp: now + 4 * 3600 }, secret, "HS256")));
  }
  usersForReport = users;

  const rss = [];
  const sampler = setInterval(() => rss.push({ t: performance.now(), mib: serverUsage().mib }), 1000);
  const loadBefore = os.loadavg();

  try {
    // Warm-up: the first requests compile the worker and open the database.
    stats.phase = "warmup";
    await drive(users, 2, performance.now() + 2000);

    let concurrency = FIXED_CONCURRENCY;
    const ramp = [];
    if (concurrency === undefined) {
      stats.phase = "ramp";
      for (const level of RAMP) {
        const from = performance.now();
        const before = stats.samples.length;
        await drive(users, level, from + RAMP_SECONDS * 1000);
        const window = stats.samples.slice(before);
        const s = summarize(window);
        ramp.push({ concurrency: level, rps: window.length / ((performance.now() - from) / 1000), ...s });
        console.log(`soak: ramp ${level} in flight: ${ramp.at(-1).rps.toFixed(0)} req/s, p99 ${fmt(s.p99)} ms`);
        // Past saturation more requests in flight only add queueing: stop once p99 passes 2 s.
        if (s.p99 > 2000) break;
      }
      const best = Math.max(...ramp.map((r) => r.rps));
      concurrency = ramp.find((r) => r.rps >= 0.9 * best).concurrency;
    }

    console.log(`soak: ${SECONDS} s at ${concurrency} in flight ...`);
    stats.phase = "soak";
    const memoryStart = serverUsage().byProcess;
    const cpuStart = cpuSnapshot();
    const soakStart = cpuStart.t;
    await drive(users, concurrency, soakStart + SECONDS * 1000);
    const cpuEnd = cpuSnapshot();
    const soakEnd = cpuEnd.t;
    const cpu = cpuBetween(cpuStart, cpuEnd);
    const memoryEnd = serverUsage().byProcess;
    const soakCount = stats.samples.filter((s) => s.phase === "soak").length;
    console.log(`soak: ${soakCount} requests, ${(soakCount / ((soakEnd - soakStart) / 1000)).toFixed(0)} req/s`);

    const logErrors = serverErrorLines(server.logPath);
    stats.phase = "verify";
    if (process.env.SOAK_SELF_TEST === "lose-write") await loseOneWrite(users);
    console.log("soak: verifying every write ...");
    const perUser = Math.max(1, Math.floor(concurrency / 4));
    let nextUser = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (nextUser < users.length) await verifyUser(users[nextUser++], perUser);
      }),
    );
    clearInterval(sampler);

    const soak = summarize(stats.samples);
    const failed =
      soak.errors5xx > 0 ||
      stats.networkErrors > 0 ||
      stats.unexpected > 0 ||
      verification.serverErrors > 0 ||
      verification.lost > 0 ||
      verification.wrongFeedUrl > 0 ||
      verification.resurrected > 0 ||
      verification.listMismatches > 0 ||
      verification.totalMismatches > 0;
    const memory = { start: memoryStart, end: memoryEnd };
    report({ started, concurrency, ramp, soakStart, soakEnd, rss, failed, cpu, loadBefore, logErrors, memory });
    console.log(readFileSync(REPORT, "utf8").split("\n").slice(2, 3).join("\n"));
    console.log(`soak: report written to ${relative(ROOT, REPORT)}`);
    return failed ? 1 : 0;
  } finally {
    clearInterval(sampler);
  }
}

async function cleanup() {
  await stopServer();
  if (temp && !KEEP) rmSync(temp, { recursive: true, force: true });
  else if (temp) console.log(`soak: kept ${temp}`);
  temp = undefined;
}

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, async () => {
    console.error(`soak: ${signal}, stopping wrangler dev`);
    await cleanup();
    process.exit(130);
  });
}
process.on("exit", () => {
  // Last resort if something skipped cleanup(): never leave wrangler dev running.
  if (server) {
    try {
      process.kill(-server.child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

let code = 1;
try {
  code = await main();
} catch (error) {
  console.error(`soak: ${error?.stack ?? error}`);
  if (server) console.error(`wrangler dev log (last lines):\n${tail(server.logPath)}`);
  code = 1;
} finally {
  await cleanup();
}
process.exit(code);
