import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sign } from "hono/jwt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unstable_startWorker } from "wrangler";
import type { BackupManifest } from "../scripts/backup";
import { type ServedWorker, serveWorker } from "./served-worker";

/**
 * The backup and its restore (docs/README-ops.md, "Backups"), run locally as the scheduled workflow
 * (.github/workflows/backup.yml) runs them remotely: `npm run backup` exports the served worker's database
 * (`wrangler d1 export --local`), `npm run restore` puts it into an empty database, and a worker served from
 * that database answers exactly what the first one answered, to the JSON:API, the change feeds and gpodder apps.
 */

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TSX = join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");
const JSONAPI = "application/vnd.api+json";

function script(name: string, args: string[], input?: string): Promise<{ status: number | null; output: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [TSX, join(ROOT, "scripts", `${name}.ts`), ...args], {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    let output = "";
    child.stdout?.on("data", (data) => {
      output += data;
    });
    child.stderr?.on("data", (data) => {
      output += data;
    });
    if (input !== undefined) child.stdin?.end(input);
    child.on("close", (status) => done({ status, output }));
  });
}

/**
 * The backup script opens the worker's SQLite file from another process: this file serves its own worker
 * (served-worker.ts says why not the shared one).
 */
const SECRET = "backup-test-secret-0123456789abcdef0123456789";
const secret = () => SECRET;

async function bearer(userId: string) {
  const now = Math.floor(Date.now() / 1000);
  return `Bearer ${await sign({ sub: userId, iat: now, exp: now + 900 }, secret(), "HS256")}`;
}

interface Account {
  userId: string;
  username: string;
  password: string;
}

/** An account with what a listener stores: subscriptions (one unsubscribed, one with a URL stored in pieces), an episode state, an app password, a device. */
async function seed(origin: string, userId: string): Promise<Account> {
  const headers = { Authorization: await bearer(userId), "Content-Type": JSONAPI };
  const feeds = [`https://backup.example/${userId}/a.xml`, `https://backup.example/${userId}/${"long-".repeat(300)}`];
  const guids = feeds.map(() => crypto.randomUUID());
  for (const [index, feedUrl] of [...feeds, `https://backup.example/${userId}/gone.xml`].entries()) {
    const id = guids[index] ?? crypto.randomUUID();
    const body = JSON.stringify({ data: { type: "subscription", id, attributes: { feedUrl } } });
    expect((await fetch(`${origin}/v1/subscriptions`, { method: "POST", headers, body })).status).toBe(201);
    if (index === 2)
      expect((await fetch(`${origin}/v1/subscriptions/${id}`, { method: "DELETE", headers })).status).toBe(204);
  }
  const episode = JSON.stringify({
    data: {
      type: "episode",
      id: crypto.randomUUID(),
      attributes: {
        mediaUrl: `https://cdn.backup.example/${userId}.mp3`,
        position: 42,
        duration: 600,
        changedAt: "2026-01-02T03:04:05Z",
      },
      relationships: { subscription: { data: { type: "subscription", id: guids[0] } } },
    },
  });
  expect((await fetch(`${origin}/v1/episodes`, { method: "POST", headers, body: episode })).status).toBe(201);
  const minted = await fetch(`${origin}/v1/app-passwords`, {
    method: "POST",
    headers,
    body: JSON.stringify({ data: { type: "app-password", attributes: { label: "gPodder" } } }),
  });
  const { data } = (await minted.json()) as { data: { attributes: { username: string; password: string } } };
  const account = { userId, ...data.attributes };
  const device = await fetch(`${origin}/api/2/devices/${account.username}/laptop.json`, {
    method: "POST",
    headers: { Authorization: `Basic ${btoa(`${account.username}:${account.password}`)}` },
    body: JSON.stringify({ caption: "Laptop", type: "laptop" }),
  });
  expect(device.status).toBe(200);
  return account;
}

/** What the worker at `origin` answers about the account: every read an app makes. */
async function answers(origin: string, account: Account) {
  const headers = { Authorization: await bearer(account.userId), Accept: JSONAPI };
  const basic = { Authorization: `Basic ${btoa(`${account.username}:${account.password}`)}` };
  const read = async (path: string, init: Record<string, string>) => {
    const response = await fetch(`${origin}${path}`, { headers: init });
    return { status: response.status, body: await response.json() };
  };
  // The app passwords first: a Basic sign-in records its use (at most once a minute), which the reads after it see.
  const appPasswords = await read("/v1/app-passwords", headers);
  const list = await read("/v1/subscriptions?page%5Bsize%5D=100", headers);
  const changes = await read("/v1/subscriptions?filter%5Bsince%5D=0&page%5Bsize%5D=100", headers);
  const episodes = await read("/v1/episodes?filter%5Bsince%5D=0", headers);
  const gpodder = await read(`/api/2/subscriptions/${account.username}/laptop.json?since=0`, basic);
  return {
    appPasswords,
    list,
    changes,
    episodes,
    gpodderSubscriptions: { ...gpodder, body: { ...(gpodder.body as object), timestamp: "the time of the read" } },
    gpodderDevices: await read(`/api/2/devices/${account.username}.json`, basic),
  };
}

describe("backup and restore (npm run backup, npm run restore)", () => {
  const scratch = mkdtempSync(join(tmpdir(), "backup-test-"));
  const out = join(scratch, "backup");
  const restored = join(scratch, "restored-state");
  let accounts: Account[] = [];
  let stop = async () => {};
  let source!: ServedWorker;

  beforeAll(async () => {
    source = await serveWorker(SECRET);
    accounts = [await seed(source.origin, "backup-alice"), await seed(source.origin, "backup-bob")];
  });
  afterAll(async () => {
    await stop();
    await source?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it("exports every database of the environment with a manifest of sizes and checksums", async () => {
    const run = await script("backup", ["--local", "--persist-to", source.state, "--out", out]);
    expect(run.status, run.output).toBe(0);
    const manifest = JSON.parse(readFileSync(join(out, "manifest.json"), "utf8")) as BackupManifest;
    expect(manifest).toMatchObject({ environment: "(top level)", remote: false, shardMap: "" });
    expect(manifest.databases.map(({ binding, name, buckets, file }) => ({ binding, name, buckets, file }))).toEqual([
      { binding: "DB", name: "podcast-subscriptions", buckets: "0-1023", file: "DB.sql" },
    ]);
    const dump = readFileSync(join(out, "DB.sql"));
    expect(manifest.databases[0]).toMatchObject({
      bytes: dump.length,
      sha256: createHash("sha256").update(dump).digest("hex"),
    });
    expect(dump.toString()).toContain("backup-alice");
  });

  it("with --env shards, exports each shard and the spare database, each with its buckets", async () => {
    const shards = join(scratch, "shards-backup");
    const run = await script("backup", [
      "--local",
      "--env",
      "shards",
      "--persist-to",
      join(scratch, "shards-state"),
      "--out",
      shards,
    ]);
    expect(run.status, run.output).toBe(0);
    const manifest = JSON.parse(readFileSync(join(shards, "manifest.json"), "utf8")) as BackupManifest;
    expect(manifest.databases.map(({ binding, buckets, file }) => ({ binding, buckets, file }))).toEqual([
      { binding: "DB", buckets: "0-511", file: "DB.sql" },
      { binding: "DB_1", buckets: "512-1023", file: "DB_1.sql" },
      { binding: "DB_2", buckets: "", file: "DB_2.sql" },
    ]);
  });

  it("restores into an empty database, and the worker served from it answers exactly as before", async () => {
    const declined = await script("restore", [join(out, "DB.sql"), "--to", "DB", "--local", "--persist-to", restored]);
    expect(declined.status).toBe(1);
    expect(declined.output).toMatch(/into the empty database DB[\s\S]*no answer could be read/);

    const run = await script(
      "restore",
      [join(out, "DB.sql"), "--to", "DB", "--local", "--persist-to", restored],
      "y\n",
    );
    expect(run.status, run.output).toBe(0);
    const worker = await unstable_startWorker({
      config: join(ROOT, "wrangler.toml"),
      bindings: { AUTH_JWT_SECRET: { type: "secret_text", value: secret() } },
      dev: {
        server: { hostname: "127.0.0.1", port: 0 },
        inspector: false,
        watch: false,
        persist: restored,
        logLevel: process.env.TEST_LOGS === "1" ? "log" : "error",
      },
    });
    stop = () => worker.dispose();
    await worker.ready;
    const origin = (await worker.url).origin;
    for (const account of accounts) {
      const before = await answers(source.origin, account);
      expect(before.list.body).toMatchObject({ meta: { total: 2 } });
      expect(await answers(origin, account)).toEqual(before);
    }
    // The restored database is the service's: it takes writes, with the change numbers going on from the backup's.
    const headers = { Authorization: await bearer("backup-alice"), "Content-Type": JSONAPI };
    const body = JSON.stringify({
      data: {
        type: "subscription",
        id: crypto.randomUUID(),
        attributes: { feedUrl: "https://backup.example/after.xml" },
      },
    });
    expect((await fetch(`${origin}/v1/subscriptions`, { method: "POST", headers, body })).status).toBe(201);
    const feed = await fetch(`${origin}/v1/subscriptions?filter%5Bsince%5D=4`, { headers });
    expect(await feed.json()).toMatchObject({
      data: [{ attributes: { feedUrl: "https://backup.example/after.xml" } }],
      meta: { syncToken: "5" },
    });
  });

  it("refuses to restore over data", async () => {
    const run = await script("restore", [
      join(out, "DB.sql"),
      "--to",
      "DB",
      "--local",
      "--persist-to",
      restored,
      "--yes",
    ]);
    expect(run.status).toBe(1);
    expect(run.output).toMatch(
      /is not empty \(tables .*subscriptions.*\): restore into a fresh database, never over data/,
    );
  });
});
