import { env } from "cloudflare:test";
import { sign } from "hono/jwt";
import { afterEach, describe, expect, it, vi } from "vitest";
import { TOMBSTONE_RETENTION_MS } from "../src/db/retention";
import { bucketOf } from "../src/shards";
import {
  as,
  failingD1,
  INJECTED_FAILURE,
  JSONAPI,
  keyPair,
  newFeed,
  ORIGIN,
  runCron,
  seedSubscriptions,
  send,
  shardDatabases,
  shardFor,
  subscriptionDocument,
  tokenFor,
  withinOneRateWindow,
  wrapDatabaseOf,
} from "./helpers";

/**
 * The log events docs/README-ops.md ("What to watch") tells operators to watch: each is logged once, as one JSON
 * line with the fields named there, and nothing else is logged for the same request besides its request line.
 */

type Line = Record<string, unknown> & { level: string; event: string };

/** Every JSON line the worker logs from now on (console.log, warn and error), kept out of the test report. */
function captureLogs(): Line[] {
  const lines: Line[] = [];
  for (const method of ["log", "warn", "error"] as const) {
    vi.spyOn(console, method).mockImplementation((text: unknown) => {
      if (typeof text === "string" && text.startsWith("{")) lines.push(JSON.parse(text));
    });
  }
  return lines;
}

const REQUEST_FIELDS = ["durationMs", "event", "level", "method", "requestId", "route", "status", "user"];

/** The lines of one request: its request line last, and the events logged for it. */
function linesOf(lines: Line[], response: Response): Line[] {
  const requestId = response.headers.get("X-Request-Id");
  expect(requestId).toBeTruthy();
  return lines.filter((line) => line.requestId === requestId);
}

function expectRequestLine(line: Line | undefined, status: number) {
  expect(Object.keys(line ?? {}).sort()).toEqual(REQUEST_FIELDS);
  expect(line).toMatchObject({ level: "info", event: "request", status });
}

afterEach(() => vi.restoreAllMocks());

describe("log events", () => {
  it("one request line per request, with its status, route and the user's hash", async () => {
    const user = await as("log-request");
    const lines = captureLogs();
    const response = await user.get("/v1/subscriptions/0e6f1c2a-1111-4222-8333-944445555666");
    expect(response.status).toBe(404);
    const [line, ...others] = linesOf(lines, response);
    expect(others).toEqual([]);
    expectRequestLine(line, 404);
    expect(line).toMatchObject({ method: "GET", route: "/v1/subscriptions/:guid" });
    expect(line.user).toMatch(/^[0-9a-f]{16}$/);
  });

  it("429: the request line alone, status 429", async () => {
    await withinOneRateWindow();
    const tight = { USER_RATE_LIMITER: env.TIGHT_USER_RATE_LIMITER }; // 5 a minute
    const user = await as(`log-429-${crypto.randomUUID()}`, tight);
    let response = await user.get("/v1/subscriptions");
    for (let i = 0; i < 10 && response.status !== 429; i++) response = await user.get("/v1/subscriptions");
    const lines = captureLogs();
    response = await user.get("/v1/subscriptions");
    expect(response.status).toBe(429);
    const [line, ...others] = linesOf(lines, response);
    expect(others).toEqual([]);
    expectRequestLine(line, 429);
  });

  it("a D1 failure (503): database_error once, with the request id and D1's error", async () => {
    const user = await as("log-d1");
    const broken = await as("log-d1", await wrapDatabaseOf("log-d1", (real) => failingD1(real, 1)));
    const feed = newFeed();
    const lines = captureLogs();
    const response = await broken.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    expect(response.status).toBe(503);
    const [event, request, ...others] = linesOf(lines, response);
    expect(others).toEqual([]);
    expect(Object.keys(event).sort()).toEqual(["error", "event", "level", "requestId"]);
    expect(event).toMatchObject({ level: "error", event: "database_error" });
    expect(event.error).toContain(INJECTED_FAILURE);
    expectRequestLine(request, 503);
    expect((await user.get(`/v1/subscriptions/${feed.guid}`)).status).toBe(404);
  });

  it("a bug (500): unhandled_error once, with the request id, the error and its stack", async () => {
    const user = await as("log-bug");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const lines = captureLogs();
    // Formatting the stored row's time fails, as a bug in the worker would (test/errors.test.ts does the same).
    vi.spyOn(String.prototype, "padStart").mockImplementationOnce(() => {
      throw new RangeError("Invalid time value");
    });
    const response = await user.get("/v1/subscriptions");
    expect(response.status).toBe(500);
    const [event, request, ...others] = linesOf(lines, response);
    expect(others).toEqual([]);
    expect(Object.keys(event).sort()).toEqual(["error", "event", "level", "requestId", "stack"]);
    expect(event).toMatchObject({ level: "error", event: "unhandled_error", error: "RangeError: Invalid time value" });
    expectRequestLine(request, 500);
  });

  it("the identity provider's keys out of reach (503): jwks_unavailable once", async () => {
    const url = `https://log-${crypto.randomUUID()}.idp.example/jwks.json`;
    const real = globalThis.fetch;
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) =>
      String(input instanceof Request ? input.url : input) === url
        ? new Response("maintenance", { status: 500 })
        : real(input, init),
    );
    const { privateJwk } = await keyPair("ES256", "k1");
    const now = Math.floor(Date.now() / 1000);
    const token = await sign({ sub: "log-jwks", iat: now, exp: now + 600 }, privateJwk);
    const lines = captureLogs();
    const response = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, { headers: { Authorization: `Bearer ${token}`, Accept: JSONAPI } }),
      { AUTH_JWT_SECRET: "", AUTH_JWKS_URL: url, AUTH_JWKS_TIMEOUT_MS: "200" },
    );
    expect(response.status).toBe(503);
    const [event, request, ...others] = linesOf(lines, response);
    expect(others).toEqual([]);
    expect(Object.keys(event).sort()).toEqual(["error", "event", "level", "requestId"]);
    expect(event).toMatchObject({ level: "error", event: "jwks_unavailable" });
    expectRequestLine(request, 503);
  });

  it("invalid gpodder episode actions: episode_actions_skipped once, with how many", async () => {
    const user = await as("log-skipped");
    const minted = await user.post("/v1/app-passwords", { data: { type: "app-password", attributes: { label: "x" } } });
    const { username, password } = ((await minted.json()) as { data: { attributes: Record<string, string> } }).data
      .attributes;
    const lines = captureLogs();
    const response = await send(
      new Request(`${ORIGIN}/api/2/episodes/${username}.json`, {
        method: "POST",
        headers: { Authorization: `Basic ${btoa(`${username}:${password}`)}` },
        body: JSON.stringify([
          { podcast: "https://log.example/feed", episode: "https://log.example/1.mp3", action: "new" },
          { podcast: "https://log.example/feed", action: "play" },
          { podcast: "https://log.example/feed", episode: "https://log.example/2.mp3", action: "dance" },
        ]),
      }),
    );
    expect(response.status).toBe(200);
    const [event, request, ...others] = linesOf(lines, response);
    expect(others).toEqual([]);
    expect(Object.keys(event).sort()).toEqual(["count", "event", "level", "requestId"]);
    expect(event).toMatchObject({ level: "warn", event: "episode_actions_skipped", count: 2 });
    expectRequestLine(request, 200);
  });

  it("a wrong shard map (500): configuration_error once", async () => {
    const lines = captureLogs();
    const token = await tokenFor("log-config");
    const response = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, { headers: { Authorization: `Bearer ${token}` } }),
      {
        SHARD_MAP: "DB:0-1022",
      },
    );
    expect(response.status).toBe(500);
    const [event, request, ...others] = linesOf(lines, response);
    expect(others).toEqual([]);
    expect(event).toMatchObject({ level: "error", event: "configuration_error" });
    expect(event.error).toMatch(/bucket 1023 is not mapped/);
    expectRequestLine(request, 500);
  });

  it("auth failures: auth_failed once per failed credential, with the scheme and the reason, never the credential", async () => {
    const ip = `198.51.100.${Math.floor(Math.random() * 250)}`;
    await withinOneRateWindow();
    const tight = { AUTH_FAILURE_RATE_LIMITER: env.TIGHT_AUTH_FAILURE_RATE_LIMITER }; // 3 failures a minute
    const attempts: [string, Record<string, string>, string][] = [
      ["/v1/subscriptions", { Authorization: "Bearer secret-token-1" }, "bearer"],
      [
        "/api/2/devices/abcdefghijklmnopqrstuvwxyz.json",
        { Authorization: `Basic ${btoa("abcdefghijklmnopqrstuvwxyz:hunter2-secret")}` },
        "basic",
      ],
      [
        "/api/2/devices/abcdefghijklmnopqrstuvwxyz.json",
        { Cookie: "sessionid=abcdefghijklmnopqrstuvwxyz.forged-xyz" },
        "session",
      ],
      ["/v1/subscriptions", { Authorization: "Bearer secret-token-2" }, "bearer"],
    ];
    for (const [index, [path, headers, scheme]] of attempts.entries()) {
      const lines = captureLogs();
      const response = await send(
        new Request(`${ORIGIN}${path}`, { headers: { ...headers, "CF-Connecting-IP": ip } }),
        tight,
      );
      expect(response.status).toBe(401);
      const [event, request, ...others] = linesOf(lines, response);
      expect(others).toEqual([]);
      expect(Object.keys(event).sort()).toEqual(["event", "level", "overLimit", "reason", "requestId", "scheme"]);
      // The fourth failure of the address within the minute is over the limit of 3.
      expect(event).toMatchObject({ level: "warn", event: "auth_failed", scheme, overLimit: index === 3 });
      expect(typeof event.reason).toBe("string");
      expect(JSON.stringify(event)).not.toMatch(/secret-token|hunter2|forged-xyz|198\.51\.100/);
      expectRequestLine(request, 401);
      vi.restoreAllMocks();
    }
    // No credentials at all is no guess: not counted, not logged as a failure.
    const lines = captureLogs();
    const anonymous = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, { headers: { "CF-Connecting-IP": ip } }),
      tight,
    );
    expect(anonymous.status).toBe(401);
    expect(linesOf(lines, anonymous).map((line) => line.event)).toEqual(["request"]);
  });

  it("a write while the user's bucket is frozen for a move (503): shard_frozen once, with the database and bucket", async () => {
    const user = await as("log-frozen");
    const bucket = await bucketOf("log-frozen");
    const frozen = await as("log-frozen", { SHARD_FROZEN: String(bucket) });
    const lines = captureLogs();
    const feed = newFeed();
    const response = await frozen.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    expect(response.status).toBe(503);
    const [event, request, ...others] = linesOf(lines, response);
    expect(others).toEqual([]);
    expect(Object.keys(event).sort()).toEqual(["bucket", "database", "event", "level", "requestId"]);
    expect(event).toMatchObject({
      level: "warn",
      event: "shard_frozen",
      bucket,
      database: (await shardFor("log-frozen")).name,
    });
    expectRequestLine(request, 503);
    // Reads go on, and log no freeze.
    const read = await frozen.get("/v1/subscriptions");
    expect(read.status).toBe(200);
    expect(linesOf(lines, read).map((line) => line.event)).toEqual(["request"]);
    expect((await user.get(`/v1/subscriptions/${feed.guid}`)).status).toBe(404);
  });

  it("a cron run: tombstone_retention per database, then one cron_run summary with the purges", async () => {
    await seedSubscriptions("log-cron", 2, { unsubscribed: true });
    const scheduledTime = Date.now() + TOMBSTONE_RETENTION_MS + 60_000;
    const lines = captureLogs();
    await runCron(scheduledTime);
    const names = shardDatabases().map((shard) => shard.name);
    const perDatabase = lines.filter((line) => line.event === "tombstone_retention");
    expect(perDatabase.map((line) => line.database).sort()).toEqual([...names].sort());
    const runs = lines.filter((line) => line.event === "cron_run");
    expect(runs).toHaveLength(1);
    expect(Object.keys(runs[0]).sort()).toEqual(
      [
        "cron",
        "databases",
        "durationMs",
        "event",
        "failedDatabases",
        "level",
        "loginFlows",
        "purgedUsers",
        "scheduledTime",
        "urlKeys",
        "sessions",
        "accountSessions",
        "uncollectedAppPasswords",
      ].sort(),
    );
    expect(runs[0]).toMatchObject({
      level: "info",
      cron: "*/10 * * * *",
      scheduledTime: new Date(scheduledTime).toISOString(),
      databases: names.length,
      failedDatabases: [],
    });
    const owner = (await shardFor("log-cron")).name;
    const purged = perDatabase.find((line) => line.database === owner);
    expect(purged?.users).toBeGreaterThanOrEqual(1);
    expect(runs[0].purgedUsers).toBe(perDatabase.reduce((sum, line) => sum + Number(line.users), 0));
    expect(runs[0].urlKeys).toBe(perDatabase.reduce((sum, line) => sum + Number(line.urlKeys), 0));
    expect(runs[0].loginFlows).toBe(perDatabase.reduce((sum, line) => sum + Number(line.loginFlows), 0));
    expect(runs[0].sessions).toBe(perDatabase.reduce((sum, line) => sum + Number(line.sessions), 0));
    expect(runs[0].accountSessions).toBe(perDatabase.reduce((sum, line) => sum + Number(line.accountSessions), 0));
    expect(runs[0].uncollectedAppPasswords).toBe(
      perDatabase.reduce((sum, line) => sum + Number(line.uncollectedAppPasswords), 0),
    );
    // Beside retention, the run's feed round logs one line of its own (here FEED_FETCH=off: it fetched nothing).
    const rounds = lines.filter((line) => line.event === "feed_round");
    expect(rounds).toHaveLength(1);
    expect(Object.keys(rounds[0]).sort()).toEqual(
      [
        "deferred",
        "durationMs",
        "event",
        "failed",
        "fetched",
        "forgotten",
        "gone",
        "level",
        "moved",
        "notModified",
        "statesRenamed",
        "subrequests",
        "subscriptionsMoved",
      ].sort(),
    );
    expect(rounds[0]).toMatchObject({ level: "info", fetched: 0, moved: 0, subscriptionsMoved: 0, subrequests: 0 });
    expect(lines.filter((line) => !["tombstone_retention", "cron_run", "feed_round"].includes(line.event))).toEqual([]);
  });

  it("a cron run where a database fails: tombstone_retention_failed for it, cron_run at level error naming it", async () => {
    const [first] = shardDatabases();
    const lines = captureLogs();
    await expect(runCron(Date.now(), { [first.name]: failingD1(first.database, 1) })).rejects.toThrow();
    expect(lines.filter((line) => line.event === "tombstone_retention_failed").map((line) => line.database)).toEqual([
      first.name,
    ]);
    const runs = lines.filter((line) => line.event === "cron_run");
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ level: "error", failedDatabases: [first.name] });
  });
});
