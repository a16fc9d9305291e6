import * as z from "zod";
import {
  ATOMIC_EXT_URI,
  type ErrorObject,
  errorDocument,
  JSONAPI_MEDIA_TYPE,
  jsonApiContentType,
  toErrorObject,
} from "../jsonapi";
import { MAX_BODY_BYTES } from "../limits";
import { BOOKMARK_SHAPE, invalidBookmark } from "../middleware/d1-session";
import {
  DEFAULT_PAGE_SIZE,
  expiredSyncToken,
  MAX_PAGE_SIZE,
  pageQueryError,
  unsupportedQueryParameter,
} from "../pagination";
import { episodeNotFound } from "../resources/episode";
import { parseSubscriptionResource, subscriptionDocumentError, subscriptionNotFound } from "../resources/subscription";
import {
  addOperationSchema,
  documentRegistry,
  episodeAddOperationSchema,
  episodeRemoveOperationSchema,
  episodeUpdateOperationSchema,
  guidSchema,
  operationsDocumentSchema,
  pageQuerySchema,
  removeOperationSchema,
  subscriptionDocumentSchema,
  updateOperationSchema,
} from "./schemas";

/**
 * What the OpenAPI document's operations share: media types, the components (parameters, headers,
 * responses), the helpers that build content and examples, and the examples several operations use.
 * Each route's own operations are described beside it (`src/routes/*.openapi.ts`); `./document.ts`
 * assembles them. Examples are produced by the service's own serialisation and error functions.
 */
export type Json = Record<string, unknown>;

export const JSONAPI = JSONAPI_MEDIA_TYPE;
/** The bulk endpoint's media type, exactly as the server writes it. */
export const ATOMIC = jsonApiContentType([ATOMIC_EXT_URI]);
export const OPERATIONS = "atomic:operations";

export const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const responseRef = (name: string) => ({ $ref: `#/components/responses/${name}` });
export const parameterRef = (name: string) => ({ $ref: `#/components/parameters/${name}` });
export const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

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

/** The operations a bulk request's elements may be, by their component names. */
const BULK_OPERATION_SCHEMAS = [
  "AddOperation",
  "UpdateOperation",
  "RemoveOperation",
  "EpisodeAddOperation",
  "EpisodeUpdateOperation",
  "EpisodeRemoveOperation",
];

/** `#/components/schemas`: every schema of the registry, referencing each other by `$ref`. */
export function componentSchemas(): Record<string, Json> {
  const elements = operationsDocumentSchema.shape[OPERATIONS].element;
  const { schemas } = z.toJSONSchema(documentRegistry, {
    ...JSON_SCHEMA_OPTIONS,
    uri: (id) => `#/components/schemas/${id}`,
    override: (ctx) => {
      // The route takes any element and checks each operation on its own; the document shows those it accepts.
      if (ctx.zodSchema === elements) {
        // Subscription and episode operations differ by the type their data or ref names, one level down,
        // where no discriminator reaches: anyOf says the same without promising exclusivity a linter cannot see.
        Object.assign(ctx.jsonSchema, { anyOf: BULK_OPERATION_SCHEMAS.map(schemaRef) });
      }
    },
  });
  for (const operation of [
    addOperationSchema,
    updateOperationSchema,
    removeOperationSchema,
    episodeAddOperationSchema,
    episodeUpdateOperationSchema,
    episodeRemoveOperationSchema,
  ]) {
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

export const EXAMPLE_TIME = Date.parse("2026-11-21T22:44:28.123Z");
export const FEEDS = [
  { guid: "ead4c236-bf58-58c6-a2c6-a6b28d128cb6", feedUrl: "https://mp3s.nashownotes.com/pc20rss.xml" },
  { guid: "917393e3-1b1e-5cef-ace4-edaa54e1f810", feedUrl: "https://feeds.example.com/the-daily-byte.xml" },
  { guid: "5a7d2c44-0b8e-5f61-9d3a-6c2e1f4b7a90", feedUrl: "https://podcasts.example.org/night-sky/rss" },
];

export const stored = (index: number) => ({
  guid: FEEDS[index].guid,
  feedUrl: FEEDS[index].feedUrl,
  subscribedAt: EXAMPLE_TIME + index * 60_000,
});

export const exampleErrors = (...errors: ErrorObject[]) => errorDocument(errors);
export const problem = (
  status: number,
  title: string,
  detail: string,
  extra: Pick<ErrorObject, "source" | "meta"> = {},
) => toErrorObject({ status, title, detail, ...extra });

export function pageError(query: Record<string, string>) {
  const result = pageQuerySchema.safeParse(query);
  if (result.success) throw new Error(`example query ${JSON.stringify(query)} is valid`);
  return pageQueryError(result.error).errors[0];
}

export function bodyError(body: unknown) {
  const result = subscriptionDocumentSchema.safeParse(body);
  if (result.success) throw new Error(`example body ${JSON.stringify(body)} is valid`);
  return subscriptionDocumentError(result.error, body).errors[0];
}

export function operationError(resource: unknown, index: number) {
  const result = parseSubscriptionResource(resource, `/${OPERATIONS}/${index}/data`);
  if (result.ok) throw new Error(`example operation ${index} is valid`);
  return result.error;
}

export const malformedJson = problem(400, "Malformed request body", "The request body is not valid JSON.");
export const bodyTooLarge = problem(413, "Request body too large", "The request body exceeds the limit of 1 MiB.");

export const MOVED_FEED_URL = "https://feeds.example.net/the-daily-byte/rss";

export const example = (summary: string, value: unknown, description?: string) => ({
  summary,
  ...(description ? { description } : {}),
  value,
});

/**
 * The 400s every `/v1` operation but the collection GET can answer besides its own (docs/API.md §3 and 12):
 * a query parameter JSON:API reserves, a malformed `X-D1-Bookmark`. Each operation's 400 lists them.
 */
export const COMMON_BAD_REQUEST =
  "A query parameter JSON:API reserves (`include`, `sort`, `fields[...]`, `filter[...]`, `page[...]`, any all-lowercase name) answers 400 with `source.parameter` (camelCase names are ignored); an `X-D1-Bookmark` without a bookmark's shape answers 400 with `source.header`.";
export const commonBadRequestExamples = {
  unsupportedQuery: example(
    "A query parameter JSON:API reserves",
    errorDocument(unsupportedQueryParameter("include").errors),
  ),
  badBookmark: example("A malformed X-D1-Bookmark", errorDocument(invalidBookmark().errors)),
};

// ---------------------------------------------------------------------------------------------
// Reusable pieces

export const jsonApiContent = (schema: Json, examples: Record<string, unknown>, mediaType = JSONAPI) => ({
  [mediaType]: { schema, examples },
});

export const errorContent = (examples: Record<string, unknown>, mediaTypes: string[] = [JSONAPI]) =>
  Object.fromEntries(mediaTypes.map((mediaType) => [mediaType, { schema: schemaRef("ErrorDocument"), examples }]));

export const v1Headers = { "X-Request-Id": headerRef("X-Request-Id") };
export const successHeaders = { ...v1Headers, "X-D1-Bookmark": headerRef("X-D1-Bookmark") };

export const bodyTooLargeResponse = {
  description: `The body is larger than ${MAX_BODY_BYTES / 1024 / 1024} MiB.`,
  headers: v1Headers,
  content: errorContent({ tooLarge: example("Body too large", exampleErrors(bodyTooLarge)) }),
};

export const parameters: Record<string, Json> = {
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
      'The page to return, from 1 (decimal digits only). A page past the end answers 200 with `data: []`. Anything else (`0`, `-1`, `1.5`, `abc`, empty) answers 400 with `source.parameter: "page[number]"`. Not with `filter[since]` (the change feed pages by `links.next`): both together answer 400 with `source.parameter: "page[number]"`.',
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
  include: {
    name: "include",
    in: "query",
    required: false,
    description:
      '`podcast`: the answer is a compound document whose `included` holds the podcasts of the subscriptions in `data` (what the service knows of each feed, docs/API.md §18), read in the same request. Exactly `podcast`, once: any other value answers 400 with `source.parameter: "include"`. A compound document has no `ETag` (a podcast changes without a change number, so no version can say a copy is current) and is never answered 304.',
    schema: { type: "string", enum: ["podcast"] },
    example: "podcast",
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
      "The `X-D1-Bookmark` of the last response this client received. The server then reads from a database replica at least as fresh as that bookmark, so a client always sees its own writes. Omit it on a first request. A value without a bookmark's shape answers 400 with `source.header` (checked after routing: an unknown path still answers 404, another method 405).",
    schema: { type: "string", pattern: BOOKMARK_SHAPE.source },
    example: "00000085-0000024c-00004c6d-8e61117bf38d7adb71b934ebbf891683",
  },
};

export const headers: Record<string, Json> = {
  "X-Request-Id": {
    description: "Identifies the request in the service's logs; quote it when reporting a problem.",
    schema: { type: "string" },
    example: "0f8a7c66-5b7e-4d8c-9f63-2a1c9e4b7d10",
  },
  "X-D1-Bookmark": {
    description: "The database position this response reflects. Send it back as `X-D1-Bookmark` on the next request.",
    schema: { type: "string", pattern: BOOKMARK_SHAPE.source },
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

export const notAcceptableExample = example(
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

export const responses: Record<string, Json> = {
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
  EpisodeNotFound: {
    description:
      "The user has no such episode state (never written, forgotten, or another user's: exactly as if it did not exist).",
    headers: v1Headers,
    content: errorContent({ notFound: example("No such episode state", errorDocument(episodeNotFound().errors)) }),
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

export function unsupportedMediaType(expected: string, examples: Record<string, unknown>): Json {
  return {
    description: `The request body is not sent as \`${expected}\`: another type (\`application/json\`, none), a parameter other than \`ext\`/\`profile\` (\`charset\` included), or an unsupported or inapplicable extension.`,
    headers: v1Headers,
    content: errorContent(examples),
  };
}

export const media415 = (detail: string) =>
  exampleErrors(problem(415, "Unsupported media type", detail, { source: { header: "Content-Type" } }));

/** The 410 a change feed answers to a token from before a purge (docs/API.md §15), for the feeds' descriptions. */
export const syncTokenExpiredResponse: Json = {
  description:
    "The token is older than a purge of deleted items it had not seen (tombstones are purged after 180 days, to make room at a quota or the storage budget, and when the account is erased): sync again from `filter[since]=0` and replace the local state with the result.",
  headers: v1Headers,
  content: errorContent({
    expired: { summary: "Sync token expired", value: errorDocument(expiredSyncToken().errors) },
  }),
};

/** The responses every `/v1` operation can give besides its own. */
export const v1Responses = {
  "401": responseRef("Unauthorized"),
  "405": responseRef("MethodNotAllowed"),
  "406": responseRef("NotAcceptable"),
  "429": responseRef("TooManyRequests"),
  "500": responseRef("InternalError"),
  "503": responseRef("ServiceUnavailable"),
};

export const v1Parameters = [parameterRef("bookmarkRequest")];
