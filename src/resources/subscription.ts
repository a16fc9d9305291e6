import * as z from "zod";
import type { SubscriptionRow } from "../db/schema";
import { ApiError, type ErrorObject, pointerTo, toErrorObject } from "../jsonapi";

export const SUBSCRIPTION_TYPE = "subscription";
/** CONTRACT 12: measured in UTF-8 bytes, as stored, not in characters (one character may take 4 bytes). */
export const MAX_FEED_URL_BYTES = 2048;

/** RFC 9562 syntax, any version: the guid is the feed's identity, chosen by the client. */
export const guidSchema = z.guid().transform((guid) => guid.toLowerCase());

/**
 * Characters a stored feedUrl never holds: whitespace and C0/DEL/C1 controls (the URL parser would quietly
 * strip or rewrite them, and feedUrl is stored exactly as sent), and bidirectional controls (U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069), which make a URL display as something else (`/\u202egpj.exe` as `exe.jpg`).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what this refuses.
const FORBIDDEN_IN_FEED_URL = /[\s\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** UTF-8 length of a well-formed string, without encoding it. */
function utf8ByteLength(value: string): number {
  let bytes = value.length; // one per UTF-16 code unit, plus the extra ones below
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdfff)
      bytes += 1; // a surrogate pair: 2 units, 4 bytes
    else if (unit >= 0x800) bytes += 2;
    else if (unit >= 0x80) bytes += 1;
  }
  return bytes;
}

function isValidFeedUrl(value: string): boolean {
  if (value.length > MAX_FEED_URL_BYTES || FORBIDDEN_IN_FEED_URL.test(value)) return false;
  // A lone surrogate cannot be stored as UTF-8 unchanged, and feedUrl is stored exactly as sent.
  if (!value.isWellFormed()) return false;
  // Each code unit is at least one byte, so only strings with non-ASCII characters need counting.
  if (value.length * 3 > MAX_FEED_URL_BYTES && utf8ByteLength(value) > MAX_FEED_URL_BYTES) return false;
  const url = URL.parse(value); // the one parse of this URL
  return url !== null && (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
}

/**
 * A subscription resource object in a request that creates one: the single POST's `data` and each
 * bulk `add`'s `data`. Members are checked in this order (CONTRACT 5); read-only and unknown
 * attributes are ignored.
 */
export const subscriptionResourceSchema = z.object({
  type: z.literal(SUBSCRIPTION_TYPE),
  id: guidSchema,
  attributes: z.object({
    feedUrl: z.string().max(MAX_FEED_URL_BYTES).refine(isValidFeedUrl),
  }),
});

export type NewSubscription = { guid: string; feedUrl: string };

export type Validated<T> = { ok: true; value: T } | { ok: false; error: ErrorObject };

type Issue = z.core.$ZodIssue;

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** How a detail names the validated value: the request body at the root, else its member (an operation's `data`). */
function nameOf(base: string): string {
  return base === "" ? "The request body" : base.slice(base.lastIndexOf("/") + 1);
}

/**
 * Turns the first failed check into its JSON:API error, with a pointer at the offending member, or
 * at its parent when the member is missing. `base` is the pointer of the validated value.
 */
function validationError(issue: Issue, input: unknown, base: string): ErrorObject {
  const path = issue.path.filter((key): key is string | number => typeof key !== "symbol");
  const value = valueAt(input, path);
  const missing = value === undefined;
  const at = missing ? pointerTo(base, ...path.slice(0, -1)) : pointerTo(base, ...path);
  const member = path.at(-1);

  switch (member) {
    case undefined:
    case "data":
      return toErrorObject({
        status: 400,
        title: "Invalid document",
        detail: missing ? "The document has no data member." : `${member ?? nameOf(base)} must be a JSON object.`,
        source: { pointer: at },
      });
    case "type":
      if (typeof value === "string") {
        return toErrorObject({
          status: 409,
          title: "Type mismatch",
          detail: `This endpoint takes resources of type "${SUBSCRIPTION_TYPE}", not "${value}".`,
          source: { pointer: at },
        });
      }
      return toErrorObject({
        status: 400,
        title: "Invalid resource object",
        detail: missing ? "The resource object has no type." : `type must be the string "${SUBSCRIPTION_TYPE}".`,
        source: { pointer: at },
      });
    case "id":
      return toErrorObject({
        status: 400,
        title: "Invalid resource identifier",
        detail: missing
          ? "The resource object has no id: send the feed's GUID (a UUID)."
          : "id must be a UUID (8-4-4-4-12 hexadecimal digits).",
        source: { pointer: at },
      });
    case "attributes":
      return toErrorObject({
        status: 422,
        title: "Invalid attribute",
        detail: missing
          ? "The resource object has no attributes: feedUrl is required."
          : "attributes must be an object.",
        source: { pointer: at },
      });
    default:
      return toErrorObject({
        status: 422,
        title: "Invalid attribute",
        detail: missing
          ? "feedUrl is required."
          : `feedUrl must be an absolute http or https URL of at most ${MAX_FEED_URL_BYTES} bytes in UTF-8, without whitespace, control characters or bidirectional controls.`,
        source: { pointer: at },
      });
  }
}

function toNewSubscription(resource: z.output<typeof subscriptionResourceSchema>): NewSubscription {
  return { guid: resource.id, feedUrl: resource.attributes.feedUrl };
}

/**
 * Validates one subscription resource object wherever it sits in a request: `base` is its JSON
 * pointer (`/atomic:operations/N/data` in bulk).
 */
export function parseSubscriptionResource(resource: unknown, base: string): Validated<NewSubscription> {
  const parsed = subscriptionResourceSchema.safeParse(resource);
  if (!parsed.success) return { ok: false, error: validationError(parsed.error.issues[0], resource, base) };
  return { ok: true, value: toNewSubscription(parsed.data) };
}

/** The body of POST /v1/subscriptions: a document whose primary data is one subscription resource. */
export const subscriptionDocumentSchema = z
  .object({ data: subscriptionResourceSchema })
  .transform((document) => toNewSubscription(document.data));

/** The error for a body that `subscriptionDocumentSchema` rejected (pointers from the document root). */
export function subscriptionDocumentError(error: z.core.$ZodError, body: unknown): ApiError {
  const object = validationError(error.issues[0], body, "");
  return new ApiError({ ...object, status: Number(object.status) });
}

// ---------------------------------------------------------------------------------------------
// Serialisation

export function subscriptionPath(guid: string): string {
  return `/v1/subscriptions/${guid}`;
}

/** The link-method extension's link object: where and how to unsubscribe. */
export function unsubscribeLink(guid: string) {
  return { href: subscriptionPath(guid), method: "DELETE" as const };
}

type StoredSubscription = Pick<SubscriptionRow, "guid" | "feedUrl" | "subscribedAt">;

/**
 * The subscription resource object of a response. Bulk results carry only `links.self`
 * (CONTRACT 6); everywhere else `links.unsubscribe` too.
 */
export function toSubscriptionResource(row: StoredSubscription, links: "full" | "self" = "full") {
  const self = subscriptionPath(row.guid);
  return {
    type: SUBSCRIPTION_TYPE,
    id: row.guid,
    attributes: {
      feedUrl: row.feedUrl,
      userSubscribedAt: new Date(row.subscribedAt).toISOString(),
    },
    links: links === "full" ? { self, unsubscribe: unsubscribeLink(row.guid) } : { self },
  };
}

// ---------------------------------------------------------------------------------------------
// Errors the specification fixes

export function invalidGuid(): ApiError {
  return new ApiError({
    status: 400,
    title: "Invalid GUID in request",
    detail: "The requested GUID is not a UUID value",
    source: { parameter: "guid" },
  });
}

export function subscriptionNotFound(): ApiError {
  return new ApiError({
    status: 404,
    title: "Subscription not found",
    detail: "The requested subscription does not exist for the user.",
  });
}

/** The bulk 409 element, exactly as the specification shows it. */
export function alreadySubscribed(operationPointer: string, subscription: NewSubscription): ErrorObject {
  return toErrorObject({
    status: 409,
    title: "Already Subscribed",
    detail: "User is already subscribed to this feed.",
    source: { pointer: operationPointer },
    meta: { feedUrl: subscription.feedUrl, guid: subscription.guid },
  });
}
