// Seed data, written straight into D1 with SQL (a recursive CTE generates the rows inside SQLite, so
// no statement comes near D1's limit of 100 bound parameters). The triggers of the migrations keep
// user_stats in step, exactly as they do for rows the API writes.
//
// Every seeded user gets its active subscriptions 4 s apart and, where asked, tombstones (rows
// marked unsubscribed) interleaved among them in list order: a list query that walks tombstones
// shows it in rows read. Each row is one change of the user's change feed: the actives are changes
// 1..active, the tombstones the ones after (the insert trigger makes the last the user's version).

const BASE_TIME = Date.UTC(2025, 0, 1);
const SPACING_MS = 4000;

/** Deterministic seeded guid n of user number u (lowercase, RFC 9562 syntax). */
export function seededGuid(userNo, n) {
  return `${userNo.toString(16).padStart(8, "0")}-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;
}

const INSERT_ACTIVE = `
WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n + 1 < ?1)
INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq)
SELECT ?2, printf('%08x-0000-4000-8000-%012x', ?3, n), printf('https://feeds.example.com/%s/%d.xml', ?2, n),
       ?4 + n * ${SPACING_MS}, NULL, n + 1
FROM seq`;

// Tombstone k sits between actives 4k and 4k+1 (or spread evenly for other ratios); guids continue after the actives.
const INSERT_TOMBSTONES = `
WITH RECURSIVE seq(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM seq WHERE k + 1 < ?1)
INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq)
SELECT ?2, printf('%08x-0000-4000-8000-%012x', ?3, ?5 + k), printf('https://feeds.example.com/%s/gone-%d.xml', ?2, k),
       ?4 + (k * ?6) * ${SPACING_MS} + ${SPACING_MS / 2}, ?4 + (k * ?6) * ${SPACING_MS} + ${SPACING_MS / 2} + 1000,
       ?5 + k + 1
FROM seq`;

/**
 * @param {D1Database} db
 * @param {{ id: string, no: number, active: number, tombstones?: number }[]} users
 */
export async function seed(db, users) {
  const statements = [];
  for (const { id, no, active, tombstones = 0 } of users) {
    if (active > 0) statements.push(db.prepare(INSERT_ACTIVE).bind(active, id, no, BASE_TIME));
    if (tombstones > 0) {
      const stride = Math.max(1, Math.floor(active / tombstones));
      statements.push(db.prepare(INSERT_TOMBSTONES).bind(tombstones, id, no, BASE_TIME, active, stride));
    }
  }
  const results = await db.batch(statements);
  return results.reduce((sum, result) => sum + (result.meta.rows_written ?? 0), 0);
}

/** Active and tombstoned row counts per user, to check the seed landed. */
export async function countRows(db, userId) {
  const row = await db
    .prepare(
      "SELECT sum(unsubscribed_at IS NULL) AS active, sum(unsubscribed_at IS NOT NULL) AS tombstones FROM subscriptions WHERE user_id = ?",
    )
    .bind(userId)
    .first();
  return { active: row?.active ?? 0, tombstones: row?.tombstones ?? 0 };
}
