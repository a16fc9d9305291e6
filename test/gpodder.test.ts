import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { bucketOfUsername, gpodderUsername } from "../src/auth/gpodder-username";
import { secretHash } from "../src/auth/secrets";
import { type VerifiedCredential, verifiedCredentials } from "../src/auth/verified-credentials";
import { appPasswordStatements, revokeAllCredentials } from "../src/db/app-passwords";
import { deviceStatements } from "../src/db/devices";
import { gpodderStatements } from "../src/db/gpodder";
import { podcastGuid, uuidV5 } from "../src/podcast-guid";
import { bucketOf } from "../src/shards";
import {
  as,
  type Caller,
  countedDatabaseOf,
  databaseFor,
  JSONAPI,
  meteredDatabaseOf,
  newFeed,
  ORIGIN,
  queryPlan,
  recordingFailureLimiter,
  runCron,
  seedPodcast,
  seedSubscriptions,
  send,
  subscriptionDocument,
  walksOf,
  withinOneRateWindow,
} from "./helpers";

/** An app password minted through the JSON:API for `userId`. */
async function mint(user: Caller, label = "phone") {
  const response = await user.post("/v1/app-passwords", { data: { type: "app-password", attributes: { label } } });
  expect(response.status).toBe(201);
  const { data } = (await response.json()) as {
    data: { id: string; attributes: { username: string; password: string; label: string } };
  };
  return { id: data.id, username: data.attributes.username, password: data.attributes.password };
}

function basic(username: string, password: string): string {
  return `Basic ${btoa(`${username}:${password}`)}`;
}

/** A gpodder client: Basic on every request (or only the cookie, once it has one and `cookieOnly` is set). */
function gpodder(credentials: { username: string; password: string }, bindings = {}) {
  const request = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    send(
      new Request(`${ORIGIN}${path}`, {
        method,
        headers: { Authorization: basic(credentials.username, credentials.password), ...headers },
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      }),
      bindings,
    );
  return {
    get: (path: string, headers?: Record<string, string>) => request("GET", path, undefined, headers),
    post: (path: string, body?: unknown, headers?: Record<string, string>) => request("POST", path, body, headers),
    put: (path: string, body: unknown) => request("PUT", path, body),
  };
}

function withCookie(path: string, cookie: string, method = "GET", bindings = {}) {
  return send(new Request(`${ORIGIN}${path}`, { method, headers: { Cookie: cookie } }), bindings);
}

function sessionCookie(response: Response): string {
  const header = response.headers.get("Set-Cookie") ?? "";
  expect(header).toMatch(/^sessionid=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=2592000; Secure$/);
  return header.split(";")[0];
}

describe("app passwords (/v1/app-passwords)", () => {
  it("mints one shown once, lists without the password, gets and revokes", async () => {
    const user = await as("gp-mint");
    const created = await user.post("/v1/app-passwords", {
      data: { type: "app-password", attributes: { label: "Laptop" } },
    });
    expect(created.status).toBe(201);
    const { data } = (await created.json()) as { data: { id: string; attributes: Record<string, unknown> } };
    expect(created.headers.get("Location")).toBe(`${ORIGIN}/v1/app-passwords/${data.id}`);
    expect(data.attributes).toMatchObject({ label: "Laptop", lastUsedAt: null });
    expect(data.attributes.username).toMatch(/^[a-z0-9][a-z0-9._-]{0,63}$/);
    expect(data.attributes.username).toBe(await gpodderUsername("gp-mint"));
    expect((data.attributes.password as string).length).toBeGreaterThanOrEqual(22);
    const second = await mint(user, "Phone");
    expect(second.username).toBe(data.attributes.username);

    const list = (await (await user.get("/v1/app-passwords")).json()) as {
      data: { id: string; attributes: Record<string, unknown>; links: { self: string } }[];
      links: { self: string };
    };
    expect(list.links.self).toBe("/v1/app-passwords");
    expect(list.data.map((item) => item.attributes.label)).toEqual(["Laptop", "Phone"]);
    expect(list.data.every((item) => !("password" in item.attributes))).toBe(true);
    expect(list.data[0].links.self).toBe(`/v1/app-passwords/${data.id}`);

    const one = await user.get(`/v1/app-passwords/${data.id}`);
    expect(one.status).toBe(200);
    expect(((await one.json()) as { data: { attributes: object } }).data.attributes).not.toHaveProperty("password");
    const other = await as("gp-mint-other");
    expect((await other.get(`/v1/app-passwords/${data.id}`)).status).toBe(404);
    expect((await other.delete(`/v1/app-passwords/${data.id}`)).status).toBe(404);
    expect((await user.delete(`/v1/app-passwords/${data.id}`)).status).toBe(204);
    expect((await user.get(`/v1/app-passwords/${data.id}`)).status).toBe(404);
    expect((await mint(other)).username).not.toBe(second.username);
  });

  it("refuses a client id (403), another type (409) and a bad label (422)", async () => {
    const user = await as("gp-mint-invalid");
    const post = (data: unknown) => user.post("/v1/app-passwords", { data });
    expect((await post({ type: "app-password", id: crypto.randomUUID(), attributes: { label: "x" } })).status).toBe(
      403,
    );
    expect((await post({ type: "subscription", attributes: { label: "x" } })).status).toBe(409);
    expect((await post({ type: "app-password", attributes: { label: "" } })).status).toBe(422);
    expect((await post({ type: "app-password", attributes: { label: "x".repeat(101) } })).status).toBe(422);
    expect((await post({ type: "app-password", attributes: {} })).status).toBe(422);
  });

  it("stops at 50 per user", async () => {
    const user = await as("gp-mint-limit");
    for (let i = 0; i < 50; i++) await mint(user, `device ${i}`);
    const refused = await user.post("/v1/app-passwords", {
      data: { type: "app-password", attributes: { label: "x" } },
    });
    expect(refused.status).toBe(403);
    const body = (await refused.json()) as { errors: { title: string; meta: unknown }[] };
    expect(body.errors[0]).toMatchObject({ title: "App password limit reached", meta: { maxAppPasswords: 50 } });
  });

  it("usernames name the user's bucket, so a Basic request finds the right database", async () => {
    for (const id of ["a", "gp-user", "someone@example.com"]) {
      expect(bucketOfUsername(await gpodderUsername(id))).toBe(await bucketOf(id));
    }
    expect(bucketOfUsername("alice")).toBeUndefined();
  });
});

describe("gpodder authentication", () => {
  it("challenges with the Basic realm, sets the session cookie, and the cookie alone works after", async () => {
    const user = await as("gp-auth");
    const credentials = await mint(user);
    const anonymous = await send(
      new Request(`${ORIGIN}/api/2/auth/${credentials.username}/login.json`, { method: "POST" }),
    );
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("WWW-Authenticate")).toBe('Basic realm="gpodder"');
    expect(await anonymous.json()).toEqual({ error: expect.any(String) });

    const login = await gpodder(credentials).post(`/api/2/auth/${credentials.username}/login.json`);
    expect(login.status).toBe(200);
    expect(await login.text()).toBe("");
    const cookie = sessionCookie(login);
    const devices = await withCookie(`/api/2/devices/${credentials.username}.json`, cookie);
    expect(devices.status).toBe(200);
    expect(devices.headers.get("Set-Cookie")).toBeNull();

    const logout = await withCookie(`/api/2/auth/${credentials.username}/logout.json`, cookie, "POST");
    expect(logout.status).toBe(200);
    expect(logout.headers.get("Set-Cookie")).toMatch(/^sessionid=; .*Max-Age=0/);
    expect((await withCookie(`/api/2/devices/${credentials.username}.json`, cookie)).status).toBe(401);
  });

  it("refuses wrong passwords, bearer tokens, forged cookies; app passwords never open /v1", async () => {
    const user = await as("gp-auth-wrong");
    const credentials = await mint(user);
    const path = `/api/2/devices/${credentials.username}.json`;
    expect((await gpodder({ ...credentials, password: "wrong" }).get(path)).status).toBe(401);
    expect((await gpodder({ ...credentials, username: "alice" }).get(path)).status).toBe(401);
    const bearer = await send(new Request(`${ORIGIN}${path}`, { headers: { Authorization: `Bearer ${user.token}` } }));
    expect(bearer.status).toBe(401);
    expect(bearer.headers.get("WWW-Authenticate")).toBe('Basic realm="gpodder"');
    expect((await withCookie(path, `sessionid=${credentials.username}.forged`)).status).toBe(401);
    const onV1 = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, {
        headers: { Authorization: basic(credentials.username, credentials.password), Accept: JSONAPI },
      }),
    );
    expect(onV1.status).toBe(401);
  });

  it("a username in the path that is not the user's is 400; the credentials select the user", async () => {
    const alice = await mint(await as("gp-path-alice"));
    const bob = await mint(await as("gp-path-bob"));
    const response = await gpodder(alice).get(`/api/2/devices/${bob.username}.json`);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: expect.any(String) });
  });

  it("revoking an app password ends it and its sessions", async () => {
    const user = await as("gp-revoke");
    const credentials = await mint(user);
    const path = `/api/2/devices/${credentials.username}.json`;
    const first = await gpodder(credentials).get(path);
    const cookie = sessionCookie(first);
    expect((await user.delete(`/v1/app-passwords/${credentials.id}`)).status).toBe(204);
    expect((await gpodder(credentials).get(path)).status).toBe(401);
    expect((await withCookie(path, cookie)).status).toBe(401);
  });

  it("writes nothing while the user's bucket is frozen for a move: no session opened, no use recorded", async () => {
    const user = await as("gp-frozen");
    const credentials = await mint(user);
    const frozen = { SHARD_FROZEN: `${await bucketOf("gp-frozen")}` };
    const db = await databaseFor("gp-frozen");
    const sessions = () =>
      db
        .prepare("SELECT count(*) AS n FROM gpodder_sessions WHERE user_id = ?")
        .bind("gp-frozen")
        .first<{ n: number }>();
    const path = `/api/2/devices/${credentials.username}.json`;

    const read = await gpodder(credentials, frozen).get(path);
    expect(read.status).toBe(200);
    expect(read.headers.get("Set-Cookie")).toBeNull();
    expect((await gpodder(credentials, frozen).post(`/api/2/auth/${credentials.username}/login.json`)).status).toBe(
      503,
    );
    expect(await sessions()).toEqual({ n: 0 });
    const stored = (await (await user.get(`/v1/app-passwords/${credentials.id}`)).json()) as {
      data: { attributes: { lastUsedAt: string | null } };
    };
    expect(stored.data.attributes.lastUsedAt).toBeNull();

    // Unfrozen, the same credentials open a session; frozen again, the cookie still reads and records nothing
    // (that a read records the use when unfrozen: "records lastUsedAt on use").
    const login = await gpodder(credentials).post(`/api/2/auth/${credentials.username}/login.json`);
    const cookie = sessionCookie(login);
    expect(await sessions()).toEqual({ n: 1 });
    const touched = () =>
      db
        .prepare("SELECT last_used_at AS t FROM app_passwords WHERE id = ?")
        .bind(credentials.id)
        .first<{ t: number }>();
    await db.prepare("UPDATE app_passwords SET last_used_at = 0 WHERE id = ?").bind(credentials.id).run();
    expect((await withCookie(path, cookie, "GET", frozen)).status).toBe(200);
    expect(await touched()).toEqual({ t: 0 });
  });

  it("records lastUsedAt on use", async () => {
    const user = await as("gp-last-used");
    const credentials = await mint(user);
    await gpodder(credentials).get(`/api/2/devices/${credentials.username}.json`);
    const one = (await (await user.get(`/v1/app-passwords/${credentials.id}`)).json()) as {
      data: { attributes: { lastUsedAt: string | null } };
    };
    expect(one.data.attributes.lastUsedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it("counts wrong credentials per address, never requests without any; the per-user limit answers 429", async () => {
    await withinOneRateWindow();
    const tight = {
      USER_RATE_LIMITER: env.TIGHT_USER_RATE_LIMITER,
      AUTH_FAILURE_RATE_LIMITER: env.TIGHT_AUTH_FAILURE_RATE_LIMITER,
    };
    const credentials = await mint(await as("gp-limits"));
    const path = `/api/2/devices/${credentials.username}.json`;
    const from = (ip: string, headers: Record<string, string>) =>
      send(new Request(`${ORIGIN}${path}`, { headers: { "CF-Connecting-IP": ip, ...headers } }), tight);
    // Which requests count as failures: a limiter that records its keys.
    const { bindings: recording, counted } = recordingFailureLimiter();
    const attempt = (ip: string, headers: Record<string, string>) =>
      send(new Request(`${ORIGIN}${path}`, { headers: { "CF-Connecting-IP": ip, ...headers } }), recording);
    expect((await attempt("192.0.2.50", {})).status).toBe(401);
    expect(counted).toEqual([]);
    expect((await attempt("192.0.2.51", { Authorization: basic(credentials.username, "wrong") })).status).toBe(401);
    expect((await attempt("192.0.2.52", { Cookie: `sessionid=${credentials.username}.forged` })).status).toBe(401);
    expect(
      (await attempt("192.0.2.53", { Authorization: basic(credentials.username, credentials.password) })).status,
    ).toBe(200);
    expect(counted).toEqual(["192.0.2.51", "192.0.2.52"]);
    // Over the address's limit, wrong credentials are still answered 401 (docs/API.md §15), never served.
    const wrong = basic(credentials.username, "wrong");
    for (let i = 0; i < 4; i++) expect((await from("192.0.2.54", { Authorization: wrong })).status).toBe(401);

    const client = gpodder(credentials, tight);
    const answers: Response[] = [];
    for (let i = 0; i < 6; i++) answers.push(await client.get(path));
    expect(answers.slice(0, 5).map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers[5].status).toBe(429);
    expect(answers[5].headers.get("Retry-After")).toMatch(/^\d+$/);
    expect(await answers[5].json()).toEqual({ error: expect.any(String) });
  });

  it("costs no D1 round trip once verified: a cached request is the request's one round trip", async () => {
    const credentials = await mint(await as("gp-cost"));
    const { bindings, calls, reset } = await countedDatabaseOf("gp-cost");
    const client = gpodder(credentials, bindings);
    const path = `/api/2/devices/${credentials.username}.json`;
    const cookie = sessionCookie(await client.get(path));
    reset();
    expect((await client.get(path)).status).toBe(200);
    expect(calls()).toBe(1);
    reset();
    expect((await withCookie(path, cookie, "GET", bindings)).status).toBe(200);
    expect((await withCookie(path, cookie, "GET", bindings)).status).toBe(200);
    expect(calls()).toBe(3); // the first use of the session verifies it; the second is cached
  });
});

/**
 * The verified-credential cache entries of a Basic credential and a session cookie, as another isolate holds them
 * (the isolate that erases or revokes forgets its own at once): read before, put back after.
 */
async function otherIsolateCache(credentials: { username: string; password: string }, cookie: string) {
  const keys = [
    `basic:${credentials.username}:${await secretHash(credentials.password)}`,
    `session:${await secretHash(cookie.slice("sessionid=".length))}`,
  ];
  const entries = keys.map((key) => verifiedCredentials.get(key, Date.now()));
  expect(entries.every((entry) => entry !== undefined)).toBe(true);
  return {
    keys,
    restore: () =>
      keys.forEach((key, index) => {
        verifiedCredentials.set(key, entries[index] as VerifiedCredential, Date.now());
      }),
    cached: () => keys.map((key) => verifiedCredentials.get(key, Date.now()) !== undefined),
  };
}

/** Every gpodder write, with Basic or the cookie: each must answer 401 once its credential is gone. */
async function everyWrite(send: (method: string, path: string, body?: unknown) => Promise<Response>, u: string) {
  const episode = { podcast: "https://gone.example.com/feed", episode: "https://gone.example.com/1.mp3" };
  return [
    await send("POST", `/api/2/subscriptions/${u}/phone.json`, { add: ["https://gone.example.com/a"] }),
    await send("PUT", `/subscriptions/${u}/phone.json`, ["https://gone.example.com/b"]),
    await send("POST", `/api/2/episodes/${u}.json`, [{ ...episode, action: "play", position: 5, device: "tv" }]),
    await send("POST", `/api/2/devices/${u}/laptop.json`, { caption: "new" }),
    // A path naming a device creates it: a write too.
    await send("GET", `/api/2/subscriptions/${u}/desktop.json?since=0`),
  ].map((response) => response.status);
}

async function storedRows(userId: string) {
  const db = await databaseFor(userId);
  const counts: Record<string, number> = {};
  for (const table of ["subscriptions", "episodes", "devices", "gpodder_sessions"]) {
    counts[table] =
      (await db.prepare(`SELECT count(*) AS n FROM ${table} WHERE user_id = ?`).bind(userId).first<{ n: number }>())
        ?.n ?? 0;
  }
  return counts;
}

describe("nothing lands after erasure or revocation, from any isolate (docs/API.md §15)", () => {
  const withBasic =
    (credentials: { username: string; password: string }) => (method: string, path: string, body?: unknown) =>
      send(
        new Request(`${ORIGIN}${path}`, {
          method,
          headers: { Authorization: basic(credentials.username, credentials.password) },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      );
  const withSession = (cookie: string) => (method: string, path: string, body?: unknown) =>
    send(
      new Request(`${ORIGIN}${path}`, {
        method,
        headers: { Cookie: cookie },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );

  it("after DELETE /v1/account, a cached Basic password and session cookie write nothing: 401, cache entry forgotten", async () => {
    const userId = "gp-erased-writes";
    const user = await as(userId);
    const credentials = await mint(user);
    const u = credentials.username;
    const cookie = sessionCookie(await gpodder(credentials).post(`/api/2/auth/${u}/login.json`));
    expect((await withCookie(`/api/2/devices/${u}.json`, cookie)).status).toBe(200);
    const cache = await otherIsolateCache(credentials, cookie);

    expect((await user.delete("/v1/account")).status).toBe(204);
    cache.restore();
    expect(await everyWrite(withBasic(credentials), u)).toEqual([401, 401, 401, 401, 401]);
    cache.restore();
    expect(await everyWrite(withSession(cookie), u)).toEqual([401, 401, 401, 401, 401]);
    expect(await storedRows(userId)).toEqual({ subscriptions: 0, episodes: 0, devices: 0, gpodder_sessions: 0 });
    // A refused write forgets its credential: the next request verifies it again (and fails). The session's
    // refusal forgets the session, and the Basic entry that hands it out; the app password's, the password and
    // every session opened with it.
    cache.restore();
    const refused = await withSession(cookie)("POST", `/api/2/devices/${u}/tv.json`, {});
    expect(refused.status).toBe(401);
    expect(refused.headers.get("WWW-Authenticate")).toBe('Basic realm="gpodder"');
    expect(await refused.json()).toEqual({ error: expect.any(String) });
    expect(cache.cached()).toEqual([false, false]);
    cache.restore();
    const basicRefused = await withBasic(credentials)("POST", `/api/2/devices/${u}/tv.json`, {});
    expect(basicRefused.status).toBe(401);
    expect(basicRefused.headers.get("Set-Cookie")).toBeNull();
    expect(cache.cached()).toEqual([false, false]);
  });

  it("after DELETE /v1/account, a path naming a device the isolate knew creates that device again", async () => {
    // Found by the soak (bench/soak.mjs, an erasure on the account page, then a sync): the isolate's cache of
    // devices that exist outlived the erasure, so the device a path named was neither created nor listed.
    const user = await as("gp-erased-devices");
    const before = await mint(user);
    expect((await gpodder(before).get(`/api/2/subscriptions/${before.username}/phone.json?since=0`)).status).toBe(200);
    const listed = async (credentials: { username: string; password: string }) =>
      (
        (await (await gpodder(credentials).get(`/api/2/devices/${credentials.username}.json`)).json()) as {
          id: string;
        }[]
      ).map((device) => device.id);
    expect(await listed(before)).toEqual(["phone"]);

    expect((await user.delete("/v1/account")).status).toBe(204);
    const after = await mint(user);
    expect((await gpodder(after).get(`/api/2/subscriptions/${after.username}/phone.json?since=0`)).status).toBe(200);
    expect(await listed(after)).toEqual(["phone"]);
  });

  it("after DELETE /v1/app-passwords/{id}, the revoked password and its sessions write nothing; another one does", async () => {
    const userId = "gp-revoked-writes";
    const user = await as(userId);
    const [revoked, kept] = [await mint(user, "old phone"), await mint(user, "laptop")];
    const u = revoked.username;
    const cookie = sessionCookie(await gpodder(revoked).post(`/api/2/auth/${u}/login.json`));
    expect((await withCookie(`/api/2/devices/${u}.json`, cookie)).status).toBe(200);
    const cache = await otherIsolateCache(revoked, cookie);

    expect((await user.delete(`/v1/app-passwords/${revoked.id}`)).status).toBe(204);
    cache.restore();
    expect(await everyWrite(withBasic(revoked), u)).toEqual([401, 401, 401, 401, 401]);
    cache.restore();
    expect(await everyWrite(withSession(cookie), u)).toEqual([401, 401, 401, 401, 401]);
    expect(await storedRows(userId)).toEqual({ subscriptions: 0, episodes: 0, devices: 0, gpodder_sessions: 0 });
    expect(await everyWrite(withBasic(kept), u)).toEqual([200, 200, 200, 200, 200]);
    expect(await storedRows(userId)).toMatchObject({ subscriptions: 2, episodes: 1 });
  });
});

describe("gpodder sessions end, are bounded, and are reused by one client (docs/API.md §14)", () => {
  const DAY = 24 * 60 * 60 * 1000;
  /** A client: Basic on every request with its own User-Agent, every request missing the isolate's cache. */
  const uncachedClient = (credentials: { username: string; password: string }, agent: string) => ({
    get: async (path: string) => {
      verifiedCredentials.forget(() => true);
      return send(
        new Request(`${ORIGIN}${path}`, {
          headers: { Authorization: basic(credentials.username, credentials.password), "User-Agent": agent },
        }),
      );
    },
  });
  const sessionsOf = async (userId: string) =>
    (
      await (
        await databaseFor(userId)
      )
        .prepare("SELECT session_hash, app_password_id, last_used_at FROM gpodder_sessions WHERE user_id = ?")
        .bind(userId)
        .all<{ session_hash: string; app_password_id: string; last_used_at: number }>()
    ).results;
  const uncachedCookie = (path: string, cookie: string) => {
    verifiedCredentials.forget(() => true);
    return withCookie(path, cookie);
  };

  it("repeated Basic requests of one client reuse its session: one row, one cookie, however many requests", async () => {
    const userId = "gp-sessions-reused";
    const credentials = await mint(await as(userId));
    const path = `/api/2/devices/${credentials.username}.json`;
    const client = uncachedClient(credentials, "Kasts/24.08");
    const cookies = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const response = await client.get(path);
      expect(response.status).toBe(200);
      cookies.add(sessionCookie(response));
    }
    expect(cookies.size).toBe(1);
    expect(await sessionsOf(userId)).toHaveLength(1);
    // Another client with the same app password has its own session.
    const other = sessionCookie(await uncachedClient(credentials, "libmygpo-qt/1.1").get(path));
    expect(cookies.has(other)).toBe(false);
    expect(await sessionsOf(userId)).toHaveLength(2);
  });

  it("at most 10 live sessions per app password: an 11th ends the one used least recently", async () => {
    const userId = "gp-sessions-bounded";
    const credentials = await mint(await as(userId));
    const path = `/api/2/devices/${credentials.username}.json`;
    const cookies: string[] = [];
    for (let i = 0; i < 10; i++) {
      cookies.push(sessionCookie(await uncachedClient(credentials, `client ${i}`).get(path)));
    }
    // Client 0 was the first to sign in; client 1 used its session since (a day later, so it is recorded).
    const db = await databaseFor(userId);
    await db
      .prepare("UPDATE gpodder_sessions SET last_used_at = last_used_at - ? WHERE user_id = ?")
      .bind(2 * DAY, userId)
      .run();
    expect((await uncachedCookie(path, cookies[0])).status).toBe(200);
    const eleventh = sessionCookie(await uncachedClient(credentials, "client 10").get(path));
    expect(await sessionsOf(userId)).toHaveLength(10);
    expect((await uncachedCookie(path, cookies[1])).status).toBe(401);
    for (const cookie of [cookies[0], ...cookies.slice(2), eleventh]) {
      expect((await uncachedCookie(path, cookie)).status).toBe(200);
    }
  });

  it("a logged-out cookie never works again, even when its client signs in again", async () => {
    const userId = "gp-sessions-logout";
    const credentials = await mint(await as(userId));
    const u = credentials.username;
    const client = uncachedClient(credentials, "AntennaPod/3.5");
    const cookie = sessionCookie(await client.get(`/api/2/devices/${u}.json`));
    expect((await withCookie(`/api/2/auth/${u}/logout.json`, cookie, "POST")).status).toBe(200);
    expect((await uncachedCookie(`/api/2/devices/${u}.json`, cookie)).status).toBe(401);
    // The same client signs in again: a session of its own again, never the ended one.
    const again = sessionCookie(await client.get(`/api/2/devices/${u}.json`));
    expect(again).not.toBe(cookie);
    expect((await uncachedCookie(`/api/2/devices/${u}.json`, cookie)).status).toBe(401);
    expect((await uncachedCookie(`/api/2/devices/${u}.json`, again)).status).toBe(200);
    expect(sessionCookie(await client.get(`/api/2/devices/${u}.json`))).toBe(again);
  });

  it("a session ends 30 days after its last use, recorded (and the cookie renewed) at most once a day; the cron deletes ended ones", async () => {
    const userId = "gp-sessions-expiry";
    const credentials = await mint(await as(userId));
    const path = `/api/2/devices/${credentials.username}.json`;
    const cookie = sessionCookie(await uncachedClient(credentials, "gPodder/3.11").get(path));
    const db = await databaseFor(userId);
    const age = (days: number) =>
      db
        .prepare("UPDATE gpodder_sessions SET last_used_at = ? WHERE user_id = ?")
        .bind(Date.now() - days * DAY, userId)
        .run();
    // Used within the day: nothing recorded, the cookie not set again.
    const [recorded] = await sessionsOf(userId);
    const same = await uncachedCookie(path, cookie);
    expect(same.status).toBe(200);
    expect(same.headers.get("Set-Cookie")).toBeNull();
    expect((await sessionsOf(userId))[0].last_used_at).toBe(recorded.last_used_at);
    // Last used 29 days ago: still live; this use is recorded and the cookie's Max-Age renewed.
    await age(29);
    const renewed = await uncachedCookie(path, cookie);
    expect(renewed.status).toBe(200);
    expect(sessionCookie(renewed)).toBe(cookie);
    expect((await sessionsOf(userId))[0].last_used_at).toBeGreaterThan(Date.now() - 60_000);
    // Unused for 30 days: ended, and the retention cron deletes it.
    await age(30);
    expect((await uncachedCookie(path, cookie)).status).toBe(401);
    expect(await sessionsOf(userId)).toHaveLength(1);
    await runCron();
    expect(await sessionsOf(userId)).toHaveLength(0);
  });
});

describe("revokeAllCredentials (for the operator's revoke command)", () => {
  it("deletes every app password, gpodder session and account session of the user in one batch, nobody else's", async () => {
    const [userId, otherId] = ["gp-revoke-all", "gp-revoke-all-other"];
    const user = await as(userId);
    const [phone, laptop] = [await mint(user, "phone"), await mint(user, "laptop")];
    const other = await mint(await as(otherId));
    const cookie = sessionCookie(await gpodder(phone).post(`/api/2/auth/${phone.username}/login.json`));
    await gpodder(other).post(`/api/2/auth/${other.username}/login.json`);
    for (const id of [userId, otherId]) {
      await (await databaseFor(id))
        .prepare(
          "INSERT INTO account_sessions (session_hash, user_id, name, created_at, expires_at) VALUES (?, ?, ?, 0, ?)",
        )
        .bind(await secretHash(`page-${id}`), id, "Someone", Date.now() + 60_000)
        .run();
    }
    const { calls, bindings } = await countedDatabaseOf(userId);
    const db = Object.values(bindings)[0] as D1Database;
    expect(await revokeAllCredentials(db, userId)).toEqual({ appPasswords: 2, gpodderSessions: 1, accountSessions: 1 });
    expect(calls()).toBe(1);
    const left = async (id: string) => {
      const counts = [];
      for (const table of ["app_passwords", "gpodder_sessions", "account_sessions"]) {
        const row = await (await databaseFor(id))
          .prepare(`SELECT count(*) AS n FROM ${table} WHERE user_id = ?`)
          .bind(id)
          .first<{ n: number }>();
        counts.push(row?.n);
      }
      return counts;
    };
    expect(await left(userId)).toEqual([0, 0, 0]);
    expect(await left(otherId)).toEqual([1, 1, 1]);
    verifiedCredentials.forget((entry) => entry.userId === userId);
    expect((await gpodder(laptop).get(`/api/2/devices/${laptop.username}.json`)).status).toBe(401);
    expect((await withCookie(`/api/2/devices/${phone.username}.json`, cookie)).status).toBe(401);
    expect((await gpodder(other).get(`/api/2/devices/${other.username}.json`)).status).toBe(200);
  });
});

describe("gpodder devices", () => {
  it("creates, updates and lists devices; sync-devices is one group", async () => {
    const user = await as("gp-devices");
    const credentials = await mint(user);
    const client = gpodder(credentials);
    const u = credentials.username;
    expect(
      (await client.post(`/api/2/devices/${u}/laptop.json`, { caption: "My laptop", type: "laptop" })).status,
    ).toBe(200);
    expect((await client.post(`/api/2/devices/${u}/phone.json`, {})).status).toBe(200);
    expect((await client.post(`/api/2/devices/${u}/phone.json`, { type: "phone" })).status).toBe(400);
    expect((await client.post(`/api/2/devices/${u}/bad%20id.json`, {})).status).toBe(400);
    await user.post("/v1/subscriptions", subscriptionDocument(newFeed().guid, newFeed().feedUrl));
    const devices = await (await client.get(`/api/2/devices/${u}.json`)).json();
    expect(devices).toEqual([
      { id: "laptop", caption: "My laptop", type: "laptop", subscriptions: 1 },
      { id: "phone", caption: "", type: "other", subscriptions: 1 },
    ]);
    const sync = await client.get(`/api/2/sync-devices/${u}.json`);
    expect(await sync.json()).toEqual({ synchronized: [["laptop", "phone"]], "not-synchronized": [] });
  });

  it("takes captions of at most 100 characters free of the characters URLs refuse (400 otherwise, nothing stored)", async () => {
    const user = await as("gp-device-captions");
    const credentials = await mint(user);
    const client = gpodder(credentials);
    const u = credentials.username;
    // 100 characters, one of them outside the BMP (two UTF-16 code units): accepted.
    const longest = `${"\u{1F3A7}"}${"c".repeat(99)}`;
    expect((await client.post(`/api/2/devices/${u}/phone.json`, { caption: longest })).status).toBe(200);
    for (const caption of ["c".repeat(101), "x".repeat(1_000_000), "my\u202ephone", "tab\there", "\u{E0041}"]) {
      const refused = await client.post(`/api/2/devices/${u}/phone.json`, { caption });
      expect(refused.status, JSON.stringify(caption.slice(0, 20))).toBe(400);
      expect(await refused.json()).toEqual({ error: expect.stringContaining("caption") });
    }
    // A new device with a refused caption is not created either.
    expect((await client.post(`/api/2/devices/${u}/laptop.json`, { caption: "c".repeat(101) })).status).toBe(400);
    expect(await (await client.get(`/api/2/devices/${u}.json`)).json()).toEqual([
      { id: "phone", caption: longest, type: "other", subscriptions: 0 },
    ]);
  });

  it("a path naming a 101st device is 400 and writes nothing; the request's own batch creates a new one", async () => {
    const userId = "gp-device-limit";
    const user = await as(userId);
    const credentials = await mint(user);
    const counter = await countedDatabaseOf(userId);
    const client = gpodder(credentials, counter.bindings);
    const u = credentials.username;
    const db = await databaseFor(userId);
    await db.batch(
      Array.from({ length: 99 }, (_, i) =>
        db
          .prepare("INSERT INTO devices (user_id, device_id, caption, type, created_at) VALUES (?, ?, '', 'other', ?)")
          .bind(userId, `seeded-${i}`, i),
      ),
    );
    // The 100th device, named first by a path: created by the GET's own round trip (its one D1 call, signed in).
    expect((await client.post(`/api/2/auth/${u}/login.json`)).status).toBe(200);
    counter.reset();
    const hundredth = await client.get(`/api/2/subscriptions/${u}/hundredth.json?since=0`);
    expect(hundredth.status).toBe(200);
    expect(counter.calls()).toBe(1);
    const deviceCount = async () =>
      (await db.prepare("SELECT count(*) AS n FROM devices WHERE user_id = ?").bind(userId).first<{ n: number }>())?.n;
    expect(await deviceCount()).toBe(100);
    // A 101st: every path that names a device refuses it, and writes nothing.
    const add = { add: ["https://device-limit.example.com/feed"] };
    for (const response of [
      await client.get(`/api/2/subscriptions/${u}/one-too-many.json?since=0`),
      await client.post(`/api/2/subscriptions/${u}/one-too-many.json`, add),
      await client.put(`/subscriptions/${u}/one-too-many.json`, add.add),
    ]) {
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: "A user may have at most 100 devices." });
    }
    expect(await deviceCount()).toBe(100);
    expect(await (await client.get(`/subscriptions/${u}.json`)).json()).toEqual([]);
    // A device it has still takes the upload.
    expect((await client.post(`/api/2/subscriptions/${u}/hundredth.json`, add)).status).toBe(200);
    expect(await (await client.get(`/subscriptions/${u}.json`)).json()).toEqual(add.add);
  });

  it("sync-devices reads the device ids only, never their captions", async () => {
    const credentials = await mint(await as("gp-sync-devices-ids"));
    const { bindings, totals, reset } = await meteredDatabaseOf("gp-sync-devices-ids");
    const client = gpodder(credentials, bindings);
    const u = credentials.username;
    for (const id of ["b-phone", "a-laptop"]) {
      expect((await client.post(`/api/2/devices/${u}/${id}.json`, { caption: "c".repeat(100) })).status).toBe(200);
    }
    reset();
    const sync = await client.get(`/api/2/sync-devices/${u}.json`);
    expect(await sync.json()).toEqual({ synchronized: [["b-phone", "a-laptop"]], "not-synchronized": [] });
    expect(totals.statements.length).toBe(1);
    expect(totals.statements[0].sql).not.toMatch(/caption/);
  });
});

describe("download, then upload: a change made in between reaches the app (docs/API.md §14)", () => {
  /** Waits until the clock (the database's: the same machine's) has left the current Unix second. */
  async function nextSecond() {
    const second = Math.floor(Date.now() / 1000);
    while (Math.floor(Date.now() / 1000) <= second) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const play = (podcast: string, episode: string, position: number) => ({
    podcast,
    episode,
    action: "play",
    timestamp: new Date().toISOString().slice(0, 19),
    started: 0,
    position,
    total: 3600,
  });
  type Actions = { actions: { episode: string }[]; timestamp: number };
  type Changes = { add: string[]; remove: string[]; timestamp: number };

  it("AntennaPod takes the upload's timestamp as its next since: it still gets what another device sent meanwhile", async () => {
    const user = await as("gp-download-upload");
    const phone = gpodder(await mint(user, "AntennaPod"));
    const laptop = gpodder(await mint(user, "gPodder"));
    const u = (await (await user.get("/v1/app-passwords")).json()) as { data: { attributes: { username: string } }[] };
    const name = u.data[0].attributes.username;
    const feed = "https://gap.example.com/feed.xml";
    await phone.post(`/api/2/subscriptions/${name}/phone.json`, { add: [feed] });
    await nextSecond();

    // Subscriptions (SyncService.syncSubscriptions): download, another device's change, upload, next download.
    const downloaded = (await (await phone.get(`/api/2/subscriptions/${name}/phone.json?since=0`)).json()) as Changes;
    expect(downloaded.add).toEqual([feed]);
    await laptop.post(`/api/2/subscriptions/${name}/laptop.json`, { add: ["https://gap.example.com/other.xml"] });
    await nextSecond();
    const uploaded = (await (
      await phone.post(`/api/2/subscriptions/${name}/phone.json`, { add: ["https://gap.example.com/mine.xml"] })
    ).json()) as { timestamp: number };
    const next = (await (
      await phone.get(`/api/2/subscriptions/${name}/phone.json?since=${uploaded.timestamp}`)
    ).json()) as Changes;
    expect(next.add).toEqual(expect.arrayContaining(["https://gap.example.com/other.xml"]));

    // Episode actions (SyncService.syncEpisodeActions): the same sequence.
    const before = (await (await phone.get(`/api/2/episodes/${name}.json?since=0`)).json()) as Actions;
    await laptop.post(`/api/2/episodes/${name}.json`, [play(feed, "https://gap.example.com/laptop.mp3", 60)]);
    await nextSecond();
    const posted = (await (
      await phone.post(`/api/2/episodes/${name}.json`, [play(feed, "https://gap.example.com/phone.mp3", 90)])
    ).json()) as { timestamp: number };
    const after = (await (await phone.get(`/api/2/episodes/${name}.json?since=${posted.timestamp}`)).json()) as Actions;
    expect(after.actions.map((action) => action.episode)).toEqual(
      expect.arrayContaining(["https://gap.example.com/laptop.mp3"]),
    );
    expect(before.actions).toEqual([]);
  });

  it("gPodder takes its next episode since from its download: it is sent exactly what changed since, as before", async () => {
    const user = await as("gp-download-upload-gpodder");
    const desktop = gpodder(await mint(user, "gPodder"));
    const phone = gpodder(await mint(user, "AntennaPod"));
    const u = (await (await user.get("/v1/app-passwords")).json()) as { data: { attributes: { username: string } }[] };
    const name = u.data[0].attributes.username;
    const feed = "https://gap-gpodder.example.com/feed.xml";
    await desktop.post(`/api/2/subscriptions/${name}/desktop.json`, { add: [feed] });
    // A change before gPodder's download (an earlier second): it has it, and is not sent it again.
    await phone.post(`/api/2/episodes/${name}.json`, [play(feed, "https://gap-gpodder.example.com/old.mp3", 10)]);
    await nextSecond();
    const downloaded = (await (await desktop.get(`/api/2/episodes/${name}.json?since=0`)).json()) as Actions;
    expect(downloaded.actions.map((action) => action.episode)).toEqual(["https://gap-gpodder.example.com/old.mp3"]);
    await phone.post(`/api/2/episodes/${name}.json`, [play(feed, "https://gap-gpodder.example.com/phone.mp3", 20)]);
    await nextSecond();
    // gPodder uploads, ignoring the answer's timestamp (my.py: the episode since comes from the download).
    await desktop.post(`/api/2/episodes/${name}.json`, [play(feed, "https://gap-gpodder.example.com/desk.mp3", 30)]);
    const next = (await (
      await desktop.get(`/api/2/episodes/${name}.json?since=${downloaded.timestamp}`)
    ).json()) as Actions;
    expect(next.actions.map((action) => action.episode)).toEqual([
      "https://gap-gpodder.example.com/phone.mp3",
      "https://gap-gpodder.example.com/desk.mp3",
    ]);
  });
});

describe("gpodder subscriptions", () => {
  it("uploads and reads changes since a Unix second; both APIs see the same list", async () => {
    const user = await as("gp-subs");
    const credentials = await mint(user);
    const client = gpodder(credentials);
    const u = credentials.username;
    const viaJsonApi = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(viaJsonApi.guid, viaJsonApi.feedUrl));
    const upload = await client.post(`/api/2/subscriptions/${u}/dev.json`, {
      add: ["https://gp.example.com/a.xml", "  https://gp.example.com/b.xml\n", "not a url"],
    });
    expect(upload.status).toBe(200);
    const uploaded = (await upload.json()) as { timestamp: number; update_urls: [string, string][] };
    expect(uploaded.update_urls).toEqual([
      ["  https://gp.example.com/b.xml\n", "https://gp.example.com/b.xml"],
      ["not a url", ""],
    ]);
    // The clock 10 minutes back (an app that takes it as its next since misses nothing received meanwhile).
    expect(Math.abs(uploaded.timestamp + 600 - Date.now() / 1000)).toBeLessThan(5);

    const changes = (await (await client.get(`/api/2/subscriptions/${u}/dev.json?since=0`)).json()) as {
      add: string[];
      remove: string[];
      timestamp: number;
    };
    expect(changes.add).toEqual([viaJsonApi.feedUrl, "https://gp.example.com/a.xml", "https://gp.example.com/b.xml"]);
    expect(changes.remove).toEqual([]);

    // The JSON:API sees the gpodder add, under the feed's podcast:guid.
    const list = (await (await user.get("/v1/subscriptions")).json()) as {
      data: { id: string; attributes: { feedUrl: string } }[];
    };
    expect(list.data.map((item) => item.attributes.feedUrl)).toEqual(changes.add);
    expect(list.data[1].id).toBe(await podcastGuid("https://gp.example.com/a.xml"));

    // A JSON:API unsubscribe is a gpodder remove; a gpodder remove is a JSON:API tombstone.
    expect((await user.delete(`/v1/subscriptions/${viaJsonApi.guid}`)).status).toBe(204);
    await client.post(`/api/2/subscriptions/${u}/dev.json`, { remove: ["https://gp.example.com/a.xml"] });
    const later = (await (
      await client.get(`/api/2/subscriptions/${u}/dev.json?since=${changes.timestamp}`)
    ).json()) as {
      add: string[];
      remove: string[];
    };
    expect(later.remove).toEqual([viaJsonApi.feedUrl, "https://gp.example.com/a.xml"]);
    const after = (await (await user.get("/v1/subscriptions")).json()) as {
      data: { attributes: { feedUrl: string } }[];
    };
    expect(after.data.map((item) => item.attributes.feedUrl)).toEqual(["https://gp.example.com/b.xml"]);
    // A future since finds nothing.
    const none = (await (
      await client.get(`/api/2/subscriptions/${u}/dev.json?since=${changes.timestamp + 100}`)
    ).json()) as {
      add: string[];
    };
    expect(none.add).toEqual([]);
  });

  it("adds with the tombstone's guid, and reports the stored URL of a feed already active under another", async () => {
    const user = await as("gp-subs-guid");
    const credentials = await mint(user);
    const client = gpodder(credentials);
    const u = credentials.username;
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    await user.delete(`/v1/subscriptions/${feed.guid}`);
    await client.post(`/api/2/subscriptions/${u}/dev.json`, { add: [feed.feedUrl] });
    expect((await user.get(`/v1/subscriptions/${feed.guid}`)).status).toBe(200);

    await client.post(`/api/2/subscriptions/${u}/dev.json`, { add: ["https://same.example.com/feed"] });
    const twin = await client.post(`/api/2/subscriptions/${u}/dev.json`, { add: ["http://same.example.com/feed"] });
    expect(((await twin.json()) as { update_urls: unknown }).update_urls).toEqual([
      ["http://same.example.com/feed", "https://same.example.com/feed"],
    ]);
  });

  it('finds rows from before url_key by their URL, and answers [sent, ""] for an add the quota refuses', async () => {
    const userId = "gp-subs-legacy";
    const user = await as(userId);
    const credentials = await mint(user);
    const client = gpodder(credentials);
    const u = credentials.username;
    const db = await databaseFor(userId);
    // Rows as written before migration 0004: no url_key.
    await seedSubscriptions(userId, 1, { feedUrl: () => "https://legacy.example.com/active" });
    await seedSubscriptions(userId, 1, { feedUrl: () => "https://legacy.example.com/gone", unsubscribed: true });
    const guidOf = async (url: string) =>
      (await db
        .prepare("SELECT guid FROM subscriptions WHERE user_id = ? AND feed_url = ?")
        .bind(userId, url)
        .first<{ guid: string }>()) as { guid: string };
    const active = await guidOf("https://legacy.example.com/active");
    const gone = await guidOf("https://legacy.example.com/gone");
    const episode = { episode: "https://cdn.legacy.example.com/1.mp3", action: "new" };
    await client.post(`/api/2/episodes/${u}.json`, [
      { podcast: "https://legacy.example.com/active", ...episode },
      { podcast: "https://legacy.example.com/gone", ...episode },
    ]);
    for (const feed of [active, gone]) {
      expect((await user.get(`/v1/episodes/${await uuidV5(feed.guid, episode.episode)}`)).status).toBe(200);
    }
    const answer = await client.post(`/api/2/subscriptions/${u}/dev.json`, {
      add: ["https://legacy.example.com/gone", "https://legacy.example.com/active"],
    });
    expect(((await answer.json()) as { update_urls: unknown }).update_urls).toEqual([]);
    expect((await user.get(`/v1/subscriptions/${gone.guid}`)).status).toBe(200);
    await client.post(`/api/2/subscriptions/${u}/dev.json`, { remove: ["https://legacy.example.com/active"] });
    expect((await user.get(`/v1/subscriptions/${active.guid}`)).status).toBe(404);

    await seedSubscriptions(userId, 10_000 - 2);
    const full = await client.post(`/api/2/subscriptions/${u}/dev.json`, {
      add: ["https://legacy.example.com/active", "https://legacy.example.com/new"],
    });
    // Reviving a tombstone is not storing one more; a new feed past the quota is refused.
    expect(((await full.json()) as { update_urls: unknown }).update_urls).toEqual([
      ["https://legacy.example.com/new", ""],
    ]);
    expect((await user.get(`/v1/subscriptions/${active.guid}`)).status).toBe(200);
  });

  it("charges the changes since a time one request per 100 changes read, after the answer (docs/storage.md)", async () => {
    await withinOneRateWindow();
    const tight = { USER_RATE_LIMITER: env.TIGHT_USER_RATE_LIMITER }; // 5 requests per 60 s
    await seedSubscriptions("gp-charged-changes", 450);
    const large = gpodder(await mint(await as("gp-charged-changes")), tight);
    const username = await gpodderUsername("gp-charged-changes");
    const changes = await large.get(`/api/2/subscriptions/${username}/phone.json?since=0`);
    expect(changes.status).toBe(200);
    expect(((await changes.json()) as { add: string[] }).add).toHaveLength(450);
    // 1 for the request and 4 more for 450 changes (5 pages of 100): the limit of 5 is spent.
    expect((await large.get(`/api/2/devices/${username}.json`)).status).toBe(429);

    await seedSubscriptions("gp-charged-few", 100);
    const small = gpodder(await mint(await as("gp-charged-few")), tight);
    const smallName = await gpodderUsername("gp-charged-few");
    expect((await small.get(`/api/2/subscriptions/${smallName}/phone.json?since=0`)).status).toBe(200);
    expect((await small.get(`/api/2/devices/${smallName}.json`)).status).toBe(200);
  });

  it("refuses a URL both added and removed (400), more than 10 000 URLs (413) and a bad since (400)", async () => {
    const credentials = await mint(await as("gp-subs-invalid"));
    const client = gpodder(credentials);
    const path = `/api/2/subscriptions/${credentials.username}/dev.json`;
    const both = await client.post(path, { add: ["https://x.example.com/f"], remove: ["https://x.example.com/f"] });
    expect(both.status).toBe(400);
    expect(await both.json()).toEqual({ error: expect.any(String) });
    const many = Array.from({ length: 10_001 }, (_, i) => `https://x.example.com/${i}`);
    expect((await client.post(path, { add: many })).status).toBe(413);
    expect((await client.get(`${path}?since=-1`)).status).toBe(400);
    expect((await client.get(`${path}?since=abc`)).status).toBe(400);
    expect((await client.post(path, "not json")).status).toBe(400);
  });
});

describe("gpodder simple API", () => {
  it("lists as json, txt and opml, and PUT replaces the list", async () => {
    const user = await as("gp-simple");
    const credentials = await mint(user);
    const client = gpodder(credentials);
    const u = credentials.username;
    const kept = newFeed();
    const dropped = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(kept.guid, kept.feedUrl));
    await user.post("/v1/subscriptions", subscriptionDocument(dropped.guid, dropped.feedUrl));
    const put = await client.put(`/subscriptions/${u}/dev.json`, [kept.feedUrl, "https://simple.example.com/new"]);
    expect(put.status).toBe(200);
    expect(await put.text()).toBe("");
    expect(await (await client.get(`/subscriptions/${u}.json`)).json()).toEqual([
      kept.feedUrl,
      "https://simple.example.com/new",
    ]);
    const txt = await client.get(`/subscriptions/${u}/dev.txt`);
    expect(await txt.text()).toBe(`${kept.feedUrl}\nhttps://simple.example.com/new\n`);
    const opml = await client.get(`/subscriptions/${u}.opml`);
    expect(opml.headers.get("Content-Type")).toMatch(/^text\/x-opml/);
    expect(await opml.text()).toContain(`xmlUrl="${kept.feedUrl}" guid="${kept.guid}"`);
    expect((await user.get(`/v1/subscriptions/${dropped.guid}`)).status).toBe(404);
  });

  it("the .opml list names each feed by its podcast's title, with htmlUrl (docs/API.md §18); json and txt stay URLs", async () => {
    const user = await as(`gp-simple-titles-${crypto.randomUUID()}`);
    const credentials = await mint(user);
    const client = gpodder(credentials);
    const u = credentials.username;
    const [titled, pending] = [newFeed(), newFeed()];
    for (const feed of [titled, pending]) {
      await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    }
    await seedPodcast(user.userId, titled.feedUrl, { title: "<b>Bold</b> Show", siteUrl: "https://bold.example/" });
    const opml = await (await client.get(`/subscriptions/${u}.opml`)).text();
    expect(opml).toContain(
      `text="&lt;b&gt;Bold&lt;/b&gt; Show" title="&lt;b&gt;Bold&lt;/b&gt; Show" xmlUrl="${titled.feedUrl}" htmlUrl="https://bold.example/" guid="${titled.guid}"`,
    );
    expect(opml).toContain(`text="${pending.feedUrl}" title="${pending.feedUrl}" xmlUrl="${pending.feedUrl}"`);
    expect(await (await client.get(`/subscriptions/${u}.json`)).json()).toEqual([titled.feedUrl, pending.feedUrl]);
  });

  it("answers unknown gpodder paths 404 as {error}", async () => {
    const credentials = await mint(await as("gp-unknown"));
    const client = gpodder(credentials);
    for (const path of [
      `/api/2/updates/${credentials.username}/dev.json`,
      `/api/2/settings/${credentials.username}/account.json`,
      `/api/2/favorites/${credentials.username}.json`,
      "/api/2/tag/x/10.json",
      `/subscriptions/${credentials.username}.xml`,
    ]) {
      const response = await client.get(path);
      expect(response.status, path).toBe(404);
      expect(await response.json()).toEqual({ error: expect.any(String) });
    }
  });
});

describe("gpodder uploads: one D1 round trip each", () => {
  /** A signed-in client on a counting database, its credentials and device already known to the isolate. */
  async function counted(userId: string) {
    const user = await as(userId);
    const credentials = await mint(user);
    const counter = await countedDatabaseOf(userId);
    const client = gpodder(credentials, counter.bindings);
    const u = credentials.username;
    expect((await client.post(`/api/2/devices/${u}/dev.json`, {})).status).toBe(200);
    const measure = async (request: () => Promise<Response>) => {
      counter.reset();
      const response = await request();
      expect(response.status).toBe(200);
      return { body: await response.text(), calls: counter.calls() };
    };
    return { user, client, u, measure };
  }

  it("a subscriptions POST (adds and removes) and a simple PUT", async () => {
    const { user, client, u, measure } = await counted("gp-trips-subs");
    // Two active subscriptions with one URL (two guids: an add of the URL under another id is refused, §18, but a
    // PATCH may still rename one to the other's URL): a remove ends both.
    const twin = newFeed();
    const other = crypto.randomUUID();
    await user.post("/v1/subscriptions", subscriptionDocument(twin.guid, twin.feedUrl));
    expect((await user.post("/v1/subscriptions", subscriptionDocument(other, newFeed().feedUrl))).status).toBe(201);
    expect((await user.patch(`/v1/subscriptions/${other}`, subscriptionDocument(other, twin.feedUrl))).status).toBe(
      200,
    );
    const posted = await measure(() =>
      client.post(`/api/2/subscriptions/${u}/dev.json`, {
        add: ["https://trips.example.com/a", " https://trips.example.com/b", "nope"],
        remove: [twin.feedUrl],
      }),
    );
    expect(posted.calls).toBe(1);
    expect(JSON.parse(posted.body).update_urls).toEqual([
      [" https://trips.example.com/b", "https://trips.example.com/b"],
      ["nope", ""],
    ]);
    expect((await user.get(`/v1/subscriptions/${twin.guid}`)).status).toBe(404);
    expect((await user.get(`/v1/subscriptions/${other}`)).status).toBe(404);
    // Each row a remove ends gets its own change number.
    const { results } = await (await databaseFor("gp-trips-subs"))
      .prepare("SELECT change_seq FROM subscriptions WHERE user_id = ?")
      .bind("gp-trips-subs")
      .all<{ change_seq: number }>();
    expect(new Set(results.map((row) => row.change_seq)).size).toBe(results.length);

    const put = await measure(() =>
      client.put(`/subscriptions/${u}/dev.json`, ["https://trips.example.com/b", "https://trips.example.com/c"]),
    );
    expect(put.calls).toBe(1);
    expect(await (await client.get(`/subscriptions/${u}.json`)).json()).toEqual([
      "https://trips.example.com/b",
      "https://trips.example.com/c",
    ]);
  });

  it("an episode upload of 1000 actions; a feed under another guid costs one more round trip once per isolate", async () => {
    const { user, client, u, measure } = await counted("gp-trips-episodes");
    const podcasts = Array.from({ length: 10 }, (_, i) => `https://trips.example.com/podcast/${i}`);
    await client.post(`/api/2/subscriptions/${u}/dev.json`, { add: podcasts.slice(0, 5) });
    const actions = Array.from({ length: 1000 }, (_, i) => ({
      podcast: podcasts[i % podcasts.length],
      episode: `https://cdn.trips.example.com/${i}.mp3`,
      action: "play",
      timestamp: "2026-01-02T03:04:05",
      position: 10,
      total: 100,
    }));
    expect((await measure(() => client.post(`/api/2/episodes/${u}.json`, actions))).calls).toBe(1);
    const episode = await uuidV5(await podcastGuid(podcasts[7]), actions[7].episode);
    expect((await user.get(`/v1/episodes/${episode}`)).status).toBe(200);

    // Subscribed through the JSON:API under a guid that is not the URL's podcast:guid.
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const play = (n: number) => ({
      podcast: feed.feedUrl,
      episode: `https://cdn.trips.example.com/f${n}.mp3`,
      action: "new",
    });
    // The guess (the podcast:guid) is wrong: its write writes nothing, the batch reads the feed's guid and writes the
    // rest; a second batch writes that feed's action.
    const other = { ...actions[0], episode: "https://cdn.trips.example.com/other.mp3" };
    expect((await measure(() => client.post(`/api/2/episodes/${u}.json`, [play(1), other]))).calls).toBe(2);
    expect((await user.get(`/v1/episodes/${await uuidV5(feed.guid, play(1).episode)}`)).status).toBe(200);
    expect(
      (await user.get(`/v1/episodes/${await uuidV5(await podcastGuid(other.podcast), other.episode)}`)).status,
    ).toBe(200);
    const wrong = await uuidV5(await podcastGuid(feed.feedUrl), play(1).episode);
    expect((await user.get(`/v1/episodes/${wrong}`)).status).toBe(404);
    // The isolate now knows the feed's guid.
    expect((await measure(() => client.post(`/api/2/episodes/${u}.json`, [play(2)]))).calls).toBe(1);
    expect((await user.get(`/v1/episodes/${await uuidV5(feed.guid, play(2).episode)}`)).status).toBe(200);
  });
});

describe("gpodder statements", () => {
  it("none scans a table; only the bounded lists (50 app passwords, 100 devices) sort", async () => {
    const userId = "gp-plans";
    const meter = await meteredDatabaseOf(userId);
    const user = await as(userId, meter.bindings);
    const credentials = await mint(user);
    const client = gpodder(credentials, meter.bindings);
    const u = credentials.username;
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    await user.get("/v1/app-passwords");
    await user.get(`/v1/app-passwords/${credentials.id}`);
    const cookie = sessionCookie(await client.post(`/api/2/auth/${u}/login.json`));
    await withCookie(`/api/2/devices/${u}.json`, cookie, "GET", meter.bindings);
    await client.post(`/api/2/devices/${u}/dev.json`, { caption: "x" });
    await client.get(`/api/2/sync-devices/${u}.json`);
    await client.post(`/api/2/subscriptions/${u}/dev.json`, {
      add: ["https://plans.example.com/a"],
      remove: [feed.feedUrl],
    });
    // Read to its end: the `remove` walk's pages are read as the body is. A device the path names first is created
    // in the same batch (its guard).
    await (await client.get(`/api/2/subscriptions/${u}/dev.json?since=0`)).text();
    await (await client.get(`/api/2/subscriptions/${u}/fresh.json?since=0`)).text();
    await client.put(`/subscriptions/${u}/dev.json`, ["https://plans.example.com/b"]);
    await client.get(`/subscriptions/${u}.json`);
    await client.post(`/api/2/episodes/${u}.json`, [
      {
        podcast: "https://plans.example.com/b",
        episode: "https://plans.example.com/1.mp3",
        action: "play",
        position: 1,
        total: 2,
        device: "other",
      },
    ]);
    await client.get(`/api/2/episodes/${u}.json?since=0`);
    await client.get(`/api/2/episodes/${u}.json?since=5&podcast=${encodeURIComponent("https://plans.example.com/b")}`);
    await withCookie(`/api/2/auth/${u}/logout.json`, cookie, "POST", meter.bindings);
    await user.delete(`/v1/app-passwords/${credentials.id}`);
    await revokeAllCredentials(meter.binding, userId);

    const distinct = new Map(meter.totals.statements.map((statement) => [statement.sql, statement]));
    const mine = { ...appPasswordStatements, ...deviceStatements, ...gpodderStatements };
    for (const [name, statement] of Object.entries(mine)) {
      expect(distinct.has(statement.sql), `statement ${name} not exercised`).toBe(true);
    }
    for (const statement of Object.values(mine)) {
      const { params } = distinct.get(statement.sql) as { params: unknown[] };
      const details = await queryPlan(await databaseFor(userId), statement.sql, params);
      // A table scan, or a walk of all of a user's subscriptions or episodes by the primary key's user prefix.
      const tables = [
        "subscriptions",
        "episodes",
        "user_stats",
        "app_passwords",
        "devices",
        "gpodder_sessions",
        "feed_aliases",
      ];
      const scans = walksOf(details, tables, ["subscriptions", "episodes"]);
      expect(scans, `${statement.sql}\n${details.join("\n")}`).toEqual([]);
      // The lists of 50 app passwords and 100 devices sort; so do the uploads' set statements, over the URLs and
      // episode writes a request sent (a chunk of at most 1 MB of them), and the episode pages, over a page's feeds (at most 500
      // rows): never the account's rows.
      const bounded =
        /FROM "(app_passwords|devices)" WHERE "(app_passwords|devices)"."user_id" = \?\d* ORDER BY/.test(
          statement.sql,
        ) ||
        [
          gpodderStatements.upload,
          gpodderStatements.uploadRoom,
          gpodderStatements.resolved,
          gpodderStatements.episodeUploadRoom,
          gpodderStatements.episodeUploadStoredRefused,
          gpodderStatements.episodeUploadStored,
          gpodderStatements.episodeUploadFreshRefused,
          gpodderStatements.episodeUploadFresh,
          gpodderStatements.episodeChangesPage,
          gpodderStatements.feedChangesPage,
        ].includes(statement);
      if (!bounded)
        expect(
          details.filter((detail) => /TEMP B-TREE/.test(detail)),
          statement.sql,
        ).toEqual([]);
    }
  });
});
