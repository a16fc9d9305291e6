/**
 * The subscription calls of the client: one subscription at a time, the list, the change feed, bulk
 * operations and OPML. Built on the shared transport (./transport.ts).
 */
import { OPML_MEDIA_TYPE } from "../../src/opml/media-types.js";
import type { components } from "./openapi.js";
import {
  ATOMIC_MEDIA_TYPE,
  type ChangeFeedResult,
  followChangeFeed,
  IncompleteError,
  JSONAPI_MEDIA_TYPE,
  type Transport,
} from "./transport.js";

type Schemas = components["schemas"];
export type Subscription = Schemas["Subscription"];
/** A change-feed item: an active subscription (`userUnsubscribedAt: null`) or a tombstone (remove it). */
export type Change = Schemas["ActiveChange"] | Schemas["TombstoneChange"];
export type ChangeFeedDocument = Schemas["ChangeFeedDocument"];
export type SubscriptionListDocument = Schemas["SubscriptionListDocument"];
export type SubscriptionDocument = Schemas["SubscriptionDocument"];
/**
 * What the service knows of a subscription's podcast (title, author, ..., `status`), from fetching the feed
 * itself; its id is the subscription's guid. Unknown facts are null; `pending` until the first fetch.
 */
export type Podcast = Schemas["Podcast"];
type PodcastDocument = Schemas["PodcastDocument"];
/** One element of a bulk answer: `data` (succeeded, a remove's is `{}`) or `errors` (failed). */
export type AtomicResult = Schemas["AtomicResult"];
type OperationsResultDocument = Schemas["OperationsResultDocument"];
type OpmlImportDocument = Schemas["OpmlImportDocument"];

/** OPML import and export: one path, GET exports, POST imports. */
const OPML_PATH = "/v1/subscriptions.opml";
const COLLECTION_PATH = "/v1/subscriptions";
/** Operations per bulk request (the server answers 413 above it); `bulk` splits larger lists. */
export const MAX_OPERATIONS_PER_REQUEST = 100;

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

/**
 * What an OPML import did (`meta` of POST /v1/subscriptions.opml): `imported` (created or revived),
 * `alreadySubscribed`, and the outlines `skipped` with their reason.
 */
export type OpmlImportResult = OpmlImportDocument["meta"];

/** One operation of `bulk()`: subscribe, move a feed, or unsubscribe. */
export type BulkOperation =
  | ({ op: "add" } & NewSubscription)
  | ({ op: "update" } & NewSubscription)
  | { op: "remove"; guid: string };

/**
 * What changed after the token, each subscription once, with its latest state, in the order of those latest
 * changes (apply them in order with `applyChanges`), and the token to store and pass to the next `sync()`.
 */
export type SyncResult = ChangeFeedResult<Change>;

export interface AllSubscriptions {
  /** Every active subscription, by `userSubscribedAt` (equal times: by their latest change). */
  subscriptions: Subscription[];
  /** The change-feed position of this listing: `sync(syncToken)` later returns only what changed since. */
  syncToken: string;
}

export interface BulkResult {
  /** One result per operation, in the same order: `data` (succeeded; `{}` for a remove) or `errors`. */
  results: AtomicResult[];
  succeeded: number;
  failed: number;
}

/** @deprecated The name of `BulkResult` before `bulk()` took updates and removes. */
export type BulkSubscribeResult = BulkResult;

export interface SubscriptionCalls {
  /**
   * One page of subscriptions, oldest first, with pagination `links` and `meta.total`. Pages are numbered
   * over the list as it is when each page is read: when a subscription is added or removed between two
   * page reads (by this device or another), the later pages shift, so walking the pages by number can skip
   * a subscription or return one twice. For every subscription, use `allSubscriptions()`. With
   * `include: "podcast"`, the document's `included` holds the podcasts of the page's subscriptions (same ids).
   */
  listSubscriptions(options?: { page?: PageRequest; include?: "podcast" }): Promise<SubscriptionListDocument>;
  /**
   * Every active subscription, exactly once, however other devices change them meanwhile: walks the change
   * feed from the beginning (`sync("0")`) and keeps each subscription's latest state. Also returns the
   * `syncToken` to continue with `sync()`. Throws IncompleteError when a page fails: its `partial` holds
   * what was read so far; resume with `sync(partial.syncToken)` and `applyChanges`.
   */
  allSubscriptions(options?: { pageSize?: number }): Promise<AllSubscriptions>;
  /** One subscription. Throws SubscriptionsApiError with status 404 when the user has no such subscription. */
  getSubscription(guid: string): Promise<Subscription>;
  /** One subscription with its podcast, in one request (`include=podcast`). 404 as getSubscription. */
  getSubscriptionWithPodcast(guid: string): Promise<{ subscription: Subscription; podcast: Podcast }>;
  /**
   * What the service knows of one subscription's podcast. Its changes take no change number: `sync()` does not
   * report them, so read it again (or list with `include: "podcast"`) to refresh titles. 404 as getSubscription.
   */
  getPodcast(guid: string): Promise<Podcast>;
  /** Subscribes (idempotent). */
  subscribe(subscription: NewSubscription): Promise<SubscribeResult>;
  /** Unsubscribes. Throws SubscriptionsApiError with status 404 when the user was not subscribed. */
  unsubscribe(guid: string): Promise<void>;
  /** Moves a feed to a new URL (PATCH); the guid and userSubscribedAt stay. 404 when not subscribed. */
  moveFeed(guid: string, feedUrl: string): Promise<Subscription>;
  /**
   * Any mix of adds, feed moves and removes, in order, one request (POST /v1/operations) per 100
   * operations. Each operation succeeds or fails on its own; a failed one's `source.pointer` counts from
   * the start of its request. When a request fails as a whole (network, 503: that request wrote nothing),
   * throws IncompleteError whose `partial` holds the results of the requests before it: resume with
   * `bulk(operations.slice(error.partial.results.length))`.
   */
  bulk(operations: readonly BulkOperation[]): Promise<BulkResult>;
  /** Subscribes to many feeds: `bulk` with `add` operations (an existing one fails with 409). */
  bulkSubscribe(subscriptions: readonly NewSubscription[]): Promise<BulkResult>;
  /** Unsubscribes from many feeds: `bulk` with `remove` operations (one not subscribed fails with 404). */
  bulkRemove(guids: readonly string[]): Promise<BulkResult>;
  /**
   * What changed since `syncToken` (default "0": everything), deletions included: follows `links.next`
   * until the feed is exhausted. Apply the changes with `applyChanges`, then store `syncToken`. Throws
   * IncompleteError when a page fails: `partial` is a SyncResult for the pages read (apply it and store its
   * token, or just retry `sync` from the old token).
   */
  sync(syncToken?: string, options?: { pageSize?: number }): Promise<SyncResult>;
  /** The user's active subscriptions as an OPML 2.0 document (text), each outline with its guid. */
  exportOpml(): Promise<string>;
  /**
   * Merges the feeds of an OPML document (text or UTF-8 bytes, at most 1000 feeds and 1 MiB) into the
   * user's subscriptions; nothing is removed.
   */
  importOpml(opml: string | Uint8Array | ArrayBuffer): Promise<OpmlImportResult>;
}

/**
 * Applies change-feed items to a device's copy of the subscriptions (guid -> subscription), in order:
 * an active one is stored (replacing the old state), a tombstone removes it. Returns the same map.
 */
export function applyChanges(local: Map<string, Subscription>, changes: readonly Change[]): Map<string, Subscription> {
  for (const change of changes) {
    if (change.attributes.userUnsubscribedAt === null && "links" in change) {
      const { feedUrl, userSubscribedAt } = change.attributes;
      local.delete(change.id);
      local.set(change.id, {
        type: change.type,
        id: change.id,
        attributes: { feedUrl, userSubscribedAt },
        relationships: change.relationships,
        links: change.links,
      });
    } else {
      local.delete(change.id);
    }
  }
  return local;
}

/** Subscriptions in list order: by `userSubscribedAt`, equal times in the order given (a stable sort). */
function inListOrder(local: Map<string, Subscription>): Subscription[] {
  return [...local.values()].sort((a, b) =>
    a.attributes.userSubscribedAt < b.attributes.userSubscribedAt
      ? -1
      : a.attributes.userSubscribedAt > b.attributes.userSubscribedAt
        ? 1
        : 0,
  );
}

export function subscriptionCalls(call: Transport): SubscriptionCalls {
  const subscriptionPath = (guid: string) => `${COLLECTION_PATH}/${encodeURIComponent(guid)}`;
  const resource = ({ guid, feedUrl }: NewSubscription) => ({
    type: "subscription",
    id: guid,
    attributes: { feedUrl },
  });
  const toOperation = (operation: BulkOperation) =>
    operation.op === "remove"
      ? { op: "remove", ref: { type: "subscription", id: operation.guid } }
      : { op: operation.op, data: resource(operation) };

  async function bulk(operations: readonly BulkOperation[]): Promise<BulkResult> {
    const done: BulkResult = { results: [], succeeded: 0, failed: 0 };
    for (let start = 0; start < operations.length; start += MAX_OPERATIONS_PER_REQUEST) {
      const chunk = operations.slice(start, start + MAX_OPERATIONS_PER_REQUEST);
      let document: OperationsResultDocument;
      try {
        const answer = await call({
          method: "POST",
          path: "/v1/operations",
          mediaType: ATOMIC_MEDIA_TYPE,
          body: { "atomic:operations": chunk.map(toOperation) },
        });
        document = answer.body as OperationsResultDocument;
      } catch (error) {
        throw new IncompleteError<BulkResult>(done, error);
      }
      done.results.push(...document["atomic:results"]);
      done.succeeded += document.meta.succeeded;
      done.failed += document.meta.failed;
    }
    return done;
  }

  const sync = (syncToken = "0", { pageSize = 100 } = {}): Promise<SyncResult> =>
    followChangeFeed<Change>(call, COLLECTION_PATH, syncToken, pageSize);

  return {
    async listSubscriptions({ page, include } = {}) {
      const query = new URLSearchParams();
      if (page?.number !== undefined) query.set("page[number]", String(page.number));
      if (page?.size !== undefined) query.set("page[size]", String(page.size));
      if (include !== undefined) query.set("include", include);
      const search = query.toString() === "" ? "" : `?${query}`;
      return (await call({ method: "GET", path: `${COLLECTION_PATH}${search}` })).body as SubscriptionListDocument;
    },

    async allSubscriptions({ pageSize = 100 } = {}) {
      try {
        const { changes, syncToken } = await sync("0", { pageSize });
        return { subscriptions: inListOrder(applyChanges(new Map(), changes)), syncToken };
      } catch (error) {
        if (!(error instanceof IncompleteError)) throw error;
        const { changes, syncToken } = (error as IncompleteError<SyncResult>).partial;
        const partial = { subscriptions: inListOrder(applyChanges(new Map(), changes)), syncToken };
        throw new IncompleteError<AllSubscriptions>(partial, error.cause);
      }
    },

    async getSubscription(guid) {
      return ((await call({ method: "GET", path: subscriptionPath(guid) })).body as SubscriptionDocument).data;
    },

    async getSubscriptionWithPodcast(guid) {
      const answer = await call({ method: "GET", path: `${subscriptionPath(guid)}?include=podcast` });
      const { data, included } = answer.body as SubscriptionDocument;
      const podcast = included?.find((item) => item.id === data.id);
      if (!podcast) throw new Error(`The answer for ${guid} included no podcast`);
      return { subscription: data, podcast };
    },

    async getPodcast(guid) {
      return ((await call({ method: "GET", path: `${subscriptionPath(guid)}/podcast` })).body as PodcastDocument).data;
    },

    async subscribe(subscription) {
      const answer = await call({ method: "POST", path: COLLECTION_PATH, body: { data: resource(subscription) } });
      return { created: answer.status === 201, subscription: (answer.body as SubscriptionDocument).data };
    },

    async unsubscribe(guid) {
      await call({ method: "DELETE", path: subscriptionPath(guid) });
    },

    async moveFeed(guid, feedUrl) {
      const answer = await call({
        method: "PATCH",
        path: subscriptionPath(guid),
        body: { data: resource({ guid, feedUrl }) },
      });
      return (answer.body as SubscriptionDocument).data;
    },

    bulk,
    bulkSubscribe: (subscriptions) => bulk(subscriptions.map((item) => ({ op: "add", ...item }))),
    bulkRemove: (guids) => bulk(guids.map((guid) => ({ op: "remove", guid }))),
    sync,

    async exportOpml() {
      return (await call({ method: "GET", path: OPML_PATH, accept: OPML_MEDIA_TYPE })).body as string;
    },

    async importOpml(opml) {
      const answer = await call({
        method: "POST",
        path: OPML_PATH,
        mediaType: OPML_MEDIA_TYPE,
        accept: JSONAPI_MEDIA_TYPE,
        body: opml,
      });
      return (answer.body as OpmlImportDocument).meta;
    },
  };
}
