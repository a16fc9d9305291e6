/**
 * The podcast:guid of a feed URL (Podcasting 2.0 namespace, `<podcast:guid>`): a UUIDv5 (RFC 9562,
 * SHA-1) in the "podcast" namespace of the URL without its scheme and without trailing slashes. A
 * podcast keeps the guid it was first given even when its feed moves, so this names a feed only
 * when nothing better is known (an OPML outline without a guid, an app about to subscribe).
 *
 * Plain JavaScript, depending on nothing: the typed client re-exports it for apps.
 */

/** The "podcast" namespace UUID of the podcast:guid specification. */
export const PODCAST_GUID_NAMESPACE = "ead4c236-bf58-58c6-a2c6-a6b28d128cb6";

const NAMESPACE_BYTES = hexToBytes(PODCAST_GUID_NAMESPACE.replaceAll("-", ""));
const encoder = new TextEncoder();

function hexToBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

/** The name the guid is derived from: `https://example.com/feed/` names `example.com/feed`. */
export function podcastGuidName(feedUrl: string): string {
  return feedUrl.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//, "").replace(/\/+$/, "");
}

/** `https://example.com/feed1` -> `677ea490-690e-51cb-8b43-755df6c55270` (lowercase). */
export function podcastGuid(feedUrl: string): Promise<string> {
  return Promise.resolve(podcastGuidSync(feedUrl));
}

/** `podcastGuid`, answered at once: an OPML import names a thousand feeds. */
export function podcastGuidSync(feedUrl: string): string {
  return uuidV5Sync(PODCAST_GUID_NAMESPACE, podcastGuidName(feedUrl));
}

/**
 * A UUIDv5 (RFC 9562: SHA-1 of the namespace's 16 bytes and the name's UTF-8), lowercase. Also how apps name
 * an episode: in the namespace of its feed's guid, of the item's `<guid>` (docs/API.md §13).
 */
export function uuidV5(namespace: string, name: string): Promise<string> {
  return Promise.resolve(uuidV5Sync(namespace, name));
}

/**
 * `uuidV5`, answered at once. SHA-1 is computed here rather than by `crypto.subtle.digest`: the promise of a
 * Web Crypto call per name cost more than the hash (an OPML import of 1 000 feeds spent about 40 % of its
 * isolate CPU naming them). Nor by @noble/hashes (the team prefers a maintained library for crypto): with its
 * `sha1` and `sha256` (url-key.ts) the OPML import of 1 000 feeds took 43 % more isolate CPU (12.9 to 18.5 ms, the
 * bench's A/B, bench/README.md) and the bundle 1.9 KiB more. A property test holds this to Web Crypto's SHA-1
 * (test/podcast-guid.test.ts).
 */
export function uuidV5Sync(namespace: string, name: string): string {
  const namespaceBytes =
    namespace === PODCAST_GUID_NAMESPACE ? NAMESPACE_BYTES : hexToBytes(namespace.replaceAll("-", ""));
  const digest = sha1Words(namespaceBytes, name);
  // RFC 9562: version 5 in the high nibble of byte 6, the variant's two bits at the top of byte 8.
  const versioned = (digest[1] & 0xffff0fff) | 0x5000;
  const variant = (digest[2] & 0x3fffffff) | 0x80000000;
  return `${hex16(digest[0] >>> 16)}${hex16(digest[0])}-${hex16(versioned >>> 16)}-${hex16(versioned)}-${hex16(variant >>> 16)}-${hex16(variant)}${hex16(digest[3] >>> 16)}${hex16(digest[3])}`;
}

/** Each byte's two lowercase hex digits (a lookup costs less than `toString(16)` and `padStart`). */
const HEX_BYTES = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

/** The four hex digits of the low 16 bits of `value`. */
function hex16(value: number): string {
  return HEX_BYTES[(value >>> 8) & 0xff] + HEX_BYTES[value & 0xff];
}

// SHA-1 (FIPS 180-4 §6.1) of a 16-byte prefix and a name's UTF-8, the first four words of the digest. Buffers
// are reused: one hash at a time.
const W = new Int32Array(80);
const H = new Int32Array(5);
/** Room for the namespace, a name of 2 048 UTF-16 units as UTF-8, and the padding; a longer name gets its own. */
const BUFFER = new Uint8Array(64 * 98);

function sha1Words(prefix: Uint8Array, name: string): Int32Array {
  const room = prefix.length + name.length * 3 + 9;
  const padded = room <= BUFFER.length ? BUFFER : new Uint8Array(room + 64);
  padded.set(prefix);
  const length = prefix.length + encoder.encodeInto(name, padded.subarray(prefix.length)).written;
  const end = Math.ceil((length + 9) / 64) * 64;
  padded.fill(0, length, end);
  padded[length] = 0x80;
  // A name's bit length fits in 32 bits: the high word of the 64-bit length stays zero.
  const bits = length * 8;
  padded[end - 4] = bits >>> 24;
  padded[end - 3] = bits >>> 16;
  padded[end - 2] = bits >>> 8;
  padded[end - 1] = bits;
  let h0 = 0x67452301;
  let h1 = 0xefcdab89 | 0;
  let h2 = 0x98badcfe | 0;
  let h3 = 0x10325476;
  let h4 = 0xc3d2e1f0 | 0;
  for (let offset = 0; offset < end; offset += 64) {
    for (let t = 0; t < 16; t++) {
      const i = offset + t * 4;
      W[t] = (padded[i] << 24) | (padded[i + 1] << 16) | (padded[i + 2] << 8) | padded[i + 3];
    }
    for (let t = 16; t < 80; t++) {
      const x = W[t - 3] ^ W[t - 8] ^ W[t - 14] ^ W[t - 16];
      W[t] = (x << 1) | (x >>> 31);
    }
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    // The four rounds of twenty steps, each with its own function and constant (a branch per step costs more).
    for (let t = 0; t < 20; t++) {
      const next = (((a << 5) | (a >>> 27)) + ((b & c) | (~b & d)) + 0x5a827999 + e + W[t]) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = next;
    }
    for (let t = 20; t < 40; t++) {
      const next = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + 0x6ed9eba1 + e + W[t]) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = next;
    }
    for (let t = 40; t < 60; t++) {
      const next = (((a << 5) | (a >>> 27)) + ((b & c) | (b & d) | (c & d)) + (0x8f1bbcdc | 0) + e + W[t]) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = next;
    }
    for (let t = 60; t < 80; t++) {
      const next = (((a << 5) | (a >>> 27)) + (b ^ c ^ d) + (0xca62c1d6 | 0) + e + W[t]) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = next;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
  }
  H[0] = h0;
  H[1] = h1;
  H[2] = h2;
  H[3] = h3;
  H[4] = h4;
  return H;
}
