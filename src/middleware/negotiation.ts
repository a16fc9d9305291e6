import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import {
  ApiError,
  ATOMIC_EXT_URI,
  extensionsOf,
  hasOnlyJsonApiParams,
  JSONAPI_MEDIA_TYPE,
  linkMethodExtUri,
  type MediaType,
  parseAccept,
  parseMediaType,
} from "../jsonapi";

/** Which extension an endpoint speaks: the bulk endpoint requires Atomic Operations, the others refuse it. */
export type EndpointExtension = "none" | "atomic";

function unsupportedMediaType(detail: string): ApiError {
  return new ApiError({ status: 415, title: "Unsupported media type", detail, source: { header: "Content-Type" } });
}

function notAcceptable(detail: string): ApiError {
  return new ApiError({ status: 406, title: "Not acceptable", detail, source: { header: "Accept" } });
}

/** JSON:API 1.1 server responsibilities for a request body's Content-Type (415). */
function checkContentType(c: Context<AppEnv>, extension: EndpointExtension, supported: string[]): void {
  const header = c.req.header("Content-Type");
  const mediaType = header === undefined ? undefined : parseMediaType(header);
  const expected = extension === "atomic" ? `${JSONAPI_MEDIA_TYPE};ext="${ATOMIC_EXT_URI}"` : JSONAPI_MEDIA_TYPE;
  if (!mediaType || mediaType.essence !== JSONAPI_MEDIA_TYPE) {
    throw unsupportedMediaType(`Send the request body as ${expected}.`);
  }
  if (!hasOnlyJsonApiParams(mediaType)) {
    throw unsupportedMediaType("The JSON:API media type allows only the ext and profile parameters.");
  }
  const extensions = extensionsOf(mediaType);
  const unknown = extensions.find((uri) => !supported.includes(uri));
  if (unknown !== undefined) throw unsupportedMediaType(`The extension ${unknown} is not supported.`);
  if (extension === "atomic" && !extensions.includes(ATOMIC_EXT_URI)) {
    throw unsupportedMediaType(`This endpoint takes the Atomic Operations extension: send ${expected}.`);
  }
  if (extension === "none" && extensions.includes(ATOMIC_EXT_URI)) {
    throw unsupportedMediaType(`The Atomic Operations extension applies to /v1/operations only; send ${expected}.`);
  }
}

function isAcceptableJsonApi(range: MediaType, supported: string[]): boolean {
  return hasOnlyJsonApiParams(range, true) && extensionsOf(range).every((uri) => supported.includes(uri));
}

/**
 * JSON:API 1.1 server responsibilities for Accept (406). Returns the extensions the client asked
 * for that the response may name.
 */
function negotiateAccept(c: Context<AppEnv>, extension: EndpointExtension, supported: string[]): string[] {
  const header = c.req.header("Accept");
  if (header === undefined || header.trim() === "") return [];
  const ranges = parseAccept(header);
  const jsonApiRanges = ranges.filter((range) => range.essence === JSONAPI_MEDIA_TYPE);
  if (jsonApiRanges.length === 0) return [];

  const acceptable = jsonApiRanges.filter((range) => isAcceptableJsonApi(range, supported));
  if (acceptable.length === 0) {
    throw notAcceptable(
      "Every JSON:API media type in Accept carries a parameter other than ext or profile, or names an unsupported extension.",
    );
  }
  const requested = [...new Set(acceptable.flatMap(extensionsOf))];
  if (extension === "atomic") {
    const wildcard = ranges.some((range) => range.essence === "*/*" || range.essence === "application/*");
    const allowsAtomic = acceptable.some((range) => extensionsOf(range).includes(ATOMIC_EXT_URI));
    if (!allowsAtomic && !wildcard) {
      throw notAcceptable(`Accept ${JSONAPI_MEDIA_TYPE};ext="${ATOMIC_EXT_URI}" to use this endpoint.`);
    }
  }
  return requested;
}

/**
 * Content negotiation per JSON:API 1.1 for one endpoint. The bulk endpoint answers with the atomic
 * extension in its Content-Type, plus link-method when the client's Accept asked for it.
 */
export function negotiate(extension: EndpointExtension): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const linkMethod = linkMethodExtUri(c);
    const supported = [ATOMIC_EXT_URI, linkMethod];
    if (c.req.method === "POST" || c.req.method === "PATCH") checkContentType(c, extension, supported);
    const requested = negotiateAccept(c, extension, supported);
    if (extension === "atomic") {
      c.set("responseExtensions", requested.includes(linkMethod) ? [ATOMIC_EXT_URI, linkMethod] : [ATOMIC_EXT_URI]);
    }
    await next();
  };
}
