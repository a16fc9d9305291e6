// The SQLite time of a request's own D1 statements (issue 39; bench/README.md, "The SQL time"): every statement a
// recorded request sent to D1, run again with its recorded values on a snapshot of the bench's database taken just
// before the request, inside one transaction that is rolled back, several times; the median of the runs' sums.
//
// The snapshot is a copy of Miniflare's D1 file (the Durable Object's SQLite database and its write-ahead log),
// taken while no request is under way, so it holds exactly what the request met. The statements run in Node's own
// SQLite (node:sqlite, Node 22: the project's pinned Node), each prepared once and stepped through all its rows, the
// clock read around the steps alone.
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";

/** Runs per request: the median is reported (issue 39 asks for at least 5). */
export const SQL_RUNS = 7;

/**
 * The peer's figures (issue 39): oPodSync (PHP + SQLite, one `php -S` worker) on the gpodder.net paths, measured on
 * the same data as the heavy listener (1 000 subscriptions, 10 005 episode states), 3 rounds paired in time, the
 * median, in ms per request, as quoted in the table. The peer is not runnable here: these are the reference.
 * `ours`: the heavy listener's row that sends the same request; `jsonapi`: the row of the JSON:API request that
 * gets or sends the same data, and how many of it (pages of 100) the whole answer takes.
 */
export const PEER_FIGURES = {
  source:
    "issue 39 (Performance: cheaper than the peer on every workload, SQL included): oPodSync, PHP + SQLite, one `php -S` worker, same data (1 000 subscriptions, 10 005 episode states), median of 3 rounds paired in time",
  workloads: [
    {
      id: "subscriptions-since-0",
      request: "GET /api/2/subscriptions/{u}/{d}.json?since=0 (1 000 adds)",
      peer_ms: 2.1,
      ours: "gpodder-full-subscriptions",
      jsonapi: { row: "jsonapi-full-subscriptions", times: 10 },
    },
    {
      id: "episodes-upload-100",
      request: "POST /api/2/episodes/{u}.json, 100 actions",
      peer_ms: 3.8,
      ours: "gpodder-upload-100",
      jsonapi: { row: "jsonapi-operations-100", times: 1 },
    },
    {
      id: "episodes-since-0",
      request: "GET /api/2/episodes/{u}.json?since=0 (10 000 actions)",
      peer_ms: 64.7,
      ours: "gpodder-full-episodes",
      jsonapi: { row: "jsonapi-full-episodes", times: 100 },
    },
    {
      id: "simple-list",
      request: "GET /subscriptions/{u}.json (simple API, 1 000 subscriptions)",
      peer_ms: 2.9,
      ours: "simple-list",
      jsonapi: { row: "jsonapi-list", times: 10 },
    },
  ],
};

/** The D1 databases' SQLite files that Miniflare keeps under its persistence directory, by name. */
export function d1Files(stateDir) {
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      // Miniflare's own `metadata.sqlite` sits beside the databases (one file per database, named by its id's hash).
      else if (
        entry.name.endsWith(".sqlite") &&
        entry.name !== "metadata.sqlite" &&
        dir.endsWith("miniflare-D1DatabaseObject")
      )
        found.push(path);
    }
  };
  if (existsSync(stateDir)) walk(stateDir);
  return found.sort();
}

/**
 * Snapshots of the D1 databases (each file with its write-ahead log; the shared-memory index is rebuilt on open),
 * into `dir`; returns the copies' paths. Only while no request is under way: the bench sends one at a time.
 */
export function snapshotD1(stateDir, dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return d1Files(stateDir).map((file, i) => {
    const copy = join(dir, `d1-${i}.sqlite`);
    copyFileSync(file, copy);
    if (existsSync(`${file}-wal`)) copyFileSync(`${file}-wal`, `${copy}-wal`);
    return copy;
  });
}

/** A recorded bound value as D1 binds it: booleans as 1 and 0; anything but text, numbers and null is refused. */
function bindable(value) {
  if (value === null || typeof value === "string" || typeof value === "number") return value;
  if (typeof value === "boolean") return value ? 1 : 0;
  throw new Error(`a recorded D1 value of type ${typeof value} cannot be bound again: ${JSON.stringify(value)}`);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * The SQLite time of the recorded `calls` (RecordedCall[] of bench/recording.ts: each D1 round trip's statements
 * with their bound values, in the order the request sent them) on the database file `path`: `runs` times, each run
 * one transaction (BEGIN, every statement in order, ROLLBACK), so every run meets the same data and a write's
 * statements meet what the earlier ones wrote. Each statement is prepared once, before the runs; a run measures only
 * binding and stepping through every row. A run's figure is the CPU time the process spent in it (user + system,
 * `process.cpuUsage`): on a shared machine a run's wall time also counts the time other processes held the core
 * (under a load of 10 on 2 cores, 2 to 5 times the CPU time), which no deployed database would charge the request.
 * Returns the median of the runs' CPU µs, every run's, the median wall time, the statements, and the dearest
 * statement (its median wall time) with the start of its SQL.
 */
export async function timeStatements(path, calls, runs = SQL_RUNS) {
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(path);
  try {
    // D1 enforces foreign keys (node:sqlite does by default too) and answers a statement's values as they are.
    const statements = calls.flatMap((call) =>
      call.sql.map((sql, i) => ({ sql, params: (call.params[i] ?? []).map(bindable) })),
    );
    const prepared = new Map();
    for (const { sql } of statements) {
      if (prepared.has(sql)) continue;
      const statement = db.prepare(sql);
      statement.setReturnArrays?.(true);
      prepared.set(sql, statement);
    }
    const perStatement = statements.map(() => []);
    const cpu = [];
    const wall = [];
    const errors = new Set();
    for (let run = 0; run < runs; run++) {
      db.exec("BEGIN");
      const cpuBefore = process.cpuUsage();
      const wallBefore = process.hrtime.bigint();
      try {
        statements.forEach(({ sql, params }, i) => {
          const statement = prepared.get(sql);
          const started = process.hrtime.bigint();
          try {
            // all() steps through every row (iterate() costs about 2 µs more per statement in the JS iterator).
            statement.all(...params);
          } catch (err) {
            // Reported, not hidden: a statement that fails here met other data than the recorded request did.
            errors.add(`${err.message}: ${sql.slice(0, 80)}`);
          }
          perStatement[i].push(Number(process.hrtime.bigint() - started) / 1000);
        });
      } finally {
        const used = process.cpuUsage(cpuBefore);
        cpu.push(used.user + used.system);
        wall.push(Number(process.hrtime.bigint() - wallBefore) / 1000);
        db.exec("ROLLBACK");
      }
    }
    const medians = perStatement.map(median);
    // What the loop costs around a statement that does next to nothing (bind, call, one row as an array): the part
    // of each statement's figure that is Node's, not SQLite's (about 0.5 µs here; not subtracted).
    const floor = db.prepare("SELECT 1");
    floor.setReturnArrays?.(true);
    const floorRuns = Array.from({ length: 201 }, () => {
      const started = process.hrtime.bigint();
      floor.all();
      return Number(process.hrtime.bigint() - started) / 1000;
    });
    const dearest = medians.reduce((best, us, i) => (us > (medians[best] ?? -1) ? i : best), 0);
    return {
      sql_us: median(cpu),
      sql_us_runs: cpu,
      sql_wall_us: Math.round(median(wall)),
      statements: statements.length,
      node_floor_us_per_statement: Math.round(median(floorRuns) * 100) / 100,
      dearest_statement:
        statements.length === 0
          ? null
          : {
              us: Math.round(medians[dearest] * 10) / 10,
              sql: statements[dearest].sql.replace(/\s+/g, " ").slice(0, 160),
            },
      ...(errors.size > 0 ? { errors: [...errors] } : {}),
    };
  } finally {
    db.close();
  }
}

/**
 * What the harness calls around a recorded request: `before()` snapshots the D1 files, `after(calls)` times the
 * request's statements on the snapshot of the database the app uses (the first file: with several shards, every
 * shard holds every bench user) and removes the snapshot.
 */
export function sqlTimer(stateDir, dir) {
  let copies = [];
  return {
    before() {
      copies = snapshotD1(stateDir, dir);
      if (copies.length === 0) throw new Error(`no D1 file under ${stateDir}`);
    },
    async after(calls) {
      try {
        return await timeStatements(copies[0], calls);
      } finally {
        rmSync(dir, { recursive: true, force: true });
        copies = [];
      }
    },
  };
}
