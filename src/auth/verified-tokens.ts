import { BoundedMap } from "../bounded-map";
import type { KeySet } from "./key-set";

/** What a successful verification established about one exact token. */
export interface VerifiedToken {
  userId: string;
  /** `exp`, seconds since the epoch: the entry is never used at or after it. */
  expiresAt: number;
  /** `nbf`, when the token has one: the entry is never used before it. */
  notBefore?: number;
  /** The key set version that verified an asymmetric token; a refreshed set re-verifies it. */
  keySet?: KeySet;
}

/** Entries per isolate; at a few hundred bytes each, well within an isolate's memory. */
export const MAX_VERIFIED_TOKENS = 1000;

/**
 * Tokens that passed verification, keyed by the exact token string, so a client that sends the same
 * token on every request pays for one signature check per isolate. Filled only after every check
 * passed; an entry is never used outside its token's `nbf`..`exp` window. Bounded: the oldest entry
 * makes room for a new one.
 */
export class VerifiedTokens {
  private readonly entries: BoundedMap<string, VerifiedToken>;

  constructor(maxEntries = MAX_VERIFIED_TOKENS) {
    this.entries = new BoundedMap(maxEntries);
  }

  get size(): number {
    return this.entries.size;
  }

  /** The token's entry while `nowSeconds` is inside its validity window. */
  get(token: string, nowSeconds: number): VerifiedToken | undefined {
    const entry = this.entries.get(token);
    if (!entry) return undefined;
    if (nowSeconds >= entry.expiresAt) {
      this.entries.delete(token);
      return undefined;
    }
    if (entry.notBefore !== undefined && nowSeconds < entry.notBefore) return undefined;
    return entry;
  }

  set(token: string, entry: VerifiedToken): void {
    this.entries.set(token, entry);
  }
}
