import { verify } from "hono/jwt";
import { decodeBase64Url } from "hono/utils/encode";
import type { SignatureAlgorithm } from "hono/utils/jwt/jwa";
import { decodeHeader } from "hono/utils/jwt/jwt";
import { type JWTPayload, JwtTokenIssuedAt, JwtTokenNotBefore } from "hono/utils/jwt/types";
import { isAsymmetricAlgorithm, type KeySet, type KeySource } from "./key-set";
import { type VerifiedToken, VerifiedTokens } from "./verified-tokens";

export const MAX_USER_ID_LENGTH = 255;

/**
 * A token that does not authenticate anyone (`message` is the detail the 401 carries). `lasting`: the same
 * token fails the same way on every later request (false when time or a key rotation can cure it: `nbf` or
 * `iat` ahead of the clock, a key the set does not hold yet), so its failure may be remembered.
 */
export class InvalidToken extends Error {
  constructor(
    detail = "The bearer token is invalid or expired.",
    readonly lasting = true,
  ) {
    super(detail);
    this.name = "InvalidToken";
  }
}

/** Claims every token must match when configured (`AUTH_ISSUER`, `AUTH_AUDIENCE`). */
export interface ExpectedClaims {
  iss?: string;
  aud?: string;
}

/** The signing material of one configuration: the HS256 secret's key, and/or a source of public keys. */
export interface VerificationKeys {
  secret?: CryptoKey;
  keys?: KeySource;
}

/** Imports an HS256 secret once; Hono's `verify` takes the CryptoKey as is. */
export function importHmacKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "verify",
  ]);
}

/** Refuses malformed UTF-8 (`fatal`) and keeps a byte order mark in the text (`ignoreBOM`) so that it can be refused. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The header and payload segments must be base64url of valid UTF-8 without a byte order mark (docs/API.md §15).
 * Hono decodes them leniently (a malformed byte becomes U+FFFD, a leading BOM is dropped), so two different
 * signed byte strings could otherwise read as the same claims, and so as the same user.
 */
function requireUtf8Segments(token: string): void {
  const segments = token.split(".");
  if (segments.length !== 3) throw new InvalidToken();
  for (const segment of segments.slice(0, 2)) {
    let bytes: Uint8Array;
    try {
      bytes = decodeBase64Url(segment);
    } catch {
      throw new InvalidToken();
    }
    let text: string;
    try {
      text = strictUtf8.decode(bytes);
    } catch {
      throw new InvalidToken("The bearer token's header or payload is not valid UTF-8.");
    }
    if (text.startsWith("\ufeff")) throw new InvalidToken("The bearer token's header or payload starts with a BOM.");
  }
}

function userIdOf(payload: JWTPayload): string {
  const { sub } = payload;
  if (typeof sub !== "string" || sub.length === 0 || sub.length > MAX_USER_ID_LENGTH) {
    throw new InvalidToken(
      `The bearer token's sub must be a non-empty string of at most ${MAX_USER_ID_LENGTH} characters.`,
    );
  }
  // A JSON escape can name a lone surrogate (`"\ud800"`), which D1 would store as U+FFFD: two subs, one user.
  if (!sub.isWellFormed()) throw new InvalidToken("The bearer token's sub holds a lone surrogate.");
  return sub;
}

/**
 * Verifies bearer tokens for one configuration (docs/API.md §1) with Hono's `verify`: HS256 with the secret,
 * RS256/ES256/EdDSA with the key set; with both configured, the token's `alg` picks, and each path
 * accepts only its own algorithms. A token that passed every check is remembered (`VerifiedTokens`),
 * so the same token costs one signature check per isolate.
 */
export class TokenVerifier {
  private readonly verified = new VerifiedTokens();

  constructor(
    private readonly signing: VerificationKeys,
    private readonly claims: ExpectedClaims,
  ) {}

  /** The token's user (`sub`); throws `InvalidToken`, or `KeySetUnavailable` when the keys cannot be had. */
  async userId(token: string, now = Date.now()): Promise<string> {
    const known = this.verified.get(token, Math.floor(now / 1000));
    if (known && (known.keySet === undefined || known.keySet === this.signing.keys?.current(now))) {
      return known.userId;
    }
    const entry = await this.verify(token, now);
    this.verified.set(token, entry);
    return entry.userId;
  }

  private async verify(token: string, now: number): Promise<VerifiedToken> {
    requireUtf8Segments(token);
    let header: { alg?: unknown; kid?: unknown };
    try {
      header = decodeHeader(token);
    } catch {
      throw new InvalidToken();
    }
    const { secret, keys } = this.signing;
    if (secret && (header.alg === "HS256" || !keys)) return this.entry(await this.check(token, secret, "HS256"));
    if (!keys || !isAsymmetricAlgorithm(header.alg) || typeof header.kid !== "string") throw new InvalidToken();
    const keySet = await keys.forKid(header.kid, now);
    const key = await keySet.key(header.kid, header.alg);
    if (!key) throw new InvalidToken(undefined, false);
    return this.entry(await this.check(token, key, header.alg), keySet);
  }

  /** Signature, `alg`, `exp`/`nbf`/`iat` and the configured `iss`/`aud`, all by Hono. */
  private async check(token: string, key: CryptoKey, alg: SignatureAlgorithm): Promise<JWTPayload> {
    try {
      return await verify(token, key, { alg, ...this.claims });
    } catch (err) {
      throw new InvalidToken(undefined, !(err instanceof JwtTokenNotBefore || err instanceof JwtTokenIssuedAt));
    }
  }

  /** The checks Hono leaves to us: `exp` is required here, and `sub` names the user. */
  private entry(payload: JWTPayload, keySet?: KeySet): VerifiedToken {
    if (typeof payload.exp !== "number") throw new InvalidToken("The bearer token has no expiry (exp).");
    const userId = userIdOf(payload);
    return { userId, expiresAt: payload.exp, notBefore: payload.nbf, keySet };
  }
}
