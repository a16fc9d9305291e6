import type { Context, MiddlewareHandler } from "hono";
import { constantTimeEqual, secretHash } from "../auth/secrets";
import type { AppEnv } from "../env";
import { ApiError, absoluteUrl } from "../jsonapi";
import { MAX_BODY_BYTES } from "../limits";
import { readBody } from "../request-body";

/**
 * The account pages' anti-forgery rule (docs/API.md §16): every request that changes the account is a POST that
 * carries the session's anti-forgery token in a form field and comes from this service's own pages (a same-origin
 * `Origin`; when a browser sends `Origin: null` or none, `Sec-Fetch-Site: same-origin` decides). Anything else
 * is 403 and changes nothing. The token is derived from the session cookie, so nothing more is stored, and it
 * reveals nothing of the cookie (a hash under its own label, not the stored one).
 */

/** The hidden field of every form that changes the account. */
export const ANTI_FORGERY_FIELD = "anti_forgery_token";
/** A form's fields around an OPML file of at most MAX_BODY_BYTES (docs/API.md §11). */
const MAX_FORM_BYTES = MAX_BODY_BYTES + 64 * 1024;

/** The session's anti-forgery token: SHA-256 of the cookie under a label of its own. */
export function antiForgeryTokenOf(sessionCookie: string): Promise<string> {
  return secretHash(`account-pages anti-forgery\u0000${sessionCookie}`);
}

function forged(detail: string): ApiError {
  return new ApiError({ status: 403, title: "Refused", detail: `${detail} Nothing was changed.` });
}

/** Whether the request comes from one of this service's own pages, by `Origin` or else `Sec-Fetch-Site`. */
function isSameOrigin(c: Context<AppEnv>): boolean {
  const origin = c.req.header("Origin");
  if (origin !== undefined && origin !== "null") return origin === new URL(absoluteUrl(c, "/")).origin;
  return c.req.header("Sec-Fetch-Site") === "same-origin";
}

/** The submitted form (url-encoded or multipart), read at most MAX_FORM_BYTES. */
async function formOf(c: Context<AppEnv>): Promise<FormData> {
  const type = c.req.header("Content-Type") ?? "";
  if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)\b/i.test(type)) {
    throw forged("This request did not come from a form of this service.");
  }
  const body = await readBody(c.req.raw, MAX_FORM_BYTES);
  try {
    return await new Response(body, { headers: { "Content-Type": type } }).formData();
  } catch {
    throw new ApiError({
      status: 400,
      title: "Unreadable form",
      detail: "The form could not be read; nothing changed.",
    });
  }
}

/**
 * Checks a POST of a signed-in page (after requireSignIn): same origin first (before the body is read), then the
 * token. Sets `form` for the route.
 */
export const antiForgery: MiddlewareHandler<AppEnv> = async (c, next) => {
  const account = c.get("account");
  if (c.req.method !== "POST" || !account) throw forged("Changes are only made by this service's own forms.");
  if (!isSameOrigin(c)) throw forged("This request came from another site.");
  const form = await formOf(c);
  const token = form.get(ANTI_FORGERY_FIELD);
  if (typeof token !== "string" || !constantTimeEqual(token, account.antiForgeryToken)) {
    throw forged("The form's anti-forgery token is missing or belongs to another session; reload the page.");
  }
  c.set("form", form);
  await next();
};
