import { purgeExpiredLoginFlows } from "./db/login-flows";
import {
  backfillUrlKeys,
  purgeEndedSessions,
  purgeExpiredAccountSessions,
  purgeExpiredTombstones,
  purgeUncollectedAppPasswords,
  TOMBSTONE_RETENTION_MS,
} from "./db/retention";
import type { AppBindings } from "./env";
import { shardOfUser, shardRouting } from "./shards";

/**
 * The retention job of the Cron Trigger (src/scheduled.ts): purges tombstones older than 180 days in every database of
 * the shard map, a bounded slice per database per run (src/db/retention.ts), then gives a slice of the rows from
 * before migration 0004 their url_key, then deletes a slice of ended gpodder sessions and one of expired account
 * page sessions, and one of app passwords that Login Flow grants minted and their apps never collected. In each
 * database it writes
 * only the rows of users the map places there and whose bucket is not frozen, so a bucket move's copies and
 * checksums stay as the move left them. It also deletes expired Login Flows (docs/API.md §17), which belong to
 * no user: in every database, not only bucket 0's, so flows left behind by a move of bucket 0 go too. A database
 * that fails is logged and retried by the next run; the others still run.
 */
export async function runRetention(controller: ScheduledController, env: AppBindings): Promise<void> {
  const started = Date.now();
  const cutoff = controller.scheduledTime - TOMBSTONE_RETENTION_MS;
  const routing = shardRouting(env);
  const names = [...routing.databases.keys()];
  const runs = [...routing.databases].map(async ([name, database]) => {
    const writable = async (userId: string) => {
      const shard = await shardOfUser(routing, userId);
      return shard.name === name && !shard.frozen;
    };
    try {
      const users = await purgeExpiredTombstones(database, cutoff, writable);
      const urlKeys = await backfillUrlKeys(database, writable);
      const sessions = await purgeEndedSessions(database, controller.scheduledTime, writable);
      const accountSessions = await purgeExpiredAccountSessions(database, controller.scheduledTime, writable);
      const loginFlows = await purgeExpiredLoginFlows(database, controller.scheduledTime);
      const uncollected = await purgeUncollectedAppPasswords(database, controller.scheduledTime, writable);
      console.log(
        JSON.stringify({
          level: "info",
          event: "tombstone_retention",
          database: name,
          users,
          urlKeys,
          sessions,
          accountSessions,
          loginFlows,
          uncollectedAppPasswords: uncollected,
        }),
      );
      return { users, urlKeys, sessions, accountSessions, loginFlows, uncollected };
    } catch (err) {
      console.error(
        JSON.stringify({ level: "error", event: "tombstone_retention_failed", database: name, error: String(err) }),
      );
      throw err;
    }
  });
  const results = await Promise.allSettled(runs);
  const done = results.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  const failedDatabases = names.filter((_, index) => results[index].status === "rejected");
  // One line per run (docs/README-ops.md, "What to watch"): a run that stops happening, or fails, shows here.
  const summary = {
    level: failedDatabases.length > 0 ? "error" : "info",
    event: "cron_run",
    cron: controller.cron,
    scheduledTime: new Date(controller.scheduledTime).toISOString(),
    durationMs: Date.now() - started,
    databases: names.length,
    purgedUsers: done.reduce((sum, run) => sum + run.users, 0),
    urlKeys: done.reduce((sum, run) => sum + run.urlKeys, 0),
    sessions: done.reduce((sum, run) => sum + run.sessions, 0),
    accountSessions: done.reduce((sum, run) => sum + run.accountSessions, 0),
    loginFlows: done.reduce((sum, run) => sum + run.loginFlows, 0),
    uncollectedAppPasswords: done.reduce((sum, run) => sum + run.uncollected, 0),
    failedDatabases,
  };
  (failedDatabases.length > 0 ? console.error : console.log)(JSON.stringify(summary));
  const failed = results.find((result) => result.status === "rejected");
  if (failed) throw (failed as PromiseRejectedResult).reason;
}
