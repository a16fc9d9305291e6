import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import * as z from "zod";
import { subscribeMany } from "../db/subscriptions";
import type { AppEnv } from "../env";
import {
  ApiError,
  ATOMIC_EXT_URI,
  type ErrorObject,
  JSONAPI_VERSION,
  linkMethodExtUri,
  pointerTo,
  respond,
  toErrorObject,
} from "../jsonapi";
import { MAX_BODY_BYTES, MAX_OPERATIONS } from "../limits";
import { negotiate } from "../middleware/negotiation";
import {
  alreadySubscribed,
  type NewSubscription,
  parseSubscriptionResource,
  toSubscriptionResource,
  type Validated,
} from "../resources/subscription";

const OPERATIONS = "atomic:operations";
const UNSUPPORTED_OPS = new Set(["update", "remove"]);

/** The body of POST /v1/operations as the route validates it (exported for the OpenAPI document). */
export const operationsDocumentSchema = z.object({
  [OPERATIONS]: z.array(z.unknown()).min(1).max(MAX_OPERATIONS),
});

/** Request-level problems: answered with a top-level errors document and no results (docs/API.md §6). */
function operationsDocumentError(error: z.core.$ZodError, body: unknown): ApiError {
  const issue = error.issues[0];
  if (issue.code === "too_big") {
    return new ApiError({
      status: 413,
      title: "Too many operations",
      detail: `A request may carry at most ${MAX_OPERATIONS} operations; split it into several requests.`,
      source: { pointer: pointerTo("", OPERATIONS) },
      meta: { maxOperations: MAX_OPERATIONS },
    });
  }
  // The pointer names the offending member, or the document root when the member is missing.
  const present = issue.path.length > 0 && (body as Record<string, unknown>)[OPERATIONS] !== undefined;
  return new ApiError({
    status: 400,
    title: "Invalid document",
    detail: present
      ? `${OPERATIONS} must be a non-empty array of operation objects.`
      : `The request body must be a JSON object with an ${OPERATIONS} array.`,
    source: { pointer: present ? pointerTo("", OPERATIONS) : "" },
  });
}

function invalidOperation(pointer: string, title: string, detail: string): { ok: false; error: ErrorObject } {
  return { ok: false, error: toErrorObject({ status: 400, title, detail, source: { pointer } }) };
}

/** Validates operation `index` on its own; only `add` of a subscription is documented for this server. */
function parseOperation(operation: unknown, index: number): Validated<NewSubscription> {
  const at = pointerTo("", OPERATIONS, index);
  if (operation === null || typeof operation !== "object" || Array.isArray(operation)) {
    return invalidOperation(at, "Invalid operation", "An operation must be a JSON object.");
  }
  const { op, data } = operation as Record<string, unknown>;
  if (typeof op !== "string") {
    return invalidOperation(at, "Invalid operation", 'An operation needs an op member (a string; "add").');
  }
  if (UNSUPPORTED_OPS.has(op)) {
    return invalidOperation(
      `${at}/op`,
      "Unsupported operation",
      `This server supports only "add"; "${op}" is not available.`,
    );
  }
  if (op !== "add") {
    return invalidOperation(`${at}/op`, "Invalid operation", `Unknown op "${op}"; this server supports "add".`);
  }
  if (data === undefined) {
    return invalidOperation(
      at,
      "Invalid resource object",
      "An add operation needs a data member: one resource object.",
    );
  }
  return parseSubscriptionResource(data, pointerTo(at, "data"));
}

/**
 * POST /v1/operations: Atomic Operations, except that operations are independent (specification):
 * each succeeds or fails on its own, and failures are reported inline in `atomic:results`.
 */
export const operationRoutes = new Hono<AppEnv>().post(
  "/",
  negotiate("atomic"),
  bodyLimit({ maxSize: MAX_BODY_BYTES }),
  zValidator("json", operationsDocumentSchema, (result) => {
    if (!result.success) throw operationsDocumentError(result.error, result.data);
  }),
  async (c) => {
    const parsed = c.req.valid("json")[OPERATIONS].map(parseOperation);
    const valid = parsed.flatMap((result) => (result.ok ? [result.value] : []));
    // Invalid operations never reach the database; the valid ones go as one batch, in order.
    const stored = await subscribeMany(c.get("db"), c.get("userId"), valid, Date.now());

    let next = 0;
    const results = parsed.map((result, index) => {
      if (!result.ok) return { errors: [result.error] };
      const row = stored[next++];
      if (!row) return { errors: [alreadySubscribed(pointerTo("", OPERATIONS, index), result.value)] };
      return { data: toSubscriptionResource(row, "self") };
    });
    const failed = results.filter((result) => "errors" in result).length;

    return respond(c, {
      jsonapi: {
        version: JSONAPI_VERSION,
        ext: [ATOMIC_EXT_URI, linkMethodExtUri(c)],
      },
      "atomic:results": results,
      meta: { succeeded: results.length - failed, failed },
    });
  },
);
