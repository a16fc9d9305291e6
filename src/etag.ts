import type { Context } from "hono";

/**
 * Entity tags for user data. A tag is `"<key hash>-<version>"`: the version is the user's write
 * counter (user_stats.version, bumped by every write), and the key hash binds the tag to one user and
 * one resource URL, so a tag copied from another URL or account never matches.
 */

/** FNV-1a, 32 bits: cheap and synchronous; it only has to tell resources apart, not resist attackers. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}

export function entityTag(userId: string, resourceKey: string, version: number): string {
  return `"${fnv1a(`${userId}\n${resourceKey}`)}-${version}"`;
}

export interface Precondition {
  /** `If-None-Match: *`: any current representation satisfies it. */
  any: boolean;
  /** The version of the client's copy, when it sent one of our tags for this resource. */
  version: number | null;
}

/** Reads If-None-Match (weak comparison, as RFC 9110 requires for it) against this user's resource. */
export function parseIfNoneMatch(header: string | undefined, userId: string, resourceKey: string): Precondition {
  if (header === undefined) return { any: false, version: null };
  if (header.trim() === "*") return { any: true, version: null };
  const prefix = `"${fnv1a(`${userId}\n${resourceKey}`)}-`;
  for (const raw of header.split(",")) {
    const tag = raw.trim().replace(/^W\//, "");
    if (!tag.startsWith(prefix) || !tag.endsWith('"')) continue;
    const version = tag.slice(prefix.length, -1);
    if (/^[0-9]{1,15}$/.test(version)) return { any: false, version: Number(version) };
  }
  return { any: false, version: null };
}

/** User data may be kept by the client, but must be revalidated (ETag) before each use. */
export const REVALIDATE = "private, no-cache";

/** The 304 for a client whose copy is current: the tag again, and the caching rule. */
export function notModified(c: Context, etag: string): Response {
  return c.body(null, 304, { ETag: etag, "Cache-Control": REVALIDATE });
}
