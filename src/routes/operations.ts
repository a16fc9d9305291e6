import { Hono } from "hono";
import * as z from "zod";
import { applyOperations, type WriteOperation, type WriteResult } from "../db/subscriptions";
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
import { MAX_OPERATIONS } from "../limits";
import { jsonBody } from "../middleware/json-body";
import { negotiate } from "../middleware/negotiation";
import { noQueryParameters } from "../pagination";
import {
  alreadySubscribed,
  parseFeedMove,
  parseSubscriptionRef,
  parseSubscriptionResource,
  subscriptionLimitReached,
  subscriptionNotFoundAt,
  toSubscriptionResource,
  type Validated,
} from "../resources/subscription";

const OPERATIONS = "atomic:operations";
const OPERATIONS_POINTER = pointerTo("", OPERATIONS);

/** The JSON pointer of operation `index`. */
function operationPointer(index: number): string {
  return pointerTo(OPERATIONS_POINTER, index);
}

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
      source: { pointer: OPERATIONS_POINTER },
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
    source: { pointer: present ? OPERATIONS_POINTER : "" },
  });
}

function invalidOperation(pointer: string, title: string, detail: string): { ok: false; error: ErrorObject } {
  return { ok: false, error: toErrorObject({ status: 400, title, detail, source: { pointer } }) };
}

/** A bulk `update`'s optional `ref` must name the resource its `data` names (docs/API.md §10). */
function refMatches(ref: unknown, guid: string): boolean {
  if (ref === null || typeof ref !== "object") return false;
  const { type, id } = ref as Record<string, unknown>;
  return type === "subscription" && typeof id === "string" && id.toLowerCase() === guid;
}

function withData(operation: Record<string, unknown>, at: string, op: string): Validated<unknown> {
  if (operation.data === undefined) {
    return invalidOperation(
      at,
      "Invalid resource object",
      `An ${op} operation needs a data member: one resource object.`,
    );
  }
  return { ok: true, value: operation.data };
}

/**
 * Validates operation `index` on its own (docs/API.md §6 and 10), with the validators the single-resource
 * endpoints use: `add` as POST, `update` as PATCH, `remove` by its ref as DELETE by its path.
 */
function parseOperation(operation: unknown, index: number): Validated<WriteOperation> {
  const at = operationPointer(index);
  if (operation === null || typeof operation !== "object" || Array.isArray(operation)) {
    return invalidOperation(at, "Invalid operation", "An operation must be a JSON object.");
  }
  const members = operation as Record<string, unknown>;
  const { op } = members;
  if (typeof op !== "string") {
    return invalidOperation(at, "Invalid operation", 'An operation needs an op member: "add", "update" or "remove".');
  }
  switch (op) {
    case "add": {
      const data = withData(members, at, op);
      if (!data.ok) return data;
      const item = parseSubscriptionResource(data.value, pointerTo(at, "data"));
      return item.ok ? { ok: true, value: { op, ...item.value } } : item;
    }
    case "update": {
      const data = withData(members, at, op);
      if (!data.ok) return data;
      const move = parseFeedMove(data.value, pointerTo(at, "data"), "required");
      if (!move.ok) return move;
      const { guid, feedUrl } = move.value;
      if (members.ref !== undefined && !refMatches(members.ref, guid)) {
        return invalidOperation(
          pointerTo(at, "ref"),
          "Invalid operation",
          "ref must name the same subscription as data.",
        );
      }
      return { ok: true, value: { op, guid, feedUrl: feedUrl as string } };
    }
    case "remove": {
      const ref = parseSubscriptionRef(members, at);
      return ref.ok ? { ok: true, value: { op, guid: ref.value } } : ref;
    }
    default:
      return invalidOperation(
        pointerTo(at, "op"),
        "Invalid operation",
        `Unknown op "${op}": use "add", "update" or "remove".`,
      );
  }
}

type AtomicResult =
  | { data: ReturnType<typeof toSubscriptionResource> }
  | Record<string, never>
  | { errors: ErrorObject[] };

/** The `atomic:results` element of operation `index`, which reached the database. */
function toAtomicResult(operation: WriteOperation, result: WriteResult<WriteOperation>, index: number): AtomicResult {
  switch (result.kind) {
    case "created":
    case "updated":
      return { data: toSubscriptionResource(result.subscription, "self") };
    case "removed":
      return {};
    case "exists":
      return { errors: [alreadySubscribed(operationPointer(index), operation as { guid: string; feedUrl: string })] };
    case "limit":
      return { errors: [subscriptionLimitReached(operationPointer(index))] };
    case "not-found":
      return { errors: [subscriptionNotFoundAt(operationPointer(index))] };
  }
}

/**
 * POST /v1/operations: Atomic Operations, except that operations are independent (docs/API.md §6):
 * each succeeds or fails on its own, and failures are reported inline in `atomic:results`.
 */
export const operationRoutes = new Hono<AppEnv>().post(
  "/",
  negotiate("atomic"),
  noQueryParameters,
  jsonBody(operationsDocumentSchema, operationsDocumentError),
  async (c) => {
    const parsed = c.req.valid("json")[OPERATIONS].map(parseOperation);
    const valid = parsed.flatMap((result) => (result.ok ? [result.value] : []));
    // Invalid operations never reach the database; the valid ones go as one batch, in order.
    const outcomes = await applyOperations(c.get("db"), c.get("userId"), valid, Date.now());

    let next = 0;
    const results = parsed.map((result, index): AtomicResult => {
      if (!result.ok) return { errors: [result.error] };
      return toAtomicResult(result.value, outcomes[next++], index);
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
