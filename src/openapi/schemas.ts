import * as z from "zod";
import { ATOMIC_EXT_URI, JSONAPI_VERSION } from "../jsonapi";
import { MAX_OPERATIONS } from "../limits";
import { pageQuerySchema } from "../pagination";
import { PODCAST_TYPE } from "../resources/podcast";
import { guidSchema } from "../resources/resource-object";
import {
  FEED_URL_PATTERN,
  MAX_FEED_URL_BYTES,
  SUBSCRIPTION_TYPE,
  subscriptionDocumentSchema,
  subscriptionPatchSchema,
  subscriptionRefSchema,
  subscriptionResourceSchema,
} from "../resources/subscription";
import { operationsDocumentSchema } from "../routes/operations";

/**
 * The schemas of the OpenAPI document (`src/openapi/document.ts`). Request schemas are the very zod
 * objects the routes validate with, imported, never copied. Response schemas are declared here in
 * zod as well: they feed the document (and so the typed client's generated types) and the tests
 * that check real responses against the document. Nothing in the worker imports this module.
 */

// ---------------------------------------------------------------------------------------------
// Requests: the routes' own schemas

export {
  guidSchema,
  operationsDocumentSchema,
  pageQuerySchema,
  subscriptionDocumentSchema,
  subscriptionResourceSchema,
};

/** The body of PATCH /v1/subscriptions/{guid}: the route validates `data` with `subscriptionPatchSchema`. */
export const subscriptionPatchDocumentSchema = z.object({ data: subscriptionPatchSchema });

/** The operations of a bulk request as documented: the route checks operations one by one in code. */
export const addOperationSchema = z.object({
  op: z.literal("add"),
  data: subscriptionResourceSchema,
});

export const updateOperationSchema = z.object({
  op: z.literal("update"),
  data: subscriptionResourceSchema,
  ref: subscriptionRefSchema.optional(),
});

export const removeOperationSchema = z.object({
  op: z.literal("remove"),
  ref: subscriptionRefSchema,
});

// ---------------------------------------------------------------------------------------------
// Responses

/** RFC 3339 UTC with milliseconds and `Z` (docs/API.md §4); one schema per meaning, each with its description. */
const isoTimestamp = () => z.iso.datetime({ precision: 3 });
const subscribedAt = isoTimestamp();
const unsubscribedAt = isoTimestamp();

export const jsonapiObjectSchema = z.object({ version: z.literal(JSONAPI_VERSION) });

export const bulkJsonapiObjectSchema = z.object({
  version: z.literal(JSONAPI_VERSION),
  ext: z.array(z.string()),
});

/** The link-method extension's link object. */
export const unsubscribeLinkSchema = z.object({
  href: z.string(),
  method: z.literal("DELETE"),
});

/** The guid as responses carry it: always lower-case. */
const lowercaseGuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
const storedFeedUrl = z.string();

const subscriptionAttributesSchema = z.object({
  feedUrl: storedFeedUrl,
  userSubscribedAt: subscribedAt,
});

/** Every subscription's `relationships` (docs/API.md §18): its podcast, whose id is the subscription's guid. */
export const podcastRelationshipsSchema = z.object({
  podcast: z.object({
    links: z.object({ related: z.string() }),
    data: z.object({ type: z.literal(PODCAST_TYPE), id: lowercaseGuid }),
  }),
});

/** A subscription resource object in a response (list, get-one, create). */
export const subscriptionSchema = z.object({
  type: z.literal(SUBSCRIPTION_TYPE),
  id: lowercaseGuid,
  attributes: subscriptionAttributesSchema,
  relationships: podcastRelationshipsSchema,
  links: z.object({
    self: z.string(),
    unsubscribe: unsubscribeLinkSchema,
  }),
});

/** A subscription in a bulk result: `links.self` only, and clients must treat `links` as optional. */
export const bulkSubscriptionSchema = z.object({
  type: z.literal(SUBSCRIPTION_TYPE),
  id: lowercaseGuid,
  attributes: subscriptionAttributesSchema,
  relationships: podcastRelationshipsSchema,
  links: z.object({ self: z.string() }).optional(),
});

/** What the service knows of a subscription's feed (docs/API.md §18); unknown facts are null. */
const podcastText = (max: number) => z.string().max(max).nullable();
const podcastTitle = podcastText(500);
const podcastAuthor = podcastText(500);
const podcastDescription = podcastText(1000);
const podcastImageUrl = z.string().nullable();
const podcastSiteUrl = z.string().nullable();
const podcastLanguage = z.string().nullable();
const fetchedAt = isoTimestamp().nullable();
const declaredPodcastGuid = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
  .nullable();
export const podcastStatusSchema = z.enum(["pending", "ok", "failing", "gone"]);

export const podcastSchema = z.object({
  type: z.literal(PODCAST_TYPE),
  id: lowercaseGuid,
  attributes: z.object({
    title: podcastTitle,
    author: podcastAuthor,
    description: podcastDescription,
    imageUrl: podcastImageUrl,
    siteUrl: podcastSiteUrl,
    language: podcastLanguage,
    podcastGuid: declaredPodcastGuid,
    fetchedAt,
    status: podcastStatusSchema,
  }),
  links: z.object({ self: z.string() }),
});

export const podcastDocumentSchema = z.object({
  jsonapi: jsonapiObjectSchema,
  data: podcastSchema,
});

export const subscriptionDocumentResponseSchema = z.object({
  jsonapi: jsonapiObjectSchema,
  data: subscriptionSchema,
  included: z.array(podcastSchema).optional(),
});

export const paginationLinksSchema = z.object({
  self: z.string(),
  first: z.string(),
  prev: z.string().nullable(),
  next: z.string().nullable(),
  last: z.string(),
});

export const subscriptionListDocumentSchema = z.object({
  jsonapi: jsonapiObjectSchema,
  data: z.array(subscriptionSchema),
  included: z.array(podcastSchema).optional(),
  links: paginationLinksSchema,
  meta: z.object({ total: z.number().int().min(0) }),
});

/** A subscription as the change feed reports it: active (the list's resource) or a tombstone (no links). */
export const activeChangeSchema = subscriptionSchema.extend({
  attributes: subscriptionAttributesSchema.extend({ userUnsubscribedAt: z.null() }),
});

export const tombstoneChangeSchema = z.object({
  type: z.literal(SUBSCRIPTION_TYPE),
  id: lowercaseGuid,
  attributes: subscriptionAttributesSchema.extend({ userUnsubscribedAt: unsubscribedAt }),
  relationships: podcastRelationshipsSchema,
});

export const changeSchema = z.union([activeChangeSchema, tombstoneChangeSchema]);

export const changeFeedLinksSchema = z.object({
  self: z.string(),
  first: z.string(),
  prev: z.null(),
  next: z.string().nullable(),
  last: z.null(),
});

export const changeFeedDocumentSchema = z.object({
  jsonapi: jsonapiObjectSchema,
  data: z.array(changeSchema),
  included: z.array(podcastSchema).optional(),
  links: changeFeedLinksSchema,
  meta: z.object({ syncToken: z.string().regex(/^(0|[1-9][0-9]{0,14})$/) }),
});

export const errorObjectSchema = z.object({
  status: z.string().regex(/^[1-5][0-9]{2}$/),
  title: z.string(),
  detail: z.string(),
  source: z
    .object({
      pointer: z.string().optional(),
      parameter: z.string().optional(),
      header: z.string().optional(),
    })
    .optional(),
  meta: z.record(z.string(), z.unknown()).optional(),
});

export const errorDocumentSchema = z.object({
  jsonapi: jsonapiObjectSchema,
  errors: z.array(errorObjectSchema).min(1),
});

export const atomicResultSchema = z.union([
  z.object({ data: bulkSubscriptionSchema }),
  z.object({ data: z.lazy(() => episodeSchema) }),
  z.object({ errors: z.array(errorObjectSchema).min(1) }),
  z.strictObject({}),
]);

export const operationsResultDocumentSchema = z.object({
  jsonapi: bulkJsonapiObjectSchema,
  "atomic:results": z.array(atomicResultSchema).max(MAX_OPERATIONS),
  meta: z.object({
    succeeded: z.number().int().min(0),
    failed: z.number().int().min(0),
  }),
});

/** The answer of an OPML import: counts, and the outlines skipped with their reasons. */
export const opmlImportDocumentSchema = z.object({
  jsonapi: jsonapiObjectSchema,
  meta: z.object({
    imported: z.number().int().min(0),
    alreadySubscribed: z.number().int().min(0),
    skipped: z.array(z.object({ xmlUrl: z.string(), reason: z.string() })),
  }),
});

// ---------------------------------------------------------------------------------------------
// Names and descriptions in the document (`#/components/schemas/<id>`)

export interface SchemaMeta {
  id?: string;
  title?: string;
  description?: string;
  format?: string;
  pattern?: string;
  dependentRequired?: Record<string, string[]>;
}

/** Metadata for the document only: kept out of zod's global registry so no one else sees it. */
export const documentRegistry = z.registry<SchemaMeta>();

const feedUrlSchema = subscriptionResourceSchema.shape.attributes.shape.feedUrl;

documentRegistry
  .add(subscriptionResourceSchema, {
    id: "SubscriptionResourceObject",
    description:
      "A subscription resource object in a request that creates one. `id` is the feed's GUID (a UUID, usually a v5 UUID derived from the feed URL by the podcast namespace rules); the server stores it lower-cased and never recomputes it. Read-only and unknown attributes are ignored.",
  })
  .add(lowercaseGuid, { format: "uuid", description: "The feed's GUID, lower-case; also the `guid` path parameter." })
  .add(storedFeedUrl, {
    pattern: FEED_URL_PATTERN,
    description: `The feed URL exactly as the client sent it: an absolute http(s) URL as the WHATWG URL standard parses it, which need not be an RFC 3986 URI (it may hold \`|\`, \`{}\`, \`%zz\`, backslashes or raw non-ASCII characters), so it is described by a pattern, not \`format: uri\`. Treat it as a string; never re-encode it.`,
  })
  .add(subscribedAt, {
    description: "When the user subscribed: RFC 3339 UTC with milliseconds, e.g. `2026-11-21T22:44:28.123Z`.",
  })
  .add(unsubscribedAt, {
    description: "When the user unsubscribed: RFC 3339 UTC with milliseconds, e.g. `2026-11-21T23:44:28.123Z`.",
  })
  .add(feedUrlSchema, {
    pattern: FEED_URL_PATTERN,
    description: `Absolute http or https URL, at most ${MAX_FEED_URL_BYTES} bytes in UTF-8 (so at most ${feedUrlSchema.maxLength} characters), without whitespace and without any character of Unicode general category Cc, Cf (bidi controls, zero-width characters, U+FEFF, tag characters), Co, Cs (lone surrogates), Zl or Zp, or any noncharacter (U+FDD0-U+FDEF, U+xFFFE, U+xFFFF), that the WHATWG URL standard parses (not necessarily an RFC 3986 URI: \`|\`, \`{}\`, \`%zz\`, backslashes and raw non-ASCII are taken). Stored and returned exactly as sent.`,
  })
  .add(subscriptionDocumentSchema, {
    id: "SubscriptionCreateDocument",
    description: "The body of `POST /v1/subscriptions`: a JSON:API document whose primary data is one subscription.",
  })
  .add(addOperationSchema, {
    id: "AddOperation",
    description:
      "Subscribes, as `POST /v1/subscriptions` does. Already subscribed (before, or by an earlier operation of the request) fails with 409 `Already Subscribed`; a revived unsubscription succeeds.",
  })
  .add(updateOperationSchema, {
    id: "UpdateOperation",
    description:
      "Moves a feed, as `PATCH /v1/subscriptions/{guid}` does; `feedUrl` is required here. A `ref`, when present, must name the same subscription (else 400 at `ref`). Result: `{data}`; not an active subscription: 404.",
  })
  .add(removeOperationSchema, {
    id: "RemoveOperation",
    description:
      "Unsubscribes, as `DELETE /v1/subscriptions/{guid}` does (the subscription becomes a tombstone the change feed reports). `href` is not supported. Result: `{}`; not an active subscription: 404.",
  })
  .add(subscriptionRefSchema, {
    id: "SubscriptionIdentifier",
    description: "A resource identifier object of a subscription.",
  })
  .add(subscriptionPatchSchema, {
    id: "SubscriptionPatchResourceObject",
    description:
      "The subscription with its new `feedUrl`. `id` must be the path's guid (any case; else 409). Without `attributes` or `feedUrl` nothing changes. Read-only and unknown attributes are ignored.",
  })
  .add(subscriptionPatchDocumentSchema, {
    id: "SubscriptionPatchDocument",
    description: "The body of `PATCH /v1/subscriptions/{guid}`.",
  })
  .add(activeChangeSchema, {
    id: "ActiveChange",
    description: "A subscription that is active now: the list's resource plus `userUnsubscribedAt: null`.",
  })
  .add(tombstoneChangeSchema, {
    id: "TombstoneChange",
    description:
      "A subscription the user has unsubscribed from: its last `feedUrl` and `userSubscribedAt`, and when it ended. No links.",
  })
  .add(changeFeedLinksSchema, {
    id: "ChangeFeedLinks",
    description:
      "`self`, `first` (the whole history) and `next` have the shape `/v1/subscriptions?filter[since]=T&page[size]=S`; `next` is null when no more changes follow; `prev` and `last` are always null.",
  })
  .add(changeFeedDocumentSchema, {
    id: "ChangeFeedDocument",
    description:
      "What changed after the token, oldest change first, each subscription once with its current state. Follow `links.next` until it is null, then store `meta.syncToken` for the next sync.",
  })
  .add(operationsDocumentSchema, {
    id: "OperationsDocument",
    description: `The body of \`POST /v1/operations\`: 1 to ${MAX_OPERATIONS} operations, processed in order, each on its own.`,
  })
  .add(jsonapiObjectSchema, { id: "JsonApiObject" })
  .add(bulkJsonapiObjectSchema, {
    id: "BulkJsonApiObject",
    description: `\`ext\` lists the extensions in use: \`${ATOMIC_EXT_URI}\` and this server's link-method extension (\`<base>/ext/link-method\`).`,
  })
  .add(unsubscribeLinkSchema, {
    id: "UnsubscribeLink",
    description:
      "A link object of the link-method extension: send `method` to `href` (with the same bearer token) to unsubscribe.",
  })
  .add(subscriptionSchema, { id: "Subscription", description: "A subscription resource object in a response." })
  .add(bulkSubscriptionSchema, {
    id: "BulkSubscription",
    description: "A subscription created by a bulk `add`. Treat `links` as optional.",
  })
  .add(subscriptionDocumentResponseSchema, {
    id: "SubscriptionDocument",
    description: "One subscription; with `include=podcast` (get-one only), `included` holds its podcast.",
  })
  .add(podcastRelationshipsSchema, {
    id: "SubscriptionRelationships",
    description:
      "The subscription's podcast: `links.related` is `/v1/subscriptions/<guid>/podcast`, `data` its identifier (type `podcast`, id the subscription's guid). Present on tombstones too.",
  })
  .add(podcastSchema, {
    id: "Podcast",
    description:
      "What the service knows of a subscription's feed, from fetching it itself (never from the apps). Its id is the subscription's guid. Unknown facts are null; text is plain (markup removed) and bounded; URLs passed the feedUrl rules. Its changes take no change number and leave the subscription's ETag alone.",
  })
  .add(podcastStatusSchema, {
    description:
      "`pending`: not fetched yet; `ok`: the last fetch succeeded; `failing`: the last fetch failed (what was known stays, retried later); `gone`: the feed answered 410 or failed for 30 days (it stays subscribed).",
  })
  .add(fetchedAt, {
    description: "The last successful fetch (a `304` included): RFC 3339 UTC with milliseconds; null before the first.",
  })
  .add(podcastTitle, { description: "The channel's title: plain text, at most 500 characters (code points)." })
  .add(podcastAuthor, {
    description: "`itunes:author`, else `author` / `managingEditor`: plain text, at most 500 characters.",
  })
  .add(podcastDescription, { description: "The channel's description as plain text, at most 1 000 characters." })
  .add(podcastImageUrl, {
    description:
      "The artwork (`itunes:image` `href`, else `image/url`), an http(s) URL passing the feedUrl rules. Loading it contacts the podcast's host.",
  })
  .add(podcastSiteUrl, { description: "The channel's `link`, an http(s) URL passing the feedUrl rules." })
  .add(podcastLanguage, { description: "The language the feed declares (e.g. `en`, `de-AT`), as it declares it." })
  .add(declaredPodcastGuid, {
    description:
      "The `<podcast:guid>` the feed declares, lowercase, when it is a UUID; null otherwise. Not necessarily the subscription's guid (the id).",
  })
  .add(podcastDocumentSchema, { id: "PodcastDocument" })
  .add(paginationLinksSchema, {
    id: "PaginationLinks",
    description:
      "Every link has the shape `/v1/subscriptions?page[number]=N&page[size]=S` (literal brackets, effective values). `prev` is null on page 1, `next` on the last page.",
  })
  .add(subscriptionListDocumentSchema, {
    id: "SubscriptionListDocument",
    description:
      "One page of subscriptions; with `include=podcast`, `included` holds the podcasts of the page's subscriptions.",
  })
  .add(errorObjectSchema, {
    id: "ErrorObject",
    description:
      "A JSON:API error object. `title` is stable for each kind of error; `source.pointer` points into the request body, `source.parameter` names a query or path parameter, `source.header` a request header.",
  })
  .add(errorDocumentSchema, { id: "ErrorDocument" })
  .add(atomicResultSchema, {
    id: "AtomicResult",
    description: "One element of `atomic:results`: `data` when its operation succeeded, `errors` when it failed.",
  })
  .add(opmlImportDocumentSchema, {
    id: "OpmlImportDocument",
    description:
      "What an OPML import did: `imported` subscriptions created (or revived), `alreadySubscribed` (before the import, or by an earlier outline of the same file), and the outlines `skipped` with the reason (`xmlUrl` as in the file): an invalid URL, or the user's quota of stored subscriptions reached.",
  })
  .add(operationsResultDocumentSchema, {
    id: "OperationsResultDocument",
    description:
      "`atomic:results` has exactly as many elements as the request had operations, in the same order; `meta` counts the successes and failures.",
  });

// ---------------------------------------------------------------------------------------------
// Episode states (docs/API.md §13). The route validates them in code (src/resources/episode.ts); these
// schemas describe the same rules for the document, and the response check holds the answers to them.

const episodeType = z.literal("episode");
const feedRelationshipSchema = z.object({
  subscription: z.object({ data: z.object({ type: z.literal(SUBSCRIPTION_TYPE), id: guidSchema }) }),
});
const storedFeedRelationshipSchema = z.object({
  subscription: z.object({ data: z.object({ type: z.literal(SUBSCRIPTION_TYPE), id: lowercaseGuid }) }),
});
const seconds = (min: number) => z.number().int().min(min).max(2_147_483_647);
const positionChangedAt = isoTimestamp();
const playedChangedAt = isoTimestamp();
const deletedAt = isoTimestamp();
const deviceTime = z.string();

const episodeRequestAttributesSchema = z.object({
  mediaUrl: feedUrlSchema.optional(),
  itemGuid: z.string().nullable().optional(),
  position: seconds(0).optional(),
  duration: seconds(1).nullable().optional(),
  played: z.boolean().optional(),
  changedAt: deviceTime.optional(),
});

const episodeCreateAttributesSchema = episodeRequestAttributesSchema.extend({ mediaUrl: feedUrlSchema });

/** An episode resource object that creates a state or merges into it (POST, bulk `add`). */
export const episodeResourceSchema = z.object({
  type: episodeType,
  id: guidSchema,
  attributes: episodeCreateAttributesSchema,
  relationships: feedRelationshipSchema,
});

/** An episode resource object that merges into an existing state (PATCH, bulk `update`). */
export const episodePatchSchema = z.object({
  type: episodeType,
  id: guidSchema,
  attributes: episodeRequestAttributesSchema.optional(),
  relationships: feedRelationshipSchema.optional(),
});

export const episodeDocumentSchema = z.object({ data: episodeResourceSchema });
export const episodePatchDocumentSchema = z.object({ data: episodePatchSchema });

const episodeAttributesSchema = z.object({
  mediaUrl: storedFeedUrl,
  itemGuid: z.string().nullable(),
  position: seconds(0),
  duration: seconds(1).nullable(),
  played: z.boolean(),
  positionChangedAt: positionChangedAt.nullable(),
  playedChangedAt: playedChangedAt.nullable(),
});

/** An episode resource object in a response. */
export const episodeSchema = z.object({
  type: episodeType,
  id: lowercaseGuid,
  attributes: episodeAttributesSchema,
  relationships: storedFeedRelationshipSchema,
  links: z.object({ self: z.string() }),
});

export const episodeDocumentResponseSchema = z.object({ jsonapi: jsonapiObjectSchema, data: episodeSchema });

export const liveEpisodeChangeSchema = episodeSchema.extend({
  attributes: episodeAttributesSchema.extend({ deletedAt: z.null() }),
});

export const episodeTombstoneSchema = z.object({
  type: episodeType,
  id: lowercaseGuid,
  attributes: z.object({ deletedAt }),
  relationships: storedFeedRelationshipSchema,
});

export const episodeChangeFeedDocumentSchema = z.object({
  jsonapi: jsonapiObjectSchema,
  data: z.array(z.union([liveEpisodeChangeSchema, episodeTombstoneSchema])),
  links: changeFeedLinksSchema,
  meta: z.object({ syncToken: z.string().regex(/^(0|[1-9][0-9]{0,14})$/) }),
});

export const episodeAddOperationSchema = z.object({ op: z.literal("add"), data: episodeResourceSchema });
export const episodeUpdateOperationSchema = z.object({
  op: z.literal("update"),
  data: episodePatchSchema,
  ref: z.object({ type: episodeType, id: guidSchema }).optional(),
});
export const episodeRemoveOperationSchema = z.object({
  op: z.literal("remove"),
  ref: z.object({ type: episodeType, id: guidSchema }),
});

/** `changedAt` is required with `position` or `played` (docs/API.md §13): 422 otherwise. */
const changedAtWithListening = { dependentRequired: { position: ["changedAt"], played: ["changedAt"] } };

documentRegistry
  .add(episodeRequestAttributesSchema, changedAtWithListening)
  .add(episodeCreateAttributesSchema, changedAtWithListening)
  .add(positionChangedAt, {
    description: "When `position` last changed on the device that set it (RFC 3339 UTC with milliseconds), or null.",
  })
  .add(playedChangedAt, {
    description: "When `played` last changed on the device that set it (RFC 3339 UTC with milliseconds), or null.",
  })
  .add(deletedAt, { description: "When the state was forgotten (RFC 3339 UTC with milliseconds)." })
  .add(episodeResourceSchema, {
    id: "EpisodeResourceObject",
    description:
      "An episode state to create or merge into. `id` is the episode's UUID (UUIDv5 of the item's `<guid>`, trimmed, case kept, or of its enclosure URL, in the namespace of the feed's guid); `relationships.subscription` names the feed. `changedAt` (RFC 3339, any offset and fraction) is when the change happened on the device, required with `position` or `played`; no earlier than 2000-01-01T00:00:00Z; more than 10 minutes ahead of the server's clock it is taken as the server's clock. `itemGuid`: at most 1024 bytes in UTF-8, or null. Read-only and unknown attributes are ignored.",
  })
  .add(episodePatchSchema, {
    id: "EpisodePatchResourceObject",
    description:
      "What to merge into an existing state: any of the attributes; `relationships`, when present, must name the stored feed (else 409). `id` must be the path's id (else 409).",
  })
  .add(episodeDocumentSchema, { id: "EpisodeCreateDocument", description: "The body of `POST /v1/episodes`." })
  .add(episodePatchDocumentSchema, {
    id: "EpisodePatchDocument",
    description: "The body of `PATCH /v1/episodes/{id}`.",
  })
  .add(episodeSchema, {
    id: "Episode",
    description:
      "An episode state: `position` and `played` with the device times of their last change (`null` while never set), and the episode's `mediaUrl`, `itemGuid` and `duration`.",
  })
  .add(episodeDocumentResponseSchema, { id: "EpisodeDocument" })
  .add(liveEpisodeChangeSchema, {
    id: "EpisodeChange",
    description: "A live episode state in the change feed: the resource plus `deletedAt: null`.",
  })
  .add(episodeTombstoneSchema, {
    id: "EpisodeTombstone",
    description: "A forgotten episode state: its id, its feed and when it was forgotten. No links.",
  })
  .add(episodeChangeFeedDocumentSchema, {
    id: "EpisodeChangeFeedDocument",
    description:
      "What changed after the token, oldest change first, each episode once with its current state. Links have the shape `/v1/episodes?filter[since]=T&page[size]=S`.",
  })
  .add(episodeAddOperationSchema, {
    id: "EpisodeAddOperation",
    description: "Creates or merges into an episode state, as `POST /v1/episodes` does. Result: `{data}`.",
  })
  .add(episodeUpdateOperationSchema, {
    id: "EpisodeUpdateOperation",
    description: "Merges into an existing episode state, as `PATCH /v1/episodes/{id}` does; none: 404.",
  })
  .add(episodeRemoveOperationSchema, {
    id: "EpisodeRemoveOperation",
    description: "Forgets an episode state, as `DELETE /v1/episodes/{id}` does. Result: `{}`; none: 404.",
  });
