import { type Context, Hono } from "hono";
import type { AppEnv } from "../env";
import { ApiError } from "../jsonapi";
import { accountSession, requireSignIn, signedIn } from "../middleware/account-session";
import { antiForgery } from "../middleware/anti-forgery";
import { frozenForMove } from "../middleware/d1-session";
import { limitPerUser } from "../middleware/rate-limit";
import { denyLoginFlow, grantLoginFlow, pendingLoginFlow } from "../nextcloud/login-flow";
import { LOGIN_GRANT_PATH } from "../nextcloud/protocol";
import { appPasswordLimitReached } from "../resources/app-password";
import { shardRouting } from "../shards";
import { renderPage } from "./layout";
import { DeniedPage, GrantedPage, GrantPage } from "./login-flow-views";
import { signInConfigured } from "./sign-in";

/**
 * The grant page of Nextcloud's Login Flow v2 (docs/API.md §17): the browser's half of the flow, at the link the
 * app opened. It is one of the pages for people (§16): their sign-in first (and back here), their session, their
 * anti-forgery rules on both buttons, their per-user rate limit, and their error pages. It calls the functions of
 * nextcloud/login-flow.ts, which pick the databases; the app's half (start, poll) is routes/nextcloud.ts.
 */

const FLOW = `${LOGIN_GRANT_PATH}/:loginId`;

/** An expired, used, denied or unknown flow: a page saying so, and what to do. */
function flowGone(): ApiError {
  return new ApiError({
    status: 404,
    title: "Sign-in link not found",
    detail:
      "This sign-in link has expired (links work for 20 minutes), was already used, or never existed. " +
      "To connect your app, start signing in from the app again.",
  });
}

/** The address the request came from, as the flow start recorded its own. */
function addressOf(c: Context<AppEnv>): string {
  return c.req.header("CF-Connecting-IP") ?? "unknown";
}

export const loginFlowPages = new Hono<AppEnv>()

  .get(FLOW, signInConfigured, accountSession, requireSignIn, limitPerUser, async (c) => {
    const loginId = c.req.param("loginId");
    const now = Date.now();
    const flow = await pendingLoginFlow(shardRouting(c.env), loginId, now);
    if (!flow) throw flowGone();
    return renderPage(
      c,
      <GrantPage
        account={signedIn(c)}
        flow={flow}
        action={`${LOGIN_GRANT_PATH}/${loginId}`}
        browserAddress={addressOf(c)}
        now={now}
      />,
    );
  })

  // `Grant access`: an app password for the signed-in user, sealed onto the flow for the app's next poll.
  .post(`${FLOW}/grant`, signInConfigured, accountSession, requireSignIn, limitPerUser, antiForgery, async (c) => {
    const account = signedIn(c);
    const result = await grantLoginFlow(shardRouting(c.env), account.userId, c.req.param("loginId"), Date.now());
    switch (result.kind) {
      case "granted":
        return renderPage(c, <GrantedPage account={account} appName={result.appName} />);
      case "limit":
        throw appPasswordLimitReached();
      case "frozen":
        throw frozenForMove();
      case "gone":
        throw flowGone();
    }
  })

  // `Deny`: the flow ends; its app polls `404 []` until it gives up.
  .post(`${FLOW}/deny`, signInConfigured, accountSession, requireSignIn, limitPerUser, antiForgery, async (c) => {
    const appName = await denyLoginFlow(shardRouting(c.env), c.req.param("loginId"), Date.now());
    if (appName === undefined) throw flowGone();
    return renderPage(c, <DeniedPage account={signedIn(c)} appName={appName} />);
  });
