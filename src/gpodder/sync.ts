import type { Context, MiddlewareHandler } from "hono";
import {
  type EpisodeState,
  episodeChangePages,
  GPODDER_SUBSCRIPTION_PAGE_ROWS,
  GPODDER_SUBSCRIPTION_PAGES,
  resolveFeeds,
  type SubscriptionChangePage,
  subscriptionChangePages,
  writeEpisodes,
  writeGpodderSubscriptions,
} from "../db/gpodder";
import { keyUserUrls } from "../db/retention";
import type { AppEnv } from "../env";
import { d1PrimarySession } from "../middleware/d1-session";
import { gpodderAuth } from "../middleware/gpodder-auth";
import { chargeRows, limitPerUser } from "../middleware/rate-limit";
import { shardOfUser } from "../shards";
import { pagedTextStream, withFirst } from "../text-stream";
import { type EpisodeAction, parseEpisodeAction, toEpisodeAction, toEpisodeOperation } from "./episode-actions";
import { guessFeedGuids, nameFeeds, rememberFeedGuids } from "./feed-guids";
import { badRequest, jsonRequestBody, MAX_GPODDER_ITEMS, tooMany, urlList } from "./protocol";
import { checkUpload, cleanUrls, type SentUrl, updateUrls } from "./subscriptions";

/**
 * The four sync operations both gpodder dialects serve, once, on the db functions of db/gpodder.ts: the
 * gpodder.net API v2 (routes/gpodder.ts, docs/API.md §14) and the API of the Nextcloud app gPodder Sync
 * (routes/nextcloud.ts, §17). Each route checks what its own path names (a username, a device), picks the
 * `since` it reads from, and shapes its answer; the rules (authentication, limits, charges, what is written
 * and read) are here.
 */

/** Authentication (Basic or the session cookie), the per-user limit, then the user's primary database. */
export const signedIn: MiddlewareHandler<AppEnv> = async (c, next) => {
  await gpodderAuth(c, async () => {
    await limitPerUser(c, async () => {
      await d1PrimarySession(c, next);
    });
  });
};

export function json(c: Context<AppEnv>, value: unknown): Response {
  return c.body(JSON.stringify(value), 200, { "Content-Type": "application/json" });
}

const validUrls = (items: readonly SentUrl[]) => items.flatMap((item) => (item.url === undefined ? [] : [item.url]));

/**
 * Subscribes and unsubscribes in one round trip (db/gpodder.ts); answers `update_urls`. `replaceAll` (the
 * simple API's PUT): every active subscription whose URL is not among the adds is removed too.
 */
export async function applySubscriptionChanges(
  c: Context<AppEnv>,
  add: SentUrl[],
  remove: SentUrl[],
  replaceAll = false,
) {
  const userId = c.get("userId");
  const feeds = await nameFeeds(validUrls(add));
  const { now, added } = await writeGpodderSubscriptions(
    c.get("db"),
    userId,
    { remove: validUrls(remove), keepOnly: replaceAll ? validUrls(add) : undefined, add: feeds },
    Date.now(),
  );
  // An episode upload naming one of these feeds next guesses its guid right.
  rememberFeedGuids(userId, feeds, added);
  return { timestamp: now, update_urls: updateUrls(add, added) };
}

/** A subscription upload's body `{"add"?: [...], "remove"?: [...]}`, its URLs cleaned and checked (400, 413). */
export async function subscriptionUpload(c: Context<AppEnv>): Promise<{ adds: SentUrl[]; removes: SentUrl[] }> {
  const body = await jsonRequestBody(c);
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw badRequest("Send a JSON object.");
  const { add, remove } = body as Record<string, unknown>;
  const adds = cleanUrls(urlList(add, "add"));
  const removes = cleanUrls(urlList(remove, "remove"));
  checkUpload(adds, removes);
  return { adds, removes };
}

/** Logs a failure after a streamed answer started (it then ends cut short: no closing bracket or tag). */
export function streamFailed(c: Context<AppEnv>, event: string) {
  const requestId = c.get("requestId");
  return (err: unknown) => console.error(JSON.stringify({ level: "error", requestId, event, error: String(err) }));
}

/** JSON array items written page by page: a comma before every item but the very first. */
export function jsonItems<T>(toJson: (item: T) => string | undefined): (page: readonly T[]) => string {
  let first = true;
  return (page) => {
    let text = "";
    for (const item of page) {
      const json = toJson(item);
      if (json === undefined) continue;
      text += first ? json : `,${json}`;
      first = false;
    }
    return text;
  };
}

/**
 * Applies episode actions in one round trip: their episode ids need their feeds' guids, so these are guessed
 * (feed-guids.ts) and the batch writes only if every guess is right. A wrong guess costs two more round trips
 * (the lookup, then the write), once per feed and isolate. Answers the database's clock.
 */
async function applyEpisodeActions(
  c: Context<AppEnv>,
  actions: readonly EpisodeAction[],
  devices: readonly string[],
  now: number,
): Promise<{ timestamp: number; skipped: number }> {
  const db = c.get("db");
  const userId = c.get("userId");
  const podcasts = [...new Set(actions.map((action) => action.podcast))];
  const feeds = await nameFeeds(podcasts);
  // The writes for the feeds' guids `guids`; undefined when `guarded` and a guess was wrong (nothing written).
  const write = async (guids: readonly string[], guarded: boolean) => {
    const guidOf = new Map(podcasts.map((url, index) => [url, guids[index]]));
    const operations = (
      await Promise.all(actions.map((action) => toEpisodeOperation(action, guidOf.get(action.podcast) as string, now)))
    ).filter((operation) => operation !== undefined);
    const written = await writeEpisodes(db, userId, operations, devices, now, guarded ? { feeds, guids } : undefined);
    return written && { timestamp: written.now, skipped: actions.length - operations.length };
  };
  const guessed = await write(guessFeedGuids(userId, feeds), true);
  if (guessed) return guessed;
  const resolved = await resolveFeeds(db, userId, feeds);
  rememberFeedGuids(userId, feeds, resolved);
  return (await write(
    resolved.map((feed) => feed.guid),
    false,
  )) as { timestamp: number; skipped: number };
}

/**
 * An episode upload (a JSON array of actions, else 400; at most 1000, else 413): each valid action applies to
 * its episode state, in one round trip; invalid ones are skipped and logged. Answers the database's clock.
 */
export async function uploadEpisodeActions(c: Context<AppEnv>): Promise<number> {
  const body = await jsonRequestBody(c);
  if (!Array.isArray(body)) throw badRequest("Send a JSON array of episode actions.");
  if (body.length > MAX_GPODDER_ITEMS) throw tooMany("episode actions");
  const actions = body.map(parseEpisodeAction);
  const valid = actions.filter((action) => action !== undefined);
  const devices = [...new Set(valid.flatMap((action) => (action.device === undefined ? [] : [action.device])))];
  const { timestamp, skipped } = await applyEpisodeActions(c, valid, devices, Date.now());
  const invalid = actions.length - valid.length + skipped;
  if (invalid > 0) {
    console.warn(
      JSON.stringify({
        level: "warn",
        requestId: c.get("requestId"),
        event: "episode_actions_skipped",
        count: invalid,
      }),
    );
  }
  return timestamp;
}

/**
 * The changes' pages, charging the user's limit one request per 100 changes once the `add` walk is done (the
 * rows in the range; the `remove` walk reads them again): as often as one statement over all of them was.
 */
async function* chargedChanges(
  c: Context<AppEnv>,
  pages: AsyncGenerator<SubscriptionChangePage, void, undefined>,
): AsyncGenerator<SubscriptionChangePage, void, undefined> {
  let walked = 0;
  let charged = false;
  for await (const page of pages) {
    if (page.list === "add") walked += page.rows;
    else if (!charged) {
      charged = true;
      await chargeRows(c, walked);
    }
    yield page;
  }
  if (!charged) await chargeRows(c, walked);
}

/**
 * `{"add":[...],"remove":[...],"timestamp":<n>}`: what changed since a Unix second (inclusive), feeds added and
 * feeds no active subscription has any more, each once, streamed page by page (since 0: the whole account, up
 * to 8 MiB of URL text escaped for JSON). The timestamp is the clock at the first page, written last.
 */
export async function subscriptionChangesSince(c: Context<AppEnv>, since: number): Promise<Response> {
  // Rows from before migration 0004 get their url_key first (a frozen bucket takes no write: its rows are then
  // compared by text, slowly, until the move is done), charged as the changes are. Unkeyed, each row of a page
  // costs a walk of the others: the pages then stay at their first size rather than growing.
  const { frozen } = await shardOfUser(c.get("shards"), c.get("userId"));
  if (!frozen) await chargeRows(c, await keyUserUrls(c.get("db"), c.get("userId")));
  const pageSize = frozen ? GPODDER_SUBSCRIPTION_PAGE_ROWS : GPODDER_SUBSCRIPTION_PAGES;
  const { pages, now } = subscriptionChangePages(c.get("db"), c.get("userId"), since, pageSize);
  const charged = chargedChanges(c, pages);
  const changes = withFirst(await charged.next(), charged);
  const lists = { add: jsonItems(JSON.stringify), remove: jsonItems(JSON.stringify) };
  let removing = false;
  const toRemove = () => {
    if (removing) return "";
    removing = true;
    return '],"remove":[';
  };
  const page = (changed: SubscriptionChangePage) =>
    (changed.list === "remove" ? toRemove() : "") + lists[changed.list](changed.urls);
  const body = pagedTextStream(
    changes,
    { head: '{"add":[', page, tail: () => `${toRemove()}],"timestamp":${now()}}` },
    streamFailed(c, "gpodder_subscription_changes_failed"),
  );
  return c.body(body, 200, { "Content-Type": "application/json" });
}

/**
 * `{"actions":[...],"timestamp":<n>}`: the latest state of each episode changed since a Unix second
 * (inclusive), streamed page by page (50 000 states at the quota, each naming its feed's URL: ~100 MB of JSON
 * with 2 KB URLs); with `podcast`, only that feed URL's. The timestamp is the clock at the first page, written
 * last.
 */
export async function episodeActionsSince(
  c: Context<AppEnv>,
  since: number,
  podcast: string | undefined,
): Promise<Response> {
  const { pages, now } = episodeChangePages(c.get("db"), c.get("userId"), since);
  const states = withFirst(await pages.next(), pages);
  const page = jsonItems((state: { podcast: string; episode: EpisodeState }) => {
    if (podcast !== undefined && state.podcast !== podcast) return undefined;
    const action = toEpisodeAction(state.podcast, state.episode);
    return action && JSON.stringify(action);
  });
  const body = pagedTextStream(
    states,
    { head: '{"actions":[', page, tail: () => `],"timestamp":${now()}}` },
    streamFailed(c, "gpodder_episodes_failed"),
  );
  return c.body(body, 200, { "Content-Type": "application/json" });
}
