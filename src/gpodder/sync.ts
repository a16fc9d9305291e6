import type { Context, MiddlewareHandler } from "hono";
import { WriteBatch } from "../db/batch";
import { DatabaseError } from "../db/database";
import {
  type EpisodeUploadWritten,
  type GuessedWrite,
  readEpisodeActions,
  readSubscriptionChanges,
  type SubscriptionChanges,
  writeEpisodes,
  writeGpodderSubscriptions,
} from "../db/gpodder";
import { keyUserUrls } from "../db/retention";
import type { TextPage } from "../db/text-pages";
import type { AppEnv } from "../env";
import { d1PrimarySession } from "../middleware/d1-session";
import { gpodderAuth } from "../middleware/gpodder-auth";
import { chargeRenumbering, chargeRows, limitPerUser, rowCharger } from "../middleware/rate-limit";
import { shardOfUser } from "../shards";
import { pagedTextStream, withFirst } from "../text-stream";
import { pathDevice, withPathDevice } from "./devices";
import { carriesState, type EpisodeAction, parseEpisodeAction, toEpisodeWrite } from "./episode-actions";
import { guessFeedGuids, nameFeeds, rememberFeedGuids } from "./feed-guids";
import {
  badRequest,
  jsonRequestBody,
  MAX_GPODDER_ITEMS,
  MAX_SUBSCRIPTION_BODY_BYTES,
  tooMany,
  UPLOAD_TIMESTAMP_MARGIN_SECONDS,
  uploadTimestamp,
  urlList,
} from "./protocol";
import { checkUpload, cleanUrls, type SentUrl, uniqueUrls, updateUrls } from "./subscriptions";

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
 * simple API's PUT): every active subscription whose URL is not among the adds is removed too. `deviceId`: the
 * device the path names, created or kept in the same round trip (past the device limit: 400, nothing written). Up
 * to 10 000 URLs in one transaction: charged to the user's limit as the requests of 100 writing them would be (as
 * an OPML import is), and for the rows the purges renumbered.
 */
export async function applySubscriptionChanges(
  c: Context<AppEnv>,
  add: SentUrl[],
  remove: SentUrl[],
  options: { replaceAll?: boolean; deviceId?: string } = {},
) {
  const userId = c.get("userId");
  const device = options.deviceId === undefined ? undefined : pathDevice(c, options.deviceId);
  const feeds = await nameFeeds(uniqueUrls(add));
  const removed = await nameFeeds(validUrls(remove));
  const batch = new WriteBatch();
  const { now, added } = await withPathDevice(c, device, () =>
    writeGpodderSubscriptions(
      c.get("db"),
      c.get("gpodder").credential,
      { remove: removed, add: feeds, replaceAll: options.replaceAll, device: device?.id },
      Date.now(),
      batch,
    ),
  );
  await chargeRenumbering(c, batch, add.length + remove.length);
  // An episode upload naming one of these feeds next guesses its guid right.
  rememberFeedGuids(userId, feeds, added);
  return { timestamp: uploadTimestamp(now), update_urls: updateUrls(add, added) };
}

/**
 * A subscription upload's body `{"add"?: [...], "remove"?: [...]}` (up to 16 MiB: gPodder sends every queued
 * change in one request), its URLs cleaned and checked (400, 413).
 */
export async function subscriptionUpload(c: Context<AppEnv>): Promise<{ adds: SentUrl[]; removes: SentUrl[] }> {
  const body = await jsonRequestBody(c, MAX_SUBSCRIPTION_BODY_BYTES);
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
 * What an episode upload did beyond its writes: the actions that carried state but broke the episode rules
 * (`skipped`; `download`, `delete`, `flattr` and `play` without a position store nothing and are not skipped),
 * and those the episode quota or the storage budget refused.
 */
interface EpisodeUpload {
  timestamp: number;
  skipped: number;
  refused: { episodeLimit: number; storageLimit: number };
}

/**
 * Batches an upload may take before it gives up (503, nothing lost: the app sends it again): a second one only
 * when a guess was wrong, a third only when another request changed what a URL resolves to meanwhile.
 */
const MAX_UPLOAD_BATCHES = 3;

/**
 * Applies episode actions in one round trip: their episode ids need their feeds' guids, so these are guessed
 * (feed-guids.ts) and each write applies only where its guess is what its URL resolves to (db/gpodder.ts). A feed
 * guessed wrong costs one more round trip, once per feed and isolate: its actions again, for the guid the first
 * batch read. Answers the database's clock.
 */
async function applyEpisodeActions(
  c: Context<AppEnv>,
  actions: readonly EpisodeAction[],
  devices: readonly string[],
  now: number,
): Promise<EpisodeUpload> {
  const userId = c.get("userId");
  const podcasts = [...new Set(actions.map((action) => action.podcast))];
  const feedOf = new Map(podcasts.map((url, index) => [url, index]));
  const feeds = await nameFeeds(podcasts);
  let guesses = guessFeedGuids(userId, feeds);
  const refused = { episodeLimit: 0, storageLimit: 0 };
  // The actions still to write (their places in `actions`): all of them, then those of unsettled feeds.
  let pending = actions.map((_, index) => index);
  let skipped = 0;
  let written: EpisodeUploadWritten | undefined;
  // One batch at least: with no action to write, it still creates the devices and reads the clock.
  for (let batch = 1; batch === 1 || pending.length > 0; batch++) {
    if (batch > MAX_UPLOAD_BATCHES) throw new DatabaseError(new Error("the feeds' guids kept changing"));
    const planned: { index: number; write: GuessedWrite }[] = [];
    for (const index of pending) {
      const feed = feedOf.get(actions[index].podcast) as number;
      const write = await toEpisodeWrite(actions[index], guesses[feed], now);
      if (write) planned.push({ index, write: { write, feed } });
      else if (batch === 1 && carriesState(actions[index])) skipped++;
    }
    written = await writeEpisodes(
      c.get("db"),
      c.get("gpodder").credential,
      feeds,
      guesses,
      planned.map((item) => item.write),
      batch === 1 ? devices : [],
      now,
    );
    const { settled } = written;
    written.refused.forEach((counts, feed) => {
      if (!settled[feed]) return;
      refused.episodeLimit += counts.limit;
      refused.storageLimit += counts.storage;
    });
    pending = planned.filter(({ write }) => !settled[write.feed]).map(({ index }) => index);
    guesses = written.resolved.map((feed) => feed.guid);
    rememberFeedGuids(userId, feeds, written.resolved);
  }
  return { timestamp: uploadTimestamp((written as EpisodeUploadWritten).now), skipped, refused };
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
  const { timestamp, skipped, refused } = await applyEpisodeActions(c, valid, devices, Date.now());
  const invalid = actions.length - valid.length + skipped;
  const requestId = c.get("requestId");
  if (invalid > 0) {
    console.warn(JSON.stringify({ level: "warn", requestId, event: "episode_actions_skipped", count: invalid }));
  }
  // Refused by the quota or the budget: nothing tells the app (gpodder has no per-action error), so the log does.
  const over = refused.episodeLimit + refused.storageLimit;
  if (over > 0) {
    console.warn(
      JSON.stringify({ level: "warn", requestId, event: "episode_actions_refused", count: over, ...refused }),
    );
  }
  return timestamp;
}

/** Pages charged to the user's limit as they are read, by the rows each walked (rate-limit.ts, `rowCharger`). */
export async function* charged<T>(
  c: Context<AppEnv>,
  pages: AsyncGenerator<T, void, undefined>,
  walkedBy: (page: T) => number,
): AsyncGenerator<T, void, undefined> {
  const charge = rowCharger(c);
  for await (const page of pages) {
    await charge(walkedBy(page));
    yield page;
  }
}

/** Texts of comma-separated JSON items, page after page, as one list's items: a comma between two pages' items. */
function itemsJoined(): (text: string) => string {
  let first = true;
  return (text) => {
    if (text === "") return "";
    const joined = first ? text : `,${text}`;
    first = false;
    return joined;
  };
}

/**
 * The changes' pages, `add` then `remove`, charging the user's limit one request per 100 rows once the `add` walk
 * is done (the rows in the range; the `remove` walk reads them again): as often as one statement over all of them
 * was.
 */
async function* chargedChanges(
  c: Context<AppEnv>,
  changes: SubscriptionChanges,
): AsyncGenerator<{ list: "add" | "remove"; page: TextPage }, void, undefined> {
  let walked = 0;
  for await (const page of changes.add) {
    walked += page.walked;
    yield { list: "add", page };
  }
  await chargeRows(c, walked);
  for await (const page of changes.remove) yield { list: "remove", page };
}

/**
 * `{"add":[...],"remove":[...],"timestamp":<n>}`: what changed since a Unix second (inclusive), feeds added and
 * feeds no active subscription has any more, each once, streamed page by page (since 0: the whole account, up
 * to 8 MiB of URL text escaped for JSON). The timestamp is the clock at the first pages, written last. `deviceId`:
 * the device the path names, created or kept in the same round trip as the first pages (past the device limit:
 * 400). An account whose URLs fit a page per list (1.75 MiB) is answered in that one round trip.
 */
export async function subscriptionChangesSince(
  c: Context<AppEnv>,
  since: number,
  deviceId?: string,
): Promise<Response> {
  const db = c.get("db");
  const userId = c.get("userId");
  const caller = c.get("gpodder").credential;
  const { frozen } = await shardOfUser(c.get("shards"), userId);
  const device = deviceId === undefined ? undefined : pathDevice(c, deviceId);
  // A subscription made before `since`, or in the 10 minutes an upload's timestamp goes back (to the end of that
  // second: the timestamp is the clock's second after the write), is one the client holds: its learned move is
  // neither an add nor a remove (docs/API.md §18).
  const knownBefore = (since + UPLOAD_TIMESTAMP_MARGIN_SECONDS + 1) * 1000;
  let changes = await withPathDevice(c, device, () =>
    readSubscriptionChanges(db, caller, since, { frozen, device, knownBefore }),
  );
  if (changes.unkeyed) {
    // Rows from before migration 0004 get their url_key first, charged as the changes are, then the changes are
    // read again (a frozen bucket takes no write: its rows are compared by text, slowly, in small pages, until the
    // move is done).
    await chargeRows(c, await keyUserUrls(db, userId));
    changes = await readSubscriptionChanges(db, caller, since, { frozen, knownBefore });
  }
  const { now } = changes;
  const pages = chargedChanges(c, changes);
  const lists = { add: itemsJoined(), remove: itemsJoined() };
  let removing = false;
  const toRemove = () => {
    if (removing) return "";
    removing = true;
    return '],"remove":[';
  };
  const body = pagedTextStream(
    pages,
    {
      head: '{"add":[',
      page: ({ list, page }) => (list === "remove" ? toRemove() : "") + lists[list](page.text),
      tail: () => `${toRemove()}],"timestamp":${now}}`,
    },
    streamFailed(c, "gpodder_subscription_changes_failed"),
  );
  return c.body(body, 200, { "Content-Type": "application/json" });
}

/**
 * `{"actions":[...],"timestamp":<n>}`: the latest state of each episode changed since a Unix second
 * (inclusive), streamed page by page (50 000 states at the quota, each naming its feed's URL: ~100 MB of JSON
 * with 2 KB URLs); with `podcast`, only that feed URL's. SQLite writes each action's text (db/gpodder.ts); the
 * isolate splices the pages. The timestamp is the clock at the first page, written last. `aliases`: moved
 * subscriptions' states under their old URLs too (the gpodder.net API's, for gPodder: `readEpisodeActions`).
 */
export async function episodeActionsSince(
  c: Context<AppEnv>,
  since: number,
  podcast: string | undefined,
  aliases: boolean,
): Promise<Response> {
  const read = await readEpisodeActions(c.get("db"), c.get("userId"), since, { podcast, aliases });
  const pages = charged(c, read.pages, (page) => page.walked);
  const actions = itemsJoined();
  const body = pagedTextStream(
    withFirst(await pages.next(), pages),
    { head: '{"actions":[', page: (page: TextPage) => actions(page.text), tail: () => `],"timestamp":${read.now}}` },
    streamFailed(c, "gpodder_episodes_failed"),
  );
  return c.body(body, 200, { "Content-Type": "application/json" });
}
