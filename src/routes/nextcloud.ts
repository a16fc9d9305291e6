import type { Context } from "hono";
import { Hono } from "hono";
import type { AppEnv } from "../env";
import {
  applySubscriptionChanges,
  episodeActionsSince,
  json,
  signedIn,
  subscriptionChangesSince,
  subscriptionUpload,
  uploadEpisodeActions,
} from "../gpodder/sync";
import { ApiError, absoluteUrl } from "../jsonapi";
import { MAX_BODY_BYTES } from "../limits";
import { addressKey } from "../middleware/auth-failures";
import { tooManyRequests } from "../middleware/rate-limit";
import { appNameOf, collectGrant, pollToken, startLoginFlow } from "../nextcloud/login-flow";
import {
  GPODDERSYNC_PATH,
  LOGIN_FLOW_PATH,
  LOGIN_GRANT_PATH,
  LOGIN_POLL_PATH,
  sinceWithMargin,
} from "../nextcloud/protocol";
import { readBody } from "../request-body";
import { shardRouting } from "../shards";

/**
 * What AntennaPod's and Kasts' "Nextcloud" option speaks (docs/API.md §17): Nextcloud's Login Flow v2, through
 * which an app receives its own app password once the person grants access in the browser, and the API of the
 * Nextcloud app gPodder Sync (`gpoddersync`), a thin translation onto the gpodder sync operations
 * (gpodder/sync.ts) on the same data. Success is exactly 200; errors are `{"error": <text>}`.
 */

/** The poll's answer until access is granted, and for a flow used, denied, expired or unknown: nothing to tell. */
function notGranted(c: Context<AppEnv>): Response {
  return c.body("[]", 404, { "Content-Type": "application/json" });
}

const latin1 = new TextDecoder("latin1");

/** Seconds to wait when the pending flows are at their limit: flows expire every minute while there are many. */
const PENDING_FULL_RETRY_AFTER_SECONDS = 60;

/** MAX_PENDING_LOGIN_FLOWS flows are pending (docs/API.md §17): 503, nothing written. */
function tooManyPendingFlows(): ApiError {
  return new ApiError({
    status: 503,
    title: "Too many sign-ins in progress",
    detail: "Too many sign-ins are in progress on this service; nothing was started. Retry after Retry-After.",
    headers: { "Retry-After": String(PENDING_FULL_RETRY_AFTER_SECONDS) },
  });
}

export const nextcloudRoutes = new Hono<AppEnv>()

  // Start a flow: nobody is signed in, so this is the one unauthenticated write, limited per address (an IPv6
  // address by its /56: whoever holds one /48 holds 256 of them, not 65 536 /64s) and by the pending flows.
  .post(LOGIN_FLOW_PATH, async (c) => {
    const address = c.req.header("CF-Connecting-IP") ?? "unknown";
    const { success } = await c.env.LOGIN_FLOW_RATE_LIMITER.limit({ key: addressKey(address, 56) });
    if (!success) throw tooManyRequests("Too many sign-ins were started from this address; retry after Retry-After.");
    const started = await startLoginFlow(shardRouting(c.env), {
      appName: appNameOf(c.req.header("User-Agent")),
      startedFrom: address,
      now: Date.now(),
    });
    if (!started) throw tooManyPendingFlows();
    const { token, loginId } = started;
    return json(c, {
      poll: { token, endpoint: absoluteUrl(c, LOGIN_POLL_PATH) },
      login: absoluteUrl(c, `${LOGIN_GRANT_PATH}/${loginId}`),
    });
  })

  // Poll with the form body `token=<T>`: the credentials once access is granted, `404 []` otherwise. Not
  // authentication (no failure is counted), but at most 60 answers a minute per token.
  .post(LOGIN_POLL_PATH, async (c) => {
    // A form body is ASCII (its bytes percent-encoded): any other byte only makes a token no flow has.
    const form = new URLSearchParams(latin1.decode(await readBody(c.req.raw, MAX_BODY_BYTES)));
    const poll = await pollToken(form.get("token"));
    if (!poll) return notGranted(c);
    const { success } = await c.env.LOGIN_POLL_RATE_LIMITER.limit({ key: poll.hash });
    if (!success) throw tooManyRequests("This sign-in was polled too often; poll at most once a second.");
    const granted = await collectGrant(shardRouting(c.env), poll, Date.now());
    if (!granted) return notGranted(c);
    return json(c, { server: absoluteUrl(c, ""), ...granted });
  })

  // The gpoddersync app's API: HTTP Basic (username and app password) on every request, as on the gpodder
  // paths; one subscription list per user (no device).
  .get(`${GPODDERSYNC_PATH}/subscriptions`, signedIn, (c) => subscriptionChangesSince(c, sinceWithMargin(c)))

  .post(`${GPODDERSYNC_PATH}/subscription_change/create`, signedIn, async (c) => {
    const { adds, removes } = await subscriptionUpload(c);
    const { timestamp } = await applySubscriptionChanges(c, adds, removes);
    return json(c, { timestamp });
  })

  .get(`${GPODDERSYNC_PATH}/episode_action`, signedIn, (c) =>
    episodeActionsSince(c, sinceWithMargin(c), undefined, false),
  )

  .post(`${GPODDERSYNC_PATH}/episode_action/create`, signedIn, async (c) =>
    json(c, { timestamp: await uploadEpisodeActions(c) }),
  );
