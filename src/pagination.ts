import type { Context, MiddlewareHandler } from "hono";
import * as z from "zod";
import type { AppEnv } from "./env";
import { ApiError } from "./jsonapi";

export const DEFAULT_PAGE_SIZE = 25;
export const MAX_PAGE_SIZE = 100;
/** Keeps the row offset an exact integer; such pages are simply empty. */
export const MAX_PAGE_NUMBER = Math.floor(Number.MAX_SAFE_INTEGER / MAX_PAGE_SIZE);

export interface PageParams {
  number: number;
  size: number;
}

/** The change feed's parameters (docs/API.md §8): changes after the token `since`, `size` at most. */
export interface ChangeParams {
  since: number;
  size: number;
}

/** What a read of subscriptions adds to them (docs/API.md §3, §18): `include=podcast`, or nothing (absent). */
export interface IncludeParameter {
  include?: "podcast";
}

/** What a collection request asks for: a page of the list, or a page of the change feed, with their podcasts or not. */
export type CollectionQuery = (({ kind: "page" } & PageParams) | ({ kind: "changes" } & ChangeParams)) &
  IncludeParameter;

const PAGE_NUMBER = "page[number]";
const PAGE_SIZE = "page[size]";
const SINCE = "filter[since]";
const SINCE_EXCLUSIVE = "filter[since] excludes page[number]";
const INCLUDE = "include";
/** The one relationship path `include` names (docs/API.md §18); any other value, a list or a repeat is refused. */
const PODCAST_INCLUDE = "podcast";
const includeSchema = z.literal(PODCAST_INCLUDE).optional();

/** Decimal digits only: `1.5`, `1e3`, `+2`, ` 3` and the empty string are all refused. */
const decimal = z
  .string()
  .regex(/^[0-9]+$/)
  .transform(Number);

/**
 * A sync token as clients send it: `0` or a change number this server returned, decimal, at most 15
 * digits (an exact integer), without leading zeros. Whether it is past the user's latest change is
 * known only after reading the user's stats (`invalidSyncToken`).
 */
export const syncTokenSchema = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,14})$/)
  .transform(Number);

/**
 * Query parameters of the collection (docs/API.md §3 and 8): `page[number]` and `page[size]` for the list,
 * or `filter[since]` and `page[size]` for the change feed. Names JSON:API reserves (`include`, `sort`,
 * `fields[...]`, other `filter[...]`, other `page[...]`, any all-lowercase name) are refused; names with
 * another character (camelCase, implementation-specific) are ignored.
 */
export const pageQuerySchema = z
  .object({
    [PAGE_NUMBER]: decimal.pipe(z.number().int().min(1).max(MAX_PAGE_NUMBER)).optional(),
    [PAGE_SIZE]: decimal.pipe(z.number().int().min(1).max(MAX_PAGE_SIZE)).optional(),
    [SINCE]: syncTokenSchema.optional(),
    [INCLUDE]: includeSchema,
  })
  .catchall(z.unknown())
  .superRefine((query, ctx) => {
    if (query[SINCE] !== undefined && query[PAGE_NUMBER] !== undefined) {
      ctx.addIssue({ code: "custom", path: [PAGE_NUMBER], message: SINCE_EXCLUSIVE });
    }
    for (const name of Object.keys(query)) {
      if (name === PAGE_NUMBER || name === PAGE_SIZE || name === SINCE || name === INCLUDE) continue;
      if (isReservedParameter(name)) ctx.addIssue({ code: "custom", path: [name], message: "reserved" });
    }
  })
  .transform((query): CollectionQuery => {
    const size = query[PAGE_SIZE] ?? DEFAULT_PAGE_SIZE;
    const since = query[SINCE];
    const include: IncludeParameter = query[INCLUDE] === undefined ? {} : { include: query[INCLUDE] };
    return since === undefined
      ? { kind: "page", number: query[PAGE_NUMBER] ?? 1, size, ...include }
      : { kind: "changes", since, size, ...include };
  });

/**
 * Query parameters of a collection that is only a change feed (docs/API.md §13: `GET /v1/episodes`):
 * `filter[since]` (default `0`, the whole history) and `page[size]`; `page[number]` is refused with the other
 * reserved names.
 */
export const changeFeedQuerySchema = z
  .object({
    [PAGE_SIZE]: decimal.pipe(z.number().int().min(1).max(MAX_PAGE_SIZE)).optional(),
    [SINCE]: syncTokenSchema.optional(),
  })
  .catchall(z.unknown())
  .superRefine((query, ctx) => {
    for (const name of Object.keys(query)) {
      if (name === PAGE_SIZE || name === SINCE) continue;
      if (isReservedParameter(name)) ctx.addIssue({ code: "custom", path: [name], message: "reserved" });
    }
  })
  .transform((query): ChangeParams => ({ since: query[SINCE] ?? 0, size: query[PAGE_SIZE] ?? DEFAULT_PAGE_SIZE }));

/** A change feed's query, validated (`c.req.valid("query")`): the usual one without zod, as `collectionQuery`. */
export const changeFeedQuery: MiddlewareHandler<AppEnv, string, { out: { query: ChangeParams } }> = async (c, next) => {
  const usual = usualCollectionQuery(c.req.url);
  c.req.addValidatedData("query", usual?.kind === "changes" ? usual : validatedQuery(c, changeFeedQuerySchema));
  await next();
};

/**
 * The collection's query, validated (`c.req.valid("query")`): the usual one recognised by
 * `usualCollectionQuery`, anything else by `pageQuerySchema`, which stays the authority and words errors.
 */
export const collectionQuery: MiddlewareHandler<AppEnv, string, { out: { query: CollectionQuery } }> = async (
  c,
  next,
) => {
  c.req.addValidatedData("query", usualCollectionQuery(c.req.url) ?? validatedQuery(c, pageQuerySchema));
  await next();
};

function validatedQuery<T>(c: Context<AppEnv>, schema: z.ZodType<T>): T {
  // The query as Hono's validators present it: a name given once maps to its value, a repeated one to all.
  const query = Object.fromEntries(
    Object.entries(c.req.queries()).map(([name, values]) => [name, values.length === 1 ? values[0] : values]),
  );
  const result = schema.safeParse(query);
  if (!result.success) throw pageQueryError(result.error);
  return result.data;
}

const DIGITS = /^[0-9]{1,15}$/;
const SYNC_TOKEN = /^(0|[1-9][0-9]{0,14})$/;

/**
 * The query almost every collection request sends (nothing, or `page[number]`/`filter[since]` and
 * `page[size]` once each, in range), read straight from the URL without zod: in Workers, where `eval` is not
 * allowed, zod parses without its compiled fast path, and validating the query was the largest cost of a
 * list request after the response itself. It answers only what `pageQuerySchema` answers for the same query
 * (a property test holds it to that); anything else (other names, repeats, `+`, errors) is undefined and
 * goes through the schema.
 */
export function usualCollectionQuery(url: string): CollectionQuery | undefined {
  const start = url.indexOf("?");
  let number: string | undefined;
  let size: string | undefined;
  let since: string | undefined;
  let include: IncludeParameter | undefined;
  if (start >= 0) {
    for (const pair of url.slice(start + 1).split("&")) {
      const eq = pair.indexOf("=");
      const value = pair.slice(eq + 1);
      if (eq < 0) return undefined;
      const name = parameterName(pair.slice(0, eq));
      if (name === INCLUDE) {
        if (include !== undefined || value !== PODCAST_INCLUDE) return undefined;
        include = { include: PODCAST_INCLUDE };
        continue;
      }
      if (!DIGITS.test(value)) return undefined;
      switch (name) {
        case PAGE_NUMBER:
          if (number !== undefined) return undefined;
          number = value;
          break;
        case PAGE_SIZE:
          if (size !== undefined) return undefined;
          size = value;
          break;
        case SINCE:
          if (since !== undefined || !SYNC_TOKEN.test(value)) return undefined;
          since = value;
          break;
        default:
          return undefined;
      }
    }
  }
  const pageSize = size === undefined ? DEFAULT_PAGE_SIZE : Number(size);
  if (pageSize < 1 || pageSize > MAX_PAGE_SIZE) return undefined;
  if (since !== undefined) {
    return number === undefined ? { kind: "changes", since: Number(since), size: pageSize, ...include } : undefined;
  }
  const pageNumber = number === undefined ? 1 : Number(number);
  if (pageNumber < 1 || pageNumber > MAX_PAGE_NUMBER) return undefined;
  return { kind: "page", number: pageNumber, size: pageSize, ...include };
}

/** A query parameter's name as sent (`page%5Bnumber%5D`) decoded; undefined for spellings left to Hono. */
function parameterName(raw: string): string | undefined {
  if (raw.includes("+")) return undefined;
  if (!raw.includes("%")) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}

/** A query parameter JSON:API reserves for itself (a family name, or all lowercase a-z). */
export function isReservedParameter(name: string): boolean {
  return /^(fields|filter|page)\[/.test(name) || /^[a-z]+$/.test(name);
}

/** The 400 for a query the schema refused: `source.parameter` names the parameter. */
export function pageQueryError(error: z.core.$ZodError): ApiError {
  const issue = error.issues[0];
  const parameter = String(issue.path[0]);
  if (parameter === SINCE) return invalidSyncToken();
  if (issue.message === SINCE_EXCLUSIVE) {
    return new ApiError({
      status: 400,
      title: "Invalid query parameter",
      detail: `${PAGE_NUMBER} cannot be combined with ${SINCE}: the change feed pages by following links.next.`,
      source: { parameter },
    });
  }
  if (parameter === PAGE_NUMBER) {
    return new ApiError({
      status: 400,
      title: "Invalid query parameter",
      detail: `${PAGE_NUMBER} must be a whole number from 1 to ${MAX_PAGE_NUMBER}, given once.`,
      source: { parameter },
    });
  }
  if (parameter === PAGE_SIZE) {
    const tooBig = issue.code === "too_big";
    return new ApiError({
      status: 400,
      title: "Invalid query parameter",
      detail: `${PAGE_SIZE} must be a whole number from 1 to ${MAX_PAGE_SIZE}, given once.`,
      source: { parameter },
      ...(tooBig ? { meta: { maxSize: MAX_PAGE_SIZE } } : {}),
    });
  }
  if (parameter === INCLUDE) return unsupportedInclude();
  return unsupportedQueryParameter(parameter);
}

/** An `include` other than `podcast` once, where `include=podcast` is taken (docs/API.md §3). */
function unsupportedInclude(): ApiError {
  return new ApiError({
    status: 400,
    title: "Unsupported query parameter",
    detail: `${INCLUDE} takes exactly ${PODCAST_INCLUDE} here, given once: no other relationship can be included.`,
    source: { parameter: INCLUDE },
  });
}

/**
 * A token from before a purge of tombstones it had not seen (docs/API.md §15): answering it would hide those
 * deletions, so the device syncs again from 0 (which always completes).
 */
export function expiredSyncToken(): ApiError {
  return new ApiError({
    status: 410,
    title: "Sync token expired",
    detail: `Deletions made after this token were purged; sync again from ${SINCE}=0 and replace the local state with the result.`,
    source: { parameter: SINCE },
  });
}

/** A token that is not one this server could have issued to the user (docs/API.md §8). */
export function invalidSyncToken(): ApiError {
  return new ApiError({
    status: 400,
    title: "Invalid sync token",
    detail: `${SINCE} must be 0 or a meta.syncToken this server returned to you; start again from 0.`,
    source: { parameter: SINCE },
  });
}

/** For routes that take no query parameters: names JSON:API reserves answer 400, others are ignored. */
export const noQueryParameters: MiddlewareHandler = async (c, next) => {
  if (c.req.url.includes("?")) {
    const reserved = Object.keys(c.req.queries()).find(isReservedParameter);
    if (reserved !== undefined) throw unsupportedQueryParameter(reserved);
  }
  await next();
};

/**
 * For get-one (docs/API.md §3, §18): `include=podcast`, once, and no other reserved name, validated
 * (`c.req.valid("query")`); other names are ignored.
 */
export const includeQuery: MiddlewareHandler<AppEnv, string, { out: { query: IncludeParameter } }> = async (
  c,
  next,
) => {
  let inclusion: IncludeParameter = {};
  if (c.req.url.includes("?")) {
    for (const [name, values] of Object.entries(c.req.queries())) {
      if (name === INCLUDE && values.length === 1 && values[0] === PODCAST_INCLUDE) {
        inclusion = { include: PODCAST_INCLUDE };
      } else if (name === INCLUDE) {
        throw unsupportedInclude();
      } else if (isReservedParameter(name)) {
        throw unsupportedQueryParameter(name);
      }
    }
  }
  c.req.addValidatedData("query", inclusion);
  await next();
};

export function unsupportedQueryParameter(parameter: string): ApiError {
  return new ApiError({
    status: 400,
    title: "Unsupported query parameter",
    detail: `This endpoint does not support the query parameter ${parameter}.`,
    source: { parameter },
  });
}

export function pageLink(path: string, page: PageParams): string {
  return `${path}?${PAGE_NUMBER}=${page.number}&${PAGE_SIZE}=${page.size}`;
}

/** Top-level pagination links (docs/API.md §4): effective values, number first, literal brackets. */
export function paginationLinks(path: string, page: PageParams, total: number) {
  const last = Math.max(1, Math.ceil(total / page.size));
  const at = (number: number) => pageLink(path, { number, size: page.size });
  return {
    self: at(page.number),
    first: at(1),
    prev: page.number > 1 ? at(page.number - 1) : null,
    next: page.number < last ? at(page.number + 1) : null,
    last: at(last),
  };
}

export function changesLink(path: string, since: number, size: number): string {
  return `${path}?${SINCE}=${since}&${PAGE_SIZE}=${size}`;
}

/**
 * Top-level links of a change-feed page (docs/API.md §8): `next` continues after this page's last change
 * while more follow; `first` is the whole history; `prev` and `last` do not exist for a feed.
 */
export function changeFeedLinks(path: string, page: ChangeParams, syncToken: number, more: boolean) {
  return {
    self: changesLink(path, page.since, page.size),
    first: changesLink(path, 0, page.size),
    prev: null,
    next: more ? changesLink(path, syncToken, page.size) : null,
    last: null,
  };
}
