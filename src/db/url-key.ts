import { sha256 } from "@noble/hashes/sha2.js";

const encoder = new TextEncoder();

/**
 * The key a stored URL is found by (`subscriptions.url_key`): the first 48 bits of SHA-256 of its exact text,
 * as an integer. A lookup compares the URL itself too, so a collision costs a table read, never a wrong
 * answer; a cryptographic hash keeps an account from crafting thousands of colliding URLs to make its own
 * lookups read them all. Synchronous (@noble/hashes) rather than `crypto.subtle.digest`: every subscription
 * write computes one, and the promise of a Web Crypto call per bulk operation cost more than the hash.
 */
export function urlKey(url: string): number {
  const digest = sha256(encoder.encode(url));
  const high = (digest[0] << 8) | digest[1];
  const low = ((digest[2] << 24) | (digest[3] << 16) | (digest[4] << 8) | digest[5]) >>> 0;
  return high * 2 ** 32 + low;
}
