/**
 * Public keys for asymmetric tokens: a JSON Web Key Set, inline (`AUTH_JWKS`) or fetched from the identity
 * provider (`AUTH_JWKS_URL`). A fetched set is kept per isolate, so verification rarely waits on the network,
 * and anything that keeps the keys out of reach is `KeySetUnavailable` (a 503), never a rejected token.
 */

export const ASYMMETRIC_ALGORITHMS = ["RS256", "ES256", "EdDSA"] as const;
export type AsymmetricAlgorithm = (typeof ASYMMETRIC_ALGORITHMS)[number];

export function isAsymmetricAlgorithm(alg: unknown): alg is AsymmetricAlgorithm {
  return ASYMMETRIC_ALGORITHMS.includes(alg as AsymmetricAlgorithm);
}

/** WebCrypto import parameters per JWS algorithm (RFC 7518, RFC 8037). */
const IMPORT_PARAMS: Record<AsymmetricAlgorithm, SubtleCryptoImportKeyAlgorithm> = {
  RS256: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
  ES256: { name: "ECDSA", namedCurve: "P-256" },
  EdDSA: { name: "Ed25519" },
};

/** How long a fetched set is used without asking the identity provider again. */
export const KEY_SET_FRESH_MS = 5 * 60_000;
/** After a failed refresh, a set at most this old still verifies tokens whose key it holds (an outage logs no one out). */
export const KEY_SET_MAX_STALE_MS = 60 * 60_000;
/** After a failed fetch, no new attempt for this long: requests answer at once instead of each waiting on a dead provider. */
export const KEY_SET_RETRY_AFTER_FAILURE_MS = 10_000;
/** A token naming a key the set lacks triggers at most one refetch (key rotation) per this window. */
export const KEY_SET_UNKNOWN_KID_REFETCH_MS = 30_000;
/** The longest a fetch of the set may take, body included. */
export const KEY_SET_FETCH_TIMEOUT_MS = 5_000;

/** The identity provider's keys cannot be had right now (`message` says why, for logs): 503 with Retry-After, never 401. */
export class KeySetUnavailable extends Error {
  constructor(
    reason: string,
    readonly retryAfterSeconds: number,
  ) {
    super(reason);
    this.name = "KeySetUnavailable";
  }
}

type SigningJwk = JsonWebKey & { kid: string };

/** One version of a key set: its signing keys by `kid`, each imported at most once per algorithm. */
export class KeySet {
  private readonly imported = new Map<string, CryptoKey>();

  private constructor(private readonly jwks: ReadonlyMap<string, SigningJwk>) {}

  /**
   * Reads a JWKS document (`{"keys": [...]}`, each key an object with a `kty`); undefined when the value
   * is not one. Keys without a `kid`, or meant for encryption, cannot verify a token and are left out.
   */
  static parse(document: unknown): KeySet | undefined {
    if (document === null || typeof document !== "object") return undefined;
    const { keys } = document as { keys?: unknown };
    if (!Array.isArray(keys)) return undefined;
    const byKid = new Map<string, SigningJwk>();
    for (const key of keys) {
      if (key === null || typeof key !== "object" || typeof (key as JsonWebKey).kty !== "string") return undefined;
      const { kid, use } = key as { kid?: unknown; use?: unknown };
      if (typeof kid !== "string" || (use !== undefined && use !== "sig") || byKid.has(kid)) continue;
      byKid.set(kid, key as SigningJwk);
    }
    return new KeySet(byKid);
  }

  has(kid: string): boolean {
    return this.jwks.has(kid);
  }

  /** The key `kid` as a CryptoKey for `alg`; undefined when the set has no such key or it is not an `alg` key. */
  async key(kid: string, alg: AsymmetricAlgorithm): Promise<CryptoKey | undefined> {
    const jwk = this.jwks.get(kid);
    if (!jwk || (jwk.alg !== undefined && jwk.alg !== alg)) return undefined;
    const cacheKey = `${alg} ${kid}`;
    const cached = this.imported.get(cacheKey);
    if (cached) return cached;
    let key: CryptoKey;
    try {
      key = await crypto.subtle.importKey("jwk", jwk, IMPORT_PARAMS[alg], false, ["verify"]);
    } catch {
      return undefined; // e.g. an EC key named by an RS256 token
    }
    this.imported.set(cacheKey, key);
    return key;
  }
}

/** Where the verifier gets the key set for a token's `kid`. */
export interface KeySource {
  /** The set in use now, without any fetch; undefined when it must be (re)loaded first. */
  current(now: number): KeySet | undefined;
  /** The set to verify a token naming `kid` with, fetching it when needed. */
  forKid(kid: string, now: number): Promise<KeySet>;
}

/** `AUTH_JWKS`: a set given in the configuration, never fetched. */
export class InlineKeySource implements KeySource {
  constructor(private readonly keys: KeySet) {}

  current(): KeySet {
    return this.keys;
  }

  async forKid(): Promise<KeySet> {
    return this.keys;
  }
}

function unavailable(reason: string): KeySetUnavailable {
  return new KeySetUnavailable(reason, KEY_SET_RETRY_AFTER_FAILURE_MS / 1000);
}

/** Fetches and reads the set; any failure, a timeout included, is `KeySetUnavailable`. */
async function fetchKeySet(url: string, timeoutMs: number): Promise<KeySet> {
  const abort = new AbortController();
  let timer: ReturnType<typeof setTimeout> | null = null;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort.abort();
      reject(unavailable(`the identity provider did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  const read = async () => {
    let response: Response;
    try {
      response = await fetch(url, {
        signal: abort.signal,
        headers: { Accept: "application/jwk-set+json, application/json" },
      });
    } catch {
      throw unavailable("the identity provider could not be reached");
    }
    if (!response.ok) throw unavailable(`the identity provider answered ${response.status}`);
    let document: unknown;
    try {
      document = JSON.parse(await response.text());
    } catch {
      throw unavailable("the identity provider's answer is not JSON");
    }
    const keys = KeySet.parse(document);
    if (!keys) throw unavailable("the identity provider's answer is not a JSON Web Key Set");
    return keys;
  };
  const reading = read();
  reading.catch(() => {}); // once the timeout has answered, a late failure has no one to tell
  try {
    return await Promise.race([reading, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `AUTH_JWKS_URL`: the identity provider's set, kept per isolate. Fresh for `KEY_SET_FRESH_MS`; refetched
 * early when a token names a key the set lacks (rotation), at most once per `KEY_SET_UNKNOWN_KID_REFETCH_MS`.
 * After a failure no fetch is tried for `KEY_SET_RETRY_AFTER_FAILURE_MS`, and meanwhile the last good set,
 * until it is `KEY_SET_MAX_STALE_MS` old, still serves the tokens whose key it holds. In-flight fetches are
 * not shared between requests: Workers ties a fetch to the request that made it.
 */
export class RemoteKeySource implements KeySource {
  private loaded: { keys: KeySet; fetchedAt: number } | undefined;
  private failedAt = Number.NEGATIVE_INFINITY;
  private unknownKidRefetchAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly url: string,
    private readonly timeoutMs: number,
  ) {}

  current(now: number): KeySet | undefined {
    return this.loaded && now - this.loaded.fetchedAt < KEY_SET_FRESH_MS ? this.loaded.keys : undefined;
  }

  async forKid(kid: string, now: number): Promise<KeySet> {
    const fresh = this.current(now);
    if (fresh && (fresh.has(kid) || now - this.unknownKidRefetchAt < KEY_SET_UNKNOWN_KID_REFETCH_MS)) return fresh;
    if (fresh) this.unknownKidRefetchAt = now;
    try {
      return await this.refresh(now);
    } catch (err) {
      const stale = this.loaded;
      if (err instanceof KeySetUnavailable && stale?.keys.has(kid) && now - stale.fetchedAt < KEY_SET_MAX_STALE_MS) {
        return stale.keys;
      }
      throw err;
    }
  }

  private async refresh(now: number): Promise<KeySet> {
    const retryAfterMs = this.failedAt + KEY_SET_RETRY_AFTER_FAILURE_MS - now;
    if (retryAfterMs > 0) {
      throw new KeySetUnavailable("the last fetch failed moments ago", Math.ceil(retryAfterMs / 1000));
    }
    try {
      const keys = await fetchKeySet(this.url, this.timeoutMs);
      this.loaded = { keys, fetchedAt: Date.now() };
      return keys;
    } catch (err) {
      if (err instanceof KeySetUnavailable) this.failedAt = Date.now();
      throw err;
    }
  }
}
