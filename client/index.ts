/**
 * A typed client of the Podcast Subscriptions API for podcast apps.
 *
 * Its types are those of the OpenAPI document: both come from the zod schemas in
 * `src/openapi/schemas.ts` (request schemas are the ones the routes validate with). Those imports
 * are type-only, so bundling this file pulls in no zod and no server code: only `fetch`.
 *
 *   const api = createSubscriptionsClient({ baseUrl: "https://subs.example.com", token: () => session.accessToken });
 *   await api.subscribe({ guid, feedUrl });
 *   for await (const subscription of api.allSubscriptions()) show(subscription);
 *   const { changes, syncToken } = await api.sync(storedToken); // then store syncToken
 */
import type {
  AtomicResult,
  Change,
  ChangeFeedDocument,
  ErrorObject,
  OperationsResultDocument,
  Subscription,
  SubscriptionDocument,
  SubscriptionListDocument,
} from "../src/openapi/schemas";

export type { AtomicResult, Change, ChangeFeedDocument, ErrorObject, Subscription, SubscriptionListDocument };

export const JSONAPI_MEDIA_TYPE = "application/vnd.api+json";
export const ATOMIC_EXT_URI = "https://jsonapi.org/ext/atomic";
/** The bulk endpoint's media type, for both Content-Type and Accept. */
export const ATOMIC_MEDIA_TYPE = `${JSONAPI_MEDIA_TYPE};ext="${ATOMIC_EXT_URI}"`;
/** Operations per bulk request (the server answers 413 above it); `bulkSubscribe` splits larger lists. */
export const MAX_OPERATIONS_PER_REQUEST = 100;

export interface ClientOptions {
  /** Where the API lives, e.g. `https://subscriptions.example.com` (a path prefix is kept). */
  baseUrl: string;
  /** The user's bearer token (a JWT), or a function returning a fresh one for each request. */
  token: string | (() => string | Promise<string>);
  /** The fetch to use (default: the global one). Tests pass one that calls the worker directly. */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * Send back the last `X-D1-Bookmark` the server gave, so that every request reads the user's own
   * earlier writes even from a database replica. Default: true.
   */
  bookmarks?: boolean;
}

export interface NewSubscription {
  /** The feed's GUID: a UUID, e.g. the podcast's `<podcast:guid>`. */
  guid: string;
  /** Absolute http(s) URL of the feed. */
  feedUrl: string;
}

export interface PageRequest {
  /** 1-based page number (default 1). */
  number?: number;
  /** Subscriptions per page, 1 to 100 (default 25). */
  size?: number;
}

export interface SubscribeResult {
  /** True when this call subscribed (201); false when the user already was (200, stored resource unchanged). */
  created: boolean;
  subscription: Subscription;
}

/** One operation of `bulk()`: subscribe, move a feed, or unsubscribe. */
export type BulkOperation =
  | ({ op: "add" } & NewSubscription)
  | ({ op: "update" } & NewSubscription)
  | { op: "remove"; guid: string };

export interface SyncResult {
  /** What changed since the token, oldest change first, each subscription once with its current state. */
  changes: Change[];
  /** Store it and pass it to the next `sync()`. */
  syncToken: string;
}

export interface BulkSubscribeResult {
  /** One result per input item, in the same order: `data` (subscribed) or `errors` (e.g. 409 Already Subscribed). */
  results: AtomicResult[];
  succeeded: number;
  failed: number;
}

/** A response with an error status. `errors` are the JSON:API error objects of the body. */
export class SubscriptionsApiError extends Error {
  readonly status: number;
  readonly errors: ErrorObject[];
  /** The server's `X-Request-Id`: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** Seconds to wait before retrying (429, 503), from `Retry-After`. */
  readonly retryAfter: number | undefined;

  constructor(status: number, errors: ErrorObject[], headers: Headers) {
    const first = errors[0];
    super(first ? `${status} ${first.title}: ${first.detail}` : `HTTP ${status}`);
    this.name = "SubscriptionsApiError";
    this.status = status;
    this.errors = errors;
    this.requestId = headers.get("X-Request-Id") ?? undefined;
    const retryAfter = Number(headers.get("Retry-After") ?? Number.NaN);
    this.retryAfter = Number.isFinite(retryAfter) ? retryAfter : undefined;
  }
}

export interface SubscriptionsClient {
  /** One page of subscriptions, oldest first, with pagination `links` and `meta.total`. */
  listSubscriptions(options?: { page?: PageRequest }): Promise<SubscriptionListDocument>;
  /** Every subscription, following `links.next` page by page. */
  allSubscriptions(options?: { pageSize?: number }): AsyncGenerator<Subscription>;
  /** One subscription. Throws SubscriptionsApiError with status 404 when the user has no such subscription. */
  getSubscription(guid: string): Promise<Subscription>;
  /** Subscribes (idempotent). */
  subscribe(subscription: NewSubscription): Promise<SubscribeResult>;
  /** Unsubscribes. Throws SubscriptionsApiError with status 404 when the user was not subscribed. */
  unsubscribe(guid: string): Promise<void>;
  /**
   * Subscribes to many feeds: one request per 100 feeds (POST /v1/operations, Atomic Operations).
   * Items succeed or fail one by one; a failed item's `source.pointer` counts from the start of its request.
   */
  bulkSubscribe(subscriptions: readonly NewSubscription[]): Promise<BulkSubscribeResult>;
  /**
   * Any mix of adds, feed moves and removes, in order, one request per 100 operations. A remove's
   * result is `{}`; an update or remove of a subscription the user does not have fails with 404.
   */
  bulk(operations: readonly BulkOperation[]): Promise<BulkSubscribeResult>;
  /** Unsubscribes from many feeds (bulk `remove`). */
  bulkRemove(guids: readonly string[]): Promise<BulkSubscribeResult>;
  /**
   * What changed since `syncToken` (default "0": everything), deletions included: follows `links.next`
   * until the feed is exhausted. A tombstone (`userUnsubscribedAt` set) means: remove it locally.
   */
  sync(syncToken?: string, options?: { pageSize?: number }): Promise<SyncResult>;
  /** Moves a feed to a new URL (PATCH); the guid and userSubscribedAt stay. 404 when not subscribed. */
  moveFeed(guid: string, feedUrl: string): Promise<Subscription>;
}

interface Call {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  /** Content-Type and Accept. */
  mediaType?: string;
  body?: unknown;
}

export function createSubscriptionsClient(options: ClientOptions): SubscriptionsClient {
  const base = options.baseUrl.replace(/\/+$/, "");
  const send = options.fetch ?? ((request: Request) => fetch(request));
  const useBookmarks = options.bookmarks ?? true;
  let bookmark: string | undefined;

  async function call({ method, path, mediaType = JSONAPI_MEDIA_TYPE, body }: Call): Promise<Response> {
    const token = typeof options.token === "function" ? await options.token() : options.token;
    const headers = new Headers({ Authorization: `Bearer ${token}`, Accept: mediaType });
    if (body !== undefined) headers.set("Content-Type", mediaType);
    if (useBookmarks && bookmark) headers.set("X-D1-Bookmark", bookmark);
    const response = await send(
      new Request(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }),
    );
    const next = response.headers.get("X-D1-Bookmark");
    if (next) bookmark = next;
    if (!response.ok) throw await toError(response);
    return response;
  }

  async function toError(response: Response): Promise<SubscriptionsApiError> {
    let errors: ErrorObject[] = [];
    try {
      const document = (await response.json()) as { errors?: ErrorObject[] };
      if (Array.isArray(document.errors)) errors = document.errors;
    } catch {
      // not a JSON:API error document
    }
    return new SubscriptionsApiError(response.status, errors, response.headers);
  }

  const subscriptionPath = (guid: string) => `/v1/subscriptions/${encodeURIComponent(guid)}`;
  const resource = ({ guid, feedUrl }: NewSubscription) => ({
    type: "subscription",
    id: guid,
    attributes: { feedUrl },
  });

  async function listSubscriptions({ page }: { page?: PageRequest } = {}): Promise<SubscriptionListDocument> {
    const query = new URLSearchParams();
    if (page?.number !== undefined) query.set("page[number]", String(page.number));
    if (page?.size !== undefined) query.set("page[size]", String(page.size));
    const search = query.toString() === "" ? "" : `?${query}`;
    const response = await call({ method: "GET", path: `/v1/subscriptions${search}` });
    return (await response.json()) as SubscriptionListDocument;
  }

  const toOperation = (operation: BulkOperation) =>
    operation.op === "remove"
      ? { op: "remove", ref: { type: "subscription", id: operation.guid } }
      : { op: operation.op, data: resource(operation) };

  async function bulk(operations: readonly BulkOperation[]): Promise<BulkSubscribeResult> {
    const results: AtomicResult[] = [];
    let succeeded = 0;
    let failed = 0;
    for (let start = 0; start < operations.length; start += MAX_OPERATIONS_PER_REQUEST) {
      const chunk = operations.slice(start, start + MAX_OPERATIONS_PER_REQUEST);
      const response = await call({
        method: "POST",
        path: "/v1/operations",
        mediaType: ATOMIC_MEDIA_TYPE,
        body: { "atomic:operations": chunk.map(toOperation) },
      });
      const document = (await response.json()) as OperationsResultDocument;
      results.push(...document["atomic:results"]);
      succeeded += document.meta.succeeded;
      failed += document.meta.failed;
    }
    return { results, succeeded, failed };
  }

  return {
    listSubscriptions,

    async *allSubscriptions({ pageSize = 100 } = {}) {
      for (let number = 1; ; number++) {
        const page = await listSubscriptions({ page: { number, size: pageSize } });
        yield* page.data;
        if (page.links.next === null) return;
      }
    },

    async getSubscription(guid) {
      const response = await call({ method: "GET", path: subscriptionPath(guid) });
      return ((await response.json()) as SubscriptionDocument).data;
    },

    async subscribe(subscription) {
      const response = await call({
        method: "POST",
        path: "/v1/subscriptions",
        body: { data: resource(subscription) },
      });
      const document = (await response.json()) as SubscriptionDocument;
      return { created: response.status === 201, subscription: document.data };
    },

    async unsubscribe(guid) {
      await call({ method: "DELETE", path: subscriptionPath(guid) });
    },

    bulkSubscribe: (subscriptions) => bulk(subscriptions.map((item) => ({ op: "add", ...item }))),

    bulk,

    bulkRemove: (guids) => bulk(guids.map((guid) => ({ op: "remove", guid }))),

    async sync(syncToken = "0", { pageSize = 100 } = {}) {
      const changes: Change[] = [];
      // The server's links carry literal brackets; a path it gave is followed as is.
      let next: string | null =
        `/v1/subscriptions?filter[since]=${encodeURIComponent(syncToken)}&page[size]=${pageSize}`;
      let token = syncToken;
      while (next !== null) {
        const response = await call({ method: "GET", path: next });
        const page = (await response.json()) as ChangeFeedDocument;
        changes.push(...page.data);
        token = page.meta.syncToken;
        next = page.links.next;
      }
      return { changes, syncToken: token };
    },

    async moveFeed(guid, feedUrl) {
      const response = await call({
        method: "PATCH",
        path: subscriptionPath(guid),
        body: { data: resource({ guid, feedUrl }) },
      });
      return ((await response.json()) as SubscriptionDocument).data;
    },
  };
}
