import type { Context } from "hono";
import type { AppEnv } from "../env";
import { ApiError } from "../jsonapi";
import { MAX_BODY_BYTES } from "../limits";
import { decodeUtf8, readBody } from "../request-body";

/**
 * Wire rules shared by the gpodder.net API's routes (docs/API.md §14). Failures are thrown as ApiError; the
 * error handler answers them on these paths as `{"error": <detail>}` (middleware/errors.ts).
 */

/** Actions per episode upload: more answer 413. */
export const MAX_GPODDER_ITEMS = 1000;

/**
 * URLs per subscription upload or PUT, and their bodies' bytes: more answer 413. gPodder sends every queued
 * change in one request and cannot split it (docs/API.md §14): at the old 1 000, an account of more feeds
 * failed every sync, forever. 10 000 is the subscription quota; 16 MiB holds as many 1.6 KB URLs, escaped.
 */
export const MAX_SUBSCRIPTION_URLS = 10_000;
export const MAX_SUBSCRIPTION_BODY_BYTES = 16 * 1024 * 1024;

/**
 * How far back an upload's `timestamp` reaches (docs/API.md §14, "download, then upload"). Apps download, then
 * upload; AntennaPod takes the upload's `timestamp` as its next `since` (SyncService, for subscriptions and
 * episode actions; gPodder too for subscriptions, my.py), so with the clock at the upload a change another device
 * made between its download and its upload never reached it. Answered as the database's clock 10 minutes back,
 * the next download also brings every change received in the 10 minutes before the upload: what came in between
 * (AntennaPod's gap is its upload of the queue in batches of 30 and, for subscriptions, its redirect checks of the
 * feeds it received), and what it has already (its own upload among them: harmless). Stateless: the server
 * keeps no per-device time. An app whose next `since` comes from its download (gPodder's episodes) never reads
 * it. The earliest change received in those 10 minutes would be the same `since`: nothing is received between it
 * and 10 minutes back.
 */
export const UPLOAD_TIMESTAMP_MARGIN_SECONDS = 600;

/** The `timestamp` an upload answers, from the database's clock after its writes (Unix seconds). */
export function uploadTimestamp(now: number): number {
  return now - UPLOAD_TIMESTAMP_MARGIN_SECONDS;
}

export function badRequest(detail: string): ApiError {
  return new ApiError({ status: 400, title: "Bad request", detail });
}

export function tooMany(what: string, max = MAX_GPODDER_ITEMS): ApiError {
  return new ApiError({
    status: 413,
    title: "Too many items",
    detail: `At most ${max} ${what} per request.`,
  });
}

/**
 * The body as JSON, whatever its Content-Type (gPodder sends form-encoded, AntennaPod `plain/text`); at most
 * 1 MiB unless `maxBytes` says otherwise (subscription uploads).
 */
export async function jsonRequestBody(c: Context<AppEnv>, maxBytes = MAX_BODY_BYTES): Promise<unknown> {
  const text = decodeUtf8(await readBody(c.req.raw, maxBytes));
  try {
    return JSON.parse(text);
  } catch {
    throw badRequest("The request body is not valid JSON.");
  }
}

export async function textRequestBody(c: Context<AppEnv>, maxBytes = MAX_BODY_BYTES): Promise<string> {
  return decodeUtf8(await readBody(c.req.raw, maxBytes));
}

/** `since`: a non-negative integer of Unix seconds; absent means 0. */
export function sinceParameter(c: Context<AppEnv>): number {
  const since = c.req.query("since");
  if (since === undefined) return 0;
  if (!/^\d{1,15}$/.test(since)) throw badRequest("since must be a non-negative integer (Unix seconds).");
  return Number(since);
}

/**
 * A path segment `<name>.<format>` split at its last dot (usernames and device ids may hold dots). A format
 * not in `formats` is a path that does not exist: 404.
 */
export function fileSegment<F extends string>(segment: string, formats: readonly F[]): { name: string; format: F } {
  const dot = segment.lastIndexOf(".");
  const format = segment.slice(dot + 1) as F;
  if (dot <= 0 || !formats.includes(format)) throw notFound();
  return { name: segment.slice(0, dot), format };
}

export function notFound(): ApiError {
  return new ApiError({ status: 404, title: "Not found", detail: "No such gpodder resource." });
}

export const DEVICE_ID = /^[A-Za-z0-9_.-]{1,64}$/;
export const DEVICE_TYPES = ["desktop", "laptop", "mobile", "server", "other"] as const;

/** A JSON body's list of URLs: absent is empty; anything but an array of strings is a 400. */
export function urlList(value: unknown, name: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((url) => typeof url !== "string")) {
    throw badRequest(`${name} must be an array of URLs.`);
  }
  return value as string[];
}

/**
 * Whether the caller matches a received episode action by the exact podcast URL it holds, so it needs a moved
 * feed's states under the URLs it may still hold (docs/decisions.md, "Episode reads under every alias"): gPodder
 * (`find_episode`), which sends mygpoclient's User-Agent followed by its own (`mygpoclient/1.9 (+…) gPodder/3.11.1
 * (+…) Linux`), and any other mygpoclient-based app. No other app gets the copies: AntennaPod keys its "a newer
 * local play wins" check on the podcast URL and the episode (`EpisodeActionFilter`), so a copy under a URL it does
 * not hold would escape that check and overwrite a play it has not uploaded yet; Kasts matches by guid or media URL.
 */
export function matchesByPodcastUrl(c: Context<AppEnv>): boolean {
  return /\b(?:gPodder|mygpoclient)\//.test(c.req.header("User-Agent") ?? "");
}
