import type { Context } from "hono";
import { Hono } from "hono";
import { verifiedCredentials } from "../auth/verified-credentials";
import { credentialGuard, endSession, runGuarded } from "../db/app-passwords";
import { listDeviceIds, listDevices, pathDeviceStatements, runNamingDevice, saveDevice } from "../db/devices";
import type { NamedDevice } from "../db/gpodder";
import { activeFeedPages, activeFeedPagesWithPodcasts, type ExportSlice } from "../db/opml";
import type { AppEnv } from "../env";
import { checkCaption, deviceLimitReached, pathDevice, rememberDevice, withPathDevice } from "../gpodder/devices";
import {
  badRequest,
  DEVICE_ID,
  DEVICE_TYPES,
  fileSegment,
  jsonRequestBody,
  MAX_SUBSCRIPTION_BODY_BYTES,
  matchesByPodcastUrl,
  sinceParameter,
  textRequestBody,
  urlList,
} from "../gpodder/protocol";
import { checkUpload, cleanUrls } from "../gpodder/subscriptions";
import {
  applySubscriptionChanges,
  charged,
  episodeActionsSince,
  json,
  jsonItems,
  signedIn,
  streamFailed,
  subscriptionChangesSince,
  subscriptionUpload,
  uploadEpisodeActions,
} from "../gpodder/sync";
import { checkPathUsername, sessionCookieHeader } from "../middleware/gpodder-auth";
import { OPML_CONTENT_TYPE } from "../opml/media-types";
import { opmlStream } from "../opml/serialise";
import { pagedTextStream, withFirst } from "../text-stream";

/**
 * The gpodder.net API v2 and its simple API (docs/API.md §14), on the same data as /v1: what gPodder,
 * AntennaPod, Kasts and libmygpo-qt sync through. Success is exactly 200, JSON unless said otherwise. The
 * sync operations it shares with the Nextcloud app's API (§17) are in gpodder/sync.ts.
 */

function empty(c: Context<AppEnv>): Response {
  return c.body(null, 200);
}

/**
 * The simple API's list in one of its formats, streamed page by page as the OPML export is (docs/API.md §15):
 * an account of 10 000 feeds with 2 KB URLs is ~20 MB of text, more escaped. The first page is read before
 * the response starts, so an unreachable database is still an error answer; with `device` (the device the path
 * names, unknown to this isolate), it is created or kept in the same round trip, after the caller's credential guard.
 */
async function simpleList(
  c: Context<AppEnv>,
  format: "json" | "txt" | "opml",
  device?: NamedDevice,
): Promise<Response> {
  const failed = streamFailed(c, "gpodder_list_failed");
  const db = c.get("db");
  const userId = c.get("userId");
  const caller = c.get("gpodder").credential;
  const first = device && {
    statements: [credentialGuard(db, caller), ...pathDeviceStatements(db, userId, device.id, device.at)],
    run: (batch: () => Promise<void>) => runGuarded(() => runNamingDevice(batch), caller),
  };
  const read = async <T>(pages: AsyncGenerator<ExportSlice<T>, void, undefined>) => {
    const charges = charged(c, pages, (page) => page.walked);
    return withFirst(await withPathDevice(c, device, () => charges.next()), charges);
  };
  if (format === "opml") {
    // Named by their podcasts' titles (docs/API.md §18), as the API's export.
    const feeds = await read(activeFeedPagesWithPodcasts(db, userId, { first }));
    return c.body(opmlStream(feeds, new Date(), failed), 200, { "Content-Type": OPML_CONTENT_TYPE });
  }
  const feeds = await read(activeFeedPages(db, userId, { first }));
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
  // The device the path names is created or kept in the same round trip as the first pages.
  .get("/api/2/subscriptions/:username/:file", signedIn, async (c) => {
    checkPathUsername(c, c.req.param("username"));
    const since = sinceParameter(c);
    return subscriptionChangesSince(c, since, fileSegment(c.req.param("file"), ["json"]).name);
  })

  .post("/api/2/subscriptions/:username/:file", signedIn, async (c) => {
    checkPathUsername(c, c.req.param("username"));
    const deviceId = fileSegment(c.req.param("file"), ["json"]).name;
    const { adds, removes } = await subscriptionUpload(c);
    return json(c, await applySubscriptionChanges(c, adds, removes, { deviceId }));
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
    return simpleList(c, file.format, pathDevice(c, file.name));
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
    await applySubscriptionChanges(c, adds, [], { replaceAll: true, deviceId: file.name });
    return empty(c);
  })

  // Episode actions in: each applies to its episode state, in one round trip.
  .post("/api/2/episodes/:file", signedIn, async (c) => {
    checkPathUsername(c, fileSegment(c.req.param("file"), ["json"]).name);
    return json(c, { timestamp: await uploadEpisodeActions(c), update_urls: [] });
  })

  // Episode actions out: the latest state of each episode changed since a Unix second (inclusive), streamed
  // page by page (50 000 states at the quota, each naming its feed's URL: ~100 MB of JSON with 2 KB URLs).
  // The timestamp is the clock at the first page, written last.
  .get("/api/2/episodes/:file", signedIn, async (c) => {
    checkPathUsername(c, fileSegment(c.req.param("file"), ["json"]).name);
    const since = sinceParameter(c);
    // The answer differs by client (the copies under moved feeds' old URLs): no cache may give one app another's.
    c.header("Vary", "User-Agent", { append: true });
    return episodeActionsSince(c, since, c.req.query("podcast"), matchesByPodcastUrl(c));
  });
