import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { CredentialEndedError } from "../db/app-passwords";
import { DatabaseError } from "../db/database";
import type { AppEnv } from "../env";
import { ApiError, type ErrorObject, errorDocument, type ProblemInit, respond, toErrorObject } from "../jsonapi";
import { pageErrorResponse } from "../pages/error-page";
import { isPagePath } from "../pages/paths";
import { BODY_TOO_LARGE, MALFORMED_JSON } from "../request-body";
import { ShardConfigError, shardOfUser, shardRouting } from "../shards";
import { FrozenForMove } from "./d1-session";
import { gpodderUnauthorized } from "./gpodder-auth";

/** Statuses Hono's own middleware raise (body limit, JSON validator), as the same JSON:API errors as ours. */
const httpExceptionProblems: Record<number, ProblemInit> = { 400: MALFORMED_JSON, 413: BODY_TOO_LARGE };

/**
 * The gpodder.net API's paths (docs/API.md §14) and the Nextcloud ones (§17): their errors are
 * `{"error": <text>}`, not JSON:API documents.
 */
export function isGpodderPath(path: string): boolean {
  return path.startsWith("/api/") || path.startsWith("/subscriptions/") || path.startsWith("/index.php/");
}

/**
 * The error answer in the dialect of the path: an HTML page on the pages for people (docs/API.md §16), `{"error"}`
 * on the gpodder paths, a JSON:API error document everywhere else.
 */
export function errorResponse(
  c: Context<AppEnv>,
  status: number,
  errors: ErrorObject[],
  headers: Record<string, string> = {},
): Response | Promise<Response> {
  if (isPagePath(c.req.path)) return pageErrorResponse(c, status, errors, headers);
  if (isGpodderPath(c.req.path)) {
    const error = errors.map((e) => e.detail).join(" ");
    return c.body(JSON.stringify({ error }), status as ContentfulStatusCode, {
      ...headers,
      "Content-Type": "application/json",
    });
  }
  return respond(c, errorDocument(errors), status as ContentfulStatusCode, headers);
}

/**
 * A write refused during a bucket move, logged once (docs/README-ops.md, "What to watch"): where it was refused
 * names the shard, or the signed-in user's is looked up (a digest this isolate already holds).
 */
async function frozenWriteResponse(c: Context<AppEnv>, err: FrozenForMove): Promise<Response> {
  const userId = c.get("userId");
  const shard = err.shard ?? (userId ? await shardOfUser(c.get("shards") ?? shardRouting(c.env), userId) : undefined);
  console.warn(
    JSON.stringify({
      level: "warn",
      event: "shard_frozen",
      requestId: c.get("requestId"),
      database: shard?.name ?? null,
      bucket: shard?.bucket ?? null,
    }),
  );
  return errorResponse(c, err.status, err.errors, err.headers);
}

/** The one place where failures become responses. */
export const onError: ErrorHandler<AppEnv> = (err, c) => {
  if (err instanceof FrozenForMove) return frozenWriteResponse(c, err);
  if (err instanceof ApiError) return errorResponse(c, err.status, err.errors, err.headers);

  if (err instanceof CredentialEndedError) {
    // A gpodder write with a credential erased or revoked since an isolate cached it: nothing was written.
    const ended = gpodderUnauthorized("The app password or session no longer exists; sign in again.");
    return errorResponse(c, ended.status, ended.errors, ended.headers);
  }

  if (err instanceof HTTPException && httpExceptionProblems[err.status]) {
    return errorResponse(c, err.status, [toErrorObject(httpExceptionProblems[err.status])]);
  }

  const requestId = c.get("requestId");
  if (err instanceof DatabaseError) {
    console.error(JSON.stringify({ level: "error", requestId, event: "database_error", error: String(err.cause) }));
    return errorResponse(
      c,
      503,
      [
        toErrorObject({
          status: 503,
          title: "Service unavailable",
          detail: "The database could not be reached. Nothing was changed; retry the request.",
        }),
      ],
      { "Retry-After": "1" },
    );
  }

  if (err instanceof ShardConfigError) {
    // The deployment is wrong, not the request: refuse everything (never guess a database) until fixed.
    console.error(JSON.stringify({ level: "error", requestId, event: "configuration_error", error: err.message }));
    return errorResponse(c, 500, [
      toErrorObject({
        status: 500,
        title: "Configuration error",
        detail: `The service is misconfigured and serves no data until an operator fixes it: ${err.message}`,
      }),
    ]);
  }

  console.error(
    JSON.stringify({ level: "error", requestId, event: "unhandled_error", error: String(err), stack: err.stack }),
  );
  return errorResponse(c, 500, [
    toErrorObject({
      status: 500,
      title: "Internal server error",
      detail: `The request could not be completed. Quote request id ${requestId} when reporting this.`,
    }),
  ]);
};

/** A browser's request (it asks for HTML first or among others); API clients ask for JSON or send no Accept. */
function asksForHtml(c: Context<AppEnv>): boolean {
  return /(^|,)\s*text\/html\s*(;|,|$)/i.test(c.req.header("Accept") ?? "");
}

/**
 * A path nothing serves: a page (with the way to `/`) for a browser, which is a person who followed or typed a
 * wrong link; the API dialect's error for everyone else, so an API client still reads JSON.
 */
export const onNotFound: NotFoundHandler<AppEnv> = (c) => {
  if (!isPagePath(c.req.path) && asksForHtml(c)) {
    return pageErrorResponse(c, 404, [
      toErrorObject({ status: 404, title: "Page not found", detail: `There is no page at ${c.req.path}.` }),
    ]);
  }
  return errorResponse(c, 404, [
    toErrorObject({ status: 404, title: "Not found", detail: `No resource lives at ${c.req.path}.` }),
  ]);
};

export function methodNotAllowedResponse(c: Context<AppEnv>, methods: string[]): Response | Promise<Response> {
  const allow = methods.join(", ");
  return errorResponse(
    c,
    405,
    [
      toErrorObject({
        status: 405,
        title: "Method not allowed",
        detail: `${c.req.method} is not allowed here; allowed: ${allow}.`,
      }),
    ],
    { Allow: allow },
  );
}
