import { zValidator } from "@hono/zod-validator";
import type { Context } from "hono";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import * as z from "zod";
import { findSubscription, listSubscriptions, subscribe, unsubscribe } from "../db/subscriptions";
import type { AppEnv } from "../env";
import { entityTag, parseIfNoneMatch } from "../etag";
import { dataDocument, respond } from "../jsonapi";
import { MAX_BODY_BYTES } from "../limits";
import { negotiate } from "../middleware/negotiation";
import {
  isReservedParameter,
  pageLink,
  pageQueryError,
  pageQuerySchema,
  paginationLinks,
  unsupportedQueryParameter,
} from "../pagination";
import {
  guidSchema,
  invalidGuid,
  subscriptionDocumentError,
  subscriptionDocumentSchema,
  subscriptionNotFound,
  subscriptionPath,
  toSubscriptionResource,
} from "../resources/subscription";

const COLLECTION_PATH = "/v1/subscriptions";

const guidParam = zValidator("param", z.object({ guid: guidSchema }), (result) => {
  if (!result.success) throw invalidGuid();
});

/** GET /v1/subscriptions/{guid} takes no query parameters; reserved ones are refused, others ignored. */
const noQuery = zValidator("query", z.record(z.string(), z.unknown()), (result) => {
  const reserved = Object.keys(result.data).find(isReservedParameter);
  if (reserved !== undefined) throw unsupportedQueryParameter(reserved);
});

const jsonApi = negotiate("none");

/** User data may be kept by the client, but must be revalidated (ETag) before each use. */
const REVALIDATE = "private, no-cache";

function notModified(c: Context<AppEnv>, etag: string): Response {
  return c.body(null, 304, { ETag: etag, "Cache-Control": REVALIDATE });
}

export const subscriptionRoutes = new Hono<AppEnv>()

  // List subscriptions, page by page (specification: GET /v1/subscriptions).
  .get(
    "/",
    jsonApi,
    zValidator("query", pageQuerySchema, (result) => {
      if (!result.success) throw pageQueryError(result.error);
    }),
    async (c) => {
      const page = c.req.valid("query");
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
    },
  )

  // Add a subscription; idempotent (specification: POST /v1/subscriptions, docs/API.md §5).
  .post(
    "/",
    jsonApi,
    bodyLimit({ maxSize: MAX_BODY_BYTES }),
    zValidator("json", subscriptionDocumentSchema, (result) => {
      if (!result.success) throw subscriptionDocumentError(result.error, result.data);
    }),
    async (c) => {
      const { created, subscription } = await subscribe(c.get("db"), c.get("userId"), c.req.valid("json"), Date.now());
      const document = dataDocument(toSubscriptionResource(subscription));
      if (!created) return respond(c, document);
      const location = new URL(subscriptionPath(subscription.guid), c.req.url).href;
      return respond(c, document, 201, { Location: location });
    },
  )

  // Get one subscription of the user (specification: GET /v1/subscriptions/{guid}).
  .get("/:guid", jsonApi, guidParam, noQuery, async (c) => {
    const { guid } = c.req.valid("param");
    const userId = c.get("userId");
    const key = subscriptionPath(guid);
    const precondition = parseIfNoneMatch(c.req.header("If-None-Match"), userId, key);
    const { version, subscription, fresh } = await findSubscription(c.get("db"), userId, guid, precondition.version);
    const etag = entityTag(userId, key, version);
    if (fresh) return notModified(c, etag);
    if (!subscription) throw subscriptionNotFound();
    if (precondition.any) return notModified(c, etag);
    return respond(c, dataDocument(toSubscriptionResource(subscription)), 200, {
      ETag: etag,
      "Cache-Control": REVALIDATE,
    });
  })

  // Unsubscribe: the target of links.unsubscribe. The row stays as a tombstone (docs/API.md §5).
  .delete("/:guid", jsonApi, guidParam, noQuery, async (c) => {
    const { guid } = c.req.valid("param");
    const removed = await unsubscribe(c.get("db"), c.get("userId"), guid, Date.now());
    if (!removed) throw subscriptionNotFound();
    return c.body(null, 204);
  });
