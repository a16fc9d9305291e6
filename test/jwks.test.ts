import { env } from "cloudflare:test";
import { sign } from "hono/jwt";
import type { HonoJsonWebKey } from "hono/utils/jwt/jws";
import { afterEach, describe, expect, it, vi } from "vitest";
import { failureKeyOfAddress, isOverFailureLimit } from "../src/middleware/auth-failures";
import { announceInjectedFailures, JSONAPI, keyPair, ORIGIN, send, tokenFor, withinOneRateWindow } from "./helpers";

/**
 * The identity provider's key set (AUTH_JWKS_URL) against a fake provider played by the test: `fetch` is
 * replaced, and each test uses its own provider URL because the worker keeps a fetched set per isolate.
 */

type Answer = () => Response | Promise<Response>;

interface FakeProvider {
  url: string;
  /** What the provider answers from now on. */
  answer(next: Answer): void;
  /** Fetches the worker made to this provider, with their abort signals. */
  fetches: { signal: AbortSignal | null | undefined }[];
}

function fakeProvider(name: string): FakeProvider {
  const url = `https://${name}.idp.example/.well-known/jwks.json`;
  let current: Answer = () => new Response("not configured", { status: 500 });
  const fetches: FakeProvider["fetches"] = [];
  const real = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    if (String(input instanceof Request ? input.url : input) !== url) return real(input, init);
    fetches.push({ signal: init?.signal });
    return current();
  });
  return { url, answer: (next) => (current = next), fetches };
}

const jwks =
  (...keys: HonoJsonWebKey[]) =>
  () =>
    Response.json({ keys });
const html = () =>
  new Response("<!doctype html><title>Down for maintenance</title>", {
    headers: { "Content-Type": "text/html" },
  });
const never = () => new Promise<Response>(() => {});

const TEST_TIMEOUT_MS = "200";

function bindings(provider: FakeProvider, extra: Record<string, unknown> = {}) {
  return { AUTH_JWT_SECRET: "", AUTH_JWKS_URL: provider.url, AUTH_JWKS_TIMEOUT_MS: TEST_TIMEOUT_MS, ...extra };
}

async function tokenSignedBy(privateJwk: HonoJsonWebKey, sub = "jwks-user"): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return sign({ sub, iat: now, exp: now + 3600 }, privateJwk);
}

function list(token: string, bound: Record<string, unknown>, ip = "192.0.2.1") {
  return send(
    new Request(`${ORIGIN}/v1/subscriptions`, {
      headers: { Authorization: `Bearer ${token}`, Accept: JSONAPI, "CF-Connecting-IP": ip },
    }),
    bound,
  );
}

async function expectUnavailable(response: Response) {
  expect(response.status).toBe(503);
  expect(response.headers.get("Content-Type")).toBe(JSONAPI);
  expect(response.headers.get("Retry-After")).toMatch(/^[1-9]\d*$/);
  expect(response.headers.get("WWW-Authenticate")).toBeNull();
  const body = (await response.json()) as { errors: { status: string; title: string }[] };
  expect(body.errors[0]).toMatchObject({ status: "503", title: "Authentication unavailable" });
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe("JWKS from the identity provider", () => {
  announceInjectedFailures("jwks_unavailable");
  it("answers 503, not 401, when the provider serves an HTML maintenance page with 200", async () => {
    const provider = fakeProvider("html");
    const { privateJwk } = await keyPair("RS256", "k1");
    provider.answer(html);
    await expectUnavailable(await list(await tokenSignedBy(privateJwk), bindings(provider)));
  });

  it("answers 503 when the provider answers 500, or JSON that is not a key set", async () => {
    const { privateJwk } = await keyPair("ES256", "k1");
    const token = await tokenSignedBy(privateJwk);
    const answers: Record<string, Answer> = {
      "500": () => new Response("oops", { status: 500 }),
      "not-json": () => new Response("{ keys: [", { headers: { "Content-Type": "application/json" } }),
      "no-keys": () => Response.json({ error: "maintenance" }),
      "keys-not-array": () => Response.json({ keys: "none" }),
      "key-not-object": () => Response.json({ keys: ["k1"] }),
      "network-error": () => Promise.reject(new TypeError("Network connection lost.")),
    };
    for (const [name, answer] of Object.entries(answers)) {
      const provider = fakeProvider(`broken-${name}`);
      provider.answer(answer);
      await expectUnavailable(await list(token, bindings(provider)));
      vi.restoreAllMocks();
    }
  });

  it("gives up on a provider that never answers after the timeout (503) and aborts the fetch", async () => {
    const provider = fakeProvider("hang");
    const { privateJwk } = await keyPair("RS256", "k1");
    provider.answer(never);
    await expectUnavailable(await list(await tokenSignedBy(privateJwk), bindings(provider)));
    expect(provider.fetches).toHaveLength(1);
    expect(provider.fetches[0].signal?.aborted).toBe(true);
  });

  it("gives up on a provider whose body never ends, too", async () => {
    const provider = fakeProvider("slow-body");
    const { privateJwk } = await keyPair("RS256", "k1");
    provider.answer(() => new Response(new ReadableStream({ start: () => {} }), { status: 200 }));
    await expectUnavailable(await list(await tokenSignedBy(privateJwk), bindings(provider)));
  });

  it("waits for a slow provider that answers within the timeout", async () => {
    const provider = fakeProvider("slow");
    const { publicJwk, privateJwk } = await keyPair("EdDSA", "k1");
    provider.answer(async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      return jwks(publicJwk)();
    });
    const response = await list(await tokenSignedBy(privateJwk), bindings(provider, { AUTH_JWKS_TIMEOUT_MS: "2000" }));
    expect(response.status).toBe(200);
  });

  it("fetches the set once per isolate, not once per request", async () => {
    const provider = fakeProvider("once");
    const { publicJwk, privateJwk } = await keyPair("RS256", "k1");
    provider.answer(jwks(publicJwk));
    for (const sub of ["a", "b", "c"]) {
      expect((await list(await tokenSignedBy(privateJwk, sub), bindings(provider))).status).toBe(200);
    }
    expect(provider.fetches).toHaveLength(1);
  });

  it("accepts a rotated key after one refetch, and does not refetch for every unknown kid", async () => {
    const provider = fakeProvider("rotation");
    const old = await keyPair("ES256", "2026-01");
    const rotated = await keyPair("ES256", "2026-02");
    provider.answer(jwks(old.publicJwk));
    expect((await list(await tokenSignedBy(old.privateJwk), bindings(provider))).status).toBe(200);
    provider.answer(jwks(old.publicJwk, rotated.publicJwk));
    expect((await list(await tokenSignedBy(rotated.privateJwk), bindings(provider))).status).toBe(200);
    expect(provider.fetches).toHaveLength(2);

    const stranger = await keyPair("ES256", "made-up-kid");
    const response = await list(await tokenSignedBy(stranger.privateJwk), bindings(provider));
    expect(response.status).toBe(401);
    expect(provider.fetches).toHaveLength(2);
  });

  it("never charges the per-IP failed-authentication limit for a 503", async () => {
    const provider = fakeProvider("limiter");
    const { privateJwk } = await keyPair("RS256", "k1");
    provider.answer(html);
    await withinOneRateWindow();
    const tight = {
      ...bindings(provider),
      AUTH_FAILURE_RATE_LIMITER: env.TIGHT_AUTH_FAILURE_RATE_LIMITER, // 3 failures per minute
    };
    const ip = "192.0.2.77";
    const token = await tokenSignedBy(privateJwk);
    for (let i = 0; i < 6; i++) await expectUnavailable(await list(token, tight, ip));
    // The limiter still has all 3 failures to give: the address is over it only after the fourth bad token.
    const over = () => isOverFailureLimit(failureKeyOfAddress(ip));
    for (let i = 0; i < 3; i++) expect((await list(`bad.token.${i}`, tight, ip)).status).toBe(401);
    expect(over()).toBe(false);
    expect((await list("bad.token.3", tight, ip)).status).toBe(401);
    expect(over()).toBe(true);
  });

  it("after a failure, answers 503 at once for a while instead of asking the provider on every request", async () => {
    const provider = fakeProvider("backoff");
    const { publicJwk, privateJwk } = await keyPair("RS256", "k1");
    provider.answer(never);
    const token = await tokenSignedBy(privateJwk);
    await expectUnavailable(await list(token, bindings(provider)));
    provider.answer(jwks(publicJwk)); // recovered, but the worker waits out its retry delay
    const retried = await list(token, bindings(provider));
    await expectUnavailable(retried);
    expect(provider.fetches).toHaveLength(1);

    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now() + 11_000);
    expect((await list(token, bindings(provider))).status).toBe(200);
    expect(provider.fetches).toHaveLength(2);
  });

  it("keeps verifying tokens of known keys with the last good set while the provider is down, for a while", async () => {
    const provider = fakeProvider("stale");
    const { publicJwk, privateJwk } = await keyPair("RS256", "k1");
    provider.answer(jwks(publicJwk));
    const start = Date.now();
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(start);
    expect((await list(await tokenSignedBy(privateJwk, "first"), bindings(provider))).status).toBe(200);

    provider.answer(html);
    vi.setSystemTime(start + 6 * 60_000); // the set is no longer fresh: the worker asks again, and fails
    expect((await list(await tokenSignedBy(privateJwk, "second"), bindings(provider))).status).toBe(200);
    expect(provider.fetches).toHaveLength(2);
    const unknownKey = await keyPair("RS256", "k2");
    await expectUnavailable(await list(await tokenSignedBy(unknownKey.privateJwk), bindings(provider)));

    vi.setSystemTime(start + 61 * 60_000); // too old to trust any longer
    await expectUnavailable(await list(await tokenSignedBy(privateJwk, "third"), bindings(provider)));
  });

  it("still refuses bad tokens with 401 while the set is available", async () => {
    const provider = fakeProvider("refuse");
    const { publicJwk, privateJwk } = await keyPair("RS256", "k1");
    provider.answer(jwks(publicJwk));
    const good = await tokenSignedBy(privateJwk);
    expect((await list(good, bindings(provider))).status).toBe(200);
    const [header, payload] = good.split(".");
    const forged = `${header}.${payload}.${"A".repeat(342)}`;
    expect((await list(forged, bindings(provider))).status).toBe(401);
    expect((await list(await tokenFor("hs256-user"), bindings(provider))).status).toBe(401);
  });
});
