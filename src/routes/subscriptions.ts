import type { Context } from "hono";
import { Hono } from "hono";
import * as z from "zod";
import type { AtomicResult, OperationKind } from "../atomic-operations";
import { type ChangeFeed, changeFeedPage } from "../change-feed";
import { WriteBatch } from "../db/batch";
import { findPodcast } from "../db/feeds";
import {
  type FeedItem,
  findSubscription,
  type Inclusion,
  listChanges,
  listChangesWithPodcasts,
  listSubscriptions,
  moveFeed,
  subscribe,
  subscriptionWriter,
  unsubscribe,
  type WriteOperation,
} from "../db/subscriptions";
import type { AppEnv } from "../env";
import { entityTag, notModified, parseIfNoneMatch, REVALIDATE } from "../etag";
import { ApiError, absoluteUrl, dataDocument, dataDocumentText, pointerTo, respond, respondText } from "../jsonapi";
import { guidParam } from "../middleware/guid-param";
import { jsonBody } from "../middleware/json-body";
import { negotiate } from "../middleware/negotiation";
import { chargeRenumbering } from "../middleware/rate-limit";
import {
  collectionQuery,
  includeQuery,
  noQueryParameters,
  type PageParams,
  pageLink,
  paginationLinks,
} from "../pagination";
import { conditionalResource } from "../resource-response";
import { toPodcastResource } from "../resources/podcast";
import { type ResourceRef, storageLimitReached } from "../resources/resource-object";
import {
  alreadySubscribed,
  parseFeedMove,
  parseSubscriptionResource,
  SUBSCRIPTION_TYPE,
  subscriptionDocumentError,
  subscriptionDocumentSchema,
  subscriptionNotFound,
  subscriptionNotFoundAt,
  subscriptionPath,
  subscriptionRefused,
  toSubscriptionResource,
} from "../resources/subscription";

const COLLECTION_PATH = "/v1/subscriptions";

const jsonApi = negotiate("none");

/** The subscription change feed (docs/API.md §8). */
const subscriptionChanges: ChangeFeed = { path: COLLECTION_PATH, read: listChanges };
/** The change feed with the podcasts of its active subscriptions as `included` (`include=podcast`, §18). */
const subscriptionChangesWithPodcasts: ChangeFeed = {
  path: COLLECTION_PATH,
  read: listChangesWithPodcasts,
  includesUnversioned: true,
};

/** What a query's `include` asks the reads for. */
const inclusionOf = (query: { include?: "podcast" }): Inclusion => (query.include ? "podcasts" : "none");

/**
 * One page of the user's subscriptions in list order (docs/API.md §4). With their podcasts (§18) it has no ETag
 * and is always read: a podcast's changes take no change number, so the version cannot tell a copy is current.
 */
async function listPage(c: Context<AppEnv>, page: PageParams, include: Inclusion): Promise<Response> {
  const userId = c.get("userId");
  const key = pageLink(COLLECTION_PATH, page);
  const links = (total: number) => ({ links: paginationLinks(COLLECTION_PATH, page, total), meta: { total } });
  if (include === "podcasts") {
    const { total, data, included } = await listSubscriptions(c.get("db"), userId, page, null, include);
    return respondText(c, dataDocumentText(data ?? "[]", links(total), included), 200, { "Cache-Control": REVALIDATE });
  }
  const precondition = parseIfNoneMatch(c.req.header("If-None-Match"), userId, key);
  const { version, total, data } = await listSubscriptions(c.get("db"), userId, page, precondition.version);
  const etag = entityTag(userId, key, version);
  if (data === undefined || precondition.any) return notModified(c, etag);
  return respondText(c, dataDocumentText(data, links(total)), 200, { ETag: etag, "Cache-Control": REVALIDATE });
}

/** The body of PATCH: a document whose data is the subscription with its new feedUrl (docs/API.md §9). */
const feedMoveDocumentSchema = z.object({ data: z.record(z.string(), z.unknown()) });

export const subscriptionRoutes = new Hono<AppEnv>()

  // List subscriptions page by page, or what changed since a sync token (GET /v1/subscriptions).
  .get("/", jsonApi, collectionQuery, (c) => {
    const query = c.req.valid("query");
    const include = inclusionOf(query);
    if (query.kind === "page") return listPage(c, query, include);
    return changeFeedPage(c, include === "podcasts" ? subscriptionChangesWithPodcasts : subscriptionChanges, query);
  })

  // Add a subscription; idempotent (docs/API.md §5).
  .post("/", jsonApi, noQueryParameters, jsonBody(subscriptionDocumentSchema, subscriptionDocumentError), async (c) => {
    const batch = new WriteBatch();
    const result = await subscribe(c.get("db"), c.get("userId"), c.req.valid("json"), Date.now(), batch);
    await chargeRenumbering(c, batch);
    if (result.kind === "limit" || result.kind === "storage") throw ApiError.from(subscriptionRefused(result));
    // The URL names another active subscription (an alias of it, docs/API.md §18): nothing written.
    if (result.kind === "alias")
      throw ApiError.from(alreadySubscribed("/data/attributes/feedUrl", result.subscription));
    const document = dataDocument(toSubscriptionResource(result.subscription));
    if (result.kind === "exists") return respond(c, document);
    return respond(c, document, 201, { Location: absoluteUrl(c, subscriptionPath(result.subscription.guid)) });
  })

  // Get one subscription of the user (docs/API.md §4), with its podcast as `included` when asked (§18: no ETag then).
  .get("/:guid", jsonApi, guidParam, includeQuery, async (c) => {
    const { guid } = c.req.valid("param");
    if (c.req.valid("query").include) {
      const { subscription, podcast } = await findSubscription(c.get("db"), c.get("userId"), guid, "podcasts");
      if (!subscription || !podcast) throw subscriptionNotFound();
      const document = {
        ...dataDocument(toSubscriptionResource(subscription)),
        included: [toPodcastResource(guid, podcast)],
      };
      return respond(c, document, 200, { "Cache-Control": REVALIDATE });
    }
    return conditionalResource(
      c,
      subscriptionPath(guid),
      async () => {
        const { version, subscription } = await findSubscription(c.get("db"), c.get("userId"), guid);
        return { version, found: subscription };
      },
      (subscription) => toSubscriptionResource(subscription),
      subscriptionNotFound,
    );
  })

  // What the service knows of the subscription's feed (docs/API.md §18). Not versioned: no ETag.
  .get("/:guid/podcast", jsonApi, guidParam, noQueryParameters, async (c) => {
    const { guid } = c.req.valid("param");
    const podcast = await findPodcast(c.get("db"), c.get("userId"), guid);
    if (!podcast) throw subscriptionNotFound();
    return respond(c, dataDocument(toPodcastResource(guid, podcast)), 200, { "Cache-Control": REVALIDATE });
  })

  // Move a feed: replace its URL; the guid and userSubscribedAt stay (docs/API.md §9).
  .patch(
    "/:guid",
    jsonApi,
    guidParam,
    noQueryParameters,
    jsonBody(feedMoveDocumentSchema, subscriptionDocumentError),
    async (c) => {
      const { guid } = c.req.valid("param");
      const move = parseFeedMove(c.req.valid("json").data, "/data", "optional", guid);
      if (!move.ok) throw ApiError.from(move.error);
      const db = c.get("db");
      const userId = c.get("userId");
      const { feedUrl } = move.value;
      if (feedUrl === undefined) {
        const { subscription } = await findSubscription(db, userId, guid);
        if (!subscription) throw subscriptionNotFound();
        return respond(c, dataDocument(toSubscriptionResource(subscription)));
      }
      const batch = new WriteBatch();
      const result = await moveFeed(db, userId, { guid, feedUrl }, Date.now(), batch);
      await chargeRenumbering(c, batch);
      if (result.kind === "storage") throw ApiError.from(storageLimitReached());
      if (result.kind === "not-found") throw subscriptionNotFound();
      return respond(c, dataDocument(toSubscriptionResource(result.subscription)));
    },
  )

  // Unsubscribe: the target of links.unsubscribe. The row stays as a tombstone (docs/API.md §5).
  .delete("/:guid", jsonApi, guidParam, noQueryParameters, async (c) => {
    const { guid } = c.req.valid("param");
    const removed = await unsubscribe(c.get("db"), c.get("userId"), guid, Date.now());
    if (!removed) throw subscriptionNotFound();
    return c.body(null, 204);
  });

/** Subscription operations in `POST /v1/operations` (docs/API.md §6, 10): validated as POST, PATCH and DELETE. */
export const subscriptionOperations: OperationKind<WriteOperation> = {
  type: SUBSCRIPTION_TYPE,
  parse(op, operation, pointer, ref) {
    const data = pointerTo(pointer, "data");
    switch (op) {
      case "add": {
        const item = parseSubscriptionResource(operation.data, data);
        return item.ok ? { ok: true, value: { op, ...item.value } } : item;
      }
      case "update": {
        const move = parseFeedMove(operation.data, data, "required");
        if (!move.ok) return move;
        return { ok: true, value: { op, guid: move.value.guid, feedUrl: move.value.feedUrl as string } };
      }
      case "remove":
        return { ok: true, value: { op, guid: (ref as ResourceRef).id } };
    }
  },
  idOf: (operation) => operation.guid,
  writer(context) {
    const plan = subscriptionWriter(context);
    return (operation, pointer) => {
      const read = plan(operation);
      return (): AtomicResult => {
        const result = read();
        switch (result.kind) {
          case "created":
          case "updated":
            return { data: toSubscriptionResource(result.subscription, "self") };
          case "removed":
            return {};
          case "exists":
            return { errors: [alreadySubscribed(pointer, operation as FeedItem)] };
          case "alias":
            return { errors: [alreadySubscribed(pointer, result.subscription)] };
          case "limit":
          case "storage":
            return { errors: [subscriptionRefused(result, pointer)] };
          case "not-found":
            return { errors: [subscriptionNotFoundAt(pointer)] };
        }
      };
    };
  },
};
