/**
 * Headers every response carries. User data is never stored by shared caches: routes that send an
 * ETag set `private, no-cache` themselves; everything else is `private, no-store`. Written straight
 * into the finished response's headers (see request-frame.ts).
 */
export function addSecurityHeaders(headers: Headers): void {
  headers.set("X-Content-Type-Options", "nosniff");
  headers.set("Referrer-Policy", "no-referrer");
  if (!headers.has("Cache-Control")) headers.set("Cache-Control", "private, no-store");
  // Every representation depends on Accept (negotiation may answer 406 or change the media type).
  headers.append("Vary", "Accept");
}
