import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type AppEnv, configured } from "./env";

/**
 * JSON:API 1.1 wire concerns in one place: media types and their parameters, top-level documents,
 * error objects and JSON pointers. Routes and middleware call these; nothing here knows about D1.
 */

export const JSONAPI_VERSION = "1.1";
export const JSONAPI_MEDIA_TYPE = "application/vnd.api+json";
export const ATOMIC_EXT_URI = "https://jsonapi.org/ext/atomic";
export const LINK_METHOD_EXT_PATH = "/ext/link-method";

/**
 * The absolute URL of `path` on this service: under `PUBLIC_BASE_URL` when set, else under the origin the
 * request came to (its Host: responses carrying it are never shared-cacheable, docs/API.md §12).
 */
export function absoluteUrl(c: Context<AppEnv>, path: string): string {
  const publicBaseUrl = configured(c.env.PUBLIC_BASE_URL);
  const base = publicBaseUrl ? publicBaseUrl.replace(/\/+$/, "") : new URL(c.req.url).origin;
  return `${base}${path}`;
}

/** `{link_method_ext_uri}`: `PUBLIC_BASE_URL` when set, else the origin the request came to. */
export function linkMethodExtUri(c: Context<AppEnv>): string {
  return absoluteUrl(c, LINK_METHOD_EXT_PATH);
}

export function jsonApiContentType(extensions: readonly string[] = []): string {
  return extensions.length === 0 ? JSONAPI_MEDIA_TYPE : `${JSONAPI_MEDIA_TYPE};ext="${extensions.join(" ")}"`;
}

// ---------------------------------------------------------------------------------------------
// Media types

export interface MediaType {
  /** `type/subtype`, lower-cased. */
  essence: string;
  /** Parameter names lower-cased; values unquoted, case kept (extension URIs compare exactly). */
  params: Map<string, string>;
}

/**
 * Splits a header value on `sep` outside double quotes, so that a quoted `ext` value
 * holding `,` or `;` stays whole.
 */
function splitOutsideQuotes(value: string, sep: string): string[] {
  const parts: string[] = [];
  let current = "";
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i];
    if (quoted && ch === "\\" && i + 1 < value.length) {
      current += ch + value[++i];
      continue;
    }
    if (ch === '"') quoted = !quoted;
    if (ch === sep && !quoted) {
      parts.push(current);
      current = "";
    } else {
      current += ch;
    }
  }
  parts.push(current);
  return parts;
}

function unquote(value: string): string {
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
    return value.slice(1, -1).replace(/\\(.)/g, "$1");
  }
  return value;
}

/** Parses one media type (`type/subtype; name=value; ...`); undefined when it is not one. */
export function parseMediaType(value: string): MediaType | undefined {
  const [head, ...rawParams] = splitOutsideQuotes(value, ";");
  const essence = head.trim().toLowerCase();
  if (!/^[a-z0-9!#$&^_.+*-]+\/[a-z0-9!#$&^_.+*-]+$/.test(essence)) return undefined;
  const params = new Map<string, string>();
  for (const raw of rawParams) {
    if (raw.trim() === "") continue;
    const eq = raw.indexOf("=");
    if (eq < 0) return undefined;
    params.set(raw.slice(0, eq).trim().toLowerCase(), unquote(raw.slice(eq + 1).trim()));
  }
  return { essence, params };
}

/** Parses an `Accept` header into its media ranges, skipping ranges that do not parse. */
export function parseAccept(header: string): MediaType[] {
  return splitOutsideQuotes(header, ",")
    .map((range) => parseMediaType(range))
    .filter((range): range is MediaType => range !== undefined);
}

/** The URIs listed in a media type's `ext` parameter (space-separated). */
export function extensionsOf(mediaType: MediaType): string[] {
  return (mediaType.params.get("ext") ?? "").split(" ").filter((uri) => uri !== "");
}

/** JSON:API allows only `ext` and `profile` on its media type; `q` is the Accept weight, not a parameter of the type. */
export function hasOnlyJsonApiParams(mediaType: MediaType, allowWeight = false): boolean {
  for (const name of mediaType.params.keys()) {
    if (name === "ext" || name === "profile") continue;
    if (allowWeight && name === "q") continue;
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Documents and errors

export interface ErrorSource {
  pointer?: string;
  parameter?: string;
  header?: string;
}

export interface ErrorObject {
  status: string;
  title: string;
  detail: string;
  source?: ErrorSource;
  meta?: Record<string, unknown>;
}

export interface ProblemInit {
  status: number;
  title: string;
  detail: string;
  source?: ErrorSource;
  meta?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/**
 * A failure that becomes a JSON:API error response. Thrown anywhere in a request; `app.onError`
 * is the one place that turns it into a response.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly errors: ErrorObject[];
  readonly headers: Record<string, string>;

  constructor(init: ProblemInit) {
    super(init.detail);
    this.name = "ApiError";
    this.status = init.status;
    this.errors = [toErrorObject(init)];
    this.headers = init.headers ?? {};
  }

  /** The error response for one error object (as bulk results carry them inline). */
  static from(error: ErrorObject): ApiError {
    return new ApiError({ ...error, status: Number(error.status) });
  }
}

export function toErrorObject(init: Omit<ProblemInit, "headers">): ErrorObject {
  const error: ErrorObject = { status: String(init.status), title: init.title, detail: init.detail };
  if (init.source) error.source = init.source;
  if (init.meta) error.meta = init.meta;
  return error;
}

export function errorDocument(errors: ErrorObject[]) {
  return { jsonapi: { version: JSONAPI_VERSION }, errors };
}

export function dataDocument<T>(data: T, extra: { links?: unknown; meta?: unknown } = {}) {
  return { jsonapi: { version: JSONAPI_VERSION }, data, ...extra };
}

/**
 * `dataDocument`'s text, member for member, around a `data` that is already JSON text (a change feed page,
 * whose items SQLite wrote): the items are spliced in, never parsed and serialised again; so is `included`, a
 * compound document's related resources (JSON array text), when given.
 */
export function dataDocumentText(
  data: string,
  extra: { links?: unknown; meta?: unknown } = {},
  included?: string,
): string {
  const members = JSON.stringify(extra).slice(1, -1);
  const related = included === undefined ? "" : `,"included":${included}`;
  return `{"jsonapi":{"version":"${JSONAPI_VERSION}"},"data":${data}${related}${members && `,${members}`}}`;
}

/** RFC 6901: escapes one reference token (`~` → `~0`, `/` → `~1`); most tokens need nothing. */
function escapePointerToken(token: string | number): string {
  if (typeof token === "number") return String(token);
  return token.includes("~") || token.includes("/") ? token.replace(/~/g, "~0").replace(/\//g, "~1") : token;
}

/** Appends reference tokens to a JSON pointer (`""` is the document root). Built per bulk operation: kept cheap. */
export function pointerTo(base: string, ...tokens: (string | number)[]): string {
  let pointer = base;
  for (const token of tokens) pointer += `/${escapePointerToken(token)}`;
  return pointer;
}

/**
 * Sends a JSON:API document with the JSON:API media type, naming the extensions negotiation
 * chose for this response (`responseExtensions`, set by the bulk endpoint).
 */
export function respond(
  c: Context<AppEnv>,
  document: unknown,
  status: ContentfulStatusCode = 200,
  headers: Record<string, string> = {},
): Response {
  return respondText(c, JSON.stringify(document), status, headers);
}

/** `respond` for a document already serialised (a change feed page, whose items SQLite wrote). */
export function respondText(
  c: Context<AppEnv>,
  document: string,
  status: ContentfulStatusCode = 200,
  headers: Record<string, string> = {},
): Response {
  return c.body(document, status, {
    ...headers,
    "Content-Type": jsonApiContentType(c.get("responseExtensions") ?? []),
  });
}
