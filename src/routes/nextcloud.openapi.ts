import { MAX_PENDING_LOGIN_FLOWS } from "../db/login-flows";
import { MAX_GPODDER_ITEMS } from "../gpodder/protocol";
import { LOGIN_FLOW_LIFETIME_MS, MAX_APP_NAME_CHARACTERS } from "../nextcloud/login-flow";
import {
  GPODDERSYNC_PATH,
  LOGIN_FLOW_PATH,
  LOGIN_GRANT_PATH,
  LOGIN_POLL_PATH,
  SINCE_MARGIN_SECONDS,
} from "../nextcloud/protocol";
import { headerRef, type Json } from "../openapi/components";
import { action as episodeAction } from "./gpodder.openapi";

/**
 * OpenAPI: Nextcloud's Login Flow v2 and the API of the Nextcloud app gPodder Sync (routes/nextcloud.ts,
 * docs/API.md §17), what AntennaPod's and Kasts' "Nextcloud" option speak.
 */

const TAG = "Nextcloud API";
const MINUTES = LOGIN_FLOW_LIFETIME_MS / 60_000;

const error = { type: "object", required: ["error"], properties: { error: { type: "string" } } };
const errorResponse = (description: string, headers?: Json) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { "application/json": { schema: error } },
});
const retryAfter = { "Retry-After": headerRef("Retry-After") };
const jsonContent = (schema: Json) => ({ "application/json": { schema } });
const urls = { type: "array", items: { type: "string" } };
const timestamp = { type: "integer", description: "The server's Unix second." };
const since = {
  name: "since",
  in: "query",
  description: `Unix seconds; absent: 0. The answer holds what reached the server at or after \`since\` minus ${SINCE_MARGIN_SECONDS} seconds: these apps send their own clock, which may run ahead.`,
  schema: { type: "integer", minimum: 0 },
};

/** An operation with the errors every one of them may answer, plus its own. */
function operation(
  operationId: string,
  summary: string,
  description: string,
  success: Json,
  extra: { parameters?: Json[]; requestBody?: Json; errors?: Record<string, Json>; signedIn?: boolean } = {},
): Json {
  const signedIn = extra.signedIn ?? true;
  const errors: Record<string, Json> = {
    ...(signedIn
      ? {
          "401": errorResponse('No or wrong credentials: `WWW-Authenticate: Basic realm="gpodder"`.', {
            "WWW-Authenticate": { schema: { type: "string" } },
          }),
          "429": errorResponse("Over the per-user rate limit.", retryAfter),
        }
      : {}),
    "405": errorResponse("Another method."),
    "500": errorResponse("An unexpected failure."),
    "503": errorResponse("The database is unreachable; nothing was changed.", retryAfter),
    ...extra.errors,
  };
  return {
    operationId,
    tags: [TAG],
    summary,
    description,
    security: signedIn ? [{ gpodderBasic: [] }] : [],
    ...(extra.parameters ? { parameters: extra.parameters } : {}),
    ...(extra.requestBody ? { requestBody: extra.requestBody } : {}),
    responses: { "200": success, ...errors },
  };
}

const badRequest = (description: string) => ({ "400": errorResponse(description) });
const tooLarge = (what: string) => ({
  "413": errorResponse(`More than ${MAX_GPODDER_ITEMS} ${what}, or a body over 1 MiB.`),
});

export const nextcloudTag = {
  name: TAG,
  description: `Nextcloud's Login Flow v2 and the API of the Nextcloud app gPodder Sync (\`gpoddersync\`), as AntennaPod's and Kasts' "Nextcloud" option speak them, on the same data as /v1 and the gpodder.net API. An app starts a flow, opens its \`login\` link in the browser, where the person signs in and grants access, and polls until it receives its own app password; it then sends HTTP Basic (gpodder username and app password) on every request. Errors are \`{"error": <text>}\`.`,
};

export const nextcloudPaths: Record<string, Json> = {
  [LOGIN_FLOW_PATH]: {
    post: operation(
      "nextcloudStartLoginFlow",
      "Start a Login Flow",
      `No credentials; any body. The app opens \`login\` (\`${LOGIN_GRANT_PATH}/<login id>\`) in the browser and polls \`poll.endpoint\` with \`poll.token\`. The flow lasts ${MINUTES} minutes; the app is named by its \`User-Agent\` (section 15's refused code points removed, at most ${MAX_APP_NAME_CHARACTERS} characters; absent: \`Unknown app\`). At most 30 flows are started per minute per address (an IPv6 address by its /56), and at most ${MAX_PENDING_LOGIN_FLOWS} are pending at once.`,
      {
        description: "The flow started.",
        content: jsonContent({
          type: "object",
          required: ["poll", "login"],
          properties: {
            poll: {
              type: "object",
              required: ["token", "endpoint"],
              properties: {
                token: { type: "string", pattern: "^[A-Za-z0-9_-]{43}$", description: "256 random bits." },
                endpoint: { type: "string", format: "uri" },
              },
            },
            login: { type: "string", format: "uri", description: "The page where the person grants access." },
          },
        }),
      },
      {
        signedIn: false,
        errors: {
          "429": errorResponse("Too many flows started from this address.", retryAfter),
          "503": errorResponse(`${MAX_PENDING_LOGIN_FLOWS} flows are pending: nothing was started.`, retryAfter),
        },
      },
    ),
  },
  [LOGIN_POLL_PATH]: {
    post: operation(
      "nextcloudPollLoginFlow",
      "Poll a Login Flow",
      "The form body `token=<poll.token>`. `404` with `[]` until access is granted; then the credentials, exactly once; afterwards, and for a denied, expired or unknown flow, `404` with `[]`. Polling is not authentication (no failure is counted), but at most 60 polls per minute per token are answered.",
      {
        description: "Access was granted: the app's own app password, handed out this once.",
        content: jsonContent({
          type: "object",
          required: ["server", "loginName", "appPassword"],
          properties: {
            server: { type: "string", format: "uri", description: "The address to sync with from now on." },
            loginName: { type: "string", pattern: "^[a-z0-9][a-z0-9._-]{0,63}$", description: "The gpodder username." },
            appPassword: { type: "string" },
          },
        }),
      },
      {
        signedIn: false,
        requestBody: {
          required: true,
          content: {
            "application/x-www-form-urlencoded": {
              schema: { type: "object", required: ["token"], properties: { token: { type: "string" } } },
            },
          },
        },
        errors: {
          "404": {
            description: "Not granted (yet), or the flow was used, denied, expired or is unknown.",
            content: jsonContent({ type: "array", maxItems: 0 }),
          },
          "413": errorResponse("A body over 1 MiB."),
          "429": errorResponse("This token was polled more than 60 times in a minute.", retryAfter),
        },
      },
    ),
  },
  [`${GPODDERSYNC_PATH}/subscriptions`]: {
    get: operation(
      "nextcloudSubscriptionChanges",
      "Subscription changes since a time",
      "Feeds added, and feeds no active subscription has any more, whose last change reached the server at or after `since` less the margin: the gpodder.net API's subscription changes, for the user's one list.",
      {
        description: "The changes.",
        content: jsonContent({
          type: "object",
          required: ["add", "remove", "timestamp"],
          properties: { add: urls, remove: urls, timestamp },
        }),
      },
      { parameters: [since], errors: badRequest("`since` is not a non-negative integer.") },
    ),
  },
  [`${GPODDERSYNC_PATH}/subscription_change/create`]: {
    post: operation(
      "nextcloudUploadSubscriptions",
      "Upload subscription changes",
      "Removes, then adds, as the gpodder.net API's upload does (either list may be absent).",
      {
        description: "Applied.",
        content: jsonContent({ type: "object", required: ["timestamp"], properties: { timestamp } }),
      },
      {
        requestBody: {
          required: true,
          content: jsonContent({ type: "object", properties: { add: urls, remove: urls } }),
        },
        errors: {
          ...badRequest("Not a JSON object of URL lists, or a URL both added and removed."),
          ...tooLarge("URLs"),
        },
      },
    ),
  },
  [`${GPODDERSYNC_PATH}/episode_action`]: {
    get: operation(
      "nextcloudEpisodeActions",
      "Episode actions since a time",
      "One action per episode state changed at or after `since` less the margin: the latest state, as the gpodder.net API tells it, under the stored URL only.",
      {
        description: "The actions.",
        content: jsonContent({
          type: "object",
          required: ["actions", "timestamp"],
          properties: { actions: { type: "array", items: episodeAction }, timestamp },
        }),
      },
      { parameters: [since], errors: badRequest("`since` is not a non-negative integer.") },
    ),
  },
  [`${GPODDERSYNC_PATH}/episode_action/create`]: {
    post: operation(
      "nextcloudUploadEpisodeActions",
      "Upload episode actions",
      "Each valid action applies to its episode state (`play` with a position, `new`), as on the gpodder.net API; invalid ones are skipped.",
      {
        description: "Applied.",
        content: jsonContent({ type: "object", required: ["timestamp"], properties: { timestamp } }),
      },
      {
        requestBody: {
          required: true,
          content: jsonContent({ type: "array", items: episodeAction, maxItems: MAX_GPODDER_ITEMS }),
        },
        errors: { ...badRequest("Not a JSON array."), ...tooLarge("actions") },
      },
    ),
  },
};
