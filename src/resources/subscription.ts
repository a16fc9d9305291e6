import * as z from "zod";
import type { SubscriptionRow } from "../db/schema";
import { ApiError, type ErrorObject, pointerTo, toErrorObject } from "../jsonapi";

export const SUBSCRIPTION_TYPE = "subscription";
export const MAX_FEED_URL_LENGTH = 2048;

/** RFC 9562 syntax, any version: the guid is the feed's identity, chosen by the client. */
export const guidSchema = z.guid().transform((guid) => guid.toLowerCase());

function isAbsoluteHttpUrl(value: string): boolean {
  // Raw whitespace and control characters are not part of a URL; the URL parser would quietly strip them.
  if (/\s/.test(value) || [...value].some((ch) => (ch.codePointAt(0) ?? 0) < 0x20 || ch === "\u007f")) return false;
  // A lone surrogate cannot be stored as UTF-8 unchanged, and feedUrl is stored exactly as sent.
  if (!value.isWellFormed()) return false;
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
}

/**
 * A subscription resource object in a request that creates one: the single POST's `data` and each
 * bulk `add`'s `data`. Members are checked in this order (docs/API.md §5); read-only and unknown
 * attributes are ignored.
 */
export const subscriptionResourceSchema = z.object({
  type: z.literal(SUBSCRIPTION_TYPE),
  id: guidSchema,
  attributes: z.object({
    feedUrl: z.string().max(MAX_FEED_URL_LENGTH).refine(isAbsoluteHttpUrl),
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
        detail: missing ? "The document has no data member." : `${member ?? "The request body"} must be a JSON object.`,
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
          : `feedUrl must be an absolute http or https URL of at most ${MAX_FEED_URL_LENGTH} characters.`,
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
 * (docs/API.md §6); everywhere else `links.unsubscribe` too.
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
