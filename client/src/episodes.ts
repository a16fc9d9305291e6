/**
 * The episode calls of the client: save where an episode was paused and whether it was finished, read one
 * state, forget it, and follow the episode change feed (docs/API.md §13). Built on the shared transport.
 */
import { uuidV5 } from "../../src/podcast-guid.js";
import type { components } from "./openapi.js";
import { type ChangeFeedResult, followChangeFeed, type Transport } from "./transport.js";

type Schemas = components["schemas"];
export type Episode = Schemas["Episode"];
/** An episode change-feed item: a live state (`deletedAt: null`) or a tombstone (forget it). */
export type EpisodeChange = Schemas["EpisodeChange"] | Schemas["EpisodeTombstone"];
type EpisodeDocument = Schemas["EpisodeDocument"];

const COLLECTION_PATH = "/v1/episodes";

/** An episode as the server names it: its id (see `episodeId`) and its feed's guid. */
export interface EpisodeRef {
  id: string;
  /** The guid of the episode's feed (`relationships.subscription`). */
  feedGuid: string;
  /** The enclosure URL. Required the first time a state is saved. */
  mediaUrl: string;
  /** The item's `<guid>`, when it has one. */
  itemGuid?: string | null;
}

/** What a device knows about an episode: any of these; `at` is when it changed on the device (default: now). */
export interface EpisodeStateChange {
  position?: number;
  played?: boolean;
  duration?: number | null;
  at?: Date | string;
}

export interface SaveEpisodeResult {
  /** True when this call created the state (201); false when it merged into the stored one (200). */
  created: boolean;
  /** The state after the merge: a change older than the stored one's left it as it was. */
  episode: Episode;
}

/** What changed after the token, each episode once with its latest state, and the token to store. */
export type EpisodeSyncResult = ChangeFeedResult<EpisodeChange>;

export interface EpisodeCalls {
  /**
   * Saves a change of an episode's listening state: creates the state, or merges into it field by field
   * (`position` and `played` each only when this change happened later than the stored one, so a late upload
   * of an older change from an offline device changes nothing).
   */
  saveEpisode(episode: EpisodeRef, change: EpisodeStateChange): Promise<SaveEpisodeResult>;
  /** Saves where the listener paused (`saveEpisode` with a position). */
  savePosition(episode: EpisodeRef, position: number, at?: Date | string): Promise<SaveEpisodeResult>;
  /** Marks an episode played (or unplayed with `played: false`). */
  markPlayed(episode: EpisodeRef, played?: boolean, at?: Date | string): Promise<SaveEpisodeResult>;
  /** One episode state. Throws SubscriptionsApiError with status 404 when there is none. */
  getEpisode(id: string): Promise<Episode>;
  /** Forgets a state; the other devices learn it from the feed. 404 when there is none. */
  forgetEpisode(id: string): Promise<void>;
  /**
   * What changed in the user's listening state since `syncToken` (default "0": everything), forgotten
   * states included: follows the episode change feed to its end. Apply with `applyEpisodeChanges`, then
   * store `syncToken` (the episode feed has its own tokens, apart from the subscriptions'). Throws
   * IncompleteError with the pages read when one fails.
   */
  syncEpisodes(syncToken?: string, options?: { pageSize?: number }): Promise<EpisodeSyncResult>;
}

/**
 * An episode's id as every app computes it (the podcast-namespace rule): UUIDv5 of the item's `<guid>`
 * (surrounding whitespace trimmed, case kept), or of its enclosure URL when it has none, in the namespace of
 * the feed's guid.
 */
export function episodeId(feedGuid: string, item: { guid?: string | null; enclosureUrl: string }): Promise<string> {
  const guid = item.guid?.trim();
  return uuidV5(feedGuid, guid ? guid : item.enclosureUrl);
}

/**
 * Applies episode change-feed items to a device's copy (id -> state), in order: a live state is stored, a
 * tombstone removes it. Returns the same map.
 */
export function applyEpisodeChanges(
  local: Map<string, Episode>,
  changes: readonly EpisodeChange[],
): Map<string, Episode> {
  for (const change of changes) {
    local.delete(change.id);
    if (change.attributes.deletedAt === null && "links" in change) {
      const { deletedAt: _deleted, ...attributes } = change.attributes;
      local.set(change.id, {
        type: change.type,
        id: change.id,
        attributes,
        relationships: change.relationships,
        links: change.links,
      });
    }
  }
  return local;
}

function isoTime(at: Date | string | undefined): string {
  if (at === undefined) return new Date().toISOString();
  return typeof at === "string" ? at : at.toISOString();
}

export function episodeCalls(call: Transport): EpisodeCalls {
  const episodePath = (id: string) => `${COLLECTION_PATH}/${encodeURIComponent(id)}`;

  async function saveEpisode(episode: EpisodeRef, change: EpisodeStateChange): Promise<SaveEpisodeResult> {
    const attributes: Record<string, unknown> = { mediaUrl: episode.mediaUrl };
    if (episode.itemGuid !== undefined) attributes.itemGuid = episode.itemGuid;
    if (change.position !== undefined) attributes.position = change.position;
    if (change.played !== undefined) attributes.played = change.played;
    if (change.duration !== undefined) attributes.duration = change.duration;
    if (change.position !== undefined || change.played !== undefined) attributes.changedAt = isoTime(change.at);
    const answer = await call({
      method: "POST",
      path: COLLECTION_PATH,
      body: {
        data: {
          type: "episode",
          id: episode.id,
          attributes,
          relationships: { subscription: { data: { type: "subscription", id: episode.feedGuid } } },
        },
      },
    });
    return { created: answer.status === 201, episode: (answer.body as EpisodeDocument).data };
  }

  return {
    saveEpisode,
    savePosition: (episode, position, at) => saveEpisode(episode, { position, at }),
    markPlayed: (episode, played = true, at) => saveEpisode(episode, { played, at }),
    async getEpisode(id) {
      return ((await call({ method: "GET", path: episodePath(id) })).body as EpisodeDocument).data;
    },
    async forgetEpisode(id) {
      await call({ method: "DELETE", path: episodePath(id) });
    },
    syncEpisodes: (syncToken = "0", { pageSize = 100 } = {}) =>
      followChangeFeed<EpisodeChange>(call, COLLECTION_PATH, syncToken, pageSize),
  };
}
