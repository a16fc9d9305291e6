import * as z from "zod";
import {
  type ChangedSubscription,
  MAX_STORED_SUBSCRIPTIONS,
  type Refused,
  type StoredSubscription,
} from "../db/subscriptions";
import { ApiError, type ErrorObject, pointerTo, toErrorObject } from "../jsonapi";
import { toRfc3339 } from "../timestamps";
import { hasForbiddenUrlCharacter } from "../url-text";
import { podcastRelationships } from "./podcast";
import {
  guidSchema,
  idMismatch,
  invalidAttribute,
  invalidDocument,
  invalidResourceIdentifier,
  invalidResourceObject,
  storageLimitReached,
  typeMismatch,
  usualGuid,
  type Validated,
} from "./resource-object";

export const SUBSCRIPTION_TYPE = "subscription";
/** docs/API.md §12: measured in UTF-8 bytes, as stored, not in characters (one character may take 4 bytes). */
export const MAX_FEED_URL_BYTES = 2048;

/**
 * Whitespace, which a stored feedUrl never holds besides the characters no stored URL text holds
 * (url-text.ts): the URL parser would quietly strip or rewrite it, and feedUrl is stored exactly as sent.
 */
const WHITESPACE = /\s/;

/**
 * What every accepted feedUrl matches (ECMA-262 syntax, as JSON Schema's `pattern`), for the OpenAPI
 * document: an http or https scheme in any case, any slashes or backslashes, then a character that can start a
 * host (the URL standard refuses these schemes without one: `htTP:/`, `http://`), then no whitespace and none of
 * the C0/C1 controls, bidi controls or U+FFFE/U+FFFF (the rest of docs/API.md §15's characters are refused too,
 * but a pattern that every validator reads cannot name Unicode categories). It is not RFC 3986 (`format: uri`):
 * the server takes whatever the URL standard parses and stores it exactly as sent, so a stored URL may hold
 * `|`, `{}`, `%zz`, backslashes or raw non-ASCII. A property test holds every accepted value to it.
 */
const URL_TEXT_REFUSED = "\\s\\u0000-\\u001f\\u007f-\\u009f\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069\\ufffe\\uffff";
export const FEED_URL_PATTERN = `^[Hh][Tt][Tt][Pp][Ss]?:[/\\\\]*[^/\\\\?#${URL_TEXT_REFUSED}][^${URL_TEXT_REFUSED}]*$`;

/** The schemes a feedUrl may have, in any case. */
const HTTP_SCHEME = /^https?:/i;

/** UTF-8 length of a well-formed string, without encoding it. */
export function utf8ByteLength(value: string): number {
  let bytes = value.length; // one per UTF-16 code unit, plus the extra ones below
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    // A surrogate pair is 2 code units and 4 bytes: one extra byte per unit.
    if (unit >= 0xd800 && unit <= 0xdfff) bytes += 1;
    else if (unit >= 0x800) bytes += 2;
    else if (unit >= 0x80) bytes += 1;
  }
  return bytes;
}

/** What a URL attribute must be, as error details say it. */
export function urlRulesDetail(name: string): string {
  return `${name} must be an absolute http or https URL of at most ${MAX_FEED_URL_BYTES} bytes in UTF-8, without whitespace, control or format characters (bidi controls, zero-width characters), private-use characters, lone surrogates, line or paragraph separators, or noncharacters.`;
}

/** The feedUrl rules (docs/API.md §5, 12, 15): also what an episode's `mediaUrl` must satisfy (§13). */
export function isValidFeedUrl(value: string): boolean {
  if (value.length > MAX_FEED_URL_BYTES || WHITESPACE.test(value) || hasForbiddenUrlCharacter(value)) return false;
  // Lone surrogates are forbidden characters: what remains is well-formed, so its UTF-8 length can be counted.
  // Each code unit is at least one byte, so only strings with non-ASCII characters need counting.
  if (value.length * 3 > MAX_FEED_URL_BYTES && utf8ByteLength(value) > MAX_FEED_URL_BYTES) return false;
  // The one parse of this URL, without building a URL object (in Workers the object and its getters cost
  // more than the parse): with no leading whitespace or controls (refused above), a URL that starts with an
  // http or https scheme and parses has that protocol, and a host, since the URL standard refuses those
  // schemes without one. A property test holds this to the URL object's own answers.
  return HTTP_SCHEME.test(value) && URL.canParse(value);
}

const feedUrlSchema = z.string().max(MAX_FEED_URL_BYTES).refine(isValidFeedUrl);

/**
 * A subscription resource object in a request that creates one: the single POST's `data` and each
 * bulk `add`'s `data`. Members are checked in this order (docs/API.md §5); read-only and unknown
 * attributes are ignored.
 */
export const subscriptionResourceSchema = z.object({
  type: z.literal(SUBSCRIPTION_TYPE),
  id: guidSchema,
  attributes: z.object({ feedUrl: feedUrlSchema }),
});

/**
 * A subscription resource object in a request that moves a feed: PATCH's `data`, where `attributes`
 * and `feedUrl` may be absent (nothing to change; docs/API.md §9). Bulk `update` requires feedUrl and uses
 * `subscriptionResourceSchema` (docs/API.md §10); both go through `parseFeedMove`.
 */
export const subscriptionPatchSchema = z.object({
  type: z.literal(SUBSCRIPTION_TYPE),
  id: guidSchema,
  attributes: z.object({ feedUrl: feedUrlSchema.optional() }).optional(),
});

export type NewSubscription = { guid: string; feedUrl: string };

/** A feed move: the guid, and the new URL unless the request had none (nothing to change). */
export type FeedMove = { guid: string; feedUrl?: string };

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
      return invalidDocument(
        at,
        missing ? "The document has no data member." : `${member ?? nameOf(base)} must be a JSON object.`,
      );
    case "type":
      if (typeof value === "string") return typeMismatch(at, [SUBSCRIPTION_TYPE], value);
      return invalidResourceObject(
        at,
        missing ? "The resource object has no type." : `type must be the string "${SUBSCRIPTION_TYPE}".`,
      );
    case "id":
      return invalidResourceIdentifier(
        at,
        missing
          ? "The resource object has no id: send the feed's GUID (a UUID)."
          : "id must be a UUID (8-4-4-4-12 hexadecimal digits).",
      );
    case "attributes":
      return invalidAttribute(
        at,
        missing ? "The resource object has no attributes: feedUrl is required." : "attributes must be an object.",
      );
    default:
      return invalidAttribute(at, missing ? "feedUrl is required." : urlRulesDetail("feedUrl"));
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
  const usual = usualSubscriptionResource(resource);
  if (usual) return { ok: true, value: usual };
  const parsed = subscriptionResourceSchema.safeParse(resource);
  if (!parsed.success) return { ok: false, error: validationError(parsed.error.issues[0], resource, base) };
  return { ok: true, value: toNewSubscription(parsed.data) };
}

/**
 * The well-formed resource almost every add sends, recognised without zod: in Workers, where `eval` is
 * not allowed, zod parses without its compiled fast path, and that was the largest per-operation cost of
 * a bulk request. It accepts only what `subscriptionResourceSchema` accepts (a property test holds it to
 * that); anything else, valid or not, goes through the schema, which stays the authority and words errors.
 */
function usualSubscriptionResource(resource: unknown): NewSubscription | undefined {
  if (resource === null || typeof resource !== "object") return undefined;
  const { type, id, attributes } = resource as Record<string, unknown>;
  const guid = usualGuid(id);
  if (type !== SUBSCRIPTION_TYPE || guid === undefined) return undefined;
  if (attributes === null || typeof attributes !== "object" || Array.isArray(attributes)) return undefined;
  const { feedUrl } = attributes as Record<string, unknown>;
  if (typeof feedUrl !== "string" || feedUrl.length > MAX_FEED_URL_BYTES || !isValidFeedUrl(feedUrl)) return undefined;
  return { guid, feedUrl };
}

/** A resource identifier of a subscription: what a feed move checks first, and the shape of a bulk `ref`. */
export const subscriptionRefSchema = z.object({ type: z.literal(SUBSCRIPTION_TYPE), id: guidSchema });

/**
 * Validates a feed move wherever it sits: PATCH's `data` (`feedUrl` optional) or a bulk `update`'s
 * (`feedUrl` required). `base` is the resource object's JSON pointer. With `expectedId` (PATCH's path
 * guid), an id naming another subscription is a 409 at `id`, checked before the attributes (docs/API.md §9).
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
 * (docs/API.md §6); everywhere else `links.unsubscribe` too. Every one has its podcast's relationship (§18).
 */
export function toSubscriptionResource(row: StoredSubscription, links: "full" | "self" = "full") {
  const { type, id, attributes, relationships } = identifiedAttributes(row);
  const self = subscriptionPath(row.guid);
  return {
    type,
    id,
    attributes,
    relationships,
    links: links === "full" ? { self, unsubscribe: unsubscribeLink(row.guid) } : { self },
  };
}

function identifiedAttributes(row: StoredSubscription) {
  return {
    type: SUBSCRIPTION_TYPE,
    id: row.guid,
    attributes: { feedUrl: row.feedUrl, userSubscribedAt: toRfc3339(row.subscribedAt) },
    relationships: podcastRelationships(row.guid),
  };
}

/**
 * A subscription as the change feed reports it (docs/API.md §8): an active one is the list's resource plus
 * `userUnsubscribedAt: null`; a tombstone has its last state and when it ended, and no links.
 */
export function toChangeResource(row: ChangedSubscription) {
  if (row.unsubscribedAt === null) {
    const resource = toSubscriptionResource(row);
    return { ...resource, attributes: { ...resource.attributes, userUnsubscribedAt: null } };
  }
  const { type, id, attributes, relationships } = identifiedAttributes(row);
  return {
    type,
    id,
    attributes: { ...attributes, userUnsubscribedAt: toRfc3339(row.unsubscribedAt) },
    relationships,
  };
}

// ---------------------------------------------------------------------------------------------
// Errors whose wording the API fixes (docs/API.md §7)

export function subscriptionNotFound(): ApiError {
  return new ApiError({
    status: 404,
    title: "Subscription not found",
    detail: "The requested subscription does not exist for the user.",
  });
}

/** The bulk 409 element, exactly as docs/API.md §6 describes it. */
export function alreadySubscribed(operationPointer: string, subscription: NewSubscription): ErrorObject {
  return toErrorObject({
    status: 409,
    title: "Already Subscribed",
    detail: "User is already subscribed to this feed.",
    source: { pointer: operationPointer },
    meta: { feedUrl: subscription.feedUrl, guid: subscription.guid },
  });
}

/** A write that would store more than the quota (docs/API.md §12); inline in bulk at the operation. */
export function subscriptionLimitReached(operationPointer?: string): ErrorObject {
  return toErrorObject({
    status: 403,
    title: "Subscription limit reached",
    detail: `A user may store at most ${MAX_STORED_SUBSCRIPTIONS} subscriptions, unsubscribed ones included.`,
    ...(operationPointer === undefined ? {} : { source: { pointer: operationPointer } }),
    meta: { maxSubscriptions: MAX_STORED_SUBSCRIPTIONS },
  });
}

/** Why a write was refused after tombstones were purged: the count quota (which wins) or the storage budget. */
export function subscriptionRefused(result: Refused, operationPointer?: string): ErrorObject {
  return result.kind === "limit" ? subscriptionLimitReached(operationPointer) : storageLimitReached(operationPointer);
}

/** The 404 inline in bulk results, at the operation. */
export function subscriptionNotFoundAt(operationPointer: string): ErrorObject {
  return { ...subscriptionNotFound().errors[0], source: { pointer: operationPointer } };
}
