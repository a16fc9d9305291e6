import * as z from "zod";
import { MAX_URL_BYTES } from "../db/storage";
import { ApiError, type ErrorObject, toErrorObject } from "../jsonapi";

/**
 * What every resource type shares on the wire: identifiers (UUIDs), the outcome of validating a member of a
 * request, and the errors about a resource object's frame (document, type, id, `ref`) that JSON:API fixes
 * the same way for every type. Each resource module adds its attributes.
 */

export type Validated<T> = { ok: true; value: T } | { ok: false; error: ErrorObject };

export function invalid(error: ErrorObject): { ok: false; error: ErrorObject } {
  return { ok: false, error };
}

/** RFC 9562 syntax, any version: identifiers are chosen by clients; stored and returned lowercase. */
export const guidSchema = z.guid().transform((guid) => guid.toLowerCase());

/** zod's own guid pattern (RFC 9562 syntax, any version), for the check below. */
const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/**
 * A guid matching zod's pattern, lower-cased, found without zod (in Workers zod runs without its compiled
 * fast path); undefined for anything else.
 */
export function usualGuid(value: unknown): string | undefined {
  return typeof value === "string" && GUID.test(value) ? value.toLowerCase() : undefined;
}

/**
 * A guid as the API takes it (path, `id`, `ref.id`), lower-cased; undefined when it is not one. The pattern
 * is checked without zod first; the schema decides the rest.
 */
export function parseGuid(value: unknown): string | undefined {
  const usual = usualGuid(value);
  if (usual !== undefined) return usual;
  const parsed = guidSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------
// Errors about a resource object's frame, worded once for every type

export function invalidDocument(pointer: string, detail: string): ErrorObject {
  return toErrorObject({ status: 400, title: "Invalid document", detail, source: { pointer } });
}

export function invalidResourceObject(pointer: string, detail: string): ErrorObject {
  return toErrorObject({ status: 400, title: "Invalid resource object", detail, source: { pointer } });
}

export function invalidResourceIdentifier(pointer: string, detail: string): ErrorObject {
  return toErrorObject({ status: 400, title: "Invalid resource identifier", detail, source: { pointer } });
}

/** `types` are what the endpoint takes: one type for a resource's own endpoints, every type in bulk. */
export function typeMismatch(pointer: string, types: readonly string[], actual: string): ErrorObject {
  const expected = types.map((type) => `"${type}"`).join(" or ");
  return toErrorObject({
    status: 409,
    title: "Type mismatch",
    detail: `This endpoint takes resources of type ${expected}, not "${actual}".`,
    source: { pointer },
  });
}

export function invalidAttribute(pointer: string, detail: string): ErrorObject {
  return toErrorObject({ status: 422, title: "Invalid attribute", detail, source: { pointer } });
}

/** The 409 for a resource whose `id` differs from the one its URL or `ref` names. */
export function idMismatch(pointer: string, expected: string): ErrorObject {
  return toErrorObject({
    status: 409,
    title: "Identifier mismatch",
    detail: `The resource's id must be ${expected}, the id its URL names.`,
    source: { pointer },
  });
}

/** The 400 for a path id that is not a UUID (the wording docs/API.md §7 fixes for every resource). */
export function invalidGuid(): ApiError {
  return new ApiError({
    status: 400,
    title: "Invalid GUID in request",
    detail: "The requested GUID is not a UUID value",
    source: { parameter: "guid" },
  });
}

/** A resource identifier a bulk `remove` names: its type and lower-cased id. */
export type ResourceRef = { type: string; id: string };

/**
 * Validates a bulk `remove`'s target in docs/API.md §10's order, with its pointers: `href` is not supported,
 * `ref` must be a resource identifier of one of `types`. `base` is the operation's pointer.
 */
export function parseRemoveRef(operation: Record<string, unknown>, base: string, types: readonly string[]) {
  const { href, ref } = operation;
  if (href !== undefined) {
    return invalid(
      toErrorObject({
        status: 400,
        title: "Invalid operation",
        detail: "Operations name their target by ref; href is not supported.",
        source: { pointer: `${base}/href` },
      }),
    );
  }
  if (!isObject(ref)) {
    return invalid(
      toErrorObject({
        status: 400,
        title: "Invalid operation",
        detail: "A remove operation needs a ref object: {type, id}.",
        source: { pointer: base },
      }),
    );
  }
  const { type, id } = ref;
  const expected = types.map((name) => `"${name}"`).join(" or ");
  if (typeof type !== "string") {
    return invalid(invalidResourceIdentifier(`${base}/ref`, `ref.type must be ${expected}.`));
  }
  if (!types.includes(type)) return invalid(typeMismatch(`${base}/ref/type`, types, type));
  const guid = parseGuid(id);
  if (guid === undefined) {
    return invalid(invalidResourceIdentifier(`${base}/ref/id`, `ref.id must be the ${type}'s id (a UUID).`));
  }
  return { ok: true as const, value: { type, id: guid } satisfies ResourceRef };
}

/**
 * A write that would store more URL text than the budget (docs/API.md §15), after the user's tombstones were
 * purged; inline in bulk at the operation. Resource-independent: the budget covers every resource's URLs.
 */
export function storageLimitReached(operationPointer?: string): ErrorObject {
  return toErrorObject({
    status: 403,
    title: "Storage limit reached",
    detail: `A user may store at most ${MAX_URL_BYTES} bytes of URL text (feed URLs, episode media URLs and item guids).`,
    ...(operationPointer === undefined ? {} : { source: { pointer: operationPointer } }),
    meta: { maxBytes: MAX_URL_BYTES },
  });
}
