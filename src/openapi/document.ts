import pkg from "../../package.json";
import { MAX_STORED_SUBSCRIPTIONS } from "../db/subscriptions";
import { MAX_BODY_BYTES, MAX_OPERATIONS, MAX_OPML_FEEDS } from "../limits";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../pagination";
import { accountPaths } from "../routes/account.openapi";
import { appPasswordPaths } from "../routes/app-passwords.openapi";
import { episodePaths } from "../routes/episodes.openapi";
import { extensionPaths } from "../routes/extensions.openapi";
import { gpodderPaths, gpodderSecuritySchemes, gpodderTag } from "../routes/gpodder.openapi";
import { nextcloudPaths, nextcloudTag } from "../routes/nextcloud.openapi";
import { operationPaths } from "../routes/operations.openapi";
import { opmlPaths } from "../routes/opml.openapi";
import { statusPaths } from "../routes/status.openapi";
import { subscriptionPaths } from "../routes/subscriptions.openapi";
import { ATOMIC, componentSchemas, headers, JSONAPI, type Json, parameters, responses } from "./components";

/**
 * The OpenAPI 3.1 document of the service, built from the zod schemas the routes validate with
 * (`./schemas`) and each route's description beside it (`src/routes/*.openapi.ts`). `npm run openapi` writes it to `public/openapi.json`, which Workers static assets
 * serve at `GET /openapi.json`; the worker itself never imports this module, so it costs the
 * bundle nothing. Examples are produced by the service's own serialisation and error functions.
 */

const paths: Record<string, Json> = {
  ...subscriptionPaths,
  ...episodePaths,
  ...operationPaths,
  ...opmlPaths,
  ...appPasswordPaths,
  ...accountPaths,
  ...extensionPaths,
  ...gpodderPaths,
  ...nextcloudPaths,
  ...statusPaths,
};

// ---------------------------------------------------------------------------------------------
// The document

const DESCRIPTION = `Keeps a podcast listener's feed subscriptions and listening progress in sync across apps: list subscriptions page by page, learn exactly what changed since the last sync (unsubscriptions and feed moves included), fetch one, subscribe, move a feed to a new URL, unsubscribe, save where each episode was paused and whether it was finished (merged by when each change happened on the device), follow what changed, do many of these in one request, and move subscriptions between apps as OPML.

The wire format is [JSON:API 1.1](https://jsonapi.org/format/1.1/): every body, errors included, is \`${JSONAPI}\` (bulk: \`${ATOMIC}\`; the OPML export and import body: OPML), and every response has \`Vary: Accept\` and an \`X-Request-Id\`.

**Authentication.** Every \`/v1\` request needs \`Authorization: Bearer <JWT>\`. The user is the token's \`sub\`; nothing else selects the user, and another user's subscription is \`404\` exactly as if it did not exist. Tokens are verified with HS256 or with the identity provider's JWKS; \`exp\` is required.

**Media types.** Send request bodies as \`${JSONAPI}\` (\`${ATOMIC}\` on \`/v1/operations\`); any other type, a \`charset\` or another parameter than \`ext\`/\`profile\`, or an extension the endpoint does not take answers \`415\`. \`Accept\` may be absent, \`*/*\`, \`application/json\` or the JSON:API type; \`406\` only when every JSON:API type in it is unusable. The OPML endpoints take and give XML: see them.

**Errors.** JSON:API error objects with \`status\`, a stable \`title\`, \`detail\`, and \`source\` (\`pointer\`, \`parameter\` or \`header\`) where it helps. An unknown path answers \`404\` (to a browser that asks for \`text/html\`, a page leading to \`/\`), a known path with another method \`405\` with \`Allow\`.

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
        name: "Episodes",
        description:
          "Listening progress across devices: the position and played state of each episode, merged by when each change happened on the device, and its change feed.",
      },
      {
        name: "Bulk operations",
        description: "Many subscriptions in one ordered request (JSON:API Atomic Operations).",
      },
      {
        name: "OPML",
        description: "Moving subscriptions between apps and services: OPML 2.0 export and merge-import.",
      },
      {
        name: "App passwords",
        description: "Passwords for apps that speak the gpodder.net API, minted with a bearer token.",
      },
      { name: "Account", description: "Erasing everything stored for the user." },
      { name: "Extensions", description: "Documentation of the JSON:API extensions this server uses." },
      gpodderTag,
      nextcloudTag,
      { name: "Operations", description: "What a worker reports to the people who run it." },
    ],
    paths: sortResponses(paths),
    components: {
      securitySchemes: {
        ...gpodderSecuritySchemes,
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
