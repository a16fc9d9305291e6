import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { sign } from "hono/jwt";
import type { HonoJsonWebKey } from "hono/utils/jwt/jws";
import type { JWTPayload } from "hono/utils/jwt/types";
import { beforeAll, expect, onTestFailed } from "vitest";
import { urlKey } from "../src/db/url-key";
import app from "../src/index";
import { shardOfUser, shardRouting } from "../src/shards";
import { recordExchange } from "./recorded-responses";

export const JSONAPI = "application/vnd.api+json";
export const ATOMIC = "https://jsonapi.org/ext/atomic";
export const ATOMIC_MEDIA_TYPE = `${JSONAPI};ext="${ATOMIC}"`;
export const ORIGIN = "https://api.example.test";

export const TEST_SECRET = env.AUTH_JWT_SECRET as string;

/** An HS256 token for `sub`, valid for an hour unless `claims` say otherwise. */
export function tokenFor(sub: unknown, claims: Partial<JWTPayload> = {}, secret = TEST_SECRET): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return sign({ sub, iat: now, exp: now + 3600, ...claims } as JWTPayload, secret, "HS256");
}

/** An asymmetric key pair as JWKs, with `kid` and `alg` set as an identity provider publishes them. */
export async function keyPair(alg: "RS256" | "ES256" | "EdDSA", kid: string) {
  const algorithm =
    alg === "RS256"
      ? { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }
      : alg === "ES256"
        ? { name: "ECDSA", namedCurve: "P-256" }
        : { name: "Ed25519" };
  const pair = (await crypto.subtle.generateKey(algorithm, true, ["sign", "verify"])) as CryptoKeyPair;
  const publicJwk = (await crypto.subtle.exportKey("jwk", pair.publicKey)) as JsonWebKey;
  const privateJwk = (await crypto.subtle.exportKey("jwk", pair.privateKey)) as JsonWebKey;
  return {
    publicJwk: { ...publicJwk, kid, alg, use: "sig" } as HonoJsonWebKey,
    privateJwk: { ...privateJwk, kid, alg } as HonoJsonWebKey,
  };
}

export type Bindings = typeof env;

/**
 * Sends one request through the worker, with the real bindings unless some are replaced. The response is
 * recorded: after the file, ./recorded-responses.ts checks it against the OpenAPI document.
 */
export async function send(request: Request, bindings: Partial<Bindings> = {}): Promise<Response> {
  const ctx = createExecutionContext();
  const method = request.method;
  const url = request.url;
  const response = await app.fetch(request, { ...env, ...bindings }, ctx);
  await waitOnExecutionContext(ctx);
  recordExchange(new Request(url, { method }), response);
  return response;
}

/** A D1 binding of the suite's configuration and its name ("DB", "DB_1", ...). */
export interface ShardDatabase {
  name: string;
  database: D1Database;
}

/**
 * Every database of the suite's bucket map: DB alone in the single configuration, DB and DB_1 in the
 * two-shard one (vitest.config.ts runs the suite in both).
 */
export function shardDatabases(): ShardDatabase[] {
  const { databases } = shardRouting(env);
  return [...databases].map(([name, database]) => ({ name, database }));
}

/** The database that holds `userId`'s rows: tests that read or seed D1 directly go through it. */
export async function shardFor(userId: string): Promise<ShardDatabase> {
  const { name, database } = await shardOfUser(shardRouting(env), userId);
  return { name, database };
}

export async function databaseFor(userId: string): Promise<D1Database> {
  return (await shardFor(userId)).database;
}

/** The user's latest change number: what a write of nothing leaves as it was. */
export async function versionOf(user: { userId: string }): Promise<number> {
  const row = await (await databaseFor(user.userId))
    .prepare("SELECT version FROM user_stats WHERE user_id = ?")
    .bind(user.userId)
    .first<{ version: number }>();
  return row?.version ?? 0;
}

/**
 * Bindings that put `wrap(real)` in place of `userId`'s database (for the counting and failing
 * wrappers below), so that the worker, which picks the user's shard, goes through the wrapper.
 */
export async function wrapDatabaseOf(
  userId: string,
  wrap: (real: D1Database) => D1Database,
): Promise<Partial<Bindings>> {
  const { name, database } = await shardFor(userId);
  return { [name]: wrap(database) } as Partial<Bindings>;
}

/** The given headers over the defaults, names compared case-insensitively (an override replaces, never adds). */
function withDefaults(headers: HeadersInit, defaults: Record<string, string>): Headers {
  const merged = new Headers(defaults);
  for (const [name, value] of new Headers(headers)) merged.set(name, value);
  return merged;
}

export interface Caller {
  userId: string;
  token: string;
  get(path: string, headers?: HeadersInit): Promise<Response>;
  post(path: string, body: unknown, headers?: HeadersInit): Promise<Response>;
  delete(path: string, headers?: HeadersInit): Promise<Response>;
  patch(path: string, body: unknown, headers?: HeadersInit): Promise<Response>;
  operations(operations: unknown, headers?: HeadersInit): Promise<Response>;
}

/** A client acting as `userId`: sends JSON:API requests with its bearer token. */
export async function as(userId: string, bindings: Partial<Bindings> = {}): Promise<Caller> {
  const token = await tokenFor(userId);
  const request = (method: string, path: string, headers: HeadersInit = {}, body?: string) =>
    send(
      new Request(`${ORIGIN}${path}`, {
        method,
        headers: withDefaults(headers, { Authorization: `Bearer ${token}`, Accept: JSONAPI }),
        body,
      }),
      bindings,
    );
  return {
    userId,
    token,
    get: (path, headers) => request("GET", path, headers),
    delete: (path, headers) => request("DELETE", path, headers),
    patch: (path, body, headers) =>
      request(
        "PATCH",
        path,
        withDefaults(headers ?? {}, { "Content-Type": JSONAPI }),
        typeof body === "string" ? body : JSON.stringify(body),
      ),
    post: (path, body, headers) =>
      request(
        "POST",
        path,
        withDefaults(headers ?? {}, { "Content-Type": JSONAPI }),
        typeof body === "string" ? body : JSON.stringify(body),
      ),
    operations: (operations, headers) =>
      request(
        "POST",
        "/v1/operations",
        withDefaults(headers ?? {}, { "Content-Type": ATOMIC_MEDIA_TYPE, Accept: ATOMIC_MEDIA_TYPE }),
        typeof operations === "string" ? operations : JSON.stringify(operations),
      ),
  };
}

/** What `promise` rejects with (a client call's error, say); fails the test when it resolves. */
export async function rejectionOf<T>(promise: Promise<unknown>): Promise<T> {
  try {
    await promise;
  } catch (error) {
    return error as T;
  }
  throw new Error("expected the call to fail");
}

export function subscriptionDocument(guid: string, feedUrl: string) {
  return { data: { type: "subscription", id: guid, attributes: { feedUrl } } };
}

/** A subscription resource as the single-resource endpoints and the list serialise it. */
export function expectedSubscription(feed: { guid: string; feedUrl: string }) {
  return {
    type: "subscription",
    id: feed.guid,
    attributes: {
      feedUrl: feed.feedUrl,
      userSubscribedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    },
    relationships: podcastRelationships(feed.guid),
    links: {
      self: `/v1/subscriptions/${feed.guid}`,
      unsubscribe: { href: `/v1/subscriptions/${feed.guid}`, method: "DELETE" },
    },
  };
}

/** Every subscription resource's `relationships` (docs/API.md §18): its podcast, linked and identified. */
export function podcastRelationships(guid: string) {
  return { podcast: { links: { related: `/v1/subscriptions/${guid}/podcast` }, data: { type: "podcast", id: guid } } };
}

/** What a feed round that fetched `feedUrl` would leave in its feeds row (docs/API.md §18), for the reads to show. */
export interface SeededPodcast {
  status?: "ok" | "failing" | "gone";
  title?: string | null;
  author?: string | null;
  description?: string | null;
  imageUrl?: string | null;
  siteUrl?: string | null;
  language?: string | null;
  podcastGuid?: string | null;
  /** ms since the epoch. */
  fetchedAt?: number | null;
}

/**
 * Writes into `userId`'s database what the feed round writes after fetching `feedUrl` (src/db/feeds.ts): the row
 * the subscribe's trigger made (inserted when missing), now with the URL and the facts given.
 */
export async function seedPodcast(userId: string, feedUrl: string, podcast: SeededPodcast): Promise<void> {
  const db = await databaseFor(userId);
  const key = urlKey(feedUrl);
  await db.batch([
    db.prepare("INSERT OR IGNORE INTO feeds (url_key) VALUES (?)").bind(key),
    db
      .prepare(
        `UPDATE feeds SET url = ?, final_url = ?, status = ?, title = ?, author = ?, description = ?, image_url = ?,
         site_url = ?, language = ?, podcast_guid = ?, fetched_at = ? WHERE url_key = ?`,
      )
      .bind(
        feedUrl,
        feedUrl,
        podcast.status ?? "ok",
        podcast.title ?? null,
        podcast.author ?? null,
        podcast.description ?? null,
        podcast.imageUrl ?? null,
        podcast.siteUrl ?? null,
        podcast.language ?? null,
        podcast.podcastGuid ?? null,
        podcast.fetchedAt === undefined ? Date.now() : podcast.fetchedAt,
        key,
      ),
  ]);
}

export function addOperation(guid: string, feedUrl: string) {
  return { op: "add", ...subscriptionDocument(guid, feedUrl) };
}

/** A fresh random feed: a UUID and a URL naming it. */
export function newFeed(): { guid: string; feedUrl: string } {
  const guid = crypto.randomUUID();
  return { guid, feedUrl: `https://feeds.example.com/${guid}.xml` };
}

/** An AUTH_FAILURE_RATE_LIMITER that allows everything and records the keys it was asked for: which requests count as failures. */
export function recordingFailureLimiter(): { bindings: Partial<Bindings>; counted: string[] } {
  const counted: string[] = [];
  const limiter = {
    limit: async ({ key }: { key: string }) => {
      counted.push(key);
      return { success: true };
    },
  } as unknown as RateLimit;
  return { bindings: { AUTH_FAILURE_RATE_LIMITER: limiter }, counted };
}

/** A D1 binding that counts the calls (round trips) made through it: each statement run, each batch. */
export function countingD1(real: D1Database): { binding: D1Database; calls: () => number; reset: () => void } {
  let calls = 0;
  const binding = wrapD1(real, () => {
    calls++;
  });
  return {
    binding,
    calls: () => calls,
    reset: () => {
      calls = 0;
    },
  };
}

/**
 * Marks failures a test causes on purpose, so the `database_error` lines the worker logs for them read as
 * expected in the test output.
 */
export const INJECTED_FAILURE = "[expected: injected by the test]";

/**
 * For failures a test causes through something other than D1 (a fake identity provider, say), whose logged
 * error cannot carry the marker: one line before the suite says that its `event` errors are expected.
 */
export function announceInjectedFailures(event: string): void {
  beforeAll(() => {
    console.warn(`${INJECTED_FAILURE} the "${event}" errors this suite makes the worker log are failures it causes`);
  });
}

/** A D1 binding whose `failAt`-th call (1-based) throws, as D1 does when it is unreachable. */
export function failingD1(real: D1Database, failAt: number): D1Database {
  let calls = 0;
  return wrapD1(real, () => {
    calls++;
    if (calls === failAt) throw new Error(`D1_ERROR: Network connection lost. ${INJECTED_FAILURE}`);
  });
}

const realStatement = new WeakMap<object, D1PreparedStatement>();

function wrapStatement(statement: D1PreparedStatement, onCall: () => void): D1PreparedStatement {
  const wrapped = new Proxy(statement, {
    get(target, property) {
      if (property === "bind") {
        return (...values: unknown[]) => wrapStatement(target.bind(...values), onCall);
      }
      if (property === "all" || property === "run" || property === "first" || property === "raw") {
        return async (...args: unknown[]) => {
          onCall();
          return (target[property] as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  realStatement.set(wrapped, statement);
  return wrapped;
}

function wrapD1(real: D1Database, onCall: () => void): D1Database {
  return new Proxy(real, {
    get(target, property) {
      if (property === "prepare") return (query: string) => wrapStatement(target.prepare(query), onCall);
      if (property === "withSession") {
        return (constraint?: string) => wrapD1(target.withSession(constraint) as unknown as D1Database, onCall);
      }
      if (property === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          onCall();
          return target.batch(statements.map((statement) => realStatement.get(statement) ?? statement));
        };
      }
      if (property === "exec") {
        return async (query: string) => {
          onCall();
          return target.exec(query);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * A D1 binding that sums the rows D1 reports reading and writing (result `meta`). Drizzle reads
 * through `raw()`, which has no meta, so `raw()` is served by `all()` here (same rows, as arrays).
 */
export function meteredD1(real: D1Database) {
  const totals = {
    rowsRead: 0,
    rowsWritten: 0,
    statements: [] as { sql: string; params: unknown[] }[],
    /** D1's own measure of each call's SQL time (`meta.duration`, ms): reported, never asserted (it is the host's). */
    sqlMs: [] as number[],
    /** The rows each statement read (`meta.rows_read`): how long it held the database, as the host cannot change. */
    rowsReadPerStatement: [] as number[],
    /** D1 calls (round trips: a batch is one). */
    calls: 0,
    /** Each call's results as JSON text (UTF-8 bytes): what D1's answer holds, as the binding parses it. */
    answerBytes: [] as number[],
  };
  const answered = (results: unknown) => {
    totals.calls++;
    totals.answerBytes.push(new TextEncoder().encode(JSON.stringify(results)).byteLength);
  };
  const account = (meta: D1Meta | undefined) => {
    totals.rowsRead += meta?.rows_read ?? 0;
    totals.rowsReadPerStatement.push(meta?.rows_read ?? 0);
    totals.rowsWritten += meta?.rows_written ?? 0;
    totals.sqlMs.push(meta?.duration ?? 0);
  };
  const statementSql = new WeakMap<D1PreparedStatement, { sql: string; params: unknown[] }>();
  const wrap = (statement: D1PreparedStatement, sql: string, params: unknown[]): D1PreparedStatement => {
    const wrapped = new Proxy(statement, {
      get(target, property) {
        if (property === "bind") return (...values: unknown[]) => wrap(target.bind(...values), sql, values);
        if (property === "all" || property === "run") {
          return async () => {
            totals.statements.push({ sql, params });
            const result = await target.all();
            account(result.meta);
            answered(result.results);
            return result;
          };
        }
        if (property === "first") {
          return async (column?: string) => {
            totals.statements.push({ sql, params });
            const result = await target.all<Record<string, unknown>>();
            account(result.meta);
            answered(result.results);
            const row = result.results[0] ?? null;
            return column && row ? row[column] : row;
          };
        }
        if (property === "raw") {
          return async () => {
            totals.statements.push({ sql, params });
            const result = await target.all<Record<string, unknown>>();
            account(result.meta);
            answered(result.results);
            return result.results.map((row) => Object.values(row));
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    realStatement.set(wrapped, statement);
    statementSql.set(wrapped, { sql, params });
    return wrapped;
  };
  const wrapDatabase = (db: D1Database): D1Database =>
    new Proxy(db, {
      get(target, property) {
        if (property === "prepare") return (sql: string) => wrap(target.prepare(sql), sql, []);
        if (property === "withSession") {
          return (constraint?: string) => wrapDatabase(target.withSession(constraint) as unknown as D1Database);
        }
        if (property === "batch") {
          return async (statements: D1PreparedStatement[]) => {
            for (const statement of statements) {
              const recorded = statementSql.get(statement);
              if (recorded) totals.statements.push(recorded);
            }
            const results = await target.batch(
              statements.map((statement) => realStatement.get(statement) ?? statement),
            );
            for (const result of results) account(result.meta);
            answered(results.map((result) => result.results));
            return results;
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  return {
    binding: wrapDatabase(real),
    totals,
    /** The rows each call of the statement of text `sql` read, in call order. */
    rowsReadBy(sql: string): number[] {
      return totals.statements.flatMap((statement, i) =>
        statement.sql === sql ? [totals.rowsReadPerStatement[i]] : [],
      );
    },
    reset() {
      totals.rowsRead = 0;
      totals.rowsWritten = 0;
      totals.statements.length = 0;
      totals.sqlMs.length = 0;
      totals.rowsReadPerStatement.length = 0;
      totals.calls = 0;
      totals.answerBytes.length = 0;
    },
  };
}

/** `userId`'s database behind a call counter, with the bindings that make the worker use it. */
export async function countedDatabaseOf(userId: string) {
  const { name, database } = await shardFor(userId);
  const counter = countingD1(database);
  return { ...counter, bindings: { [name]: counter.binding } as Partial<Bindings> };
}

/** `userId`'s database behind a row meter, with the bindings that make the worker use it. */
export async function meteredDatabaseOf(userId: string) {
  const { name, database } = await shardFor(userId);
  const meter = meteredD1(database);
  return { ...meter, bindings: { [name]: meter.binding } as Partial<Bindings> };
}

/**
 * Stores `count` subscriptions for `userId` straight into D1 (fast seeding for size tests), each with
 * the user's next change number, as the app's writes would number them.
 */
export async function seedSubscriptions(
  userId: string,
  count: number,
  options: {
    unsubscribed?: boolean;
    feedUrl?: (guid: string, index: number) => string;
    /** Another database than the user's (the copies a bucket move makes before it switches the map). */
    database?: D1Database;
  } = {},
) {
  const db = options.database ?? (await databaseFor(userId));
  const rowsPerStatement = 14; // 7 bound parameters a row; D1 allows 100 per statement
  const statements: D1PreparedStatement[] = [];
  const base = Date.now() - count;
  const stats = await db
    .prepare("SELECT version FROM user_stats WHERE user_id = ?")
    .bind(userId)
    .first<{ version: number }>();
  const firstChange = (stats?.version ?? 0) + 1;
  for (let start = 0; start < count; start += rowsPerStatement) {
    const rows = Math.min(rowsPerStatement, count - start);
    const values: unknown[] = [];
    for (let i = 0; i < rows; i++) {
      const guid = crypto.randomUUID();
      values.push(
        userId,
        guid,
        options.feedUrl?.(guid, start + i) ?? `https://feeds.example.com/${guid}.xml`,
        base + start + i,
        options.unsubscribed ? base : null,
        firstChange + start + i,
        firstChange + start + i,
      );
    }
    statements.push(
      db
        .prepare(
          `INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq, subscribed_seq) VALUES ${Array(rows).fill("(?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
        )
        .bind(...values),
    );
  }
  for (let i = 0; i < statements.length; i += 100) await db.batch(statements.slice(i, i + 100));
}

/** A subscription as the change feed reports it. */
export type ChangeResource = {
  type: string;
  id: string;
  attributes: { feedUrl: string; userSubscribedAt: string; userUnsubscribedAt: string | null };
  links?: { self: string; unsubscribe: { href: string; method: string } };
};

export type ChangeFeedDocument = {
  data: ChangeResource[];
  links: { self: string; first: string; prev: null; next: string | null; last: null };
  meta: { syncToken: string };
};

/**
 * Syncs as a device does (docs/API.md §8): from `token`, following links.next until it is null. Returns
 * every page's items in order and the token to store.
 */
export async function syncFrom(user: Caller, token: string, size = 25) {
  const items: ChangeResource[] = [];
  let next: string | null = `/v1/subscriptions?filter[since]=${token}&page[size]=${size}`;
  let last = token;
  let pages = 0;
  while (next) {
    const response = await user.get(next);
    expect(response.status, await response.clone().text()).toBe(200);
    const body = (await response.json()) as ChangeFeedDocument;
    items.push(...body.data);
    last = body.meta.syncToken;
    next = body.links.next;
    if (++pages > 10_000) throw new Error("the change feed never ends");
  }
  return { items, token: last };
}

/** A device's local copy: applies change-feed items (active ones replace, tombstones remove). */
export function applyChanges(local: Map<string, string>, items: ChangeResource[]) {
  for (const item of items) {
    if (item.attributes.userUnsubscribedAt === null) local.set(item.id, item.attributes.feedUrl);
    else local.delete(item.id);
  }
  return local;
}

/** The user's active subscriptions as the list reports them: guid -> feedUrl. */
export async function listAll(user: Caller): Promise<Map<string, string>> {
  const all = new Map<string, string>();
  for (let number = 1; ; number++) {
    const response = await user.get(`/v1/subscriptions?page[number]=${number}&page[size]=100`);
    const body = (await response.json()) as {
      data: { id: string; attributes: { feedUrl: string } }[];
      links: { next: string | null };
    };
    for (const item of body.data) all.set(item.id, item.attributes.feedUrl);
    if (!body.links.next) return all;
  }
}

/**
 * Reads a streamed body as a slow client would, one chunk at a time, keeping none (`onText` sees each chunk's
 * text): the server's streams make the next chunk only when asked (highWaterMark 0), so the largest chunk is
 * the most they ever buffer.
 */
export async function readChunks(response: Response, onText: (text: string) => void = () => {}) {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
  const read = { chunks: 0, totalBytes: 0, largestChunk: 0 };
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return read;
    read.chunks++;
    read.totalBytes += value.byteLength;
    read.largestChunk = Math.max(read.largestChunk, value.byteLength);
    onText(decoder.decode(value, { stream: true }));
  }
}

/** One log line of what a streamed answer measured, for the docs' figures. */
export function logStreamMeasure(
  event: string,
  subject: Record<string, number>,
  read: { chunks: number; totalBytes: number; largestChunk: number },
  totals: { statements: unknown[]; sqlMs: number[] },
) {
  console.log(
    JSON.stringify({
      event,
      ...subject,
      documentMB: +(read.totalBytes / 1e6).toFixed(1),
      chunks: read.chunks,
      largestChunkMB: +(read.largestChunk / 1e6).toFixed(2),
      d1Calls: totals.statements.length,
      sqlMsMax: Math.max(...totals.sqlMs),
      sqlMsTotal: +totals.sqlMs.reduce((a, b) => a + b, 0).toFixed(1),
    }),
  );
}

/**
 * Rate limiters count in fixed windows aligned to the clock (Cloudflare's, and miniflare's in these tests): a test
 * that spends a tight limit and expects the refusal fails when a window ends between the two. Called first in such
 * a test (or in its beforeEach): when less than `seconds` are left of the current minute, waits for the next one
 * to start. On a loaded machine a test can still outlast its window: when it then fails, the failure says so
 * (ROLLED_OVER, which vitest.config.ts retries once), and the retry waits for a fresh window, in which no counter
 * holds what the failed attempt spent.
 */
export async function withinOneRateWindow(seconds = 15): Promise<void> {
  const left = RATE_WINDOW_MS - (Date.now() % RATE_WINDOW_MS);
  if (rateWindowEndedInLastTest || left < seconds * 1000) {
    rateWindowEndedInLastTest = false;
    await new Promise((resolve) => setTimeout(resolve, left + 50));
  }
  const window = rateWindowOf(Date.now());
  onTestFailed(() => {
    if (rateWindowOf(Date.now()) === window) return;
    rateWindowEndedInLastTest = true;
    throw new Error(
      `${ROLLED_OVER} (it started in one minute and failed in a later one): the failure above proves nothing`,
    );
  });
}

/** The error text vitest.config.ts's `retry.condition` matches: a tight-limit test that outlasted its window. */
export const ROLLED_OVER = "a rate-limit window ended during the test";
const RATE_WINDOW_MS = 60_000;
const rateWindowOf = (ms: number) => Math.floor(ms / RATE_WINDOW_MS);
/** Set when a test failed across a window's end: its retry must not start in the window the attempt spent in. */
let rateWindowEndedInLastTest = false;

/** SQLite's plan of a statement run with `params`: one line per step (`SCAN t`, `SEARCH t USING INDEX ...`). */
export async function queryPlan(db: D1Database, sql: string, params: readonly unknown[] = []): Promise<string[]> {
  const { results } = await db
    .prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return results.map((row) => row.detail);
}

/**
 * The steps of a plan that cost rows in proportion to a table rather than to the answer: a scan of one of
 * `tables` or of a subquery (`[a-z]` aliases), and, for the user-scoped `userPrefixed` tables, a walk of all of a
 * user's rows by the primary key's user prefix.
 */
export function walksOf(plan: readonly string[], tables: readonly string[], userPrefixed: readonly string[] = []) {
  const scan = new RegExp(`^SCAN (${[...tables, "[a-z]"].join("|")})\\b`);
  const prefix = new RegExp(`^SEARCH (${[...userPrefixed, "[a-z]"].join("|")}) USING PRIMARY KEY \\(user_id=\\?\\)`);
  return plan.filter((step) => scan.test(step) || (userPrefixed.length > 0 && prefix.test(step)));
}

/** Runs the Worker's Cron Trigger as Cloudflare would at `scheduledTime`, with `bindings` over the test's. */
export async function runCron(scheduledTime = Date.now(), bindings: Partial<Bindings> = {}) {
  const controller = createScheduledController({ scheduledTime, cron: "*/10 * * * *" });
  const ctx = createExecutionContext();
  await app.scheduled(controller, { ...env, ...bindings }, ctx);
  await waitOnExecutionContext(ctx);
}
