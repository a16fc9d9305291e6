import { BoundedMap } from "./bounded-map";

/**
 * SHA-256 of a user id, computed once per isolate per user. The access log names users by it (never
 * by id), and it is what a bucket map would partition users by. Bounded so that a stream of distinct
 * users cannot grow the isolate's memory: past the bound, the oldest entry is dropped.
 */
export const USER_DIGEST_CACHE_SIZE = 10_000;

const digests = new BoundedMap<string, Uint8Array>(USER_DIGEST_CACHE_SIZE);

export async function userDigest(userId: string): Promise<Uint8Array> {
  const cached = digests.get(userId);
  if (cached) return cached;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(userId)));
  digests.set(userId, digest);
  return digest;
}

/** How many digests the isolate holds (for the test that proves the bound). */
export function userDigestCacheSize(): number {
  return digests.size;
}

/** The user's digest when this isolate already holds it: no hashing, no await. */
export function cachedUserDigest(userId: string): Uint8Array | undefined {
  return digests.get(userId);
}
