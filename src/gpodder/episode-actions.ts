import type { CreatingWrite } from "../db/episodes";
import type { EpisodeState } from "../db/gpodder";
import { uuidV5 } from "../podcast-guid";
import { parseEpisodeResource } from "../resources/episode";
import { isValidFeedUrl } from "../resources/subscription";
import { trimUrlWhitespace } from "../url-text";
import { DEVICE_ID } from "./protocol";

/**
 * gpodder episode actions (docs/API.md §14) to and from episode states (§13). Only `play` with a position and
 * `new` carry state; the others are accepted and stored nowhere. Received actions are checked twice: their
 * gpodder shape here, then, once the feed's guid is known, as the episode write they become, by the same
 * rules as `POST /v1/episodes` (one place for the itemGuid, mediaUrl and changedAt rules).
 */

const ACTIONS = ["download", "delete", "play", "new", "flattr"] as const;

export interface EpisodeAction {
  podcast: string;
  episode: string;
  action: (typeof ACTIONS)[number];
  guid?: string;
  /** RFC 3339 form of the action's time (UTC when it had no offset); absent: the server's clock. */
  changedAt?: string;
  position?: number;
  total?: number;
  /** A valid device id the action names (an invalid one is ignored, the action still applies). */
  device?: string;
}

const isCount = (value: unknown) => value === undefined || (Number.isSafeInteger(value) && (value as number) >= 0);

/** ISO 8601 date and time, optionally with a fraction and a zone (`Z`, `+HH:MM`, `+HHMM`). */
const ISO_8601 = /^(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?)(Z|z|[+-]\d{2}:?\d{2})?$/;

/** The action's time as RFC 3339 (UTC when it has no offset); undefined when it is not ISO 8601. */
export function actionTime(timestamp: string): string | undefined {
  const match = ISO_8601.exec(timestamp);
  if (!match) return undefined;
  const [, local, zone] = match;
  if (zone === undefined) return `${local}Z`;
  return zone.length === 5 ? `${local}${zone.slice(0, 3)}:${zone.slice(3)}` : `${local}${zone}`;
}

/** One uploaded action in its gpodder shape; undefined when invalid (skipped and logged). */
export function parseEpisodeAction(raw: unknown): EpisodeAction | undefined {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return undefined;
  const { podcast, episode, action, timestamp, device, guid, started, position, total } = raw as Record<
    string,
    unknown
  >;
  if (typeof podcast !== "string" || typeof episode !== "string" || typeof action !== "string") return undefined;
  const kind = action.toLowerCase() as EpisodeAction["action"];
  if (!ACTIONS.includes(kind)) return undefined;
  const podcastUrl = trimUrlWhitespace(podcast);
  const episodeUrl = trimUrlWhitespace(episode);
  if (!isValidFeedUrl(podcastUrl) || !isValidFeedUrl(episodeUrl)) return undefined;
  if (!isCount(started) || !isCount(position) || !isCount(total)) return undefined;
  if (guid !== undefined && typeof guid !== "string") return undefined;
  let changedAt: string | undefined;
  if (timestamp !== undefined) {
    if (typeof timestamp !== "string") return undefined;
    changedAt = actionTime(timestamp);
    if (changedAt === undefined) return undefined;
  }
  return {
    podcast: podcastUrl,
    episode: episodeUrl,
    action: kind,
    ...(guid === undefined ? {} : { guid }),
    ...(changedAt === undefined ? {} : { changedAt }),
    ...(position === undefined ? {} : { position: position as number }),
    ...(total === undefined ? {} : { total: total as number }),
    ...(typeof device === "string" && DEVICE_ID.test(device) ? { device } : {}),
  };
}

/** Whether the action stores anything: `play` with a position, and `new`. */
export function carriesState(action: EpisodeAction): boolean {
  return action.action === "new" || (action.action === "play" && action.position !== undefined);
}

/**
 * The episode write an action makes on the state of `feedGuid`'s episode (UUIDv5 of `guid`, else of the
 * episode URL, in the feed's namespace); undefined when it stores nothing or breaks the episode rules.
 */
export async function toEpisodeWrite(
  action: EpisodeAction,
  feedGuid: string,
  now: number,
): Promise<CreatingWrite | undefined> {
  if (!carriesState(action)) return undefined;
  const attributes: Record<string, unknown> = {
    mediaUrl: action.episode,
    changedAt: action.changedAt ?? new Date(now).toISOString(),
  };
  if (action.guid !== undefined) attributes.itemGuid = action.guid;
  if (action.action === "new") {
    attributes.played = false;
  } else {
    const { position = 0, total } = action;
    attributes.position = position;
    if (total !== undefined && total > 0) {
      attributes.duration = total;
      if (position >= total) attributes.played = true;
    }
  }
  const id = await uuidV5(feedGuid, action.guid ?? action.episode);
  const parsed = parseEpisodeResource(
    {
      type: "episode",
      id,
      attributes,
      relationships: { subscription: { data: { type: "subscription", id: feedGuid } } },
    },
    "",
    now,
  );
  // The action's episode URL is its mediaUrl: every write of an upload may create its state.
  return parsed.ok && parsed.value.mediaUrl !== undefined
    ? { ...parsed.value, mediaUrl: parsed.value.mediaUrl }
    : undefined;
}

/** A received action as gpodder clients read it. */
export interface OutgoingAction {
  podcast: string;
  episode: string;
  guid?: string;
  action: "play" | "new";
  timestamp: string;
  started?: number;
  position?: number;
  total?: number;
}

/** `YYYY-MM-DDTHH:MM:SS` in UTC, no zone, no fraction: the one form every gpodder client parses. */
export function gpodderTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19);
}

/** The action that tells a gpodder client an episode state; undefined when there is nothing to tell. */
export function toEpisodeAction(podcast: string, episode: EpisodeState): OutgoingAction | undefined {
  const changed = Math.max(episode.positionChangedAt ?? 0, episode.playedChangedAt ?? 0);
  const base = {
    podcast,
    episode: episode.mediaUrl,
    ...(episode.itemGuid === null ? {} : { guid: episode.itemGuid }),
    timestamp: gpodderTime(changed),
  };
  const { duration } = episode;
  if (episode.played) {
    if (duration === null) return { ...base, action: "play" };
    // A replay (the position changed after the state was played, and is below the end): every gpodder client
    // still marks it played (a `play` carrying `total`), and AntennaPod keeps the replay's place.
    const replaying =
      episode.positionChangedAt !== null &&
      episode.positionChangedAt > (episode.playedChangedAt ?? Number.NEGATIVE_INFINITY) &&
      episode.position < duration;
    if (replaying) return { ...base, action: "play", started: 0, position: episode.position, total: duration };
    return { ...base, action: "play", started: duration, position: duration, total: duration };
  }
  if (episode.position > 0 && duration !== null) {
    return { ...base, action: "play", started: 0, position: episode.position, total: duration };
  }
  if (episode.playedChangedAt !== null) return { ...base, action: "new" };
  return undefined;
}
