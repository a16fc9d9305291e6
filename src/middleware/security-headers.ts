import { isPagePath, PAGE_CONTENT_SECURITY_POLICY } from "../pages/paths";

/**
 * Headers every response carries. User data is never stored by shared caches: routes that send an
 * ETag set `private, no-cache` themselves; everything else is `private, no-store`. Written straight
 * into the finished response's headers (see request-frame.ts).
 *
 * The HTML pages (docs/API.md §16) get theirs on every answer, errors included: `no-store`, a script-free CSP
 * that forbids framing, and `Referrer-Policy: same-origin` (with `no-referrer` browsers send `Origin: null`
 * on the pages' own forms, which the anti-forgery check then has to judge by `Sec-Fetch-Site` alone).
 */
export function addSecurityHeaders(headers: Headers, path: string): void {
  headers.set("X-Content-Type-Options", "nosniff");
  // A page anywhere else is the not-found page a browser gets (middleware/errors.ts): a page all the same.
  if (isPagePath(path) || headers.get("Content-Type")?.startsWith("text/html")) {
    headers.set("Referrer-Policy", "same-origin");
    headers.set("Cache-Control", "no-store");
    headers.set("Content-Security-Policy", PAGE_CONTENT_SECURITY_POLICY);
    headers.set("X-Frame-Options", "DENY");
    return;
  }
  headers.set("Referrer-Policy", "no-referrer");
  if (!headers.has("Cache-Control")) headers.set("Cache-Control", "private, no-store");
  // Every representation depends on Accept (negotiation may answer 406 or change the media type).
  headers.append("Vary", "Accept");
}
