import { database } from "./db/database";
import { type AppBindings, configured } from "./env";
import { feedUserAgent, runFeedRound } from "./feeds/round";
import { runRetention } from "./retention";
import { shardRouting } from "./shards";

/**
 * The Cron Trigger (wrangler.toml `[triggers] crons`, every 10 minutes) runs two jobs side by side: retention
 * (src/retention.ts) and a feed round (src/feeds/round.ts). Neither waits for or stops the other; a job that fails
 * is logged and the run fails after both have ended, so the next run retries.
 */
export async function scheduled(
  controller: ScheduledController,
  env: AppBindings,
  _ctx?: ExecutionContext,
): Promise<void> {
  const jobs = await Promise.allSettled([runRetention(controller, env), feedRound(controller, env)]);
  const failed = jobs.find((job) => job.status === "rejected");
  if (failed) throw (failed as PromiseRejectedResult).reason;
}

async function feedRound(controller: ScheduledController, env: AppBindings): Promise<void> {
  const started = Date.now();
  const routing = shardRouting(env);
  const databases = new Map([...routing.databases].map(([name, d1]) => [name, database(d1)] as const));
  try {
    const summary = await runFeedRound(
      databases,
      {
        enabled: configured(env.FEED_FETCH)?.toLowerCase() !== "off",
        allowPrivate: configured(env.FEED_FETCH_ALLOW_PRIVATE)?.toLowerCase() === "true",
        userAgent: feedUserAgent(configured(env.PUBLIC_BASE_URL)),
        // While a bucket is being moved its users' rows take no write (the move's copies and checksums stay as it
        // left them), and a learned move writes users' subscriptions: none is applied until the move is done (the
        // aliases still moving say what is left).
        ...(routing.frozen.size > 0 ? { movesPerStatement: 0 } : {}),
      },
      controller.scheduledTime,
    );
    // One line per round (docs/README-ops.md, "What to watch").
    console.log(JSON.stringify({ level: "info", event: "feed_round", durationMs: Date.now() - started, ...summary }));
  } catch (err) {
    console.error(JSON.stringify({ level: "error", event: "feed_round_failed", error: String(err) }));
    throw err;
  }
}
