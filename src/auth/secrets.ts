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
 * What a typed secret is written in: lowercase letters and digits without the ones a person confuses when reading
 * from another screen (l and 1, o and 0; no capitals, so no I or O either). 32 characters: 5 bits each.
 */
export const TYPEABLE_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789";
const TYPEABLE_GROUP = 5;

/**
 * A secret a person can type from another screen: `groups` groups of 5 characters of TYPEABLE_ALPHABET joined by
 * `-` (6 groups: 150 random bits), `xxxxx-xxxxx-...`. Each character is one random byte's low 5 bits (32 divides
 * 256, so every character is equally likely).
 */
export function typeableSecret(groups: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(groups * TYPEABLE_GROUP));
  const characters = Array.from(raw, (byte) => TYPEABLE_ALPHABET[byte & 31]);
  return Array.from({ length: groups }, (_, group) =>
    characters.slice(group * TYPEABLE_GROUP, (group + 1) * TYPEABLE_GROUP).join(""),
  ).join("-");
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
