import type { Podcast } from "../db/feeds";

/**
 * The podcast resource (docs/API.md §18): what the service knows of a subscription's feed, fetched by the feed
 * round. Its id is the subscription's guid: it is reached through the subscription and is never written by
 * clients. Its changes are not the subscription's: they take no change number and leave the ETag alone.
 */

export const PODCAST_TYPE = "podcast";

/** The one value `include` takes, on the list and on get-one (docs/API.md §3, §18). */
export const PODCAST_INCLUDE = "podcast";

export function podcastPath(guid: string): string {
  return `/v1/subscriptions/${guid}/podcast`;
}

/** A subscription's `relationships` member: its podcast, linked and identified. */
export function podcastRelationships(guid: string) {
  return { podcast: { links: { related: podcastPath(guid) }, data: { type: PODCAST_TYPE, id: guid } } };
}

/** The podcast resource object of the subscription `guid`, members in the order SQLite writes them too. */
export function toPodcastResource(guid: string, podcast: Podcast) {
  return {
    type: PODCAST_TYPE,
    id: guid,
    attributes: {
      title: podcast.title,
      author: podcast.author,
      description: podcast.description,
      imageUrl: podcast.imageUrl,
      siteUrl: podcast.siteUrl,
      language: podcast.language,
      podcastGuid: podcast.podcastGuid,
      fetchedAt: podcast.fetchedAt,
      status: podcast.status,
    },
    links: { self: podcastPath(guid) },
  };
}
