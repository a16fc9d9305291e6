import * as z from "zod";
import { type ChangedSubscription, MAX_STORED_SUBSCRIPTIONS, type StoredSubscription } from "../db/subscriptions";
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

const feedUrlSchema = z.string().max(MAX_FEED_URL_LENGTH).refine(isAbsoluteHttpUrl);

/**
 * A subscription resource object in a request that creates one: the single POST's `data` and each
 * bulk `add`'s `data`. Members are checked in this order (CONTRACT 5); read-only and unknown
 * attributes are ignored.
 */
export const subscriptionResourceSchema = z.object({
  type: z.literal(SUBSCRIPTION_TYPE),
  id: guidSchema,
  attributes: z.object({ feedUrl: feedUrlSchema }),
});

/**
 * A subscription resource object in a request that moves a feed: PATCH's `data`, where `attributes`
 * and `feedUrl` may be absent (nothing to change; CONTRACT 9). Bulk `update` requires feedUrl and uses
 * `subscriptionResourceSchema` (CONTRACT 10); both go through `parseFeedMove`.
 */
export const subscriptionPatchSchema = z.object({
  type: z.literal(SUBSCRIPTION_TYPE),
  id: guidSchema,
  attributes: z.object({ feedUrl: feedUrlSchema.optional() }).optional(),
});

export type NewSubscription = { guid: string; feedUrl: string };

/** A feed move: the guid, and the new URL unless the request had none (nothing to change). */
export type FeedMove = { guid: string; feedUrl?: string };

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

/** A resource identifier of a subscription: what a feed move checks first, and the shape of a bulk `ref`. */
export const subscriptionRefSchema = z.object({ type: z.literal(SUBSCRIPTION_TYPE), id: guidSchema });

/**
 * Validates a feed move wherever it sits: PATCH's `data` (`feedUrl` optional) or a bulk `update`'s
 * (`feedUrl` required). `base` is the resource object's JSON pointer. With `expectedId` (PATCH's path
 * guid), an id naming another subscription is a 409 at `id`, checked before the attributes (CONTRACT 9).
 */
export function parseFeedMove(
  resource: unknown,
  base: string,
  feedUrl: "optional" | "required",
  expectedId?: string,
): Validated<FeedMove> {
  const identity = subscriptionRefSchema.safeParse(resource);
  if (!identity.success) return { ok: false, error: validationError(identity.error.issues[0], resource, base) };
  if (expectedId !== undefined && identity.data.id !== expectedId) {
    return { ok: false, error: idMismatch(pointerTo(base, "id"), expectedId) };
  }
  const schema = feedUrl === "required" ? subscriptionResourceSchema : subscriptionPatchSchema;
  const parsed = schema.safeParse(resource);
  if (!parsed.success) return { ok: false, error: validationError(parsed.error.issues[0], resource, base) };
  return { ok: true, value: { guid: parsed.data.id, feedUrl: parsed.data.attributes?.feedUrl } };
}

function invalidRef(status: 400 | 409, title: string, detail: string, pointer: string): Validated<string> {
  return { ok: false, error: toErrorObject({ status, title, detail, source: { pointer } }) };
}

/**
 * Validates a bulk `remove`'s target in CONTRACT 10's order, with its pointers: `href` is not
 * supported, `ref` must be a resource identifier of a subscription. `base` is the operation's pointer.
 */
export function parseSubscriptionRef(operation: Record<string, unknown>, base: string): Validated<string> {
  const { href, ref } = operation;
  if (href !== undefined) {
    return invalidRef(
      400,
      "Invalid operation",
      "Operations name their target by ref; href is not supported.",
      `${base}/href`,
    );
  }
  if (ref === null || typeof ref !== "object" || Array.isArray(ref)) {
    return invalidRef(400, "Invalid operation", "A remove operation needs a ref object: {type, id}.", base);
  }
  const { type, id } = ref as Record<string, unknown>;
  if (typeof type !== "string") {
    return invalidRef(400, "Invalid resource identifier", `ref.type must be "${SUBSCRIPTION_TYPE}".`, `${base}/ref`);
  }
  if (type !== SUBSCRIPTION_TYPE) {
    return invalidRef(
      409,
      "Type mismatch",
      `This server removes resources of type "${SUBSCRIPTION_TYPE}", not "${type}".`,
      `${base}/ref/type`,
    );
  }
  const guid = guidSchema.safeParse(id);
  if (!guid.success) {
    return invalidRef(
      400,
      "Invalid resource identifier",
      "ref.id must be the subscription's guid (a UUID).",
      `${base}/ref/id`,
    );
  }
  return { ok: true, value: guid.data };
}

/** The 409 for a resource whose `id` differs from the one its URL or `ref` names. */
export function idMismatch(pointer: string, expected: string): ErrorObject {
  return toErrorObject({
    status: 409,
    title: "Identifier mismatch",
    detail: `The resource's id must be the subscription's guid, ${expected}.`,
    source: { pointer },
  });
}

/** The body of POST /v1/subscriptions: a document whose primary data is one subscription resource. */
export const subscriptionDocumentSchema = z
  .object({ data: subscriptionResourceSchema })
  .transform((document) => toNewSubscription(document.data));

/** The error for a body that `subscriptionDocumentSchema` rejected (pointers from the document root). */
export function subscriptionDocumentError(error: z.core.$ZodError, body: unknown): ApiError {
  return ApiError.from(validationError(error.issues[0], body, ""));
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

/**
 * The subscription resource object of a response. Bulk results carry only `links.self`
 * (CONTRACT 6); everywhere else `links.unsubscribe` too.
 */
export function toSubscriptionResource(row: StoredSubscription, links: "full" | "self" = "full") {
  const self = subscriptionPath(row.guid);
  return {
    ...identifiedAttributes(row),
    links: links === "full" ? { self, unsubscribe: unsubscribeLink(row.guid) } : { self },
  };
}

function identifiedAttributes(row: StoredSubscription) {
  return {
    type: SUBSCRIPTION_TYPE,
    id: row.guid,
    attributes: { feedUrl: row.feedUrl, userSubscribedAt: new Date(row.subscribedAt).toISOString() },
  };
}

/**
 * A subscription as the change feed reports it (CONTRACT 8): an active one is the list's resource plus
 * `userUnsubscribedAt: null`; a tombstone has its last state and when it ended, and no links.
 */
export function toChangeResource(row: ChangedSubscription) {
  if (row.unsubscribedAt === null) {
    const resource = toSubscriptionResource(row);
    return { ...resource, attributes: { ...resource.attributes, userUnsubscribedAt: null } };
  }
  const tombstone = identifiedAttributes(row);
  return {
    ...tombstone,
    attributes: { ...tombstone.attributes, userUnsubscribedAt: new Date(row.unsubscribedAt).toISOString() },
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

/** A write that would store more than the quota (CONTRACT 12); inline in bulk at the operation. */
export function subscriptionLimitReached(operationPointer?: string): ErrorObject {
  return toErrorObject({
    status: 403,
    title: "Subscription limit reached",
    detail: `A user may store at most ${MAX_STORED_SUBSCRIPTIONS} subscriptions, unsubscribed ones included.`,
    ...(operationPointer === undefined ? {} : { source: { pointer: operationPointer } }),
    meta: { maxSubscriptions: MAX_STORED_SUBSCRIPTIONS },
  });
}

/** The 404 inline in bulk results, at the operation. */
export function subscriptionNotFoundAt(operationPointer: string): ErrorObject {
  return { ...subscriptionNotFound().errors[0], source: { pointer: operationPointer } };
}
