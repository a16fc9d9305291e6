// The soak's model of what the server must hold (bench/soak.mjs): the rules of docs/API.md that predict
// an answer from the state before it, written once here so that the traffic and the verification agree.
import { createHash } from "node:crypto";

/** The "podcast" namespace of the podcast:guid specification (src/podcast-guid.ts). */
const PODCAST_GUID_NAMESPACE = "ead4c236-bf58-58c6-a2c6-a6b28d128cb6";

/** UUIDv5 (RFC 9562: SHA-1 of the namespace's 16 bytes and the name's UTF-8), lowercase. */
export function uuidV5(namespace, name) {
  const bytes = createHash("sha1")
    .update(Buffer.from(namespace.replaceAll("-", ""), "hex"))
    .update(name, "utf8")
    .digest()
    .subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x50;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The podcast:guid of a feed URL (docs/API.md §11): UUIDv5 of the URL without scheme and trailing slashes. */
export function podcastGuid(feedUrl) {
  return uuidV5(PODCAST_GUID_NAMESPACE, feedUrl.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//, "").replace(/\/+$/, ""));
}

/** A fresh episode state (docs/API.md §13): fields never set read position 0, duration null, played false. */
export function newEpisode(id, feedGuid) {
  return {
    id,
    feedGuid,
    mediaUrl: undefined,
    itemGuid: null,
    position: 0,
    duration: null,
    played: false,
    positionChangedAt: null,
    playedChangedAt: null,
  };
}

/**
 * Whether a write's facts (`mediaUrl`, `itemGuid`, `duration`) apply to a state (docs/API.md §13, amended): it has
 * no `changedAt`, or one not earlier than the later of the state's two change times. A late upload from an offline
 * device changes none of them (src/db/episodes.ts, factsApply). A fresh state has neither time: they apply.
 */
export function factsApply(state, write) {
  return (
    write.changedAt === undefined ||
    write.changedAt >= Math.max(state.positionChangedAt ?? 0, state.playedChangedAt ?? 0)
  );
}

/**
 * Merges a write into a state (docs/API.md §13): `position` and `played` each take the write's `changedAt`
 * (ms) only when strictly later than the stored one; `mediaUrl`, `itemGuid` and `duration` replace when sent and
 * the write is not older than the state (factsApply, judged on the state before the write).
 */
export function mergeEpisode(state, write) {
  const facts = factsApply(state, write);
  if (write.position !== undefined && (state.positionChangedAt === null || state.positionChangedAt < write.changedAt)) {
    state.position = write.position;
    state.positionChangedAt = write.changedAt;
  }
  if (write.played !== undefined && (state.playedChangedAt === null || state.playedChangedAt < write.changedAt)) {
    state.played = write.played;
    state.playedChangedAt = write.changedAt;
  }
  if (facts) {
    if (write.mediaUrl !== undefined) state.mediaUrl = write.mediaUrl;
    if (write.itemGuid !== undefined) state.itemGuid = write.itemGuid;
    if (write.duration !== undefined) state.duration = write.duration;
  }
  return state;
}

const iso = (ms) => (ms === null ? null : new Date(ms).toISOString());

/** Where a served episode resource (or change-feed item) differs from the state: a list of texts. */
export function episodeDifferences(resource, state) {
  const a = resource?.attributes ?? {};
  const want = {
    mediaUrl: state.mediaUrl,
    itemGuid: state.itemGuid,
    position: state.position,
    duration: state.duration,
    played: state.played,
    positionChangedAt: iso(state.positionChangedAt),
    playedChangedAt: iso(state.playedChangedAt),
  };
  const differences = [];
  if (resource?.type !== "episode" || resource.id !== state.id) differences.push(`id ${resource?.id}`);
  for (const [name, value] of Object.entries(want)) {
    if (a[name] !== value) differences.push(`${name} ${JSON.stringify(a[name])} != ${JSON.stringify(value)}`);
  }
  const feed = resource?.relationships?.subscription?.data?.id;
  if (feed !== state.feedGuid) differences.push(`feed ${feed} != ${state.feedGuid}`);
  return differences;
}

/** `YYYY-MM-DDTHH:MM:SS` in UTC: the form the gpodder API writes times in. */
export const gpodderTime = (ms) => new Date(ms).toISOString().slice(0, 19);

/**
 * The gpodder episode action that tells a state (docs/API.md §14, src/gpodder/episode-actions.ts'
 * toEpisodeAction): undefined when there is nothing to tell.
 */
export function gpodderActionOf(podcast, state) {
  const changed = Math.max(state.positionChangedAt ?? 0, state.playedChangedAt ?? 0);
  const base = {
    podcast,
    episode: state.mediaUrl,
    ...(state.itemGuid === null ? {} : { guid: state.itemGuid }),
    timestamp: gpodderTime(changed),
  };
  if (state.played) {
    if (state.duration === null) return { ...base, action: "play" };
    // A replay: the position changed after the state was played, and is below the end (§14).
    const replaying =
      state.positionChangedAt !== null &&
      state.positionChangedAt > (state.playedChangedAt ?? Number.NEGATIVE_INFINITY) &&
      state.position < state.duration;
    if (replaying) return { ...base, action: "play", started: 0, position: state.position, total: state.duration };
    return { ...base, action: "play", started: state.duration, position: state.duration, total: state.duration };
  }
  if (state.position > 0 && state.duration !== null) {
    return { ...base, action: "play", started: 0, position: state.position, total: state.duration };
  }
  if (state.playedChangedAt !== null) return { ...base, action: "new" };
  return undefined;
}

/** An action as canonical text (sorted keys), to compare a served action with the predicted one. */
export function actionText(action) {
  return JSON.stringify(Object.fromEntries(Object.entries(action).sort(([a], [b]) => a.localeCompare(b))));
}

/** The episode write an uploaded gpodder action makes (src/gpodder/episode-actions.ts), or undefined. */
export function gpodderWrite(action, changedAt) {
  if (action.action === "new") return { mediaUrl: action.episode, itemGuid: action.guid, played: false, changedAt };
  if (action.action !== "play" || action.position === undefined) return undefined;
  const write = { mediaUrl: action.episode, itemGuid: action.guid, position: action.position, changedAt };
  if (action.total !== undefined && action.total > 0) {
    write.duration = action.total;
    if (action.position >= action.total) write.played = true;
  }
  return write;
}

// ---------------------------------------------------------------------------------------------------------
// Feeds (docs/API.md §18): every soak feed URL is served by the soak's feed server (bench/lib/soak-feeds.mjs), which
// answers by the URL alone, so the model knows what a round that fetched it must have recorded.

/** How the feed server answers a soak feed URL: a feed (`ok`), `503` (`failing`) or `410` (`gone`), by its name. */
export function feedVariant(url) {
  if (/-gone\.xml$/.test(url)) return "gone";
  if (/-failing\.xml$/.test(url)) return "failing";
  return "ok";
}

/** The channel title the feed server serves for a soak feed URL (with an `&`, which every view must escape). */
export function feedTitle(url) {
  const name = /\/soak\/([^/]+)\/([^/?]+)\.xml$/.exec(url);
  return name ? `${name[2]} of ${name[1]} & friends` : "Soak show & friends";
}

/**
 * The podcast the server must show for a feed URL: pending until a round fetched it (`fetched`: the URLs the
 * feed server answered in rounds that have ended); then `ok` with the served title, or `failing` / `gone`
 * with nothing known (a first fetch that failed). `title` is null whenever nothing is known.
 */
export function predictedPodcast(url, fetched) {
  if (!fetched.has(url)) return { status: "pending", title: null };
  const status = feedVariant(url);
  return { status, title: status === "ok" ? feedTitle(url) : null };
}

/**
 * Where a served podcast (its `title` and `status`) differs from the prediction. While a round may be running
 * (`uncertain`), a URL not yet known fetched may read either pending or as the round will record it.
 */
export function podcastDifferences(served, url, fetched, uncertain = false) {
  const want = predictedPodcast(url, fetched);
  const same = (p) => served?.status === p.status && (served?.title ?? null) === p.title;
  if (same(want)) return [];
  if (uncertain && !fetched.has(url) && same(predictedPodcast(url, new Set([url])))) return [];
  return [
    `podcast of ${url}: ${served?.status} ${JSON.stringify(served?.title)} != ${want.status} ${JSON.stringify(want.title)}`,
  ];
}

/** The name a page or an OPML outline shows for a feed: its podcast's title when known, else the URL. */
export function podcastName(url, fetched) {
  return predictedPodcast(url, fetched).title ?? url;
}
