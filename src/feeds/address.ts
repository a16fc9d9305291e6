/**
 * Which URLs the service may fetch (docs/API.md §18): `http` and `https` only, and never a host on this machine or
 * its private networks, so a subscription cannot turn the feed round into a probe of the operator's network.
 * Checked on the subscription's URL and on every redirect target. Only IP literals can be checked here: a Worker
 * cannot resolve a name itself (on Cloudflare, fetch refuses to reach private addresses a name resolves to).
 */

/** IPv4 ranges never fetched: [first address, prefix length]. */
const PRIVATE_V4: readonly [string, number][] = [
  ["0.0.0.0", 8], // "this network", the unspecified address
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // shared address space (carrier-grade NAT)
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
];

function v4Number(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((part) => /^\d{1,3}$/.test(part) && Number(part) <= 255)) return undefined;
  return parts.reduce((value, part) => value * 256 + Number(part), 0);
}

function isPrivateV4(address: number): boolean {
  return PRIVATE_V4.some(([first, bits]) => {
    const size = 2 ** (32 - bits);
    return Math.floor(address / size) === Math.floor((v4Number(first) as number) / size);
  });
}

/**
 * The eight 16-bit groups of an IPv6 literal as the URL parser writes it: compressed hex, never a dotted IPv4 tail
 * (`[::ffff:127.0.0.1]` becomes `[::ffff:7f00:1]`), so nothing else needs reading.
 */
function v6Groups(text: string): number[] | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const parse = (half: string) => (half === "" ? [] : half.split(":").map((group) => Number.parseInt(group, 16)));
  const head = parse(halves[0]);
  const rest = halves.length === 2 ? parse(halves[1]) : [];
  const zeros = halves.length === 2 ? 8 - head.length - rest.length : 0;
  if (zeros < 0) return undefined;
  const groups = [...head, ...Array<number>(zeros).fill(0), ...rest];
  return groups.length === 8 && groups.every((group) => Number.isInteger(group) && group >= 0 && group <= 0xffff)
    ? groups
    : undefined;
}

function isPrivateV6(groups: number[]): boolean {
  const [a, b, c, d, e, f, g, h] = groups;
  const zerosTo = (n: number) => groups.slice(0, n).every((group) => group === 0);
  if (zerosTo(8)) return true; // ::, unspecified
  if (zerosTo(7) && h === 1) return true; // ::1, loopback
  if ((a & 0xfe00) === 0xfc00) return true; // fc00::/7, unique local
  if ((a & 0xffc0) === 0xfe80) return true; // fe80::/10, link-local
  if ((a & 0xff00) === 0xff00) return true; // ff00::/8, multicast
  const embedded = g * 65536 + h;
  if (zerosTo(5) && f === 0xffff) return isPrivateV4(embedded); // ::ffff:0:0/96, IPv4-mapped
  if (a === 0x64 && b === 0xff9b && c === 0 && d === 0 && e === 0 && f === 0) return isPrivateV4(embedded); // NAT64
  if (zerosTo(6)) return true; // ::/96, the deprecated IPv4-compatible form
  return false;
}

/** True when `hostname` (as `URL.hostname` gives it) names this machine or a private network. */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (host.startsWith("[") && host.endsWith("]")) {
    const groups = v6Groups(host.slice(1, -1).replace(/%.*$/, ""));
    return groups === undefined || isPrivateV6(groups);
  }
  const v4 = v4Number(host);
  return v4 !== undefined && isPrivateV4(v4);
}

/** Why `url` is not fetched, or undefined when it may be. */
export function refusedFetchTarget(url: URL, allowPrivate: boolean): string | undefined {
  if (url.protocol !== "http:" && url.protocol !== "https:") return `the scheme ${url.protocol} is not fetched`;
  if (url.username !== "" || url.password !== "") return "a URL with credentials is not fetched";
  if (!allowPrivate && isPrivateHost(url.hostname)) return "a private or loopback address is not fetched";
  return undefined;
}
