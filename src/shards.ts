import { userDigest } from "./user-digest";

/**
 * Users are spread over several D1 databases ("shards") by a bucket map. Every user belongs to one of
 * BUCKET_COUNT buckets, fixed by their id; the map (configuration, `SHARD_MAP`) gives each bucket one D1
 * binding. Every query is scoped by one user, so a request never needs more than the user's one database.
 * Moving buckets between databases changes the map, never a user's bucket.
 */
export const BUCKET_COUNT = 1024;

/** The binding that holds every bucket when no map is configured (single-database deployments). */
export const DEFAULT_SHARD = "DB";

/** The user's bucket: the first 4 bytes of SHA-256(user id), big-endian, modulo BUCKET_COUNT. */
export async function bucketOf(userId: string): Promise<number> {
  const digest = await userDigest(userId);
  return new DataView(digest.buffer, digest.byteOffset, digest.byteLength).getUint32(0, false) % BUCKET_COUNT;
}

/** The deployment's shard configuration is wrong: the worker refuses to serve data until it is fixed. */
export class ShardConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ShardConfigError";
  }
}

/** An inclusive range of buckets. */
export interface BucketRange {
  first: number;
  last: number;
}

/** A validated map: the binding name of every bucket, and the distinct names in order of first use. */
export interface ShardMap {
  /** `owners[bucket]` is the binding that holds the bucket. */
  readonly owners: readonly string[];
  readonly bindings: readonly string[];
}

const BINDING_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const RANGE = /^(\d{1,4})(?:-(\d{1,4}))?$/;

/** `first-last` or a single bucket `n`, inside 0..BUCKET_COUNT-1; `what` names the setting for the message. */
export function parseBucketRange(text: string, what: string): BucketRange {
  const match = RANGE.exec(text.trim());
  if (!match) throw new ShardConfigError(`${what}: "${text}" is not a bucket range (FIRST-LAST or one bucket).`);
  const first = Number(match[1]);
  const last = match[2] === undefined ? first : Number(match[2]);
  if (first > last) throw new ShardConfigError(`${what}: the range ${first}-${last} is reversed.`);
  if (last >= BUCKET_COUNT) {
    throw new ShardConfigError(`${what}: the range ${first}-${last} reaches past bucket ${BUCKET_COUNT - 1}.`);
  }
  return { first, last };
}

/** Comma-separated bucket ranges (`512-767,1000`) as a set of buckets; empty text is the empty set. */
export function parseBucketSet(text: string, what: string): ReadonlySet<number> {
  const buckets = new Set<number>();
  for (const part of splitList(text)) {
    const { first, last } = parseBucketRange(part, what);
    for (let bucket = first; bucket <= last; bucket++) buckets.add(bucket);
  }
  return buckets;
}

function splitList(text: string): string[] {
  return text
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "");
}

/**
 * Parses `BINDING:FIRST-LAST[,BINDING:FIRST-LAST...]` (a binding may own several ranges). Every bucket
 * must be mapped exactly once. Empty text maps every bucket to DEFAULT_SHARD.
 */
export function parseShardMap(text: string): ShardMap {
  const owners: (string | undefined)[] = new Array(BUCKET_COUNT).fill(undefined);
  const entries = splitList(text);
  if (entries.length === 0) return { owners: owners.fill(DEFAULT_SHARD) as string[], bindings: [DEFAULT_SHARD] };
  const bindings: string[] = [];
  for (const entry of entries) {
    const colon = entry.indexOf(":");
    const binding = colon < 0 ? "" : entry.slice(0, colon).trim();
    if (!BINDING_NAME.test(binding)) {
      throw new ShardConfigError(`SHARD_MAP: "${entry}" is not BINDING:FIRST-LAST.`);
    }
    const { first, last } = parseBucketRange(entry.slice(colon + 1), "SHARD_MAP");
    for (let bucket = first; bucket <= last; bucket++) {
      const owner = owners[bucket];
      if (owner !== undefined) {
        throw new ShardConfigError(`SHARD_MAP: bucket ${bucket} is mapped twice (${owner} and ${binding}).`);
      }
      owners[bucket] = binding;
    }
    if (!bindings.includes(binding)) bindings.push(binding);
  }
  const unmapped = owners.indexOf(undefined);
  if (unmapped >= 0) throw new ShardConfigError(`SHARD_MAP: bucket ${unmapped} is not mapped to any database.`);
  return { owners: owners as string[], bindings };
}

/** The map as `SHARD_MAP` text, one entry per run of consecutive buckets with the same binding. */
export function formatShardMap(map: ShardMap): string {
  const entries: string[] = [];
  let start = 0;
  for (let bucket = 1; bucket <= BUCKET_COUNT; bucket++) {
    if (bucket === BUCKET_COUNT || map.owners[bucket] !== map.owners[start]) {
      entries.push(`${map.owners[start]}:${start === bucket - 1 ? start : `${start}-${bucket - 1}`}`);
      start = bucket;
    }
  }
  return entries.join(",");
}

/** Bucket ranges as text (`512-767,1000`): the inverse of parseBucketSet. */
export function formatBucketSet(buckets: ReadonlySet<number>): string {
  const sorted = [...buckets].sort((a, b) => a - b);
  const ranges: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    ranges.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return ranges.join(",");
}

// Configuration strings rarely change (a deploy): each distinct one is parsed once per isolate, and a bad
// one keeps failing the same way without being parsed again.
type Parsed<T> = { value: T } | { error: ShardConfigError };
const parsedMaps = new Map<string, Parsed<ShardMap>>();
const parsedFrozen = new Map<string, Parsed<ReadonlySet<number>>>();

function cached<T>(cache: Map<string, Parsed<T>>, text: string, parse: (text: string) => T): T {
  let parsed = cache.get(text);
  if (!parsed) {
    try {
      parsed = { value: parse(text) };
    } catch (err) {
      if (!(err instanceof ShardConfigError)) throw err;
      parsed = { error: err };
    }
    cache.set(text, parsed);
  }
  if ("error" in parsed) throw parsed.error;
  return parsed.value;
}

/** The configuration a worker routes by: the map with its bindings resolved, and the frozen buckets. */
export interface ShardRouting {
  map: ShardMap;
  databases: ReadonlyMap<string, D1Database>;
  /** Buckets being moved (`SHARD_FROZEN`): their users may read but not write. */
  frozen: ReadonlySet<number>;
}

/** The settings a worker reads the routing from; the bindings the map names are looked up on the same object. */
export interface ShardEnv {
  readonly SHARD_MAP?: string;
  readonly SHARD_FROZEN?: string;
}

function isD1Database(value: unknown): value is D1Database {
  const candidate = value as Partial<D1Database> | null | undefined;
  return typeof candidate?.prepare === "function" && typeof candidate.withSession === "function";
}

/** Reads and checks the routing: throws ShardConfigError when the map or a binding it names is wrong. */
export function shardRouting(env: ShardEnv): ShardRouting {
  const map = cached(parsedMaps, env.SHARD_MAP ?? "", parseShardMap);
  const frozen = cached(parsedFrozen, env.SHARD_FROZEN ?? "", (text) => parseBucketSet(text, "SHARD_FROZEN"));
  const databases = new Map<string, D1Database>();
  for (const name of map.bindings) {
    const binding: unknown = Reflect.get(env, name);
    if (!isD1Database(binding)) {
      throw new ShardConfigError(`SHARD_MAP names ${name}, which is not a D1 database binding of this worker.`);
    }
    databases.set(name, binding);
  }
  return { map, databases, frozen };
}

/** The one database that holds a user's rows. */
export interface UserShard {
  bucket: number;
  name: string;
  database: D1Database;
  frozen: boolean;
}

export async function shardOfUser(routing: ShardRouting, userId: string): Promise<UserShard> {
  return shardOfBucket(routing, await bucketOf(userId));
}

/** The database that holds a bucket (a gpodder username names its user's bucket: auth/gpodder-username.ts). */
export function shardOfBucket(routing: ShardRouting, bucket: number): UserShard {
  const name = routing.map.owners[bucket];
  return { bucket, name, database: routing.databases.get(name) as D1Database, frozen: routing.frozen.has(bucket) };
}

/** Where a worker reports the version below (routes/status.ts). */
export const SHARD_CONFIG_PATH = "/status/shard-config";

/**
 * A short digest of the routing settings a worker runs with (docs/API.md, "Shard configuration version"):
 * `npm run shards:move` computes it for the settings it wrote and waits until the running worker reports
 * the same, so that it never copies before the freeze is in effect nor exits before the unfreeze is. The
 * settings are not secret, and the digest reveals nothing of them besides whether they changed.
 */
export async function shardConfigVersion(settings: ShardEnv): Promise<string> {
  const text = `${settings.SHARD_MAP ?? ""}\n${settings.SHARD_FROZEN ?? ""}`;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return [...digest.slice(0, 8)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}
