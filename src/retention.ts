import { purgeExpiredLoginFlows } from "./db/login-flows";
import { backfillUrlKeys, purgeExpiredTombstones, TOMBSTONE_RETENTION_MS } from "./db/retention";
import type { AppBindings } from "./env";
import { shardOfUser, shardRouting } from "./shards";

/**
 * The Cron Trigger (wrangler.toml `[triggers] crons`): purges tombstones older than 180 days in every database of
 * the shard map, a bounded slice per database per run (src/db/retention.ts), then gives a slice of the rows from
 * before migration 0004 their url_key. In each database it writes only the rows of users the map places there
 * and whose bucket is not frozen, so a bucket move's copies and checksums stay as the move left them. It also
 * deletes expired Login Flows (docs/API.md §17), which belong to no user: in every database, not only bucket 0's,
 * so flows left behind by a move of bucket 0 go too. A database that fails is logged and retried by the next
 * run; the others still run.
 */
export async function scheduled(
  controller: ScheduledController,
  env: AppBindings,
  _ctx?: ExecutionContext,
): Promise<void> {
  const cutoff = controller.scheduledTime - TOMBSTONE_RETENTION_MS;
  const routing = shardRouting(env);
  const runs = [...routing.databases].map(async ([name, database]) => {
    const writable = async (userId: string) => {
      const shard = await shardOfUser(routing, userId);
      return shard.name === name && !shard.frozen;
    };
    try {
      const users = await purgeExpiredTombstones(database, cutoff, writable);
      const urlKeys = await backfillUrlKeys(database, writable);
      const loginFlows = await purgeExpiredLoginFlows(database, controller.scheduledTime);
      console.log(
        JSON.stringify({ level: "info", event: "tombstone_retention", database: name, users, urlKeys, loginFlows }),
      );
    } catch (err) {
      console.error(
        JSON.stringify({ level: "error", event: "tombstone_retention_failed", database: name, error: String(err) }),
      );
      throw err;
    }
  });
  const results = await Promise.allSettled(runs);
  const failed = results.find((result) => result.status === "rejected");
  if (failed) throw (failed as PromiseRejectedResult).reason;
}
