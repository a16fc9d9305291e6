import type { Context } from "hono";
import type { AppEnv } from "../env";

/**
 * The failed-authentication limit (docs/API.md §15), for every scheme (bearer tokens on /v1, HTTP Basic
 * with app passwords on the gpodder paths). A failure is always answered 401, never 429: a client with an
 * expired token must learn to refresh it, and valid credentials are always served. What the limit buys is
 * cheaper refusals: once an address is over it (AUTH_FAILURE_RATE_LIMITER), credentials that already failed
 * are answered from a bounded per-isolate cache, without verifying them again (no crypto work for a
 * client that repeats a bad token).
 */

/** The Rate Limiting binding's longest period: an address stays "over the limit" this long after it was found so. */
const FAILURE_WINDOW_MS = 60_000;
/** Entries per isolate in each cache below; a few hundred bytes each. */
const MAX_ENTRIES = 1000;
/** Longer credentials are not remembered (they are verified every time), so the cache stays under ~4 MB. */
const MAX_REMEMBERED_CREDENTIAL_LENGTH = 2048;

/** Addresses (failure keys) found over the limit, until when. */
const overLimitUntil = new Map<string, number>();
/** Credentials (scheme and value) that failed for a lasting reason: their detail, until when they are trusted. */
const failedCredentials = new Map<string, { detail: string; until: number }>();

/** Inserts with the oldest entry making room: the bound holds whatever clients send. */
function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  if (map.size >= MAX_ENTRIES) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const HEXTET = /^[0-9a-f]{1,4}$/;

function ipv4Octets(text: string): number[] | undefined {
  const match = IPV4.exec(text);
  if (!match) return undefined;
  const octets = match.slice(1).map(Number);
  return octets.every((octet) => octet <= 255) ? octets : undefined;
}

/** The eight 16-bit groups of an IPv6 address in any RFC 4291 text form (`::`, zero-padding, case, a dotted tail). */
function ipv6Groups(text: string): number[] | undefined {
  let address = text.toLowerCase();
  const zone = address.indexOf("%");
  if (zone >= 0) address = address.slice(0, zone);
  let tail: number[] = [];
  if (address.includes(".")) {
    const lastColon = address.lastIndexOf(":");
    const octets = ipv4Octets(address.slice(lastColon + 1));
    if (lastColon < 0 || !octets) return undefined;
    tail = [(octets[0] << 8) | octets[1], (octets[2] << 8) | octets[3]];
    address = address.slice(0, lastColon + 1);
    if (!address.endsWith("::")) address = address.slice(0, -1);
  }
  const halves = address.split("::");
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string) => (half === "" ? [] : half.split(":"));
  const head = groupsOf(halves[0]);
  const rest = halves.length === 2 ? groupsOf(halves[1]) : [];
  if (![...head, ...rest].every((group) => HEXTET.test(group))) return undefined;
  const compressed = 8 - head.length - rest.length - tail.length;
  if (halves.length === 2 ? compressed < 1 : compressed !== 0) return undefined;
  const hex = (group: string) => Number.parseInt(group, 16);
  return [...head.map(hex), ...Array<number>(compressed).fill(0), ...rest.map(hex), ...tail];
}

/**
 * The key an address is counted under: an IPv4 address as is, an IPv6 address by its prefix of `ipv6Bits` (a
 * multiple of 8; one subscriber line or host usually holds a whole /64, often a /56, so counting single
 * addresses would not limit anyone), an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) as its IPv4 address.
 * Text that is no address (local tools send none: "unknown") is its own key.
 */
export function addressKey(address: string, ipv6Bits: 56 | 64): string {
  const v4 = ipv4Octets(address);
  if (v4) return v4.join(".");
  const groups = ipv6Groups(address);
  if (!groups) return address.toLowerCase();
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join(".");
  }
  const kept = groups.slice(0, 4);
  if (ipv6Bits === 56) kept[3] &= 0xff00;
  return `${kept.map((group) => group.toString(16)).join(":")}::/${ipv6Bits}`;
}

/** The key an address's failures are counted under (docs/API.md §15): an IPv6 address by its /64. */
export function failureKeyOfAddress(address: string): string {
  return addressKey(address, 64);
}

/** The failure key of the request's client (CF-Connecting-IP, as Cloudflare saw it). */
export function failureKeyOf(c: Context<AppEnv>): string {
  return failureKeyOfAddress(c.req.header("CF-Connecting-IP") ?? "unknown");
}

/** True while the address of this failure key (failureKeyOf) is known, in this isolate, to be over the limit. */
export function isOverFailureLimit(key: string, now = Date.now()): boolean {
  return (overLimitUntil.get(key) ?? 0) > now;
}

/**
 * The detail of the earlier failure of exactly these credentials, when the client's address is over the
 * limit and they failed for a lasting reason: the 401 to answer without verifying them again.
 */
export function knownFailure(c: Context<AppEnv>, credentials: string, now = Date.now()): string | undefined {
  if (!isOverFailureLimit(failureKeyOf(c), now)) return undefined;
  const failed = failedCredentials.get(credentials);
  return failed && failed.until > now ? failed.detail : undefined;
}

/**
 * Counts one failed authentication against the client's address. `lasting`: the same credentials would fail
 * the same way on the next request (a bad signature, an expiry passed), so they may be answered from the
 * cache while the address is over the limit; a failure that time or a key rotation can cure (`nbf` ahead, an
 * unknown key) is never remembered. `credentials` names the scheme too (the Authorization header value).
 */
export async function recordFailure(
  c: Context<AppEnv>,
  credentials: string,
  failure: { detail: string; lasting: boolean },
): Promise<void> {
  const now = Date.now();
  const key = failureKeyOf(c);
  if (failure.lasting && credentials.length <= MAX_REMEMBERED_CREDENTIAL_LENGTH) {
    remember(failedCredentials, credentials, { detail: failure.detail, until: now + FAILURE_WINDOW_MS });
  }
  const { success } = await c.env.AUTH_FAILURE_RATE_LIMITER.limit({ key });
  if (!success) remember(overLimitUntil, key, now + FAILURE_WINDOW_MS);
  // docs/README-ops.md, "What to watch": the scheme and the reason, never the credentials or the address.
  console.warn(
    JSON.stringify({
      level: "warn",
      event: "auth_failed",
      requestId: c.get("requestId"),
      scheme: schemeOf(credentials),
      reason: failure.detail,
      overLimit: !success,
    }),
  );
}

/** What kind of credentials failed, for the log: `bearer`, `basic`, `session` (the gpodder cookie) or `other`. */
function schemeOf(credentials: string): string {
  if (credentials.startsWith("sessionid=")) return "session";
  const scheme = credentials.slice(0, credentials.search(/\s|$/)).toLowerCase();
  return scheme === "bearer" || scheme === "basic" ? scheme : "other";
}
