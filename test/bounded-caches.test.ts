// Every cache the isolate keeps across requests must stay bounded, or a deployed isolate (128 MB) grows
// with the number of distinct users until it is evicted. One test per cache.
import { describe, expect, it } from "vitest";
import { USER_DIGEST_CACHE_SIZE, userDigest, userDigestCacheSize } from "../src/user-digest";

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

/** Digests of `count` users never seen before (ids unique to this call's `prefix`). */
async function digestUsers(prefix: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await userDigest(`${prefix}-${i}`);
}

describe("user digests (src/user-digest.ts)", () => {
  it("holds at most USER_DIGEST_CACHE_SIZE users however many distinct users arrive", async () => {
    await digestUsers("stream", USER_DIGEST_CACHE_SIZE + 500);
    expect(userDigestCacheSize()).toBe(USER_DIGEST_CACHE_SIZE);
  });

  it("answers a cached user from the cache, and drops the oldest user once full", async () => {
    const first = await userDigest("oldest-user");
    expect(await userDigest("oldest-user")).toBe(first);

    await digestUsers("newer", USER_DIGEST_CACHE_SIZE);
    const newest = await userDigest(`newer-${USER_DIGEST_CACHE_SIZE - 1}`);
    expect(await userDigest(`newer-${USER_DIGEST_CACHE_SIZE - 1}`)).toBe(newest);

    const again = await userDigest("oldest-user");
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
    expect(userDigestCacheSize()).toBe(USER_DIGEST_CACHE_SIZE);
  });

  it("caches the SHA-256 of the user id", async () => {
    expect(await userDigest("alice")).toEqual(await sha256("alice"));
    expect(await userDigest("bob")).toEqual(await sha256("bob"));
  });
});
