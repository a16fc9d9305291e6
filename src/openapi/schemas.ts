import * as z from "zod";
import { ATOMIC_EXT_URI, JSONAPI_VERSION } from "../jsonapi";
import { MAX_OPERATIONS } from "../limits";
import { pageQuerySchema } from "../pagination";
import {
  FEED_URL_PATTERN,
  guidSchema,
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

/** A subscription resource object in a response (list, get-one, create). */
export const subscriptionSchema = z.object({
  type: z.literal(SUBSCRIPTION_TYPE),
  id: lowercaseGuid,
  attributes: subscriptionAttributesSchema,
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
  links: z.object({ self: z.string() }).optional(),
});

export const subscriptionDocumentResponseSchema = z.object({
  jsonapi: jsonapiObjectSchema,
  data: subscriptionSchema,
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
    description: `Absolute http or https URL of the feed, at most ${MAX_FEED_URL_BYTES} bytes in UTF-8 (so at most ${feedUrlSchema.maxLength} characters), without whitespace, control characters (C0, DEL, C1) or bidirectional controls, that the WHATWG URL standard parses (not necessarily an RFC 3986 URI: \`|\`, \`{}\`, \`%zz\`, backslashes and raw non-ASCII are taken). Stored and returned exactly as sent.`,
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
  .add(subscriptionDocumentResponseSchema, { id: "SubscriptionDocument" })
  .add(paginationLinksSchema, {
    id: "PaginationLinks",
    description:
      "Every link has the shape `/v1/subscriptions?page[number]=N&page[size]=S` (literal brackets, effective values). `prev` is null on page 1, `next` on the last page.",
  })
  .add(subscriptionListDocumentSchema, { id: "SubscriptionListDocument" })
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
