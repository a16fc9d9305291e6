import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sign } from "hono/jwt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unstable_startWorker } from "wrangler";
import { DEFAULT_CONFIG, userShardOf } from "../scripts/shards/wrangler";
import { wranglerD1 } from "../scripts/shards/wrangler-d1";
import { VERIFIED_FOR_MS } from "../src/auth/verified-credentials";
import { bucketOf } from "../src/shards";
import { migratedState, serveWorker } from "./served-worker";

/**
 * `npm run admin` end to end: the command as an operator runs it (tsx scripts/admin.ts, wrangler d1 execute --local)
 * against the databases of a running worker, on one database (the top level) and on two shards
 * (`--env shards`), both served here; every effect is checked through the worker's API.
 */

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TSX = join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");
const JSONAPI = "application/vnd.api+json";

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the admin command; `input` is typed on its stdin, which is otherwise closed (no answer to read). */
function admin(args: string[], input?: string): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [TSX, join(ROOT, "scripts", "admin.ts"), ...args], {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (data) => {
      stdout += data;
    });
    child.stderr?.on("data", (data) => {
      stderr += data;
    });
    if (input !== undefined) child.stdin?.end(input);
    child.on("close", (status) => done({ status, stdout, stderr }));
  });
}

/** A worker and the local state its databases live in; `env` is the wrangler.toml environment. */
interface Served {
  origin: string;
  state: string;
  secret: string;
  env?: string;
}

const SINGLE_SECRET = "admin-single-secret-0123456789abcdef0123456789";

function client(served: Served, userId: string) {
  const token = async () => {
    const now = Math.floor(Date.now() / 1000);
    return sign({ sub: userId, iat: now, exp: now + 900 }, served.secret, "HS256");
  };
  const request = async (method: string, path: string, body?: unknown) =>
    fetch(`${served.origin}${path}`, {
      method,
      headers: { Authorization: `Bearer ${await token()}`, Accept: JSONAPI, "Content-Type": JSONAPI },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return { request };
}

/** What a user stores, built through the API, and what the report must then say. */
interface Seeded {
  userId: string;
  bucket: number;
  binding: string;
  urlBytes: number;
  appPassword: { id: string; username: string; password: string };
  cookie: string;
}

const bytes = (text: string) => Buffer.byteLength(text, "utf8");

async function seed(served: Served, userId: string): Promise<Seeded> {
  const api = client(served, userId);
  const feeds = [`https://admin.example/${userId}/a.xml`, `https://admin.example/${userId}/ü.xml`];
  const guids = feeds.map(() => crypto.randomUUID());
  for (const [index, feedUrl] of feeds.entries()) {
    const response = await api.request("POST", "/v1/subscriptions", {
      data: { type: "subscription", id: guids[index], attributes: { feedUrl } },
    });
    expect(response.status).toBe(201);
  }
  expect((await api.request("DELETE", `/v1/subscriptions/${guids[1]}`)).status).toBe(204);
  const mediaUrl = `https://cdn.admin.example/${userId}.mp3`;
  const episode = await api.request("POST", "/v1/episodes", {
    data: {
      type: "episode",
      id: crypto.randomUUID(),
      attributes: { mediaUrl, itemGuid: "item-1", position: 10, changedAt: new Date().toISOString() },
      relationships: { subscription: { data: { type: "subscription", id: guids[0] } } },
    },
  });
  expect(episode.status).toBe(201);
  const minted = await api.request("POST", "/v1/app-passwords", {
    data: { type: "app-password", attributes: { label: "Phone" } },
  });
  expect(minted.status).toBe(201);
  const { data } = (await minted.json()) as {
    data: { id: string; attributes: { username: string; password: string } };
  };
  const appPassword = { id: data.id, ...data.attributes };
  const device = await fetch(`${served.origin}/api/2/devices/${appPassword.username}/phone.json`, {
    method: "POST",
    headers: { Authorization: `Basic ${btoa(`${appPassword.username}:${appPassword.password}`)}` },
    body: JSON.stringify({ caption: "Phone", type: "mobile" }),
  });
  expect(device.status).toBe(200);
  const cookie = (device.headers.get("Set-Cookie") ?? "").split(";")[0];
  expect(cookie).toMatch(/^sessionid=/);
  const { bucket, binding } = await userShardOf({ config: DEFAULT_CONFIG, env: served.env }, userId);
  return {
    userId,
    bucket,
    binding,
    urlBytes: bytes(feeds[0]) + bytes(feeds[1]) + bytes(mediaUrl) + 6,
    appPassword,
    cookie,
  };
}

/**
 * An account-page session for each user, as the pages (docs/API.md §16) write one, in the user's database: one
 * `wrangler d1 execute` per database (about 2 s of CPU each), not one per user.
 */
async function addAccountSessions(served: Served, users: Seeded[]): Promise<void> {
  const target = { config: DEFAULT_CONFIG, env: served.env, remote: false, persistTo: served.state };
  for (const binding of new Set(users.map((user) => user.binding))) {
    const db = wranglerD1(target, binding);
    const insert = db.prepare(
      "INSERT INTO account_sessions (session_hash, user_id, name, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
    );
    await db.batch(
      users
        .filter((user) => user.binding === binding)
        .map((user) =>
          insert.bind(crypto.randomUUID(), user.userId, "Alice Admin", Date.now(), Date.now() + 7 * 86_400_000),
        ),
    );
  }
}

function basicOf({ username, password }: { username: string; password: string }) {
  return { Authorization: `Basic ${btoa(`${username}:${password}`)}` };
}

/** Users whose buckets the environment's map gives each of `bindings` (one user per binding). */
async function usersIn(served: Served, prefix: string, bindings: string[]): Promise<string[]> {
  const target = { config: DEFAULT_CONFIG, env: served.env, remote: false };
  const found = new Map<string, string>();
  for (let i = 0; found.size < bindings.length; i++) {
    const userId = `${prefix}-${i}`;
    const { binding } = await userShardOf(target, userId);
    if (bindings.includes(binding) && !found.has(binding)) found.set(binding, userId);
  }
  return bindings.map((binding) => found.get(binding) as string);
}

/** One configuration the commands run on: its worker, the databases of its map, its users. */
interface Setup {
  name: string;
  served: Served;
  bindings: string[];
  /** Also check the questions (asked, refused without an answer, refused on a wrong one): once is enough. */
  prompts: boolean;
  where: string[];
  /** Revoked, data kept: one per database. */
  keep: Seeded[];
  /** Erased: one per database. */
  gone: Seeded[];
  revokedAt: number;
}

describe("npm run admin against wrangler dev, on one database (the top level) and on two shards (--env shards)", () => {
  let shardState = "";
  const shardSecret = "admin-shards-secret-0123456789abcdef0123456789";
  let dispose = async () => {};
  const setups: Setup[] = [];

  async function setUp(name: string, served: Served, bindings: string[], prompts: boolean): Promise<Setup> {
    const label = served.env ?? "single";
    const setup: Setup = {
      name,
      served,
      bindings,
      prompts,
      where: ["--local", "--persist-to", served.state, ...(served.env ? ["--env", served.env] : [])],
      keep: [],
      gone: [],
      revokedAt: 0,
    };
    for (const userId of await usersIn(served, `admin-keep-${label}`, bindings))
      setup.keep.push(await seed(served, userId));
    for (const userId of await usersIn(served, `admin-gone-${label}`, bindings))
      setup.gone.push(await seed(served, userId));
    await addAccountSessions(served, [...setup.keep, ...setup.gone]);
    return setup;
  }

  beforeAll(async () => {
    // The two shards' databases migrated (npm run db:migrate:local -- --env shards, run once per suite run: the
    // first file that needs them).
    shardState = await migratedState("shards");
    const worker = await unstable_startWorker({
      config: join(ROOT, "wrangler.toml"),
      env: "shards",
      bindings: { AUTH_JWT_SECRET: { type: "secret_text", value: shardSecret } },
      dev: {
        server: { hostname: "127.0.0.1", port: 0 },
        inspector: false,
        watch: false,
        persist: shardState,
        logLevel: process.env.TEST_LOGS === "1" ? "log" : "error",
      },
    });
    await worker.ready;
    // The admin command opens the databases from another process: the single database is a worker of this file's
    // own too (served-worker.ts says why not the suite's shared one).
    const singleWorker = await serveWorker(SINGLE_SECRET);
    dispose = async () => {
      await worker.dispose();
      await singleWorker.close();
    };
    const single = { origin: singleWorker.origin, state: singleWorker.state, secret: SINGLE_SECRET };
    const shards = { origin: (await worker.url).origin, state: shardState, secret: shardSecret, env: "shards" };
    setups.push(
      ...(await Promise.all([
        setUp("one database", single, ["DB"], true),
        setUp("two shards", shards, ["DB", "DB_1"], false),
      ])),
    );
  });
  afterAll(async () => {
    await dispose();
    if (shardState) rmSync(shardState, { recursive: true, force: true });
  });

  it("user: finds the user's shard and reports counts, URL bytes, app passwords with last use, sessions, devices", async () => {
    await Promise.all(
      setups.map(async ({ where, keep }) => {
        for (const user of keep) {
          const run = await admin(["user", user.userId, ...where, "--json"]);
          expect(run.status, run.stderr).toBe(0);
          const report = JSON.parse(run.stdout);
          expect(report).toMatchObject({
            sub: user.userId,
            bucket: await bucketOf(user.userId),
            binding: user.binding,
            frozen: false,
            gpodderUsername: user.appPassword.username,
            stats: { activeSubscriptions: 1, storedSubscriptions: 2, episodes: 1, urlBytes: user.urlBytes },
            appPasswords: [{ id: user.appPassword.id, label: "Phone", username: user.appPassword.username }],
            gpodderSessions: [{ appPasswordId: user.appPassword.id }],
            accountSessions: [{ name: "Alice Admin" }],
            devices: [{ id: "phone", caption: "Phone", type: "mobile", subscriptions: 1 }],
          });
          expect(report.appPasswords[0].lastUsedAt).toBeGreaterThan(Date.now() - 600_000);
        }
      }),
    );
    const [{ where, keep }] = setups.slice(-1);
    const text = await admin(["user", keep[1].userId, ...where]);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toContain(`bucket ${keep[1].bucket} in ${keep[1].binding}`);
    expect(text.stdout).toContain(`URL text: ${keep[1].urlBytes} bytes of 8,388,608`);
    expect(text.stdout).toContain('"Alice Admin"');
  });

  it("revoke: prints what it will do, asks, and ends every app password and session", async () => {
    await Promise.all(
      setups.map(async (setup) => {
        const { where, keep, prompts } = setup;
        if (prompts) {
          const unanswered = await admin(["revoke", keep[0].userId, ...where]);
          expect(unanswered.status).toBe(1);
          expect(unanswered.stdout).toContain(
            "will delete 1 app password(s), 1 gpodder session(s) and 1 account-page session(s)",
          );
          expect(unanswered.stderr).toMatch(/no answer could be read \(stdin is closed\)\. Run it again with --yes/);
          const declined = await admin(["revoke", keep[0].userId, ...where], "n\n");
          expect(declined.status).toBe(1);
          expect(declined.stderr).toContain("Revoke them? [y/N]");
          expect(declined.stderr).toContain("nothing was changed");
        }
        for (const [index, user] of keep.entries()) {
          const run = await admin(
            ["revoke", user.userId, ...where, ...(prompts ? [] : ["--yes"])],
            prompts ? "y\n" : undefined,
          );
          if (index === 0) setup.revokedAt = Date.now();
          expect(run.status, run.stderr).toBe(0);
          // Everything still there after the refusals above: they changed nothing.
          expect(run.stdout).toContain("revoked 1 app password(s), 1 gpodder session(s), 1 account-page session(s)");
        }
        const after = JSON.parse((await admin(["user", keep[0].userId, ...where, "--json"])).stdout);
        expect(after).toMatchObject({ appPasswords: [], gpodderSessions: [], accountSessions: [] });
        expect(after.stats).toMatchObject({ activeSubscriptions: 1, episodes: 1, urlBytes: keep[0].urlBytes });
        if (prompts) {
          const nothing = await admin(["revoke", keep[0].userId, ...where]);
          expect(nothing.status).toBe(0);
          expect(nothing.stdout).toContain("no app password or session to revoke: nothing was changed");
        }
      }),
    );
  });

  it("erase: erases the account as DELETE /v1/account does; a sync token from before gets 410", async () => {
    await Promise.all(
      setups.map(async ({ served, where, gone, prompts }) => {
        for (const [index, user] of gone.entries()) {
          const api = client(served, user.userId);
          const feed = await api.request("GET", "/v1/subscriptions?filter%5Bsince%5D=0");
          const { meta } = (await feed.json()) as { meta: { syncToken: string } };
          expect(Number(meta.syncToken)).toBeGreaterThan(0);
          const typed = prompts && index === 0;
          if (typed) {
            const unanswered = await admin(["erase", user.userId, ...where]);
            expect(unanswered.status).toBe(1);
            expect(unanswered.stdout).toContain(
              "will erase 2 subscription(s) with tombstones, 1 episode state(s), 1 app password(s), 1 gpodder session(s), 1 account-page session(s) and 1 device(s)",
            );
            const mistyped = await admin(["erase", user.userId, ...where], "yes\n");
            expect(mistyped.status).toBe(1);
            expect(mistyped.stderr).toContain(`Type the user id (${user.userId}) to erase the account`);
          }
          const run = await admin(
            ["erase", user.userId, ...where, ...(typed ? [] : ["--yes"])],
            typed ? `${user.userId}\n` : undefined,
          );
          expect(run.status, run.stderr).toBe(0);
          expect(run.stdout).toContain("erased: nothing of the user is stored besides bare counters");

          const list = await api.request("GET", "/v1/subscriptions");
          expect(await list.json()).toMatchObject({ data: [], meta: { total: 0 } });
          const old = await api.request("GET", `/v1/subscriptions?filter%5Bsince%5D=${meta.syncToken}`);
          expect(old.status).toBe(410);
          expect(await old.json()).toMatchObject({ errors: [{ title: "Sync token expired" }] });
          const fresh = await api.request("GET", "/v1/subscriptions?filter%5Bsince%5D=0");
          expect(fresh.status).toBe(200);
          expect(await fresh.json()).toMatchObject({ data: [] });
          const episodes = await api.request("GET", "/v1/episodes?filter%5Bsince%5D=0");
          expect(await episodes.json()).toMatchObject({ data: [] });
          const passwords = await api.request("GET", "/v1/app-passwords");
          expect(await passwords.json()).toMatchObject({ data: [] });
          if (index > 0) continue;
          // What the API cannot show (sessions, devices, the counters), once per configuration.
          const report = JSON.parse((await admin(["user", user.userId, ...where, "--json"])).stdout);
          expect(report).toMatchObject({
            stats: { activeSubscriptions: 0, storedSubscriptions: 0, episodes: 0, urlBytes: 0 },
            appPasswords: [],
            gpodderSessions: [],
            accountSessions: [],
            devices: [],
          });
        }
      }),
    );
  });

  it("usage: per database its buckets, users, rows, URL bytes and largest accounts", async () => {
    await Promise.all(
      setups.map(async ({ where, keep, gone, bindings }) => {
        const run = await admin(["usage", ...where, "--json", "--top", "1000"]);
        expect(run.status, run.stderr).toBe(0);
        const { databases } = JSON.parse(run.stdout) as {
          databases: Record<
            string,
            { buckets: string; totals: Record<string, number>; largestByBytes: { userId: string; urlBytes: number }[] }
          >;
        };
        expect(Object.keys(databases).slice(0, bindings.length)).toEqual(bindings);
        expect(databases.DB.buckets).toBe(bindings.length > 1 ? "0-511" : "0-1023");
        for (const user of [...keep, ...gone]) {
          for (const [name, usage] of Object.entries(databases)) {
            const listed = usage.largestByBytes?.find((account) => account.userId === user.userId);
            // The revoked users (data intact) are listed where the map puts them; the erased ones nowhere.
            if (name === user.binding && keep.includes(user)) expect(listed?.urlBytes).toBe(user.urlBytes);
            else expect(listed).toBeUndefined();
          }
        }
        for (const binding of bindings) {
          const { totals } = databases[binding];
          const kept = keep.filter((user) => user.binding === binding);
          const erased = gone.filter((user) => user.binding === binding);
          expect(totals.usersWithData).toBeGreaterThanOrEqual(kept.length);
          expect(totals.users).toBeGreaterThanOrEqual(kept.length + erased.length);
          expect(totals.urlBytes).toBeGreaterThanOrEqual(kept.reduce((sum, user) => sum + user.urlBytes, 0));
          // The feeds' tables are counted too: every kept user's subscriptions name a feed the service knows.
          expect(totals.feeds).toBeGreaterThanOrEqual(kept.length > 0 ? 1 : 0);
          for (const table of ["subscriptionRenames", "episodeRehomes", "feedAliases"]) {
            expect(totals[table], table).toBeGreaterThanOrEqual(0);
          }
        }
      }),
    );
    const text = await admin(["usage", ...setups[0].where]);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^DB: buckets 0-1023, size [\d ,]+ bytes\n {2}users: \d+ with data/);
    expect(text.stdout).toMatch(/\n {2}feeds: [\d ,]+ known, [\d ,]+ learned moves\n/);
  });

  it("a revoked app password and its session get 401 once the isolates' 60 s trust has run out, and stay refused", async () => {
    const statuses = async ({ served, keep }: Setup) => {
      const { appPassword, cookie } = keep[0];
      const url = `${served.origin}/api/2/devices/${appPassword.username}.json`;
      return [
        (await fetch(url, { headers: basicOf(appPassword) })).status,
        (await fetch(url, { headers: { Cookie: cookie } })).status,
      ];
    };
    for (const setup of setups) {
      // An isolate trusts what it verified for VERIFIED_FOR_MS: from then on every request is checked again.
      const deadline = setup.revokedAt + VERIFIED_FOR_MS + 1_000;
      let seen = await statuses(setup);
      while (seen.some((status) => status !== 401) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        seen = await statuses(setup);
      }
      expect({ setup: setup.name, seen }).toEqual({ setup: setup.name, seen: [401, 401] });
    }
    for (const setup of setups) {
      await new Promise((resolve) =>
        setTimeout(resolve, Math.max(0, setup.revokedAt + VERIFIED_FOR_MS + 1_000 - Date.now())),
      );
      expect(await statuses(setup)).toEqual([401, 401]);
    }
  });
});

describe("npm run admin's command line", () => {
  it("--help, for the whole and for each command", async () => {
    const general = await admin(["--help"]);
    expect(general.status).toBe(0);
    for (const command of ["user <sub>", "revoke <sub>", "erase <sub>", "usage"])
      expect(general.stdout).toContain(command);
    const each = await Promise.all(["user", "revoke", "erase", "usage"].map((name) => admin([name, "--help"])));
    for (const [index, name] of ["user", "revoke", "erase", "usage"].entries()) {
      expect(each[index].status).toBe(0);
      expect(each[index].stdout).toContain(`Usage: npm run admin -- ${name}`);
      expect(each[index].stdout).toContain("--local");
    }
  });

  it("a bad argument is one clear line (never a stack trace) and changes nothing", async () => {
    const cases: [string[], number, RegExp][] = [
      [[], 2, /name a command: user, revoke, erase or usage/],
      [["frob"], 2, /unknown command "frob"/],
      [["user"], 2, /user needs the user's id/],
      [["erase", "a", "b", "--local"], 2, /erase takes one user id; got a b/],
      [["user", "x".repeat(256), "--local"], 2, /1 to 255 characters/],
      [["usage", "--top", "0"], 2, /--top takes a whole number/],
      [["user", "a", "--bogus"], 2, /Unknown option '--bogus'/],
      [["user", "a", "--persist-to", "/tmp/x"], 2, /--persist-to needs --local/],
      [["user", "a", "--local", "--env", "nope"], 1, /No environment found in configuration with name "nope"/],
    ];
    const runs = await Promise.all(cases.map(([args]) => admin(args)));
    for (const [index, [args, status, message]] of cases.entries()) {
      const run = runs[index];
      expect({ args, status: run.status }).toEqual({ args, status });
      expect(run.stderr).toMatch(/^admin: /);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
  });
});
