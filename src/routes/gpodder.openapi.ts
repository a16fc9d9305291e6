import { DEVICE_TYPES } from "../gpodder/protocol";
import type { Json } from "../openapi/components";

/**
 * OpenAPI: the gpodder.net API v2 and its simple API (routes/gpodder.ts, docs/API.md §14). Path segments named
 * `{file}` are `<name>.<format>` (`alice.json`, `laptop.txt`): gpodder paths carry the format in the name.
 */

const TAG = "gpodder.net API";
const security = [{ gpodderBasic: [] }, { gpodderSession: [] }];
const error = { type: "object", required: ["error"], properties: { error: { type: "string" } } };
const errorResponse = (description: string) => ({ description, content: { "application/json": { schema: error } } });
const jsonContent = (schema: Json) => ({ "application/json": { schema } });
const urls = { type: "array", items: { type: "string" } };

const username = { name: "username", in: "path", required: true, schema: { type: "string" } };
const file = (description: string) => ({
  name: "file",
  in: "path",
  required: true,
  description,
  schema: { type: "string" },
});
const since = {
  name: "since",
  in: "query",
  description:
    "Unix seconds (inclusive), at most 15 digits; absent: 0. Send back the `timestamp` of the previous answer.",
  schema: { type: "integer", minimum: 0, maximum: 999_999_999_999_999 },
};

function operation(
  operationId: string,
  summary: string,
  description: string,
  success: Json,
  extra: { parameters?: Json[]; requestBody?: Json; errors?: Record<string, string> } = {},
): Json {
  const errors: Record<string, string> = {
    "400": "A path username that is not the signed-in user's, a bad parameter or body.",
    "401": 'No or wrong credentials: `WWW-Authenticate: Basic realm="gpodder"`.',
    "404": "An unknown path or format.",
    "405": "Another method.",
    "429": "Over the per-user rate limit (`Retry-After`).",
    "500": "An unexpected failure.",
    "503": "The database is unreachable (`Retry-After`).",
    ...extra.errors,
  };
  return {
    operationId,
    tags: [TAG],
    summary,
    description,
    security,
    ...(extra.parameters ? { parameters: extra.parameters } : {}),
    ...(extra.requestBody ? { requestBody: extra.requestBody } : {}),
    responses: {
      "200": success,
      ...Object.fromEntries(Object.entries(errors).map(([status, text]) => [status, errorResponse(text)])),
    },
  };
}

const empty = { description: "Done (empty body; exactly 200, never 201 or 204)." };
const jsonBody = (schema: Json) => ({ required: true, content: jsonContent(schema) });
export const action = {
  type: "object",
  required: ["podcast", "episode", "action", "timestamp"],
  properties: {
    podcast: { type: "string" },
    episode: { type: "string" },
    guid: { type: "string" },
    action: { enum: ["play", "new", "download", "delete", "flattr"] },
    timestamp: { type: "string", description: "`YYYY-MM-DDTHH:MM:SS`, UTC." },
    device: { type: "string" },
    started: { type: "integer", minimum: 0 },
    position: { type: "integer", minimum: 0 },
    total: { type: "integer", minimum: 0 },
  },
};
const tooMany = { "413": "More than 1000 actions or a body over 1 MiB." };
const tooManyUrls = { "413": "More than 10 000 URLs, or a body over 16 MiB." };

export const gpodderSecuritySchemes: Record<string, Json> = {
  gpodderBasic: {
    type: "http",
    scheme: "basic",
    description: "The gpodder username and an app password (POST /v1/app-passwords). Sets the `sessionid` cookie.",
  },
  gpodderSession: { type: "apiKey", in: "cookie", name: "sessionid" },
};

export const gpodderTag = {
  name: TAG,
  description:
    'What gPodder, AntennaPod, Kasts and libmygpo-qt sync through, on the same data as /v1. Sign in with HTTP Basic (username and app password) or the `sessionid` cookie. Errors are `{"error": <text>}`.',
};

export const gpodderPaths: Record<string, Json> = {
  "/api/2/auth/{username}/login.json": {
    post: operation("gpodderLogin", "Sign in", "Answers 200 with the session cookie set.", empty, {
      parameters: [username],
    }),
  },
  "/api/2/auth/{username}/logout.json": {
    post: operation("gpodderLogout", "Sign out", "Ends the session at once and clears the cookie.", empty, {
      parameters: [username],
    }),
  },
  "/api/2/devices/{file}": {
    get: operation(
      "gpodderListDevices",
      "List devices",
      "`{file}` is `<username>.json`. All devices share the user's one subscription list.",
      {
        description: "The devices, oldest first.",
        content: jsonContent({
          type: "array",
          items: {
            type: "object",
            properties: {
              id: { type: "string" },
              caption: { type: "string" },
              type: { enum: DEVICE_TYPES },
              subscriptions: { type: "integer" },
            },
          },
        }),
      },
      { parameters: [file("`<username>.json`")] },
    ),
  },
  "/api/2/devices/{username}/{file}": {
    post: operation(
      "gpodderSaveDevice",
      "Create or update a device",
      "`{file}` is `<deviceid>.json`; at most 100 devices.",
      empty,
      {
        parameters: [username, file("`<deviceid>.json`")],
        requestBody: jsonBody({
          type: "object",
          properties: {
            caption: {
              type: "string",
              maxLength: 100,
              description: "At most 100 characters, none of the code points URLs refuse (docs/API.md §15).",
            },
            type: { enum: DEVICE_TYPES },
          },
        }),
      },
    ),
  },
  "/api/2/sync-devices/{file}": Object.fromEntries(
    ["get", "post"].map((method) => [
      method,
      operation(
        `gpodderSyncDevices${method === "get" ? "" : "Update"}`,
        "Device synchronisation",
        "All devices of a user form one sync group.",
        {
          description: "The one group.",
          content: jsonContent({
            type: "object",
            properties: { synchronized: { type: "array", items: urls }, "not-synchronized": urls },
          }),
        },
        { parameters: [file("`<username>.json`")] },
      ),
    ]),
  ),
  "/api/2/subscriptions/{username}/{file}": {
    get: operation(
      "gpodderSubscriptionChanges",
      "Subscription changes since a time",
      "Feeds added, and feeds no active subscription has any more, whose last change reached the server at or after `since`.",
      {
        description: "The changes.",
        content: jsonContent({
          type: "object",
          properties: { add: urls, remove: urls, timestamp: { type: "integer" } },
        }),
      },
      { parameters: [username, file("`<deviceid>.json`"), since] },
    ),
    post: operation(
      "gpodderUploadSubscriptions",
      "Upload subscription changes",
      "Removes, then adds. `update_urls` lists every URL not stored exactly as sent: trimmed, refused (`\"\"`), or the stored URL of the same feed. `timestamp` is the server's Unix second 10 minutes back: as the next `since`, it misses nothing another device sent between the app's download and this upload.",
      {
        description: "Applied.",
        content: jsonContent({
          type: "object",
          properties: { timestamp: { type: "integer" }, update_urls: { type: "array", items: urls } },
        }),
      },
      {
        parameters: [username, file("`<deviceid>.json`")],
        requestBody: jsonBody({ type: "object", properties: { add: urls, remove: urls } }),
        errors: tooManyUrls,
      },
    ),
  },
  "/api/2/episodes/{file}": {
    get: operation(
      "gpodderEpisodeActions",
      "Episode actions since a time",
      "One action per episode state changed at or after `since`: the latest state, under its feed's stored URL, and, to gPodder and other mygpoclient apps (by `User-Agent`), again right after under each URL a learned move moved that feed from (at most 4): they match by the URL they hold (`device` and `aggregated` change nothing; `podcast` keeps one feed's).",
      {
        description: "The actions.",
        content: jsonContent({
          type: "object",
          properties: { actions: { type: "array", items: action }, timestamp: { type: "integer" } },
        }),
      },
      {
        parameters: [
          file("`<username>.json`"),
          since,
          { name: "podcast", in: "query", schema: { type: "string" } },
          { name: "device", in: "query", schema: { type: "string" } },
          { name: "aggregated", in: "query", schema: { type: "string" } },
        ],
      },
    ),
    post: operation(
      "gpodderUploadEpisodeActions",
      "Upload episode actions",
      "Each valid action applies to its episode state (`play` with a position, `new`); invalid ones are skipped. `timestamp` is the server's Unix second 10 minutes back: as the next `since`, it misses nothing another device sent between the app's download and this upload.",
      {
        description: "Applied.",
        content: jsonContent({
          type: "object",
          properties: { timestamp: { type: "integer" }, update_urls: { type: "array", maxItems: 0 } },
        }),
      },
      {
        parameters: [file("`<username>.json`")],
        requestBody: jsonBody({ type: "array", items: action, maxItems: 1000 }),
        errors: tooMany,
      },
    ),
  },
  "/subscriptions/{file}": {
    get: operation(
      "gpodderSimpleList",
      "The subscription list (simple API)",
      "`{file}` is `<username>.json`, `.txt` or `.opml`: the active feed URLs in list order.",
      {
        description: "The list.",
        content: {
          "application/json": { schema: urls },
          "text/plain": { schema: { type: "string" } },
          "text/x-opml": { schema: { type: "string" } },
        },
      },
      { parameters: [file("`<username>.json`, `.txt` or `.opml`")] },
    ),
  },
  "/subscriptions/{username}/{file}": {
    get: operation(
      "gpodderSimpleDeviceList",
      "The subscription list of a device (simple API)",
      "`{file}` is `<deviceid>.json`, `.txt` or `.opml`; every device has the user's one list.",
      {
        description: "The list.",
        content: {
          "application/json": { schema: urls },
          "text/plain": { schema: { type: "string" } },
          "text/x-opml": { schema: { type: "string" } },
        },
      },
      { parameters: [username, file("`<deviceid>.json`, `.txt` or `.opml`")] },
    ),
    put: operation(
      "gpodderSimpleReplace",
      "Replace the subscription list (simple API)",
      "`{file}` is `<deviceid>.json` (a JSON array) or `.txt` (one URL per line): the list becomes exactly the sent one.",
      empty,
      {
        parameters: [username, file("`<deviceid>.json` or `.txt`")],
        requestBody: jsonBody(urls),
        errors: tooManyUrls,
      },
    ),
  },
};
