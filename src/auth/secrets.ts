/** Random secrets, their stored hashes, and comparing those hashes without a timing signal. */

const encoder = new TextEncoder();

/** Bytes as base64url without padding. */
function base64url(raw: Uint8Array): string {
  let binary = "";
  for (const byte of raw) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** `bytes` random bytes as base64url without padding (16 bytes: 128 bits, 22 characters). */
export function randomSecret(bytes: number): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/**
 * HMAC-SHA256 of each message keyed by `key` (a secret of at least 128 random bits, such as an app password), as
 * base64url (256 bits, 43 characters): secrets anyone holding the key can derive again, and nobody else.
 */
export async function derivedSecrets(key: string, messages: readonly string[]): Promise<string[]> {
  const hmac = await crypto.subtle.importKey("raw", encoder.encode(key), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return Promise.all(
    messages.map(async (message) =>
      base64url(new Uint8Array(await crypto.subtle.sign("HMAC", hmac, encoder.encode(message)))),
    ),
  );
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
