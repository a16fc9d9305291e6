/**
 * Secrets sealed (AES-256-GCM) under a key derived (HKDF-SHA-256) from another secret that is never stored:
 * what lets a row hold something only the holder of that other secret can read (the Login Flow's app
 * password, nextcloud/login-flow.ts). Sealed text is base64url of a random 96-bit IV and the ciphertext with
 * its tag; `context` is authenticated with it (additional data), so a sealed value moved to another context
 * does not open.
 */

const encoder = new TextEncoder();
const IV_BYTES = 12;
const KEY_BITS = 256;

function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    return Uint8Array.from(atob(text.replaceAll("-", "+").replaceAll("_", "/")), (ch) => ch.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/**
 * 256 key bits derived from `secret` for one `purpose` (HKDF's info, so keys of different purposes are
 * independent). The secret holds at least 128 random bits: no salt or stretching is needed.
 */
export async function derivedKey(secret: string, purpose: string): Promise<Uint8Array> {
  const material = await crypto.subtle.importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode(purpose) },
    material,
    KEY_BITS,
  );
  return new Uint8Array(bits);
}

function aesKey(key: Uint8Array, usage: "encrypt" | "decrypt"): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", key, "AES-GCM", false, [usage]);
}

export async function seal(key: Uint8Array, plaintext: Uint8Array, context: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const ciphertext = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: encoder.encode(context) },
    await aesKey(key, "encrypt"),
    plaintext,
  );
  const sealed = new Uint8Array(IV_BYTES + ciphertext.byteLength);
  sealed.set(iv);
  sealed.set(new Uint8Array(ciphertext), IV_BYTES);
  return base64url(sealed);
}

/** The plaintext; undefined when `sealed` was not sealed under this key and context (or was altered). */
export async function unseal(key: Uint8Array, sealed: string, context: string): Promise<Uint8Array | undefined> {
  const bytes = fromBase64url(sealed);
  if (bytes === undefined || bytes.byteLength <= IV_BYTES) return undefined;
  try {
    const plaintext = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: bytes.subarray(0, IV_BYTES), additionalData: encoder.encode(context) },
      await aesKey(key, "decrypt"),
      bytes.subarray(IV_BYTES),
    );
    return new Uint8Array(plaintext);
  } catch {
    return undefined;
  }
}
