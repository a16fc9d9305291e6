import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { as, JSONAPI, newFeed, ORIGIN, send, subscriptionDocument, tokenFor, withinOneRateWindow } from "./helpers";

const tight = {
  USER_RATE_LIMITER: env.TIGHT_USER_RATE_LIMITER,
  AUTH_FAILURE_RATE_LIMITER: env.TIGHT_AUTH_FAILURE_RATE_LIMITER,
};

// Every test here spends a tight limit: none may straddle the end of a limiter window.
beforeEach(() => withinOneRateWindow());

describe("rate limits", () => {
  it("answers 429 with Retry-After once a user is over the limit, without affecting other users", async () => {
    const greedy = await as("limit-greedy", tight);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await greedy.get("/v1/subscriptions")).status);
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(statuses.slice(5)).toEqual([429, 429]);
    const limited = await greedy.get("/v1/subscriptions");
    expect(limited.headers.get("Retry-After")).toMatch(/^\d+$/);
    expect(limited.headers.get("Content-Type")).toBe(JSONAPI);
    const body = (await limited.json()) as { errors: { status: string }[] };
    expect(body.errors[0].status).toBe("429");
    expect((await (await as("limit-polite", tight)).get("/v1/subscriptions")).status).toBe(200);
  });

  it("answers every failed authentication 401 with its challenge, never 429, and serves valid tokens", async () => {
    const attempt = (ip: string, token: string) =>
      send(
        new Request(`${ORIGIN}/v1/subscriptions`, {
          headers: { Authorization: `Bearer ${token}`, "CF-Connecting-IP": ip },
        }),
        tight,
      );
    // The tight limiter allows 3 failures a minute: the address is far over it by the end.
    for (let i = 0; i < 6; i++) {
      const response = await attempt("203.0.113.7", `guess-${i}`);
      expect(response.status).toBe(401);
      expect(response.headers.get("WWW-Authenticate")).toBe('Bearer realm="subscriptions", error="invalid_token"');
      expect(response.headers.get("Retry-After")).toBeNull();
    }
    // An expired token still learns that it must be refreshed.
    const expired = await attempt(
      "203.0.113.7",
      await tokenFor("limit-ip-expired", { exp: Math.floor(Date.now() / 1000) - 5 }),
    );
    expect(expired.status).toBe(401);
    expect(expired.headers.get("WWW-Authenticate")).toContain('error="invalid_token"');
    expect((await attempt("203.0.113.7", await tokenFor("limit-ip-valid"))).status).toBe(200);
    expect((await attempt("198.51.100.2", "guess")).status).toBe(401);
  });
});

describe("response hardening", () => {
  it("sends nosniff, no framework disclosure, and never lets caches keep user data", async () => {
    const user = await as("hardening");
    const feed = newFeed();
    const responses = {
      created: await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl)),
      list: await user.get("/v1/subscriptions"),
      one: await user.get(`/v1/subscriptions/${feed.guid}`),
      error: await user.get("/v1/subscriptions/nope"),
      unauthenticated: await send(new Request(`${ORIGIN}/v1/subscriptions`)),
    };
    for (const [name, response] of Object.entries(responses)) {
      expect(response.headers.get("X-Content-Type-Options"), name).toBe("nosniff");
      expect(response.headers.get("Server"), name).toBeNull();
      expect(response.headers.get("X-Powered-By"), name).toBeNull();
      const cacheControl = response.headers.get("Cache-Control") ?? "";
      expect(cacheControl, name).toMatch(/^private, no-(store|cache)$/);
      if (cacheControl === "private, no-cache") expect(response.headers.get("ETag"), name).toBeTruthy();
    }
  });
});

describe("CORS", () => {
  const cors = { CORS_ALLOWED_ORIGINS: "https://app.example.com, https://web.example.org" };

  it("answers a preflight from an allowed origin without credentials, allowing Authorization", async () => {
    const response = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, {
        method: "OPTIONS",
        headers: {
          Origin: "https://app.example.com",
          "Access-Control-Request-Method": "POST",
          "Access-Control-Request-Headers": "authorization, content-type",
        },
      }),
      cors,
    );
    expect(response.status).toBe(204);
    expect(response.headers.get("Access-Control-Allow-Origin")).toBe("https://app.example.com");
    expect(response.headers.get("Access-Control-Allow-Headers")?.toLowerCase()).toContain("authorization");
    expect(response.headers.get("Access-Control-Allow-Methods")).toContain("POST");
    expect(response.headers.get("Access-Control-Allow-Credentials")).toBeNull();
  });

  it("exposes the headers apps need on actual requests, and ignores other origins", async () => {
    const token = await tokenFor("cors-user");
    const allowed = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, {
        headers: { Authorization: `Bearer ${token}`, Origin: "https://web.example.org" },
      }),
      cors,
    );
    expect(allowed.headers.get("Access-Control-Allow-Origin")).toBe("https://web.example.org");
    expect(allowed.headers.get("Access-Control-Expose-Headers")).toContain("ETag");
    const other = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, {
        headers: { Authorization: `Bearer ${token}`, Origin: "https://evil.example" },
      }),
      cors,
    );
    expect(other.headers.get("Access-Control-Allow-Origin")).toBeNull();
    const unconfigured = await send(
      new Request(`${ORIGIN}/v1/subscriptions`, {
        headers: { Authorization: `Bearer ${token}`, Origin: "https://app.example.com" },
      }),
    );
    expect(unconfigured.headers.get("Access-Control-Allow-Origin")).toBeNull();
  });
});

describe("request log", () => {
  afterEach(() => vi.restoreAllMocks());

  it("writes one JSON line per request with the route pattern and a user hash, never the token, id or feed", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => {
      lines.push(String(line));
    });
    const user = await as("log-user-42");
    const feed = newFeed();
    const response = await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0]) as Record<string, unknown>;
    expect(entry).toMatchObject({
      event: "request",
      requestId: response.headers.get("X-Request-Id"),
      method: "POST",
      route: "/v1/subscriptions",
      status: 201,
    });
    expect(typeof entry.durationMs).toBe("number");
    expect(entry.user).toMatch(/^[0-9a-f]{16}$/);
    for (const secret of [user.token, "log-user-42", feed.guid, feed.feedUrl]) expect(lines[0]).not.toContain(secret);
    await user.get(`/v1/subscriptions/${feed.guid}`);
    expect(JSON.parse(lines[1]).route).toBe("/v1/subscriptions/:guid");
    // The list and the change feed share a path pattern; the log tells them apart.
    await user.get("/v1/subscriptions?filter[since]=0");
    await user.get("/v1/subscriptions");
    await user.patch(`/v1/subscriptions/${feed.guid}`, subscriptionDocument(feed.guid, "https://moved.example/"));
    expect(lines.slice(2).map((line) => [JSON.parse(line).method, JSON.parse(line).route])).toEqual([
      ["GET", "/v1/subscriptions?filter[since]"],
      ["GET", "/v1/subscriptions"],
      ["PATCH", "/v1/subscriptions/:guid"],
    ]);
    for (const line of lines) expect(line).not.toContain("moved.example");
  });
});
