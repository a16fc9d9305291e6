#!/usr/bin/env node
// The most expensive single requests a free account can make (issue 30), measured on this tree and on a git ref
// (default 561cdf2, the main before the fixes) in one run, interleaved, on the same machine:
//
//   node bench/worst-request.mjs [--ref <git ref>] [--rounds <n>]
//
// Each side is its own workerd (Miniflare, as `npm run bench` serves: bench/lib/server.mjs) running
// bench/worst-request-worker.ts around that side's app, with its own D1 seeded the same way, and the accounts
// built through that side's own API where the API is the point (the device captions, the uploads). Per request:
// the workerd process's CPU (user + system from /proc, the request sent alone; local D1 runs SQLite in the same
// process, so its work is in this figure too), D1's SQL time (the sum of `meta.duration`, what D1 reports it
// spent), the bytes of the answer, D1 round trips and rows, what the per-user rate limiter was charged (its calls
// for the user: the request's own and what it was charged beyond), and the growth of the workerd's peak resident
// memory over the request (VmHWM after `clear_refs` 5). Prints a table (medians over the rounds) and the raw JSON.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sign } from "hono/jwt";
import { buildWorker } from "./lib/build.mjs";
import { cpuMs } from "./lib/load.mjs";
import { applyMigrations, startServer } from "./lib/server.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BENCH_DIR = fileURLToPath(new URL(".", import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const REF = option("--ref", "561cdf2");
const ROUNDS = Number(option("--rounds", "3"));

const log = (line) => process.stderr.write(`${line}\n`);
const workDir = mkdtempSync(join(tmpdir(), "worst-request-"));
const secret = randomBytes(32).toString("hex");

/** A URL of exactly `bytes` bytes whose tail is all characters JSON escapes (`"` and `\` double). */
const escapingUrl = (prefix, bytes) => prefix + '"\\'.repeat(bytes).slice(0, bytes - prefix.length);
const plainUrl = (prefix, bytes) => prefix + "x".repeat(bytes - prefix.length);

/** This tree, or `ref`'s tree with this tree's measuring worker put in, built as `npm run build` does. */
async function build(side, ref) {
  let root = ROOT;
  if (ref) {
    root = join(workDir, `${side}-tree`);
    mkdirSync(root);
    const archive = execFileSync("git", ["-C", ROOT, "archive", "--format=tar", ref], { maxBuffer: 1 << 30 });
    execFileSync("tar", ["-x", "-C", root], { input: archive });
    for (const file of ["worst-request-worker.ts", "recording.ts"])
      copyFileSync(join(BENCH_DIR, file), join(root, "bench", file));
    symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"));
  }
  const built = await buildWorker({ root, outdir: join(workDir, side), entry: "bench/worst-request-worker.ts" });
  return { root, script: built.script };
}

/** The workerd children of this process (startServer names the first it finds: with two, find the new one). */
function workerdChildren() {
  return readdirSync("/proc").filter((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      return comm === "workerd" && Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === process.pid;
    } catch {
      return false;
    }
  });
}

async function serve(side, built) {
  const stateDir = join(workDir, `${side}-state`);
  const known = new Set(workerdChildren());
  const server = await startServer({ root: built.root, stateDir, secret, bundles: { app: built.script } });
  server.workerdPid = Number(workerdChildren().find((pid) => !known.has(pid)));
  for (const db of Object.values(server.databases)) await applyMigrations(db, join(built.root, "drizzle"));
  return server;
}

let sequence = 0;

/** Sends one request alone and measures it (see the header). */
async function measure(server, request) {
  const id = `r${++sequence}`;
  const pid = server.workerdPid;
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
  const rssBefore = memoryKb(pid, "VmRSS");
  const cpuBefore = cpuMs(pid);
  const response = await fetch(new URL(request.path, server.urls.app), {
    method: request.method ?? "GET",
    headers: { ...request.headers, "X-Worst-Id": id },
    body: request.body,
  });
  let bytes = 0;
  for await (const chunk of response.body ?? []) bytes += chunk.byteLength;
  const cpu = cpuMs(pid) - cpuBefore;
  const peakKb = memoryKb(pid, "VmHWM") - rssBefore;
  const counts = await (await fetch(new URL(`/__worst/${id}`, server.urls.app))).json();
  return { status: response.status, bytes, workerdCpuMs: cpu, peakRssGrowthMb: peakKb / 1024, ...counts };
}

function memoryKb(pid, field) {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((row) => row.startsWith(`${field}:`));
  return Number(line?.match(/\d+/)?.[0] ?? 0);
}

async function call(server, method, path, { token, basic, body, contentType } = {}) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (basic) headers.authorization = `Basic ${Buffer.from(`${basic.username}:${basic.password}`).toString("base64")}`;
  if (body !== undefined) headers["content-type"] = contentType ?? "application/vnd.api+json";
  const response = await fetch(new URL(path, server.urls.app), { method, headers, body });
  return { status: response.status, text: await response.text() };
}

async function credentialsFor(server, userId) {
  const now = Math.floor(Date.now() / 1000);
  const token = await sign({ sub: userId, iat: now, exp: now + 3600 }, secret, "HS256");
  const minted = await call(server, "POST", "/v1/app-passwords", {
    token,
    body: JSON.stringify({ data: { type: "app-password", attributes: { label: "worst" } } }),
  });
  if (minted.status !== 201) throw new Error(`minting an app password: ${minted.status} ${minted.text}`);
  const { username, password } = JSON.parse(minted.text).data.attributes;
  return { token, username, password };
}

/**
 * The accounts, the same on both sides: 50 000 episode states (the quota) under one subscribed feed of a 2 KB URL
 * full of escapes, with mediaUrls of 20 bytes (1.1 MB stored: the amplified episode GET); 100 devices with the
 * longest caption the side's API takes (1 MB before, 100 characters after); and a fresh account for each upload.
 */
async function seed(server) {
  const db = Object.values(server.databases)[0];
  const episodes = await credentialsFor(server, "worst-episodes");
  const feedUrl = escapingUrl("https://feed.example/", 2048);
  const subscribed = await call(server, "POST", `/api/2/subscriptions/${episodes.username}/phone.json`, {
    basic: episodes,
    body: JSON.stringify({ add: [feedUrl] }),
    contentType: "application/json",
  });
  if (subscribed.status !== 200) throw new Error(`subscribing: ${subscribed.status} ${subscribed.text}`);
  const { guid } = await db.prepare("SELECT guid FROM subscriptions WHERE user_id = 'worst-episodes'").first();
  await db
    .prepare(`WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 50000)
      INSERT INTO episodes (user_id, id, feed_guid, media_url, position, duration, played, position_changed_at,
        played_changed_at, change_seq, received_at)
      SELECT 'worst-episodes', printf('00000000-0000-4000-8000-%012x', n), ?1, printf('https://e.example/%04x', n),
        n % 3600, 3600, 0, 1735689600000, NULL, n, unixepoch() FROM seq`)
    .bind(guid)
    .run();

  const devices = await credentialsFor(server, "worst-devices");
  let caption = "c".repeat(1_000_000);
  for (let i = 0; i < 100; i++) {
    const path = `/api/2/devices/${devices.username}/device-${i}.json`;
    let saved = await call(server, "POST", path, { basic: devices, body: JSON.stringify({ caption }) });
    if (saved.status === 400) {
      caption = "c".repeat(100);
      saved = await call(server, "POST", path, { basic: devices, body: JSON.stringify({ caption }) });
    }
    if (saved.status !== 200) throw new Error(`device ${i}: ${saved.status} ${saved.text}`);
  }
  return {
    episodes,
    devices,
    captionChars: caption.length,
    uploads: [],
  };
}

/** The requests measured on one side, each a fresh one per round where it writes. */
function requests(accounts, round, side, uploaders) {
  const gp = (credential) => ({
    authorization: `Basic ${Buffer.from(`${credential.username}:${credential.password}`).toString("base64")}`,
  });
  const { episodes, devices } = accounts;
  const subscriptionUrls = (count, bytes) =>
    Array.from({ length: count }, (_, i) => plainUrl(`https://up.example/${side}/${round}/${i}/`, bytes));
  return {
    "GET /api/2/episodes since=0 (50 000 states, 2 KB feed URL of escapes)": {
      credential: episodes,
      path: `/api/2/episodes/${episodes.username}.json?since=0`,
      headers: gp(episodes),
    },
    "GET /api/2/episodes podcast= (a feed with no states)": {
      credential: episodes,
      path: `/api/2/episodes/${episodes.username}.json?since=0&podcast=${encodeURIComponent("https://none.example/")}`,
      headers: gp(episodes),
    },
    [`GET /api/2/devices (100 devices, ${accounts.captionChars} character captions)`]: {
      credential: devices,
      path: `/api/2/devices/${devices.username}.json`,
      headers: gp(devices),
    },
    "POST /api/2/subscriptions, the most a body takes (before: 1 000 URLs of 1 000 bytes; after: 10 000 of 830)": {
      credential: uploaders.subscriptions,
      method: "POST",
      path: `/api/2/subscriptions/${uploaders.subscriptions.username}/phone.json`,
      headers: { ...gp(uploaders.subscriptions), "content-type": "application/json" },
      body: JSON.stringify({ add: side === "before" ? subscriptionUrls(1000, 1000) : subscriptionUrls(10_000, 830) }),
    },
    "POST /api/2/episodes, 1 000 actions of 400-byte URLs (the most 1 MiB holds)": {
      credential: uploaders.episodes,
      method: "POST",
      path: `/api/2/episodes/${uploaders.episodes.username}.json`,
      headers: { ...gp(uploaders.episodes), "content-type": "application/json" },
      body: JSON.stringify(
        Array.from({ length: 1000 }, (_, i) => ({
          podcast: plainUrl(`https://pod.example/${round}/${i % 10}/`, 400),
          episode: plainUrl(`https://cdn.example/${round}/${i}/`, 400),
          action: "play",
          timestamp: "2026-03-01T12:00:00",
          started: 0,
          position: 60,
          total: 3600,
        })),
      ),
    },
  };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main() {
  log(`worst-request: building this tree and ${REF} ...`);
  const [after, before] = await Promise.all([build("after"), build("before", REF)]);
  const servers = { before: await serve("before", before), after: await serve("after", after) };
  try {
    const accounts = {};
    for (const side of ["before", "after"]) {
      log(`worst-request: seeding ${side} ...`);
      accounts[side] = await seed(servers[side]);
    }
    const results = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of ["before", "after"]) {
        const uploaders = {
          subscriptions: await credentialsFor(servers[side], `worst-subscriptions-${side}-${round}`),
          episodes: await credentialsFor(servers[side], `worst-episodes-${side}-${round}`),
        };
        for (const [name, request] of Object.entries(requests(accounts[side], round, side, uploaders))) {
          // The steady state, as apps sync: signed in (the isolate caches the credential) and the device known.
          const credential = request.credential;
          const warmUps = [`/api/2/auth/${credential.username}/login.json`];
          if (request.method === "POST") warmUps.push(`/api/2/devices/${credential.username}/phone.json`);
          for (const path of warmUps) {
            const warmUp = await call(servers[side], "POST", path, { basic: credential, body: "{}" });
            if (warmUp.status !== 200) throw new Error(`warm-up ${path}: ${warmUp.status} ${warmUp.text}`);
          }
          const measured = await measure(servers[side], request);
          log(`  ${side} ${name}: ${JSON.stringify(measured)}`);
          const key = name.replace(/ \(100 devices, \d+ character captions\)/, " (100 devices, the longest captions)");
          results[key] ??= { before: [], after: [] };
          results[key][side].push({ ...measured, name });
        }
      }
    }
    const fields = [
      "status",
      "bytes",
      "workerdCpuMs",
      "sqlMs",
      "d1Calls",
      "rowsRead",
      "rowsWritten",
      "charged",
      "peakRssGrowthMb",
    ];
    const summary = Object.fromEntries(
      Object.entries(results).map(([name, sides]) => [
        name,
        Object.fromEntries(
          Object.entries(sides).map(([side, runs]) => [
            side,
            {
              name: runs[0].name,
              ...Object.fromEntries(fields.map((field) => [field, median(runs.map((run) => run[field]))])),
            },
          ]),
        ),
      ]),
    );
    const rows = [
      "| request | side | status | bytes | workerd CPU ms | D1 SQL ms | D1 calls | rows read | rows written | charged (limiter calls) | peak RSS growth MB |",
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ];
    for (const sides of Object.values(summary)) {
      for (const side of ["before", "after"]) {
        const m = sides[side];
        rows.push(
          `| ${m.name} | ${side} | ${m.status} | ${m.bytes} | ${m.workerdCpuMs.toFixed(0)} | ${m.sqlMs.toFixed(0)} | ${m.d1Calls} | ${m.rowsRead} | ${m.rowsWritten} | ${m.charged} | ${m.peakRssGrowthMb.toFixed(1)} |`,
        );
      }
    }
    console.log(rows.join("\n"));
    console.log(JSON.stringify({ ref: REF, rounds: ROUNDS, summary }, null, 1));
  } finally {
    for (const server of Object.values(servers)) await server.mf.dispose().catch(() => {});
    rmSync(workDir, { recursive: true, force: true });
  }
}

await main();
