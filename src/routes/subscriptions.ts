import type { Context, MiddlewareHandler } from "hono";
import { Hono } from "hono";
import * as z from "zod";
import {
  findSubscription,
  listChanges,
  listSubscriptions,
  moveFeed,
  subscribe,
  unsubscribe,
} from "../db/subscriptions";
import type { AppEnv } from "../env";
import { entityTag, parseIfNoneMatch } from "../etag";
import { ApiError, absoluteUrl, dataDocument, respond } from "../jsonapi";
import { jsonBody } from "../middleware/json-body";
import { negotiate } from "../middleware/negotiation";
import {
  type ChangeParams,
  changeFeedLinks,
  changesLink,
  collectionQuery,
  invalidSyncToken,
  noQueryParameters,
  type PageParams,
  pageLink,
  paginationLinks,
} from "../pagination";
import {
  invalidGuid,
  parseFeedMove,
  parseGuid,
  subscriptionDocumentError,
  subscriptionDocumentSchema,
  subscriptionLimitReached,
  subscriptionNotFound,
  subscriptionPath,
  toChangeResource,
  toSubscriptionResource,
} from "../resources/subscription";

const COLLECTION_PATH = "/v1/subscriptions";

/** The `:guid` path parameter, validated (`c.req.valid("param")`): a 400 before anything else is read. */
const guidParam: MiddlewareHandler<AppEnv, "/:guid", { out: { param: { guid: string } } }> = async (c, next) => {
  const guid = parseGuid(c.req.param("guid"));
  if (guid === undefined) throw invalidGuid();
  c.req.addValidatedData("param", { guid });
  await next();
};

const jsonApi = negotiate("none");

/** User data may be kept by the client, but must be revalidated (ETag) before each use. */
const REVALIDATE = "private, no-cache";

function notModified(c: Context<AppEnv>, etag: string): Response {
  return c.body(null, 304, { ETag: etag, "Cache-Control": REVALIDATE });
}

/** One page of the user's subscriptions in list order (docs/API.md §4). */
async function listPage(c: Context<AppEnv>, page: PageParams): Promise<Response> {
  const userId = c.get("userId");
  const key = pageLink(COLLECTION_PATH, page);
  const precondition = parseIfNoneMatch(c.req.header("If-None-Match"), userId, key);
  const { version, total, rows } = await listSubscriptions(c.get("db"), userId, page, precondition.version);
  const etag = entityTag(userId, key, version);
  if (!rows || precondition.any) return notModified(c, etag);
  return respond(
    c,
    dataDocument(
      rows.map((row) => toSubscriptionResource(row)),
      { links: paginationLinks(COLLECTION_PATH, page, total), meta: { total } },
    ),
    200,
    { ETag: etag, "Cache-Control": REVALIDATE },
  );
}

/**
 * One page of the change feed (docs/API.md §8): what changed after the client's token, oldest change
 * first, deletions included. One more change than the page holds is read to know whether `next` exists.
 */
async function changesPage(c: Context<AppEnv>, page: ChangeParams): Promise<Response> {
  c.set("routeName", `${COLLECTION_PATH}?filter[since]`);
  const userId = c.get("userId");
  const key = changesLink(COLLECTION_PATH, page.since, page.size);
  const precondition = parseIfNoneMatch(c.req.header("If-None-Match"), userId, key);
  const { version, changes } = await listChanges(c.get("db"), userId, page.since, page.size + 1, precondition.version);
  if (page.since > version) throw invalidSyncToken();
  const etag = entityTag(userId, key, version);
  if (!changes || precondition.any) return notModified(c, etag);
  const items = changes.slice(0, page.size);
  const syncToken = items.at(-1)?.changeSeq ?? page.since;
  return respond(
    c,
    dataDocument(items.map(toChangeResource), {
      links: changeFeedLinks(COLLECTION_PATH, page, syncToken, changes.length > page.size),
      meta: { syncToken: String(syncToken) },
    }),
    200,
    { ETag: etag, "Cache-Control": REVALIDATE },
  );
}

/** The body of PATCH: a document whose data is the subscription with its new feedUrl (docs/API.md §9). */
const feedMoveDocumentSchema = z.object({ data: z.record(z.string(), z.unknown()) });

export const subscriptionRoutes = new Hono<AppEnv>()

  // List subscriptions page by page, or what changed since a sync token (GET /v1/subscriptions).
  .get("/", jsonApi, collectionQuery, (c) => {
    const query = c.req.valid("query");
    return query.kind === "changes" ? changesPage(c, query) : listPage(c, query);
  })

  // Add a subscription; idempotent (docs/API.md §5).
  .post("/", jsonApi, noQueryParameters, jsonBody(subscriptionDocumentSchema, subscriptionDocumentError), async (c) => {
    const result = await subscribe(c.get("db"), c.get("userId"), c.req.valid("json"), Date.now());
    if (result.kind === "limit") throw new ApiError({ ...subscriptionLimitReached(), status: 403 });
    const document = dataDocument(toSubscriptionResource(result.subscription));
    if (result.kind === "exists") return respond(c, document);
    return respond(c, document, 201, { Location: absoluteUrl(c, subscriptionPath(result.subscription.guid)) });
  })

  // Get one subscription of the user (docs/API.md §4).
  .get("/:guid", jsonApi, guidParam, noQueryParameters, async (c) => {
    const { guid } = c.req.valid("param");
    const userId = c.get("userId");
    const key = subscriptionPath(guid);
    const precondition = parseIfNoneMatch(c.req.header("If-None-Match"), userId, key);
    const { version, subscription } = await findSubscription(c.get("db"), userId, guid);
    if (!subscription) throw subscriptionNotFound();
    const etag = entityTag(userId, key, version);
    if (precondition.any || precondition.version === version) return notModified(c, etag);
    return respond(c, dataDocument(toSubscriptionResource(subscription)), 200, {
      ETag: etag,
      "Cache-Control": REVALIDATE,
    });
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
      const subscription =
        feedUrl === undefined
          ? (await findSubscription(db, userId, guid)).subscription
          : await moveFeed(db, userId, { guid, feedUrl }, Date.now());
      if (!subscription) throw subscriptionNotFound();
      return respond(c, dataDocument(toSubscriptionResource(subscription)));
    },
  )

  // Unsubscribe: the target of links.unsubscribe. The row stays as a tombstone (docs/API.md §5).
  .delete("/:guid", jsonApi, guidParam, noQueryParameters, async (c) => {
    const { guid } = c.req.valid("param");
    const removed = await unsubscribe(c.get("db"), c.get("userId"), guid, Date.now());
    if (!removed) throw subscriptionNotFound();
    return c.body(null, 204);
  });
