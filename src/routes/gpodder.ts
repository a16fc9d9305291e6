import type { Context, MiddlewareHandler } from "hono";
import { Hono } from "hono";
import { verifiedCredentials } from "../auth/verified-credentials";
import { endSession } from "../db/app-passwords";
import { WriteBatch } from "../db/batch";
import { listDeviceIds, listDevices, saveDevice } from "../db/devices";
import {
  type EpisodeChangePage,
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
import { activeFeedPages } from "../db/opml";
import { keyUserUrls } from "../db/retention";
import type { AppEnv } from "../env";
import { checkCaption, deviceLimitReached, ensurePathDevice, rememberDevice } from "../gpodder/devices";
import {
  carriesState,
  type EpisodeAction,
  parseEpisodeAction,
  toEpisodeAction,
  toEpisodeOperation,
} from "../gpodder/episode-actions";
import { guessFeedGuids, nameFeeds, rememberFeedGuids } from "../gpodder/feed-guids";
import {
  badRequest,
  DEVICE_ID,
  DEVICE_TYPES,
  fileSegment,
  jsonRequestBody,
  MAX_GPODDER_ITEMS,
  MAX_SUBSCRIPTION_BODY_BYTES,
  sinceParameter,
  textRequestBody,
  tooMany,
  uploadTimestamp,
  urlList,
} from "../gpodder/protocol";
import { checkUpload, cleanUrls, type SentUrl, uniqueUrls, updateUrls } from "../gpodder/subscriptions";
import { d1PrimarySession } from "../middleware/d1-session";
import { checkPathUsername, gpodderAuth, sessionCookieHeader } from "../middleware/gpodder-auth";
import { chargeRenumbering, chargeRows, limitPerUser, rowCharger } from "../middleware/rate-limit";
import { OPML_CONTENT_TYPE } from "../opml/media-types";
import { opmlStream } from "../opml/serialise";
import { shardOfUser } from "../shards";
import { pagedTextStream, withFirst } from "../text-stream";

/**
 * The gpodder.net API v2 and its simple API (docs/API.md §14), on the same data as /v1: what gPodder,
 * AntennaPod, Kasts and libmygpo-qt sync through. Success is exactly 200, JSON unless said otherwise.
 */

/** Authentication (Basic or the session cookie), the per-user limit, then the user's primary database. */
const signedIn: MiddlewareHandler<AppEnv> = async (c, next) => {
  await gpodderAuth(c, async () => {
    await limitPerUser(c, async () => {
      await d1PrimarySession(c, next);
    });
  });
};

function empty(c: Context<AppEnv>): Response {
  return c.body(null, 200);
}

function json(c: Context<AppEnv>, value: unknown): Response {
  return c.body(JSON.stringify(value), 200, { "Content-Type": "application/json" });
}

const validUrls = (items: readonly SentUrl[]) => items.flatMap((item) => (item.url === undefined ? [] : [item.url]));

/**
 * Subscribes and unsubscribes in one round trip (db/gpodder.ts); answers `update_urls`. `replaceAll` (the
 * simple API's PUT): every active subscription whose URL is not among the adds is removed too. Up to 10 000
 * URLs in one transaction: charged to the user's limit as the requests of 100 writing them would be (as an OPML
 * import is), and for the rows the purges renumbered.
 */
async function applySubscriptionChanges(c: Context<AppEnv>, add: SentUrl[], remove: SentUrl[], replaceAll = false) {
  const userId = c.get("userId");
  const feeds = await nameFeeds(uniqueUrls(add));
  const batch = new WriteBatch();
  const { now, added } = await writeGpodderSubscriptions(
    c.get("db"),
    c.get("gpodder").credential,
    { remove: validUrls(remove), add: feeds, replaceAll },
    Date.now(),
    batch,
  );
  await chargeRenumbering(c, batch, add.length + remove.length);
  // An episode upload naming one of these feeds next guesses its guid right.
  rememberFeedGuids(userId, feeds, added);
  return { timestamp: uploadTimestamp(now), update_urls: updateUrls(add, added) };
}

/** Logs a failure after a streamed answer started (it then ends cut short: no closing bracket or tag). */
function streamFailed(c: Context<AppEnv>, event: string) {
  const requestId = c.get("requestId");
  return (err: unknown) => console.error(JSON.stringify({ level: "error", requestId, event, error: String(err) }));
}

/** JSON array items written page by page: a comma before every item but the very first. */
function jsonItems<T>(toJson: (item: T) => string | undefined): (page: readonly T[]) => string {
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
 * The simple API's list in one of its formats, streamed page by page as the OPML export is (docs/API.md §15):
 * an account of 10 000 feeds with 2 KB URLs is ~20 MB of text, more escaped. The first page is read before
 * the response starts, so an unreachable database is still an error answer.
 */
async function simpleList(c: Context<AppEnv>, format: "json" | "txt" | "opml"): Promise<Response> {
  const pages = charged(c, activeFeedPages(c.get("db"), c.get("userId")), (page) => page.length);
  const feeds = withFirst(await pages.next(), pages);
  const failed = streamFailed(c, "gpodder_list_failed");
  if (format === "opml") {
    return c.body(opmlStream(feeds, new Date(), failed), 200, { "Content-Type": OPML_CONTENT_TYPE });
  }
  if (format === "json") {
    const page = jsonItems((feed: { feedUrl: string }) => JSON.stringify(feed.feedUrl));
    return c.body(pagedTextStream(feeds, { head: "[", page, tail: () => "]" }, failed), 200, {
      "Content-Type": "application/json",
    });
  }
  const lines = (page: readonly { feedUrl: string }[]) => page.map((feed) => `${feed.feedUrl}\n`).join("");
  return c.body(pagedTextStream(feeds, { head: "", page: lines, tail: () => "" }, failed), 200, {
    "Content-Type": "text/plain; charset=utf-8",
  });
}

/**
 * Applies episode actions in one round trip: their episode ids need their feeds' guids, so these are guessed
 * (feed-guids.ts) and the batch writes only if every guess is right. A wrong guess costs two more round trips
 * (the lookup, then the write), once per feed and isolate. Answers the database's clock.
 */
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

async function applyEpisodeActions(
  c: Context<AppEnv>,
  actions: readonly EpisodeAction[],
  devices: readonly string[],
  now: number,
): Promise<EpisodeUpload> {
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
    const guess = guarded ? { feeds, guids } : undefined;
    const written = await writeEpisodes(db, c.get("gpodder").credential, operations, devices, now, guess);
    if (!written) return undefined;
    const refusedFor = (kind: "limit" | "storage") => written.results.filter((result) => result.kind === kind).length;
    return {
      timestamp: uploadTimestamp(written.now),
      skipped: actions.filter(carriesState).length - operations.length,
      refused: { episodeLimit: refusedFor("limit"), storageLimit: refusedFor("storage") },
    };
  };
  const guessed = await write(guessFeedGuids(userId, feeds), true);
  if (guessed) return guessed;
  const resolved = await resolveFeeds(db, userId, feeds);
  rememberFeedGuids(userId, feeds, resolved);
  return (await write(
    resolved.map((feed) => feed.guid),
    false,
  )) as EpisodeUpload;
}

/** Pages charged to the user's limit as they are read, by the rows each walked (rate-limit.ts, `rowCharger`). */
async function* charged<T>(
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

const SIMPLE_FORMATS = ["json", "txt", "opml"] as const;

export const gpodderRoutes = new Hono<AppEnv>()

  // Sign in: Basic sets the session cookie (every Basic-authenticated answer does).
  .post("/api/2/auth/:username/login.json", signedIn, (c) => {
    checkPathUsername(c, c.req.param("username"));
    return empty(c);
  })

  // Sign out: the session ends at once and the cookie is cleared.
  .post("/api/2/auth/:username/logout.json", signedIn, async (c) => {
    checkPathUsername(c, c.req.param("username"));
    const { sessionHash } = c.get("gpodder");
    await endSession(c.get("db"), sessionHash, Date.now());
    verifiedCredentials.forget((entry) => entry.sessionHash === sessionHash);
    c.header("Set-Cookie", sessionCookieHeader(c, "", 0));
    return empty(c);
  })

  .get("/api/2/devices/:file", signedIn, async (c) => {
    checkPathUsername(c, fileSegment(c.req.param("file"), ["json"]).name);
    const devices = await listDevices(c.get("db"), c.get("userId"));
    return json(c, devices);
  })

  // Create or update a device: {"caption"?, "type"?}.
  .post("/api/2/devices/:username/:file", signedIn, async (c) => {
    checkPathUsername(c, c.req.param("username"));
    const deviceId = fileSegment(c.req.param("file"), ["json"]).name;
    if (!DEVICE_ID.test(deviceId)) throw badRequest("The device id must match [A-Za-z0-9_.-]{1,64}.");
    const body = await jsonRequestBody(c);
    if (body === null || typeof body !== "object" || Array.isArray(body)) throw badRequest("Send a JSON object.");
    const fields = body as Record<string, unknown>;
    const caption = checkCaption(fields.caption);
    const { type } = fields;
    if (type !== undefined && !DEVICE_TYPES.includes(type as (typeof DEVICE_TYPES)[number])) {
      throw badRequest(`type must be one of ${DEVICE_TYPES.join(", ")}.`);
    }
    const userId = c.get("userId");
    const now = Date.now();
    const saved = await saveDevice(
      c.get("db"),
      c.get("gpodder").credential,
      { id: deviceId, caption, type: type as string | undefined },
      now,
    );
    if (!saved) throw deviceLimitReached();
    rememberDevice(userId, deviceId, now);
    return empty(c);
  })

  // One sync group per user: every device is synchronized with every other.
  .on(["GET", "POST"], "/api/2/sync-devices/:file", signedIn, async (c) => {
    checkPathUsername(c, fileSegment(c.req.param("file"), ["json"]).name);
    const ids = await listDeviceIds(c.get("db"), c.get("userId"));
    return json(c, { synchronized: ids.length === 0 ? [] : [ids], "not-synchronized": [] });
  })

  // What changed since a Unix second (inclusive): feeds added, and feeds no active subscription has any more,
  // each once, streamed page by page (since 0: the whole account, up to 8 MiB of URL text escaped for JSON).
  // The timestamp is the clock at the first page, written last.
  .get("/api/2/subscriptions/:username/:file", signedIn, async (c) => {
    checkPathUsername(c, c.req.param("username"));
    const since = sinceParameter(c);
    await ensurePathDevice(c, fileSegment(c.req.param("file"), ["json"]).name);
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
  })

  .post("/api/2/subscriptions/:username/:file", signedIn, async (c) => {
    checkPathUsername(c, c.req.param("username"));
    const deviceId = fileSegment(c.req.param("file"), ["json"]).name;
    const body = await jsonRequestBody(c, MAX_SUBSCRIPTION_BODY_BYTES);
    if (body === null || typeof body !== "object" || Array.isArray(body)) throw badRequest("Send a JSON object.");
    const { add, remove } = body as Record<string, unknown>;
    const adds = cleanUrls(urlList(add, "add"));
    const removes = cleanUrls(urlList(remove, "remove"));
    checkUpload(adds, removes);
    await ensurePathDevice(c, deviceId);
    return json(c, await applySubscriptionChanges(c, adds, removes));
  })

  // Simple API: the whole list (a user's devices share it).
  .get("/subscriptions/:file", signedIn, async (c) => {
    const file = fileSegment(c.req.param("file"), SIMPLE_FORMATS);
    checkPathUsername(c, file.name);
    return simpleList(c, file.format);
  })

  .get("/subscriptions/:username/:file", signedIn, async (c) => {
    checkPathUsername(c, c.req.param("username"));
    const file = fileSegment(c.req.param("file"), SIMPLE_FORMATS);
    await ensurePathDevice(c, file.name);
    return simpleList(c, file.format);
  })

  // Simple API upload: the list becomes exactly the sent one.
  .put("/subscriptions/:username/:file", signedIn, async (c) => {
    checkPathUsername(c, c.req.param("username"));
    const file = fileSegment(c.req.param("file"), ["json", "txt"] as const);
    const sent =
      file.format === "json"
        ? urlList(await jsonRequestBody(c, MAX_SUBSCRIPTION_BODY_BYTES), "The body")
        : (await textRequestBody(c, MAX_SUBSCRIPTION_BODY_BYTES)).split("\n").filter((line) => line.trim() !== "");
    const adds = cleanUrls(sent);
    checkUpload(adds, []);
    await ensurePathDevice(c, file.name);
    await applySubscriptionChanges(c, adds, [], true);
    return empty(c);
  })

  // Episode actions in: each applies to its episode state, in one round trip.
  .post("/api/2/episodes/:file", signedIn, async (c) => {
    checkPathUsername(c, fileSegment(c.req.param("file"), ["json"]).name);
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
    return json(c, { timestamp, update_urls: [] });
  })

  // Episode actions out: the latest state of each episode changed since a Unix second (inclusive), streamed
  // page by page (50 000 states at the quota, each naming its feed's URL: ~100 MB of JSON with 2 KB URLs).
  // The timestamp is the clock at the first page, written last.
  .get("/api/2/episodes/:file", signedIn, async (c) => {
    checkPathUsername(c, fileSegment(c.req.param("file"), ["json"]).name);
    const since = sinceParameter(c);
    const podcast = c.req.query("podcast");
    const read = episodeChangePages(c.get("db"), c.get("userId"), since, { podcast });
    const pages = charged(c, read.pages, (page) => page.walked);
    const states = withFirst(await pages.next(), pages);
    // Each action names its feed's URL (up to 2 KB, twice that escaped): escaped once per feed and page.
    let podcasts = new Map<string, string>();
    const actions = jsonItems((state: { podcast: string; episode: EpisodeState }) => {
      const action = toEpisodeAction(state.podcast, state.episode);
      if (!action) return undefined;
      const { podcast, ...rest } = action;
      let escaped = podcasts.get(podcast);
      if (escaped === undefined) {
        escaped = JSON.stringify(podcast);
        podcasts.set(podcast, escaped);
      }
      return `{"podcast":${escaped},${JSON.stringify(rest).slice(1)}`;
    });
    const body = pagedTextStream(
      states,
      {
        head: '{"actions":[',
        page: (page: EpisodeChangePage) => {
          podcasts = new Map();
          return actions(page.states);
        },
        tail: () => `],"timestamp":${read.now()}}`,
      },
      streamFailed(c, "gpodder_episodes_failed"),
    );
    return c.body(body, 200, { "Content-Type": "application/json" });
  });
