#!/usr/bin/env node
// Soak test (`npm run soak`): `wrangler dev` on loopback under mixed traffic, the Worker isolate's own heap
// and each workerd's resident memory sampled throughout, then proof that nothing was lost.
//
// 1. Applies the local D1 migrations to a fresh temporary directory and starts `wrangler dev` on 127.0.0.1 on
//    a free port with that directory as --persist-to and a random HS256 secret in a temporary --env-file
//    (so the developer's .dev.vars and .wrangler/state are neither read nor touched). Attaches to the
//    Worker's V8 isolate through wrangler's inspector port (Chrome DevTools Protocol) before any traffic.
// 2. Finds the concurrency the machine sustains (a short ramp; skipped when SOAK_CONCURRENCY is set), then
//    drives mixed traffic for SOAK_SECONDS (default 60) from several users: list, get, get of an unknown
//    guid, POST new, POST existing, POST of an unsubscribed guid (revive), DELETE, and bulk adds of 1-20
//    operations (mostly new guids, some already subscribed, some unsubscribed, sometimes one twice).
//    Guids in flight are locked, so a serial model of each user predicts every answer exactly.
//    Every SOAK_SAMPLE_SECONDS (30): the isolate's JS heap after a full garbage collection
//    (Runtime.getHeapUsage after HeapProfiler.collectGarbage) and the RSS of each workerd process; heap
//    snapshots at the start and the end of the verdict window, diffed by constructor and retainer.
//    Progress is printed every 10 s.
// 3. Verifies, reading each user's state once: the user's list, page by page (page[size]=100), must hold
//    exactly the live set (each 201, each successful bulk add, minus later DELETEs) with the right feedUrl,
//    and meta.total must count it; plus one GET of a live and one of an unsubscribed guid per user.
// 4. Writes the report to bench/SOAK.md and the memory chart beside it (bench/SOAK-memory.svg), and exits
//    non-zero on any 5xx, network error, unexpected status, lost or phantom write, or isolate heap growth
//    of 5 % or more over the last 8 minutes of the soak (the last 80 % of a shorter one). 429 (rate
//    limited) is counted, retried in the verification, and is not a failure.
//
// Reference runs (where does the memory go?): SOAK_WORKER=ceiling or d1-floor serves bench/ceiling-worker.ts
// (bare Hono, a constant document) or bench/d1-floor-worker.ts (plus one `SELECT 1` on D1) through the same
// `wrangler dev`, under the same traffic (same requests, concurrency and, with SOAK_RATE, rate), measured the
// same way; answers are not checked and nothing is verified. They write bench/soak-reference-<worker>.json,
// which the app's report reads for its attribution section.
//
// Settings (environment): SOAK_SECONDS (60), SOAK_CONCURRENCY (auto), SOAK_RATE (requests/s cap, none),
// SOAK_USERS (200), SOAK_SEED (random), SOAK_SAMPLE_SECONDS (30), SOAK_WORKER (app | ceiling | d1-floor),
// SOAK_REPORT (bench/SOAK.md; a path ending in .json writes the JSON summary instead), SOAK_KEEP=1 keeps the
// temporary directory (database and wrangler log), SOAK_SELF_TEST=lose-write loses one write on purpose
// before the verification (the run must fail).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { sign } from "hono/jwt";
import { diffSnapshots } from "./lib/heap-snapshot.mjs";
import { connectInspector } from "./lib/inspector.mjs";
import { memoryChart } from "./lib/memory-chart.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const WRANGLER = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const JSONAPI = "application/vnd.api+json";
const ATOMIC = `${JSONAPI};ext="https://jsonapi.org/ext/atomic"`;

const WORKERS = {
  app: { entry: undefined, label: "the app (src/index.ts)" },
  ceiling: { entry: "bench/ceiling-worker.ts", label: "bare Hono (bench/ceiling-worker.ts)" },
  "d1-floor": { entry: "bench/d1-floor-worker.ts", label: "Hono + SELECT 1 on D1 (bench/d1-floor-worker.ts)" },
};
const WORKER = process.env.SOAK_WORKER || "app";
if (!(WORKER in WORKERS)) throw new Error(`SOAK_WORKER must be one of ${Object.keys(WORKERS).join(", ")}`);
// Only the app's answers can be predicted; a reference worker answers everything with one document.
const CHECK = WORKER === "app";
const SECONDS = positiveNumber("SOAK_SECONDS", 60);
const USERS = positiveNumber("SOAK_USERS", 200);
const FIXED_CONCURRENCY = process.env.SOAK_CONCURRENCY ? positiveNumber("SOAK_CONCURRENCY", 1) : undefined;
const SEED = process.env.SOAK_SEED ? Number(process.env.SOAK_SEED) : randomBytes(4).readUInt32LE(0);
const RATE = process.env.SOAK_RATE ? positiveNumber("SOAK_RATE", 1) : undefined;
const SAMPLE_SECONDS = positiveNumber("SOAK_SAMPLE_SECONDS", 30);
const REPORT = process.env.SOAK_REPORT ?? join(ROOT, "bench", CHECK ? "SOAK.md" : `soak-reference-${WORKER}.json`);
const JSON_REPORT = REPORT.endsWith(".json");
const CHART = REPORT.replace(/\.md$/, "-memory.svg");
// The heap verdict: growth over the last 8 minutes (the last 80 % of a shorter soak) below 5 %.
const HEAP_WINDOW_SECONDS = Math.min(480, 0.8 * SECONDS);
const HEAP_GROWTH_LIMIT = 0.05;
const PROGRESS_MS = 10_000;
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
  phaseStart: 0, // performance.now() when the phase began
  errors5xx: 0,
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
  if (status >= 500) {
    stats.errors5xx += 1;
    problem(`${kind} ${method} ${path}: ${status} ${JSON.stringify(json)?.slice(0, 300)}`);
  }
  return { status, json };
}

/** Records an answer the model did not predict (a 429 is allowed: rate limited, nothing done). */
function expectStatus(kind, got, expected, context) {
  // A reference worker: the model moves as if the app had answered (same traffic), failures aside.
  if (!CHECK) return got > 0 && got < 500;
  if (got === expected || got === 429 || got === 0 || got >= 500) return got === expected;
  stats.unexpected += 1;
  problem(`${kind}: expected ${expected}, got ${got} (${context})`);
  return false;
}

function checkResource(kind, resource, guid, feedUrl) {
  if (!CHECK) return true;
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
    if (expectStatus("list", status, 200, `page ${number} size ${size}`) && CHECK) {
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
      if (!CHECK) {
        for (const p of plan) if (p.expect === "add") user.subscribed(p.guid, p.feedUrl);
        return;
      }
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

/**
 * `concurrency` workers send operations until `deadline` (performance.now() ms), at most SOAK_RATE
 * operations a second when it is set (each takes the next free slot of the schedule).
 */
async function drive(users, concurrency, deadline) {
  let nextSlot = performance.now();
  const worker = async () => {
    while (performance.now() < deadline) {
      while (traffic.paused) await traffic.paused;
      if (RATE) {
        const slot = nextSlot;
        nextSlot = Math.max(nextSlot, performance.now() - 1000) + 1000 / RATE;
        if (slot > performance.now()) await sleep(slot - performance.now());
        if (performance.now() >= deadline) break;
      }
      traffic.inFlight += 1;
      try {
        await operations[pickKind()](users[randomInt(users.length)]);
      } finally {
        traffic.inFlight -= 1;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Operations in flight, and a promise while the memory sampler holds the traffic back. */
const traffic = { inFlight: 0, paused: undefined, pausedMs: 0 };

/**
 * Runs `measure` with no request in flight: new operations wait, the running ones finish first. The heap
 * then holds only what the isolate keeps between requests, which is what a leak is made of; sampled in
 * the middle of traffic it also holds whatever the requests in flight happen to hold, which is noise.
 */
async function whileQuiet(measure) {
  const started = performance.now();
  let resume;
  traffic.paused = new Promise((resolve) => {
    resume = resolve;
  });
  try {
    while (traffic.inFlight > 0) await sleep(5);
    return await measure();
  } finally {
    traffic.paused = undefined;
    resume();
    traffic.pausedMs += performance.now() - started;
  }
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
  usersDone: 0,
  liveChecked: 0,
  deadChecked: 0,
  lost: 0,
  phantom: 0,
  resurrected: 0,
  wrongFeedUrl: 0,
  listMismatches: 0,
  totalMismatches: 0,
  getMismatches: 0,
  serverErrors: 0,
  seconds: 0,
};

/** Every page of the user's list (page[size]=100, following links.next): guid -> feedUrl, or undefined. */
async function readList(user) {
  const listed = new Map();
  let path = "/v1/subscriptions?page[size]=100";
  for (let page = 1; path; page++) {
    const { status, json } = await verifyRequest(user, path);
    if (status >= 500) verification.serverErrors += 1;
    if (status !== 200 || !Array.isArray(json?.data)) {
      problem(`list of ${user.id} page ${page}: ${status}`);
      return undefined;
    }
    if (json.meta?.total !== user.live.size) {
      verification.totalMismatches += 1;
      problem(`meta.total of ${user.id}: ${json.meta?.total}, expected ${user.live.size}`);
    }
    for (const resource of json.data) listed.set(resource.id, resource.attributes?.feedUrl);
    const next = json.links?.next;
    path = json.data.length > 0 && next ? next.replace(/^https?:\/\/[^/]+/, "") : undefined;
  }
  return listed;
}

/**
 * One user's state read once and compared with the model in memory: the list holds exactly the live set
 * with the right feedUrls (a live guid missing is a lost write, a listed guid not live a phantom one); one
 * GET of a live and of an unsubscribed guid checks that the single-resource path agrees.
 */
async function verifyUser(user) {
  const listed = await readList(user);
  if (!listed) {
    verification.listMismatches += 1;
    return;
  }
  let differs = false;
  for (const guid of user.live.items) {
    verification.liveChecked += 1;
    if (!listed.has(guid)) {
      verification.lost += 1;
      differs = true;
      problem(`lost write: ${user.id} ${guid} is not listed`);
    } else if (listed.get(guid) !== user.feedUrl.get(guid)) {
      verification.wrongFeedUrl += 1;
      differs = true;
      problem(`wrong feedUrl: ${user.id} ${guid}: ${listed.get(guid)} != ${user.feedUrl.get(guid)}`);
    }
  }
  verification.deadChecked += user.dead.size;
  for (const guid of listed.keys()) {
    if (user.live.index.has(guid)) continue;
    verification.phantom += 1;
    differs = true;
    if (user.dead.index.has(guid)) verification.resurrected += 1;
    problem(
      `phantom write: ${user.id} ${guid} is listed but ${user.dead.index.has(guid) ? "unsubscribed" : "never written"}`,
    );
  }
  if (differs) verification.listMismatches += 1;

  const samples = [
    [user.live.items[0], 200],
    [user.dead.items[0], 404],
  ].filter(([guid]) => guid !== undefined);
  for (const [guid, expected] of samples) {
    const { status, json } = await verifyRequest(user, `/v1/subscriptions/${guid}`);
    if (status >= 500) verification.serverErrors += 1;
    const feedUrlOk = expected === 404 || json?.data?.attributes?.feedUrl === user.feedUrl.get(guid);
    if (status !== expected || !feedUrlOk) {
      verification.getMismatches += 1;
      problem(`GET of ${user.id} ${guid}: ${status}, expected ${expected}${feedUrlOk ? "" : " with its feedUrl"}`);
    }
  }
}

/** Verifies every user, `concurrency` users at a time, printing progress every 10 s. */
async function verifyAll(users, concurrency) {
  const started = performance.now();
  const progress = setInterval(() => {
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `soak: verifying: ${verification.usersDone} of ${users.length} users, ${verification.requests} requests, ${seconds.toFixed(0)} s`,
    );
  }, PROGRESS_MS);
  try {
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < users.length) {
          await verifyUser(users[next++]);
          verification.usersDone += 1;
        }
      }),
    );
  } finally {
    clearInterval(progress);
  }
  verification.seconds = (performance.now() - started) / 1000;
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
      ...(WORKERS[WORKER].entry ? [WORKERS[WORKER].entry] : []),
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
  const started = { child, logPath, inspectorPort, exited: false };
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
// Memory: the Worker isolate's JS heap (through the inspector) and the RSS of each workerd process.
const WORKERD_WORKER = "workerd (the Worker and D1)";
const WORKERD_PROXY = "workerd (dev proxy)";
const MIB = 2 ** 20;

const memory = {
  samples: [], // { t: s since the soak began, requests: soak requests so far, heap?: {usedBeforeGc, used, total} (bytes), rss: { label: MiB } }
  snapshots: {}, // start, end: parsed heap snapshots taken just before the soak and just after it
  error: undefined, // the first inspector failure
};

function workerdRss() {
  const rss = {};
  for (const [label, mib] of serverUsage().byProcess) {
    if (label.startsWith("workerd")) rss[label] = Math.round(mib * 10) / 10;
  }
  return rss;
}

async function sampleMemory(inspector, soakStart) {
  const sample = {
    t: Math.round(performance.now() - soakStart) / 1000,
    requests: stats.samples.filter((s) => s.phase === "soak").length,
    rss: workerdRss(),
  };
  if (inspector && !memory.error) {
    try {
      sample.heap = await inspector.heapUsage();
    } catch (error) {
      memory.error = String(error);
    }
  }
  memory.samples.push(sample);
}

async function snapshot(inspector, name) {
  if (!inspector || memory.error) return;
  try {
    memory.snapshots[name] = await inspector.heapSnapshot();
  } catch (error) {
    memory.error = String(error);
  }
}

/**
 * Samples every SOAK_SAMPLE_SECONDS from the soak's start until `soakDeadline` (the last one is taken by
 * the caller once the traffic stops).
 */
async function sampleDuringSoak(inspector, soakStart, soakDeadline) {
  for (let k = 0; soakStart + k * SAMPLE_SECONDS * 1000 < soakDeadline - 2000; k++) {
    await sleep(soakStart + k * SAMPLE_SECONDS * 1000 - performance.now());
    await whileQuiet(() => sampleMemory(inspector, soakStart));
  }
}

/**
 * Growth of the isolate's heap (after GC) over the verdict window: the Theil-Sen line through the window's
 * samples (slope: the median of the slopes between every two samples; intercept: the median of what is
 * left), its rise over the window divided by its value at the window's start. A steady leak moves every
 * sample; a sample that happens to catch some garbage the collections left moves only a few pairs, and
 * the median ignores them.
 */
function heapGrowth(samples) {
  const from = SECONDS - HEAP_WINDOW_SECONDS - 1;
  const points = samples.filter((s) => s.heap && s.t >= from).map((s) => [s.t, s.heap.used]);
  if (points.length < 3) return undefined;
  const median = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  };
  const slopes = points.flatMap(([x1, y1], i) => points.slice(i + 1).map(([x2, y2]) => (y2 - y1) / (x2 - x1)));
  const slope = median(slopes);
  const intercept = median(points.map(([x, y]) => y - slope * x));
  const [x0, x1] = [points[0][0], points.at(-1)[0]];
  const start = intercept + slope * x0;
  return {
    growth: (slope * (x1 - x0)) / start,
    from: x0,
    to: x1,
    samples: points.length,
    first: points[0][1],
    last: points.at(-1)[1],
    fitStart: start,
    fitEnd: start + slope * (x1 - x0),
  };
}

/** One progress line every 10 s while traffic runs: requests, rate, failures, the latest memory sample. */
function startProgress() {
  let last = { t: performance.now(), n: stats.samples.length };
  return setInterval(() => {
    const now = performance.now();
    const n = stats.samples.length;
    const rate = (n - last.n) / ((now - last.t) / 1000);
    last = { t: now, n };
    const elapsed = ((now - stats.phaseStart) / 1000).toFixed(0);
    const phase = stats.phase === "soak" ? `soak ${elapsed}/${SECONDS} s` : `${stats.phase} ${elapsed} s`;
    const m = memory.samples.at(-1);
    const heap = m?.heap ? `, heap ${(m.heap.used / MIB).toFixed(2)} MiB after GC` : "";
    const rss = workerdRss();
    const mibOf = (label) => rss[label]?.toFixed(0) ?? "-";
    console.log(
      `soak: ${phase}: ${n} requests so far (${rate.toFixed(0)}/s), ${stats.errors5xx} 5xx, ` +
        `${stats.networkErrors} network errors, ${stats.unexpected} unexpected${heap}, ` +
        `RSS ${mibOf(WORKERD_WORKER)} MiB workerd (Worker), ${mibOf(WORKERD_PROXY)} MiB workerd (dev proxy)`,
    );
  }, PROGRESS_MS);
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

const mib = (bytes) => (bytes / MIB).toFixed(2);
const percent = (ratio) => `${ratio >= 0 ? "+" : ""}${(ratio * 100).toFixed(1)} %`;
const signed = (n, digits = 0) => `${n >= 0 ? "+" : ""}${n.toFixed(digits)}`;
const windowName = () => (HEAP_WINDOW_SECONDS === 480 ? "8 minutes" : `${HEAP_WINDOW_SECONDS.toFixed(0)} s`);

function heapGrowthText(growth) {
  if (!growth) return `isolate heap not measured${memory.error ? ` (${memory.error})` : ""}: heap verdict failed`;
  return (
    `isolate heap growth over the last ${windowName()} of the soak: ${percent(growth.growth)} ` +
    `(fitted ${mib(growth.fitStart)} → ${mib(growth.fitEnd)} MiB after GC, ${growth.samples} samples; limit +5 %)`
  );
}

/** The run's pass/fail criteria, each with the figure behind it. */
function verdictsOf(growth) {
  const errors5xx = stats.errors5xx + verification.serverErrors;
  const verdicts = [
    {
      ok: errors5xx === 0 && stats.networkErrors === 0,
      text: `${errors5xx} responses 5xx, ${stats.networkErrors} network errors`,
    },
  ];
  if (CHECK) {
    const v = verification;
    verdicts.push(
      { ok: stats.unexpected === 0, text: `${stats.unexpected} unexpected answers during the traffic` },
      {
        ok: v.lost + v.phantom + v.wrongFeedUrl + v.listMismatches + v.totalMismatches + v.getMismatches === 0,
        text:
          `${v.lost} lost and ${v.phantom} phantom writes (${v.wrongFeedUrl} wrong feedUrls, ` +
          `${v.totalMismatches} wrong meta.total, ${v.getMismatches} GETs disagreeing with the list), ` +
          `verified in ${v.seconds.toFixed(1)} s`,
      },
    );
  }
  verdicts.push({ ok: growth !== undefined && growth.growth < HEAP_GROWTH_LIMIT, text: heapGrowthText(growth) });
  return verdicts;
}

/** The command that reproduces this run: its SOAK_* settings, then `npm run soak`. */
function commandLine() {
  const settings = Object.entries(process.env)
    .filter(([name]) => name.startsWith("SOAK_"))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `${name}=${value}`);
  return [...settings, "npm run soak"].join(" ");
}

function machineText() {
  const cpus = os.cpus();
  return `${cpus.length} × ${cpus[0]?.model ?? "unknown CPU"}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${os.type()} ${os.release()}`;
}

/** What a run measured, in the shape of bench/soak-reference-*.json. */
function runSummary({ started, concurrency, soakStart, soakEnd, cpu, loadBefore, growth, failed }) {
  const seconds = (soakEnd - soakStart) / 1000;
  const requests = stats.samples.filter((s) => s.phase === "soak").length;
  return {
    worker: WORKER,
    label: WORKERS[WORKER].label,
    date: started.toISOString(),
    code: gitDescribe(),
    wrangler: wranglerVersion(),
    node: process.version,
    machine: machineText(),
    loadBefore: loadBefore.map((l) => Number(l.toFixed(2))),
    cpuCores: {
      server: Number(cpu.server.toFixed(2)),
      client: Number(cpu.client.toFixed(2)),
      other: Number(cpu.other.toFixed(2)),
    },
    seconds: Number(seconds.toFixed(1)),
    concurrency,
    rateCap: RATE ?? null,
    requests,
    rps: Number((requests / seconds).toFixed(1)),
    errors5xx: stats.errors5xx,
    networkErrors: stats.networkErrors,
    heapGrowth: growth ? Number(growth.growth.toFixed(4)) : null,
    failed,
    samples: memory.samples,
  };
}

function writeJson(path, data) {
  writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`);
  formatWithBiome(path);
}

/** The reference runs written beside the report (soak-reference-*.json), ceiling first. */
function readReferences() {
  const dir = dirname(REPORT);
  const order = Object.keys(WORKERS);
  return readdirSync(dir)
    .filter((name) => /^soak-reference-.+\.json$/.test(name))
    .map((name) => JSON.parse(readFileSync(join(dir, name), "utf8")))
    .sort((a, b) => order.indexOf(a.worker) - order.indexOf(b.worker));
}

/** The isolate's heap and each workerd's RSS at every sample of the soak. */
function memoryLines(growth) {
  const lines = ["## Memory", ""];
  lines.push(`**${heapGrowthText(growth)}.**`, "");
  lines.push(`![The isolate's heap and the RSS of each workerd process over the soak](${basename(CHART)})`, "");
  lines.push(
    `Every ${SAMPLE_SECONDS} s of the soak, through the inspector port of \`wrangler dev\` (Chrome DevTools Protocol`,
    "over WebSocket, attached before any traffic), with no request in flight (new requests wait, running ones",
    `finish first; ${(traffic.pausedMs / 1000).toFixed(1)} s held back in all): \`Runtime.getHeapUsage\` (heap before GC), then`,
    "`Runtime.discardConsoleEntries` (V8 keeps up to 1000 console messages for an attached inspector, which a",
    "deployed isolate does not), then `HeapProfiler.collectGarbage` and `Runtime.getHeapUsage` again, at least",
    "three times and until a collection frees less than 0.5 % (one full collection leaves garbage that only a",
    "later one frees: after one, the figure jumps by up to 20 % between samples; collections in brackets).",
    "The heap after GC is what the isolate keeps between requests: the series the verdict uses. RSS from",
    "/proc for each workerd process, read just before. The verdict fits a line through the after-GC samples of",
    `the last ${windowName()} (Theil-Sen: the median of the slopes between every two samples, so that a sample`,
    "catching garbage the collections left does not decide) and divides its rise by its value at the start.",
    "",
  );
  const labels = [WORKERD_WORKER, WORKERD_PROXY];
  lines.push(
    `| Time s | Requests | Heap before GC MiB | Heap after GC MiB | ${labels.map((l) => `${l} RSS MiB`).join(" | ")} |`,
    `| ---: | ---: | ---: | ---: | ${labels.map(() => "---:").join(" | ")} |`,
  );
  for (const s of memory.samples) {
    const heap = s.heap ? [mib(s.heap.usedBeforeGc), `${mib(s.heap.used)} (${s.heap.collections})`] : ["-", "-"];
    const rss = labels.map((l) => (s.rss[l] === undefined ? "-" : s.rss[l].toFixed(0)));
    lines.push(`| ${s.t.toFixed(0)} | ${s.requests} | ${heap.join(" | ")} | ${rss.join(" | ")} |`);
  }
  lines.push("");
  return lines;
}

/** The heap snapshots at both ends of the verdict window, diffed by constructor, with what holds new objects. */
function snapshotLines() {
  const { start, end } = memory.snapshots;
  if (!start || !end) return [];
  const diff = diffSnapshots(start, end);
  const kib = (bytes) => (bytes / 1024).toFixed(0);
  const lines = ["### Heap snapshots: what grew during the soak", ""];
  lines.push(
    "Two snapshots (`HeapProfiler.takeHeapSnapshot`, which collects garbage first), just before the soak and",
    "just after it (outside the series above: serialising a snapshot costs both workerd processes memory of",
    `their own): ${kib(diff.totalA)} KiB and ${kib(diff.totalB)} KiB of live objects. The classes that grew most`,
    "(by bytes), and for each, what holds the objects that are new in the second snapshot (holder's class and",
    "property, number of references):",
    "",
  );
  lines.push("| Class | Objects | KiB | Change KiB | New objects held by |", "| --- | ---: | ---: | ---: | --- |");
  for (const r of diff.rows) {
    const name = r.name.replace(/\|/g, "\\|") || "(anonymous)";
    lines.push(
      `| ${name} | ${r.countA} → ${r.countB} | ${kib(r.sizeA)} → ${kib(r.sizeB)} | ${signed((r.sizeB - r.sizeA) / 1024, 1)} | ${r.retainers.join(", ").replace(/\|/g, "\\|") || "-"} |`,
    );
  }
  lines.push("");
  return lines;
}

/** First and last sample of a run's series: [start, end] of `pick(sample)`, or undefined. */
function ends(run, pick) {
  const values = run.samples.map(pick).filter((v) => v !== undefined);
  return values.length >= 2 ? [values[0], values.at(-1)] : undefined;
}

/** The same measurement on the reference workers: which part of the RSS growth is the app's. */
function attributionLines(app, references) {
  const runs = [app, ...references];
  // RSS does not grow in a straight line (it levels off), so runs are compared over the same stretch:
  // from the first sample to the last one within the shortest run.
  const common = Math.min(...runs.map((run) => run.samples.at(-1)?.t ?? 0));
  const lines = ["## Where the RSS growth comes from", ""];
  lines.push(
    "The same measurement on the benchmark's reference workers, served by the same `wrangler dev` under the",
    "same traffic (same requests, same concurrency, the rate capped with `SOAK_RATE`; their answers are not",
    "checked): bare Hono answering a constant document (`bench/ceiling-worker.ts`, no D1, no logging), and",
    "the same plus one `SELECT 1` on D1 per request (`bench/d1-floor-worker.ts`). RSS growth is compared",
    `over the first ${common.toFixed(0)} s of each run (the shortest run's length), since it levels off later.`,
    "",
  );
  if (references.length === 0) {
    lines.push("No reference run beside this report: `SOAK_WORKER=ceiling` and `SOAK_WORKER=d1-floor` write them.", "");
  }
  const growth = (run, pick) => {
    const samples = run.samples.filter((s) => pick(s) !== undefined);
    const last = samples.filter((s) => s.t <= common + 1).at(-1);
    if (samples.length < 2 || !last || last === samples[0]) return { text: "-", rate: "-" };
    const [from, to] = [pick(samples[0]), pick(last)];
    const perMinute = ((to - from) / (last.t - samples[0].t)) * 60;
    return {
      text: `${from.toFixed(0)} → ${to.toFixed(0)} (${signed(to - from)})`,
      rate: signed(perMinute, 1),
      perMinute,
    };
  };
  lines.push(
    `| Worker | Run | Requests | Isolate heap after GC MiB, start → end | workerd (the Worker and D1) RSS MiB, first ${common.toFixed(0)} s | MiB per minute | workerd (dev proxy) RSS MiB, first ${common.toFixed(0)} s | MiB per minute |`,
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
  );
  const rates = new Map();
  for (const run of runs) {
    const heap = ends(run, (s) => (s.heap ? s.heap.used / MIB : undefined));
    const worker = growth(run, (s) => s.rss[WORKERD_WORKER]);
    const proxy = growth(run, (s) => s.rss[WORKERD_PROXY]);
    rates.set(run.worker, { worker, proxy });
    const when = `${run.date.slice(0, 16).replace("T", " ")} UTC, ${run.seconds.toFixed(0)} s at ${run.concurrency} in flight${run.rateCap ? `, ≤ ${run.rateCap}/s` : ""}, ${run.code}`;
    lines.push(
      `| ${run.label} | ${when} | ${run.requests} (${run.rps.toFixed(0)}/s) | ${heap ? `${heap[0].toFixed(2)} → ${heap[1].toFixed(2)}` : "-"} | ${worker.text} | ${worker.rate} | ${proxy.text} | ${proxy.rate} |`,
    );
  }
  lines.push("");
  const appHeap = ends(app, (s) => (s.heap ? s.heap.used / MIB : undefined));
  const appRss = ends(app, (s) => s.rss[WORKERD_WORKER]);
  if (appHeap && appRss) {
    const share = (worker, process) => {
      const x = rates.get(worker)?.[process].perMinute;
      const y = rates.get("app")[process].perMinute;
      return x === undefined || !(y > 0) ? undefined : `${worker} ${signed(x, 1)} (${((x / y) * 100).toFixed(0)} %)`;
    };
    const compare = (process, name) => {
      const others = ["ceiling", "d1-floor"].map((w) => share(w, process)).filter(Boolean);
      const own = rates.get("app")[process].perMinute;
      return others.length && own !== undefined
        ? `${name}: the app ${signed(own, 1)} MiB per minute, ${others.join(", ")}.`
        : "";
    };
    lines.push(
      `Over the whole soak the workerd process that runs the Worker went from ${appRss[0].toFixed(0)} to ${appRss[1].toFixed(0)} MiB`,
      `while the Worker's isolate heap went from ${appHeap[0].toFixed(2)} to ${appHeap[1].toFixed(2)} MiB: the growth is outside the`,
      "app's JS heap (workerd itself, Miniflare's D1 simulator and its SQLite database, which grows with the",
      `soak's data, the inspector). Over the first ${common.toFixed(0)} s, at the same rate and concurrency,`,
      `${compare("worker", "workerd (the Worker and D1)")} ${compare("proxy", "workerd (dev proxy)")}`,
      "",
    );
    const floor = rates.get("d1-floor")?.worker.perMinute;
    if (floor !== undefined && rates.get("app").worker.perMinute > floor) {
      const peak = Math.max(...app.samples.map((s) => s.rss[WORKERD_WORKER] ?? 0));
      lines.push(
        "The app's Worker process grows faster than the D1 floor's: it runs several D1 statements per request",
        `against a database that grows through the soak (${verification.liveChecked + verification.deadChecked} rows stored at the end, tombstones included), where the floor`,
        "runs one `SELECT 1`. That excess is native memory as well (the isolate's heap stays flat), and it",
        `levels off: the process peaks at ${peak.toFixed(0)} MiB and ends at ${appRss[1].toFixed(0)} MiB.`,
        "",
      );
    }
  }
  lines.push(
    "The dev proxy is a second workerd that `wrangler dev` runs in front of the Worker: it grows with bare",
    "Hono, which logs nothing, as with the app, so its growth comes with the requests it forwards. Its",
    "inspector proxy also keeps every message of the Worker's inspector session (one `Runtime.consoleAPICalled`",
    "per `console.log`; the app logs one line per request) until a DevTools client reads them, and posts each",
    "to wrangler's Node.js process; the soak stays attached, so they are read as they come, but under",
    "`npm run dev` with no DevTools open they pile up for as long as it runs. None of this exists in a",
    "deployed Worker.",
    "",
  );
  return lines;
}

const COLORS = { app: "#1f5fbf", ceiling: "#7a7a7a", "d1-floor": "#d9822b" };

/** The SVG: the isolate's heap after GC, and each workerd's RSS, for this run and the references. */
function chartOf(runs) {
  const series = (pick) =>
    runs.map((run) => ({
      label: run.label,
      color: COLORS[run.worker] ?? "#000",
      points: run.samples.flatMap((s) => {
        const y = pick(s);
        return y === undefined ? [] : [[s.t, y]];
      }),
    }));
  return memoryChart({
    title: "Soak: the Worker isolate's JS heap after GC and the RSS of each workerd process, over time",
    xLabel: "seconds since the start of the soak",
    panels: [
      {
        title: "JS heap of the Worker isolate after a full GC",
        unit: "MiB",
        series: series((s) => (s.heap ? s.heap.used / MIB : undefined)),
      },
      {
        title: `RSS of ${WORKERD_WORKER}`,
        unit: "MiB",
        series: series((s) => s.rss[WORKERD_WORKER]),
      },
      { title: `RSS of ${WORKERD_PROXY}`, unit: "MiB", series: series((s) => s.rss[WORKERD_PROXY]) },
    ],
  });
}

function report({
  started,
  concurrency,
  ramp,
  soakStart,
  soakEnd,
  rss,
  failed,
  cpu,
  loadBefore,
  logErrors,
  growth,
  verdicts,
}) {
  const soak = stats.samples.filter((s) => s.phase === "soak");
  const all = summarize(soak);
  const errors5xx = stats.errors5xx + verification.serverErrors;
  const seconds = (soakEnd - soakStart) / 1000;
  const cpus = os.cpus();
  const lines = [];
  const row = (cells) => lines.push(`| ${cells.join(" | ")} |`);
  lines.push("# Soak test", "");
  lines.push(`${failed ? "**FAILED**" : "**Passed**"}:`, "");
  for (const v of verdicts) lines.push(`- ${v.ok ? "ok" : "**FAILED**"}: ${v.text}`);
  lines.push("");
  lines.push(
    "Produced by `npm run soak` (bench/soak.mjs): `wrangler dev` on 127.0.0.1 with a fresh local D1 database",
    "(migrations applied first), HS256 tokens, mixed traffic from several users at a fixed concurrency, the",
    "Worker isolate's JS heap and each workerd process's resident memory sampled throughout, then verification",
    "that every write is there and nothing else is. Timings are client-side, per request (send to last body",
    "byte), from a Node.js client on the same machine as the server.",
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
  row(["Command", `\`${commandLine()}\` on this machine, client and server together`]);
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
  const windowSeconds = seconds >= 300 ? 60 : seconds >= 30 ? 10 : 5;
  for (let from = 0; from < seconds - 0.5; from += windowSeconds) {
    const to = Math.min(seconds, from + windowSeconds);
    const inWindow = soak.filter((s) => s.end >= soakStart + from * 1000 && s.end < soakStart + to * 1000);
    const s = summarize(inWindow);
    const rssInWindow = rss.filter((m) => m.t >= soakStart + from * 1000 && m.t < soakStart + to * 1000);
    const serverMib = rssInWindow.length ? rssInWindow[rssInWindow.length - 1].mib.toFixed(0) : "-";
    row([
      `${from}-${to.toFixed(0)} s`,
      (s.count / (to - from)).toFixed(0),
      fmt(s.p50),
      fmt(s.p99),
      s.errors5xx,
      s.throttled,
      serverMib,
    ]);
  }
  lines.push("");
  lines.push("Server RSS: all processes of `wrangler dev` (wrangler, esbuild, both workerd) together.", "");

  const thisRun = runSummary({ started, concurrency, soakStart, soakEnd, cpu, loadBefore, growth, failed });
  const references = readReferences();
  lines.push(...memoryLines(growth), ...snapshotLines(), ...attributionLines(thisRun, references));
  writeFileSync(CHART, chartOf([thisRun, ...references]));

  lines.push("## Writes and their verification", "");
  lines.push(
    "Counted over the warm-up, the ramp and the soak: every write is verified. Each user's state is read",
    "once, its whole list page by page (`page[size]=100`), and compared with the model in memory; one GET",
    "of a live and one of an unsubscribed subscription per user check that single reads agree.",
    "",
  );
  const live = (users) => users.reduce((n, u) => n + u.live.size, 0);
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
  row(["Unsubscribed that must be absent", verification.deadChecked]);
  row(["**Lost writes** (live, but not listed)", `**${verification.lost}**`]);
  row([
    "**Phantom writes** (listed, but not live)",
    `**${verification.phantom}** (${verification.resurrected} of them unsubscribed)`,
  ]);
  row(["Wrong feedUrl", verification.wrongFeedUrl]);
  row(["Lists not equal to the live set", `${verification.listMismatches} of ${usersForReport.length} users`]);
  row(["`meta.total` not equal to the live count", verification.totalMismatches]);
  row(["GETs disagreeing with the list", verification.getMismatches]);
  row([
    "Verification",
    `**${verification.seconds.toFixed(1)} s**, ${verification.requests} requests (p50 ${fmt(
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
    `SOAK_SECONDS=600 SOAK_CONCURRENCY=${concurrency}${RATE ? ` SOAK_RATE=${RATE}` : ""} npm run soak   # the 10-minute soak`,
    "# The reference runs, at this soak's concurrency and rate, before the soak (its report reads them):",
    `SOAK_WORKER=ceiling SOAK_SECONDS=300 SOAK_CONCURRENCY=${concurrency} SOAK_RATE=${Math.round(all.count / seconds)} npm run soak`,
    `SOAK_WORKER=d1-floor SOAK_SECONDS=300 SOAK_CONCURRENCY=${concurrency} SOAK_RATE=${Math.round(all.count / seconds)} npm run soak`,
    "SOAK_SECONDS=10 npm run soak          # a quick trial",
    "SOAK_CONCURRENCY=16 SOAK_USERS=50 SOAK_SEED=1 SOAK_REPORT=/tmp/soak.md npm run soak",
    "```",
    "",
  );
  writeFileSync(REPORT, lines.join("\n"));
  formatWithBiome(REPORT);
}

/** The project's formatter lays out the written file (Markdown tables, JSON), so it passes `npm run lint`. */
function formatWithBiome(path) {
  spawnSync(
    process.execPath,
    [join(ROOT, "node_modules", "@biomejs", "biome", "bin", "biome"), "format", "--write", path],
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
  console.log(
    `soak: ${WORKERS[WORKER].label}, seed ${SEED}, ${USERS} users, ${SECONDS} s` +
      `${RATE ? `, at most ${RATE} requests/s` : ""}, report ${relative(ROOT, REPORT)}`,
  );
  console.log("soak: applying local migrations and starting wrangler dev ...");
  const secret = await startServer();
  console.log(`soak: wrangler dev is up at ${base}`);
  // Attached before any traffic and for the whole run (see bench/lib/inspector.mjs for why).
  let inspector;
  try {
    const wake = async () => (await fetch(`${base}/ext/link-method`, { signal: AbortSignal.timeout(5000) })).text();
    inspector = await connectInspector(server.inspectorPort, wake);
    const heap = await inspector.heapUsage();
    console.log(`soak: inspector attached; isolate heap ${(heap.used / MIB).toFixed(2)} MiB after GC`);
  } catch (error) {
    memory.error = String(error);
    console.error(`soak: ${error.message}: the isolate's heap is not measured (the run will fail)`);
  }

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
  const progress = startProgress();
  const enter = (phase) => {
    stats.phase = phase;
    stats.phaseStart = performance.now();
  };

  try {
    // Warm-up: the first requests compile the worker and open the database.
    enter("warmup");
    await drive(users, 2, performance.now() + 2000);

    let concurrency = FIXED_CONCURRENCY;
    const ramp = [];
    if (concurrency === undefined) {
      enter("ramp");
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

    // The snapshots bracket the series: serialising one costs both workerd processes memory of their own.
    await snapshot(inspector, "start");
    console.log(`soak: ${SECONDS} s at ${concurrency} in flight ...`);
    enter("soak");
    const cpuStart = cpuSnapshot();
    const soakStart = cpuStart.t;
    const soakDeadline = soakStart + SECONDS * 1000;
    await Promise.all([drive(users, concurrency, soakDeadline), sampleDuringSoak(inspector, soakStart, soakDeadline)]);
    const cpuEnd = cpuSnapshot();
    const soakEnd = cpuEnd.t;
    const cpu = cpuBetween(cpuStart, cpuEnd);
    await sampleMemory(inspector, soakStart);
    await snapshot(inspector, "end");
    clearInterval(progress);
    const soakCount = stats.samples.filter((s) => s.phase === "soak").length;
    console.log(`soak: ${soakCount} requests, ${(soakCount / ((soakEnd - soakStart) / 1000)).toFixed(0)} req/s`);
    const growth = heapGrowth(memory.samples);
    console.log(`soak: ${heapGrowthText(growth)}`);

    const logErrors = serverErrorLines(server.logPath);
    enter("verify");
    if (CHECK) {
      if (process.env.SOAK_SELF_TEST === "lose-write") await loseOneWrite(users);
      console.log(`soak: verifying every write (${users.length} users, ${concurrency} at a time) ...`);
      await verifyAll(users, concurrency);
      console.log(`soak: verified in ${verification.seconds.toFixed(1)} s (${verification.requests} requests)`);
    }
    clearInterval(sampler);

    const verdicts = verdictsOf(growth);
    const failed = verdicts.some((v) => !v.ok);
    const run = { started, concurrency, ramp, soakStart, soakEnd, rss, failed, cpu, loadBefore, logErrors, growth };
    if (JSON_REPORT) writeJson(REPORT, runSummary(run));
    else report({ ...run, verdicts });
    for (const v of verdicts) console.log(`soak: ${v.ok ? "ok  " : "FAIL"} ${v.text}`);
    console.log(`soak: report written to ${relative(ROOT, REPORT)}`);
    return failed ? 1 : 0;
  } finally {
    clearInterval(sampler);
    clearInterval(progress);
    inspector?.close();
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
