import { BoundedMap } from "../bounded-map";
import type { CredentialOwner } from "../db/app-passwords";

/**
 * gpodder credentials this isolate verified recently, so most requests cost no D1 round trip for
 * authentication (docs/API.md §14). An entry lives at most VERIFIED_FOR_MS: a deleted app password, and
 * every session opened with it, stop working within that time everywhere; in the isolate that deleted or
 * logged out, at once (`forget`). Bounded: the oldest entry makes room for a new one.
 */
export const VERIFIED_FOR_MS = 60_000;
export const MAX_VERIFIED_CREDENTIALS = 1000;

export interface VerifiedCredential extends CredentialOwner {
  username: string;
  sessionHash: string;
  /**
   * The session cookie: for a Basic credential, the one handed out when it was verified, handed out again; for a
   * session, the cookie itself (set again when its use is recorded).
   */
  sessionCookie?: string;
  expiresAt: number;
}

export class VerifiedCredentials {
  private readonly entries: BoundedMap<string, VerifiedCredential>;

  constructor(maxEntries = MAX_VERIFIED_CREDENTIALS) {
    this.entries = new BoundedMap(maxEntries);
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string, nowMs: number): VerifiedCredential | undefined {
    const entry = this.entries.get(key);
    if (entry && nowMs >= entry.expiresAt) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  set(key: string, entry: Omit<VerifiedCredential, "expiresAt">, nowMs: number): void {
    this.entries.set(key, { ...entry, expiresAt: nowMs + VERIFIED_FOR_MS });
  }

  /** Drops every entry that matches (a deleted app password, an ended session). */
  forget(matches: (entry: VerifiedCredential) => boolean): void {
    for (const [key, entry] of this.entries) if (matches(entry)) this.entries.delete(key);
  }
}

/** The isolate's one cache: Basic credentials keyed by `basic:<username>:<password hash>`, sessions by `session:<hash>`. */
export const verifiedCredentials = new VerifiedCredentials();
