/** Random secrets, their stored hashes, and comparing those hashes without a timing signal. */

const encoder = new TextEncoder();

/** `bytes` random bytes as base64url without padding (16 bytes: 128 bits, 22 characters). */
export function randomSecret(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  let binary = "";
  for (const byte of raw) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/**
 * SHA-256 as lowercase hex: what is stored of an app password or a session id. Both hold at least 128
 * random bits, so a fast hash is enough: there is nothing to brute-force from the hash.
 */
export async function secretHash(secret: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(secret)));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Equal strings, compared in time that depends only on their lengths (hashes: always 64 characters). */
export function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}
