import { Hono } from "hono";
import { type AppEnv, configured } from "../env";
import { linkMethodExtUri } from "../jsonapi";

/**
 * GET /ext/link-method: the URI of the service's link-method extension dereferences to its
 * description (docs/API.md, introduction), as JSON:API recommends for extension URIs. Shared caches may
 * keep it only when the URI comes from PUBLIC_BASE_URL: otherwise it echoes the request's Host, and a
 * poisoned Host must not reach other clients through a cache (docs/API.md §12); the default then applies
 * (security-headers.ts: private, no-store).
 */
export const extensionRoutes = new Hono<AppEnv>().get("/link-method", (c) => {
  const uri = linkMethodExtUri(c);
  return c.text(
    `JSON:API extension "link-method"
URI: ${uri}

This extension adds one member to JSON:API link objects:

  method  (string) The HTTP method to use when following the link. Allowed value: "DELETE".

A subscription's links.unsubscribe is such a link object:

  "unsubscribe": { "href": "/v1/subscriptions/<guid>", "method": "DELETE" }

Following it (DELETE on href, with the same bearer token) unsubscribes the user: 204 No Content.
Clients that do not know the extension can ignore the member; href alone still names the subscription.
`,
    200,
    configured(c.env.PUBLIC_BASE_URL) ? { "Cache-Control": "public, max-age=86400" } : {},
  );
});
