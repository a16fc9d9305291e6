import { BUCKET_COUNT } from "../shards";
import { userDigest } from "../user-digest";

/**
 * A user's gpodder username (docs/API.md §14): the first 128 bits of SHA-256(user id) in lowercase base32
 * (RFC 4648 alphabet, no padding), 26 characters. A Basic request carries only the username, and the
 * username encodes the digest that fixes the user's bucket (src/shards.ts), so the worker finds the user's
 * database from the username alone, without a global table. The same for every app password of a user;
 * two users share one only if their ids collide in 128 bits of SHA-256.
 */
export const GPODDER_USERNAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";
const USERNAME_BYTES = 16;
/** The shape of the usernames this service hands out; anything else is no user of it. */
const ISSUED_USERNAME = /^[a-z2-7]{26}$/;

function base32(bytes: Uint8Array): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

export async function gpodderUsername(userId: string): Promise<string> {
  return base32((await userDigest(userId)).subarray(0, USERNAME_BYTES));
}

/**
 * The bucket of the user a username names (the same as bucketOf(user id)): the first 32 bits of the
 * digest, read back from the first 7 characters (35 bits). Undefined for a name this service never issued.
 */
export function bucketOfUsername(username: string): number | undefined {
  if (!ISSUED_USERNAME.test(username)) return undefined;
  let high = 0;
  for (let i = 0; i < 7; i++) high = high * 32 + ALPHABET.indexOf(username[i]);
  return Math.floor(high / 8) % BUCKET_COUNT;
}
