import { refusedFetchTarget } from "./address";
import { FIRST_ITEM } from "./parse";

/**
 * One fetch of a feed (docs/API.md §18): `GET` with the validators of the last answer, redirects followed by hand
 * (each target checked like the URL itself, at most 5), 10 s in all, and the body read only up to the channel's
 * first item or MAX_HEAD_BYTES, then dropped. Never throws: every way a fetch can end is an outcome the round
 * records.
 */

export const MAX_REDIRECTS = 5;
export const FETCH_TIMEOUT_MS = 10_000;
/**
 * What a head is read to at most: 64 KiB, under the 1 MiB the rules allow. Reading and parsing are the scheduled
 * run's CPU (10 ms on the Free plan for the whole run): the bench measured a round of 8 feeds reading 1 MiB each
 * at 47 ms of isolate CPU, and an element-dense 64 KiB head at 1 to 1.6 ms to parse; a real channel head is 2 to
 * 16 KiB, and its facts come first (docs/decisions.md, "Feeds").
 */
export const MAX_HEAD_BYTES = 64 * 1024;
const ACCEPT = "application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.1";

export interface Validators {
  etag: string | null;
  lastModified: string | null;
}

/** Where a fetch ended: the URL that answered, and whether every redirect on the way was permanent (301, 308). */
export interface Arrival {
  finalUrl: string;
  permanent: boolean;
}

export type FetchOutcome =
  | ({ kind: "feed"; head: string } & Arrival & Validators)
  | ({ kind: "not-modified" } & Arrival)
  | { kind: "gone"; error: string }
  | { kind: "failed"; error: string }
  /** The round's subrequests ran out before this fetch ended: nothing is recorded, the feed stays due. */
  | { kind: "deferred" };

export interface FetchSettings {
  userAgent: string;
  allowPrivate: boolean;
  timeoutMs: number;
  /** Subrequests this round may still make: each request of a redirect chain takes one. */
  subrequests: { left: number };
  /** The body bytes this round's fetches have read so far (reading is the round's CPU too). */
  read?: { bytes: number };
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const PERMANENT = new Set([301, 308]);

function decoderFor(contentType: string | null): TextDecoder {
  const charset = /charset="?([^";\s]+)/i.exec(contentType ?? "")?.[1];
  try {
    return new TextDecoder(charset ?? "utf-8");
  } catch {
    return new TextDecoder("utf-8");
  }
}

/** The body's text up to the first item or entry, or its first MAX_HEAD_BYTES; the rest is never read. */
async function readHead(response: Response, read: { bytes: number }): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const decoder = decoderFor(response.headers.get("content-type"));
  // The chunks' texts, joined once at the end: appending to one string and searching it flattened the whole text
  // per chunk (quadratic: 1.2 s of CPU for an endless body in the bench).
  const texts: string[] = [];
  let bytes = 0;
  let tail = "";
  try {
    while (bytes < MAX_HEAD_BYTES) {
      const { done, value } = await reader.read();
      if (done) {
        texts.push(decoder.decode());
        return texts.join("");
      }
      const chunk = value.subarray(0, MAX_HEAD_BYTES - bytes);
      bytes += chunk.length;
      read.bytes += chunk.length;
      const text = decoder.decode(chunk, { stream: true });
      // A tag split across two chunks is found once both are in: the search starts a few characters back.
      const item = FIRST_ITEM.exec(tail + text);
      if (item) {
        texts.push(text.slice(0, Math.max(0, item.index - tail.length)));
        const joined = texts.join("");
        // The match may start in the previous chunk's last characters: cut there.
        return item.index < tail.length ? joined.slice(0, joined.length - (tail.length - item.index)) : joined;
      }
      texts.push(text);
      tail = (tail + text).slice(-8);
    }
    // Cut at MAX_HEAD_BYTES: what was read counts.
    return withoutCutTag(texts.join(""));
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** Text cut anywhere, without the tag the cut went through (half a tag would end the parse), if one did. */
function withoutCutTag(text: string): string {
  const open = text.lastIndexOf("<");
  return open > text.lastIndexOf(">") ? text.slice(0, open) : text;
}

function failure(err: unknown, signal: AbortSignal): FetchOutcome {
  if (signal.aborted) return { kind: "failed", error: `no complete answer within ${FETCH_TIMEOUT_MS / 1000} s` };
  const message = err instanceof Error ? err.message : String(err);
  return { kind: "failed", error: `the request failed: ${message.slice(0, 200)}` };
}

export async function fetchFeed(url: string, validators: Validators, settings: FetchSettings): Promise<FetchOutcome> {
  const signal = AbortSignal.timeout(settings.timeoutMs);
  const headers: Record<string, string> = { "user-agent": settings.userAgent, accept: ACCEPT };
  if (validators.etag) headers["if-none-match"] = validators.etag;
  if (validators.lastModified) headers["if-modified-since"] = validators.lastModified;
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return { kind: "failed", error: "not a URL" };
  }
  let permanent = true;
  try {
    for (let hop = 0; ; hop++) {
      const refused = refusedFetchTarget(target, settings.allowPrivate);
      if (refused) return { kind: "failed", error: hop === 0 ? refused : `redirected: ${refused}` };
      if (settings.subrequests.left <= 0) return { kind: "deferred" };
      settings.subrequests.left--;
      const response = await fetch(target.href, { method: "GET", headers, redirect: "manual", signal });
      const location = response.headers.get("location");
      if (REDIRECTS.has(response.status) && location !== null) {
        await response.body?.cancel();
        if (hop === MAX_REDIRECTS) return { kind: "failed", error: `more than ${MAX_REDIRECTS} redirects` };
        permanent &&= PERMANENT.has(response.status);
        try {
          target = new URL(location, target);
        } catch {
          return { kind: "failed", error: "redirected to something that is not a URL" };
        }
        continue;
      }
      const arrival = { finalUrl: target.href, permanent };
      if (response.status === 304) {
        await response.body?.cancel();
        return { kind: "not-modified", ...arrival };
      }
      if (response.status === 410) {
        await response.body?.cancel();
        return { kind: "gone", error: "HTTP 410 Gone" };
      }
      if (response.status < 200 || response.status > 299) {
        await response.body?.cancel();
        return { kind: "failed", error: `HTTP ${response.status}` };
      }
      const head = await readHead(response, settings.read ?? { bytes: 0 });
      return {
        kind: "feed",
        head,
        ...arrival,
        etag: response.headers.get("etag"),
        lastModified: response.headers.get("last-modified"),
      };
    }
  } catch (err) {
    return failure(err, signal);
  }
}
