#!/usr/bin/env node
// Soak test (`npm run soak`): `wrangler dev` on loopback under mixed traffic, the Worker isolate's own heap
// and each workerd's resident memory sampled throughout, then proof that nothing was lost.
//
// 1. Applies the local D1 migrations to a fresh temporary directory and starts `wrangler dev` on 127.0.0.1 on
//    a free port with that directory as --persist-to and a random HS256 secret in a temporary --env-file
//    (so the developer's .dev.vars and .wrangler/state are neither read nor touched). Attaches to the
//    Worker's V8 isolate through wrangler's inspector port (Chrome DevTools Protocol) before any traffic.
// 2. Mints one app password per user (the gpodder traffic's credentials). Finds the concurrency the machine
//    sustains (a short ramp; skipped when SOAK_CONCURRENCY is set), then drives mixed traffic for
//    SOAK_SECONDS (default 60) from SOAK_USERS users, every endpoint (weights: MIX below): the subscription
//    list, get (and of an unknown guid: 404), a device following the change feed from its stored token
//    (links.next), POST new, existing and reviving, PATCH (feed moves; of an unsubscribed guid: 404),
//    DELETE (of an unsubscribed guid: 404), bulk requests of 1-20 operations mixing subscription and episode
//    add, update and remove, OPML export and import; episode states: POST (create or merge, with device
//    times over three days, some older than what is stored, some retries), PATCH, DELETE, GET, a device
//    following the episode feed; app passwords listed, read, and replaced (mint, then delete the old one);
//    the gpodder API with HTTP Basic, then the sessionid cookie: login, devices, subscriptions GET with
//    `since` (a device following them) and POST, the simple API (json, opml, txt), episode actions POST and
//    GET with `since`; the Nextcloud gPodder Sync paths with HTTP Basic: subscriptions GET with `since` (a device
//    following them whose next `since` is its own clock, as AntennaPod's) and POST, episode actions POST and GET;
//    the account pages, each user signed in through the local OpenID Connect provider of `npm run dev`, one
//    page at a time per person (the subscriptions page, unsubscribe with its form, the progress page, the OPML
//    import form, Create app password, Sign out, the erasure: refused, or done with the user held alone) and
//    Nextcloud's Login Flow v2 (start, grant on the page, poll; the app's sync moves to the new app password,
//    the old one is revoked on the account page; or Deny); the feed rounds: every feedUrl is on a local feed
//    server (bench/lib/soak-feeds.mjs; FEED_FETCH_ALLOW_PRIVATE=true), the Cron Trigger runs every
//    SOAK_ROUND_SECONDS through wrangler's local scheduled route beside the traffic, and the podcasts it fetched
//    are read (the podcast, include=podcast, relationships.podcast, the OPML names, the pages).
//    Guids and episode ids in flight are locked, so a serial model of each user
//    (bench/lib/soak-model.mjs for the rules) predicts every answer and every served state exactly.
//    Every SOAK_SAMPLE_SECONDS (30): the isolate's JS heap after a full garbage collection
//    (Runtime.getHeapUsage after HeapProfiler.collectGarbage), the entries of its bounded caches, the heap
//    after GC again once they are emptied, and the RSS of each workerd process; heap
//    snapshots at the start and the end of the verdict window, diffed by constructor and retainer.
//    Progress is printed every 10 s.
// 3. Verifies, reading each user's state once, against the model of every acknowledged write: the list,
//    page by page (page[size]=100), holds exactly the live set with the right feedUrl, and meta.total counts
//    it; the episode feed from 0 holds exactly the live states (every field) and a tombstone for each
//    forgotten one; one GET of a live and of an unsubscribed subscription and episode; the devices that
//    followed each change feed, after a last sync, equal the model; the gpodder reads (simple API list,
//    since=0, the since-follower, episode actions, devices) and the Nextcloud ones (its since-follower, episode
//    actions) agree with the JSON:API's; the OPML export equals
//    the list; the app passwords are exactly those minted and not deleted; every live subscription's podcast
//    and OPML name are as the rounds left them; the pages of each person signed in agree, and ended sessions
//    open none; a last round, with no traffic, leaves 20 users' list ETags current (304).
// 4. Writes the report to bench/SOAK.md and the memory chart beside it (bench/SOAK-memory.svg), with every
//    status counted per endpoint, and exits non-zero on any 5xx, network error, unexpected status or answer
//    (the 4xx asked for on purpose are named per endpoint), lost or phantom write, follower or gpodder read
//    differing, or isolate heap growth (bounded caches emptied) of 5 % or more over the last 8 minutes of
//    the soak (the last 80 % of a shorter one). 429 (rate limited) is counted, retried in the verification, and is not a failure.
//
// Reference runs (where does the memory go?): SOAK_WORKER=ceiling or d1-floor serves bench/ceiling-worker.ts
// (bare Hono, a constant document) or bench/d1-floor-worker.ts (plus one `SELECT 1` on D1) through the same
// `wrangler dev`, under the same traffic (same requests, concurrency and, with SOAK_RATE, rate), measured the
// same way; answers are not checked and nothing is verified. They write bench/soak-reference-<worker>.json,
// which the app's report reads for its attribution section.
//
// Settings (environment): SOAK_SECONDS (60), SOAK_CONCURRENCY (auto), SOAK_RATE (requests/s cap, none),
// SOAK_USERS (200), SOAK_SEED (random), SOAK_SAMPLE_SECONDS (30), SOAK_WORKER (app | ceiling | d1-floor),
// SOAK_ROUND_SECONDS (5: a feed round every so often), SOAK_RAMP_SECONDS (4 at each level), SOAK_WEIGHTS (kind=weight,... for some kinds),
// SOAK_REPORT (bench/SOAK.md; a path ending in .json writes the JSON summary instead), SOAK_KEEP=1 keeps the
// temporary directory (database and wrangler log), SOAK_SELF_TEST=lose-write loses a subscription and an
// episode state on purpose before the verification, takes a fetched feed for pending in the model and signs a
// person out behind its back (the run must fail, reporting each). `npm run soak -- --help` prints this.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { sign } from "hono/jwt";
import { DEV_CLIENT_ID, devClient, startDevProvider } from "../scripts/dev-oidc-provider.mjs";
import { diffSnapshots } from "./lib/heap-snapshot.mjs";
import { connectInspector } from "./lib/inspector.mjs";
import { memoryChart } from "./lib/memory-chart.mjs";
import { startSoakFeeds } from "./lib/soak-feeds.mjs";
import {
  actionText,
  episodeDifferences,
  feedVariant,
  gpodderActionOf,
  gpodderWrite,
  mergeEpisode,
  newEpisode,
  podcastDifferences,
  podcastGuid,
  podcastName,
  uuidV5,
} from "./lib/soak-model.mjs";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  // This file's opening comment is the documentation: print it.
  const source = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n");
  const comment = source.slice(
    1,
    source.findIndex((line) => line.startsWith("import ")),
  );
  console.log(comment.map((line) => line.replace(/^\/\/ ?/, "")).join("\n"));
  process.exit(0);
}

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
// Seconds at each ramp level (SOAK_RAMP_SECONDS, 4): CI's short soak takes 2 (scripts/ci-soak), every level
// still run, its knee only coarser.
const RAMP_SECONDS = positiveNumber("SOAK_RAMP_SECONDS", 4);
const REQUEST_TIMEOUT_MS = 30_000;
// A feed round (the Cron Trigger, through wrangler's local scheduled route) every this many seconds of the soak.
const ROUND_SECONDS = positiveNumber("SOAK_ROUND_SECONDS", 5);

// Share of each kind of operation in the traffic (weights, per 100): what podcast apps do, mostly reads
// and syncs (change feeds, episode progress, gpodder polls), some writes. Grouped by API in the report.
const MIX = {
  // JSON:API subscriptions
  list: 6,
  get: 6,
  "get-missing": 1,
  "change-feed": 10,
  "post-new": 5,
  "post-existing": 2,
  "post-revive": 1.5,
  patch: 2,
  delete: 3,
  bulk: 4,
  "opml-export": 1.5,
  "opml-import": 1,
  // JSON:API episode states
  "episode-post": 8,
  "episode-patch": 3,
  "episode-delete": 1,
  "episode-get": 4,
  "episode-feed": 9,
  // app passwords
  "app-passwords": 1,
  "app-password-rotate": 0.5,
  // gpodder.net API v2 and simple API
  "gpodder-login": 1,
  "gpodder-devices": 2,
  "gpodder-subscriptions-get": 9,
  "gpodder-subscriptions-post": 3,
  "gpodder-simple": 3,
  "gpodder-episodes-post": 6,
  "gpodder-episodes-get": 5.5,
  // Nextcloud gPodder Sync (AntennaPod's and Kasts' "Nextcloud" option), HTTP Basic with the app password
  "nextcloud-subscriptions-get": 3,
  "nextcloud-subscriptions-post": 1.5,
  "nextcloud-episodes-post": 2,
  "nextcloud-episodes-get": 1.5,
  // The account pages (signed in through the local OpenID Connect provider) and Nextcloud's Login Flow v2
  "account-subscriptions": 1,
  "account-unsubscribe": 0.5,
  "account-progress": 0.5,
  "account-opml-import": 0.3,
  "account-app-password": 0.3,
  "account-signout": 0.2,
  "account-erase": 0.15,
  "login-flow": 0.5,
  "login-flow-deny": 0.2,
  // The podcasts the feed rounds fetched (docs/API.md §18; the rounds themselves run beside the traffic)
  podcast: 2,
};

// SOAK_WEIGHTS=kind=weight,...: other weights for some kinds (a trial of rare ones; 0 leaves a kind out).
for (const pair of (process.env.SOAK_WEIGHTS ?? "").split(",").filter(Boolean)) {
  const [kind, weight] = pair.split("=");
  if (!(kind in MIX) || !(Number(weight) >= 0)) throw new Error(`SOAK_WEIGHTS: no kind ${kind} or no weight ${weight}`);
  MIX[kind] = Number(weight);
}

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
const DEVICE_IDS = ["phone", "laptop", "tablet", "car", "desktop"];
const DEVICE_TYPES = ["mobile", "laptop", "mobile", "other", "desktop"];

class User {
  constructor(id, token) {
    this.id = id;
    this.token = token;
    this.feeds = 0;
    this.active = 0; // operations of this user in flight (drive)
    this.exclusive = false; // an erasure waits for them and holds the user: no operation of it starts meanwhile
    this.touched = new Map(); // guid or episode id -> performance.now() of its last lock or unlock
    this.busy = new Set(); // guids and episode ids with a request in flight
    this.erased();
  }
  /** The state of an account that stores nothing: a new user's, and every user's after an erasure (§15). */
  erased() {
    for (const url of this.feedUrl?.values() ?? []) feedLeft(url);
    this.live = new PickSet(); // guids subscribed now
    this.dead = new PickSet(); // guids unsubscribed (tombstones)
    this.feedUrl = new Map(); // guid -> feedUrl the server must return (a tombstone's: its last one)
    this.urlGuid = new Map(); // feedUrl -> the guid that has it now, live or tombstone
    this.formerUrls = new Set(); // feedUrls a subscription left (a move, a revival under another URL)
    this.episodes = new Map(); // episode id -> state (bench/lib/soak-model.mjs), live or forgotten
    this.liveEpisodes = new PickSet();
    this.forgottenEpisodes = new PickSet(); // tombstones
    this.gpodderEpisodes = new Map(); // feed guid -> [{ id, name, guid }] written through gpodder
    // A device following each change feed with its stored token and local copy (busy: one sync at a time).
    this.subscriptionDevice = { token: "0", items: new Map(), busy: false };
    this.episodeDevice = { token: "0", items: new Map(), busy: false };
    // gpodder: the current app password, the session cookie, the devices, a device following `since`.
    this.gpodder = { id: "", username: "", password: "", cookie: undefined, inFlight: 0, rotating: false };
    this.appPasswords = new Set(); // ids that must exist
    this.devices = new Set(); // gpodder device ids that must exist
    this.gpodderDevice = { since: 0, urls: new Set(), busy: false };
    // AntennaPod on the Nextcloud paths: a device following the subscription changes from its own clock.
    this.nextcloudDevice = { since: 0, urls: new Set(), busy: false };
    // The person's browser on the account pages: its cookies by origin (the worker's, the identity provider's);
    // busy while a page operation uses it (one at a time, as a person does); `ended`: a session cookie the server
    // must no longer accept (after Sign out or the erasure), kept to prove it.
    this.browser = { jar: new Map(), antiForgery: undefined, signingIn: undefined, busy: false, ended: undefined };
  }
  /** A new feed of the soak's feed server: mostly a feed, some answering 503 (failing) or 410 (gone). */
  newFeedUrl() {
    this.feeds += 1;
    stats.feedUrls += 1;
    const r = random();
    const variant = r < 0.04 ? "-gone" : r < 0.1 ? "-failing" : "";
    return `${feedServer.origin}/soak/${this.id}/show-${this.feeds}-${randomInt(1e9)}${variant}.xml`;
  }
  setFeedUrl(guid, feedUrl) {
    const old = this.feedUrl.get(guid);
    if (old === feedUrl) return;
    if (old !== undefined) {
      if (this.urlGuid.get(old) === guid) this.urlGuid.delete(old);
      this.formerUrls.add(old);
      feedLeft(old);
    }
    this.feedUrl.set(guid, feedUrl);
    this.urlGuid.set(feedUrl, guid);
  }
  subscribed(guid, feedUrl) {
    this.dead.delete(guid);
    this.live.add(guid);
    this.setFeedUrl(guid, feedUrl);
  }
  unsubscribed(guid) {
    this.live.delete(guid);
    this.dead.add(guid);
    feedLeft(this.feedUrl.get(guid));
  }
  /** Applies an episode write (create or merge); answers whether it created (the id was new or forgotten). */
  episodeWritten(id, feedGuid, write) {
    let state = this.episodes.get(id);
    const created = !state || !this.liveEpisodes.index.has(id);
    if (created) state = newEpisode(id, feedGuid);
    this.episodes.set(id, mergeEpisode(state, write));
    this.forgottenEpisodes.delete(id);
    this.liveEpisodes.add(id);
    return created;
  }
  episodeForgotten(id) {
    this.liveEpisodes.delete(id);
    this.forgottenEpisodes.add(id);
  }
  /** Whether nothing touched `id` since `since` (performance.now()): its model state held all along. */
  stableSince(id, since) {
    return !this.busy.has(id) && (this.touched.get(id) ?? Number.NEGATIVE_INFINITY) < since;
  }
}

/**
 * A device's clock for episode changes: times over the last three days (so that some writes arrive
 * older than what is stored, as an offline device's late upload does), sometimes exactly the stored one
 * (a retry, which must change nothing). Milliseconds; the gpodder API's whole seconds when `seconds`.
 */
function deviceTime(stored, seconds = false) {
  if (stored !== null && stored !== undefined && random() < 0.1 && (!seconds || stored % 1000 === 0)) return stored;
  const ms = Date.now() - 60_000 - randomInt(3 * 24 * 3600 * 1000);
  return seconds ? ms - (ms % 1000) : ms;
}

/** RFC 3339 for `ms`, in UTC or (a third of the time) with an offset, as devices send it. */
function rfc3339(ms) {
  if (random() < 0.67) return new Date(ms).toISOString();
  const offset = [-300, 60, 330][randomInt(3)];
  const local = new Date(ms + offset * 60_000).toISOString().slice(0, 23);
  const sign = offset < 0 ? "-" : "+";
  const abs = Math.abs(offset);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}

// ---------------------------------------------------------------------------------------------------------
// Measurements.
const stats = {
  phase: "ramp",
  phaseStart: 0, // performance.now() when the phase began
  errors5xx: 0,
  samples: [], // { phase, kind, endpoint, ms, end, status }
  networkErrors: 0,
  unexpected: 0,
  failures: [], // first problems, for the report
  writes: {
    single201: 0,
    singleRevived: 0,
    bulkAdded: 0,
    bulkRevived: 0,
    deleted: 0,
    moved: 0,
    bulkMoved: 0,
    bulkRemoved: 0,
    opmlImported: 0,
    episodesCreated: 0,
    episodesMerged: 0,
    episodesForgotten: 0,
    bulkEpisodeWrites: 0,
    bulkEpisodesForgotten: 0,
    gpodderSubscribed: 0,
    gpodderUnsubscribed: 0,
    gpodderEpisodeWrites: 0,
    gpodderDevices: 0,
    appPasswordsMinted: 0,
    appPasswordsDeleted: 0,
    pageUnsubscribed: 0,
    pageImported: 0,
    signOuts: 0,
    erasures: 0,
    erasuresRefused: 0,
    flowsDenied: 0,
  },
  inline: new Map(), // "op type -> outcome" -> count, for bulk results
  feedUrls: 0, // feed URLs the traffic made up (each on the feed server)
  issuerTooSlow: 0, // sign-in answers 503 (the identity provider too slow for the worker), signed in again
};
let base = "";
let feedServer; // bench/lib/soak-feeds.mjs's startSoakFeeds(): every soak feed URL is one of its

/**
 * The feed rounds (docs/API.md §18): the URLs the feed server answered in rounds that have ended (what the model
 * predicts podcasts from), and the rounds running (`epoch` moves at each start and end), so that a read that
 * overlapped one accepts either side of it for a URL not yet known fetched.
 */
const rounds = {
  fetched: new Set(),
  active: 0,
  epoch: 0,
  count: 0,
  fetches: 0,
  forgettable: new Set(),
  answeredIn: new Map(), // url -> the rounds (count@end) in which the feed server answered it: diagnostics
};
const roundMark = () => ({ epoch: rounds.epoch, active: rounds.active });
/**
 * Whether a read of `url`'s podcast may show either side of a round: it overlapped one, or the URL is
 * `forgettable`: a subscription left it (before a round fetched it or after), and a round forgets a feed no active
 * subscription names (its row then comes back pending with the next subscription), which the model cannot time.
 * Such a URL stays forgettable; it is no longer counted fetched until a round fetches it again.
 */
const roundUncertain = (mark, url) =>
  mark.active > 0 || mark.epoch !== rounds.epoch || (url !== undefined && rounds.forgettable.has(url));
/** A subscription left `url` (an unsubscribe, a move, an erasure): see roundUncertain. */
function feedLeft(url) {
  if (url === undefined) return;
  rounds.fetched.delete(url);
  rounds.forgettable.add(url);
}

function problem(text) {
  if (stats.failures.length < 25) stats.failures.push(text);
}

const countInline = (name) => stats.inline.set(name, (stats.inline.get(name) ?? 0) + 1);

/** The Authorization or Cookie header for `auth`: bearer (the JWT), basic (the app password), cookie. */
function authHeaders(user, auth) {
  if (auth === "bearer") return { Authorization: `Bearer ${user.token}` };
  if (auth === "cookie" && user.gpodder.cookie) return { Cookie: `sessionid=${user.gpodder.cookie}` };
  const basic = Buffer.from(`${user.gpodder.username}:${user.gpodder.password}`).toString("base64");
  return { Authorization: `Basic ${basic}` };
}

/**
 * One HTTP request, timed and counted under `endpoint`; the body is read (parsed when it is JSON). `body`
 * is sent as JSON unless it is a string. gpodder answers' session cookies are kept for the next request.
 */
async function request(kind, endpoint, user, method, path, options = {}) {
  const { body, contentType, accept = JSONAPI, auth = "bearer" } = options;
  const headers = { ...authHeaders(user, auth), Accept: accept };
  if (contentType) headers["Content-Type"] = contentType;
  const started = performance.now();
  let status = 0;
  let json;
  let text;
  try {
    const response = await fetch(base + path, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    status = response.status;
    text = await response.text();
    const type = response.headers.get("Content-Type") ?? "";
    json = text && /json/.test(type) ? JSON.parse(text) : undefined;
    if (auth !== "bearer" && status === 200) {
      const cookie = response.headers
        .getSetCookie()
        .map((line) => /^sessionid=([^;]*)/.exec(line)?.[1])
        .find(Boolean);
      if (cookie) user.gpodder.cookie = cookie;
    }
  } catch (error) {
    stats.networkErrors += 1;
    problem(`${kind} ${method} ${path}: ${status ? `status ${status}, unreadable body` : "network error"}: ${error}`);
  }
  const ended = performance.now();
  if (stats.phase !== "verify") {
    stats.samples.push({ phase: stats.phase, kind, endpoint, ms: ended - started, end: ended, status });
  }
  if (status >= 500) {
    stats.errors5xx += 1;
    problem(`${kind} ${method} ${path}: ${status} ${(text ?? "").slice(0, 300)}`);
  }
  return { status, json, text };
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

/** Counts a served answer that differs from the model's prediction (nothing when `differences` is empty). */
function expectSame(kind, differences, context) {
  if (!CHECK || differences.length === 0) return true;
  stats.unexpected += 1;
  problem(`${kind}: ${context}: ${differences.join("; ").slice(0, 1500)}`);
  return false;
}

function checkResource(kind, resource, guid, feedUrl) {
  if (!CHECK) return true;
  const ok =
    resource?.type === "subscription" &&
    resource.id === guid &&
    resource.attributes?.feedUrl === feedUrl &&
    typeof resource.attributes?.userSubscribedAt === "string" &&
    // Every subscription names its podcast (§18), whose id is the subscription's guid.
    resource.relationships?.podcast?.data?.type === "podcast" &&
    resource.relationships.podcast.data.id === guid &&
    stripOrigin(resource.relationships.podcast.links?.related) === `/v1/subscriptions/${guid}/podcast`;
  if (!ok) {
    stats.unexpected += 1;
    problem(`${kind}: resource ${JSON.stringify(resource)?.slice(0, 300)} is not ${guid} with ${feedUrl}`);
  }
  return ok;
}

const subscriptionBody = (guid, feedUrl) => ({ data: { type: "subscription", id: guid, attributes: { feedUrl } } });

/** An episode write's JSON:API attributes (changedAt as a device sends it). */
function episodeAttributes(write) {
  const attributes = {};
  for (const name of ["mediaUrl", "itemGuid", "position", "duration", "played"]) {
    if (write[name] !== undefined) attributes[name] = write[name];
  }
  attributes.changedAt = rfc3339(write.changedAt);
  return attributes;
}

const episodeData = (id, feedGuid, write) => ({
  type: "episode",
  id,
  attributes: episodeAttributes(write),
  relationships: { subscription: { data: { type: "subscription", id: feedGuid } } },
});

/**
 * A write a device makes to an episode: a pause (position), finished (played, position at the end), or
 * marked unplayed, with the episode's facts (mediaUrl always to create, duration sometimes).
 */
function planEpisodeWrite(state, { create }) {
  const write = {};
  const r = random();
  if (r < 0.6) write.position = randomInt(3600);
  else if (r < 0.85) {
    write.played = true;
    write.position = 1800 + randomInt(3600);
  } else write.played = false;
  write.changedAt = deviceTime(write.position !== undefined ? state?.positionChangedAt : state?.playedChangedAt);
  if (create || random() < 0.2) write.mediaUrl = state?.mediaUrl ?? `https://cdn.soak.test/ep-${randomUUID()}.mp3`;
  if (create && random() < 0.5) write.itemGuid = `item-${randomUUID()}`;
  if (random() < 0.4) write.duration = 1800 + randomInt(5400);
  return write;
}

/** The feed an app's new episode belongs to: mostly one of the user's subscriptions, else any podcast. */
function feedForNewEpisode(user) {
  const all = [...user.live.items, ...user.dead.items];
  return all.length > 0 && random() < 0.8 ? all[randomInt(all.length)] : randomUUID();
}

/** An episode id with no request in flight: live (or, sometimes, forgotten), or undefined. */
function pickEpisode(user, { forgotten = 0 } = {}) {
  if (random() < forgotten) return user.forgottenEpisodes.pick(user.busy);
  return user.liveEpisodes.pick(user.busy);
}

// ---------------------------------------------------------------------------------------------------------
// The operations. Each locks the guids and episode ids it touches until its answer has updated the model.
async function withLocks(user, ids, run) {
  const now = performance.now();
  for (const id of ids) {
    user.busy.add(id);
    user.touched.set(id, now);
  }
  try {
    return await run();
  } finally {
    const end = performance.now();
    for (const id of ids) {
      user.busy.delete(id);
      user.touched.set(id, end);
    }
  }
}

/** Holds a user's gpodder traffic while its app password is replaced (and the other way round). */
async function asGpodder(user, fallback, run) {
  if (user.gpodder.rotating || !user.gpodder.username) return operations[fallback](user);
  user.gpodder.inFlight += 1;
  try {
    return await run();
  } finally {
    user.gpodder.inFlight -= 1;
  }
}

/** The auth a gpodder app uses: the session cookie once it has one (mostly), else HTTP Basic. */
const gpodderAuth = (user) => (user.gpodder.cookie && random() < 0.85 ? "cookie" : "basic");

/** Whether the list served (guid -> feedUrl) agrees with the model on every guid nothing touched since `since`. */
function stableDifferences(user, listed, since) {
  const differences = [];
  for (const guid of user.live.items) {
    if (!user.stableSince(guid, since)) continue;
    if (listed.get(guid) !== user.feedUrl.get(guid)) differences.push(`${guid}: ${listed.get(guid)} (live)`);
  }
  for (const guid of listed.keys()) {
    if (!user.live.index.has(guid) && user.stableSince(guid, since) && user.feedUrl.has(guid)) {
      differences.push(`${guid} listed but unsubscribed`);
    }
  }
  return differences;
}

/** The outlines of an OPML export: guid -> xmlUrl, in order; undefined when the document is cut. */
function opmlOutlines(text) {
  if (!text?.trimEnd().endsWith("</opml>")) return undefined;
  const outlines = new Map();
  for (const [, attributes] of text.matchAll(/<outline\b([^>]*)\/?>/g)) {
    const attribute = (name) => new RegExp(`\\b${name}="([^"]*)"`).exec(attributes)?.[1];
    const xmlText = (value) =>
      value
        ?.replaceAll("&quot;", '"')
        .replaceAll("&apos;", "'")
        .replaceAll("&lt;", "<")
        .replaceAll("&gt;", ">")
        .replaceAll("&amp;", "&");
    outlines.set(attribute("guid"), xmlText(attribute("xmlUrl")));
  }
  return outlines;
}

/** An OPML file of 1-10 outlines with guids: new feeds, some unsubscribed (revived), some live (kept). */
function planOpmlImport(user) {
  const outlines = [];
  for (let i = 1 + randomInt(10); i > 0; i--) {
    const r = random();
    const guid =
      (r < 0.15 ? user.live.pick(user.busy) : r < 0.3 ? user.dead.pick(user.busy) : undefined) ?? randomUUID();
    if (outlines.some((o) => o.guid === guid)) continue;
    outlines.push({ guid, feedUrl: user.newFeedUrl() });
  }
  return outlines;
}

const opmlDocument = (outlines) =>
  [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<opml version="2.0"><head><title>soak</title></head><body>',
    ...outlines.map((o) => `<outline type="rss" text="show" xmlUrl="${o.feedUrl}" guid="${o.guid}"/>`),
    "</body></opml>",
  ].join("\n");

/** The outlines' names (`text`, which `title` repeats) of an OPML export: guid -> name. */
function opmlNames(text) {
  const names = new Map();
  for (const [, attributes] of (text ?? "").matchAll(/<outline\b([^>]*)\/?>/g)) {
    const attribute = (name) => new RegExp(`\\b${name}="([^"]*)"`).exec(attributes)?.[1];
    const name = xmlText(attribute("text"));
    names.set(attribute("guid"), name === xmlText(attribute("title")) ? name : `${name} (title ${attribute("title")})`);
  }
  return names;
}

/** Markup text with the five predefined entities (and `&#39;`, as JSX writes it) decoded. */
function xmlText(value) {
  return value
    ?.replaceAll("&quot;", '"')
    .replaceAll("&apos;", "'")
    .replaceAll("&#39;", "'")
    .replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">")
    .replaceAll("&amp;", "&");
}

/** Whether a name shown for a feed (an OPML outline, a page row) is its podcast's, by the rounds that ended. */
function nameOk(url, shown, mark) {
  if (shown === podcastName(url, rounds.fetched)) return true;
  return roundUncertain(mark, url) && !rounds.fetched.has(url) && shown === podcastName(url, new Set([url]));
}

/** The names shown (guid -> name) that differ from the model's, on the subscriptions nothing touched since `since`. */
function nameDifferences(user, names, since, mark) {
  const differences = [];
  for (const [guid, shown] of names) {
    if (!user.live.index.has(guid) || !user.stableSince(guid, since)) continue;
    const url = user.feedUrl.get(guid);
    if (!nameOk(url, shown, mark)) differences.push(`${guid} named ${JSON.stringify(shown)}, not as ${url}'s podcast`);
  }
  return differences;
}

/**
 * An answer with `include=podcast` (§18): `included` holds one podcast per subscription of `data`, in its order,
 * each as the model predicts for the subscriptions nothing touched since `since`.
 */
function includedDifferences(user, json, since, mark) {
  const data = Array.isArray(json?.data) ? json.data : [json?.data];
  const included = json?.included;
  if (!Array.isArray(included) || included.map((p) => p?.id).join() !== data.map((r) => r?.id).join()) {
    return [`included ${JSON.stringify(included)?.slice(0, 200)} is not one podcast per subscription`];
  }
  const differences = [];
  for (const podcast of included) {
    if (podcast.type !== "podcast") differences.push(`included ${podcast.id} of type ${podcast.type}`);
    if (!user.live.index.has(podcast.id) || !user.stableSince(podcast.id, since)) continue;
    const url = user.feedUrl.get(podcast.id);
    const found = podcastDifferences(podcast.attributes, url, rounds.fetched, roundUncertain(mark, url));
    if (found.length > 0) {
      // What the model saw of this URL, to tell a model's slip from the server's (the rounds that fetched it, and
      // the URL the server's own subscription has).
      const served = data.find((r) => r?.id === podcast.id)?.attributes?.feedUrl;
      const seen = rounds.answeredIn.get(url) ?? [];
      found.push(
        `(served feedUrl ${served === url ? "the same" : JSON.stringify(served)}; fetched in rounds ${seen.join(",")} of ${rounds.count}; guid last touched ${user.touched.get(podcast.id)?.toFixed(0)} ms, read from ${since.toFixed(0)} ms, mark ${JSON.stringify(mark)}, epoch now ${rounds.epoch})`,
      );
    }
    differences.push(...found);
  }
  return differences;
}

/** The rows of the subscriptions page: guid, the title shown (or null), the feed URL, whether it says gone. */
function subscriptionRows(html) {
  const list = /<ul class="feeds">([\s\S]*?)<\/ul>/.exec(html ?? "")?.[1] ?? "";
  return list
    .split("<li>")
    .slice(1)
    .map((row) => ({
      guid: /name="guid" value="([^"]+)"/.exec(row)?.[1],
      title: xmlText(/<span class="title">([^<]*)<\/span>/.exec(row)?.[1]) ?? null,
      url: xmlText(/<span class="url">([^<]*)<\/span>/.exec(row)?.[1]),
      gone: row.includes('<span class="gone">'),
    }));
}

/**
 * A subscriptions page against the model: no row of a guid that is not subscribed; each row nothing touched since
 * `since` with its feed URL, named by its podcast's title once a round fetched it, and "No longer available" when
 * that podcast is gone.
 */
function subscriptionRowDifferences(user, html, since, mark) {
  const differences = [];
  for (const row of subscriptionRows(html)) {
    if (!user.stableSince(row.guid, since)) continue;
    if (!user.live.index.has(row.guid)) {
      differences.push(`${row.guid} listed but not subscribed`);
      continue;
    }
    const url = user.feedUrl.get(row.guid);
    if (row.url !== url) differences.push(`${row.guid} shows ${row.url}, not ${url}`);
    if (!nameOk(url, row.title ?? url, mark)) differences.push(`${row.guid} titled ${JSON.stringify(row.title)}`);
    const gone = rounds.fetched.has(url) && feedVariant(url) === "gone";
    if (row.gone !== gone && !(roundUncertain(mark, url) && !rounds.fetched.has(url))) {
      differences.push(`${row.guid} ${row.gone ? "says" : "does not say"} "No longer available"`);
    }
  }
  return differences;
}

/** The listening-progress page's rows: the media URL, the podcast named ("from ..."), played or not. */
function progressRows(html) {
  const list = /<ol class="episodes">([\s\S]*?)<\/ol>/.exec(html ?? "")?.[1] ?? "";
  return list
    .split("<li>")
    .slice(1)
    .map((row) => ({
      mediaUrl: xmlText(/<span class="url">([^<]*)<\/span>/.exec(row)?.[1]),
      from: xmlText(/<span class="feed">from ([^<]*)<\/span>/.exec(row)?.[1]) ?? null,
      played: row.includes('<span class="played">'),
    }));
}

/**
 * The progress page against the model: at most 50 rows, each a live state (by its media URL) with its played
 * flag, named after its subscription's podcast (its title once fetched, else its feed URL; none without one),
 * for the states nothing touched since `since`. Answers the differences.
 */
function progressDifferences(user, html, since, mark) {
  const byMediaUrl = new Map();
  for (const id of user.episodes.keys()) byMediaUrl.set(user.episodes.get(id).mediaUrl, id);
  const rows = progressRows(html);
  const differences = rows.length > 50 ? [`${rows.length} rows`] : [];
  for (const row of rows) {
    const id = byMediaUrl.get(row.mediaUrl);
    if (id === undefined || !user.stableSince(id, since)) continue;
    const state = user.episodes.get(id);
    if (!user.liveEpisodes.index.has(id)) {
      differences.push(`${id} shown but forgotten`);
      continue;
    }
    if (row.played !== state.played) differences.push(`${id} ${row.played ? "played" : "not played"}`);
    const url = user.feedUrl.get(state.feedGuid);
    if (!user.stableSince(state.feedGuid, since)) continue;
    const fromOk = url === undefined ? row.from === null : row.from !== null && nameOk(url, row.from, mark);
    if (!fromOk) differences.push(`${id} from ${JSON.stringify(row.from)}, its feed ${url}`);
  }
  return differences;
}

/**
 * Runs a page operation in the person's browser, one at a time (a second one meanwhile runs `fallback` instead):
 * a sign-out or an erasure never pulls the session from under another page.
 */
async function inBrowser(user, run, fallback = "list") {
  if (user.browser.busy) return operations[fallback](user);
  const browser = user.browser;
  browser.busy = true;
  try {
    return await run();
  } finally {
    browser.busy = false;
  }
}

/** Applies one page of a change feed to a device's copy: guid -> feedUrl (subscriptions) or state (episodes). */
function applySubscriptionChanges(device, data) {
  for (const item of data) {
    if (item.attributes?.userUnsubscribedAt === null) device.items.set(item.id, item.attributes.feedUrl);
    else device.items.delete(item.id);
  }
}

function applyEpisodeChanges(device, data) {
  for (const item of data) {
    if (item.attributes?.deletedAt === null) device.items.set(item.id, item);
    else device.items.delete(item.id);
  }
}

const stripOrigin = (link) => link?.replace(/^https?:\/\/[^/]+/, "");

/**
 * Follows a change feed from the device's stored token, page by page (links.next) until it is null,
 * storing meta.syncToken after each page; `fetchPage` answers { status, json }.
 */
async function followChangeFeed(device, resource, size, fetchPage, apply) {
  let path = `/v1/${resource}?filter[since]=${device.token}&page[size]=${size}`;
  for (let page = 0; path && page < 1000; page++) {
    const { status, json } = await fetchPage(path);
    if (status !== 200) return status;
    if (!Array.isArray(json?.data) || typeof json?.meta?.syncToken !== "string") {
      if (!CHECK) return status;
      stats.unexpected += 1;
      problem(`${resource} change feed: malformed page ${JSON.stringify(json)?.slice(0, 300)}`);
      return status;
    }
    apply(device, json.data);
    device.token = json.meta.syncToken;
    path = stripOrigin(json.links?.next ?? undefined);
  }
  return 200;
}

const E = {
  list: "GET /v1/subscriptions?page[number]",
  feed: "GET /v1/subscriptions?filter[since]",
  post: "POST /v1/subscriptions",
  get: "GET /v1/subscriptions/{guid}",
  patch: "PATCH /v1/subscriptions/{guid}",
  delete: "DELETE /v1/subscriptions/{guid}",
  bulk: "POST /v1/operations",
  opmlExport: "GET /v1/subscriptions.opml",
  opmlImport: "POST /v1/subscriptions.opml",
  episodePost: "POST /v1/episodes",
  episodePatch: "PATCH /v1/episodes/{id}",
  episodeDelete: "DELETE /v1/episodes/{id}",
  episodeGet: "GET /v1/episodes/{id}",
  episodeFeed: "GET /v1/episodes?filter[since]",
  appPasswordPost: "POST /v1/app-passwords",
  appPasswordList: "GET /v1/app-passwords",
  appPasswordGet: "GET /v1/app-passwords/{id}",
  appPasswordDelete: "DELETE /v1/app-passwords/{id}",
  login: "POST /api/2/auth/{username}/login.json",
  devicePost: "POST /api/2/devices/{username}/{device}.json",
  deviceList: "GET /api/2/devices/{username}.json",
  gpodderSubsGet: "GET /api/2/subscriptions/{username}/{device}.json?since",
  gpodderSubsPost: "POST /api/2/subscriptions/{username}/{device}.json",
  simpleJson: "GET /subscriptions/{username}.json",
  simpleOpml: "GET /subscriptions/{username}.opml",
  simpleDeviceTxt: "GET /subscriptions/{username}/{device}.txt",
  gpodderEpisodesPost: "POST /api/2/episodes/{username}.json",
  gpodderEpisodesGet: "GET /api/2/episodes/{username}.json?since",
  nextcloudSubsGet: "GET /index.php/apps/gpoddersync/subscriptions?since",
  nextcloudSubsPost: "POST /index.php/apps/gpoddersync/subscription_change/create",
  nextcloudEpisodesPost: "POST /index.php/apps/gpoddersync/episode_action/create",
  nextcloudEpisodesGet: "GET /index.php/apps/gpoddersync/episode_action?since",
  accountSignIn: "GET /account/signin, /account/callback (sign-in)",
  accountPage: "GET /account",
  accountSubscriptions: "GET /account/subscriptions",
  accountUnsubscribe: "POST /account/subscriptions/unsubscribe",
  accountProgress: "GET /account/progress",
  accountOpmlImport: "POST /account/opml",
  accountAppPassword: "POST /account/app-passwords",
  accountRevoke: "POST /account/app-passwords/revoke",
  accountSignOut: "POST /account/signout",
  accountEnded: "GET /account, /account/subscriptions (an ended session)",
  accountErasePage: "GET /account/erase",
  accountErase: "POST /account/erase",
  loginFlowStart: "POST /index.php/login/v2",
  loginFlowPage: "GET /index.php/login/v2/flow/{id}",
  loginFlowGrant: "POST /index.php/login/v2/flow/{id}/grant",
  loginFlowDeny: "POST /index.php/login/v2/flow/{id}/deny",
  loginFlowPoll: "POST /index.php/login/v2/poll",
  podcast: "GET /v1/subscriptions/{guid}/podcast",
  feedRound: "GET /cdn-cgi/local/scheduled (the Cron Trigger: retention and a feed round)",
};

/** The Nextcloud gPodder Sync app's paths (docs/API.md §17). */
const NEXTCLOUD = "/index.php/apps/gpoddersync";

/** The 4xx answers the traffic asks for on purpose, by endpoint; any other 4xx is a failure. */
const EXPECTED_4XX = {
  [E.get]: "404: a guid never subscribed (get-missing)",
  [E.patch]: "404: a move of an unsubscribed guid",
  [E.delete]: "404: a DELETE of an unsubscribed guid",
  [E.episodeGet]: "404: an id never written, or forgotten",
  [E.episodePatch]: "404: a merge into a forgotten state",
  [E.episodeDelete]: "404: a DELETE of a forgotten state",
  [E.loginFlowPoll]: "404: a poll before the grant, a second one after it, one after a Deny",
  [E.loginFlowPage]: "404: the link of a denied flow",
  [E.podcast]: "404: the podcast of an unsubscribed guid",
  [E.login]: "401: the app password of an erased account",
  [E.feed]: "410: a device's token from before an erasure",
  [E.episodeFeed]: "410: a device's token from before an erasure",
  [E.accountErase]: "400: a confirmation that does not say erase (nothing erased)",
};

const operations = {
  async list(user) {
    const size = [10, 25, 100][randomInt(3)];
    const pages = Math.max(1, Math.ceil(user.live.size / size));
    const number = 1 + randomInt(pages + 1);
    // Half the time with the podcasts (§18): each one of a subscription nothing touched meanwhile as predicted.
    const include = random() < 0.5;
    const path = `/v1/subscriptions?page[number]=${number}&page[size]=${size}${include ? "&include=podcast" : ""}`;
    const [started, mark] = [performance.now(), roundMark()];
    const { status, json } = await request("list", E.list, user, "GET", path);
    if (expectStatus("list", status, 200, `page ${number} size ${size}`) && CHECK) {
      if (!Array.isArray(json?.data) || json.data.length > size || typeof json?.meta?.total !== "number") {
        stats.unexpected += 1;
        problem(`list: malformed page ${JSON.stringify(json)?.slice(0, 300)}`);
        return;
      }
      if (include) expectSame("list", includedDifferences(user, json, started, mark), path);
    }
  },

  async get(user) {
    const guid = user.live.pick(user.busy);
    if (guid === undefined) return operations["post-new"](user);
    const include = random() < 0.5;
    await withLocks(user, [guid], async () => {
      const mark = roundMark();
      const path = `/v1/subscriptions/${guid}${include ? "?include=podcast" : ""}`;
      const { status, json } = await request("get", E.get, user, "GET", path);
      if (!expectStatus("get", status, 200, guid) || !checkResource("get", json?.data, guid, user.feedUrl.get(guid))) {
        return;
      }
      if (include) expectSame("get", includedDifferences(user, json, performance.now(), mark), path);
    });
  },

  async "get-missing"(user) {
    const { status } = await request("get-missing", E.get, user, "GET", `/v1/subscriptions/${randomUUID()}`);
    expectStatus("get-missing", status, 404, "never subscribed");
  },

  /** A device syncs: the subscription change feed from its stored token, following links.next. */
  async "change-feed"(user) {
    await syncDevice(user, "change-feed", "subscriptions", "list");
  },

  async "post-new"(user) {
    const guid = randomUUID();
    const feedUrl = user.newFeedUrl();
    await withLocks(user, [guid], async () => {
      const { status, json } = await request("post-new", E.post, user, "POST", "/v1/subscriptions", {
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
      const { status, json } = await request("post-existing", E.post, user, "POST", "/v1/subscriptions", {
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
      const { status, json } = await request("post-revive", E.post, user, "POST", "/v1/subscriptions", {
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

  /** A feed move (PATCH); one in ten of an unsubscribed guid, which must answer 404. */
  async patch(user) {
    const gone = random() < 0.1 ? user.dead.pick(user.busy) : undefined;
    const guid = gone ?? user.live.pick(user.busy);
    if (guid === undefined) return operations["post-new"](user);
    const feedUrl = user.newFeedUrl();
    await withLocks(user, [guid], async () => {
      const { status, json } = await request("patch", E.patch, user, "PATCH", `/v1/subscriptions/${guid}`, {
        body: subscriptionBody(guid, feedUrl),
        contentType: JSONAPI,
      });
      if (gone) {
        expectStatus("patch", status, 404, `${guid} unsubscribed`);
      } else if (expectStatus("patch", status, 200, guid) && checkResource("patch", json?.data, guid, feedUrl)) {
        user.setFeedUrl(guid, feedUrl);
        stats.writes.moved += 1;
      }
    });
  },

  /** An unsubscription; one in ten of a guid already unsubscribed, which must answer 404. */
  async delete(user) {
    const gone = random() < 0.1 ? user.dead.pick(user.busy) : undefined;
    const guid = gone ?? user.live.pick(user.busy);
    if (guid === undefined) return operations["post-new"](user);
    await withLocks(user, [guid], async () => {
      const { status } = await request("delete", E.delete, user, "DELETE", `/v1/subscriptions/${guid}`);
      if (gone) {
        expectStatus("delete", status, 404, `${guid} already unsubscribed`);
      } else if (expectStatus("delete", status, 204, guid)) {
        user.unsubscribed(guid);
        stats.writes.deleted += 1;
      }
    });
  },

  /**
   * 1-20 independent operations mixing subscriptions (add: mostly new, some live (409), some
   * unsubscribed (revived), sometimes one twice; update; remove) and episodes (add: new or merge; update;
   * remove), some aimed at what is not there (inline 404). Each inline result is checked in order against
   * the model applying the same operations.
   */
  async bulk(user) {
    const count = 1 + randomInt(20);
    const plan = [];
    const locked = new Set();
    // Mostly what the operation can apply to (live for update and remove), sometimes what it cannot.
    const subscriptionTarget = (op) => {
      const r = random();
      let guid;
      if (r < 0.08 && plan.length > 0) guid = plan[randomInt(plan.length)].id;
      else if (op === "add")
        guid = r < 0.4 ? user.live.pick(user.busy) : r < 0.55 ? user.dead.pick(user.busy) : undefined;
      else guid = r < 0.85 ? user.live.pick(user.busy) : r < 0.95 ? user.dead.pick(user.busy) : undefined;
      return guid ?? randomUUID();
    };
    for (let i = 0; i < count; i++) {
      const r = random();
      let step;
      if (r < 0.4)
        step = { type: "subscription", op: "add", id: subscriptionTarget("add"), feedUrl: user.newFeedUrl() };
      else if (r < 0.5) {
        step = { type: "subscription", op: "update", id: subscriptionTarget("update"), feedUrl: user.newFeedUrl() };
      } else if (r < 0.6) step = { type: "subscription", op: "remove", id: subscriptionTarget("remove") };
      else {
        const e = random();
        const op = e < 0.65 ? "add" : e < 0.9 ? "update" : "remove";
        const existing = random() < (op === "add" ? 0.6 : 0.9) ? pickEpisode(user, { forgotten: 0.1 }) : undefined;
        const id = existing ?? randomUUID();
        const state = user.episodes.get(id);
        const feedGuid = state?.feedGuid ?? feedForNewEpisode(user);
        const write = op === "remove" ? undefined : planEpisodeWrite(state, { create: op === "add" });
        step = { type: "episode", op, id, feedGuid, write };
      }
      if (user.busy.has(step.id) && !locked.has(step.id)) continue; // another request holds it
      locked.add(step.id);
      plan.push(step);
    }
    if (plan.length === 0) return operations.list(user);
    const body = {
      "atomic:operations": plan.map((p) => {
        if (p.op === "remove") return { op: "remove", ref: { type: p.type, id: p.id } };
        if (p.type === "subscription") return { op: p.op, ...subscriptionBody(p.id, p.feedUrl) };
        return { op: p.op, data: episodeData(p.id, p.feedGuid, p.write) };
      }),
    };
    await withLocks(user, [...locked], async () => {
      const { status, json } = await request("bulk", E.bulk, user, "POST", "/v1/operations", {
        body,
        contentType: ATOMIC,
        accept: ATOMIC,
      });
      if (!expectStatus("bulk", status, 200, `${plan.length} operations`)) return;
      const results = json?.["atomic:results"];
      if (CHECK && (!Array.isArray(results) || results.length !== plan.length)) {
        stats.unexpected += 1;
        problem(`bulk: ${plan.length} operations, results ${JSON.stringify(results)?.slice(0, 300)}`);
        return;
      }
      plan.forEach((p, i) => {
        const result = results?.[i];
        const context = `operation ${i} (${p.type} ${p.op} ${p.id})`;
        const failed = (expected) => {
          countInline(`${p.type} ${p.op}: ${expected}`);
          if (CHECK && result?.errors?.[0]?.status !== expected) {
            expectSame("bulk", [`should be ${expected}, got ${JSON.stringify(result)?.slice(0, 300)}`], context);
          }
        };
        const subscription = p.type === "subscription";
        const live = subscription ? user.live.index.has(p.id) : user.liveEpisodes.index.has(p.id);
        // add: 409 for a live subscription (an episode add merges); update and remove: 404 unless live.
        const refusal = p.op === "add" ? (subscription && live ? "409" : undefined) : live ? undefined : "404";
        if (refusal) {
          failed(refusal);
          return;
        }
        countInline(`${p.type} ${p.op}: ok`);
        if (p.op === "remove") {
          if (CHECK && (result?.errors || result?.data)) expectSame("bulk", [JSON.stringify(result)], context);
          if (subscription) user.unsubscribed(p.id);
          else user.episodeForgotten(p.id);
          stats.writes[subscription ? "bulkRemoved" : "bulkEpisodesForgotten"] += 1;
          return;
        }
        if (!subscription) {
          user.episodeWritten(p.id, p.feedGuid, p.write);
          stats.writes.bulkEpisodeWrites += 1;
          expectSame("bulk", episodeDifferences(result?.data, user.episodes.get(p.id)), context);
          return;
        }
        if (!checkResource("bulk", result?.data, p.id, p.feedUrl)) return;
        if (p.op === "update") {
          user.setFeedUrl(p.id, p.feedUrl);
          stats.writes.bulkMoved += 1;
        } else {
          if (user.dead.index.has(p.id)) stats.writes.bulkRevived += 1;
          user.subscribed(p.id, p.feedUrl);
          stats.writes.bulkAdded += 1;
        }
      });
    });
  },

  /** The OPML export: every live subscription nothing touched meanwhile is there with its URL, and no other. */
  async "opml-export"(user) {
    const [started, mark] = [performance.now(), roundMark()];
    const { status, text } = await request("opml-export", E.opmlExport, user, "GET", "/v1/subscriptions.opml", {
      accept: "text/x-opml",
    });
    if (!expectStatus("opml-export", status, 200, "export") || !CHECK) return;
    const outlines = opmlOutlines(text);
    if (!outlines) expectSame("opml-export", ["the document is cut or not OPML"], user.id);
    else {
      expectSame("opml-export", stableDifferences(user, outlines, started), user.id);
      expectSame("opml-export", nameDifferences(user, opmlNames(text), started, mark), user.id);
    }
  },

  /** An OPML import of 1-10 outlines with guids: new feeds, some unsubscribed (revived), some live (kept). */
  async "opml-import"(user) {
    const outlines = planOpmlImport(user);
    const document = opmlDocument(outlines);
    await withLocks(
      user,
      outlines.map((o) => o.guid),
      async () => {
        const { status, json } = await request("opml-import", E.opmlImport, user, "POST", "/v1/subscriptions.opml", {
          body: document,
          contentType: "text/x-opml",
        });
        if (!expectStatus("opml-import", status, 200, `${outlines.length} outlines`)) return;
        const kept = outlines.filter((o) => user.live.index.has(o.guid)).length;
        const meta = json?.meta;
        expectSame(
          "opml-import",
          meta?.imported === outlines.length - kept && meta?.alreadySubscribed === kept && meta?.skipped?.length === 0
            ? []
            : [`meta ${JSON.stringify(meta)}, expected ${outlines.length - kept} imported, ${kept} kept`],
          user.id,
        );
        for (const o of outlines) {
          if (user.live.index.has(o.guid)) continue;
          user.subscribed(o.guid, o.feedUrl);
          stats.writes.opmlImported += 1;
        }
      },
    );
  },

  /** An app saves an episode state (POST): a new episode, or a merge into a live or a forgotten one. */
  async "episode-post"(user) {
    const existing = random() < 0.6 ? pickEpisode(user, { forgotten: 0.1 }) : undefined;
    const id = existing ?? randomUUID();
    const state = user.episodes.get(id);
    const feedGuid = state?.feedGuid ?? feedForNewEpisode(user);
    const write = planEpisodeWrite(state, { create: true });
    await withLocks(user, [id], async () => {
      const { status, json } = await request("episode-post", E.episodePost, user, "POST", "/v1/episodes", {
        body: { data: episodeData(id, feedGuid, write) },
        contentType: JSONAPI,
      });
      const expected = user.liveEpisodes.index.has(id) ? 200 : 201;
      if (!expectStatus("episode-post", status, expected, id)) return;
      user.episodeWritten(id, feedGuid, write);
      stats.writes[expected === 201 ? "episodesCreated" : "episodesMerged"] += 1;
      expectSame("episode-post", episodeDifferences(json?.data, user.episodes.get(id)), id);
    });
  },

  /** A merge into an existing state (PATCH, no relationships); one in ten into a forgotten one (404). */
  async "episode-patch"(user) {
    const id = pickEpisode(user, { forgotten: 0.1 });
    if (id === undefined) return operations["episode-post"](user);
    const state = user.episodes.get(id);
    const write = planEpisodeWrite(state, { create: false });
    await withLocks(user, [id], async () => {
      const { status, json } = await request("episode-patch", E.episodePatch, user, "PATCH", `/v1/episodes/${id}`, {
        body: { data: { type: "episode", id, attributes: episodeAttributes(write) } },
        contentType: JSONAPI,
      });
      if (!user.liveEpisodes.index.has(id)) return expectStatus("episode-patch", status, 404, `${id} forgotten`);
      if (!expectStatus("episode-patch", status, 200, id)) return;
      user.episodeWritten(id, state.feedGuid, write);
      stats.writes.episodesMerged += 1;
      expectSame("episode-patch", episodeDifferences(json?.data, user.episodes.get(id)), id);
    });
  },

  async "episode-delete"(user) {
    const id = pickEpisode(user, { forgotten: 0.1 });
    if (id === undefined) return operations["episode-post"](user);
    await withLocks(user, [id], async () => {
      const { status } = await request("episode-delete", E.episodeDelete, user, "DELETE", `/v1/episodes/${id}`);
      if (!user.liveEpisodes.index.has(id)) return expectStatus("episode-delete", status, 404, `${id} forgotten`);
      if (!expectStatus("episode-delete", status, 204, id)) return;
      user.episodeForgotten(id);
      stats.writes.episodesForgotten += 1;
    });
  },

  /** One state (GET); sometimes a forgotten one or one never written (404). */
  async "episode-get"(user) {
    const id = (random() < 0.1 ? randomUUID() : pickEpisode(user, { forgotten: 0.1 })) ?? randomUUID();
    await withLocks(user, [id], async () => {
      const { status, json } = await request("episode-get", E.episodeGet, user, "GET", `/v1/episodes/${id}`);
      if (!user.liveEpisodes.index.has(id)) return expectStatus("episode-get", status, 404, `${id} absent`);
      if (expectStatus("episode-get", status, 200, id)) {
        expectSame("episode-get", episodeDifferences(json?.data, user.episodes.get(id)), id);
      }
    });
  },

  /** A device syncs listening progress: the episode change feed from its stored token. */
  async "episode-feed"(user) {
    await syncDevice(user, "episode-feed", "episodes", "episode-get");
  },

  /** The user's app passwords: the list (exactly the model's) or one of them. */
  async "app-passwords"(user) {
    await asGpodder(user, "get", () => readAppPasswords(user));
  },

  /** Replaces the user's app password: mints a new one, moves the gpodder traffic to it, deletes the old one. */
  async "app-password-rotate"(user) {
    if (user.gpodder.rotating || user.gpodder.inFlight > 0) return operations["app-passwords"](user);
    user.gpodder.rotating = true;
    try {
      const old = user.gpodder.id;
      if (!(await mintAppPassword(user, "app-password-rotate"))) return;
      const { status } = await request(
        "app-password-rotate",
        E.appPasswordDelete,
        user,
        "DELETE",
        `/v1/app-passwords/${old}`,
      );
      if (expectStatus("app-password-rotate", status, 204, old)) {
        user.appPasswords.delete(old);
        stats.writes.appPasswordsDeleted += 1;
      }
    } finally {
      user.gpodder.rotating = false;
    }
  },

  /** What a gpodder client does first: log in with HTTP Basic, keep the session cookie. */
  async "gpodder-login"(user) {
    await asGpodder(user, "get", async () => {
      const path = `/api/2/auth/${user.gpodder.username}/login.json`;
      const { status } = await request("gpodder-login", E.login, user, "POST", path, { auth: "basic", accept: "*/*" });
      expectStatus("gpodder-login", status, 200, user.id);
    });
  },

  /** Registers (or renames) a device, or lists them: every device written is listed. */
  async "gpodder-devices"(user) {
    await asGpodder(user, "get", async () => {
      const auth = gpodderAuth(user);
      const username = user.gpodder.username;
      if (random() < 0.4) {
        const i = randomInt(DEVICE_IDS.length);
        const path = `/api/2/devices/${username}/${DEVICE_IDS[i]}.json`;
        const body = { caption: `${DEVICE_IDS[i]} of ${user.id}`, type: DEVICE_TYPES[i] };
        const { status } = await request("gpodder-devices", E.devicePost, user, "POST", path, {
          auth,
          body,
          accept: "*/*",
        });
        if (expectStatus("gpodder-devices", status, 200, path)) {
          user.devices.add(DEVICE_IDS[i]);
          stats.writes.gpodderDevices += 1;
        }
        return;
      }
      const known = new Set(user.devices);
      const { status, json } = await request(
        "gpodder-devices",
        E.deviceList,
        user,
        "GET",
        `/api/2/devices/${username}.json`,
        {
          auth,
          accept: "application/json",
        },
      );
      if (!expectStatus("gpodder-devices", status, 200, "list") || !CHECK) return;
      const listed = new Set((Array.isArray(json) ? json : []).map((device) => device.id));
      expectSame(
        "gpodder-devices",
        [...known].filter((id) => !listed.has(id)).map((id) => `${id} not listed`),
        user.id,
      );
    });
  },

  /** gPodder's sync: the subscription changes since the device's last `timestamp` (a device following them). */
  async "gpodder-subscriptions-get"(user) {
    const device = user.gpodderDevice;
    if (device.busy) return operations["gpodder-simple"](user);
    await asGpodder(user, "get", async () => {
      device.busy = true;
      try {
        const deviceId = DEVICE_IDS[0];
        const path = `/api/2/subscriptions/${user.gpodder.username}/${deviceId}.json?since=${device.since}`;
        const { status, json } = await request("gpodder-subscriptions-get", E.gpodderSubsGet, user, "GET", path, {
          auth: gpodderAuth(user),
          accept: "application/json",
        });
        if (!expectStatus("gpodder-subscriptions-get", status, 200, path)) return;
        user.devices.add(deviceId);
        applyGpodderChanges(device, json);
      } finally {
        device.busy = false;
      }
    });
  },

  /** gPodder uploads subscription changes: new feeds, a re-add of an unsubscribed one, removes. */
  async "gpodder-subscriptions-post"(user) {
    await asGpodder(user, "get", async () => {
      const { add, remove, guids } = planSubscriptionUpload(user);
      if (add.length + remove.length === 0) return;
      const deviceId = DEVICE_IDS[randomInt(DEVICE_IDS.length)];
      const path = `/api/2/subscriptions/${user.gpodder.username}/${deviceId}.json`;
      await withLocks(user, [...guids], async () => {
        const { status, json } = await request("gpodder-subscriptions-post", E.gpodderSubsPost, user, "POST", path, {
          auth: gpodderAuth(user),
          body: { add, remove },
          accept: "application/json",
        });
        if (!expectStatus("gpodder-subscriptions-post", status, 200, path)) return;
        user.devices.add(deviceId);
        const updateUrls = applyGpodderUpload(user, add, remove);
        expectSame(
          "gpodder-subscriptions-post",
          JSON.stringify(json?.update_urls) === JSON.stringify(updateUrls) && Number.isInteger(json?.timestamp)
            ? []
            : [`answer ${JSON.stringify(json)?.slice(0, 300)}, expected update_urls ${JSON.stringify(updateUrls)}`],
          path,
        );
      });
    });
  },

  /** The simple API: the list as JSON, OPML or a device's text list, compared on what nothing touched meanwhile. */
  async "gpodder-simple"(user) {
    await asGpodder(user, "get", async () => {
      const username = user.gpodder.username;
      const started = performance.now();
      const r = random();
      const [endpoint, path, accept] =
        r < 0.5
          ? [E.simpleJson, `/subscriptions/${username}.json`, "application/json"]
          : r < 0.8
            ? [E.simpleOpml, `/subscriptions/${username}.opml`, "*/*"]
            : [E.simpleDeviceTxt, `/subscriptions/${username}/${DEVICE_IDS[1]}.txt`, "text/plain"];
      const { status, json, text } = await request("gpodder-simple", endpoint, user, "GET", path, {
        auth: gpodderAuth(user),
        accept,
      });
      if (!expectStatus("gpodder-simple", status, 200, path) || !CHECK) return;
      if (endpoint === E.simpleDeviceTxt) user.devices.add(DEVICE_IDS[1]);
      let listed;
      if (endpoint === E.simpleOpml) listed = opmlOutlines(text);
      else {
        const urls = endpoint === E.simpleJson ? json : text?.split("\n").filter(Boolean);
        if (Array.isArray(urls)) listed = new Map(urls.map((url) => [user.urlGuid.get(url) ?? url, url]));
      }
      if (!listed) expectSame("gpodder-simple", ["unreadable answer"], path);
      else expectSame("gpodder-simple", stableDifferences(user, listed, started), path);
    });
  },

  /**
   * gPodder uploads episode actions for one subscribed feed: plays with a position (some to the end, so
   * played), `new`, and a `download` that stores nothing; on new episodes and on those written before.
   */
  async "gpodder-episodes-post"(user) {
    const feedGuid = user.live.pick(user.busy);
    if (feedGuid === undefined) return operations["gpodder-subscriptions-post"](user);
    await asGpodder(user, "get", async () => {
      const { actions, ids } = planEpisodeActions(user, feedGuid);
      await withLocks(user, [...ids], async () => {
        const path = `/api/2/episodes/${user.gpodder.username}.json`;
        const { status, json } = await request("gpodder-episodes-post", E.gpodderEpisodesPost, user, "POST", path, {
          auth: gpodderAuth(user),
          body: actions.map((a) => a.action),
          accept: "application/json",
        });
        if (!expectStatus("gpodder-episodes-post", status, 200, path)) return;
        expectSame(
          "gpodder-episodes-post",
          Number.isInteger(json?.timestamp) && Array.isArray(json?.update_urls) && json.update_urls.length === 0
            ? []
            : [JSON.stringify(json)?.slice(0, 300)],
          path,
        );
        applyEpisodeActions(user, feedGuid, actions);
      });
    });
  },

  /** gPodder reads episode actions since a time: well-formed, every podcast one of the user's feeds. */
  async "gpodder-episodes-get"(user) {
    await asGpodder(user, "get", async () => {
      const since = random() < 0.3 ? 0 : Math.floor(Date.now() / 1000) - randomInt(120);
      const path = `/api/2/episodes/${user.gpodder.username}.json?since=${since}`;
      const { status, json } = await request("gpodder-episodes-get", E.gpodderEpisodesGet, user, "GET", path, {
        auth: gpodderAuth(user),
        accept: "application/json",
      });
      if (!expectStatus("gpodder-episodes-get", status, 200, path) || !CHECK) return;
      const ok =
        Array.isArray(json?.actions) &&
        Number.isInteger(json?.timestamp) &&
        json.actions.every((a) => typeof a.podcast === "string" && (a.action === "play" || a.action === "new"));
      expectSame("gpodder-episodes-get", ok ? [] : [JSON.stringify(json)?.slice(0, 300)], path);
    });
  },

  /**
   * AntennaPod's Nextcloud sync: the subscription changes since its last sync, whose time is the phone's clock
   * after the answer (not the server's `timestamp`): the server's 600 s margin must still miss nothing (§17).
   */
  async "nextcloud-subscriptions-get"(user) {
    const device = user.nextcloudDevice;
    if (device.busy) return operations["nextcloud-episodes-get"](user);
    await asGpodder(user, "get", async () => {
      device.busy = true;
      try {
        const path = `${NEXTCLOUD}/subscriptions?since=${device.since}`;
        const kind = "nextcloud-subscriptions-get";
        const { status, json } = await request(kind, E.nextcloudSubsGet, user, "GET", path, {
          auth: "basic",
          accept: "application/json",
        });
        if (!expectStatus(kind, status, 200, path)) return;
        applyGpodderChanges(device, json, kind, Math.floor(Date.now() / 1000));
      } finally {
        device.busy = false;
      }
    });
  },

  /** A Nextcloud app uploads subscription changes (section 14's semantics, no device): `{"timestamp"}`. */
  async "nextcloud-subscriptions-post"(user) {
    await asGpodder(user, "get", async () => {
      const { add, remove, guids } = planSubscriptionUpload(user);
      if (add.length + remove.length === 0) return;
      const path = `${NEXTCLOUD}/subscription_change/create`;
      await withLocks(user, [...guids], async () => {
        const kind = "nextcloud-subscriptions-post";
        const { status, json } = await request(kind, E.nextcloudSubsPost, user, "POST", path, {
          auth: "basic",
          body: { add, remove },
          accept: "application/json",
        });
        if (!expectStatus(kind, status, 200, path)) return;
        applyGpodderUpload(user, add, remove);
        const keys = Object.keys(json ?? {});
        expectSame(kind, keys.length === 1 && Number.isInteger(json?.timestamp) ? [] : [JSON.stringify(json)], path);
      });
    });
  },

  /** A Nextcloud app uploads episode actions (section 14's mapping): `{"timestamp"}`. */
  async "nextcloud-episodes-post"(user) {
    const feedGuid = user.live.pick(user.busy);
    if (feedGuid === undefined) return operations["nextcloud-subscriptions-post"](user);
    await asGpodder(user, "get", async () => {
      const { actions, ids } = planEpisodeActions(user, feedGuid);
      await withLocks(user, [...ids], async () => {
        const path = `${NEXTCLOUD}/episode_action/create`;
        const kind = "nextcloud-episodes-post";
        const { status, json } = await request(kind, E.nextcloudEpisodesPost, user, "POST", path, {
          auth: "basic",
          body: actions.map((a) => a.action),
          accept: "application/json",
        });
        if (!expectStatus(kind, status, 200, path)) return;
        const keys = Object.keys(json ?? {});
        expectSame(kind, keys.length === 1 && Number.isInteger(json?.timestamp) ? [] : [JSON.stringify(json)], path);
        applyEpisodeActions(user, feedGuid, actions);
      });
    });
  },

  /** A Nextcloud app reads episode actions since a time: well-formed, plays and news only. */
  async "nextcloud-episodes-get"(user) {
    await asGpodder(user, "get", async () => {
      const since = random() < 0.3 ? 0 : Math.floor(Date.now() / 1000) - randomInt(120);
      const path = `${NEXTCLOUD}/episode_action?since=${since}`;
      const kind = "nextcloud-episodes-get";
      const { status, json } = await request(kind, E.nextcloudEpisodesGet, user, "GET", path, {
        auth: "basic",
        accept: "application/json",
      });
      if (!expectStatus(kind, status, 200, path) || !CHECK) return;
      const ok =
        Array.isArray(json?.actions) &&
        Number.isInteger(json?.timestamp) &&
        json.actions.every((a) => typeof a.podcast === "string" && (a.action === "play" || a.action === "new"));
      expectSame(kind, ok ? [] : [JSON.stringify(json)?.slice(0, 300)], path);
    });
  },

  /** The person reads the first page of their subscriptions: every row a subscription (what nothing touched). */
  async "account-subscriptions"(user) {
    if (!CHECK) return operations.list(user);
    await inBrowser(user, async () => {
      if (!(await signedInToPages(user))) return;
      const [started, mark] = [performance.now(), roundMark()];
      const page = await browse("account-subscriptions", E.accountSubscriptions, user, "GET", "/account/subscriptions");
      if (!expectStatus("account-subscriptions", page.status, 200, user.id)) return;
      expectSame("account-subscriptions", subscriptionRowDifferences(user, page.text, started, mark), user.id);
    });
  },

  /** The person unsubscribes on the page (its form: guid, the page to return to, the anti-forgery token). */
  async "account-unsubscribe"(user) {
    if (!CHECK) return operations.delete(user);
    await inBrowser(user, async () => {
      if (!(await signedInToPages(user))) return;
      const guid = user.live.pick(user.busy);
      if (guid === undefined) return;
      await withLocks(user, [guid], async () => {
        const form = { guid, return_to: "/account/subscriptions", anti_forgery_token: user.browser.antiForgery };
        const answer = await browse(
          "account-unsubscribe",
          E.accountUnsubscribe,
          user,
          "POST",
          "/account/subscriptions/unsubscribe",
          form,
        );
        if (!expectStatus("account-unsubscribe", answer.status, 303, guid)) return;
        user.unsubscribed(guid);
        stats.writes.pageUnsubscribed += 1;
      });
    });
  },

  /** The person reads their listening progress: the states changed last, each named after its podcast. */
  async "account-progress"(user) {
    if (!CHECK) return operations["episode-get"](user);
    await inBrowser(user, async () => {
      if (!(await signedInToPages(user))) return;
      const [started, mark] = [performance.now(), roundMark()];
      const page = await browse("account-progress", E.accountProgress, user, "GET", "/account/progress");
      if (!expectStatus("account-progress", page.status, 200, user.id)) return;
      expectSame("account-progress", progressDifferences(user, page.text, started, mark), user.id);
    });
  },

  /** The person imports an OPML file on the subscriptions page (a multipart form, as a browser sends the file). */
  async "account-opml-import"(user) {
    if (!CHECK) return operations["opml-import"](user);
    await inBrowser(user, async () => {
      if (!(await signedInToPages(user))) return;
      const outlines = planOpmlImport(user);
      await withLocks(
        user,
        outlines.map((o) => o.guid),
        async () => {
          const form = new FormData();
          form.set("anti_forgery_token", user.browser.antiForgery);
          form.set("opml", new Blob([opmlDocument(outlines)], { type: "text/x-opml" }), "subscriptions.opml");
          const kind = "account-opml-import";
          const page = await browse(kind, E.accountOpmlImport, user, "POST", "/account/opml", form);
          if (!expectStatus(kind, page.status, 200, `${outlines.length} outlines`)) return;
          const kept = outlines.filter((o) => user.live.index.has(o.guid)).length;
          const said =
            /Added (\d+) podcasts?; (\d+) (?:was|were) already among your subscriptions; (\d+) outlines? (?:was|were) skipped/.exec(
              page.text ?? "",
            );
          const counts = said ? said.slice(1).map(Number).join() : "none";
          expectSame(
            kind,
            counts === `${outlines.length - kept},${kept},0` ? [] : [`the page says ${said?.[0] ?? "no counts"}`],
            `${outlines.length - kept} new, ${kept} kept`,
          );
          for (const o of outlines) {
            if (user.live.index.has(o.guid)) continue;
            user.subscribed(o.guid, o.feedUrl);
            stats.writes.pageImported += 1;
          }
        },
      );
    });
  },

  /**
   * The person creates an app password on the account page (`Connect an app`): the page shows it once; the app's
   * sync moves to it, and the one it replaces is revoked on the page. Held like a rotation.
   */
  async "account-app-password"(user) {
    if (!CHECK || user.gpodder.rotating || user.gpodder.inFlight > 0) return operations["app-passwords"](user);
    await inBrowser(user, async () => {
      user.gpodder.rotating = true;
      try {
        if (!(await signedInToPages(user))) return;
        const kind = "account-app-password";
        const page = await browse(kind, E.accountAppPassword, user, "POST", "/account/app-passwords", {
          label: `soak page ${user.feeds}`,
          anti_forgery_token: user.browser.antiForgery,
        });
        if (!expectStatus(kind, page.status, 200, "create")) return;
        const shown = (id) => xmlText(new RegExp(`id="${id}"[^>]*value="([^"]*)"`).exec(page.text ?? "")?.[1]);
        const [username, password] = [shown("username"), shown("password")];
        if (username !== user.gpodder.username || !/^([a-z2-9]{5}-){5}[a-z2-9]{5}$/.test(password ?? "")) {
          expectSame(kind, [`the page shows username ${username}, password ${password}`], user.id);
          return;
        }
        await adoptAppPassword(user, kind, password);
      } finally {
        user.gpodder.rotating = false;
      }
    });
  },

  /**
   * The person signs out: the session ends on the server (§16), so its cookie, sent again, opens no page (the
   * account page answers signed out, a page below it sends to sign-in). The next page operation signs in anew.
   */
  async "account-signout"(user) {
    if (!CHECK) return operations.list(user);
    await inBrowser(user, async () => {
      if (!(await signedInToPages(user))) return;
      const kind = "account-signout";
      const cookies = new Map(user.browser.jar.get(base));
      const answer = await browse(kind, E.accountSignOut, user, "POST", "/account/signout", {
        anti_forgery_token: user.browser.antiForgery,
      });
      if (!expectStatus(kind, answer.status, 303, "sign out")) return;
      user.browser.signingIn = undefined;
      user.browser.antiForgery = undefined;
      user.browser.ended = cookies;
      stats.writes.signOuts += 1;
      await expectSessionEnded(user, kind);
    });
  },

  /**
   * The person erases the account on its page (§15, §16): the page, sometimes a confirmation that does not say
   * `erase` (`400`, nothing erased: the verification proves it), else `erase`: every subscription, episode
   * state, app password, device and session gone. Holds the user alone (its other operations finish first, none
   * starts); afterwards the followers' old tokens answer `410` and a new app password is minted for its apps.
   */
  async "account-erase"(user) {
    if (!CHECK || user.exclusive) return;
    user.exclusive = true;
    try {
      while (user.active > 1) await sleep(20);
      await inBrowser(user, () => eraseOnThePage(user));
    } finally {
      user.exclusive = false;
    }
  },

  /** An app starts the Login Flow and the person denies it on the page: no app password, the link is used up. */
  async "login-flow-deny"(user) {
    await inBrowser(user, () => loginFlow(user, { deny: true }));
  },

  /** An app reads a subscription's podcast (§18): pending, or what a feed round fetched; of a tombstone, 404. */
  async podcast(user) {
    const gone = random() < 0.1 ? user.dead.pick(user.busy) : undefined;
    const guid = gone ?? user.live.pick(user.busy);
    if (guid === undefined) return operations["post-new"](user);
    await withLocks(user, [guid], async () => {
      const mark = roundMark();
      const path = `/v1/subscriptions/${guid}/podcast`;
      const { status, json } = await request("podcast", E.podcast, user, "GET", path);
      if (gone) return expectStatus("podcast", status, 404, `${guid} unsubscribed`);
      if (!expectStatus("podcast", status, 200, guid) || !CHECK) return;
      const url = user.feedUrl.get(guid);
      const differences = podcastDifferences(json?.data?.attributes, url, rounds.fetched, roundUncertain(mark, url));
      if (json?.data?.type !== "podcast" || json.data.id !== guid) differences.push(`resource ${json?.data?.id}`);
      expectSame("podcast", differences, guid);
    });
  },

  /** An app signs in with Nextcloud's Login Flow v2, the person granting access on the page. */
  async "login-flow"(user) {
    await inBrowser(user, () => loginFlow(user));
  },
};

/** The user's app passwords (held like gpodder traffic, so no rotation runs meanwhile): the list or one. */
async function readAppPasswords(user) {
  if (random() < 0.5) {
    const { status, json } = await request("app-passwords", E.appPasswordList, user, "GET", "/v1/app-passwords");
    if (!expectStatus("app-passwords", status, 200, "list") || !CHECK) return;
    const ids = (json?.data ?? []).map((resource) => resource.id);
    const wrong = ids.length !== user.appPasswords.size || ids.some((id) => !user.appPasswords.has(id));
    const leaked = (json?.data ?? []).some((resource) => "password" in (resource.attributes ?? {}));
    expectSame(
      "app-passwords",
      wrong || leaked ? [`listed ${ids.join(", ")}${leaked ? " with a password" : ""}`] : [],
      user.id,
    );
    return;
  }
  const id = user.gpodder.id;
  const { status, json } = await request("app-passwords", E.appPasswordGet, user, "GET", `/v1/app-passwords/${id}`);
  if (!expectStatus("app-passwords", status, 200, id) || !CHECK) return;
  const a = json?.data?.attributes;
  expectSame(
    "app-passwords",
    json?.data?.id === id && a?.username === user.gpodder.username && !("password" in (a ?? {}))
      ? []
      : [JSON.stringify(json?.data)],
    id,
  );
}

/**
 * One sync of the user's device that follows a change feed (`resource`: subscriptions or episodes), from its
 * stored token through links.next; while that device is already syncing, `fallback` runs instead.
 */
async function syncDevice(user, kind, resource, fallback) {
  const subscriptions = resource === "subscriptions";
  const device = subscriptions ? user.subscriptionDevice : user.episodeDevice;
  if (device.busy) return operations[fallback](user);
  device.busy = true;
  try {
    await followChangeFeed(
      device,
      resource,
      [25, 100][randomInt(2)],
      async (path) => {
        const answer = await request(kind, subscriptions ? E.feed : E.episodeFeed, user, "GET", path);
        expectStatus(kind, answer.status, 200, path);
        return answer;
      },
      subscriptions ? applySubscriptionChanges : applyEpisodeChanges,
    );
  } finally {
    device.busy = false;
  }
}

/** Mints an app password (POST /v1/app-passwords) and makes it the user's gpodder credentials. */
/**
 * One request of the person's browser (`user.browser`): its cookies for the URL's origin, redirects not followed
 * (answers `location`, absolute). Requests to the worker are timed and counted like request()'s; a form is posted
 * from the page's own origin, as a browser does.
 */
async function browse(kind, endpoint, user, method, url, form, { issuerMayBeSlow = false } = {}) {
  const target = new URL(url, base);
  const jar = user.browser.jar.get(target.origin) ?? new Map();
  user.browser.jar.set(target.origin, jar);
  const headers = { Accept: "text/html" };
  if (jar.size > 0) headers.Cookie = [...jar].map(([name, value]) => `${name}=${value}`).join("; ");
  // A form: URL-encoded, or multipart (FormData: a file field; fetch writes its Content-Type and boundary).
  if (form) headers.Origin = target.origin;
  if (form && !(form instanceof FormData)) headers["Content-Type"] = "application/x-www-form-urlencoded";
  const worker = target.origin === base;
  const started = performance.now();
  let status = 0;
  let text;
  let location;
  let retryAfter = 0;
  try {
    const response = await fetch(target, {
      method,
      headers,
      body: form instanceof FormData ? form : form ? new URLSearchParams(form).toString() : undefined,
      redirect: "manual",
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    status = response.status;
    text = await response.text();
    retryAfter = Number(response.headers.get("Retry-After")) || 0;
    const next = response.headers.get("Location");
    location = next ? new URL(next, target).href : undefined;
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const name = pair.slice(0, pair.indexOf("="));
      const value = pair.slice(pair.indexOf("=") + 1);
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a));
      if (expired || value === "") jar.delete(name);
      else jar.set(name, value);
    }
  } catch (error) {
    stats.networkErrors += 1;
    problem(`${kind} ${method} ${target.pathname}: network error: ${error}`);
  }
  if (worker && stats.phase !== "verify") {
    const ended = performance.now();
    stats.samples.push({ phase: stats.phase, kind, endpoint, ms: ended - started, end: ended, status });
  }
  if (worker && status === 503 && retryAfter > 0 && issuerMayBeSlow) {
    // The sign-in's identity provider (in this process, beside the load client) did not answer within the
    // worker's 5 s: the worker says so (docs/API.md §16) and the person signs in again. Counted apart.
    stats.issuerTooSlow += 1;
  } else if (worker && status >= 500) {
    stats.errors5xx += 1;
    problem(`${kind} ${method} ${target.pathname}: ${status} ${(text ?? "").slice(0, 300)}`);
  }
  return { status, text, location, retryAfter };
}

const ANTI_FORGERY = /name="anti_forgery_token" value="([^"]+)"/;

/**
 * Signs the person in to the account pages as a browser does (docs/API.md §16): /account/signin, the identity
 * provider's authorization and its sign-in form (user name: the user's id, the `sub` of its tokens), the callback,
 * then /account, whose forms carry the session's anti-forgery token. Answers whether it worked. Once per user.
 */
function signedInToPages(user) {
  user.browser.signingIn ??= (async () => {
    const kind = "account-signin";
    let last;
    // A 503 with Retry-After (the identity provider too slow for the worker): the person tries again, at most twice.
    for (let attempt = 0; attempt < 3; attempt++) {
      if (last?.answer.status === 503) await sleep(1000 * Math.min(5, last.answer.retryAfter));
      const slow = { issuerMayBeSlow: true };
      let answer = await browse(kind, E.accountSignIn, user, "GET", "/account/signin", undefined, slow);
      last = { path: "/account/signin", answer };
      for (let hop = 0; hop < 10 && answer.location; hop++) {
        const at = new URL(answer.location);
        if (at.origin === base && at.pathname === "/account") break;
        answer = await browse(kind, E.accountSignIn, user, "GET", at.href, undefined, slow);
        last = { path: at.pathname, answer };
        if (answer.status === 200 && /^\/interaction\/[^/]+$/.test(at.pathname)) {
          answer = await browse(kind, E.accountSignIn, user, "POST", `${at.href}/login`, { login: user.id });
        }
      }
      if (!(last.answer.status === 503 && last.answer.retryAfter > 0)) break;
    }
    const page = await browse(kind, E.accountPage, user, "GET", "/account");
    const token = page.status === 200 ? ANTI_FORGERY.exec(page.text ?? "")?.[1] : undefined;
    if (!token) {
      stats.unexpected += 1;
      // What the last hop said (the callback's page names why a sign-in failed).
      const said = (last.answer.text ?? "")
        .replace(/<[^>]*>/g, " ")
        .replace(/\s+/g, " ")
        .slice(0, 300);
      problem(
        `${kind}: ${user.id} could not sign in to the account pages (/account answered ${page.status}; ` +
          `${last.path} answered ${last.answer.status}: ${said})`,
      );
      user.browser.signingIn = undefined;
      return false;
    }
    user.browser.antiForgery = token;
    return true;
  })();
  return user.browser.signingIn;
}

/**
 * Nextcloud's Login Flow v2 as AntennaPod runs it (docs/API.md §17): the app starts a flow; the person opens its
 * link, signed in, and grants access; the app polls and receives a new app password, which its sync then uses.
 * The password it replaces is revoked on the account page, as a person tidying up would. Held like a rotation:
 * no gpodder traffic of the user is in flight meanwhile, so the list of app passwords is the model's throughout.
 */
async function loginFlow(user, { deny = false } = {}) {
  if (user.gpodder.rotating || user.gpodder.inFlight > 0 || !CHECK) return operations["app-passwords"](user);
  user.gpodder.rotating = true;
  try {
    if (!(await signedInToPages(user))) return;
    const kind = deny ? "login-flow-deny" : "login-flow";
    const start = await fetchJson(
      kind,
      E.loginFlowStart,
      "POST",
      "/index.php/login/v2",
      undefined,
      "Soak/1.0 (AntennaPod-like)",
    );
    const login = start.json?.login;
    const token = start.json?.poll?.token;
    if (!expectStatus(kind, start.status, 200, "start") || typeof login !== "string" || typeof token !== "string") {
      if (start.status === 200) expectSame(kind, [JSON.stringify(start.json)?.slice(0, 300)], "start");
      return;
    }
    const before = await fetchJson(kind, E.loginFlowPoll, "POST", "/index.php/login/v2/poll", { token });
    expectStatus(kind, before.status, 404, "poll before the grant");
    const grantPage = await browse(kind, E.loginFlowPage, user, "GET", login);
    if (!expectStatus(kind, grantPage.status, 200, "grant page")) return;
    if (deny) {
      // `Deny` (§17): the flow ends; its poll, and its link, find nothing; no app password appears (verified).
      const denied = await browse(kind, E.loginFlowDeny, user, "POST", `${login}/deny`, {
        anti_forgery_token: user.browser.antiForgery,
      });
      if (!expectStatus(kind, denied.status, 200, "deny")) return;
      expectSame(kind, /<h1>Access denied<\/h1>/.test(denied.text ?? "") ? [] : ["no Access denied page"], "deny");
      const poll = await fetchJson(kind, E.loginFlowPoll, "POST", "/index.php/login/v2/poll", { token });
      expectStatus(kind, poll.status, 404, "poll after a Deny");
      const again = await browse(kind, E.loginFlowPage, user, "GET", login);
      expectStatus(kind, again.status, 404, "the link of a denied flow");
      stats.writes.flowsDenied += 1;
      return;
    }
    const granted = await browse(kind, E.loginFlowGrant, user, "POST", `${login}/grant`, {
      anti_forgery_token: user.browser.antiForgery,
    });
    if (!expectStatus(kind, granted.status, 200, "grant")) return;
    const poll = await fetchJson(kind, E.loginFlowPoll, "POST", "/index.php/login/v2/poll", { token });
    if (!expectStatus(kind, poll.status, 200, "poll after the grant")) return;
    const { loginName, appPassword } = poll.json ?? {};
    if (loginName !== user.gpodder.username || typeof appPassword !== "string") {
      expectSame(kind, [`poll answered ${JSON.stringify(poll.json)?.slice(0, 200)}`], user.id);
      return;
    }
    const again = await fetchJson(kind, E.loginFlowPoll, "POST", "/index.php/login/v2/poll", { token });
    expectStatus(kind, again.status, 404, "a second poll");
    await adoptAppPassword(user, kind, appPassword);
  } finally {
    user.gpodder.rotating = false;
  }
}

/**
 * An app password the person received (from the Login Flow or the account page) becomes the user's gpodder
 * credentials; its id is the one listed that the model does not know (nothing else changes them meanwhile: the
 * caller holds the user's gpodder traffic). The password it replaces is revoked on the account page.
 */
async function adoptAppPassword(user, kind, password) {
  const list = await request(kind, E.appPasswordList, user, "GET", "/v1/app-passwords");
  const fresh = (list.json?.data ?? []).map((r) => r.id).filter((id) => !user.appPasswords.has(id));
  if (!expectStatus(kind, list.status, 200, "list") || fresh.length !== 1) {
    expectSame(kind, [`${fresh.length} app passwords appeared after one was created`], user.id);
    return;
  }
  user.appPasswords.add(fresh[0]);
  stats.writes.appPasswordsMinted += 1;
  const old = user.gpodder.id;
  user.gpodder = { ...user.gpodder, id: fresh[0], password, cookie: undefined };
  const revoked = await browse(kind, E.accountRevoke, user, "POST", "/account/app-passwords/revoke", {
    id: old,
    anti_forgery_token: user.browser.antiForgery,
  });
  if (expectStatus(kind, revoked.status, 303, "revoke on the account page")) {
    user.appPasswords.delete(old);
    stats.writes.appPasswordsDeleted += 1;
  }
}

/**
 * A session the server ended (Sign out, the erasure) opens no page: with its cookie sent again, `/account` is the
 * signed-out page (no form, so no anti-forgery token) and `/account/subscriptions` redirects to sign in.
 */
async function expectSessionEnded(user, kind, cookies = user.browser.ended) {
  return expectSame(kind, await endedSessionDifferences(kind, cookies), user.id);
}

/** What `expectSessionEnded` checks, as differences (the verification counts them its own way). */
async function endedSessionDifferences(kind, cookies) {
  const headers = {
    Accept: "text/html",
    Cookie: [...(cookies ?? [])].map(([name, value]) => `${name}=${value}`).join("; "),
  };
  const differences = [];
  for (const [path, expected] of [
    ["/account", 200],
    ["/account/subscriptions", 302],
  ]) {
    const started = performance.now();
    let status = 0;
    let text = "";
    try {
      const response = await fetch(base + path, {
        headers,
        redirect: "manual",
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      status = response.status;
      text = await response.text();
    } catch (error) {
      stats.networkErrors += 1;
      problem(`${kind} GET ${path}: network error: ${error}`);
      return false;
    }
    if (stats.phase !== "verify") {
      const ended = performance.now();
      stats.samples.push({
        phase: stats.phase,
        kind,
        endpoint: E.accountEnded,
        ms: ended - started,
        end: ended,
        status,
      });
    }
    if (status >= 500) {
      stats.errors5xx += 1;
      problem(`${kind} GET ${path}: ${status}`);
    }
    if (status !== expected && status !== 429) differences.push(`${path} with the ended session: ${status}`);
    if (status === 200 && ANTI_FORGERY.test(text)) differences.push(`${path} is still signed in`);
  }
  return differences;
}

/** `account-erase` once it holds the user: see there. */
async function eraseOnThePage(user) {
  if (!(await signedInToPages(user))) return;
  const kind = "account-erase";
  const page = await browse(kind, E.accountErasePage, user, "GET", "/account/erase");
  if (!expectStatus(kind, page.status, 200, "the page")) return;
  const refuse = random() < 0.4;
  const cookies = new Map(user.browser.jar.get(base));
  const answer = await browse(kind, E.accountErase, user, "POST", "/account/erase", {
    confirm: refuse ? "Erase it" : "erase",
    anti_forgery_token: user.browser.antiForgery,
  });
  if (refuse) {
    if (expectStatus(kind, answer.status, 400, "a confirmation that does not say erase")) {
      stats.writes.erasuresRefused += 1;
    }
    return;
  }
  if (!expectStatus(kind, answer.status, 200, "erase")) return;
  expectSame(kind, /Your account is erased/.test(answer.text ?? "") ? [] : ["no Account erased page"], user.id);
  const followers = { subscriptions: user.subscriptionDevice.token, episodes: user.episodeDevice.token };
  const gpodder = { ...user.gpodder };
  user.erased();
  stats.writes.erasures += 1;
  user.browser.ended = cookies;
  await expectSessionEnded(user, kind);
  // A device that synced before holds a token from before: 410, so that it drops its copy (§15).
  for (const [resource, token] of Object.entries(followers)) {
    if (token === "0") continue;
    const path = `/v1/${resource}?filter[since]=${token}`;
    const { status } = await request(kind, resource === "subscriptions" ? E.feed : E.episodeFeed, user, "GET", path);
    expectStatus(kind, status, 410, `${path} after the erasure`);
  }
  // The erased app password opens nothing; the apps are connected again with a new one.
  const login = await request(kind, E.login, { gpodder }, "POST", `/api/2/auth/${gpodder.username}/login.json`, {
    auth: "basic",
    accept: "*/*",
  });
  expectStatus(kind, login.status, 401, "the erased app password");
  await mintAppPassword(user, kind);
}

/** An unauthenticated request of an app (the Login Flow's start and poll): a form body, JSON back, counted. */
async function fetchJson(kind, endpoint, method, path, form, userAgent) {
  const headers = { Accept: "application/json" };
  if (userAgent) headers["User-Agent"] = userAgent;
  if (form) headers["Content-Type"] = "application/x-www-form-urlencoded";
  const started = performance.now();
  let status = 0;
  let json;
  try {
    const response = await fetch(base + path, {
      method,
      headers,
      body: form ? new URLSearchParams(form).toString() : undefined,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    status = response.status;
    const text = await response.text();
    json = text && /json/.test(response.headers.get("Content-Type") ?? "") ? JSON.parse(text) : undefined;
  } catch (error) {
    stats.networkErrors += 1;
    problem(`${kind} ${method} ${path}: network error: ${error}`);
  }
  if (stats.phase !== "verify") {
    const ended = performance.now();
    stats.samples.push({ phase: stats.phase, kind, endpoint, ms: ended - started, end: ended, status });
  }
  if (status >= 500) {
    stats.errors5xx += 1;
    problem(`${kind} ${method} ${path}: ${status}`);
  }
  return { status, json };
}

async function mintAppPassword(user, kind) {
  const { status, json } = await request(kind, E.appPasswordPost, user, "POST", "/v1/app-passwords", {
    body: { data: { type: "app-password", attributes: { label: `soak ${kind}` } } },
    contentType: JSONAPI,
  });
  if (!expectStatus(kind, status, 201, user.id)) return false;
  const a = json?.data?.attributes;
  if (!CHECK) {
    user.gpodder = { ...user.gpodder, id: randomUUID(), username: user.id, password: "x", cookie: undefined };
    return true;
  }
  if (typeof a?.username !== "string" || typeof a?.password !== "string") {
    expectSame(kind, [JSON.stringify(json)?.slice(0, 300)], user.id);
    return false;
  }
  user.gpodder = { ...user.gpodder, id: json.data.id, username: a.username, password: a.password, cookie: undefined };
  user.appPasswords.add(json.data.id);
  stats.writes.appPasswordsMinted += 1;
  return true;
}

/** A subscription upload of a gpodder or Nextcloud app: new feeds, a re-add of an unsubscribed one, removes. */
function planSubscriptionUpload(user) {
  const add = [];
  const remove = [];
  const guids = new Set();
  for (let i = 1 + randomInt(3); i > 0; i--) {
    const r = random();
    if (r < 0.55) {
      const url = user.newFeedUrl();
      add.push(url);
      guids.add(podcastGuid(url));
    } else if (r < 0.7) {
      const guid = user.dead.pick(user.busy);
      if (guid && !guids.has(guid)) {
        add.push(user.feedUrl.get(guid));
        guids.add(guid);
      }
    } else if (r < 0.8) {
      const guid = user.live.pick(user.busy);
      if (guid && !guids.has(guid)) {
        add.push(user.feedUrl.get(guid)); // already subscribed: nothing changes
        guids.add(guid);
      }
    } else {
      const guid = user.live.pick(user.busy);
      if (guid && !guids.has(guid)) {
        remove.push(user.feedUrl.get(guid));
        guids.add(guid);
      }
    }
  }
  return { add, remove, guids };
}

/**
 * Episode actions a gpodder or Nextcloud app uploads for one subscribed feed: plays with a position (some to the
 * end, so played), `new`, and a `download` that stores nothing; on new episodes and on those written before.
 */
function planEpisodeActions(user, feedGuid) {
  const podcast = user.feedUrl.get(feedGuid);
  const known = user.gpodderEpisodes.get(feedGuid) ?? [];
  const actions = [];
  const ids = new Set([feedGuid]);
  for (let i = 1 + randomInt(6); i > 0; i--) {
    let target = known.length > 0 && random() < 0.5 ? known[randomInt(known.length)] : undefined;
    if (target && user.busy.has(target.id) && !ids.has(target.id)) continue;
    if (!target) {
      const guid = random() < 0.8 ? `gp-item-${randomUUID()}` : undefined;
      const name = guid ?? `https://cdn.soak.test/gp-${randomUUID()}.mp3`;
      target = { id: uuidV5(feedGuid, name), name, guid };
      known.push(target);
    }
    ids.add(target.id);
    const state = user.liveEpisodes.index.has(target.id) ? user.episodes.get(target.id) : undefined;
    const r = random();
    const action = {
      podcast,
      episode: target.guid ? (state?.mediaUrl ?? `https://cdn.soak.test/gp-${randomUUID()}.mp3`) : target.name,
      ...(target.guid ? { guid: target.guid } : {}),
      action: r < 0.7 ? "play" : r < 0.85 ? "new" : "download",
    };
    const changedAt = deviceTime(action.action === "play" ? state?.positionChangedAt : state?.playedChangedAt, true);
    action.timestamp = new Date(changedAt).toISOString().slice(0, 19);
    if (action.action === "play") {
      const total = random() < 0.8 ? 1800 + randomInt(3600) : undefined;
      action.started = 0;
      action.position = total !== undefined && random() < 0.25 ? total : randomInt(1800);
      if (total !== undefined) action.total = total;
    }
    if (random() < 0.5 && user.devices.size > 0) action.device = [...user.devices][randomInt(user.devices.size)];
    actions.push({ action, target, changedAt });
  }
  user.gpodderEpisodes.set(feedGuid, known);
  return { actions, ids };
}

/** Applies uploaded episode actions to the model, in order (the server applies them so: docs/API.md §14). */
function applyEpisodeActions(user, feedGuid, actions) {
  for (const { action, target, changedAt } of actions) {
    const write = gpodderWrite(action, changedAt);
    if (!write) continue;
    user.episodeWritten(target.id, feedGuid, write);
    stats.writes.gpodderEpisodeWrites += 1;
  }
}

/**
 * Applies a gpodder or Nextcloud `since` answer to a device's URL set; the next `since` is the answer's
 * `timestamp` (gPodder), or `nextSince` (AntennaPod on the Nextcloud paths: its own clock).
 */
function applyGpodderChanges(device, json, kind = "gpodder-subscriptions-get", nextSince = json?.timestamp) {
  if (CHECK && (!Array.isArray(json?.add) || !Array.isArray(json?.remove) || !Number.isInteger(json?.timestamp))) {
    expectSame(kind, [JSON.stringify(json)?.slice(0, 300)], "answer");
    return;
  }
  for (const url of json?.add ?? []) device.urls.add(url);
  for (const url of json?.remove ?? []) device.urls.delete(url);
  if (Number.isInteger(nextSince)) device.since = nextSince;
}

/**
 * A gpodder upload applied to the model (docs/API.md §14): removes first (every live subscription with
 * the URL), then adds (nothing for a live URL; else the tombstone with that URL, else the podcast:guid,
 * unless that guid is live under another URL). Answers the expected update_urls.
 */
function applyGpodderUpload(user, add, remove) {
  for (const url of remove) {
    const guid = user.urlGuid.get(url);
    if (guid !== undefined && user.live.index.has(guid)) {
      user.unsubscribed(guid);
      stats.writes.gpodderUnsubscribed += 1;
    }
  }
  const updateUrls = [];
  for (const url of add) {
    const owner = user.urlGuid.get(url);
    if (owner !== undefined && user.live.index.has(owner)) continue;
    const guid = owner ?? podcastGuid(url);
    if (user.live.index.has(guid)) {
      updateUrls.push([url, user.feedUrl.get(guid)]);
      continue;
    }
    user.subscribed(guid, url);
    stats.writes.gpodderSubscribed += 1;
  }
  return updateUrls;
}

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
      // A user being erased is held by its erasure: its operations wait for it (another user's run instead).
      let user = users[randomInt(users.length)];
      for (let tries = 0; user.exclusive && tries < 8; tries++) user = users[randomInt(users.length)];
      if (user.exclusive) continue;
      traffic.inFlight += 1;
      user.active += 1;
      try {
        await operations[pickKind()](user);
      } finally {
        user.active -= 1;
        traffic.inFlight -= 1;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/**
 * The Cron Trigger every ROUND_SECONDS until `deadline`, beside the traffic (a round must change no other answer):
 * wrangler's local scheduled route runs it (retention and a feed round, src/scheduled.ts) and answers once it ended.
 */
async function feedRoundsUntil(deadline) {
  while (performance.now() + ROUND_SECONDS * 1000 < deadline) {
    await sleep(ROUND_SECONDS * 1000);
    while (traffic.paused) await traffic.paused;
    await feedRound();
  }
}

/** One run of the Cron Trigger; the URLs the feed server answered meanwhile are fetched once it has ended. */
async function feedRound() {
  const path = `/cdn-cgi/local/scheduled?cron=${encodeURIComponent("*/10 * * * *")}&time=${Date.now()}`;
  const started = performance.now();
  let status = 0;
  let text = "";
  const before = new Map(feedServer.answered);
  traffic.inFlight += 1;
  rounds.active += 1;
  rounds.epoch += 1;
  try {
    const response = await fetch(base + path, { signal: AbortSignal.timeout(2 * REQUEST_TIMEOUT_MS) });
    status = response.status;
    text = await response.text();
  } catch (error) {
    stats.networkErrors += 1;
    problem(`feed-round GET ${path}: network error: ${error}`);
  } finally {
    rounds.active -= 1;
    rounds.epoch += 1;
    traffic.inFlight -= 1;
  }
  const ended = performance.now();
  if (stats.phase !== "verify") {
    stats.samples.push({
      phase: stats.phase,
      kind: "feed-round",
      endpoint: E.feedRound,
      ms: ended - started,
      end: ended,
      status,
    });
  }
  if (status >= 500) {
    stats.errors5xx += 1;
    problem(`feed-round: ${status} ${text.slice(0, 300)}`);
  }
  rounds.count += 1;
  if (!expectStatus("feed-round", status, 200, text.slice(0, 200))) return;
  for (const [url, count] of feedServer.answered) {
    if (count === before.get(url)) continue;
    rounds.fetched.add(url);
    rounds.answeredIn.set(url, [...(rounds.answeredIn.get(url) ?? []), `${rounds.count}@${ended.toFixed(0)}`]);
  }
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

/**
 * A read with retries on 429 (Retry-After) and on network errors (counted already): bearer (JSON:API) or,
 * with `auth: "basic"`, the user's app password (gpodder). Answers { status, json, text }.
 */
async function verifyRequest(user, path, { auth = "bearer", accept = JSONAPI, headers = {} } = {}) {
  for (let attempt = 0; ; attempt++) {
    const started = performance.now();
    let response;
    try {
      response = await fetch(base + path, {
        headers: { ...authHeaders(user, auth), Accept: accept, ...headers },
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
    if (response.status >= 500) {
      verification.serverErrors += 1;
      problem(`verify GET ${path}: ${response.status} ${text.slice(0, 300)}`);
    }
    const json = text && /json/.test(response.headers.get("Content-Type") ?? "") ? JSON.parse(text) : undefined;
    return { status: response.status, json, text, etag: response.headers.get("ETag") };
  }
}

/** The users whose list ETags a feed round run in the verification must leave current (§18). */
const ETAG_SAMPLE = 20;

/** The first page's ETag (no include: an answer with podcasts has none) of the first ETAG_SAMPLE users. */
async function listETags(users) {
  const tags = new Map();
  for (const user of users.slice(0, ETAG_SAMPLE)) {
    const { status, etag } = await verifyRequest(user, "/v1/subscriptions?page[size]=100");
    if (status === 200 && etag) tags.set(user, etag);
    else mismatch("etagMismatches", `${user.id}: the list answered ${status} with ETag ${etag}`);
  }
  return tags;
}

/** A podcast's changes are no changes of the subscriptions: the ETags read before a round still answer 304. */
async function verifyETagsKept(tags) {
  for (const [user, etag] of tags) {
    verification.etagsChecked += 1;
    const { status } = await verifyRequest(user, "/v1/subscriptions?page[size]=100", {
      headers: { "If-None-Match": etag },
    });
    if (status !== 304) mismatch("etagMismatches", `${user.id}: the list's ETag from before the last round: ${status}`);
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
  episodesChecked: 0,
  forgottenChecked: 0,
  episodesLost: 0,
  episodesPhantom: 0,
  episodesWrong: 0,
  followers: 0, // devices compared (two change feeds and one gpodder `since` follower per user)
  followerMismatches: 0,
  gpodderStale: 0, // URLs a gpodder follower keeps after a move (the protocol cannot say)
  gpodderMismatches: 0,
  otherMismatches: 0, // OPML export, devices, app passwords
  podcastsChecked: 0,
  podcastMismatches: 0, // include=podcast of the whole list against the feed rounds
  nameMismatches: 0, // OPML exports' outline names
  etagsChecked: 0,
  etagMismatches: 0, // list ETags a feed round changed
  pagesChecked: 0, // users whose account pages were read (signed in, or with an ended session)
  pageMismatches: 0, // users whose pages differ
  serverErrors: 0,
  seconds: 0,
};

/** Counts one disagreement of the final state with the model under `counter`, with its first lines. */
function mismatch(counter, text) {
  verification[counter] += 1;
  problem(text);
}

/**
 * Every page of the user's list (page[size]=100, following links.next, with the podcasts: include=podcast):
 * guid -> feedUrl, or undefined; `podcasts` gets guid -> the podcast's attributes.
 */
async function readList(user, podcasts = new Map()) {
  const listed = new Map();
  let path = "/v1/subscriptions?page[size]=100&include=podcast";
  for (let page = 1; path; page++) {
    const { status, json } = await verifyRequest(user, path);
    if (status !== 200 || !Array.isArray(json?.data)) {
      problem(`list of ${user.id} page ${page}: ${status}`);
      return undefined;
    }
    if (json.meta?.total !== user.live.size) {
      verification.totalMismatches += 1;
      problem(`meta.total of ${user.id}: ${json.meta?.total}, expected ${user.live.size}`);
    }
    for (const resource of json.data) listed.set(resource.id, resource.attributes?.feedUrl);
    for (const podcast of json.included ?? []) podcasts.set(podcast.id, podcast.attributes);
    const next = json.links?.next;
    path = json.data.length > 0 && next ? stripOrigin(next) : undefined;
  }
  return listed;
}

/**
 * The subscription list, read once and compared with the model: exactly the live set with the right
 * feedUrls (a live guid missing is a lost write, a listed guid not live a phantom one); one GET of a live
 * and of an unsubscribed guid checks that the single-resource path agrees. Answers the list.
 */
async function verifySubscriptions(user) {
  const podcasts = new Map();
  const listed = await readList(user, podcasts);
  if (!listed) {
    verification.listMismatches += 1;
    return undefined;
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

  // Each live subscription's podcast as the feed rounds left it (§18): no round runs now, so exactly.
  for (const guid of user.live.items) {
    if (!listed.has(guid)) continue; // lost, counted above
    verification.podcastsChecked += 1;
    const url = user.feedUrl.get(guid);
    const differences = podcastDifferences(podcasts.get(guid), url, rounds.fetched, rounds.forgettable.has(url));
    if (differences.length > 0) mismatch("podcastMismatches", `${user.id} ${guid}: ${differences.join("; ")}`);
  }

  const samples = [
    [user.live.items[0], 200],
    [user.dead.items[0], 404],
  ].filter(([guid]) => guid !== undefined);
  for (const [guid, expected] of samples) {
    const { status, json } = await verifyRequest(user, `/v1/subscriptions/${guid}`);
    const feedUrlOk = expected === 404 || json?.data?.attributes?.feedUrl === user.feedUrl.get(guid);
    if (status !== expected || !feedUrlOk) {
      verification.getMismatches += 1;
      problem(`GET of ${user.id} ${guid}: ${status}, expected ${expected}${feedUrlOk ? "" : " with its feedUrl"}`);
    }
  }
  return listed;
}

/**
 * Every episode state, read through the episode change feed from 0 (page[size]=100): each live state of the
 * model with all its fields, no other live one, every tombstone one the model forgot; one GET of a live
 * and of a forgotten state.
 */
async function verifyEpisodes(user) {
  const all = { token: "0", items: new Map() };
  const tombstones = new Set();
  const status = await followChangeFeed(
    all,
    "episodes",
    100,
    (path) => verifyRequest(user, path),
    (device, data) => {
      applyEpisodeChanges(device, data);
      for (const item of data) {
        if (item.attributes?.deletedAt === null) tombstones.delete(item.id);
        else tombstones.add(item.id);
      }
    },
  );
  if (status !== 200) return mismatch("episodesWrong", `episode feed of ${user.id}: ${status}`);
  for (const id of user.liveEpisodes.items) {
    verification.episodesChecked += 1;
    const served = all.items.get(id);
    if (!served) {
      mismatch("episodesLost", `lost episode write: ${user.id} ${id} is not in the episode feed`);
      continue;
    }
    const differences = episodeDifferences(served, user.episodes.get(id));
    if (differences.length > 0) mismatch("episodesWrong", `episode ${user.id} ${id}: ${differences.join("; ")}`);
  }
  for (const id of all.items.keys()) {
    if (!user.liveEpisodes.index.has(id)) mismatch("episodesPhantom", `phantom episode: ${user.id} ${id}`);
  }
  for (const id of user.forgottenEpisodes.items) {
    verification.forgottenChecked += 1;
    if (!tombstones.has(id)) mismatch("episodesWrong", `forgotten episode ${user.id} ${id} has no tombstone`);
  }
  for (const [id, expected] of [
    [user.liveEpisodes.items[0], 200],
    [user.forgottenEpisodes.items[0], 404],
  ]) {
    if (id === undefined) continue;
    const { status: got, json } = await verifyRequest(user, `/v1/episodes/${id}`);
    const same = expected === 404 || episodeDifferences(json?.data, user.episodes.get(id)).length === 0;
    if (got !== expected || !same)
      mismatch("getMismatches", `GET of episode ${user.id} ${id}: ${got}, expected ${expected}`);
  }
}

/** The devices that followed each change feed: one last sync from their stored tokens, then equal to the model. */
async function verifyFollowers(user) {
  const subscriptions = user.subscriptionDevice;
  let status = await followChangeFeed(
    subscriptions,
    "subscriptions",
    100,
    (path) => verifyRequest(user, path),
    applySubscriptionChanges,
  );
  verification.followers += 1;
  const subscriptionDiffers =
    status !== 200 ||
    subscriptions.items.size !== user.live.size ||
    user.live.items.some((guid) => subscriptions.items.get(guid) !== user.feedUrl.get(guid));
  if (subscriptionDiffers) {
    mismatch(
      "followerMismatches",
      `${user.id}: the subscription change-feed device (${subscriptions.items.size}) differs from the model (${user.live.size})`,
    );
  }
  const episodes = user.episodeDevice;
  status = await followChangeFeed(episodes, "episodes", 100, (path) => verifyRequest(user, path), applyEpisodeChanges);
  verification.followers += 1;
  const episodesDiffer =
    status !== 200 ||
    episodes.items.size !== user.liveEpisodes.size ||
    user.liveEpisodes.items.some((id) => episodeDifferences(episodes.items.get(id), user.episodes.get(id)).length > 0);
  if (episodesDiffer) {
    mismatch(
      "followerMismatches",
      `${user.id}: the episode change-feed device (${episodes.items.size}) differs from the model (${user.liveEpisodes.size})`,
    );
  }
}

/**
 * The gpodder reads of the final state agree with the JSON:API's: the simple API's list (same URLs, list
 * order), `since=0` (add: the live URLs; remove: the tombstones' URLs no live one has), the device that
 * followed `since` (the live URLs, plus at most URLs that subscriptions moved away from, which the gpodder
 * protocol has no way to report), the episode actions (one per live state of a user's feed, with the
 * state's position and played), the devices (each one written, counting the live subscriptions).
 */
async function verifyGpodder(user, listed) {
  const username = user.gpodder.username;
  const get = (path, accept = "application/json") => verifyRequest(user, path, { auth: "basic", accept });
  const liveUrls = user.live.items.map((guid) => user.feedUrl.get(guid));
  const liveSet = new Set(liveUrls);

  const simple = await get(`/subscriptions/${username}.json`);
  const listOrder = listed ? [...listed.values()] : liveUrls;
  if (simple.status !== 200 || JSON.stringify(simple.json) !== JSON.stringify(listOrder)) {
    mismatch(
      "gpodderMismatches",
      `${user.id}: simple API list (${simple.status}, ${simple.json?.length} URLs) differs from the JSON:API list (${listOrder.length})`,
    );
  }

  const all = await get(`/api/2/subscriptions/${username}/${DEVICE_IDS[0]}.json?since=0`);
  const removed = new Set(user.dead.items.map((guid) => user.feedUrl.get(guid)).filter((url) => !liveSet.has(url)));
  const sameSet = (array, set) => Array.isArray(array) && array.length === set.size && array.every((x) => set.has(x));
  if (all.status !== 200 || !sameSet(all.json?.add, liveSet) || !sameSet(all.json?.remove, removed)) {
    mismatch(
      "gpodderMismatches",
      `${user.id}: gpodder since=0 (${all.status}, add ${all.json?.add?.length}, remove ${all.json?.remove?.length}) differs from the model (${liveSet.size}, ${removed.size})`,
    );
  }

  if (all.status === 200) user.devices.add(DEVICE_IDS[0]); // a path naming a device creates it
  const device = user.gpodderDevice;
  const changes = await get(`/api/2/subscriptions/${username}/${DEVICE_IDS[0]}.json?since=${device.since}`);
  if (changes.status === 200) applyGpodderChanges(device, changes.json);
  verification.followers += 1;
  const missing = liveUrls.filter((url) => !device.urls.has(url));
  const extra = [...device.urls].filter((url) => !liveSet.has(url));
  const stale = extra.filter((url) => user.formerUrls.has(url));
  verification.gpodderStale += stale.length;
  if (changes.status !== 200 || missing.length > 0 || stale.length < extra.length) {
    mismatch(
      "followerMismatches",
      `${user.id}: the gpodder since-follower misses ${missing.length} live URLs and holds ${extra.length - stale.length} others`,
    );
  }

  const actions = await get(`/api/2/episodes/${username}.json?since=0`);
  const expected = new Map();
  for (const id of user.liveEpisodes.items) {
    const state = user.episodes.get(id);
    const podcast = user.feedUrl.get(state.feedGuid);
    const action = podcast === undefined ? undefined : gpodderActionOf(podcast, state);
    if (action) expected.set(actionText(action), id);
  }
  const served = Array.isArray(actions.json?.actions) ? actions.json.actions.map(actionText) : undefined;
  const unexpected = served?.filter((text) => !expected.has(text)) ?? [];
  if (actions.status !== 200 || !served || served.length !== expected.size || unexpected.length > 0) {
    mismatch(
      "gpodderMismatches",
      `${user.id}: gpodder episode actions (${actions.status}, ${served?.length}) differ from the episode states (${expected.size})${unexpected.length ? `: ${unexpected[0]}` : ""}`,
    );
  }

  // The Nextcloud paths read the same data (§17): the AntennaPod device that followed the subscription changes
  // from its own clock, after a last sync, holds the live URLs; the episode actions are the gpodder ones.
  const nextcloud = user.nextcloudDevice;
  const sinceClock = await get(`${NEXTCLOUD}/subscriptions?since=${nextcloud.since}`);
  if (sinceClock.status === 200) applyGpodderChanges(nextcloud, sinceClock.json, "nextcloud-subscriptions-get");
  verification.followers += 1;
  const ncMissing = liveUrls.filter((url) => !nextcloud.urls.has(url));
  const ncExtra = [...nextcloud.urls].filter((url) => !liveSet.has(url) && !user.formerUrls.has(url));
  if (sinceClock.status !== 200 || ncMissing.length > 0 || ncExtra.length > 0) {
    mismatch(
      "followerMismatches",
      `${user.id}: the Nextcloud since-follower (since ${nextcloud.since}) misses ${ncMissing.length} live URLs and holds ${ncExtra.length} others`,
    );
  }
  const ncActions = await get(`${NEXTCLOUD}/episode_action?since=0`);
  const ncServed = Array.isArray(ncActions.json?.actions) ? ncActions.json.actions.map(actionText) : undefined;
  const ncUnexpected = ncServed?.filter((text) => !expected.has(text)) ?? [];
  if (ncActions.status !== 200 || !ncServed || ncServed.length !== expected.size || ncUnexpected.length > 0) {
    mismatch(
      "gpodderMismatches",
      `${user.id}: Nextcloud episode actions (${ncActions.status}, ${ncServed?.length}) differ from the episode states (${expected.size})${ncUnexpected.length ? `: ${ncUnexpected[0]}` : ""}`,
    );
  }

  const devices = await get(`/api/2/devices/${username}.json`);
  const listedDevices = Array.isArray(devices.json) ? devices.json : [];
  const devicesDiffer =
    devices.status !== 200 ||
    listedDevices.length !== user.devices.size ||
    listedDevices.some((d) => !user.devices.has(d.id) || d.subscriptions !== user.live.size);
  if (devicesDiffer)
    mismatch(
      "otherMismatches",
      `${user.id}: devices ${JSON.stringify(devices.json)?.slice(0, 200)}, expected ${[...user.devices]}`,
    );
}

/** The OPML export (guids and URLs in list order) and the app passwords (exactly the model's). */
async function verifyOthers(user, listed) {
  const opml = await verifyRequest(user, "/v1/subscriptions.opml", { accept: "text/x-opml" });
  const outlines = opml.status === 200 ? opmlOutlines(opml.text) : undefined;
  const wanted = listed ? [...listed] : [];
  if (!outlines || JSON.stringify([...outlines]) !== JSON.stringify(wanted)) {
    mismatch(
      "otherMismatches",
      `${user.id}: the OPML export (${opml.status}, ${outlines?.size} outlines) differs from the list (${wanted.length})`,
    );
  }
  const names = nameDifferences(user, opmlNames(opml.text), performance.now(), roundMark());
  if (names.length > 0) mismatch("nameMismatches", `${user.id}: the OPML export: ${names.join("; ").slice(0, 300)}`);
  const passwords = await verifyRequest(user, "/v1/app-passwords");
  const ids = Array.isArray(passwords.json?.data) ? passwords.json.data.map((r) => r.id) : [];
  if (
    passwords.status !== 200 ||
    ids.length !== user.appPasswords.size ||
    ids.some((id) => !user.appPasswords.has(id))
  ) {
    mismatch("otherMismatches", `${user.id}: app passwords ${ids}, expected ${[...user.appPasswords]}`);
  }
}

/** One user's whole state, read once and compared with the model in memory. */
async function verifyUser(user) {
  const listed = await verifySubscriptions(user);
  await verifyEpisodes(user);
  await verifyFollowers(user);
  if (user.gpodder.username) await verifyGpodder(user, listed);
  await verifyOthers(user, listed);
  await verifyPages(user, listed);
}

/**
 * The account pages of a person whose browser the model holds signed in: the first subscriptions page is the
 * list's first 25 (order, URLs, names by the feed rounds), the progress page holds live states as the model has
 * them. A session the model ended (Sign out, the erasure) opens no page. One mismatch per user at most.
 */
async function verifyPages(user, listed) {
  const differences = [];
  if (user.browser.ended) differences.push(...(await endedSessionDifferences("verify", user.browser.ended)));
  if (user.browser.antiForgery) {
    const [since, mark] = [performance.now(), roundMark()];
    const page = await browse("verify", E.accountSubscriptions, user, "GET", "/account/subscriptions");
    const rows = subscriptionRows(page.text);
    const first = listed ? [...listed.keys()].slice(0, 25) : [];
    if (page.status !== 200 || rows.map((r) => r.guid).join() !== first.join()) {
      differences.push(
        `subscriptions page ${page.status} with ${rows.length} rows, not the list's first ${first.length}`,
      );
    } else differences.push(...subscriptionRowDifferences(user, page.text, since, mark));
    const progress = await browse("verify", E.accountProgress, user, "GET", "/account/progress");
    if (progress.status !== 200) differences.push(`progress page ${progress.status}`);
    else {
      const rows = progressRows(progress.text);
      if (rows.length !== Math.min(50, user.liveEpisodes.size)) {
        differences.push(`progress page with ${rows.length} rows, of ${user.liveEpisodes.size} live states`);
      }
      differences.push(...progressDifferences(user, progress.text, since, mark));
    }
  }
  if (!user.browser.ended && !user.browser.antiForgery) return;
  verification.pagesChecked += 1;
  if (differences.length > 0)
    mismatch("pageMismatches", `${user.id}: account pages: ${differences.join("; ").slice(0, 300)}`);
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
 * Self-test of the verification (SOAK_SELF_TEST=lose-write): unsubscribes one live subscription and forgets
 * one live episode state behind the model's back, so the run must report a lost subscription write, a lost
 * episode state, followers and gpodder reads differing, and exit non-zero.
 */
async function loseOneWrite(users) {
  const user = users.find((u) => u.live.size > 0);
  const lost = user?.live.items[0];
  if (user) {
    const guid = lost;
    const { status } = await request("self-test", E.delete, user, "DELETE", `/v1/subscriptions/${guid}`);
    console.log(`soak: self-test: unsubscribed ${user.id} ${guid} behind the model's back (${status})`);
  }
  const listener = users.find((u) => u.liveEpisodes.size > 0);
  if (listener) {
    const id = listener.liveEpisodes.items[0];
    const { status } = await request("self-test", E.episodeDelete, listener, "DELETE", `/v1/episodes/${id}`);
    console.log(`soak: self-test: forgot episode ${listener.id} ${id} behind the model's back (${status})`);
  }
  // A broken model of the feed rounds: one feed a round fetched taken for pending (or, if none was, one still
  // pending taken for fetched). Its podcast and its OPML name must be reported.
  const okFeeds = (u) =>
    u.live.items
      .filter((guid) => guid !== lost)
      .map((guid) => u.feedUrl.get(guid))
      // A forgettable URL may read either way (roundUncertain): the broken model must be one the soak can see.
      .filter((url) => feedVariant(url) === "ok" && !rounds.forgettable.has(url));
  // A fetched one of any user first: it stays fetched, so the verification must see the difference. A pending one
  // taken for fetched is the fallback only (a round may fetch it before the verification reads it: a clean-clone
  // CI of 103ab3b found no difference that way, with 27 feeds fetched by then).
  const feedUser =
    users.find((u) => okFeeds(u).some((url) => rounds.fetched.has(url))) ?? users.find((u) => okFeeds(u).length > 0);
  if (feedUser) {
    const urls = okFeeds(feedUser);
    const fetched = urls.find((url) => rounds.fetched.has(url));
    if (fetched) rounds.fetched.delete(fetched);
    else rounds.fetched.add(urls[0]);
    console.log(`soak: self-test: the model takes ${fetched ?? urls[0]} for ${fetched ? "pending" : "fetched"}`);
  }
  // A session ended behind the model's back: its pages must be reported.
  const person = users.find((u) => !u.browser.ended && u.gpodder.username) ?? users[0];
  if (await signedInToPages(person)) {
    const jar = new Map(person.browser.jar.get(base));
    const { status } = await browse("self-test", E.accountSignOut, person, "POST", "/account/signout", {
      anti_forgery_token: person.browser.antiForgery,
    });
    person.browser.jar.set(base, jar);
    console.log(`soak: self-test: signed ${person.id} out of the account pages behind the model's back (${status})`);
  }
}

// ---------------------------------------------------------------------------------------------------------
// The server: wrangler dev in its own process group, killed (group and all) whatever happens.
let server; // { child, logPath }
let identityProvider; // scripts/dev-oidc-provider.mjs's startDevProvider()
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
  const [port, inspectorPort] = [await freePort(), await freePort()];
  // The account pages sign in with the local OpenID Connect provider of `npm run dev` (scripts/dev-oidc-provider.mjs).
  identityProvider = await startDevProvider();
  identityProvider.serve({ clients: [devClient([`http://127.0.0.1:${port}/account/callback`])] });
  // Every soak feed is on the soak's feed server, on loopback: fetched only with FEED_FETCH_ALLOW_PRIVATE=true.
  feedServer = await startSoakFeeds();
  const envFile = join(temp, "soak.env");
  writeFileSync(
    envFile,
    `AUTH_JWT_SECRET=${secret}\nOIDC_ISSUER=${identityProvider.issuer}\nOIDC_CLIENT_ID=${DEV_CLIENT_ID}\n` +
      "FEED_FETCH_ALLOW_PRIVATE=true\n",
    { mode: 0o600 },
  );
  runWrangler(["d1", "migrations", "apply", "DB", "--local", "--persist-to", persist]);

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
  await identityProvider?.close();
  identityProvider = undefined;
  await feedServer?.close();
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
  // { t: s since the soak began, requests: soak requests so far, heapWithCaches?, heap? (the bounded caches
  // emptied): {usedBeforeGc, used, total} (bytes), caches?: [{ maxEntries, size }], rss: { label: MiB } }
  samples: [],
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
      // The bounded caches (verified tokens and credentials, user digests, feed guids) fill by design up to
      // their bounds, which a 10-minute soak does not reach: the heap is read with them as they are, then
      // emptied. The heap without them is the series the verdict fits; the caches refill within the next
      // interval (a miss costs a lookup, never a different answer).
      sample.heapWithCaches = await inspector.heapUsage();
      sample.caches = await inspector.boundedCaches({ empty: true });
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
    `(fitted ${mib(growth.fitStart)} → ${mib(growth.fitEnd)} MiB after GC with the bounded caches emptied, ${growth.samples} samples; limit +5 %)`
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
          `${v.lost} lost and ${v.phantom} phantom subscription writes (${v.wrongFeedUrl} wrong feedUrls, ` +
          `${v.totalMismatches} wrong meta.total, ${v.getMismatches} GETs disagreeing), verified in ${v.seconds.toFixed(1)} s`,
      },
      {
        ok: v.episodesLost + v.episodesPhantom + v.episodesWrong === 0,
        text: `${v.episodesLost} lost, ${v.episodesPhantom} phantom and ${v.episodesWrong} wrong episode states (${v.episodesChecked} live checked)`,
      },
      {
        ok: v.followerMismatches + v.gpodderMismatches + v.otherMismatches === 0,
        text:
          `${v.followerMismatches} of ${v.followers} change-feed and since followers differing from the server, ` +
          `${v.gpodderMismatches} gpodder reads disagreeing with the JSON:API, ${v.otherMismatches} OPML exports, devices or app-password lists differing`,
      },
      {
        ok: v.podcastMismatches + v.nameMismatches + v.etagMismatches + v.pageMismatches === 0,
        text:
          `${v.podcastMismatches} of ${v.podcastsChecked} podcasts differing from the feed rounds (${rounds.count} rounds, ` +
          `${rounds.fetched.size} feeds fetched), ${v.nameMismatches} OPML exports naming them otherwise, ` +
          `${v.etagMismatches} of ${v.etagsChecked} list ETags changed by a round, ` +
          `${v.pageMismatches} of ${v.pagesChecked} account pages differing`,
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
    "The heap after GC is what the isolate keeps between requests. Then the isolate's bounded caches (every",
    "`BoundedMap`, src/bounded-map.ts: verified tokens and gpodder credentials, user digests, feed guids; found",
    "with `Runtime.queryObjects`, no code of the Worker involved) are counted and emptied, and the heap after GC",
    "is read again: the series the verdict uses. The caches fill by design up to their bounds, which a 10-minute",
    "soak does not reach, so with them the heap rises for as long as they fill; without them, anything else",
    "that stays behind shows. They refill within the next interval (a miss costs a lookup, never another",
    "answer). RSS from /proc for each workerd process, read just before. The verdict fits a line through the",
    `samples of the last ${windowName()} (Theil-Sen: the median of the slopes between every two samples, so that a sample`,
    "catching garbage the collections left does not decide) and divides its rise by its value at the start.",
    "",
    ...cacheLines(),
  );
  const labels = [WORKERD_WORKER, WORKERD_PROXY];
  lines.push(
    `| Time s | Requests | Heap before GC MiB | Heap after GC MiB | Cache entries | Heap after GC, caches emptied, MiB | ${labels.map((l) => `${l} RSS MiB`).join(" | ")} |`,
    `| ---: | ---: | ---: | ---: | ---: | ---: | ${labels.map(() => "---:").join(" | ")} |`,
  );
  for (const s of memory.samples) {
    const before = s.heapWithCaches ?? s.heap;
    const heap = before
      ? [
          mib(before.usedBeforeGc),
          `${mib(before.used)} (${before.collections})`,
          cacheEntries(s) ?? "-",
          s.heap ? `${mib(s.heap.used)} (${s.heap.collections})` : "-",
        ]
      : ["-", "-", "-", "-"];
    const rss = labels.map((l) => (s.rss[l] === undefined ? "-" : s.rss[l].toFixed(0)));
    lines.push(`| ${s.t.toFixed(0)} | ${s.requests} | ${heap.join(" | ")} | ${rss.join(" | ")} |`);
  }
  lines.push("");
  return lines;
}

const cacheEntries = (sample) => sample.caches?.reduce((sum, cache) => sum + cache.size, 0);

/**
 * What the bounded caches cost: bytes per entry (the median over the samples of the heap they freed divided
 * by the entries they held) and so what they would hold at their bounds.
 */
function cacheLines() {
  const perEntry = memory.samples
    .filter((s) => s.heapWithCaches && s.heap && cacheEntries(s) > 0)
    .map((s) => (s.heapWithCaches.used - s.heap.used) / cacheEntries(s))
    .sort((a, b) => a - b);
  const last = memory.samples.findLast((s) => s.caches);
  if (!last || perEntry.length === 0) return [];
  const bytes = perEntry[Math.floor(perEntry.length / 2)];
  const bound = last.caches.reduce((sum, cache) => sum + cache.maxEntries, 0);
  const bounds = last.caches.map((cache) => cache.maxEntries.toLocaleString("en-US")).join(", ");
  return [
    `The caches (bounds ${bounds} entries) freed about ${bytes.toFixed(0)} bytes of heap per entry they held`,
    `(median of ${perEntry.length} samples), so at their bounds they would hold about ${mib(bytes * bound)} MiB: a fixed cost, reached once`,
    "they are full, never exceeded (their bounds are tested in test/bounded-caches.test.ts).",
    "",
  ];
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
    "(migrations applied first), HS256 tokens and one app password per user, mixed traffic on every endpoint",
    "(subscriptions, their change feed, feed moves, OPML, episode states and their feed, bulk, app passwords,",
    "the gpodder.net API with HTTP Basic and the session cookie, the Nextcloud paths, the account pages and the",
    "Login Flow, the podcasts) from several users at a fixed concurrency, the Cron Trigger's feed round every",
    `${ROUND_SECONDS} s beside it (its feeds on a local feed server),`,
    "the Worker isolate's JS heap and each workerd process's resident memory sampled throughout, then",
    "verification that every acknowledged write is there and nothing else is, through every API. Timings are",
    "client-side, per request (send to last body byte), from a Node.js client on the same machine as the server.",
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
    "A kind whose target was not available (no live or unsubscribed guid, no episode free for that user, the",
    "user's app password being replaced) ran as another kind instead and is counted as that. A kind may send",
    "several requests (a change-feed sync follows `links.next`; a rotation mints, then deletes).",
    "",
  );
  lines.push("### Statuses by endpoint", "");
  lines.push(
    "Every request of the soak, by endpoint. No 5xx is allowed; the 4xx the traffic asks for on purpose are",
    "named (any other 4xx, or any 2xx other than the one the model predicts, is an unexpected answer and fails",
    "the run); 429 (rate limited, nothing done) is counted and allowed everywhere.",
    "",
  );
  row(["Endpoint", "Requests", "p50 ms", "p99 ms", "Statuses", "Expected 4xx"]);
  row(["---", "---:", "---:", "---:", "---", "---"]);
  for (const endpoint of Object.values(E)) {
    const samples = soak.filter((x) => x.endpoint === endpoint);
    const s = summarize(samples);
    row([
      `\`${endpoint}\``,
      s.count,
      fmt(s.p50),
      fmt(s.p99),
      statuses(samples) || "-",
      EXPECTED_4XX[endpoint] ?? "none",
    ]);
  }
  lines.push("");
  if (stats.inline.size > 0) {
    lines.push(
      `Bulk requests carry 1-20 operations; their inline results, each checked against the model: ${[...stats.inline]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, n]) => `${name} ${n}`)
        .join(", ")} (409: already subscribed; 404: not there, on purpose).`,
      "",
    );
  }

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
    "Counted over the setup, the warm-up, the ramp and the soak: every acknowledged write is in the model, and",
    "the model is compared with the server once the traffic has stopped, user by user: the subscription list",
    "page by page (`page[size]=100`), exactly the live set with its feedUrls and `meta.total`; every episode",
    "state through the episode change feed from `0`, exactly the live states with every field, and a",
    "tombstone for each forgotten one; one GET of a live and of an unsubscribed subscription and episode; the",
    "devices that followed each change feed during the soak, after one last sync from their stored tokens,",
    "equal to the model; the gpodder reads (simple API list in list order, `since=0`, the device that",
    "followed `since`, episode actions, devices) agreeing with it; the OPML export equal to the list; the",
    "app passwords exactly those minted and not deleted; every live subscription's podcast (`include=podcast`)",
    "and OPML name as the feed rounds left them; the subscriptions and progress pages of each person signed in,",
    "and every ended session opening none; after one more round (no traffic), 20 users' list ETags still current.",
    "",
  );
  const live = (users) => users.reduce((n, u) => n + u.live.size, 0);
  const w = stats.writes;
  const v = verification;
  row(["", ""]);
  row(["---", "---"]);
  row(["Single POSTs answered 201", `${w.single201} (${w.singleRevived} of them revived a tombstone)`]);
  row(["Feed moves (PATCH 200, bulk update)", `${w.moved}, ${w.bulkMoved}`]);
  row(["Unsubscriptions (DELETE 204, bulk remove)", `${w.deleted}, ${w.bulkRemoved}`]);
  row(["Bulk adds that succeeded", `${w.bulkAdded} (${w.bulkRevived} of them revived a tombstone)`]);
  row(["Subscribed by OPML import", w.opmlImported]);
  row(["gpodder uploads: subscribed, unsubscribed", `${w.gpodderSubscribed}, ${w.gpodderUnsubscribed}`]);
  row([
    "Episode writes: POST 201, merges (POST 200, PATCH), bulk, gpodder actions",
    `${w.episodesCreated}, ${w.episodesMerged}, ${w.bulkEpisodeWrites}, ${w.gpodderEpisodeWrites}`,
  ]);
  row(["Episodes forgotten (DELETE 204, bulk remove)", `${w.episodesForgotten}, ${w.bulkEpisodesForgotten}`]);
  row([
    "App passwords minted, deleted; gpodder devices written",
    `${w.appPasswordsMinted}, ${w.appPasswordsDeleted}; ${w.gpodderDevices}`,
  ]);
  row(["Account pages: unsubscribed, subscribed by OPML import", `${w.pageUnsubscribed}, ${w.pageImported}`]);
  row([
    "Sign-outs; erasures done, refused (400); Login Flows denied",
    `${w.signOuts}; ${w.erasures}, ${w.erasuresRefused}; ${w.flowsDenied}`,
  ]);
  row([
    "Feed rounds; feeds they fetched (of the feed URLs the traffic made up)",
    `${rounds.count}; ${rounds.fetched.size} (${stats.feedUrls} URLs)`,
  ]);
  row([
    "Podcasts checked; account pages checked (users); list ETags kept",
    `${v.podcastsChecked}; ${v.pagesChecked}; ${v.etagsChecked}`,
  ]);
  row([
    "**Podcasts, OPML names, list ETags, account pages differing**",
    `**${v.podcastMismatches}, ${v.nameMismatches}, ${v.etagMismatches}, ${v.pageMismatches}**`,
  ]);
  row(["Subscriptions that must be live", `${v.liveChecked} (sum over users: ${live(usersForReport)})`]);
  row(["Unsubscribed that must be absent", v.deadChecked]);
  row(["**Lost writes** (live, but not listed)", `**${v.lost}**`]);
  row(["**Phantom writes** (listed, but not live)", `**${v.phantom}** (${v.resurrected} of them unsubscribed)`]);
  row(["Wrong feedUrl", v.wrongFeedUrl]);
  row(["Lists not equal to the live set", `${v.listMismatches} of ${usersForReport.length} users`]);
  row(["`meta.total` not equal to the live count", v.totalMismatches]);
  row(["Episode states that must be live; forgotten ones", `${v.episodesChecked}; ${v.forgottenChecked}`]);
  row(["**Lost, phantom, wrong episode states**", `**${v.episodesLost}, ${v.episodesPhantom}, ${v.episodesWrong}**`]);
  row(["GETs disagreeing with the list or the feed", v.getMismatches]);
  row([
    "Change-feed and `since` followers not equal to the server",
    `${v.followerMismatches} of ${v.followers} (gpodder followers hold ${v.gpodderStale} URLs that subscriptions moved away from: the protocol has no way to say)`,
  ]);
  row(["gpodder reads disagreeing with the JSON:API", v.gpodderMismatches]);
  row(["OPML exports, devices, app-password lists disagreeing", v.otherMismatches]);
  row([
    "Verification",
    `**${v.seconds.toFixed(1)} s**, ${v.requests} requests (p50 ${fmt(
      percentile(
        [...v.ms].sort((a, b) => a - b),
        50,
      ),
    )} ms, ${v.throttled} retried after 429)`,
  ]);
  lines.push("");
  lines.push("## Errors", "");
  lines.push(
    `5xx responses (warm-up, ramp, soak and verification): ${errors5xx}. Network errors: ${stats.networkErrors}. Unexpected answers: ${stats.unexpected}. ` +
      `Error lines in the wrangler dev log (wrangler errors, Worker error logs): ${logErrors.length}. ` +
      `Sign-in answers 503 with Retry-After, the identity provider (in the load client's process) too slow for the ` +
      `worker's 5 s, each followed by a new sign-in as a person would (not counted as 5xx): ${stats.issuerTooSlow}.`,
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
    // Setup: one app password per user, for the gpodder traffic (minted again now and then during it).
    enter("setup");
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < users.length) await mintAppPassword(users[next++], "setup");
      }),
    );
    console.log(`soak: ${users.filter((u) => u.gpodder.username).length} app passwords minted`);

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
    await Promise.all([
      drive(users, concurrency, soakDeadline),
      sampleDuringSoak(inspector, soakStart, soakDeadline),
      ...(CHECK ? [feedRoundsUntil(soakDeadline)] : []),
    ]);
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
      // One more round, with no traffic: it must change no list's ETag (read before, checked after everything).
      const tags = await listETags(users);
      // The self-test's writes come between the two ETag reads, so that the lost subscription changes one.
      if (process.env.SOAK_SELF_TEST === "lose-write") await loseOneWrite(users);
      await feedRound();
      console.log(`soak: verifying every write (${users.length} users, ${concurrency} at a time) ...`);
      await verifyAll(users, concurrency);
      await verifyETagsKept(tags);
      console.log(`soak: verified in ${verification.seconds.toFixed(1)} s (${verification.requests} requests)`);
    }
    clearInterval(sampler);

    const verdicts = verdictsOf(growth);
    const failed = verdicts.some((v) => !v.ok);
    const run = { started, concurrency, ramp, soakStart, soakEnd, rss, failed, cpu, loadBefore, logErrors, growth };
    if (JSON_REPORT) writeJson(REPORT, runSummary(run));
    else report({ ...run, verdicts });
    for (const v of verdicts) console.log(`soak: ${v.ok ? "ok  " : "FAIL"} ${v.text}`);
    // The report may be a scratch file (scripts/ci-soak's): a failed run says its first problems where CI shows them.
    if (failed) for (const text of stats.failures) console.log(`soak: problem: ${text.slice(0, 1500)}`);
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
