/**
 * What every call of the client shares, whatever the resource: the bearer token, the JSON:API media
 * types, the read-your-writes bookmark, conditional reads (`If-None-Match`) and error decoding. A
 * resource module (./subscriptions.ts; episodes and app passwords later) builds its calls on `Transport`.
 */
import type { components } from "./openapi.js";

export type ErrorObject = components["schemas"]["ErrorObject"];

export const JSONAPI_MEDIA_TYPE = "application/vnd.api+json";
export const ATOMIC_EXT_URI = "https://jsonapi.org/ext/atomic";
/** The bulk endpoint's media type, for both Content-Type and Accept. */
export const ATOMIC_MEDIA_TYPE = `${JSONAPI_MEDIA_TYPE};ext="${ATOMIC_EXT_URI}"`;

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
  /**
   * Keep the last JSON answers of GET requests (at most this many) with their `ETag`, and ask again with
   * `If-None-Match`: while nothing changed the server answers `304` without a body and the kept answer is
   * used. 0 turns it off. Default: 100.
   */
  conditionalReads?: number;
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

/**
 * A call of several requests (`sync`, `allSubscriptions`, `bulk`) that failed part way. `partial` is what
 * the requests before the failure achieved: apply or keep it, then resume from it (the `syncToken` it
 * holds, or the operations after `partial.results`). `cause` is the failure: a SubscriptionsApiError
 * (`cause.status`, `cause.retryAfter`), or whatever `fetch` threw.
 */
export class IncompleteError<Partial> extends Error {
  readonly partial: Partial;
  override readonly cause: unknown;

  constructor(partial: Partial, cause: unknown) {
    super(`Incomplete: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = "IncompleteError";
    this.partial = partial;
    this.cause = cause;
  }
}

export interface Call {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  /** Content-Type and Accept. */
  mediaType?: string;
  /** Accept, when it differs from `mediaType`. */
  accept?: string;
  /** Sent as JSON, unless `mediaType` is not JSON:API: then sent as is. */
  body?: unknown;
}

export interface Answer {
  status: number;
  /** The parsed JSON body, the text of any other body, or undefined without one. */
  body: unknown;
}

export type Transport = (call: Call) => Promise<Answer>;

export function createTransport(options: ClientOptions): Transport {
  const base = options.baseUrl.replace(/\/+$/, "");
  const send = options.fetch ?? ((request: Request) => fetch(request));
  const useBookmarks = options.bookmarks ?? true;
  const keep = options.conditionalReads ?? 100;
  /** GET path -> its last answer and ETag, oldest first (a Map keeps insertion order). */
  const kept = new Map<string, { etag: string; answer: Answer }>();
  let bookmark: string | undefined;

  return async ({ method, path, mediaType = JSONAPI_MEDIA_TYPE, accept = mediaType, body }) => {
    const token = typeof options.token === "function" ? await options.token() : options.token;
    const headers = new Headers({ Authorization: `Bearer ${token}`, Accept: accept });
    if (body !== undefined) headers.set("Content-Type", mediaType);
    if (useBookmarks && bookmark) headers.set("X-D1-Bookmark", bookmark);
    // The server's tag covers the user and the URL: another user's tag never matches, so paths are keys enough.
    const previous = method === "GET" ? kept.get(path) : undefined;
    if (previous) headers.set("If-None-Match", previous.etag);
    const isJsonApi = mediaType.startsWith(JSONAPI_MEDIA_TYPE);
    const payload = body === undefined ? undefined : isJsonApi ? JSON.stringify(body) : (body as BodyInit);
    const response = await send(new Request(`${base}${path}`, { method, headers, body: payload }));
    const next = response.headers.get("X-D1-Bookmark");
    if (next) bookmark = next;
    if (response.status === 304 && previous) {
      kept.delete(path);
      kept.set(path, previous);
      return previous.answer;
    }
    if (!response.ok) throw await toError(response);
    const answer = { status: response.status, body: await bodyOf(response) };
    const etag = response.headers.get("ETag");
    if (method === "GET" && etag && keep > 0) {
      kept.delete(path);
      kept.set(path, { etag, answer });
      if (kept.size > keep) kept.delete(kept.keys().next().value as string);
    }
    return answer;
  };
}

async function bodyOf(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === "") return undefined;
  const type = response.headers.get("Content-Type") ?? "";
  return /^application\/(.+\+)?json\b|^application\/vnd\.api\+json/.test(type) ? JSON.parse(text) : text;
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

/** What a change feed walk returns: each resource once with its latest state, and the token to store. */
export interface ChangeFeedResult<Item> {
  changes: Item[];
  syncToken: string;
}

/**
 * Follows a resource's change feed (`<collection>?filter[since]=<token>`) until `links.next` is null, keeping
 * each resource once, at the place of its latest change. Throws IncompleteError when a page fails: its
 * `partial` holds the pages read (apply them and store their token, or retry from the old token).
 */
export async function followChangeFeed<Item extends { id: string }>(
  call: Transport,
  collectionPath: string,
  syncToken: string,
  pageSize: number,
): Promise<ChangeFeedResult<Item>> {
  const latest = new Map<string, Item>();
  let token = syncToken;
  // The server's links carry literal brackets; a path it gave is followed as is.
  let next: string | null = `${collectionPath}?filter[since]=${encodeURIComponent(syncToken)}&page[size]=${pageSize}`;
  while (next !== null) {
    let page: { data: Item[]; links: { next: string | null }; meta: { syncToken: string } };
    try {
      page = (await call({ method: "GET", path: next })).body as typeof page;
    } catch (error) {
      throw new IncompleteError<ChangeFeedResult<Item>>({ changes: [...latest.values()], syncToken: token }, error);
    }
    for (const change of page.data) {
      latest.delete(change.id);
      latest.set(change.id, change);
    }
    token = page.meta.syncToken;
    next = page.links.next;
  }
  return { changes: [...latest.values()], syncToken: token };
}
