const encoder = new TextEncoder();

/**
 * The key a stored URL is found by (`subscriptions.url_key`): the first 48 bits of SHA-256 of its exact UTF-8
 * text, as an integer. A lookup compares the URL itself too, so a collision costs a table read, never a wrong
 * answer; a cryptographic hash keeps an account from crafting thousands of colliding URLs to make its own
 * lookups read them all.
 *
 * Computed here, synchronously, rather than by `crypto.subtle.digest`: every subscription write computes one,
 * and the promise of a Web Crypto call per bulk operation cost more than the hash (isolate CPU of 100 adds
 * went from 2.4 to 6 times one add); a general-purpose library took 17 µs a key, and @noble/hashes' `sha256` (with
 * its `sha1` for podcast-guid.ts) made 100 adds 30 % and an OPML import 43 % slower (bench/README.md). A property
 * test holds this to Web Crypto's SHA-256 (test/url-key.test.ts).
 */
export function urlKey(url: string): number {
  const digest = sha256Words(url);
  return (digest[0] >>> 0) * 2 ** 16 + (digest[1] >>> 16);
}

// SHA-256 (FIPS 180-4), the first two words of the digest only. Buffers are reused: one hash at a time.
// The constants: the first 32 bits of the fractional parts of the cube roots (K) and square roots (the initial
// hash) of the first primes (FIPS 180-4 §4.2.2, §5.3.3), computed rather than spelled out (bundle size).
const PRIMES: number[] = [];
for (let n = 2; PRIMES.length < 64; n++) if (PRIMES.every((p) => n % p !== 0)) PRIMES.push(n);
const fractionBits = (x: number) => ((x - Math.floor(x)) * 2 ** 32) | 0;
const K = Int32Array.from(PRIMES, (p) => fractionBits(Math.cbrt(p)));
const INITIAL = Int32Array.from(PRIMES.slice(0, 8), (p) => fractionBits(Math.sqrt(p)));
const W = new Int32Array(64);
const H = new Int32Array(8);
/** Room for a feedUrl of 2048 bytes and its padding; a longer text gets a buffer of its own. */
const BUFFER = new Uint8Array(64 * 34);

function sha256Words(text: string): Int32Array {
  H.set(INITIAL);
  // The UTF-8 text, the 0x80 byte, zeros, and its length in bits (big-endian, 64 bits), in whole 64-byte blocks.
  const padded = text.length * 3 + 9 <= BUFFER.length ? BUFFER : new Uint8Array(text.length * 3 + 73);
  const length = encoder.encodeInto(text, padded).written;
  const end = Math.ceil((length + 9) / 64) * 64;
  padded.fill(0, length, end);
  padded[length] = 0x80;
  // A URL's bit length fits in 32 bits: the high word of the 64-bit length stays zero.
  const bits = length * 8;
  padded[end - 4] = bits >>> 24;
  padded[end - 3] = bits >>> 16;
  padded[end - 2] = bits >>> 8;
  padded[end - 1] = bits;
  for (let offset = 0; offset < end; offset += 64) {
    for (let t = 0; t < 16; t++) {
      const i = offset + t * 4;
      W[t] = (padded[i] << 24) | (padded[i + 1] << 16) | (padded[i + 2] << 8) | padded[i + 3];
    }
    for (let t = 16; t < 64; t++) {
      const w15 = W[t - 15];
      const w2 = W[t - 2];
      const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
      const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
      W[t] = (W[t - 16] + s0 + W[t - 7] + s1) | 0;
    }
    let a = H[0];
    let b = H[1];
    let c = H[2];
    let d = H[3];
    let e = H[4];
    let f = H[5];
    let g = H[6];
    let h = H[7];
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[t] + W[t]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    H[0] += a;
    H[1] += b;
    H[2] += c;
    H[3] += d;
    H[4] += e;
    H[5] += f;
    H[6] += g;
    H[7] += h;
  }
  return H;
}
