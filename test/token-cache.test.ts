import { sign } from "hono/jwt";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_VERIFIED_TOKENS, VerifiedTokens } from "../src/auth/verified-tokens";
import { JSONAPI, ORIGIN, send, TEST_SECRET, tokenFor } from "./helpers";

/**
 * A token is verified once per isolate: later requests with the exact same token reuse the result,
 * and nothing else does (other, expired, tampered tokens, or another configuration).
 */

const now = () => Math.floor(Date.now() / 1000);

function list(token: string, bindings: Record<string, unknown> = {}) {
  return send(
    new Request(`${ORIGIN}/v1/subscriptions`, { headers: { Authorization: `Bearer ${token}`, Accept: JSONAPI } }),
    bindings,
  );
}

/** A configuration no other test uses, so its verifier (and cache) starts empty. */
const fresh = (name: string) => ({ AUTH_ISSUER: `https://${name}.token-cache.example/` });

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe("verified tokens are remembered per isolate", () => {
  it("checks the signature of a token once, and imports the secret once", async () => {
    const config = fresh("once");
    const token = await tokenFor("cache-once", { iss: config.AUTH_ISSUER });
    const other = await tokenFor("cache-once-2", { iss: config.AUTH_ISSUER });
    const verify = vi.spyOn(crypto.subtle, "verify");
    const importKey = vi.spyOn(crypto.subtle, "importKey");
    for (let i = 0; i < 3; i++) expect((await list(token, config)).status).toBe(200);
    expect(verify).toHaveBeenCalledTimes(1);
    expect((await list(other, config)).status).toBe(200);
    expect(verify).toHaveBeenCalledTimes(2);
    expect(importKey).toHaveBeenCalledTimes(1);
  });

  it("still refuses expired, tampered and other-secret tokens once a valid one is cached", async () => {
    const config = fresh("refuse");
    const valid = await tokenFor("cache-victim", { iss: config.AUTH_ISSUER });
    expect((await list(valid, config)).status).toBe(200);

    const expired = await tokenFor("cache-victim", { iss: config.AUTH_ISSUER, exp: now() - 1 });
    const [header, , signature] = valid.split(".");
    const otherPayload = btoa(JSON.stringify({ sub: "someone-else", iss: config.AUTH_ISSUER, exp: now() + 3600 }))
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "");
    const tampered = `${header}.${otherPayload}.${signature}`;
    const otherSecret = await tokenFor("cache-victim", { iss: config.AUTH_ISSUER }, "another-secret-0123456789abcdef");
    const truncated = valid.slice(0, -2);
    for (const [name, token] of Object.entries({ expired, tampered, otherSecret, truncated })) {
      expect((await list(token, config)).status, name).toBe(401);
    }
    expect((await list(valid, config)).status).toBe(200);
  });

  it("never serves a cached token at or after its exp", async () => {
    const config = fresh("expiry");
    const start = Date.now();
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(start);
    const token = await tokenFor("cache-expiry", { iss: config.AUTH_ISSUER, exp: Math.floor(start / 1000) + 60 });
    expect((await list(token, config)).status).toBe(200);
    vi.setSystemTime(start + 59_000);
    expect((await list(token, config)).status).toBe(200);
    vi.setSystemTime(start + 61_000);
    expect((await list(token, config)).status).toBe(401);
  });

  it("does not carry a verified token over to another configuration (a rotated secret)", async () => {
    const config = fresh("rotated");
    const token = await tokenFor("cache-rotated", { iss: config.AUTH_ISSUER });
    expect((await list(token, config)).status).toBe(200);
    const rotated = { ...config, AUTH_JWT_SECRET: "the-new-secret-0123456789abcdef0123" };
    expect((await list(token, rotated)).status).toBe(401);
    expect((await list(token, { ...config, AUTH_AUDIENCE: "podcast-sync" })).status).toBe(401);
  });

  it("never caches a token that failed a check of its own (no exp, bad sub)", async () => {
    const config = fresh("uncached");
    const verify = vi.spyOn(crypto.subtle, "verify");
    const noExp = await sign({ sub: "cache-noexp", iss: config.AUTH_ISSUER }, TEST_SECRET, "HS256");
    expect((await list(noExp, config)).status).toBe(401);
    expect((await list(noExp, config)).status).toBe(401);
    expect(verify).toHaveBeenCalledTimes(2);
  });
});

describe("VerifiedTokens", () => {
  const entry = (userId: string, expiresAt = now() + 3600) => ({ userId, expiresAt });

  it("holds at most its bound, dropping the oldest entry first", () => {
    const cache = new VerifiedTokens(3);
    for (const token of ["t1", "t2", "t3", "t4", "t5"]) cache.set(token, entry(token));
    expect(cache.size).toBe(3);
    expect(cache.get("t1", now())).toBeUndefined();
    expect(cache.get("t2", now())).toBeUndefined();
    expect(cache.get("t5", now())?.userId).toBe("t5");
  });

  it("bounds the default instance too", () => {
    const cache = new VerifiedTokens();
    for (let i = 0; i < MAX_VERIFIED_TOKENS * 2 + 1; i++) cache.set(`token-${i}`, entry(String(i)));
    expect(cache.size).toBe(MAX_VERIFIED_TOKENS);
    expect(cache.get(`token-${MAX_VERIFIED_TOKENS * 2}`, now())).toBeDefined();
    expect(cache.get(`token-${MAX_VERIFIED_TOKENS}`, now())).toBeUndefined();
  });

  it("serves an entry only inside its nbf..exp window", () => {
    const cache = new VerifiedTokens();
    cache.set("t", { userId: "u", expiresAt: 200, notBefore: 100 });
    expect(cache.get("t", 99)).toBeUndefined();
    expect(cache.get("t", 100)?.userId).toBe("u");
    expect(cache.get("t", 199)?.userId).toBe("u");
    expect(cache.get("t", 200)).toBeUndefined();
    expect(cache.get("t", 150)).toBeUndefined(); // dropped once expired
  });
});
