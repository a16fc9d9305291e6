import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { gpodderUsername } from "../src/auth/gpodder-username";
import { derivedKey, seal, unseal } from "../src/auth/sealed-secrets";
import { secretHash } from "../src/auth/secrets";
import { appPasswordCheckStatements } from "../src/db/app-passwords";
import { loginFlowStatements, MAX_PENDING_LOGIN_FLOWS } from "../src/db/login-flows";
import {
  denyLoginFlow,
  grantLoginFlow,
  LOGIN_FLOW_LIFETIME_MS,
  POLL_KEY,
  pendingLoginFlow,
} from "../src/nextcloud/login-flow";
import { uuidV5 } from "../src/podcast-guid";
import { bucketOf, shardOfBucket, shardRouting } from "../src/shards";
import {
  as,
  type Bindings,
  databaseFor,
  ORIGIN,
  recordingFailureLimiter,
  runCron,
  send,
  subscriptionDocument,
  withinOneRateWindow,
} from "./helpers";
import {
  type Actions,
  ANTENNAPOD,
  age,
  basic,
  type Changes,
  expectNotGranted,
  flowD1,
  flowRow,
  gpodder,
  grant,
  granted,
  json,
  LOGIN,
  mint,
  nextcloud,
  POLL,
  poll,
  SECRET,
  SYNC,
  signedInApp,
  start,
  startFlow,
} from "./nextcloud-client";

/**
 * Nextcloud's Login Flow v2 and the API of the Nextcloud app gPodder Sync (docs/API.md §17). Grants and denials
 * here call the functions the grant page calls (its own tests, through the page: nextcloud-grant-page.test.ts).
 */

/** `count` flows in bucket 0's database, as starts would leave them, expiring at `expiresAt` (token hash `<name>-<i>`). */
async function seedFlows(name: string, count: number, expiresAt: number) {
  await flowD1()
    .prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
       INSERT INTO login_flows (token_hash, login_hash, app_name, started_at, started_from, expires_at, sealed_password)
       SELECT ?2 || '-' || i, ?2 || '-login-' || i, 'Seeded', ?3 - ${LOGIN_FLOW_LIFETIME_MS}, '192.0.2.1', ?3, 'sealed'
       FROM n`,
    )
    .bind(count, name, expiresAt)
    .run();
}

describe("sealed secrets (what a granted flow keeps in D1)", () => {
  it("open only with the key derived from the same secret and purpose, in the same context, unaltered", async () => {
    const key = await derivedKey("the poll token", "purpose");
    const plaintext = new TextEncoder().encode("an app password");
    const sealed = await seal(key, plaintext, "username");
    expect(await unseal(key, sealed, "username")).toEqual(plaintext);
    expect(await seal(key, plaintext, "username")).not.toBe(sealed); // a fresh IV each time
    expect(await unseal(await derivedKey("another token", "purpose"), sealed, "username")).toBeUndefined();
    expect(await unseal(await derivedKey("the poll token", "another purpose"), sealed, "username")).toBeUndefined();
    expect(await unseal(key, sealed, "another username")).toBeUndefined();
    // One character of the ciphertext changed (the last one also holds padding bits: the one before it).
    const altered = `${sealed.slice(0, -2)}${sealed.at(-2) === "A" ? "B" : "A"}${sealed.slice(-1)}`;
    expect(altered).not.toBe(sealed);
    expect(await unseal(key, altered, "username")).toBeUndefined();
    expect(await unseal(key, "not base64url!", "username")).toBeUndefined();
  });
});

describe("Login Flow v2: starting (POST /index.php/login/v2)", () => {
  it("answers the poll token, the poll endpoint and the login link; stores only their hashes, for 20 minutes", async () => {
    const before = Date.now();
    const response = await start({ "CF-Connecting-IP": "198.51.100.7" });
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe("application/json");
    const body = (await response.json()) as { poll: { token: string; endpoint: string }; login: string };
    expect(Object.keys(body).sort()).toEqual(["login", "poll"]);
    expect(body.poll.endpoint).toBe(`${ORIGIN}${POLL}`);
    expect(body.poll.token).toMatch(SECRET);
    const prefix = `${ORIGIN}${LOGIN}/flow/`;
    expect(body.login.startsWith(prefix)).toBe(true);
    const loginId = body.login.slice(prefix.length);
    expect(loginId).toMatch(SECRET);
    expect(loginId).not.toBe(body.poll.token);

    const row = await flowRow(body.poll.token);
    expect(row).toMatchObject({
      token_hash: await secretHash(body.poll.token),
      login_hash: await secretHash(loginId),
      app_name: ANTENNAPOD,
      started_from: "198.51.100.7",
      login_name: null,
    });
    const startedAt = row?.started_at as number;
    expect(startedAt).toBeGreaterThanOrEqual(before);
    expect(startedAt).toBeLessThanOrEqual(Date.now());
    expect(row?.expires_at).toBe(startedAt + 20 * 60_000);
    // Neither secret is stored, in any column.
    for (const value of Object.values(row ?? {})) {
      expect(String(value)).not.toContain(body.poll.token);
      expect(String(value)).not.toContain(loginId);
    }
  });

  it("takes any body, names the app by its User-Agent (100 characters kept; none: Unknown app)", async () => {
    expect((await start({ "Content-Type": "application/json" }, {}, '{"anything":[1,2]}')).status).toBe(200);
    const long = await startFlow({ "User-Agent": `App ${"x".repeat(200)}` });
    expect((await flowRow(long.token))?.app_name).toBe(`App ${"x".repeat(96)}`);
    const anonymous = await send(new Request(`${ORIGIN}${LOGIN}`, { method: "POST" }));
    const { poll: anonymousPoll } = (await anonymous.json()) as { poll: { token: string } };
    expect((await flowRow(anonymousPoll.token))?.app_name).toBe("Unknown app");
    expect((await pendingLoginFlow(shardRouting(env), long.loginId, Date.now()))?.appName).toBe(
      `App ${"x".repeat(96)}`,
    );
  });

  it("removes §15's refused code points from the app's name: bidi controls, C0 and C1 controls, format characters", async () => {
    // U+202E, U+202C, U+0085 (C1), U+200B (format), U+2066, U+0007 (workerd carries them as the header's UTF-8).
    const flow = await startFlow({
      "User-Agent": "Antenna\u202eevil\u202cPod\u0085 3.7\u200b \u2066é\u2069\u0007",
    });
    const stored = (await flowRow(flow.token))?.app_name;
    expect(stored).toBe("AntennaevilPod 3.7 é");
    const onlyRefused = await startFlow({ "User-Agent": "\u202e\u202c\u200b" });
    expect((await flowRow(onlyRefused.token))?.app_name).toBe("Unknown app");
  });

  it("builds its links on PUBLIC_BASE_URL when set, and the poll answers it as the server", async () => {
    const base = { PUBLIC_BASE_URL: "https://sync.example.org/podcasts" } as Partial<Bindings>;
    const response = await start({}, base);
    const body = (await response.json()) as { poll: { token: string; endpoint: string }; login: string };
    expect(body.poll.endpoint).toBe("https://sync.example.org/podcasts/index.php/login/v2/poll");
    expect(body.login).toMatch(
      /^https:\/\/sync\.example\.org\/podcasts\/index\.php\/login\/v2\/flow\/[A-Za-z0-9_-]{43}$/,
    );
    await grant("nc-base-url", body.login.slice(body.login.lastIndexOf("/") + 1));
    const answer = await poll(body.poll.token, base);
    expect(((await answer.json()) as { server: string }).server).toBe("https://sync.example.org/podcasts");
  });

  it("starts at most 30 flows a minute per address, an IPv6 address counted by its /56 (429, Retry-After)", async () => {
    await withinOneRateWindow();
    const tight = { LOGIN_FLOW_RATE_LIMITER: env.TIGHT_LOGIN_FLOW_RATE_LIMITER }; // 30 a minute
    // 2001:db8:<a>:<b>00::/56: 30 starts from 30 different /64s of it.
    const hextet = () => Math.floor(Math.random() * 0x10000).toString(16);
    const slash56 = `2001:db8:${hextet()}`;
    const high = Math.floor(Math.random() * 0x100) << 8;
    for (let i = 0; i < 30; i++) {
      const address = `${slash56}:${(high | i).toString(16)}::1`;
      expect((await start({ "CF-Connecting-IP": address }, tight)).status, address).toBe(200);
    }
    // Another /64 of the same /56, written another way.
    const refused = await start(
      { "CF-Connecting-IP": `${slash56}:${(high | 0xff).toString(16)}:0:0:0:ffff`.toUpperCase() },
      tight,
    );
    expect(refused.status).toBe(429);
    expect(refused.headers.get("Retry-After")).toBe("60");
    expect(await refused.json()).toEqual({ error: expect.any(String) });
    // Another /56, and an IPv4 address, start as before.
    expect(
      (await start({ "CF-Connecting-IP": `${slash56}:${((high + 0x100) & 0xffff).toString(16)}::1` }, tight)).status,
    ).toBe(200);
    expect((await start({ "CF-Connecting-IP": "203.0.113.99" }, tight)).status).toBe(200);
  });
});

describe("Login Flow v2: granting and polling", () => {
  it("answers 404 [] until access is granted, then the credentials exactly once, then 404 [] again", async () => {
    const flow = await startFlow({ "CF-Connecting-IP": "2001:db8::77" });
    const db = shardRouting(env);
    await expectNotGranted(await poll(flow.token));
    await expectNotGranted(await poll(flow.token));
    const pending = await pendingLoginFlow(db, flow.loginId, Date.now());
    expect(pending).toMatchObject({ appName: ANTENNAPOD, startedFrom: "2001:db8::77" });
    expect(pending?.expiresAt).toBe((pending?.startedAt as number) + LOGIN_FLOW_LIFETIME_MS);

    const result = await grant("nc-once", flow.loginId);
    expect(result).toMatchObject({ kind: "granted", appName: ANTENNAPOD });
    // Granted: the page's flow is used, and no second grant takes it.
    expect(await pendingLoginFlow(db, flow.loginId, Date.now())).toBeUndefined();
    expect(await grant("nc-once", flow.loginId)).toEqual({ kind: "gone" });

    const response = await poll(flow.token);
    expect(response.status).toBe(200);
    const credentials = (await response.json()) as Record<string, string>;
    expect(Object.keys(credentials)).toEqual(["server", "loginName", "appPassword"]);
    expect(credentials.server).toBe(ORIGIN);
    expect(credentials.loginName).toBe(await gpodderUsername("nc-once"));
    expect(credentials.appPassword.length).toBeGreaterThanOrEqual(22);
    expect(await flowRow(flow.token)).toBeNull();
    await expectNotGranted(await poll(flow.token));
    expect(await denyLoginFlow(db, flow.loginId, Date.now())).toBeUndefined();
  });

  it("keeps the password sealed in D1: the row alone never reveals it", async () => {
    const flow = await startFlow();
    await grant("nc-sealed", flow.loginId);
    const row = await flowRow(flow.token);
    expect(row?.login_name).toBe(await gpodderUsername("nc-sealed"));
    const { appPassword } = await granted(flow.token);
    for (const value of Object.values(row ?? {})) expect(String(value)).not.toContain(appPassword);
    const sealed = Uint8Array.from(atob(String(row?.sealed_password).replaceAll("-", "+").replaceAll("_", "/")), (ch) =>
      ch.charCodeAt(0),
    );
    expect(new TextDecoder("latin1").decode(sealed)).not.toContain(appPassword);
  });

  it("hands the credentials to one of several concurrent polls", async () => {
    const flow = await startFlow();
    await grant("nc-concurrent", flow.loginId);
    const answers = await Promise.all(Array.from({ length: 6 }, () => poll(flow.token)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 404, 404, 404, 404, 404]);
  });

  it("mints at most one password when a grant is submitted twice at once", async () => {
    const user = await as("nc-double-grant");
    const flow = await startFlow();
    const results = await Promise.all([grant(user.userId, flow.loginId), grant(user.userId, flow.loginId)]);
    expect(results.map((result) => result.kind).sort()).toEqual(["gone", "granted"]);
    const list = await json<{ data: unknown[] }>(user.get("/v1/app-passwords"));
    expect(list.data).toHaveLength(1);
    expect((await granted(flow.token)).loginName).toBe(await gpodderUsername(user.userId));
  });

  it("expires 20 minutes after the start: not shown, not granted, not polled; the cron deletes it", async () => {
    const db = shardRouting(env);
    const flow = await startFlow();
    const startedAt = (await flowRow(flow.token))?.started_at as number;
    // The functions the page calls take the time: live until the 20th minute, not at it.
    expect(await pendingLoginFlow(db, flow.loginId, startedAt + LOGIN_FLOW_LIFETIME_MS - 1)).toBeDefined();
    expect(await pendingLoginFlow(db, flow.loginId, startedAt + LOGIN_FLOW_LIFETIME_MS)).toBeUndefined();
    const user = await as("nc-expired");
    expect(await grant(user.userId, flow.loginId, startedAt + LOGIN_FLOW_LIFETIME_MS)).toEqual({ kind: "gone" });
    expect((await json<{ data: unknown[] }>(user.get("/v1/app-passwords"))).data).toEqual([]);

    // Granted 5 seconds before the end, polled 5 seconds after it: nothing.
    await age(flow.token, LOGIN_FLOW_LIFETIME_MS - 5000);
    expect((await grant(user.userId, flow.loginId)).kind).toBe("granted");
    await age(flow.token, 10_000);
    await expectNotGranted(await poll(flow.token));

    // The retention cron deletes expired flows, and only those.
    const live = await startFlow();
    await runCron();
    expect(await flowRow(flow.token)).toBeNull();
    expect(await flowRow(live.token)).not.toBeNull();
  });

  it(`at ${MAX_PENDING_LOGIN_FLOWS} pending flows a start is 503 with Retry-After and writes nothing`, async () => {
    const now = Date.now();
    const pending = async () =>
      (
        await flowD1()
          .prepare("SELECT count(*) AS n FROM login_flows WHERE expires_at > ?")
          .bind(now)
          .first<{ n: number }>()
      )?.n as number;
    // Fill up to the limit with flows as an attacker's starts would leave them (and one expired, which counts not).
    await seedFlows("full", MAX_PENDING_LOGIN_FLOWS - (await pending()), now + LOGIN_FLOW_LIFETIME_MS);
    await seedFlows("full-expired", 1, now - 1);
    expect(await pending()).toBe(MAX_PENDING_LOGIN_FLOWS);
    const refused = await start({ "CF-Connecting-IP": "198.51.100.77" });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("Retry-After")).toBe("60");
    expect(await refused.json()).toEqual({ error: expect.any(String) });
    expect(await pending()).toBe(MAX_PENDING_LOGIN_FLOWS);
    // One flow ends (collected, denied or expired): a start is taken again.
    await flowD1().prepare("DELETE FROM login_flows WHERE token_hash = 'full-0'").run();
    expect((await start({ "CF-Connecting-IP": "198.51.100.77" })).status).toBe(200);
    await flowD1().prepare("DELETE FROM login_flows WHERE token_hash LIKE 'full%'").run();
  });

  it("the cron deletes every expired flow in one run, however many: more than can expire between two runs", async () => {
    const now = Date.now();
    // The limit bounds the flows that expire between two runs (10 minutes apart) to MAX_PENDING_LOGIN_FLOWS; a
    // backlog of three times that (a run that failed twice) still goes in one run, and no live flow with it.
    const expired = 3 * MAX_PENDING_LOGIN_FLOWS;
    await seedFlows("backlog", expired, now - 60_000);
    await seedFlows("backlog-live", 100, now + 60_000);
    await runCron(now);
    const left = await flowD1()
      .prepare(
        "SELECT count(*) AS n, sum(expires_at <= ?) AS expired FROM login_flows WHERE token_hash LIKE 'backlog%'",
      )
      .bind(now)
      .first<{ n: number; expired: number }>();
    expect(left).toEqual({ n: 100, expired: 0 });
    await flowD1().prepare("DELETE FROM login_flows WHERE token_hash LIKE 'backlog%'").run();
  });

  it("a granted flow that expires uncollected takes its app password with it: it never worked, and it goes", async () => {
    const user = await as("nc-uncollected");
    const flow = await startFlow();
    expect((await grant(user.userId, flow.loginId)).kind).toBe("granted");
    // The password as the poll would hand it out (the test holds the poll token, as the app does).
    const row = await flowRow(flow.token);
    const sealed = await unseal(
      await derivedKey(flow.token, POLL_KEY),
      row?.sealed_password as string,
      row?.login_name as string,
    );
    const uncollected = { loginName: row?.login_name as string, appPassword: new TextDecoder().decode(sealed) };
    // Until the app collects it, it works nowhere (nobody holds it yet), though the person sees it listed.
    expect((await nextcloud(uncollected).get("subscriptions")).status).toBe(401);
    expect((await gpodder(uncollected).get(`/api/2/devices/${uncollected.loginName}.json`)).status).toBe(401);
    expect((await json<{ data: unknown[] }>(user.get("/v1/app-passwords"))).data).toHaveLength(1);

    // The flow expires uncollected (its times, and the password's, 21 minutes in the past).
    const db = await databaseFor(user.userId);
    await age(flow.token, LOGIN_FLOW_LIFETIME_MS + 60_000);
    await db
      .prepare("UPDATE app_passwords SET expires_at = expires_at - ? WHERE user_id = ?")
      .bind(LOGIN_FLOW_LIFETIME_MS + 60_000, user.userId)
      .run();
    await expectNotGranted(await poll(flow.token));
    expect((await nextcloud(uncollected).get("subscriptions")).status).toBe(401);
    // Listed nowhere, counted in no limit: 50 more can be minted.
    expect((await json<{ data: unknown[] }>(user.get("/v1/app-passwords"))).data).toEqual([]);
    for (let i = 0; i < 50; i++) await mint(user, `app ${i}`);
    // The cron deletes it; the 50 held ones stay.
    await runCron();
    const left = await db
      .prepare("SELECT count(*) AS n, count(expires_at) AS uncollected FROM app_passwords WHERE user_id = ?")
      .bind(user.userId)
      .first<{ n: number; uncollected: number }>();
    expect(left).toEqual({ n: 50, uncollected: 0 });
  });

  it("a collected grant's app password works from the poll on, and the cron keeps it", async () => {
    const user = await as("nc-collected");
    const flow = await startFlow();
    expect((await grant(user.userId, flow.loginId)).kind).toBe("granted");
    const credentials = await granted(flow.token);
    const db = await databaseFor(user.userId);
    // Collected: from then on it is held, and outlives the flow it came from.
    expect(
      await db.prepare("SELECT expires_at FROM app_passwords WHERE user_id = ?").bind(user.userId).first("expires_at"),
    ).toBeNull();
    await runCron(Date.now() + 2 * LOGIN_FLOW_LIFETIME_MS);
    expect((await nextcloud(credentials).get("subscriptions")).status).toBe(200);
    expect((await json<{ data: unknown[] }>(user.get("/v1/app-passwords"))).data).toHaveLength(1);
  });

  it("Deny ends the flow: it is neither shown, granted nor polled again", async () => {
    const db = shardRouting(env);
    const flow = await startFlow();
    expect(await denyLoginFlow(db, flow.loginId, Date.now())).toBe(ANTENNAPOD);
    expect(await flowRow(flow.token)).toBeNull();
    expect(await pendingLoginFlow(db, flow.loginId, Date.now())).toBeUndefined();
    expect(await grant("nc-denied", flow.loginId)).toEqual({ kind: "gone" });
    await expectNotGranted(await poll(flow.token));
    expect(await denyLoginFlow(db, flow.loginId, Date.now())).toBeUndefined();
  });

  it("answers an unknown, malformed or missing token 404 [] and counts no failure", async () => {
    const { bindings: recording, counted } = recordingFailureLimiter();
    const flow = await startFlow();
    const headers = { "CF-Connecting-IP": "192.0.2.200" };
    await expectNotGranted(await poll("A".repeat(43), recording, headers));
    await expectNotGranted(await poll("not a token", recording, headers));
    await expectNotGranted(await poll(flow.loginId, recording, headers)); // the browser's id is no poll token
    await expectNotGranted(
      await send(new Request(`${ORIGIN}${POLL}`, { method: "POST", headers, body: "something=else" }), recording),
    );
    await expectNotGranted(await send(new Request(`${ORIGIN}${POLL}`, { method: "POST", headers }), recording));
    expect(counted).toEqual([]);
    const db = shardRouting(env);
    expect(await pendingLoginFlow(db, flow.token, Date.now())).toBeUndefined(); // the token is no login id
    expect(await pendingLoginFlow(db, "x", Date.now())).toBeUndefined();
  });

  it("answers at most 60 polls a minute per token (429), other tokens unaffected", async () => {
    await withinOneRateWindow();
    const tight = { LOGIN_POLL_RATE_LIMITER: env.TIGHT_LOGIN_POLL_RATE_LIMITER }; // 60 a minute
    const busy = await startFlow();
    const calm = await startFlow();
    for (let i = 0; i < 60; i++) await expectNotGranted(await poll(busy.token, tight));
    const refused = await poll(busy.token, tight);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("Retry-After")).toBe("60");
    expect(await refused.json()).toEqual({ error: expect.any(String) });
    await expectNotGranted(await poll(calm.token, tight));
    await grant("nc-poll-limit", calm.loginId);
    expect((await poll(calm.token, tight)).status).toBe(200);
  });

  it("never hands one person's grant to another flow's poll", async () => {
    const first = await startFlow();
    const second = await startFlow();
    await grant("nc-owner-a", first.loginId);
    await expectNotGranted(await poll(second.token));
    await grant("nc-owner-b", second.loginId);
    const b = await granted(second.token);
    const a = await granted(first.token);
    expect(a.loginName).toBe(await gpodderUsername("nc-owner-a"));
    expect(b.loginName).toBe(await gpodderUsername("nc-owner-b"));
    expect(a.appPassword).not.toBe(b.appPassword);
    // Each password signs in only its own user.
    expect((await nextcloud(a).get("subscriptions")).status).toBe(200);
    expect((await nextcloud({ loginName: b.loginName, appPassword: a.appPassword }).get("subscriptions")).status).toBe(
      401,
    );
  });

  it("mints a normal app password: its label the app's name, listed, one of the 50, revocable", async () => {
    const user = await as("nc-normal-password");
    const credentials = await signedInApp(user.userId);
    const list = await json<{ data: { id: string; attributes: { label: string; username: string } }[] }>(
      user.get("/v1/app-passwords"),
    );
    expect(list.data.map((item) => item.attributes)).toMatchObject([
      { label: ANTENNAPOD, username: credentials.loginName },
    ]);
    // It signs in to the Nextcloud paths and the gpodder.net paths alike.
    expect((await nextcloud(credentials).get("episode_action?since=0")).status).toBe(200);
    expect((await gpodder(credentials).get(`/api/2/devices/${credentials.loginName}.json`)).status).toBe(200);
    expect((await user.delete(`/v1/app-passwords/${list.data[0].id}`)).status).toBe(204);
    expect((await nextcloud(credentials).get("episode_action?since=0")).status).toBe(401);
    expect((await gpodder(credentials).get(`/api/2/devices/${credentials.loginName}.json`)).status).toBe(401);

    // The 50th is the last: a grant past it mints nothing, and the flow still waits.
    const full = await as("nc-full");
    for (let i = 0; i < 50; i++) await mint(full, `device ${i}`);
    const flow = await startFlow();
    expect(await grant(full.userId, flow.loginId)).toEqual({ kind: "limit" });
    expect((await json<{ data: unknown[] }>(full.get("/v1/app-passwords"))).data).toHaveLength(50);
    await expectNotGranted(await poll(flow.token));
    expect(await pendingLoginFlow(shardRouting(env), flow.loginId, Date.now())).toBeDefined();
  });

  it("grants nothing while the user's bucket is being moved (the password could be left behind)", async () => {
    const user = await as("nc-frozen");
    const flow = await startFlow();
    const frozen = shardRouting({ ...env, SHARD_FROZEN: String(await bucketOf(user.userId)) });
    expect(await grantLoginFlow(frozen, user.userId, flow.loginId, Date.now())).toEqual({ kind: "frozen" });
    expect((await json<{ data: unknown[] }>(user.get("/v1/app-passwords"))).data).toEqual([]);
    expect(await pendingLoginFlow(shardRouting(env), flow.loginId, Date.now())).toBeDefined();
    expect((await grant(user.userId, flow.loginId)).kind).toBe("granted");
  });

  it("reads and writes login_flows, and checks app_passwords at the poll, through their indexes only", async () => {
    const statements = [
      ...Object.entries(loginFlowStatements).map(([name, statement]) => ({ name, statement, db: flowD1() })),
      // The poll that collects a grant asks the user's database whether the password still exists.
      ...Object.entries(appPasswordCheckStatements).map(([name, statement]) => ({
        name,
        statement,
        db: shardOfBucket(shardRouting(env), 0).database,
      })),
    ];
    for (const { name, statement, db } of statements) {
      const parameters = new Set(statement.sql.match(/\?\d+/g)).size;
      const { results } = await db
        .prepare(`EXPLAIN QUERY PLAN ${statement.sql}`)
        .bind(...Array<null>(parameters).fill(null))
        .all<{ detail: string }>();
      const details = results.map((row) => row.detail);
      expect(
        details.filter((detail) => /^SCAN (login_flows|app_passwords)\b/.test(detail) || /TEMP B-TREE/.test(detail)),
        `${name}: ${details.join("; ")}`,
      ).toEqual([]);
    }
  });
});

describe("the gpoddersync API (/index.php/apps/gpoddersync)", () => {
  it("takes HTTP Basic on every request and answers others 401 with the challenge, errors as {error}", async () => {
    const user = await as("nc-auth");
    const credentials = await signedInApp(user.userId);
    const client = nextcloud(credentials);
    for (let i = 0; i < 3; i++) expect((await client.get("subscriptions?since=0")).status).toBe(200);
    const anonymous = await send(new Request(`${ORIGIN}${SYNC}/subscriptions`));
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("WWW-Authenticate")).toBe('Basic realm="gpodder"');
    expect(await anonymous.json()).toEqual({ error: expect.any(String) });
    expect((await nextcloud({ ...credentials, appPassword: "wrong" }).get("subscriptions")).status).toBe(401);
    const bearer = await send(
      new Request(`${ORIGIN}${SYNC}/subscriptions`, { headers: { Authorization: `Bearer ${user.token}` } }),
    );
    expect(bearer.status).toBe(401);
    // Not an app password's: /v1 refuses it.
    const v1 = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, {
        headers: { Authorization: basic(credentials.loginName, credentials.appPassword) },
      }),
    );
    expect(v1.status).toBe(401);

    const unknown = await client.get("nothing-here");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: expect.any(String) });
    const wrongMethod = await client.get("episode_action/create");
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("Allow")).toBe("POST");
    expect(await wrongMethod.json()).toEqual({ error: expect.any(String) });
  });

  it("serves the four endpoints with exactly 200 and the Nextcloud app's answers; refuses bad input", async () => {
    const user = await as("nc-four");
    const client = nextcloud(await signedInApp(user.userId));
    const a = "https://four.example.com/a.xml";
    const b = "https://four.example.com/b.xml";
    const created = await json<Record<string, unknown>>(client.post("subscription_change/create", { add: [a, b] }));
    expect(Object.keys(created)).toEqual(["timestamp"]);
    expect(Number.isSafeInteger(created.timestamp)).toBe(true);
    const added = await json<Changes>(client.get("subscriptions?since=0"));
    expect(added).toMatchObject({ add: [a, b], remove: [] });
    await json(client.post("subscription_change/create", { remove: [a] }));
    const removed = await json<Changes>(client.get("subscriptions"));
    expect(removed).toMatchObject({ add: [b], remove: [a] });
    expect(Object.keys(removed)).toEqual(["add", "remove", "timestamp"]);

    const uploaded = await json<Record<string, unknown>>(
      client.post("episode_action/create", [
        {
          podcast: b,
          episode: "https://four.example.com/b1.mp3",
          guid: "b1",
          action: "play",
          timestamp: "2026-03-04T05:06:07",
          started: 0,
          position: 30,
          total: 60,
        },
        { podcast: b, episode: "not a url", action: "play", position: 1 },
      ]),
    );
    expect(Object.keys(uploaded)).toEqual(["timestamp"]);
    const actions = await json<Actions>(client.get("episode_action?since=0"));
    expect(Object.keys(actions)).toEqual(["actions", "timestamp"]);
    expect(actions.actions).toEqual([
      {
        podcast: b,
        episode: "https://four.example.com/b1.mp3",
        guid: "b1",
        action: "play",
        timestamp: "2026-03-04T05:06:07",
        started: 0,
        position: 30,
        total: 60,
      },
    ]);

    const refusals: [string, Response][] = [
      ["since", await client.get("subscriptions?since=-5")],
      ["since", await client.get("episode_action?since=yesterday")],
      ["array", await client.post("subscription_change/create", [a])],
      ["both", await client.post("subscription_change/create", { add: [a], remove: [a] })],
      ["object", await client.post("episode_action/create", { actions: [] })],
      ["json", await client.post("episode_action/create", "{not json")],
    ];
    for (const [what, response] of refusals) {
      expect(response.status, what).toBe(400);
      expect(await response.json()).toEqual({ error: expect.any(String) });
    }
    // Subscription uploads take up to 10 000 URLs, as §14's (gPodder cannot split its queue); actions up to 1000.
    const many = Array.from({ length: 10_001 }, (_, i) => `https://four.example.com/${i}`);
    expect((await client.post("subscription_change/create", { add: many })).status).toBe(413);
    const actionsMany = many.slice(0, 1001).map((episode) => ({ podcast: b, episode, action: "new" }));
    expect((await client.post("episode_action/create", actionsMany)).status).toBe(413);
    // Nothing refused was written.
    expect(await json<Changes>(client.get("subscriptions?since=0"))).toMatchObject({ add: [b], remove: [a] });
  });

  it("reads what reached the server at or after since minus 600 seconds (the gpodder.net paths: since)", async () => {
    const userId = "nc-margin";
    const credentials = await signedInApp(userId);
    const client = nextcloud(credentials);
    const feed = "https://margin.example.com/feed.xml";
    await json(client.post("subscription_change/create", { add: [feed] }));
    await json(
      client.post("episode_action/create", [
        { podcast: feed, episode: "https://margin.example.com/1.mp3", action: "play", position: 5, total: 50 },
      ]),
    );
    const db = await databaseFor(userId);
    const subscribed = await db
      .prepare("SELECT received_at FROM subscriptions WHERE user_id = ?")
      .bind(userId)
      .first<number>("received_at");
    const played = await db
      .prepare("SELECT received_at FROM episodes WHERE user_id = ?")
      .bind(userId)
      .first<number>("received_at");
    const adds = async (since: number) => (await json<Changes>(client.get(`subscriptions?since=${since}`))).add;
    const plays = async (since: number) =>
      (await json<Actions>(client.get(`episode_action?since=${since}`))).actions.length;
    expect(await adds((subscribed as number) + 600)).toEqual([feed]);
    expect(await adds((subscribed as number) + 601)).toEqual([]);
    expect(await plays((played as number) + 600)).toBe(1);
    expect(await plays((played as number) + 601)).toBe(0);
    // The gpodder.net paths keep their own since.
    const other = gpodder(credentials);
    const u = credentials.loginName;
    expect((await json<Changes>(other.get(`/api/2/subscriptions/${u}/d.json?since=${subscribed}`))).add).toEqual([
      feed,
    ]);
    expect(
      (await json<Changes>(other.get(`/api/2/subscriptions/${u}/d.json?since=${(subscribed as number) + 1}`))).add,
    ).toEqual([]);
    expect(
      (await json<Actions>(other.get(`/api/2/episodes/${u}.json?since=${(played as number) + 1}`))).actions,
    ).toEqual([]);
  });

  it("misses nothing for a client whose clock runs 5 minutes ahead and takes it as its next since", async () => {
    const userId = "nc-fast-clock";
    const phone = nextcloud(await signedInApp(userId));
    const laptop = gpodder(await mint(await as(userId), "laptop"));
    const username = await gpodderUsername(userId);
    const feed = "https://fast.example.com/feed.xml";
    const phoneClock = () => Math.floor(Date.now() / 1000) + 300;

    // The phone uploads, then keeps its own clock as since (AntennaPod's NextcloudSyncService does).
    await json(phone.post("subscription_change/create", { add: [feed] }));
    await json(
      phone.post("episode_action/create", [
        { podcast: feed, episode: "https://fast.example.com/1.mp3", action: "play", position: 10, total: 100 },
      ]),
    );
    const since = phoneClock();
    // Another device changes things right after.
    const other = "https://fast.example.com/other.xml";
    await json(laptop.post(`/api/2/subscriptions/${username}/laptop.json`, { add: [other] }));
    await json(
      laptop.post(`/api/2/episodes/${username}.json`, [
        { podcast: feed, episode: "https://fast.example.com/2.mp3", action: "play", position: 20, total: 100 },
      ]),
    );
    const changes = await json<Changes>(phone.get(`subscriptions?since=${since}`));
    expect(changes.add).toContain(other);
    const actions = await json<Actions>(phone.get(`episode_action?since=${since}`));
    expect(actions.actions.map((action) => action.episode)).toContain("https://fast.example.com/2.mp3");
  });

  it("follows AntennaPod's sequence: flow, subscriptions, 70 actions in batches of 30, read back everywhere", async () => {
    const user = await as("nc-antennapod");
    const started = await start({ "CF-Connecting-IP": "203.0.113.40" });
    const flow = (await started.json()) as { poll: { token: string; endpoint: string }; login: string };
    await expectNotGranted(await poll(flow.poll.token));
    await grant(user.userId, flow.login.slice(flow.login.lastIndexOf("/") + 1));
    const credentials = await granted(flow.poll.token);
    expect(credentials.server).toBe(ORIGIN);
    const phone = nextcloud(credentials);

    // First sync: since 0 both ways, then the local subscriptions up.
    const first = await json<Changes>(phone.get("subscriptions?since=0"));
    expect(first).toMatchObject({ add: [], remove: [] });
    const feeds = ["https://ap.example.com/a.xml", "https://ap.example.com/b.xml", "https://ap.example.com/c.xml"];
    await json(phone.post("subscription_change/create", { add: feeds, remove: [] }));
    expect((await json<Actions>(phone.get("episode_action?since=0"))).actions).toEqual([]);
    const actions = Array.from({ length: 70 }, (_, i) => {
      const played = i % 7 === 0;
      return {
        podcast: feeds[i % 3],
        episode: `https://ap.example.com/${i}.mp3`,
        guid: `ap-${i}`,
        action: "play",
        timestamp: `2026-05-06T07:${String(Math.floor(i / 60)).padStart(2, "0")}:${String(i % 60).padStart(2, "0")}`,
        started: played ? 600 : 0,
        position: played ? 600 : 10 + i,
        total: 600,
      };
    });
    const batches = [actions.slice(0, 30), actions.slice(30, 60), actions.slice(60)];
    for (const batch of batches) await json(phone.post("episode_action/create", batch));
    const sinceAfterUpload = Math.floor(Date.now() / 1000);

    // Read back through all three APIs.
    const sorted = (list: Record<string, unknown>[]) =>
      [...list].sort((x, y) => String(x.guid).localeCompare(String(y.guid)));
    const back = await json<Actions>(phone.get("episode_action?since=0"));
    expect(sorted(back.actions)).toEqual(sorted(actions));
    // The next sync (since = the phone's clock after the upload) sends its own upload again: harmless.
    expect((await json<Actions>(phone.get(`episode_action?since=${sinceAfterUpload}`))).actions).toHaveLength(70);
    const u = credentials.loginName;
    const viaGpodder = await json<Actions>(gpodder(credentials).get(`/api/2/episodes/${u}.json?since=0`));
    expect(sorted(viaGpodder.actions)).toEqual(sorted(actions));
    const viaSimpleApi = await json<string[]>(gpodder(credentials).get(`/subscriptions/${u}.json`));
    expect(viaSimpleApi).toEqual(feeds);
    const states = await json<{ data: { attributes: { position: number; played: boolean; itemGuid: string } }[] }>(
      user.get("/v1/episodes?page[size]=100"),
    );
    expect(states.data).toHaveLength(70);
    const byGuid = new Map(states.data.map((state) => [state.attributes.itemGuid, state.attributes]));
    for (const action of actions) {
      expect(byGuid.get(action.guid)).toMatchObject({ position: action.position, played: action.started === 600 });
    }
  });

  it("reads what any of the three APIs wrote the same way", async () => {
    const user = await as("nc-three-apis");
    const credentials = await signedInApp(user.userId);
    const phone = nextcloud(credentials);
    const laptop = gpodder(credentials);
    const u = credentials.loginName;
    const viaJsonApi = { guid: crypto.randomUUID(), feedUrl: "https://three.example.com/jsonapi.xml" };
    const viaGpodder = "https://three.example.com/gpodder.xml";
    const viaNextcloud = "https://three.example.com/nextcloud.xml";

    expect(
      (await user.post("/v1/subscriptions", subscriptionDocument(viaJsonApi.guid, viaJsonApi.feedUrl))).status,
    ).toBe(201);
    const jsonApiEpisode = crypto.randomUUID();
    expect(
      (
        await user.post("/v1/episodes", {
          data: {
            type: "episode",
            id: jsonApiEpisode,
            attributes: {
              mediaUrl: "https://three.example.com/j.mp3",
              position: 11,
              duration: 100,
              changedAt: "2026-06-01T00:00:01Z",
            },
            relationships: { subscription: { data: { type: "subscription", id: viaJsonApi.guid } } },
          },
        })
      ).status,
    ).toBe(201);
    await json(laptop.post(`/api/2/subscriptions/${u}/laptop.json`, { add: [viaGpodder] }));
    await json(
      laptop.post(`/api/2/episodes/${u}.json`, [
        {
          podcast: viaGpodder,
          episode: "https://three.example.com/g.mp3",
          action: "play",
          position: 22,
          total: 100,
          timestamp: "2026-06-01T00:00:02",
        },
      ]),
    );
    await json(phone.post("subscription_change/create", { add: [viaNextcloud] }));
    await json(
      phone.post("episode_action/create", [
        {
          podcast: viaNextcloud,
          episode: "https://three.example.com/n.mp3",
          action: "play",
          position: 33,
          total: 100,
          timestamp: "2026-06-01T00:00:03",
        },
      ]),
    );

    const expectedActions = [
      { podcast: viaJsonApi.feedUrl, episode: "https://three.example.com/j.mp3", position: 11 },
      { podcast: viaGpodder, episode: "https://three.example.com/g.mp3", position: 22 },
      { podcast: viaNextcloud, episode: "https://three.example.com/n.mp3", position: 33 },
    ].map((action, i) => ({
      ...action,
      action: "play",
      started: 0,
      total: 100,
      timestamp: `2026-06-01T00:00:0${i + 1}`,
    }));
    const feeds = [viaJsonApi.feedUrl, viaGpodder, viaNextcloud];
    expect((await json<Changes>(phone.get("subscriptions?since=0"))).add).toEqual(feeds);
    expect((await json<Changes>(laptop.get(`/api/2/subscriptions/${u}/laptop.json?since=0`))).add).toEqual(feeds);
    expect((await json<Actions>(phone.get("episode_action?since=0"))).actions).toEqual(expectedActions);
    expect((await json<Actions>(laptop.get(`/api/2/episodes/${u}.json?since=0`))).actions).toEqual(expectedActions);
    const subscriptions = await json<{ data: { attributes: { feedUrl: string } }[] }>(user.get("/v1/subscriptions"));
    expect(subscriptions.data.map((item) => item.attributes.feedUrl).sort()).toEqual([...feeds].sort());
    const nextcloudFeedGuid = (
      await json<{ data: { id: string; attributes: { feedUrl: string } }[] }>(user.get("/v1/subscriptions"))
    ).data.find((item) => item.attributes.feedUrl === viaNextcloud)?.id as string;
    const episode = await json<{ data: { attributes: { position: number } } }>(
      user.get(`/v1/episodes/${await uuidV5(nextcloudFeedGuid, "https://three.example.com/n.mp3")}`),
    );
    expect(episode.data.attributes.position).toBe(33);

    // An unsubscription through any of them reads as one through the others.
    await json(phone.post("subscription_change/create", { remove: [viaGpodder] }));
    expect((await json<Changes>(laptop.get(`/api/2/subscriptions/${u}/laptop.json?since=0`))).remove).toEqual([
      viaGpodder,
    ]);
    const deleted = await user.delete(`/v1/subscriptions/${viaJsonApi.guid}`);
    expect(deleted.status).toBe(204);
    expect((await json<Changes>(phone.get("subscriptions?since=0"))).remove.sort()).toEqual(
      [viaJsonApi.feedUrl, viaGpodder].sort(),
    );
  });
});
