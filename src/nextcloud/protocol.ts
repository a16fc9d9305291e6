import type { Context } from "hono";
import type { AppEnv } from "../env";
import { sinceParameter } from "../gpodder/protocol";

/** The paths of Nextcloud's Login Flow v2 and of the Nextcloud app gPodder Sync (docs/API.md §17), and their `since`. */

export const LOGIN_FLOW_PATH = "/index.php/login/v2";
export const LOGIN_POLL_PATH = `${LOGIN_FLOW_PATH}/poll`;
/** The browser's link: `<this>/<login id>`, the grant page of the account pages. */
export const LOGIN_GRANT_PATH = `${LOGIN_FLOW_PATH}/flow`;
/** The Nextcloud app's API: `gpoddersync` is its app id. */
export const GPODDERSYNC_PATH = "/index.php/apps/gpoddersync";

/**
 * How far before `since` the sync reads go back. AntennaPod takes its phone's clock after an upload as its
 * next `since`: a clock running ahead would skip what reached the server in between. Sending an unchanged
 * state again is harmless; missing a change is not.
 */
export const SINCE_MARGIN_SECONDS = 600;

/** `since` (absent: 0; else a non-negative integer, 400), less the margin. */
export function sinceWithMargin(c: Context<AppEnv>): number {
  return Math.max(0, sinceParameter(c) - SINCE_MARGIN_SECONDS);
}
