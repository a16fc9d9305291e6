import { env } from "cloudflare:test";
import { sign } from "hono/jwt";
import type { HonoJsonWebKey } from "hono/utils/jwt/jws";
import type { JWTPayload } from "hono/utils/jwt/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  announceInjectedFailures,
  countingD1,
  JSONAPI,
  keyPair,
  ORIGIN,
  send,
  shardDatabases,
  tokenFor,
} from "./helpers";

const now = () => Math.floor(Date.now() / 1000);

function list(authorization: string | undefined, bindings: Parameters<typeof send>[1] = {}) {
  const headers: Record<string, string> = { Accept: JSONAPI };
  if (authorization !== undefined) headers.Authorization = authorization;
  return send(new Request(`${ORIGIN}/v1/subscriptions`, { headers }), bindings);
}

function base64url(value: string): string {
  return btoa(value).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function base64urlBytes(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** An HS256 token over exactly these header and payload bytes, whatever they hold. */
async function signedRaw(header: Uint8Array, payload: Uint8Array, secret: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const input = `${base64urlBytes(header)}.${base64urlBytes(payload)}`;
  const signature = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(input));
  return `${input}.${base64urlBytes(new Uint8Array(signature))}`;
}

async function expectRejected(response: Response, tokenPresented = true) {
  expect(response.status).toBe(401);
  expect(response.headers.get("Content-Type")).toBe(JSONAPI);
  expect(response.headers.get("WWW-Authenticate")).toBe(
    tokenPresented ? 'Bearer realm="subscriptions", error="invalid_token"' : 'Bearer realm="subscriptions"',
  );
  const body = (await response.json()) as { errors: { status: string; title: string }[] };
  expect(body.errors[0]).toMatchObject({ status: "401", title: "Unauthorized" });
}

const jwksBindings = (keys: HonoJsonWebKey[]) => ({ AUTH_JWT_SECRET: "", AUTH_JWKS: JSON.stringify({ keys }) });

describe("bearer tokens (HS256 secret)", () => {
  it("accepts a valid token and acts as its sub", async () => {
    const response = await list(`Bearer ${await tokenFor("alice")}`);
    expect(response.status).toBe(200);
  });

  it("answers 401 with a bare challenge when no credentials are sent", async () => {
    await expectRejected(await list(undefined), false);
  });

  it("rejects a non-Bearer scheme", async () => {
    await expectRejected(await list(`Basic ${btoa("alice:secret")}`));
  });

  it("rejects a malformed token", async () => {
    await expectRejected(await list("Bearer not.a.jwt"));
    await expectRejected(await list("Bearer abc"));
  });

  it("rejects an expired token", async () => {
    await expectRejected(await list(`Bearer ${await tokenFor("alice", { exp: now() - 10 })}`));
  });

  it("rejects a token without exp", async () => {
    const token = await sign({ sub: "alice", iat: now() }, env.AUTH_JWT_SECRET as string, "HS256");
    await expectRejected(await list(`Bearer ${token}`));
  });

  it("honours nbf", async () => {
    await expectRejected(await list(`Bearer ${await tokenFor("alice", { nbf: now() + 600 })}`));
    expect((await list(`Bearer ${await tokenFor("alice", { nbf: now() - 5 })}`)).status).toBe(200);
  });

  it("rejects a token signed with another secret", async () => {
    await expectRejected(await list(`Bearer ${await tokenFor("alice", {}, "some-other-secret")}`));
  });

  it("rejects alg none", async () => {
    const header = base64url(JSON.stringify({ alg: "none", typ: "JWT" }));
    const payload = base64url(JSON.stringify({ sub: "alice", exp: now() + 3600 }));
    await expectRejected(await list(`Bearer ${header}.${payload}.`));
  });

  it("rejects an algorithm the configured key does not use", async () => {
    const { privateJwk } = await keyPair("RS256", "k1");
    const token = await sign({ sub: "alice", exp: now() + 3600 }, privateJwk);
    await expectRejected(await list(`Bearer ${token}`));
    const hs512 = await sign({ sub: "alice", exp: now() + 3600 }, env.AUTH_JWT_SECRET as string, "HS512");
    await expectRejected(await list(`Bearer ${hs512}`));
  });

  it("rejects a token whose sub is missing, empty, not a string or over 255 characters", async () => {
    const secret = env.AUTH_JWT_SECRET as string;
    const exp = now() + 3600;
    for (const payload of [{ exp }, { exp, sub: "" }, { exp, sub: 42 }, { exp, sub: "u".repeat(256) }]) {
      await expectRejected(await list(`Bearer ${await sign(payload as JWTPayload, secret, "HS256")}`));
    }
    expect((await list(`Bearer ${await tokenFor("u".repeat(255))}`)).status).toBe(200);
  });

  it("rejects a signed token whose header or payload is not valid UTF-8, or has a BOM (docs/API.md §15)", async () => {
    const exp = now() + 3600;
    const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
    // `sub` "caf" followed by one byte: 0xFF and 0xFE are both malformed and both decode leniently to U+FFFD,
    // so accepting either would make two different signed payloads one user.
    const withByte = (byte: number) => {
      const text = JSON.stringify({ sub: "caf#", exp });
      const bytes = new TextEncoder().encode(text);
      bytes[bytes.indexOf(0x23)] = byte;
      return bytes;
    };
    const header = json({ alg: "HS256", typ: "JWT" });
    const bom = (bytes: Uint8Array) => new Uint8Array([0xef, 0xbb, 0xbf, ...bytes]);
    const cases: [string, Uint8Array, Uint8Array][] = [
      ["payload byte 0xFF", header, withByte(0xff)],
      ["payload byte 0xFE", header, withByte(0xfe)],
      ["payload truncated sequence", header, withByte(0xc3)],
      [
        "payload surrogate encoded in UTF-8",
        header,
        new Uint8Array([...withByte(0xed)].flatMap((b) => (b === 0xed ? [0xed, 0xa0, 0x80] : [b]))),
      ],
      ["payload with a BOM", header, bom(json({ sub: "cafe", exp }))],
      ["header byte 0xFF", new Uint8Array([...header.slice(0, -1), 0x20, 0xff, 0x7d]), json({ sub: "cafe", exp })],
      ["header with a BOM", bom(header), json({ sub: "cafe", exp })],
    ];
    for (const [name, headerBytes, payloadBytes] of cases) {
      const token = await signedRaw(headerBytes, payloadBytes, env.AUTH_JWT_SECRET as string);
      const response = await list(`Bearer ${token}`);
      expect(response.status, name).toBe(401);
      await expectRejected(response);
    }
    // The same construction with valid UTF-8 is accepted: the refusals above are about the bytes alone.
    expect(
      (await list(`Bearer ${await signedRaw(header, json({ sub: "caf\u00e9", exp }), env.AUTH_JWT_SECRET as string)}`))
        .status,
    ).toBe(200);
  });

  it("rejects a sub holding a lone surrogate (a JSON escape D1 would store as U+FFFD)", async () => {
    const payload = new TextEncoder().encode(`{"sub":"caf\\ud800","exp":${now() + 3600}}`);
    const header = new TextEncoder().encode('{"alg":"HS256","typ":"JWT"}');
    await expectRejected(await list(`Bearer ${await signedRaw(header, payload, env.AUTH_JWT_SECRET as string)}`));
  });

  it("checks iss and aud when they are configured", async () => {
    const bindings = { AUTH_ISSUER: "https://id.example.com/", AUTH_AUDIENCE: "podcast-sync" };
    const good = await tokenFor("alice", { iss: "https://id.example.com/", aud: "podcast-sync" });
    expect((await list(`Bearer ${good}`, bindings)).status).toBe(200);
    await expectRejected(await list(`Bearer ${await tokenFor("alice", { aud: "podcast-sync" })}`, bindings));
    await expectRejected(
      await list(`Bearer ${await tokenFor("alice", { iss: "https://evil.example/", aud: "podcast-sync" })}`, bindings),
    );
    await expectRejected(
      await list(`Bearer ${await tokenFor("alice", { iss: "https://id.example.com/", aud: "other" })}`, bindings),
    );
  });

  it("makes no D1 call to authenticate", async () => {
    // Every database of the configuration is watched: authentication must touch none of them.
    const counters = shardDatabases().map(({ name, database }) => ({ name, counter: countingD1(database) }));
    const bindings = Object.fromEntries(counters.map(({ name, counter }) => [name, counter.binding]));
    await list(undefined, bindings);
    await list(`Bearer ${await tokenFor("alice", { exp: now() - 1 })}`, bindings);
    expect(counters.map(({ counter }) => counter.calls())).toEqual(counters.map(() => 0));
  });
});

describe("bearer tokens (JWKS)", () => {
  announceInjectedFailures("jwks_unavailable");
  afterEach(() => vi.restoreAllMocks());

  for (const alg of ["RS256", "ES256", "EdDSA"] as const) {
    it(`accepts ${alg} tokens signed by a key of the inline JWKS`, async () => {
      const { publicJwk, privateJwk } = await keyPair(alg, `key-${alg}`);
      const token = await sign({ sub: "alice", exp: now() + 3600 }, privateJwk);
      expect((await list(`Bearer ${token}`, jwksBindings([publicJwk]))).status).toBe(200);
    });
  }

  it("rejects a token signed by a key that is not in the set", async () => {
    const trusted = await keyPair("ES256", "trusted");
    const stranger = await keyPair("ES256", "trusted");
    const token = await sign({ sub: "alice", exp: now() + 3600 }, stranger.privateJwk);
    await expectRejected(await list(`Bearer ${token}`, jwksBindings([trusted.publicJwk])));
  });

  it("rejects an HS256 token when only a JWKS is configured", async () => {
    const { publicJwk } = await keyPair("RS256", "k1");
    await expectRejected(await list(`Bearer ${await tokenFor("alice")}`, jwksBindings([publicJwk])));
  });

  it("requires exp on JWKS tokens too", async () => {
    const { publicJwk, privateJwk } = await keyPair("ES256", "k1");
    const token = await sign({ sub: "alice" }, privateJwk);
    await expectRejected(await list(`Bearer ${token}`, jwksBindings([publicJwk])));
  });

  it("fetches the key set from AUTH_JWKS_URL", async () => {
    const { publicJwk, privateJwk } = await keyPair("RS256", "remote");
    const fetchSpy = vi
      .spyOn(globalThis, "fetch")
      .mockImplementation(async () => new Response(JSON.stringify({ keys: [publicJwk] })));
    const token = await sign({ sub: "alice", exp: now() + 3600 }, privateJwk);
    const bindings = { AUTH_JWT_SECRET: "", AUTH_JWKS_URL: "https://id.example.com/.well-known/jwks.json" };
    expect((await list(`Bearer ${token}`, bindings)).status).toBe(200);
    expect(String(fetchSpy.mock.calls[0][0])).toBe("https://id.example.com/.well-known/jwks.json");
  });

  it("answers 503 when the key set cannot be fetched", async () => {
    const { privateJwk } = await keyPair("RS256", "remote");
    vi.spyOn(globalThis, "fetch").mockImplementation(async () => new Response("down", { status: 502 }));
    const token = await sign({ sub: "alice", exp: now() + 3600 }, privateJwk);
    const response = await list(`Bearer ${token}`, {
      AUTH_JWT_SECRET: "",
      // Another identity provider than above: the worker keeps a fetched key set per isolate and URL.
      AUTH_JWKS_URL: "https://down.example.com/.well-known/jwks.json",
    });
    expect(response.status).toBe(503);
    expect(response.headers.get("Content-Type")).toBe(JSONAPI);
  });
});

describe("no verification configured", () => {
  it("answers 500 and never serves data", async () => {
    const response = await list(`Bearer ${await tokenFor("alice")}`, { AUTH_JWT_SECRET: "" });
    expect(response.status).toBe(500);
    const body = (await response.json()) as { errors: { title: string; detail: string }[]; data?: unknown };
    expect(body.data).toBeUndefined();
    expect(body.errors[0].title).toBe("Authentication is not configured");
    expect(body.errors[0].detail).toContain("AUTH_JWT_SECRET");
  });

  it("answers 500 for an AUTH_JWKS that is not a key set", async () => {
    const response = await list(`Bearer ${await tokenFor("alice")}`, { AUTH_JWT_SECRET: "", AUTH_JWKS: "{nope" });
    expect(response.status).toBe(500);
  });
});
