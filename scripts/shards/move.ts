// Moves buckets of users from one D1 database to another while the service runs (docs/sharding.md).
// The steps, each safe to repeat if the move stops half-way:
//   1. freeze the buckets (SHARD_FROZEN): their users' writes answer 503, reads go on;
//   2. copy every row of their users, table by table, with the columns read from the tables themselves;
//   3. verify: the same row counts and checksums on both sides, table by table;
//   4. switch the map (SHARD_MAP) while still frozen, and wait for the new database's replicas to catch up;
//   5. unfreeze;
//   6. delete the old rows, after checking once more that nothing wrote to them.
// Where SQL runs (D1 bindings, `wrangler d1 execute`) and where the configuration lives (a wrangler.toml,
// a deployment, a test's variables) are injected, so the same steps run in tests, locally and remotely.
import {
  type BucketRange,
  bucketOf,
  formatBucketSet,
  formatShardMap,
  parseBucketSet,
  parseShardMap,
  type ShardMap,
} from "../../src/shards";

export type SqlValue = string | number | null;
export type Row = Record<string, SqlValue>;

export interface Statement {
  sql: string;
  params: SqlValue[];
}

/** Runs SQL on a database named by its binding. */
export interface ShardExecutor {
  all(database: string, statement: Statement): Promise<Row[]>;
  /** Runs the statements in order; a D1 binding runs them as one transaction. */
  batch(database: string, statements: Statement[]): Promise<void>;
}

/** The two settings the worker routes by, as text. */
export interface ShardSettings {
  map: string;
  frozen: string;
}

/** Where the worker's routing settings live. `write` returns once the worker routes by the new settings. */
export interface ShardConfigStore {
  read(): Promise<ShardSettings>;
  write(settings: ShardSettings): Promise<void>;
}

/** The database to move from has none of this service's tables: not migrated yet (or not this service's). */
export class UnmigratedDatabase extends Error {
  constructor(readonly database: string) {
    super(`${database} has no table ${USER_TABLES[0].table}: apply the migrations to it first`);
    this.name = "UnmigratedDatabase";
  }
}

export interface MoveRequest {
  buckets: BucketRange;
  from: string;
  to: string;
  executor: ShardExecutor;
  config: ShardConfigStore;
  /** Waited after the switch, still frozen, so that every replica of `to` holds the copied rows. */
  settleMs?: number;
  log?: (line: string) => void;
  sleep?: (ms: number) => Promise<void>;
}

export interface TableReport {
  table: string;
  rows: number;
  checksum: string;
}

export interface MoveReport {
  users: number;
  tables: TableReport[];
  /** True when the map already named `to`: only the old rows were deleted (a resumed move). */
  resumed: boolean;
}

/**
 * Every table that holds rows of one user, with the column naming the user, in copy order: adding a per-user
 * table is one line here. A listed table the database does not have (yet) is skipped; a table the database
 * has with a `user_id` column that is not listed stops the move before anything changes, so no user's rows
 * are ever left behind. Inserting rows fires the triggers that keep user_stats, so user_stats comes last and
 * overwrites what the triggers wrote with the source's exact values (counts, versions and change numbers
 * stay what clients have seen); deletes run in the same order, so no trigger recreates a user_stats row.
 */
export const USER_TABLES: readonly UserTable[] = [
  { table: "subscriptions", userKey: "user_id" },
  // Copied as they are (a copied subscription is inserted, which no rename trigger sees); deleted with their rows.
  { table: "subscription_renames", userKey: "user_id" },
  { table: "episodes", userKey: "user_id" },
  // Copied as they are (a copied state is inserted, which the re-home trigger does not see).
  { table: "episode_rehomes", userKey: "user_id" },
  // After the rows they belong to: a copied row is already cut to its head, so its triggers write no pieces.
  { table: "url_pieces", userKey: "user_id" },
  { table: "app_passwords", userKey: "user_id" },
  { table: "gpodder_sessions", userKey: "user_id" },
  { table: "account_sessions", userKey: "user_id" },
  { table: "devices", userKey: "user_id" },
  { table: "user_stats", userKey: "user_id" },
];

export interface UserTable {
  table: string;
  /** The column that holds the user id. */
  userKey: string;
}

/** The column that makes an unlisted table a per-user one (see USER_TABLES). */
const USER_COLUMN = "user_id";

/** Users per copy step: a user holds at most a few thousand rows, so a step stays a few MB. */
const USERS_PER_STEP = 20;
/** D1 binds at most 100 parameters per statement. */
const MAX_PARAMS = 100;
/** Statements per batch. */
const STATEMENTS_PER_BATCH = 50;

interface Column {
  name: string;
  /** Position in the primary key (1-based), 0 when not part of it. */
  pk: number;
}

const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

async function columnsOf(executor: ShardExecutor, database: string, table: string): Promise<Column[]> {
  const rows = await executor.all(database, { sql: `PRAGMA table_info(${quoteIdentifier(table)})`, params: [] });
  return rows.map((row) => ({ name: String(row.name), pk: Number(row.pk) }));
}

/** A user table of this database, with its columns read from the source. */
interface PresentTable extends UserTable {
  columns: Column[];
}

/** The tables of `database` that are neither SQLite's, D1's nor Cloudflare's own (migration tracking included). */
async function applicationTables(executor: ShardExecutor, database: string): Promise<string[]> {
  const rows = await executor.all(database, {
    sql:
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' " +
      "AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' AND name NOT LIKE 'd1\\_%' ESCAPE '\\' ORDER BY name",
    params: [],
  });
  return rows.map((row) => String(row.name));
}

/**
 * The user tables the source has, in USER_TABLES order, with their columns, checked to be the same in the
 * target. Refuses a per-user table (one with a user_id column) that USER_TABLES does not list.
 */
async function tableColumns(request: MoveRequest): Promise<PresentTable[]> {
  const present: PresentTable[] = [];
  const existing = await applicationTables(request.executor, request.from);
  for (const table of existing) {
    if (USER_TABLES.some((listed) => listed.table === table)) continue;
    const columns = await columnsOf(request.executor, request.from, table);
    if (columns.some((column) => column.name === USER_COLUMN)) {
      throw new Error(
        `${request.from} has a table ${table} with a ${USER_COLUMN} column that the move does not know: ` +
          "add it to USER_TABLES in scripts/shards/move.ts.",
      );
    }
  }
  for (const listed of USER_TABLES) {
    if (!existing.includes(listed.table)) continue;
    const source = await columnsOf(request.executor, request.from, listed.table);
    const target = await columnsOf(request.executor, request.to, listed.table);
    if (JSON.stringify(source) !== JSON.stringify(target)) {
      throw new Error(
        `${request.to}'s ${listed.table} differs from ${request.from}'s: apply the migrations to ${request.to} first ` +
          `(npm run db:migrate:local -- --database ${request.to}, or :remote).`,
      );
    }
    present.push({ ...listed, columns: source });
  }
  if (!present.some((table) => table.table === USER_TABLES[0].table)) throw new UnmigratedDatabase(request.from);
  return present;
}

function primaryKey(columns: Column[]): string[] {
  return columns
    .filter((column) => column.pk > 0)
    .sort((a, b) => a.pk - b.pk)
    .map((column) => column.name);
}

function placeholders(count: number): string {
  return Array(count).fill("?").join(", ");
}

/** Every user id in `database` whose bucket is in `buckets`, in id order. */
async function usersInBuckets(
  executor: ShardExecutor,
  database: string,
  tables: readonly PresentTable[],
  buckets: ReadonlySet<number>,
): Promise<string[]> {
  const ids = new Set<string>();
  const page = 1000;
  for (const { table, userKey } of tables) {
    const key = quoteIdentifier(userKey);
    let after = "";
    for (;;) {
      const rows = await executor.all(database, {
        sql: `SELECT DISTINCT ${key} AS user_id FROM ${quoteIdentifier(table)} WHERE ${key} > ? ORDER BY ${key} LIMIT ${page}`,
        params: [after],
      });
      for (const row of rows) ids.add(String(row.user_id));
      if (rows.length < page) break;
      after = String(rows[rows.length - 1].user_id);
    }
  }
  const inBuckets: string[] = [];
  for (const id of [...ids].sort()) if (buckets.has(await bucketOf(id))) inBuckets.push(id);
  return inBuckets;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}

/** The users' rows of one table, in primary-key order, every column. */
async function readRows(
  executor: ShardExecutor,
  database: string,
  { table, userKey, columns }: PresentTable,
  users: string[],
): Promise<Row[]> {
  const rows: Row[] = [];
  for (const group of chunks(users, MAX_PARAMS)) {
    rows.push(
      ...(await executor.all(database, {
        sql:
          `SELECT ${columns.map((c) => quoteIdentifier(c.name)).join(", ")} FROM ${quoteIdentifier(table)} ` +
          `WHERE ${quoteIdentifier(userKey)} IN (${placeholders(group.length)}) ORDER BY ${primaryKey(columns).map(quoteIdentifier).join(", ")}`,
        params: group,
      })),
    );
  }
  return rows;
}

function insertStatements({ table, columns }: PresentTable, rows: Row[]): Statement[] {
  const perStatement = Math.max(1, Math.floor(MAX_PARAMS / columns.length));
  const names = columns.map((c) => quoteIdentifier(c.name)).join(", ");
  const tuple = `(${placeholders(columns.length)})`;
  return chunks(rows, perStatement).map((group) => ({
    // OR REPLACE: rows the triggers wrote while copying an earlier table (user_stats) take the source's values.
    sql: `INSERT OR REPLACE INTO ${quoteIdentifier(table)} (${names}) VALUES ${Array(group.length).fill(tuple).join(", ")}`,
    params: group.flatMap((row) => columns.map((c) => row[c.name] ?? null)),
  }));
}

function deleteStatements(tables: readonly PresentTable[], users: string[]): Statement[] {
  return tables.flatMap(({ table, userKey }) =>
    chunks(users, MAX_PARAMS).map((group) => ({
      sql: `DELETE FROM ${quoteIdentifier(table)} WHERE ${quoteIdentifier(userKey)} IN (${placeholders(group.length)})`,
      params: group,
    })),
  );
}

async function runBatches(executor: ShardExecutor, database: string, statements: Statement[]): Promise<void> {
  for (const group of chunks(statements, STATEMENTS_PER_BATCH)) await executor.batch(database, group);
}

/** Row count and SHA-256 of the users' rows of one table (canonical JSON of each row, in key order). */
async function tableDigest(
  executor: ShardExecutor,
  database: string,
  table: PresentTable,
  users: string[],
): Promise<TableReport> {
  let rows = 0;
  const parts: string[] = [];
  for (const group of chunks(users, USERS_PER_STEP)) {
    const read = await readRows(executor, database, table, group);
    rows += read.length;
    for (const row of read) parts.push(JSON.stringify(table.columns.map((c) => row[c.name] ?? null)));
  }
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(parts.join("\n")));
  const checksum = [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
  return { table: table.table, rows, checksum };
}

async function digests(
  executor: ShardExecutor,
  database: string,
  tables: readonly PresentTable[],
  users: string[],
): Promise<TableReport[]> {
  const reports: TableReport[] = [];
  for (const table of tables) reports.push(await tableDigest(executor, database, table, users));
  return reports;
}

function reassign(map: ShardMap, buckets: BucketRange, to: string): string {
  const owners = [...map.owners];
  for (let bucket = buckets.first; bucket <= buckets.last; bucket++) owners[bucket] = to;
  return formatShardMap({ owners, bindings: [...new Set(owners)] });
}

function withBuckets(frozen: string, buckets: BucketRange, add: boolean): string {
  const set = new Set(parseBucketSet(frozen, "SHARD_FROZEN"));
  for (let bucket = buckets.first; bucket <= buckets.last; bucket++) {
    if (add) set.add(bucket);
    else set.delete(bucket);
  }
  return formatBucketSet(set);
}

function owners(map: ShardMap, buckets: BucketRange): Set<string> {
  return new Set(map.owners.slice(buckets.first, buckets.last + 1));
}

export async function moveBuckets(request: MoveRequest): Promise<MoveReport> {
  const { buckets, from, to, executor, config } = request;
  const log = request.log ?? (() => {});
  const sleep = request.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const range = `${buckets.first}-${buckets.last}`;
  if (from === to) throw new Error("--from and --to name the same database.");

  const initial = await config.read();
  const map = parseShardMap(initial.map);
  const current = owners(map, buckets);
  const bucketSet = parseBucketSet(range, "--buckets");
  const tables = await tableColumns(request);

  if (current.size === 1 && current.has(to)) {
    // Already switched by an earlier run that stopped before the end: finish it.
    log(`buckets ${range} already map to ${to}: unfreezing and deleting what is left in ${from}`);
    await config.write({ map: initial.map, frozen: withBuckets(initial.frozen, buckets, false) });
    const users = await usersInBuckets(executor, from, tables, bucketSet);
    await runBatches(executor, from, deleteStatements(tables, users));
    return { users: users.length, tables: [], resumed: true };
  }
  if (current.size !== 1 || !current.has(from)) {
    throw new Error(`buckets ${range} are not all in ${from} (the map puts them in ${[...current].join(", ")}).`);
  }

  log(`1/6 freezing buckets ${range}`);
  const frozen = withBuckets(initial.frozen, buckets, true);
  await config.write({ map: initial.map, frozen });

  // The store returned once the worker routes by the freeze: from here on, no user of these buckets can
  // write to `from`, a brand-new one included, so the users listed now are all there will be.
  const users = await usersInBuckets(executor, from, tables, bucketSet);
  log(`2/6 copying ${users.length} users from ${from} to ${to}`);
  // Rows of these users in `to` are leftovers of an earlier, unfinished run: the map never sent them there.
  await runBatches(executor, to, deleteStatements(tables, users));
  for (const group of chunks(users, USERS_PER_STEP)) {
    const statements: Statement[] = [];
    for (const table of tables) {
      statements.push(...insertStatements(table, await readRows(executor, from, table, group)));
    }
    await runBatches(executor, to, statements);
  }

  log("3/6 verifying counts and checksums");
  const source = await digests(executor, from, tables, users);
  const target = await digests(executor, to, tables, users);
  if (JSON.stringify(source) !== JSON.stringify(target)) {
    log("verification failed: removing the copies and unfreezing; the map is unchanged");
    await runBatches(executor, to, deleteStatements(tables, users));
    await config.write({ map: initial.map, frozen: initial.frozen });
    throw new Error(`copy of buckets ${range} differs: ${JSON.stringify({ [from]: source, [to]: target })}`);
  }

  log(`4/6 switching buckets ${range} to ${to}`);
  const switched = reassign(map, buckets, to);
  await config.write({ map: switched, frozen });
  await sleep(request.settleMs ?? 0);

  log("5/6 unfreezing");
  await config.write({ map: switched, frozen: withBuckets(frozen, buckets, false) });

  log(`6/6 deleting the moved rows from ${from}`);
  const leftover = await digests(executor, from, tables, users);
  const stragglers = (await usersInBuckets(executor, from, tables, bucketSet)).filter((user) => !users.includes(user));
  if (JSON.stringify(leftover) !== JSON.stringify(source) || stragglers.length > 0) {
    // Something wrote to `from` after the freeze (a worker on an old configuration): keep the rows for a human.
    throw new Error(
      `rows of buckets ${range} changed in ${from} during the move${stragglers.length > 0 ? ` (new users: ${stragglers.join(", ")})` : ""}; ` +
        "they were kept for inspection.",
    );
  }
  await runBatches(executor, from, deleteStatements(tables, users));
  return { users: users.length, tables: source, resumed: false };
}

/** An executor over D1 bindings: tests (workerd) and local moves (wrangler's platform proxy). */
export function d1Executor(databases: (name: string) => D1Database): ShardExecutor {
  const prepare = (database: string, { sql, params }: Statement) =>
    databases(database)
      .prepare(sql)
      .bind(...params);
  return {
    async all(database, statement) {
      return (await prepare(database, statement).all<Row>()).results;
    },
    async batch(database, statements) {
      if (statements.length > 0) await databases(database).batch(statements.map((s) => prepare(database, s)));
    },
  };
}

/**
 * What a local D1 answers when another workerd holds the database file: the platform proxy and a running
 * `wrangler dev` open the same SQLite files, and one of them can find the other's lock (SQLITE_BUSY). workerd
 * hides the cause from the caller ("internal error; reference = ..."; "database is locked" is only in its log).
 */
export const LOCAL_LOCK_ERROR = /SQLITE_BUSY|database is locked|internal error; reference = /;

export interface LocalLockRetries {
  attempts?: number;
  delayMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/** `call`, run again while it fails on a local lock (see retryingOnLocalLock); any other error is thrown as it is. */
export async function retriedOnLocalLock<T>(
  call: () => Promise<T>,
  {
    attempts = 8,
    delayMs = 100,
    sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
  }: LocalLockRetries = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (attempt >= attempts || !LOCAL_LOCK_ERROR.test(String(err))) throw err;
      await sleep(delayMs * attempt);
    }
  }
}

/**
 * Retries statements that failed on a local lock. Safe to repeat: a failed call ran in a transaction that was
 * rolled back, and every statement of a move can run twice anyway (INSERT OR REPLACE of the same rows,
 * deletes by user, reads). Other errors, and the last attempt's, are thrown as they are.
 */
export function retryingOnLocalLock(executor: ShardExecutor, options: LocalLockRetries = {}): ShardExecutor {
  const retry = <T>(call: () => Promise<T>) => retriedOnLocalLock(call, options);
  return {
    all: (database, statement) => retry(() => executor.all(database, statement)),
    batch: (database, statements) => retry(() => executor.batch(database, statements)),
  };
}
