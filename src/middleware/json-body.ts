import type { MiddlewareHandler } from "hono";
import type * as z from "zod";
import type { AppEnv } from "../env";
import { ApiError } from "../jsonapi";
import { MAX_BODY_BYTES } from "../limits";
import { decodeUtf8, MALFORMED_JSON, readBody } from "../request-body";

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(MALFORMED_JSON);
  }
}

/**
 * The request body as a validated JSON document, in the order docs/API.md §1 fixes after negotiation: size
 * (413), UTF-8 decoding and JSON parsing (400), then `schema`; a document the schema refuses becomes the
 * route's own error (`invalid`). The result is `c.req.valid("json")`, typed as the schema's output.
 */
export function jsonBody<S extends z.ZodType>(
  schema: S,
  invalid: (error: z.core.$ZodError, body: unknown) => ApiError,
): MiddlewareHandler<AppEnv, string, { in: { json: z.input<S> }; out: { json: z.output<S> } }> {
  return async (c, next) => {
    const body = parseJson(decodeUtf8(await readBody(c.req.raw, MAX_BODY_BYTES)));
    const result = schema.safeParse(body);
    if (!result.success) throw invalid(result.error, body);
    c.req.addValidatedData("json", result.data as object);
    await next();
  };
}
