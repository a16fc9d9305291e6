const encoder = new TextEncoder();

/**
 * The key a stored URL is found by (`subscriptions.url_key`): the first 48 bits of SHA-256 of its exact UTF-8
 * text, as an integer. A lookup compares the URL itself too, so a collision costs a table read, never a wrong
 * answer; a cryptographic hash keeps an account from crafting thousands of colliding URLs to make its own
 * lookups read them all.
 *
 * Computed here, synchronously, rather than by `crypto.subtle.digest`: every subscription write computes one,
 * and the promise of a Web Crypto call per bulk operation cost more than the hash (isolate CPU of 100 adds
 * went from 2.4 to 6 times one add); a general-purpose library took 17 µs a key. A property test holds this to
 * Web Crypto's SHA-256 (test/url-key.test.ts).
 */
export function urlKey(url: string): number {
  const digest = sha256Words(url);
  return (digest[0] >>> 0) * 2 ** 16 + (digest[1] >>> 16);
}

// SHA-256 (FIPS 180-4), the first two words of the digest only. Buffers are reused: one hash at a time.
const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);
const INITIAL = new Int32Array([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);
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
