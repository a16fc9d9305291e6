import * as z from "zod";
import pkg from "../../package.json";
import { MAX_STORED_SUBSCRIPTIONS } from "../db/subscriptions";
import {
  ATOMIC_EXT_URI,
  dataDocument,
  type ErrorObject,
  errorDocument,
  JSONAPI_MEDIA_TYPE,
  jsonApiContentType,
  LINK_METHOD_EXT_PATH,
  toErrorObject,
} from "../jsonapi";
import { MAX_BODY_BYTES, MAX_OPERATIONS, MAX_OPML_FEEDS } from "../limits";
import { isXmlMediaType, OPML_ACCEPT_RANGES, OPML_CONTENT_TYPE, OPML_MEDIA_TYPE } from "../opml/media-types";
import { parseOpml } from "../opml/parse";
import { serialiseOpml } from "../opml/serialise";
import {
  changeFeedLinks,
  DEFAULT_PAGE_SIZE,
  invalidSyncToken,
  MAX_PAGE_SIZE,
  pageQueryError,
  paginationLinks,
} from "../pagination";
import {
  alreadySubscribed,
  idMismatch,
  invalidGuid,
  parseSubscriptionResource,
  SUBSCRIPTION_TYPE,
  subscriptionDocumentError,
  subscriptionLimitReached,
  subscriptionNotFound,
  subscriptionNotFoundAt,
  toChangeResource,
  toSubscriptionResource,
} from "../resources/subscription";
import {
  addOperationSchema,
  documentRegistry,
  guidSchema,
  operationsDocumentSchema,
  pageQuerySchema,
  removeOperationSchema,
  subscriptionDocumentSchema,
  updateOperationSchema,
} from "./schemas";

/**
 * The OpenAPI 3.1 document of the service, built from the zod schemas the routes validate with
 * (`./schemas`). `npm run openapi` writes it to `public/openapi.json`, which Workers static assets
 * serve at `GET /openapi.json`; the worker itself never imports this module, so it costs the
 * bundle nothing. Examples are produced by the service's own serialisation and error functions.
 */

type Json = Record<string, unknown>;

const JSONAPI = JSONAPI_MEDIA_TYPE;
/** The bulk endpoint's media type, exactly as the server writes it. */
const ATOMIC = jsonApiContentType([ATOMIC_EXT_URI]);
const OPERATIONS = "atomic:operations";

const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const responseRef = (name: string) => ({ $ref: `#/components/responses/${name}` });
const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

// ---------------------------------------------------------------------------------------------
// Schemas from zod

const JSON_SCHEMA_OPTIONS = {
  io: "input",
  target: "draft-2020-12",
  unrepresentable: "any",
  metadata: documentRegistry,
} as const;

/** Drops what OpenAPI's Schema Object does not need (`$schema`, `$id`) and the unreadable date-time regex. */
function tidy(schema: Json): Json {
  const { $schema: _schema, $id: _id, ...rest } = schema;
  if (rest.format === "date-time") delete rest.pattern;
  // zod's .int() bounds an integer to the safe range; that says nothing to a reader.
  if (rest.maximum === Number.MAX_SAFE_INTEGER) delete rest.maximum;
  if (rest.minimum === Number.MIN_SAFE_INTEGER) delete rest.minimum;
  for (const [key, value] of Object.entries(rest)) {
    if (Array.isArray(value)) {
      rest[key] = value.map((item) => (item && typeof item === "object" ? tidy(item as Json) : item));
    } else if (value && typeof value === "object") {
      rest[key] = tidy(value as Json);
    }
  }
  return rest;
}

/** `#/components/schemas`: every schema of the registry, referencing each other by `$ref`. */
function componentSchemas(): Record<string, Json> {
  const elements = operationsDocumentSchema.shape[OPERATIONS].element;
  const { schemas } = z.toJSONSchema(documentRegistry, {
    ...JSON_SCHEMA_OPTIONS,
    uri: (id) => `#/components/schemas/${id}`,
    override: (ctx) => {
      // The route takes any element and checks each operation on its own; the document shows those it accepts.
      if (ctx.zodSchema === elements) {
        Object.assign(ctx.jsonSchema, {
          oneOf: ["AddOperation", "UpdateOperation", "RemoveOperation"].map(schemaRef),
          discriminator: {
            propertyName: "op",
            mapping: {
              add: "#/components/schemas/AddOperation",
              update: "#/components/schemas/UpdateOperation",
              remove: "#/components/schemas/RemoveOperation",
            },
          },
        });
      }
    },
  });
  for (const operation of [addOperationSchema, updateOperationSchema, removeOperationSchema]) {
    if (!documentRegistry.has(operation)) throw new Error("a bulk operation schema is not registered");
  }
  return Object.fromEntries(Object.entries(schemas).map(([id, schema]) => [id, tidy(schema as Json)]));
}

/** A standalone schema (a parameter's), from the same zod objects as the routes. */
function inlineSchema(schema: z.ZodType): Json {
  return tidy(z.toJSONSchema(schema, JSON_SCHEMA_OPTIONS) as Json);
}

/**
 * A query parameter's schema as the client sees it: the route reads a string of decimal digits and
 * pipes it into a bounded integer; the document shows that integer (bounds included).
 */
function queryParameterSchema(schema: z.ZodType): Json {
  let inner: z.ZodType = schema;
  if (inner instanceof z.ZodOptional) inner = inner.unwrap() as z.ZodType;
  if (inner instanceof z.ZodPipe) return inlineSchema(inner.out as z.ZodType);
  return inlineSchema(inner);
}

// ---------------------------------------------------------------------------------------------
// Examples, made by the service's own functions

const EXAMPLE_TIME = Date.parse("2026-11-21T22:44:28.123Z");
const FEEDS = [
  { guid: "ead4c236-bf58-58c6-a2c6-a6b28d128cb6", feedUrl: "https://mp3s.nashownotes.com/pc20rss.xml" },
  { guid: "917393e3-1b1e-5cef-ace4-edaa54e1f810", feedUrl: "https://feeds.example.com/the-daily-byte.xml" },
  { guid: "5a7d2c44-0b8e-5f61-9d3a-6c2e1f4b7a90", feedUrl: "https://podcasts.example.org/night-sky/rss" },
];

const stored = (index: number) => ({
  guid: FEEDS[index].guid,
  feedUrl: FEEDS[index].feedUrl,
  subscribedAt: EXAMPLE_TIME + index * 60_000,
});

const exampleErrors = (...errors: ErrorObject[]) => errorDocument(errors);
const problem = (status: number, title: string, detail: string, extra: Pick<ErrorObject, "source" | "meta"> = {}) =>
  toErrorObject({ status, title, detail, ...extra });

function pageError(query: Record<string, string>) {
  const result = pageQuerySchema.safeParse(query);
  if (result.success) throw new Error(`example query ${JSON.stringify(query)} is valid`);
  return pageQueryError(result.error).errors[0];
}

function bodyError(body: unknown) {
  const result = subscriptionDocumentSchema.safeParse(body);
  if (result.success) throw new Error(`example body ${JSON.stringify(body)} is valid`);
  return subscriptionDocumentError(result.error, body).errors[0];
}

function operationError(resource: unknown, index: number) {
  const result = parseSubscriptionResource(resource, `/${OPERATIONS}/${index}/data`);
  if (result.ok) throw new Error(`example operation ${index} is valid`);
  return result.error;
}

const malformedJson = problem(400, "Malformed request body", "The request body is not valid JSON.");
const bodyTooLarge = problem(413, "Request body too large", "The request body exceeds the limit of 1 MiB.");

const example = (summary: string, value: unknown, description?: string) => ({
  summary,
  ...(description ? { description } : {}),
  value,
});

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

const bulkRequestExample = {
  [OPERATIONS]: [
    { op: "add", data: { type: "subscription", id: FEEDS[1].guid, attributes: { feedUrl: FEEDS[1].feedUrl } } },
    { op: "add", data: { type: "subscription", id: FEEDS[0].guid, attributes: { feedUrl: FEEDS[0].feedUrl } } },
    {
      op: "add",
      data: {
        type: "subscription",
        id: FEEDS[2].guid,
        attributes: { feedUrl: "ftp://podcasts.example.org/night-sky.xml" },
      },
    },
  ],
};

const MOVED_FEED_URL = "https://feeds.example.net/the-daily-byte/rss";

const bulkSyncRequestExample = {
  [OPERATIONS]: [
    { op: "update", data: { type: "subscription", id: FEEDS[1].guid, attributes: { feedUrl: MOVED_FEED_URL } } },
    { op: "remove", ref: { type: "subscription", id: FEEDS[0].guid } },
    { op: "remove", ref: { type: "subscription", id: FEEDS[2].guid } },
  ],
};

const bulkJsonApi = { version: "1.1", ext: [ATOMIC_EXT_URI, `https://api.example.com${LINK_METHOD_EXT_PATH}`] };

const bulkResultExample = {
  jsonapi: bulkJsonApi,
  "atomic:results": [
    { data: toSubscriptionResource(stored(1), "self") },
    { errors: [alreadySubscribed(`/${OPERATIONS}/1`, FEEDS[0])] },
    { errors: [operationError(bulkRequestExample[OPERATIONS][2].data, 2)] },
  ],
  meta: { succeeded: 1, failed: 2 },
};

const bulkSyncResultExample = {
  jsonapi: bulkJsonApi,
  "atomic:results": [
    { data: toSubscriptionResource({ ...stored(1), feedUrl: MOVED_FEED_URL }, "self") },
    {},
    { errors: [subscriptionNotFoundAt(`/${OPERATIONS}/2`)] },
  ],
  meta: { succeeded: 2, failed: 1 },
};

const bulkLimitExample = {
  jsonapi: bulkJsonApi,
  "atomic:results": [{ errors: [subscriptionLimitReached(`/${OPERATIONS}/0`)] }],
  meta: { succeeded: 0, failed: 1 },
};

// ---------------------------------------------------------------------------------------------
// Reusable pieces

const jsonApiContent = (schema: Json, examples: Record<string, unknown>, mediaType = JSONAPI) => ({
  [mediaType]: { schema, examples },
});

const errorContent = (examples: Record<string, unknown>, mediaTypes: string[] = [JSONAPI]) =>
  Object.fromEntries(mediaTypes.map((mediaType) => [mediaType, { schema: schemaRef("ErrorDocument"), examples }]));

const v1Headers = { "X-Request-Id": headerRef("X-Request-Id") };
const successHeaders = { ...v1Headers, "X-D1-Bookmark": headerRef("X-D1-Bookmark") };

const bodyTooLargeResponse = {
  description: `The body is larger than ${MAX_BODY_BYTES / 1024 / 1024} MiB.`,
  headers: v1Headers,
  content: errorContent({ tooLarge: example("Body too large", exampleErrors(bodyTooLarge)) }),
};

const parameters: Record<string, Json> = {
  guid: {
    name: "guid",
    in: "path",
    required: true,
    description:
      "The feed's GUID (a UUID in 8-4-4-4-12 hex syntax, any version, any case). Anything else answers 400 `Invalid GUID in request`.",
    schema: inlineSchema(guidSchema),
    example: FEEDS[0].guid,
  },
  pageNumber: {
    name: "page[number]",
    in: "query",
    required: false,
    description:
      'The page to return, from 1 (decimal digits only). A page past the end answers 200 with `data: []`. Anything else (`0`, `-1`, `1.5`, `abc`, empty) answers 400 with `source.parameter: "page[number]"`.',
    schema: { ...queryParameterSchema(pageQuerySchema.in.shape["page[number]"]), default: 1 },
    example: 2,
  },
  pageSize: {
    name: "page[size]",
    in: "query",
    required: false,
    description: `Subscriptions per page, 1 to ${MAX_PAGE_SIZE} (decimal digits only; default ${DEFAULT_PAGE_SIZE}). Over ${MAX_PAGE_SIZE} answers 400 with \`meta.maxSize: ${MAX_PAGE_SIZE}\`.`,
    schema: { ...queryParameterSchema(pageQuerySchema.in.shape["page[size]"]), default: DEFAULT_PAGE_SIZE },
    example: 50,
  },
  since: {
    name: "filter[since]",
    in: "query",
    required: false,
    description:
      "Turns the list into the change feed: `0` (the whole history) or the `meta.syncToken` of your last sync. Decimal digits, at most 15, no leading zeros; anything else, or a token past the user's latest change, answers 400 `Invalid sync token`. Cannot be combined with `page[number]`.",
    schema: { type: "string", pattern: "^(0|[1-9][0-9]{0,14})$" },
    example: "42",
  },
  ifNoneMatch: {
    name: "If-None-Match",
    in: "header",
    required: false,
    description:
      "The `ETag` of a representation the client holds. When it still matches, the answer is `304 Not Modified` with no body.",
    schema: { type: "string" },
    example: '"5d41402abc4b2a76b9719d911017c592"',
  },
  bookmarkRequest: {
    name: "X-D1-Bookmark",
    in: "header",
    required: false,
    description:
      "The `X-D1-Bookmark` of the last response this client received. The server then reads from a database replica at least as fresh as that bookmark, so a client always sees its own writes. Omit it on a first request.",
    schema: { type: "string" },
    example: "00000085-0000024c-00004c6d-8e61117bf38d7adb71b934ebbf891683",
  },
};

const headers: Record<string, Json> = {
  "X-Request-Id": {
    description: "Identifies the request in the service's logs; quote it when reporting a problem.",
    schema: { type: "string" },
    example: "0f8a7c66-5b7e-4d8c-9f63-2a1c9e4b7d10",
  },
  "X-D1-Bookmark": {
    description: "The database position this response reflects. Send it back as `X-D1-Bookmark` on the next request.",
    schema: { type: "string" },
    example: "00000085-0000024c-00004c6d-8e61117bf38d7adb71b934ebbf891683",
  },
  ETag: {
    description: "Validator of this representation; send it as `If-None-Match` to get `304` while nothing changed.",
    schema: { type: "string" },
    example: '"5d41402abc4b2a76b9719d911017c592"',
  },
  Location: {
    description: "Absolute URL of the created subscription (its `links.self`).",
    schema: { type: "string", format: "uri" },
    example: `https://api.example.com/v1/subscriptions/${FEEDS[0].guid}`,
  },
  "Retry-After": {
    description: "Seconds to wait before retrying.",
    schema: { type: "integer", minimum: 0 },
    example: 5,
  },
  "WWW-Authenticate": {
    description:
      'The authentication challenge: `Bearer realm="subscriptions"`, with `error="invalid_token"` when a token was presented.',
    schema: { type: "string" },
    example: 'Bearer realm="subscriptions", error="invalid_token"',
  },
  Allow: {
    description: "The methods the path takes.",
    schema: { type: "string" },
    example: "GET, DELETE",
  },
};

const notAcceptableExample = example(
  "A parameter JSON:API does not allow",
  exampleErrors(
    problem(
      406,
      "Not acceptable",
      "Every JSON:API media type in Accept carries a parameter other than ext or profile, or names an unsupported extension.",
      { source: { header: "Accept" } },
    ),
  ),
);

const responses: Record<string, Json> = {
  NotModified: {
    description: "Not modified: the `If-None-Match` validator still matches. No body; use the representation you hold.",
    headers: { ...successHeaders, ETag: headerRef("ETag") },
  },
  Unauthorized: {
    description:
      "The bearer token is missing, malformed, expired, not yet valid, wrongly signed, of another issuer or audience, or has no usable `sub`.",
    headers: { ...v1Headers, "WWW-Authenticate": headerRef("WWW-Authenticate") },
    content: errorContent({
      missing: example("No token", exampleErrors(problem(401, "Unauthorized", "A bearer token is required."))),
      invalid: example(
        "Invalid or expired token",
        exampleErrors(problem(401, "Unauthorized", "The bearer token is invalid or expired.")),
      ),
    }),
  },
  SubscriptionNotFound: {
    description:
      "The user has no such subscription. Another user's subscription answers the same, exactly as if it did not exist.",
    headers: v1Headers,
    content: errorContent({ notFound: example("Not subscribed", errorDocument(subscriptionNotFound().errors)) }),
  },
  MethodNotAllowed: {
    description:
      "The path exists but does not take this method; `Allow` lists the methods it does take. (Listed on every operation because OpenAPI has no per-path place for it.)",
    headers: { ...v1Headers, Allow: headerRef("Allow") },
    content: errorContent({
      put: example(
        "PUT on a subscription",
        exampleErrors(problem(405, "Method not allowed", "PUT is not allowed here; allowed: GET, PATCH, DELETE.")),
      ),
    }),
  },
  NotAcceptable: {
    description:
      "Every JSON:API media type in `Accept` carries a parameter other than `ext`/`profile`, or names an unsupported extension. (`Accept` absent, `*/*`, `application/*`, `application/json` and the plain JSON:API type are all fine.)",
    headers: v1Headers,
    content: errorContent({ charset: notAcceptableExample }),
  },
  TooManyRequests: {
    description: "Rate limited: wait `Retry-After` seconds, then retry.",
    headers: { ...v1Headers, "Retry-After": headerRef("Retry-After") },
    content: errorContent({
      limited: example(
        "Rate limited",
        exampleErrors(problem(429, "Too many requests", "Too many requests for this user; retry after 5 seconds.")),
      ),
    }),
  },
  InternalError: {
    description:
      "An unexpected failure, or no token verification is configured on the server. The body carries no internal detail; quote `X-Request-Id` when reporting it.",
    headers: v1Headers,
    content: errorContent({
      unexpected: example(
        "Unexpected failure",
        exampleErrors(
          problem(
            500,
            "Internal server error",
            "The request could not be completed. Quote request id 0f8a7c66-5b7e-4d8c-9f63-2a1c9e4b7d10 when reporting this.",
          ),
        ),
      ),
      misconfigured: example(
        "No token verification configured",
        exampleErrors(
          problem(
            500,
            "Authentication is not configured",
            "No token verification is configured: set AUTH_JWT_SECRET, AUTH_JWKS_URL or AUTH_JWKS.",
          ),
        ),
      ),
    }),
  },
  ServiceUnavailable: {
    description:
      "The database (or the identity provider's signing keys) could not be reached. Nothing was changed: retry after `Retry-After` seconds (writes are idempotent).",
    headers: { ...v1Headers, "Retry-After": headerRef("Retry-After") },
    content: errorContent({
      database: example(
        "Database unavailable",
        exampleErrors(
          problem(
            503,
            "Service unavailable",
            "The database could not be reached. Nothing was changed; retry the request.",
          ),
        ),
      ),
      keys: example(
        "Signing keys unavailable",
        exampleErrors(
          problem(503, "Authentication unavailable", "The token signing keys could not be loaded; retry later."),
        ),
      ),
    }),
  },
};

function unsupportedMediaType(expected: string, examples: Record<string, unknown>): Json {
  return {
    description: `The request body is not sent as \`${expected}\`: another type (\`application/json\`, none), a parameter other than \`ext\`/\`profile\` (\`charset\` included), or an unsupported or inapplicable extension.`,
    headers: v1Headers,
    content: errorContent(examples),
  };
}

const media415 = (detail: string) =>
  exampleErrors(problem(415, "Unsupported media type", detail, { source: { header: "Content-Type" } }));

/** The responses every `/v1` operation can give besides its own. */
const v1Responses = {
  "401": responseRef("Unauthorized"),
  "405": responseRef("MethodNotAllowed"),
  "406": responseRef("NotAcceptable"),
  "429": responseRef("TooManyRequests"),
  "500": responseRef("InternalError"),
  "503": responseRef("ServiceUnavailable"),
};

const v1Parameters = [parameterRef("bookmarkRequest")];

// ---------------------------------------------------------------------------------------------
// Paths

const listExample = dataDocument(
  [0, 1].map((index) => toSubscriptionResource(stored(index))),
  { links: paginationLinks("/v1/subscriptions", { number: 1, size: 2 }, 3), meta: { total: 3 } },
);
const pastTheEndExample = dataDocument([], {
  links: paginationLinks("/v1/subscriptions", { number: 9, size: 25 }, 3),
  meta: { total: 3 },
});
const oneExample = dataDocument(toSubscriptionResource(stored(0)));
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
const subscriptionLimit = exampleErrors(subscriptionLimitReached());
const forbiddenLimit = {
  description: `The user already stores ${MAX_STORED_SUBSCRIPTIONS} subscriptions (unsubscribed ones included). Reviving one's own unsubscription is always allowed.`,
  headers: v1Headers,
  content: errorContent({ limit: example("Subscription limit reached", subscriptionLimit) }),
};

// OPML: the examples come from the import's own parser and validator and the export's serialiser.

const OPML_PATH = "/v1/subscriptions.opml";
const OPML_REQUEST_TYPES = [OPML_MEDIA_TYPE, "application/xml", "text/xml"];
if (!OPML_REQUEST_TYPES.every(isXmlMediaType)) throw new Error("a documented OPML request type is refused");

const exportExample = serialiseOpml([stored(0), stored(1)], new Date(EXAMPLE_TIME));

const INVALID_FEED_URL = "feeds.example.net/no-scheme.xml";
const importRequestExample = [
  '<?xml version="1.0" encoding="UTF-8"?>',
  '<opml version="2.0">',
  "  <head><title>Exported from another app</title></head>",
  "  <body>",
  '    <outline text="News">',
  `      <outline type="rss" text="Podcasting 2.0" xmlUrl="${FEEDS[0].feedUrl}"/>`,
  "    </outline>",
  `    <outline type="rss" text="The Daily Byte" xmlUrl="${FEEDS[1].feedUrl}" guid="${FEEDS[1].guid}"/>`,
  `    <outline type="rss" text="Broken" xmlUrl="${INVALID_FEED_URL}"/>`,
  "  </body>",
  "</opml>",
].join("\n");
if (parseOpml(new TextEncoder().encode(importRequestExample).buffer as ArrayBuffer).length !== 3) {
  throw new Error("the OPML import example does not parse to three feeds");
}

/** The reason an import gives for skipping an outline: the JSON endpoints' feedUrl validator's detail. */
function skippedReason(xmlUrl: string): string {
  const resource = { type: SUBSCRIPTION_TYPE, id: FEEDS[0].guid, attributes: { feedUrl: xmlUrl } };
  const result = parseSubscriptionResource(resource, "");
  if (result.ok) throw new Error(`example xmlUrl ${xmlUrl} is valid`);
  return result.error.detail;
}

const importResultExample = {
  jsonapi: { version: "1.1" },
  meta: {
    imported: 1,
    alreadySubscribed: 1,
    skipped: [{ xmlUrl: INVALID_FEED_URL, reason: skippedReason(INVALID_FEED_URL) }],
  },
};

/** The error the import's parser answers for `opml`. */
function opmlError(opml: string | Uint8Array): ErrorObject {
  const bytes = typeof opml === "string" ? new TextEncoder().encode(opml) : opml;
  try {
    parseOpml(bytes.buffer as ArrayBuffer);
  } catch (error) {
    if (error instanceof Error && "errors" in error) return (error as { errors: ErrorObject[] }).errors[0];
    throw error;
  }
  throw new Error("example OPML is accepted");
}

const tooManyFeedsOpml = `<opml><body>${'<outline xmlUrl="https://feeds.example.com/x.xml"/>'.repeat(MAX_OPML_FEEDS + 1)}</body></opml>`;

const paths: Record<string, Json> = {
  "/v1/subscriptions": {
    get: {
      operationId: "listSubscriptions",
      tags: ["Subscriptions"],
      summary: "List subscriptions, or what changed since a sync token",
      description: `Without \`filter[since]\`: the authenticated user's active subscriptions, page by page, oldest first (\`userSubscribedAt\`, then \`id\`; stable while new subscriptions arrive), with \`meta.total\`.

With \`filter[since]=<token>\` (and optionally \`page[size]\`): the **change feed**. Every write that changes a subscription (new, revived, unsubscribed, feed moved) gives it the user's next change number; the feed returns the subscriptions changed after the token, oldest change first, each once with its current state: active ones exactly as in the list plus \`userUnsubscribedAt: null\`, unsubscribed ones as tombstones with \`userUnsubscribedAt\` and no links. Follow \`links.next\` until it is null, then store \`meta.syncToken\` and send it next time. No clocks are involved, so no change is ever skipped or lost at a boundary; a subscription that changes while you page shows up again later with its newer state. Tokens never expire.

Takes \`page[number]\`, \`page[size]\` and \`filter[since]\` only: \`include\`, \`sort\`, \`fields[...]\`, other \`filter[...]\`, other \`page[...]\` and any other all-lowercase name answer 400 with \`source.parameter\`; names with another character (camelCase) are ignored.`,
      parameters: [
        parameterRef("pageNumber"),
        parameterRef("pageSize"),
        parameterRef("since"),
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
          description: "A query parameter is invalid or not supported.",
          headers: v1Headers,
          content: errorContent({
            sizeTooBig: example("page[size] over the maximum", exampleErrors(pageError({ "page[size]": "101" }))),
            badNumber: example("page[number] not a whole number", exampleErrors(pageError({ "page[number]": "0" }))),
            unsupported: example("A parameter JSON:API reserves", exampleErrors(pageError({ include: "episodes" }))),
            invalidToken: example("A sync token this server did not issue", errorDocument(invalidSyncToken().errors)),
            numberWithSince: example(
              "page[number] with filter[since]",
              exampleErrors(pageError({ "filter[since]": "0", "page[number]": "2" })),
            ),
          }),
        },
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
          description: "The body is not JSON, not a document with `data`, or its `id` is missing or not a UUID.",
          headers: v1Headers,
          content: errorContent({
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
          description: "`data.type` is not `subscription`.",
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
        "One subscription of the authenticated user. The guid matches in any case. Takes no query parameters (names JSON:API reserves answer 400).",
      parameters: [parameterRef("ifNoneMatch"), ...v1Parameters],
      responses: {
        "200": {
          description: "The subscription.",
          headers: { ...successHeaders, ETag: headerRef("ETag") },
          content: jsonApiContent(schemaRef("SubscriptionDocument"), {
            subscription: example("A subscription", oneExample),
          }),
        },
        "304": responseRef("NotModified"),
        "400": {
          description: "The guid is not a UUID, or a query parameter JSON:API reserves was sent.",
          headers: v1Headers,
          content: errorContent({
            invalidGuid: example("guid is not a UUID", errorDocument(invalidGuid().errors)),
            unsupported: example("A parameter JSON:API reserves", exampleErrors(pageError({ sort: "feedUrl" }))),
          }),
        },
        "404": responseRef("SubscriptionNotFound"),
        ...v1Responses,
      },
    },
    patch: {
      operationId: "moveFeed",
      tags: ["Subscriptions"],
      summary: "Move a feed to a new URL",
      description: `A podcast's feed URL changed (a redirect, a new host); its guid did not. Replaces \`feedUrl\` exactly as sent; the guid and \`userSubscribedAt\` stay. A real change is a change for the change feed; the same URL as stored, or a body without \`attributes\`/\`feedUrl\`, answers 200 and records nothing. Send the body as \`${JSONAPI}\`. Checks run in this order: the path guid (400), body JSON, \`data\`, \`type\` (409), \`id\` (400 when missing or not a UUID, 409 at \`/data/id\` when it is not the path's guid), \`feedUrl\` (422).`,
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
          description:
            "The path guid is not a UUID, the body is not JSON or not a document with `data`, or `data.id` is missing or not a UUID.",
          headers: v1Headers,
          content: errorContent({
            invalidGuid: example("guid is not a UUID", errorDocument(invalidGuid().errors)),
            malformed: example("Body is not JSON", exampleErrors(malformedJson)),
          }),
        },
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
        "400": {
          description: "The guid is not a UUID, or a query parameter JSON:API reserves was sent.",
          headers: v1Headers,
          content: errorContent({ invalidGuid: example("guid is not a UUID", errorDocument(invalidGuid().errors)) }),
        },
        "404": responseRef("SubscriptionNotFound"),
        ...v1Responses,
      },
    },
  },
  "/v1/operations": {
    post: {
      operationId: "bulkOperations",
      tags: ["Bulk operations"],
      summary: "Add, move and remove many subscriptions at once",
      description: `JSON:API Atomic Operations, with one difference: operations are independent. They are processed in order, each succeeds or fails on its own, and the answer is 200 with one element of \`atomic:results\` per operation (\`data\`, \`{}\` for a remove, or \`errors\`) and a \`meta\` summary. \`add\` subscribes (as POST), \`update\` moves a feed (as PATCH, \`feedUrl\` required), \`remove\` unsubscribes by \`ref\` (as DELETE). Order matters: add X then remove X leaves X unsubscribed; remove X then add X revives it. Send and accept \`${ATOMIC}\`; add this server's link-method extension URI (\`<base>${LINK_METHOD_EXT_PATH}\`) to the \`ext\` of \`Accept\` and the response's \`ext\` names both, space-separated. Request-level problems (body not an object, no or empty \`${OPERATIONS}\`, more than ${MAX_OPERATIONS} operations) answer with a top-level \`errors\` document instead. All valid operations are written in one database transaction: on 503 nothing was written, and retrying is safe.`,
      parameters: v1Parameters,
      requestBody: {
        required: true,
        content: jsonApiContent(
          schemaRef("OperationsDocument"),
          {
            bulk: example("Three adds", bulkRequestExample),
            sync: example("A move and two removes", bulkSyncRequestExample),
          },
          ATOMIC,
        ),
      },
      responses: {
        "200": {
          description:
            "One result per operation, in order. A failed operation's element holds `errors` (400 invalid operation or resource identifier, 403 `Subscription limit reached`, 404 `Subscription not found` for an update or remove of a subscription the user does not have, 409 `Already Subscribed` or type mismatch, 422 invalid `feedUrl`); the status of the response stays 200.",
          headers: successHeaders,
          content: jsonApiContent(
            schemaRef("OperationsResultDocument"),
            {
              mixed: example(
                "One added, one already subscribed, one with a feedUrl that is not http(s)",
                bulkResultExample,
                "The response to the request example.",
              ),
              sync: example(
                "A move, a remove, and a remove of a feed not subscribed",
                bulkSyncResultExample,
                "The response to the second request example.",
              ),
              limit: example("An add over the per-user limit", bulkLimitExample),
            },
            ATOMIC,
          ),
        },
        "400": {
          description: `The body is not a JSON object, or \`${OPERATIONS}\` is missing, not an array, or empty.`,
          headers: v1Headers,
          content: errorContent(
            {
              empty: example(
                "No operations",
                exampleErrors(
                  problem(400, "Invalid document", `${OPERATIONS} must be a non-empty array of operation objects.`, {
                    source: { pointer: `/${OPERATIONS}` },
                  }),
                ),
              ),
              malformed: example("Body is not JSON", exampleErrors(malformedJson)),
            },
            [ATOMIC],
          ),
        },
        "413": {
          description: `More than ${MAX_OPERATIONS} operations, or a body over ${MAX_BODY_BYTES / 1024 / 1024} MiB.`,
          headers: v1Headers,
          content: errorContent(
            {
              tooMany: example(
                "Too many operations",
                exampleErrors(
                  problem(
                    413,
                    "Too many operations",
                    `A request may carry at most ${MAX_OPERATIONS} operations; split it into several requests.`,
                    { source: { pointer: `/${OPERATIONS}` }, meta: { maxOperations: MAX_OPERATIONS } },
                  ),
                ),
              ),
              tooLarge: example("Body too large", exampleErrors(bodyTooLarge)),
            },
            [ATOMIC],
          ),
        },
        "415": unsupportedMediaType(ATOMIC, {
          plain: example(
            "Without the atomic extension",
            media415(`This endpoint takes the Atomic Operations extension: send ${ATOMIC}.`),
          ),
        }),
        ...v1Responses,
        "406": {
          description:
            "As on every endpoint, and also when `Accept` lists the JSON:API type but no instance of it allows the atomic extension and there is no wildcard.",
          headers: v1Headers,
          content: errorContent({
            noAtomic: example(
              "Accept without the atomic extension",
              exampleErrors(
                problem(406, "Not acceptable", `Accept ${ATOMIC} to use this endpoint.`, {
                  source: { header: "Accept" },
                }),
              ),
            ),
            charset: notAcceptableExample,
          }),
        },
      },
    },
  },
  [OPML_PATH]: {
    get: {
      operationId: "exportOpml",
      tags: ["OPML"],
      summary: "Export subscriptions as OPML",
      description: `The authenticated user's active subscriptions as an OPML 2.0 document, in list order: a \`<head>\` with a \`<title>\` and \`<dateCreated>\` (RFC 822), and one \`<outline type="rss" text xmlUrl guid/>\` per subscription, XML-escaped. The \`guid\` attribute is the subscription's id, so importing the file elsewhere maps each feed to the same resource. Takes no query parameters (names JSON:API reserves answer 400). One database read.`,
      parameters: v1Parameters,
      responses: {
        "200": {
          description: "The OPML document.",
          headers: successHeaders,
          content: {
            [OPML_CONTENT_TYPE]: { schema: { type: "string" }, example: exportExample },
          },
        },
        "400": {
          description: "A query parameter JSON:API reserves was sent.",
          headers: v1Headers,
          content: errorContent({
            unsupported: example("A parameter JSON:API reserves", exampleErrors(pageError({ include: "feeds" }))),
          }),
        },
        ...v1Responses,
        "406": {
          description: `\`Accept\` allows none of ${OPML_ACCEPT_RANGES.map((range) => `\`${range}\``).join(", ")} (an absent \`Accept\` is fine). The error is a JSON:API document.`,
          headers: v1Headers,
          content: errorContent({
            json: example(
              "Accept: application/json",
              exampleErrors(
                problem(
                  406,
                  "Not acceptable",
                  `This endpoint answers ${OPML_MEDIA_TYPE}; accept ${OPML_ACCEPT_RANGES.join(", ")}.`,
                  { source: { header: "Accept" } },
                ),
              ),
            ),
          }),
        },
      },
    },
    post: {
      operationId: "importOpml",
      tags: ["OPML"],
      summary: "Import subscriptions from OPML",
      description: `Subscribes the authenticated user to every \`outline\` with an \`xmlUrl\` attribute, at any depth (merge: nothing is removed). Each outline is subscribed like \`POST /v1/subscriptions\`, with the outline's \`guid\` attribute as the id when it is a UUID, else the feed's podcast:guid (a UUIDv5 in the namespace \`ead4c236-bf58-58c6-a2c6-a6b28d128cb6\` of the \`xmlUrl\` without its scheme and trailing slashes). Outlines whose \`xmlUrl\` \`POST /v1/subscriptions\` would refuse are skipped, with the reason; so are the feeds past the user's quota of ${MAX_STORED_SUBSCRIPTIONS} stored subscriptions (the import stops adding there). Send the document as \`${OPML_MEDIA_TYPE}\`, \`application/xml\`, \`text/xml\` or any \`+xml\` type, in UTF-8, at most ${MAX_BODY_BYTES / 1024 / 1024} MiB and ${MAX_OPML_FEEDS} feeds. A DOCTYPE (and so any entity declaration) is refused, never processed. All subscriptions are written in one database transaction: on 503 nothing was written, and retrying is safe.`,
      parameters: v1Parameters,
      requestBody: {
        required: true,
        content: Object.fromEntries(
          OPML_REQUEST_TYPES.map((type) => [
            type,
            {
              schema: { type: "string" },
              examples: { opml: example("Three feeds, one nested, one with a guid", importRequestExample) },
            },
          ]),
        ),
      },
      responses: {
        "200": {
          description:
            "What the import did: `imported` (new or revived subscriptions), `alreadySubscribed` (before the import, or by an earlier outline of the same file), and the outlines `skipped` with the reason.",
          headers: successHeaders,
          content: jsonApiContent(schemaRef("OpmlImportDocument"), {
            imported: example(
              "One imported, one already subscribed, one skipped",
              importResultExample,
              "The response to the request example, for a user already subscribed to The Daily Byte.",
            ),
          }),
        },
        "400": {
          description:
            "The document is not valid UTF-8, its XML declaration names another encoding, it has a DOCTYPE, it is not well-formed XML, or its root element is not `<opml>`.",
          headers: v1Headers,
          content: errorContent({
            malformed: example(
              "Not well-formed",
              exampleErrors(opmlError('<opml><body><outline xmlUrl="https://a.example/f"></body></opml>')),
            ),
            notOpml: example("Not OPML", exampleErrors(opmlError('<rss version="2.0"/>'))),
            doctype: example(
              "A DOCTYPE (an entity declaration)",
              exampleErrors(opmlError('<!DOCTYPE opml [<!ENTITY a "b">]><opml/>')),
            ),
            encoding: example(
              "Another encoding",
              exampleErrors(opmlError('<?xml version="1.0" encoding="ISO-8859-1"?><opml/>')),
            ),
            utf8: example("Invalid UTF-8", exampleErrors(opmlError(new Uint8Array([0x3c, 0xe9, 0x3e])))),
          }),
        },
        "413": {
          description: `More than ${MAX_OPML_FEEDS} outlines with an \`xmlUrl\` (valid or not; nothing is written), or a body over ${MAX_BODY_BYTES / 1024 / 1024} MiB.`,
          headers: v1Headers,
          content: errorContent({
            tooMany: example("Too many feeds", exampleErrors(opmlError(tooManyFeedsOpml))),
            tooLarge: example("Body too large", exampleErrors(bodyTooLarge)),
          }),
        },
        "415": {
          description: `The body is not sent as \`${OPML_MEDIA_TYPE}\`, \`application/xml\`, \`text/xml\` or a \`+xml\` type, or names a \`charset\` other than UTF-8.`,
          headers: v1Headers,
          content: errorContent({
            json: example(
              "Sent as application/json",
              media415(`Send the OPML document as ${OPML_MEDIA_TYPE}, application/xml or text/xml.`),
            ),
            charset: example("Another charset", media415("OPML documents are taken in UTF-8 only.")),
          }),
        },
        ...v1Responses,
      },
    },
  },
  [LINK_METHOD_EXT_PATH]: {
    get: {
      operationId: "linkMethodExtension",
      tags: ["Extensions"],
      summary: "The link-method extension",
      description:
        "The URI of this server's link-method extension dereferences here: a short plain-text description of the `method` member of link objects. No authentication.",
      security: [],
      responses: {
        "200": {
          description: "The extension's description.",
          headers: { "X-Request-Id": headerRef("X-Request-Id") },
          content: {
            "text/plain": {
              schema: { type: "string" },
              example: `JSON:API extension "link-method"\nURI: https://api.example.com${LINK_METHOD_EXT_PATH}\n\nThis extension adds one member to JSON:API link objects:\n\n  method  (string) The HTTP method to use when following the link. Allowed value: "DELETE".\n`,
            },
          },
        },
        "405": responseRef("MethodNotAllowed"),
      },
    },
  },
};

// ---------------------------------------------------------------------------------------------
// The document

const DESCRIPTION = `Keeps a podcast listener's feed subscriptions in sync across apps: list them page by page, learn exactly what changed since the last sync (unsubscriptions and feed moves included), fetch one, subscribe, move a feed to a new URL, unsubscribe, do many of these in one request, and move them between apps as OPML.

The wire format is [JSON:API 1.1](https://jsonapi.org/format/1.1/): every body, errors included, is \`${JSONAPI}\` (bulk: \`${ATOMIC}\`; the OPML export and import body: OPML), and every response has \`Vary: Accept\` and an \`X-Request-Id\`.

**Authentication.** Every \`/v1\` request needs \`Authorization: Bearer <JWT>\`. The user is the token's \`sub\`; nothing else selects the user, and another user's subscription is \`404\` exactly as if it did not exist. Tokens are verified with HS256 or with the identity provider's JWKS; \`exp\` is required.

**Media types.** Send request bodies as \`${JSONAPI}\` (\`${ATOMIC}\` on \`/v1/operations\`); any other type, a \`charset\` or another parameter than \`ext\`/\`profile\`, or an extension the endpoint does not take answers \`415\`. \`Accept\` may be absent, \`*/*\`, \`application/json\` or the JSON:API type; \`406\` only when every JSON:API type in it is unusable. The OPML endpoints take and give XML: see them.

**Errors.** JSON:API error objects with \`status\`, a stable \`title\`, \`detail\`, and \`source\` (\`pointer\`, \`parameter\` or \`header\`) where it helps. An unknown path answers \`404\`, a known path with another method \`405\` with \`Allow\`.

**Consistency and caching.** Responses carry \`X-D1-Bookmark\`: send it back on the next request to read your own writes from any database replica. The \`GET\` endpoints (list, change feed, one subscription) answer with an \`ETag\`; send it as \`If-None-Match\` to get \`304\` while nothing changed.

**Limits.** \`page[size]\` up to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE}); ${MAX_OPERATIONS} operations per bulk request; ${MAX_OPML_FEEDS} feeds per OPML import; request bodies up to ${MAX_BODY_BYTES / 1024 / 1024} MiB; ${MAX_STORED_SUBSCRIPTIONS} stored subscriptions per user, unsubscribed ones included (\`403\`; an OPML import lists the feeds over it in \`meta.skipped\`); requests over the rate limit answer \`429\` with \`Retry-After\`.`;

/** Orders each operation's responses by status code, as readers expect. */
function sortResponses(allPaths: Record<string, Json>): Record<string, Json> {
  const methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
  return Object.fromEntries(
    Object.entries(allPaths).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item).map(([key, value]) => {
          if (!methods.includes(key)) return [key, value];
          const operation = value as Json;
          const sorted = Object.entries(operation.responses as Json).sort(([a], [b]) => a.localeCompare(b));
          return [key, { ...operation, responses: Object.fromEntries(sorted) }];
        }),
      ),
    ]),
  );
}

export function buildOpenApiDocument(): Json {
  return {
    openapi: "3.1.1",
    info: {
      title: "Podcast Subscriptions API",
      version: pkg.version,
      summary: "Sync a podcast listener's feed subscriptions across apps (JSON:API 1.1 + Atomic Operations).",
      description: DESCRIPTION,
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [{ url: "/", description: "The deployment serving this document." }],
    security: [{ bearerAuth: [] }],
    tags: [
      { name: "Subscriptions", description: "The authenticated user's feed subscriptions, one at a time." },
      {
        name: "Bulk operations",
        description: "Many subscriptions in one ordered request (JSON:API Atomic Operations).",
      },
      {
        name: "OPML",
        description: "Moving subscriptions between apps and services: OPML 2.0 export and merge-import.",
      },
      { name: "Extensions", description: "Documentation of the JSON:API extensions this server uses." },
    ],
    paths: sortResponses(paths),
    components: {
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description:
            "A JWT whose `sub` is the user id (1 to 255 characters) and which has an `exp`. HS256 with the server's secret, or RS256/ES256/EdDSA from the identity provider's JWKS; `iss` and `aud` must match when the server is configured with them. Locally: `npm run token -- <userId>`.",
        },
      },
      schemas: componentSchemas(),
      parameters,
      headers,
      responses,
    },
  };
}

/** The exact content of `public/openapi.json`: the builder's key order, two-space indent, final newline. */
export function renderOpenApiDocument(): string {
  return `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
}
