import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { DatabaseError } from "../db/database";
import type { AppEnv } from "../env";
import { ApiError, type ErrorObject, errorDocument, type ProblemInit, respond, toErrorObject } from "../jsonapi";
import { pageErrorResponse } from "../pages/error-page";
import { isPagePath } from "../pages/paths";
import { BODY_TOO_LARGE, MALFORMED_JSON } from "../request-body";
import { ShardConfigError } from "../shards";

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

/** The one place where failures become responses. */
export const onError: ErrorHandler<AppEnv> = (err, c) => {
  if (err instanceof ApiError) return errorResponse(c, err.status, err.errors, err.headers);

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

export const onNotFound: NotFoundHandler<AppEnv> = (c) =>
  errorResponse(c, 404, [
    toErrorObject({ status: 404, title: "Not found", detail: `No resource lives at ${c.req.path}.` }),
  ]);

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
