import { Hono } from "hono";
import * as z from "zod";
import type { AtomicResult, OperationKind, OperationName } from "../atomic-operations";
import { WriteBatch } from "../db/batch";
import type { WriteContext } from "../db/subscriptions";
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
import { chargeRenumbering } from "../middleware/rate-limit";
import { noQueryParameters } from "../pagination";
import { isObject, parseRemoveRef, typeMismatch, type Validated } from "../resources/resource-object";
import { episodeOperations } from "./episodes";
import { subscriptionOperations } from "./subscriptions";

/** The resource types bulk requests take; the first also words the errors of a `data` without a usable type. */
const KINDS: readonly OperationKind<unknown>[] = [
  subscriptionOperations as OperationKind<unknown>,
  episodeOperations as OperationKind<unknown>,
];
const TYPES = KINDS.map((kind) => kind.type);

const OPERATIONS = "atomic:operations";
const OPERATIONS_POINTER = pointerTo("", OPERATIONS);

/** Operation pointers built so far, by index: the same hundred are named in every bulk request, twice each. */
const operationPointers: string[] = [];

/** The JSON pointer of operation `index`. */
function operationPointer(index: number): string {
  operationPointers[index] ??= pointerTo(OPERATIONS_POINTER, index);
  return operationPointers[index];
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

/** An operation that passed validation: its type's kind and the value it writes. */
type ValidOperation = { kind: OperationKind<unknown>; value: unknown };

/** The kind that validates a `data` member: its type's, or the first's for a `data` without a usable type. */
function kindOfData(data: unknown, at: string): Validated<OperationKind<unknown>> {
  const type = isObject(data) ? data.type : undefined;
  if (typeof type !== "string") return { ok: true, value: KINDS[0] };
  const kind = KINDS.find((candidate) => candidate.type === type);
  return kind
    ? { ok: true, value: kind }
    : { ok: false, error: typeMismatch(pointerTo(at, "data", "type"), TYPES, type) };
}

/** A bulk `update`'s optional `ref` must name the resource its `data` names (docs/API.md §10). */
function refMatches(ref: unknown, type: string, id: string): boolean {
  if (!isObject(ref)) return false;
  return ref.type === type && typeof ref.id === "string" && ref.id.toLowerCase() === id;
}

/** Validates operation `index` on its own (docs/API.md §6, 10, 13), dispatching by the type it names. */
function parseOperation(operation: unknown, index: number): Validated<ValidOperation> {
  const at = operationPointer(index);
  if (!isObject(operation)) return invalidOperation(at, "Invalid operation", "An operation must be a JSON object.");
  const { op } = operation;
  if (typeof op !== "string") {
    return invalidOperation(at, "Invalid operation", 'An operation needs an op member: "add", "update" or "remove".');
  }
  if (op === "remove") {
    const ref = parseRemoveRef(operation, at, TYPES);
    if (!ref.ok) return ref;
    const kind = KINDS.find((candidate) => candidate.type === ref.value.type) as OperationKind<unknown>;
    const parsed = kind.parse(op, operation, at, ref.value);
    return parsed.ok ? { ok: true, value: { kind, value: parsed.value } } : parsed;
  }
  if (op !== "add" && op !== "update") {
    return invalidOperation(
      pointerTo(at, "op"),
      "Invalid operation",
      `Unknown op "${op}": use "add", "update" or "remove".`,
    );
  }
  if (operation.data === undefined) {
    return invalidOperation(
      at,
      "Invalid resource object",
      `An ${op} operation needs a data member: one resource object.`,
    );
  }
  const kind = kindOfData(operation.data, at);
  if (!kind.ok) return kind;
  const parsed = kind.value.parse(op as OperationName, operation, at);
  if (!parsed.ok) return parsed;
  if (op === "update" && operation.ref !== undefined) {
    if (!refMatches(operation.ref, kind.value.type, kind.value.idOf(parsed.value))) {
      return invalidOperation(pointerTo(at, "ref"), "Invalid operation", "ref must name the same resource as data.");
    }
  }
  return { ok: true, value: { kind: kind.value, value: parsed.value } };
}

/**
 * POST /v1/operations: Atomic Operations, except that operations are independent (docs/API.md §6):
 * each succeeds or fails on its own, and failures are reported inline in `atomic:results`. Every valid
 * operation, whatever its type, goes into one batch in request order: one D1 round trip.
 */
export const operationRoutes = new Hono<AppEnv>().post(
  "/",
  negotiate("atomic"),
  noQueryParameters,
  jsonBody(operationsDocumentSchema, operationsDocumentError),
  async (c) => {
    const parsed = c.req.valid("json")[OPERATIONS].map(parseOperation);
    const db = c.get("db");
    const context: WriteContext = { batch: new WriteBatch(), db, user: c.get("userId"), at: Date.now() };
    const writers = new Map<OperationKind<unknown>, ReturnType<OperationKind<unknown>["writer"]>>();
    // Invalid operations never reach the database.
    const readers = parsed.map((result, index): (() => AtomicResult) => {
      if (!result.ok) return () => ({ errors: [result.error] });
      const { kind, value } = result.value;
      let write = writers.get(kind);
      if (!write) {
        write = kind.writer(context);
        writers.set(kind, write);
      }
      return write(value, operationPointer(index));
    });
    await context.batch.run(db);
    await chargeRenumbering(c, context.batch);
    const results = readers.map((read) => read());
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
