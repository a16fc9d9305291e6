import { type ChangedEpisode, type EpisodeWrite, MAX_STORED_EPISODES, type StoredEpisode } from "../db/episodes";
import { ApiError, type ErrorObject, pointerTo, toErrorObject } from "../jsonapi";
import { toRfc3339 } from "../timestamps";
import { hasForbiddenUrlCharacter } from "../url-text";
import {
  idMismatch,
  invalid,
  invalidAttribute,
  invalidDocument,
  invalidResourceIdentifier,
  invalidResourceObject,
  isObject,
  parseGuid,
  typeMismatch,
  type Validated,
} from "./resource-object";
import { isValidFeedUrl, SUBSCRIPTION_TYPE, subscriptionPath, urlRulesDetail, utf8ByteLength } from "./subscription";

export const EPISODE_TYPE = "episode";

/** docs/API.md §13: `itemGuid` in UTF-8 bytes, as stored. */
export const MAX_ITEM_GUID_BYTES = 1024;
/** The largest `position` and `duration`, in seconds (a signed 32-bit integer: every app can hold it). */
export const MAX_SECONDS = 2_147_483_647;
/** A `changedAt` before this is refused: no podcast app synced before 2000. */
export const EARLIEST_CHANGE = Date.UTC(2000, 0, 1);
/** A `changedAt` further ahead of the server's clock is taken as the server's clock. */
export const MAX_CLOCK_AHEAD_MS = 10 * 60 * 1000;

/** An episode write as validated: what it sends, for `EpisodeWrite` (ids and the feed come from the caller). */
type EpisodeAttributes = Omit<EpisodeWrite, "id" | "feedGuid">;

/** The number written by `count` ASCII digits at `start`; -1 when any is not one. */
function digitsAt(value: string, start: number, count: number): number {
  let number = 0;
  for (let i = start; i < start + count; i++) {
    const digit = value.charCodeAt(i) - 48;
    if (!(digit >= 0 && digit <= 9)) return -1;
    number = number * 10 + digit;
  }
  return number;
}

/**
 * Milliseconds of an RFC 3339 date-time, truncated to the millisecond; undefined when it is not one: full date,
 * `T` (or `t`, or a space as RFC 3339 §5.6 allows), time with an optional fraction, and `Z` (or `z`) or an
 * offset. Read character by character, neither by `Date.parse` (which accepts other forms) nor by a regular
 * expression (a bulk request reads a hundred of these: the expression and its captures cost over twice as much).
 */
export function parseRfc3339(value: string): number | undefined {
  if (value.length < 20 || value[4] !== "-" || value[7] !== "-" || value[13] !== ":" || value[16] !== ":") return;
  if (value[10] !== "T" && value[10] !== "t" && value[10] !== " ") return;
  const year = digitsAt(value, 0, 4);
  const [month, day] = [digitsAt(value, 5, 2), digitsAt(value, 8, 2)];
  const [hour, minute, second] = [digitsAt(value, 11, 2), digitsAt(value, 14, 2), digitsAt(value, 17, 2)];
  if (year < 0 || month < 1 || month > 12 || hour < 0 || hour > 23 || minute < 0 || minute > 59) return;
  if (second < 0 || second > 60) return;
  let end = 19;
  let millis = 0;
  if (value[end] === ".") {
    const start = ++end;
    while (end < value.length && digitsAt(value, end, 1) >= 0) end++;
    if (end === start) return;
    millis = Number(value.slice(start, Math.min(end, start + 3)).padEnd(3, "0"));
  }
  let offset = 0;
  const zone = value[end];
  if (zone === "+" || zone === "-") {
    const [hours, minutes] = [digitsAt(value, end + 1, 2), digitsAt(value, end + 4, 2)];
    if (value.length !== end + 6 || value[end + 3] !== ":" || hours < 0 || hours > 23 || minutes < 0 || minutes > 59) {
      return;
    }
    offset = (zone === "-" ? -1 : 1) * (hours * 60 + minutes) * 60_000;
  } else if ((zone !== "Z" && zone !== "z") || value.length !== end + 1) {
    return;
  }
  const date = Date.UTC(year, month - 1, day);
  // Day 0, or 31 of a 30-day month, would roll over into another month.
  if (day < 1 || new Date(date).getUTCDate() !== day) return;
  // A leap second (:60) reads as the first millisecond after it, as every clock shows it.
  return date + ((hour * 60 + minute) * 60 + second) * 1000 + millis - offset;
}

const isWholeSeconds = (value: unknown, min: number): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= min && value <= MAX_SECONDS;

/**
 * The attributes of an episode write, checked in a fixed order, each failure a 422 at its pointer
 * (docs/API.md §13): `mediaUrl`, `itemGuid`, `position`, `duration`, `played`, then `changedAt`, required when
 * `position` or `played` is sent. Read-only and unknown attributes are ignored. Whether `mediaUrl` is missing
 * only matters when the write would create the state, which the database decides (`mediaUrlRequired`).
 */
function parseAttributes(attributes: Record<string, unknown>, base: string, now: number): Validated<EpisodeAttributes> {
  const value: EpisodeAttributes = {};
  // Pointers are built for a failure only.
  const at = () => pointerTo(base, "attributes");
  const pointer = (name: string) => pointerTo(base, "attributes", name);
  if (attributes.mediaUrl === undefined) {
    // Absent: a merge keeps the stored one; a create is refused once the write finds no state (mediaUrlRequired).
  } else if (typeof attributes.mediaUrl !== "string" || !isValidFeedUrl(attributes.mediaUrl)) {
    return invalid(invalidAttribute(pointer("mediaUrl"), urlRulesDetail("mediaUrl")));
  } else {
    value.mediaUrl = attributes.mediaUrl;
  }
  const { itemGuid } = attributes;
  if (itemGuid !== undefined) {
    if (
      itemGuid !== null &&
      (typeof itemGuid !== "string" ||
        hasForbiddenUrlCharacter(itemGuid) ||
        utf8ByteLength(itemGuid) > MAX_ITEM_GUID_BYTES)
    ) {
      return invalid(
        invalidAttribute(
          pointer("itemGuid"),
          `itemGuid must be null or a string of at most ${MAX_ITEM_GUID_BYTES} bytes in UTF-8 without control, format, private-use or noncharacter code points.`,
        ),
      );
    }
    value.itemGuid = itemGuid;
  }
  if (attributes.position !== undefined) {
    if (!isWholeSeconds(attributes.position, 0)) {
      return invalid(invalidAttribute(pointer("position"), `position must be whole seconds from 0 to ${MAX_SECONDS}.`));
    }
    value.position = attributes.position;
  }
  if (attributes.duration !== undefined) {
    if (attributes.duration !== null && !isWholeSeconds(attributes.duration, 1)) {
      return invalid(
        invalidAttribute(pointer("duration"), `duration must be null or whole seconds from 1 to ${MAX_SECONDS}.`),
      );
    }
    value.duration = attributes.duration;
  }
  if (attributes.played !== undefined) {
    if (typeof attributes.played !== "boolean") {
      return invalid(invalidAttribute(pointer("played"), "played must be true or false."));
    }
    value.played = attributes.played;
  }
  const listening = value.position !== undefined || value.played !== undefined;
  if (attributes.changedAt === undefined) {
    if (listening) {
      return invalid(
        invalidAttribute(
          at(),
          "changedAt is required with position or played: when the change happened on the device.",
        ),
      );
    }
  } else {
    const changedAt = typeof attributes.changedAt === "string" ? parseRfc3339(attributes.changedAt) : undefined;
    if (changedAt === undefined || changedAt < EARLIEST_CHANGE) {
      return invalid(
        invalidAttribute(
          pointer("changedAt"),
          "changedAt must be an RFC 3339 date-time (e.g. 2026-11-21T22:44:28.123Z) no earlier than 2000-01-01T00:00:00Z.",
        ),
      );
    }
    // A device whose clock runs ahead cannot pin a state forever: its future is the server's now.
    value.changedAt = changedAt > now + MAX_CLOCK_AHEAD_MS ? now : changedAt;
  }
  return { ok: true, value };
}

/** The frame of an episode resource object: `data` an object, `type`, then `id` (docs/API.md §5's order). */
function parseFrame(resource: unknown, base: string): Validated<string> {
  if (!isObject(resource)) {
    return invalid(
      invalidDocument(
        base,
        resource === undefined ? "The document has no data member." : "data must be a JSON object.",
      ),
    );
  }
  const { type, id } = resource;
  if (typeof type !== "string") {
    return invalid(
      invalidResourceObject(
        type === undefined ? base : pointerTo(base, "type"),
        type === undefined ? "The resource object has no type." : `type must be the string "${EPISODE_TYPE}".`,
      ),
    );
  }
  if (type !== EPISODE_TYPE) return invalid(typeMismatch(pointerTo(base, "type"), [EPISODE_TYPE], type));
  const guid = parseGuid(id);
  if (guid === undefined) {
    return invalid(
      invalidResourceIdentifier(
        id === undefined ? base : pointerTo(base, "id"),
        id === undefined
          ? "The resource object has no id: send the episode's UUID."
          : "id must be a UUID (8-4-4-4-12 hexadecimal digits).",
      ),
    );
  }
  return { ok: true, value: guid };
}

/**
 * `relationships.subscription.data` = `{type: "subscription", id: <feed guid>}`, each failure a 400 at its pointer
 * (built only for a failure: a bulk request checks a hundred of these).
 */
function parseFeedRelationship(resource: Record<string, unknown>, base: string): Validated<string> {
  /** The failure at the member `path` names under the resource object, or at its parent when it is missing. */
  const need = (path: string[], missing: boolean, detail: string) => {
    const pointer = pointerTo(base, ...(missing ? path.slice(0, -1) : path));
    return invalid(toErrorObject({ status: 400, title: "Invalid relationship", detail, source: { pointer } }));
  };
  const shape = 'relationships.subscription.data must be {"type": "subscription", "id": <the feed\'s guid>}.';
  const relationships = resource.relationships;
  if (!isObject(relationships)) return need(["relationships"], relationships === undefined, shape);
  const { subscription } = relationships;
  if (!isObject(subscription)) {
    return need(["relationships", "subscription"], subscription === undefined, shape);
  }
  const { data } = subscription;
  if (!isObject(data)) return need(["relationships", "subscription", "data"], data === undefined, shape);
  if (data.type !== SUBSCRIPTION_TYPE) {
    return need(["relationships", "subscription", "data", "type"], data.type === undefined, shape);
  }
  const feed = parseGuid(data.id);
  if (feed === undefined) {
    return need(
      ["relationships", "subscription", "data", "id"],
      data.id === undefined,
      "The feed's guid must be a UUID.",
    );
  }
  return { ok: true, value: feed };
}

function attributesOf(resource: Record<string, unknown>, base: string): Validated<Record<string, unknown>> {
  const { attributes } = resource;
  if (attributes === undefined) return { ok: true, value: {} };
  if (!isObject(attributes))
    return invalid(invalidAttribute(pointerTo(base, "attributes"), "attributes must be an object."));
  return { ok: true, value: attributes };
}

/**
 * An episode to create or merge into: POST's `data` and each bulk `add`'s (`base` is its pointer). Without
 * `mediaUrl` it can only merge: the write answers `media-url-required` when there is no live state.
 */
export type NewEpisode = EpisodeWrite & { feedGuid: string };

/** The 422 of a create without `mediaUrl` (docs/API.md §13): at the attributes of the resource object at `base`. */
export function mediaUrlRequired(base: string): ErrorObject {
  return invalidAttribute(pointerTo(base, "attributes"), "mediaUrl is required to create an episode state.");
}

/**
 * Validates an episode resource object that creates or merges (docs/API.md §13), wherever it sits: POST's
 * `data` or a bulk `add`'s. `now` is the server's clock, for `changedAt`.
 */
export function parseEpisodeResource(resource: unknown, base: string, now: number): Validated<NewEpisode> {
  const id = parseFrame(resource, base);
  if (!id.ok) return id;
  const object = resource as Record<string, unknown>;
  const feed = parseFeedRelationship(object, base);
  if (!feed.ok) return feed;
  if (object.attributes === undefined) {
    return invalid(invalidAttribute(base, "The resource object has no attributes: mediaUrl is required."));
  }
  const attributes = attributesOf(object, base);
  if (!attributes.ok) return attributes;
  const parsed = parseAttributes(attributes.value, base, now);
  if (!parsed.ok) return parsed;
  return { ok: true, value: { ...parsed.value, id: id.value, feedGuid: feed.value } };
}

/**
 * Validates an episode resource object that merges into an existing state: PATCH's `data` (with the path id
 * as `expectedId`) or a bulk `update`'s. `relationships` and `mediaUrl` are optional here.
 */
export function parseEpisodePatch(
  resource: unknown,
  base: string,
  now: number,
  expectedId?: string,
): Validated<EpisodeWrite> {
  const id = parseFrame(resource, base);
  if (!id.ok) return id;
  if (expectedId !== undefined && id.value !== expectedId)
    return invalid(idMismatch(pointerTo(base, "id"), expectedId));
  const object = resource as Record<string, unknown>;
  let feedGuid: string | undefined;
  if (object.relationships !== undefined) {
    const feed = parseFeedRelationship(object, base);
    if (!feed.ok) return feed;
    feedGuid = feed.value;
  }
  const attributes = attributesOf(object, base);
  if (!attributes.ok) return attributes;
  const parsed = parseAttributes(attributes.value, base, now);
  if (!parsed.ok) return parsed;
  return { ok: true, value: { ...parsed.value, id: id.value, ...(feedGuid === undefined ? {} : { feedGuid }) } };
}

// ---------------------------------------------------------------------------------------------
// Serialisation

export function episodePath(id: string): string {
  return `/v1/episodes/${id}`;
}

function feedRelationship(feedGuid: string) {
  return { subscription: { data: { type: SUBSCRIPTION_TYPE, id: feedGuid } } };
}

function attributesOfStored(episode: StoredEpisode) {
  return {
    mediaUrl: episode.mediaUrl,
    itemGuid: episode.itemGuid,
    position: episode.position,
    duration: episode.duration,
    played: episode.played,
    positionChangedAt: episode.positionChangedAt === null ? null : toRfc3339(episode.positionChangedAt),
    playedChangedAt: episode.playedChangedAt === null ? null : toRfc3339(episode.playedChangedAt),
  };
}

function resourceWith<A>(episode: StoredEpisode, attributes: A) {
  return {
    type: EPISODE_TYPE,
    id: episode.id,
    attributes,
    relationships: feedRelationship(episode.feedGuid),
    links: { self: episodePath(episode.id) },
  };
}

/** The episode resource object of a response (docs/API.md §13). */
export function toEpisodeResource(episode: StoredEpisode) {
  return resourceWith(episode, attributesOfStored(episode));
}

/** An episode as its change feed reports it: the resource plus `deletedAt: null`, or a tombstone without links. */
export function toEpisodeChangeResource(change: ChangedEpisode) {
  if (change.deletedAt === null) {
    // Built in place rather than spread from the resource: a feed page builds a hundred of these.
    return resourceWith(change, Object.assign(attributesOfStored(change), { deletedAt: null }));
  }
  return {
    type: EPISODE_TYPE,
    id: change.id,
    attributes: { deletedAt: toRfc3339(change.deletedAt) },
    relationships: feedRelationship(change.feedGuid),
  };
}

// ---------------------------------------------------------------------------------------------
// Errors

export function episodeNotFound(): ApiError {
  return new ApiError({
    status: 404,
    title: "Episode not found",
    detail: "The requested episode does not exist for the user.",
  });
}

/** The 404 inline in bulk results, at the operation. */
export function episodeNotFoundAt(operationPointer: string): ErrorObject {
  return { ...episodeNotFound().errors[0], source: { pointer: operationPointer } };
}

/** A write that would store more episode states than the quota (docs/API.md §13); inline in bulk at the operation. */
export function episodeLimitReached(operationPointer?: string): ErrorObject {
  return toErrorObject({
    status: 403,
    title: "Episode limit reached",
    detail: `A user may store at most ${MAX_STORED_EPISODES} episode states, deleted ones included.`,
    ...(operationPointer === undefined ? {} : { source: { pointer: operationPointer } }),
    meta: { maxEpisodes: MAX_STORED_EPISODES },
  });
}

/** The stored state belongs to another feed than the request names: nothing was written. */
export function episodeFeedMismatch(pointer: string, storedFeed: string): ErrorObject {
  return toErrorObject({
    status: 409,
    title: "Feed mismatch",
    detail: `This episode state belongs to the feed ${subscriptionPath(storedFeed)}; an episode id names one feed's item.`,
    source: { pointer },
  });
}
