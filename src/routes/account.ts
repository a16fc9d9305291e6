import { Hono } from "hono";
import { verifiedCredentials } from "../auth/verified-credentials";
import { eraseAccount } from "../db/account";
import type { AppEnv } from "../env";
import { forgetKnownDevices } from "../gpodder/devices";
import { negotiate } from "../middleware/negotiation";
import { chargeRows } from "../middleware/rate-limit";
import { noQueryParameters } from "../pagination";
/**
 * DELETE /v1/account (docs/API.md §15): erases everything stored for the authenticated user in one D1 round
 * trip. No body and no query parameters: nothing about the request can narrow what is erased.
 */
export const accountRoutes = new Hono<AppEnv>().delete("/", negotiate("none"), noQueryParameters, async (c) => {
  // One transaction however large the account (a retry after a failure midway would see a half-erased one),
  // so its cost is bounded by the rate limit instead: charged as the bulk requests deleting as many rows.
  const userId = c.get("userId");
  await chargeRows(c, await eraseAccount(c.get("db"), userId));
  // The gpodder credentials this isolate verified stop at once here; elsewhere, within 60 s, and meanwhile the
  // credential guard of every gpodder write stores nothing they send.
  verifiedCredentials.forget((entry) => entry.userId === userId);
  forgetKnownDevices(userId);
  return c.body(null, 204);
});
