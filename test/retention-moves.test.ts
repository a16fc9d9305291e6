import { describe, expect, it } from "vitest";
import { TOMBSTONE_RETENTION_MS, TOMBSTONES_PER_RUN, URL_KEYS_PER_RUN } from "../src/db/retention";
import { bucketOf } from "../src/shards";
import { runCron, seedSubscriptions, shardDatabases, shardFor } from "./helpers";

/**
 * src/retention.ts: the retention cron writes only rows of users the shard map places in the database it runs
 * on and whose bucket is not frozen, so a bucket move (`npm run shards:move`), which checksums what it copied
 * and what it leaves behind, never finds them changed by a run.
 */

/** A time at which every tombstone seeded now has passed the retention period. */
const afterRetention = () => Date.now() + TOMBSTONE_RETENTION_MS + 60_000;

/** Every row of the user in `database` (the key included), and the user's stats there. */
async function rowsIn(database: D1Database, userId: string) {
  const rows = await database.prepare("SELECT * FROM subscriptions WHERE user_id = ? ORDER BY guid").bind(userId).all();
  const stats = await database.prepare("SELECT * FROM user_stats WHERE user_id = ?").bind(userId).first();
  return { rows: rows.results, stats };
}

/** Seeds rows the cron has work on: expired tombstones, and active rows from before migration 0004 (no url_key). */
async function seedCronWork(userId: string, database?: D1Database) {
  await seedSubscriptions(userId, 4, { database });
  await seedSubscriptions(userId, 3, { unsubscribed: true, database });
}

const workLeft = async (database: D1Database, userId: string) => {
  const { rows } = await rowsIn(database, userId);
  return {
    tombstones: rows.filter((row) => row.unsubscribed_at !== null).length,
    unkeyed: rows.filter((row) => row.url_key === null).length,
  };
};

describe("retention cron and bucket moves", () => {
  it("writes nothing of a user whose bucket is frozen, and does the work once it is not", async () => {
    const userId = "retention-frozen";
    await seedCronWork(userId);
    const { database } = await shardFor(userId);
    const before = await rowsIn(database, userId);
    expect(await workLeft(database, userId)).toEqual({ tombstones: 3, unkeyed: 7 });

    await runCron(afterRetention(), { SHARD_FROZEN: String(await bucketOf(userId)) });
    expect(await rowsIn(database, userId)).toEqual(before);

    await runCron(afterRetention());
    expect(await workLeft(database, userId)).toEqual({ tombstones: 0, unkeyed: 0 });
  });

  it.skipIf(shardDatabases().length < 2)(
    "leaves a user's rows alone in a database the map does not place the user in (a move's copies)",
    async () => {
      const userId = "retention-copied";
      const owner = await shardFor(userId);
      const other = shardDatabases().find((shard) => shard.name !== owner.name);
      if (!other) throw new Error("two databases expected");
      await seedCronWork(userId, other.database);
      await seedCronWork(userId, owner.database);
      const copies = await rowsIn(other.database, userId);

      await runCron(afterRetention());
      expect(await rowsIn(other.database, userId)).toEqual(copies);
      // The same rows where the map places the user were purged and keyed in the same run.
      expect(await workLeft(owner.database, userId)).toEqual({ tombstones: 0, unkeyed: 0 });
    },
  );

  it("does not let a frozen user's oldest rows hold back the others of the database", async () => {
    // Sorted first among rows without a key, and seeded first: its tombstones are the oldest.
    const frozenUser = "a-retention-frozen-oldest";
    const frozen = await shardFor(frozenUser);
    const frozenBucket = await bucketOf(frozenUser);
    let ownedUser = "";
    for (let n = 0; !ownedUser; n++) {
      const candidate = `z-retention-held-back-${n}`;
      if ((await shardFor(candidate)).name === frozen.name && (await bucketOf(candidate)) !== frozenBucket) {
        ownedUser = candidate;
      }
    }
    // More than one find's slice of each kind of work, all of the frozen user.
    const more = Math.max(TOMBSTONES_PER_RUN, URL_KEYS_PER_RUN) + 20;
    await seedSubscriptions(frozenUser, more, { unsubscribed: true });
    await seedCronWork(ownedUser);
    const before = await rowsIn(frozen.database, frozenUser);

    await runCron(afterRetention(), { SHARD_FROZEN: String(frozenBucket) });
    expect(await workLeft(frozen.database, ownedUser)).toEqual({ tombstones: 0, unkeyed: 0 });
    expect(await rowsIn(frozen.database, frozenUser)).toEqual(before);
  });
});
