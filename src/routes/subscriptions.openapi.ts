import { PENDING_PODCAST, type Podcast } from "../db/feeds";
import { MAX_URL_BYTES } from "../db/storage";
import { MAX_STORED_SUBSCRIPTIONS } from "../db/subscriptions";
import { dataDocument, errorDocument } from "../jsonapi";
import { MAX_BODY_BYTES } from "../limits";
import {
  bodyError,
  bodyTooLargeResponse,
  COMMON_BAD_REQUEST,
  commonBadRequestExamples,
  EXAMPLE_TIME,
  errorContent,
  example,
  exampleErrors,
  FEEDS,
  headerRef,
  JSONAPI,
  type Json,
  jsonApiContent,
  MOVED_FEED_URL,
  malformedJson,
  media415,
  pageError,
  parameterRef,
  responseRef,
  schemaRef,
  stored,
  successHeaders,
  syncTokenExpiredResponse,
  unsupportedMediaType,
  v1Headers,
  v1Parameters,
  v1Responses,
} from "../openapi/components";
import { changeFeedLinks, invalidSyncToken, paginationLinks } from "../pagination";
import { toPodcastResource } from "../resources/podcast";
import { idMismatch, invalidGuid, storageLimitReached } from "../resources/resource-object";
import { subscriptionLimitReached, toChangeResource, toSubscriptionResource } from "../resources/subscription";

/** The 422 of a feedUrl that is not http(s), as POST and PATCH answer it. */
const notHttpExample = example(
  "Not an http(s) URL",
  exampleErrors(
    bodyError({
      data: { type: "subscription", id: FEEDS[0].guid, attributes: { feedUrl: "ftp://example.com/feed" } },
    }),
  ),
);

const subscriptionCreateExample = {
  data: { type: "subscription", id: FEEDS[0].guid, attributes: { feedUrl: FEEDS[0].feedUrl } },
};

const listExample = dataDocument(
  [0, 1].map((index) => toSubscriptionResource(stored(index))),
  { links: paginationLinks("/v1/subscriptions", { number: 1, size: 2 }, 3), meta: { total: 3 } },
);
const pastTheEndExample = dataDocument([], {
  links: paginationLinks("/v1/subscriptions", { number: 9, size: 25 }, 3),
  meta: { total: 3 },
});
const oneExample = dataDocument(toSubscriptionResource(stored(0)));

/** What the feed round knows of the examples' feeds: one fetched, one not yet. */
const knownPodcast: Podcast = {
  title: "The Daily Byte",
  author: "Byte Media",
  description: "Ten minutes of technology news, every weekday.",
  imageUrl: "https://feeds.example.com/the-daily-byte/cover.jpg",
  siteUrl: "https://www.example.com/the-daily-byte",
  language: "en",
  podcastGuid: "c3a4e1f2-7d5b-5e9a-8c1f-2b3d4e5f6a7b",
  fetchedAt: "2026-11-21T23:50:00.000Z",
  status: "ok",
};
const pendingPodcast: Podcast = PENDING_PODCAST;
const podcastExample = dataDocument(toPodcastResource(FEEDS[0].guid, knownPodcast));
const pendingPodcastExample = dataDocument(toPodcastResource(FEEDS[1].guid, pendingPodcast));
const includedListExample = {
  ...dataDocument([0, 1].map((index) => toSubscriptionResource(stored(index)))),
  included: [toPodcastResource(FEEDS[0].guid, knownPodcast), toPodcastResource(FEEDS[1].guid, pendingPodcast)],
  links: paginationLinks("/v1/subscriptions", { number: 1, size: 2 }, 3),
  meta: { total: 3 },
};
const includedOneExample = {
  ...oneExample,
  included: [toPodcastResource(FEEDS[0].guid, knownPodcast)],
};
const movedExample = dataDocument(toSubscriptionResource({ ...stored(1), feedUrl: MOVED_FEED_URL }));
const changeFeedExample = dataDocument(
  [
    toChangeResource({ ...stored(2), unsubscribedAt: null, changeSeq: 41 }),
    toChangeResource({ ...stored(0), unsubscribedAt: EXAMPLE_TIME + 3_600_000, changeSeq: 42 }),
  ],
  {
    links: changeFeedLinks("/v1/subscriptions", { since: 40, size: 2 }, 42, true),
    meta: { syncToken: "42" },
  },
);
const caughtUpExample = dataDocument([], {
  links: changeFeedLinks("/v1/subscriptions", { since: 57, size: 25 }, 57, false),
  meta: { syncToken: "57" },
});
/** The `400` of every operation on one subscription by its guid (get-one, DELETE, its podcast). */
const invalidGuidResponse = {
  description: `The guid is not a UUID. ${COMMON_BAD_REQUEST}`,
  headers: v1Headers,
  content: errorContent({
    ...commonBadRequestExamples,
    invalidGuid: example("guid is not a UUID", errorDocument(invalidGuid().errors)),
  }),
};
const subscriptionLimit = exampleErrors(subscriptionLimitReached());
const forbiddenLimit = {
  description: `The user's active subscriptions alone fill the quota of ${MAX_STORED_SUBSCRIPTIONS} stored subscriptions (unsubscribed ones count too, but the oldest are purged first to make room), or the user's URL text would pass the storage budget of ${MAX_URL_BYTES} bytes after purging every unsubscription. The quota's error wins when both apply.`,
  headers: v1Headers,
  content: errorContent({
    limit: example("Subscription limit reached", subscriptionLimit),
    storage: example("Storage limit reached", exampleErrors(storageLimitReached())),
  }),
};

/** A feed move that would grow the URL text past the budget (after purging every unsubscription). */
const forbiddenStorage = {
  description: `The new feedUrl would grow the user's URL text past the storage budget of ${MAX_URL_BYTES} bytes, even after purging every unsubscription.`,
  headers: v1Headers,
  content: errorContent({ storage: example("Storage limit reached", exampleErrors(storageLimitReached())) }),
};

/** OpenAPI: The subscriptions collection and one subscription (routes/subscriptions.ts). */
export const subscriptionPaths: Record<string, Json> = {
  "/v1/subscriptions": {
    get: {
      operationId: "listSubscriptions",
      tags: ["Subscriptions"],
      summary: "List subscriptions, or what changed since a sync token",
      description: `Without \`filter[since]\`: the authenticated user's active subscriptions, page by page, oldest first (\`userSubscribedAt\`, then \`id\`; stable while new subscriptions arrive), with \`meta.total\`.

With \`filter[since]=<token>\` (and optionally \`page[size]\`): the **change feed**. Every write that changes a subscription (new, revived, unsubscribed, feed moved) gives it the user's next change number; the feed returns the subscriptions changed after the token, oldest change first, each once with its current state: active ones exactly as in the list plus \`userUnsubscribedAt: null\`, unsubscribed ones as tombstones with \`userUnsubscribedAt\` and no links. Follow \`links.next\` until it is null, then store \`meta.syncToken\` and send it next time. No clocks are involved, so no change is ever skipped or lost at a boundary; a subscription that changes while you page shows up again later with its newer state. Tokens never expire.

With \`include=podcast\` (on pages and on the change feed): a compound document whose \`included\` holds the podcasts of the active subscriptions in \`data\` (tombstones have none), without an \`ETag\`.

Takes \`page[number]\`, \`page[size]\`, \`filter[since]\` and \`include=podcast\` only: any other \`include\`, \`sort\`, \`fields[...]\`, other \`filter[...]\`, other \`page[...]\` and any other all-lowercase name answer 400 with \`source.parameter\`; names with another character (camelCase) are ignored.`,
      parameters: [
        parameterRef("pageNumber"),
        parameterRef("pageSize"),
        parameterRef("since"),
        parameterRef("include"),
        parameterRef("ifNoneMatch"),
        ...v1Parameters,
      ],
      responses: {
        "200": {
          description:
            "One page of subscriptions, with pagination links and `meta.total`; or, with `filter[since]`, one page of the change feed with `meta.syncToken`.",
          headers: { ...successHeaders, ETag: headerRef("ETag") },
          content: jsonApiContent(
            { anyOf: [schemaRef("SubscriptionListDocument"), schemaRef("ChangeFeedDocument")] },
            {
              page: example("First page of three subscriptions, two per page", listExample),
              included: example(
                "include=podcast: the page with its podcasts, one fetched, one not yet",
                includedListExample,
              ),
              pastTheEnd: example("A page past the end", pastTheEndExample),
              changes: example(
                "Change feed: a new subscription and an unsubscription after token 40, more to follow",
                changeFeedExample,
              ),
              caughtUp: example("Change feed: nothing changed since the token", caughtUpExample),
            },
          ),
        },
        "304": responseRef("NotModified"),
        "400": {
          description:
            "A query parameter is invalid or not supported (`page[number]` and `filter[since]` exclude each other), or `X-D1-Bookmark` does not have a bookmark's shape (`source.header`).",
          headers: v1Headers,
          content: errorContent({
            sizeTooBig: example("page[size] over the maximum", exampleErrors(pageError({ "page[size]": "101" }))),
            badNumber: example("page[number] not a whole number", exampleErrors(pageError({ "page[number]": "0" }))),
            unsupported: example("A parameter JSON:API reserves", exampleErrors(pageError({ include: "episodes" }))),
            badBookmark: commonBadRequestExamples.badBookmark,
            invalidToken: example("A sync token this server did not issue", errorDocument(invalidSyncToken().errors)),
            numberWithSince: example(
              "page[number] with filter[since]",
              exampleErrors(pageError({ "filter[since]": "0", "page[number]": "2" })),
            ),
          }),
        },
        "410": syncTokenExpiredResponse,
        ...v1Responses,
      },
    },
    post: {
      operationId: "subscribe",
      tags: ["Subscriptions"],
      summary: "Subscribe to a feed",
      description: `Adds a subscription for the authenticated user. Idempotent: subscribing again to an active subscription answers 200 with the stored resource, unchanged; after an unsubscribe it answers 201 with a fresh \`userSubscribedAt\`. Send the body as \`${JSONAPI}\` (no \`charset\`; the Atomic Operations extension is not applicable here). Checks run in this order: body UTF-8 and JSON, \`data\`, \`type\` (409 when not \`subscription\`), \`id\` (400), \`feedUrl\` (422). Bodies over ${MAX_BODY_BYTES / 1024 / 1024} MiB answer 413.`,
      parameters: v1Parameters,
      requestBody: {
        required: true,
        content: jsonApiContent(schemaRef("SubscriptionCreateDocument"), {
          subscribe: example("Subscribe to a feed", subscriptionCreateExample),
        }),
      },
      responses: {
        "200": {
          description: "Already subscribed: the stored subscription, unchanged.",
          headers: successHeaders,
          content: jsonApiContent(schemaRef("SubscriptionDocument"), {
            existing: example("Already subscribed", oneExample),
          }),
        },
        "201": {
          description: "Subscribed.",
          headers: { ...successHeaders, Location: headerRef("Location") },
          content: jsonApiContent(schemaRef("SubscriptionDocument"), { created: example("Subscribed", oneExample) }),
        },
        "400": {
          description: `The body is not JSON, not a document with \`data\`, or its \`id\` is missing or not a UUID. ${COMMON_BAD_REQUEST}`,
          headers: v1Headers,
          content: errorContent({
            ...commonBadRequestExamples,
            malformed: example("Body is not JSON", exampleErrors(malformedJson)),
            noData: example("No data member", exampleErrors(bodyError({ meta: {} }))),
            badId: example(
              "id is not a UUID",
              exampleErrors(
                bodyError({ data: { type: "subscription", id: "42", attributes: { feedUrl: FEEDS[0].feedUrl } } }),
              ),
            ),
          }),
        },
        "403": forbiddenLimit,
        "409": {
          description:
            "`data.type` is not `subscription`; or `Already Subscribed`: `feedUrl` names another active subscription of the user (its URL, or an alias of it: docs/API.md §18), or the id is a subscription the feed round merged into another active one, whose `guid` and stored `feedUrl` are in `meta`. Nothing is written.",
          headers: v1Headers,
          content: errorContent({
            typeMismatch: example(
              "Wrong resource type",
              exampleErrors(
                bodyError({ data: { type: "episode", id: FEEDS[0].guid, attributes: { feedUrl: FEEDS[0].feedUrl } } }),
              ),
            ),
          }),
        },
        "413": bodyTooLargeResponse,
        "415": unsupportedMediaType(JSONAPI, {
          json: example("Sent as application/json", media415(`Send the request body as ${JSONAPI}.`)),
          charset: example(
            "With a charset parameter",
            media415("The JSON:API media type allows only the ext and profile parameters."),
          ),
          atomic: example(
            "With the Atomic Operations extension",
            media415(`The Atomic Operations extension applies to /v1/operations only; send ${JSONAPI}.`),
          ),
        }),
        "422": {
          description: `\`feedUrl\` is missing, not a string, not an absolute http/https URL, longer than 2048 bytes in UTF-8, or holds whitespace, a control character or a bidirectional control.`,
          headers: v1Headers,
          content: errorContent({
            notHttp: notHttpExample,
            missing: example(
              "No feedUrl",
              exampleErrors(bodyError({ data: { type: "subscription", id: FEEDS[0].guid, attributes: {} } })),
            ),
          }),
        },
        ...v1Responses,
      },
    },
  },
  "/v1/subscriptions/{guid}": {
    parameters: [parameterRef("guid")],
    get: {
      operationId: "getSubscription",
      tags: ["Subscriptions"],
      summary: "Get a subscription",
      description:
        "One subscription of the authenticated user. The guid matches in any case. Takes `include=podcast` only (the subscription's podcast as `included`, no `ETag` then); other names JSON:API reserves answer 400.",
      parameters: [parameterRef("include"), parameterRef("ifNoneMatch"), ...v1Parameters],
      responses: {
        "200": {
          description: "The subscription; with `include=podcast`, its podcast in `included`.",
          headers: { ...successHeaders, ETag: headerRef("ETag") },
          content: jsonApiContent(schemaRef("SubscriptionDocument"), {
            subscription: example("A subscription", oneExample),
            included: example("include=podcast", includedOneExample),
          }),
        },
        "304": responseRef("NotModified"),
        "400": invalidGuidResponse,
        "404": responseRef("SubscriptionNotFound"),
        ...v1Responses,
      },
    },
    patch: {
      operationId: "moveFeed",
      tags: ["Subscriptions"],
      summary: "Move a feed to a new URL",
      description: `A podcast's feed URL changed (a redirect, a new host); its guid did not. Replaces \`feedUrl\` exactly as sent; the guid and \`userSubscribedAt\` stay. A real change is a change for the change feed, and the old URL stays an alias of the subscription for this user (docs/API.md §18: an add of it names this subscription in every API; the latest 4 renames are kept); the same URL as stored, or a body without \`attributes\`/\`feedUrl\`, answers 200 and records nothing. Send the body as \`${JSONAPI}\`. Checks run in this order: the path guid (400), body JSON, \`data\`, \`type\` (409), \`id\` (400 when missing or not a UUID, 409 at \`/data/id\` when it is not the path's guid), \`feedUrl\` (422).`,
      parameters: v1Parameters,
      requestBody: {
        required: true,
        content: jsonApiContent(schemaRef("SubscriptionPatchDocument"), {
          move: example("Move a feed", {
            data: { type: "subscription", id: FEEDS[1].guid, attributes: { feedUrl: MOVED_FEED_URL } },
          }),
        }),
      },
      responses: {
        "200": {
          description: "The subscription as it now is (as get-one returns it).",
          headers: successHeaders,
          content: jsonApiContent(schemaRef("SubscriptionDocument"), { moved: example("Moved", movedExample) }),
        },
        "400": {
          description: `The path guid is not a UUID, the body is not JSON or not a document with \`data\`, or \`data.id\` is missing or not a UUID. ${COMMON_BAD_REQUEST}`,
          headers: v1Headers,
          content: errorContent({
            ...commonBadRequestExamples,
            invalidGuid: example("guid is not a UUID", errorDocument(invalidGuid().errors)),
            malformed: example("Body is not JSON", exampleErrors(malformedJson)),
          }),
        },
        "403": forbiddenStorage,
        "404": responseRef("SubscriptionNotFound"),
        "409": {
          description: "`data.type` is not `subscription`, or `data.id` is not the path's guid.",
          headers: v1Headers,
          content: errorContent({
            idMismatch: example("Another guid in the body", exampleErrors(idMismatch("/data/id", FEEDS[1].guid))),
          }),
        },
        "413": bodyTooLargeResponse,
        "415": unsupportedMediaType(JSONAPI, {
          json: example("Sent as application/json", media415(`Send the request body as ${JSONAPI}.`)),
        }),
        "422": {
          description: "`feedUrl` is present but null, not a string, not an absolute http/https URL, or too long.",
          headers: v1Headers,
          content: errorContent({
            notHttp: notHttpExample,
          }),
        },
        ...v1Responses,
      },
    },
    delete: {
      operationId: "unsubscribe",
      tags: ["Subscriptions"],
      summary: "Unsubscribe",
      description:
        "The target of `links.unsubscribe`. The subscription disappears from list and get, and the change feed reports it as a tombstone; subscribing again later answers 201 with a fresh `userSubscribedAt`.",
      parameters: v1Parameters,
      responses: {
        "204": { description: "Unsubscribed. No body.", headers: successHeaders },
        "400": invalidGuidResponse,
        "404": responseRef("SubscriptionNotFound"),
        ...v1Responses,
      },
    },
  },
  "/v1/subscriptions/{guid}/podcast": {
    parameters: [parameterRef("guid")],
    get: {
      operationId: "getPodcast",
      tags: ["Subscriptions"],
      summary: "What the service knows of a subscription's podcast",
      description:
        "The podcast of one active subscription (docs/API.md §18): title, author, description, image and site URLs, language, `podcast:guid`, when its feed was last fetched, and its status. The service fetches every subscribed feed itself, off the request path; until the first fetch the podcast is `pending` with every fact null. A podcast's changes take no change number and no `ETag`: read it again (or list with `include=podcast`) to see them. The guid matches in any case. Takes no query parameters (names JSON:API reserves answer 400).",
      parameters: v1Parameters,
      responses: {
        "200": {
          description: "The podcast; its id is the subscription's guid.",
          headers: successHeaders,
          content: jsonApiContent(schemaRef("PodcastDocument"), {
            fetched: example("A fetched feed", podcastExample),
            pending: example("Not fetched yet", pendingPodcastExample),
          }),
        },
        "400": invalidGuidResponse,
        "404": responseRef("SubscriptionNotFound"),
        ...v1Responses,
      },
    },
  },
};
