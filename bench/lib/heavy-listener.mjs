// The heavy listener (bench/README.md, "The heavy listener"): an account of 1 000 subscriptions and 10 000 episode
// states on 10 devices, and every request that gPodder, AntennaPod's gpodder.net option and a JSON:API client make
// in a full sync from zero and in an incremental sync, plus the OPML import of 1 000 feeds. Each request is
// recorded once against the real local D1 (through the instrumented worker: its D1 queries, round trips, rows and
// answer bytes) and replayed in the isolate-only worker for its isolate CPU, like the other isolate scenarios.
//
// The sequences follow the clients' own code:
// - gPodder 3.11.1 (Debian's /usr/lib/python3/dist-packages/gpodder/my.py, `_worker_proc`) on mygpoclient 1.9: the
//   queued device update first (`update_device_settings`), then `pull_subscriptions` (and `update_subscriptions`
//   only when something changed locally), then `download_episode_actions` and `upload_episode_actions` in
//   batches of 100. urllib sends Basic only after a 401 with a realm, so the very first request is answered 401;
//   the session cookie that the Basic answer sets carries every request after it (mygpoclient/http.py).
// - AntennaPod, gpodder.net option (net/sync/gpoddernet/GpodnetService.java and net/sync/service/SyncService.java
//   at b7ee12c): setup signs in (`login`, Basic), lists the devices and creates its own; every sync signs in
//   again, then GET subscription changes, POST the queued ones (on the first sync: every local subscription),
//   and, once the new feeds are refreshed (the first sync stops there and runs again), GET episode actions and
//   POST the queued ones in batches of 30 (on the first sync: a full-duration `play` for every played episode).
//   Only `login` sends Basic; the cookie carries the rest.
// - A JSON:API client: the subscription and episode change feeds from `filter[since]=0` in pages of 100 (the
//   largest), following `links.next`; later from its stored token, and its own changes in one
//   `POST /v1/operations`.
// - AntennaPod, Nextcloud option (net/sync/gpoddernet/.../nextcloud/NextcloudLoginFlow.java and
//   NextcloudSyncService.java at b7ee12c; test-node/antennapod.ts reproduces them): the Login Flow (start, a poll
//   once a second until the person grants access in the browser, the poll that collects the password), then Basic on
//   every request: GET subscription changes, POST the local ones, GET episode actions, POST the queued ones in
//   batches of 30. Its `since` is the server's timestamp from the download (the server reads 600 s before it).
// - The listener's account page in a browser (`GET /account`, signed in): what the page costs (issue 28).
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { episodeFeedUrl, seededEpisode } from "./data.mjs";
import {
  ATOMIC,
  appPasswordRequest,
  auth,
  basic,
  episodeResource,
  gpodderJson,
  JSONAPI,
  listPath,
} from "./scenario.mjs";

/** The account: 900 feeds plus the 100 that the 10 000 episode states belong to, all keyed as the API keys them. */
export const HEAVY = {
  subscriptions: 1000,
  episodes: 10000,
  devices: 10,
  /** One live state in three is played (AntennaPod uploads a `play` for each on its first sync). */
  playedEvery: 3,
  /** The changes another device makes between the two syncs. */
  otherAdds: 3,
  otherRemoves: 2,
  otherPlays: 50,
};
/** The devices the account has before the clients sync (with the clients' own two: HEAVY.devices). */
const OTHER_DEVICES = HEAVY.devices - 2;
const GPODDER_DESKTOP = "gpodder-desktop";
/** AntennaPod names its device after the model, `[^a-zA-Z0-9]` replaced by `_` and lowercased. */
const ANTENNAPOD_DEVICE = "antennapod_pixel_8";
const OTHER_DEVICE = "other-0";
/** gPodder's EPISODE_ACTIONS_BATCH_SIZE and AntennaPod's UPLOAD_BULK_SIZE. */
const GPODDER_BATCH = 100;
const ANTENNAPOD_BATCH = 30;
/** JSON:API pages: the largest size the contract allows. */
const PAGE = 100;
/** The rare upload after a big import (the defects branch takes it; until then 413, and the row is absent). */
export const UPLOAD_URLS = 10000;
/** The largest subscription body the API takes (16 MiB): 10 000 URLs of this many bytes, in JSON. */
const LONG_UPLOAD_URL_BYTES = 1650;
/** AntennaPod's User-Agent (UserAgentInterceptor: "AntennaPod/" + versionName), which names the app in the flow. */
const ANTENNAPOD_USER_AGENT = "AntennaPod/3.12.0-beta4";
const FORM = "application/x-www-form-urlencoded; charset=utf-8";
const GPODDERSYNC = "/index.php/apps/gpoddersync";

/** SHA-256 hex, as the app hashes an account page cookie (src/auth/secrets.ts, `secretHash`). */
const sha256Hex = (text) => createHash("sha256").update(text).digest("hex");

/** The heavy listener and the user of the big upload (seeded with users(): see scenario.mjs). */
export function heavyUsers() {
  return {
    listener: {
      id: "bench-heavy-listener",
      no: 90000,
      active: HEAVY.subscriptions - HEAVY.episodes / 100,
      episodes: HEAVY.episodes,
      playedEvery: HEAVY.playedEvery,
      feedsSubscribed: true,
      urlKeys: true,
      uuidV5Ids: true,
    },
    uploader: { id: "bench-heavy-upload", no: 90001, active: 0 },
    longUploader: { id: "bench-heavy-upload-long", no: 90002, active: 0 },
  };
}

/** The clients, in table order. */
export const CLIENTS = {
  gpodder: "gPodder 3.11 (mygpoclient 1.9)",
  antennapod: "AntennaPod, gpodder.net option",
  nextcloud: "AntennaPod, Nextcloud option",
  jsonapi: "JSON:API client",
  browser: "The account page (a browser)",
  simple: "A script on the simple API",
  opml: "OPML import",
};

const sessionCookie = (setCookie) => /sessionid=([^;]+)/.exec(setCookie ?? "")?.[1];

/** The gpodder time form (`YYYY-MM-DDTHH:MM:SS`, UTC) of a millisecond time. */
const gpodderTime = (ms) => new Date(ms).toISOString().slice(0, 19);

/**
 * The rows of the table, and how to record them, replay them and run the full syncs again far from the database.
 * `tokens`: bearer tokens by user id; `startedAt`: the run's clock (the actions' device times follow it).
 */
export function heavyListener({ users, tokens, startedAt }) {
  const { listener, uploader, longUploader } = users;
  const ctx = {
    credentials: {},
    cookies: {},
    since: {},
    tokens: {},
    /** The Login Flow AntennaPod started: its poll token and login id. */
    flow: {},
    /** The listener's account page session (seeded: `prepare`), and its anti-forgery token. */
    account: {},
  };
  const played = Array.from({ length: HEAVY.episodes }, (_, n) => n).filter((n) => n % HEAVY.playedEvery === 0);

  const withCookie = (client, request) => ({
    ...request,
    headers: {
      ...Object.fromEntries(Object.entries(request.headers).filter(([name]) => name !== "authorization")),
      cookie: `sessionid=${ctx.cookies[client]}`,
    },
  });
  /** A gpodder request of `client`: Basic, or (`cookie`) the session cookie its sign-in set. */
  const gp = (client, method, path, body, { cookie = true } = {}) => {
    const credential = ctx.credentials[client];
    const request = gpodderJson(credential, method, path.replaceAll("{u}", credential.username), body);
    return cookie ? withCookie(client, request) : request;
  };
  /** A `play` of seeded state n as a gpodder client uploads it. */
  const play = (n, device, position, total = 3600) => {
    const state = seededEpisode(listener.id, listener.no, n, true);
    return {
      podcast: episodeFeedUrl(listener.id, Math.floor(n / 100)),
      episode: state.mediaUrl,
      guid: state.itemGuid,
      action: "play",
      timestamp: gpodderTime(startedAt),
      started: 0,
      position,
      total,
      ...(device ? { device } : {}),
    };
  };
  const jsonapi = (method, path, body, contentType = JSONAPI) => ({
    method,
    path,
    headers: auth(tokens, listener, body === undefined ? {} : { "content-type": contentType, accept: contentType }),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  /** A request of AntennaPod's Nextcloud option (NextcloudSyncService.performRequest): Basic and Accept on every one. */
  const nextcloud = (method, path, body) => ({
    method,
    path: `${GPODDERSYNC}/${path}`,
    headers: basic(ctx.credentials.nextcloud, {
      accept: "application/json",
      "user-agent": ANTENNAPOD_USER_AGENT,
      ...(body === undefined ? {} : { "content-type": "application/json; charset=utf-8" }),
    }),
    // Android's org.json writes `/` inside strings as `\/`.
    ...(body === undefined ? {} : { body: JSON.stringify(body).replaceAll("/", "\\/") }),
  });
  /** A form POST of NextcloudLoginFlow (no credentials: the flow is how the app gets them). */
  const loginFlow = (path, body) => ({
    method: "POST",
    path,
    headers: { "content-type": FORM, "user-agent": ANTENNAPOD_USER_AGENT },
    body,
  });
  const feedPage = (collection, since) => `${collection}?filter%5Bsince%5D=${since}&page%5Bsize%5D=${PAGE}`;
  const newFeed = (label) => `https://feeds.example.com/${listener.id}/new/${label}-${randomUUID()}.xml`;
  const sinceOf = (body) => JSON.parse(body).timestamp;
  /** `Grant access` on the Login Flow's page, in the listener's signed-in browser (docs/API.md §17). */
  const grantRequest = () => ({
    method: "POST",
    path: `${ctx.flow.login}/grant`,
    headers: {
      cookie: `account=${ctx.account.cookie}`,
      "content-type": "application/x-www-form-urlencoded",
      "sec-fetch-site": "same-origin",
    },
    body: `anti_forgery_token=${ctx.account.antiForgery}`,
  });

  /**
   * Each row: `client`, `phase` (`full`, `incremental`, `upload`), `request` (what the client sends), `times` (how
   * often the sync sends it: pages, batches), `next(k)` (the k-th of them; the first is recorded and measured),
   * `expected` statuses, `gpodder` (signed in: a cold isolate first checks the credential, one round trip),
   * `device` (the path names a device the isolate may not know yet: one round trip more), `feedGuesses` (an episode
   * upload: the isolate guesses each feed's guid from its URL, and a feed subscribed under another guid, as these
   * were through /v1, costs two round trips more the first time an isolate meets it), `streamed`, `exempt`
   * (from the 10 ms), `optional` (a build that answers 413 does not serve it yet), `after(envelope)` (what the
   * client keeps of the answer).
   */
  const rows = [
    // gPodder, full sync from zero: a new device on an account that has everything.
    {
      id: "gpodder-full-challenge",
      client: "gpodder",
      phase: "full",
      request: "POST /api/2/devices/{u}/{device}.json without credentials: 401 with the Basic challenge",
      expected: [401],
      next: () => {
        const request = gp(
          "gpodder",
          "POST",
          `/api/2/devices/{u}/${GPODDER_DESKTOP}.json`,
          { caption: "gPodder on the desktop", type: "desktop" },
          { cookie: false },
        );
        const { authorization: _none, ...headers } = request.headers;
        return { ...request, headers };
      },
    },
    {
      id: "gpodder-full-device",
      client: "gpodder",
      phase: "full",
      request: "POST /api/2/devices/{u}/{device}.json with Basic (caption and type; sets the session cookie)",
      gpodder: true,
      next: () =>
        gp(
          "gpodder",
          "POST",
          `/api/2/devices/{u}/${GPODDER_DESKTOP}.json`,
          { caption: "gPodder on the desktop", type: "desktop" },
          { cookie: false },
        ),
    },
    {
      id: "gpodder-full-subscriptions",
      client: "gpodder",
      phase: "full",
      request: "GET /api/2/subscriptions/{u}/{device}.json?since=0 (1 000 adds)",
      gpodder: true,
      device: true,
      streamed: true,
      next: () => gp("gpodder", "GET", `/api/2/subscriptions/{u}/${GPODDER_DESKTOP}.json?since=0`),
      after: (envelope) => {
        ctx.since.gpodderSubscriptions = sinceOf(envelope.body);
      },
    },
    {
      id: "gpodder-full-episodes",
      client: "gpodder",
      phase: "full",
      request: "GET /api/2/episodes/{u}.json?since=0 (10 000 actions)",
      gpodder: true,
      streamed: true,
      next: () => gp("gpodder", "GET", "/api/2/episodes/{u}.json?since=0"),
      after: (envelope) => {
        ctx.since.gpodderEpisodes = sinceOf(envelope.body);
      },
    },
    // AntennaPod, setup and first sync.
    {
      id: "antennapod-full-login",
      client: "antennapod",
      phase: "full",
      request: "POST /api/2/auth/{u}/login.json with Basic (setup, then once per sync run: 3 times)",
      times: 3,
      gpodder: true,
      next: () => gp("antennapod", "POST", "/api/2/auth/{u}/login.json", undefined, { cookie: false }),
    },
    {
      id: "antennapod-full-devices",
      client: "antennapod",
      phase: "full",
      request: `GET /api/2/devices/{u}.json (setup: ${HEAVY.devices - 1} devices to choose from)`,
      gpodder: true,
      next: () => gp("antennapod", "GET", "/api/2/devices/{u}.json"),
    },
    {
      id: "antennapod-full-device",
      client: "antennapod",
      phase: "full",
      request: "POST /api/2/devices/{u}/{device}.json (setup: its own device, type mobile)",
      gpodder: true,
      next: () =>
        gp("antennapod", "POST", `/api/2/devices/{u}/${ANTENNAPOD_DEVICE}.json`, {
          caption: "AntennaPod on Pixel 8",
          type: "mobile",
        }),
    },
    {
      id: "antennapod-full-subscriptions",
      client: "antennapod",
      phase: "full",
      request: "GET /api/2/subscriptions/{u}/{device}.json?since=0 (1 000 adds)",
      gpodder: true,
      device: true,
      streamed: true,
      next: () => gp("antennapod", "GET", `/api/2/subscriptions/{u}/${ANTENNAPOD_DEVICE}.json?since=0`),
      after: (envelope) => {
        ctx.since.antennapodSubscriptions = sinceOf(envelope.body);
      },
    },
    {
      id: "antennapod-full-subscriptions-again",
      client: "antennapod",
      phase: "full",
      request: "GET /api/2/subscriptions/{u}/{device}.json?since=… (the second run, after the feeds' refresh)",
      gpodder: true,
      device: true,
      streamed: true,
      next: () =>
        gp(
          "antennapod",
          "GET",
          `/api/2/subscriptions/{u}/${ANTENNAPOD_DEVICE}.json?since=${ctx.since.antennapodSubscriptions}`,
        ),
    },
    {
      id: "antennapod-full-episodes",
      client: "antennapod",
      phase: "full",
      request: "GET /api/2/episodes/{u}.json?since=0 (10 000 actions)",
      gpodder: true,
      streamed: true,
      next: () => gp("antennapod", "GET", "/api/2/episodes/{u}.json?since=0"),
      after: (envelope) => {
        ctx.since.antennapodEpisodes = sinceOf(envelope.body);
      },
    },
    {
      id: "antennapod-full-played",
      client: "antennapod",
      phase: "full",
      request: `POST /api/2/episodes/{u}.json, ${ANTENNAPOD_BATCH} full-duration plays (first sync: every played episode, ${Math.ceil(played.length / ANTENNAPOD_BATCH)} batches)`,
      times: Math.ceil(played.length / ANTENNAPOD_BATCH),
      gpodder: true,
      feedGuesses: true,
      next: (k = 0) =>
        gp(
          "antennapod",
          "POST",
          "/api/2/episodes/{u}.json",
          played.slice(k * ANTENNAPOD_BATCH, (k + 1) * ANTENNAPOD_BATCH).map((n) => {
            const { started: _s, ...action } = play(n, ANTENNAPOD_DEVICE, 3600);
            return { ...action, started: 3600 };
          }),
        ),
    },
    // AntennaPod's Nextcloud option, from zero: the Login Flow, then its first sync (a new phone: nothing of its own
    // to upload but its played episodes, once the new feeds are refreshed).
    {
      id: "nextcloud-full-flow",
      client: "nextcloud",
      phase: "full",
      setup: true,
      request: "POST /index.php/login/v2 (start the Login Flow; the app opens `login` in the browser)",
      // The poll token and login id are new each time: the replay is compared without them.
      mask: (text) => text.replace(/[A-Za-z0-9_-]{40,}/g, "<secret>"),
      next: () => loginFlow("/index.php/login/v2", ""),
      after: (envelope) => {
        const flow = JSON.parse(envelope.body);
        ctx.flow = {
          token: flow.poll.token,
          endpoint: new URL(flow.poll.endpoint).pathname,
          login: new URL(flow.login).pathname,
        };
      },
    },
    {
      id: "nextcloud-full-poll",
      client: "nextcloud",
      phase: "full",
      setup: true,
      request: "POST {poll.endpoint} token=… until the grant: 404 [] (once a second, up to 20 minutes)",
      expected: [404],
      next: () => loginFlow(ctx.flow.endpoint, `token=${ctx.flow.token}`),
    },
    {
      id: "nextcloud-full-poll-granted",
      client: "nextcloud",
      phase: "full",
      setup: true,
      request: "POST {poll.endpoint} token=… once access is granted: the server, the username and a new app password",
      // The person pressed `Grant access` on the page the app opened (the browser's request: not the app's).
      before: (send, base) => send(base, grantRequest(), 200),
      next: () => loginFlow(ctx.flow.endpoint, `token=${ctx.flow.token}`),
      after: (envelope) => {
        const { loginName, appPassword } = JSON.parse(envelope.body);
        ctx.credentials.nextcloud = { username: loginName, password: appPassword };
      },
    },
    {
      id: "nextcloud-full-subscriptions",
      client: "nextcloud",
      phase: "full",
      request: `GET ${GPODDERSYNC}/subscriptions?since=0 (1 000 adds)`,
      gpodder: true,
      streamed: true,
      next: () => nextcloud("GET", "subscriptions?since=0"),
      after: (envelope) => {
        ctx.since.nextcloudSubscriptions = sinceOf(envelope.body);
      },
    },
    {
      id: "nextcloud-full-episodes",
      client: "nextcloud",
      phase: "full",
      request: `GET ${GPODDERSYNC}/episode_action?since=0 (10 000 actions)`,
      gpodder: true,
      streamed: true,
      next: () => nextcloud("GET", "episode_action?since=0"),
      after: (envelope) => {
        ctx.since.nextcloudEpisodes = sinceOf(envelope.body);
      },
    },
    {
      id: "nextcloud-full-played",
      client: "nextcloud",
      phase: "full",
      request: `POST ${GPODDERSYNC}/episode_action/create, ${ANTENNAPOD_BATCH} full-duration plays (first sync: every played episode, ${Math.ceil(played.length / ANTENNAPOD_BATCH)} batches)`,
      times: Math.ceil(played.length / ANTENNAPOD_BATCH),
      gpodder: true,
      feedGuesses: true,
      next: (k = 0) =>
        nextcloud(
          "POST",
          "episode_action/create",
          played.slice(k * ANTENNAPOD_BATCH, (k + 1) * ANTENNAPOD_BATCH).map((n) => {
            const { started: _s, device: _d, ...action } = play(n, undefined, 3600);
            return { ...action, started: 3600 };
          }),
        ),
    },
    // The JSON:API client from zero: both change feeds, page after page.
    {
      id: "jsonapi-full-subscriptions",
      client: "jsonapi",
      phase: "full",
      request: `GET /v1/subscriptions?filter[since]=0&page[size]=${PAGE} (then links.next: ${HEAVY.subscriptions / PAGE} pages)`,
      times: HEAVY.subscriptions / PAGE,
      pages: true,
      next: () => jsonapi("GET", feedPage("/v1/subscriptions", 0)),
    },
    {
      id: "jsonapi-full-episodes",
      client: "jsonapi",
      phase: "full",
      request: `GET /v1/episodes?filter[since]=0&page[size]=${PAGE} (then links.next: ${HEAVY.episodes / PAGE} pages)`,
      times: HEAVY.episodes / PAGE,
      pages: true,
      next: () => jsonapi("GET", feedPage("/v1/episodes", 0)),
    },
    // Incremental syncs, after another device subscribed, unsubscribed and played (the interlude).
    {
      id: "gpodder-incremental-subscriptions",
      client: "gpodder",
      phase: "incremental",
      request: "GET /api/2/subscriptions/{u}/{device}.json?since=…",
      gpodder: true,
      device: true,
      streamed: true,
      next: () =>
        gp(
          "gpodder",
          "GET",
          `/api/2/subscriptions/{u}/${GPODDER_DESKTOP}.json?since=${ctx.since.gpodderSubscriptions}`,
        ),
    },
    {
      id: "gpodder-incremental-subscribe",
      client: "gpodder",
      phase: "incremental",
      request: "POST /api/2/subscriptions/{u}/{device}.json (1 add made in gPodder)",
      gpodder: true,
      device: true,
      next: () =>
        gp("gpodder", "POST", `/api/2/subscriptions/{u}/${GPODDER_DESKTOP}.json`, {
          add: [newFeed("gpodder")],
          remove: [],
        }),
    },
    {
      id: "gpodder-incremental-episodes",
      client: "gpodder",
      phase: "incremental",
      request: "GET /api/2/episodes/{u}.json?since=…",
      gpodder: true,
      streamed: true,
      next: () => gp("gpodder", "GET", `/api/2/episodes/{u}.json?since=${ctx.since.gpodderEpisodes}`),
    },
    {
      id: "gpodder-incremental-upload",
      client: "gpodder",
      phase: "incremental",
      request: `POST /api/2/episodes/{u}.json, 10 plays (batches of up to ${GPODDER_BATCH})`,
      gpodder: true,
      feedGuesses: true,
      next: () =>
        gp(
          "gpodder",
          "POST",
          "/api/2/episodes/{u}.json",
          Array.from({ length: 10 }, (_, i) => play(100 + i, GPODDER_DESKTOP, 600 + i)),
        ),
    },
    {
      id: "antennapod-incremental-login",
      client: "antennapod",
      phase: "incremental",
      request: "POST /api/2/auth/{u}/login.json with Basic",
      gpodder: true,
      next: () => gp("antennapod", "POST", "/api/2/auth/{u}/login.json", undefined, { cookie: false }),
    },
    {
      id: "antennapod-incremental-subscriptions",
      client: "antennapod",
      phase: "incremental",
      request: "GET /api/2/subscriptions/{u}/{device}.json?since=…",
      gpodder: true,
      device: true,
      streamed: true,
      next: () =>
        gp(
          "antennapod",
          "GET",
          `/api/2/subscriptions/{u}/${ANTENNAPOD_DEVICE}.json?since=${ctx.since.antennapodSubscriptions}`,
        ),
    },
    {
      id: "antennapod-incremental-episodes",
      client: "antennapod",
      phase: "incremental",
      request: "GET /api/2/episodes/{u}.json?since=…",
      gpodder: true,
      streamed: true,
      next: () => gp("antennapod", "GET", `/api/2/episodes/{u}.json?since=${ctx.since.antennapodEpisodes}`),
    },
    {
      id: "antennapod-incremental-upload",
      client: "antennapod",
      phase: "incremental",
      request: `POST /api/2/episodes/{u}.json, ${ANTENNAPOD_BATCH} plays`,
      gpodder: true,
      feedGuesses: true,
      next: () =>
        gp(
          "antennapod",
          "POST",
          "/api/2/episodes/{u}.json",
          Array.from({ length: ANTENNAPOD_BATCH }, (_, i) => play(200 + i, ANTENNAPOD_DEVICE, 900 + i)),
        ),
    },
    {
      id: "nextcloud-incremental-subscriptions",
      client: "nextcloud",
      phase: "incremental",
      request: `GET ${GPODDERSYNC}/subscriptions?since=… (the server reads 600 s before it)`,
      gpodder: true,
      streamed: true,
      next: () => nextcloud("GET", `subscriptions?since=${ctx.since.nextcloudSubscriptions}`),
    },
    {
      id: "nextcloud-incremental-subscribe",
      client: "nextcloud",
      phase: "incremental",
      request: `POST ${GPODDERSYNC}/subscription_change/create (1 add made in AntennaPod)`,
      gpodder: true,
      next: () => nextcloud("POST", "subscription_change/create", { add: [newFeed("nextcloud")], remove: [] }),
    },
    {
      id: "nextcloud-incremental-episodes",
      client: "nextcloud",
      phase: "incremental",
      request: `GET ${GPODDERSYNC}/episode_action?since=… (the server reads 600 s before it)`,
      gpodder: true,
      streamed: true,
      next: () => nextcloud("GET", `episode_action?since=${ctx.since.nextcloudEpisodes}`),
    },
    {
      id: "nextcloud-incremental-upload",
      client: "nextcloud",
      phase: "incremental",
      request: `POST ${GPODDERSYNC}/episode_action/create, ${ANTENNAPOD_BATCH} plays`,
      gpodder: true,
      feedGuesses: true,
      next: () =>
        nextcloud(
          "POST",
          "episode_action/create",
          Array.from({ length: ANTENNAPOD_BATCH }, (_, i) => play(400 + i, undefined, 900 + i)),
        ),
    },
    {
      id: "jsonapi-incremental-subscriptions",
      client: "jsonapi",
      phase: "incremental",
      request: `GET /v1/subscriptions?filter[since]=<token>&page[size]=${PAGE}`,
      next: () => jsonapi("GET", feedPage("/v1/subscriptions", ctx.tokens.subscriptions)),
    },
    {
      id: "jsonapi-incremental-episodes",
      client: "jsonapi",
      phase: "incremental",
      request: `GET /v1/episodes?filter[since]=<token>&page[size]=${PAGE}`,
      next: () => jsonapi("GET", feedPage("/v1/episodes", ctx.tokens.episodes)),
    },
    {
      id: "jsonapi-incremental-operations",
      client: "jsonapi",
      phase: "incremental",
      request: "POST /v1/operations: 1 subscription add and 10 episode positions",
      next: () =>
        jsonapi(
          "POST",
          "/v1/operations",
          {
            "atomic:operations": [
              {
                op: "add",
                data: { type: "subscription", id: randomUUID(), attributes: { feedUrl: newFeed("jsonapi") } },
              },
              ...Array.from({ length: 10 }, (_, i) => {
                const state = seededEpisode(listener.id, listener.no, 300 + i, true);
                return {
                  op: "add",
                  data: episodeResource(state.id, state.feedGuid, {
                    mediaUrl: state.mediaUrl,
                    position: 1200 + i,
                    changedAt: new Date(startedAt).toISOString(),
                  }),
                };
              }),
            ],
          },
          ATOMIC,
        ),
    },
    // The listener looks at their account page (docs/API.md §16): the session, then one batch of what it shows.
    {
      id: "account-page",
      client: "browser",
      phase: "incremental",
      request: "GET /account signed in: holdings, every app password and device",
      accountPage: true,
      next: () => ({ method: "GET", path: "/account", headers: { cookie: `account=${ctx.account.cookie}` } }),
    },
    // The peer's workloads on the same data (issue 39; PEER_FIGURES in bench/lib/sql-time.mjs) that the syncs above
    // do not send as such: the simple API's whole list, a whole gPodder batch of 100 plays, and the JSON:API
    // requests that get or send the same (the list in pages of 100, the 100 positions in one `POST /v1/operations`).
    // Last of the incremental phase, so that every row above meets the account as before.
    {
      id: "simple-list",
      client: "simple",
      phase: "incremental",
      request: `GET /subscriptions/{u}.json (the simple API: the whole list, ${HEAVY.subscriptions.toLocaleString("en-US")} subscriptions; Basic)`,
      gpodder: true,
      streamed: true,
      next: () => gp("simple", "GET", "/subscriptions/{u}.json", undefined, { cookie: false }),
    },
    {
      id: "jsonapi-list",
      client: "jsonapi",
      phase: "incremental",
      request: `GET /v1/subscriptions?page[number]=1&page[size]=${PAGE} (the list: ${HEAVY.subscriptions / PAGE} pages)`,
      times: HEAVY.subscriptions / PAGE,
      next: () => jsonapi("GET", listPath(1, PAGE)),
    },
    {
      id: "gpodder-upload-100",
      client: "gpodder",
      phase: "incremental",
      request: `POST /api/2/episodes/{u}.json, ${GPODDER_BATCH} plays (a whole batch: new positions of stored states)`,
      gpodder: true,
      feedGuesses: true,
      next: () =>
        gp(
          "gpodder",
          "POST",
          "/api/2/episodes/{u}.json",
          Array.from({ length: GPODDER_BATCH }, (_, i) => ({
            ...play(500 + i, GPODDER_DESKTOP, 1500 + i),
            // Later than the first sync's plays of the same states, so each one merges.
            timestamp: gpodderTime(startedAt + 60_000),
          })),
        ),
    },
    {
      id: "jsonapi-operations-100",
      client: "jsonapi",
      phase: "incremental",
      request: `POST /v1/operations: ${GPODDER_BATCH} episode positions (new positions of stored states)`,
      next: () =>
        jsonapi(
          "POST",
          "/v1/operations",
          {
            "atomic:operations": Array.from({ length: GPODDER_BATCH }, (_, i) => {
              const state = seededEpisode(listener.id, listener.no, 600 + i, true);
              return {
                op: "add",
                data: episodeResource(state.id, state.feedGuid, {
                  mediaUrl: state.mediaUrl,
                  position: 1500 + i,
                  changedAt: new Date(startedAt + 60_000).toISOString(),
                }),
              };
            }),
          },
          ATOMIC,
        ),
    },
    // The OPML import of 1 000 new feeds: the isolate scenario `opml-import`, recorded with the others.
    {
      id: "opml-import",
      name: "opml-import",
      client: "opml",
      phase: "import",
      request: "POST /v1/subscriptions.opml, 1 000 new feeds (another account)",
      existing: true,
    },
    // The rare upload after a big import in gPodder: exempt from the 10 ms, measured.
    {
      id: "gpodder-upload-10000",
      client: "gpodder",
      credential: "uploader",
      holdHeap: true,
      phase: "upload",
      request: `POST /api/2/subscriptions/{u}/{device}.json with ${UPLOAD_URLS.toLocaleString("en-US")} adds (after a big import; another account)`,
      gpodder: true,
      device: true,
      exempt: true,
      optional: true,
      next: () =>
        gp("uploader", "POST", `/api/2/subscriptions/{u}/${GPODDER_DESKTOP}.json`, {
          add: Array.from(
            { length: UPLOAD_URLS },
            (_, i) => `https://feeds.example.com/${uploader.id}/imported/${i}.xml`,
          ),
          remove: [],
        }),
    },
    // The largest body the API takes: 16 MiB, 10 000 long URLs (the 8 MiB budget admits about half; measured too).
    {
      id: "gpodder-upload-16mib",
      client: "gpodder",
      credential: "longUploader",
      holdHeap: true,
      phase: "upload",
      request: `POST /api/2/subscriptions/{u}/{device}.json with ${UPLOAD_URLS.toLocaleString("en-US")} adds of ${LONG_UPLOAD_URL_BYTES} bytes: 16 MiB (another account)`,
      gpodder: true,
      device: true,
      exempt: true,
      optional: true,
      next: () =>
        gp("longUploader", "POST", `/api/2/subscriptions/{u}/${GPODDER_DESKTOP}.json`, {
          add: Array.from({ length: UPLOAD_URLS }, (_, i) => {
            const url = `https://feeds.example.com/${longUploader.id}/imported/${i}.xml?`;
            return url + "x".repeat(LONG_UPLOAD_URL_BYTES - url.length);
          }),
          remove: [],
        }),
    },
  ];
  for (const row of rows) {
    row.name ??= `heavy:${row.id}`;
    row.times ??= 1;
    row.expected ??= [200];
  }

  /** What an app does first with its credential (recorded as the rows' warm-up calls): sign in, then a cookie request. */
  const warmUpRequests = (client, device) => [
    () => gp(client, "POST", "/api/2/auth/{u}/login.json", undefined, { cookie: false }),
    () => gp(client, "POST", `/api/2/devices/{u}/${device}.json`, {}),
  ];
  const devices = {
    gpodder: GPODDER_DESKTOP,
    antennapod: ANTENNAPOD_DEVICE,
    uploader: GPODDER_DESKTOP,
    longUploader: GPODDER_DESKTOP,
  };

  return {
    rows,
    ctx,

    /**
     * Mints the clients' app passwords through the API and gives the account its other devices.
     * `send(base, request, status)` sends one request and returns the response's text.
     */
    async prepare(send, base, databases) {
      const mint = async (user, label) => {
        const text = await send(base, appPasswordRequest(tokens, user, label), 201);
        const { username, password } = JSON.parse(text).data.attributes;
        return { username, password };
      };
      for (const [client, user] of [
        ["gpodder", listener],
        ["antennapod", listener],
        ["other", listener],
        ["simple", listener],
        ["uploader", uploader],
        ["longUploader", longUploader],
        ["far-gpodder", listener],
        ["far-antennapod", listener],
        ["far-nextcloud", listener],
      ]) {
        ctx.credentials[client] = await mint(user, client);
      }
      // The listener signed in on the account pages: a session row as a sign-in stores it (the hash of the cookie,
      // which names the username first: src/middleware/account-session.ts), in every database (each holds every
      // bench user), and the page's anti-forgery token (src/middleware/anti-forgery.ts).
      const cookie = `${ctx.credentials.gpodder.username}.${randomBytes(32).toString("base64url")}`;
      ctx.account = { cookie, antiForgery: sha256Hex(`account-pages anti-forgery\u0000${cookie}`) };
      for (const db of databases) {
        await db
          .prepare(
            "INSERT INTO account_sessions (session_hash, user_id, name, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
          )
          .bind(sha256Hex(cookie), listener.id, "Heavy Listener", startedAt, startedAt + 7 * 86_400_000)
          .run();
      }
      for (let i = 0; i < OTHER_DEVICES; i++) {
        await send(
          base,
          gp("other", "POST", `/api/2/devices/{u}/other-${i}.json`, { caption: `Other ${i}` }, { cookie: false }),
          200,
        );
      }
    },

    /**
     * Records every row in order through `record(request)` (the envelope of the instrumented worker), the
     * clients' warm-up calls first; between the two syncs another device changes the account through `send`.
     * Returns, by scenario name, the envelopes and the warm-up calls.
     */
    async record(record, send, base, shownRows) {
      const envelopes = {};
      const warmUps = {};
      /** The client's sign-in and session, fresh in the instrumented isolate (its cache lasts 60 s). */
      const warm = async (client) => {
        const calls = [];
        const requests = warmUpRequests(client, devices[client]);
        // AntennaPod's Nextcloud option sends Basic on every request and names no device: its sign-in alone.
        for (const make of devices[client] === undefined ? requests.slice(0, 1) : requests) {
          const envelope = await record(make());
          if (envelope.status !== 200)
            throw new Error(`warm-up of ${client}: ${envelope.status} ${envelope.body.slice(0, 200)}`);
          const cookie = sessionCookie(envelope.headers["set-cookie"]);
          if (cookie !== undefined) ctx.cookies[client] = cookie;
          calls.push(...envelope.calls);
        }
        return calls;
      };
      const firstWarmUp = {};
      const recordRow = async (row) => {
        const client = row.credential ?? row.client;
        await row.before?.(send, base);
        if (row.gpodder || row.client === "gpodder") {
          const calls = await warm(client);
          firstWarmUp[client] ??= calls;
          warmUps[row.name] = firstWarmUp[client];
        }
        // What the load sends again: the request exactly as recorded.
        row.recorded = row.next(0);
        // An upload is recorded as an isolate that has met its feeds sends it: the same actions dated before
        // every stored change first (they change nothing, the feeds' guids are resolved and remembered).
        if (row.feedGuesses) {
          const earlier = JSON.parse(row.recorded.body).map((action) => ({
            ...action,
            timestamp: "2020-01-01T00:00:00",
          }));
          const warming = await record({ ...row.recorded, body: JSON.stringify(earlier) });
          if (warming.status !== 200) throw new Error(`warming the feeds of ${row.name}: ${warming.status}`);
        }
        // The row itself: its statements are also timed in SQLite on a snapshot taken just before it.
        const envelope = await record(row.recorded, { sql: true });
        envelopes[row.name] = envelope;
        row.after?.(envelope);
        // What the account page shows, read beside it: its rows read are held to that plus a constant.
        if (row.accountPage) row.shownRows = await shownRows(listener.id);
      };
      for (const row of rows.filter((r) => r.phase === "full")) await recordRow(row);
      // The JSON:API client walks both feeds to their end and keeps the tokens (not recorded: pages alike).
      for (const [collection, key] of [
        ["/v1/subscriptions", "subscriptions"],
        ["/v1/episodes", "episodes"],
      ]) {
        let path = feedPage(collection, 0);
        for (;;) {
          const page = JSON.parse(await send(base, jsonapi("GET", path), 200));
          if (page.links.next === null) {
            ctx.tokens[key] = page.meta.syncToken;
            break;
          }
          path = new URL(page.links.next, "http://bench").pathname + new URL(page.links.next, "http://bench").search;
        }
      }
      // Another device: subscribes, unsubscribes, plays (the incremental syncs report these).
      await send(
        base,
        gp(
          "other",
          "POST",
          `/api/2/subscriptions/{u}/${OTHER_DEVICE}.json`,
          {
            add: Array.from({ length: HEAVY.otherAdds }, (_, i) => newFeed(`other-${i}`)),
            remove: Array.from(
              { length: HEAVY.otherRemoves },
              (_, i) => `https://feeds.example.com/${listener.id}/${i}.xml`,
            ),
          },
          { cookie: false },
        ),
        200,
      );
      await send(
        base,
        gp(
          "other",
          "POST",
          "/api/2/episodes/{u}.json",
          Array.from({ length: HEAVY.otherPlays }, (_, i) => play(1000 + i, OTHER_DEVICE, 300 + i)),
          { cookie: false },
        ),
        200,
      );
      for (const row of rows.filter((r) => r.phase !== "full" && !r.existing)) await recordRow(row);
      return { envelopes, warmUps };
    },

    /**
     * The full syncs from zero again, every request of them (every page, every batch), each D1 call made
     * `delayMs` later (the instrumented worker's delay), one request at a time as the apps send them, with
     * credentials the worker has not verified yet. `send(request)` returns { ms, use }.
     */
    async farEdge(send, delayMs) {
      const clients = {};
      const saved = { credentials: { ...ctx.credentials }, cookies: { ...ctx.cookies } };
      try {
        // Credentials the worker has not verified yet; AntennaPod's Nextcloud option from the password its Login
        // Flow gave it (the flow itself is a setup, once per phone: left out).
        for (const client of ["gpodder", "antennapod", "nextcloud"]) {
          ctx.credentials[client] = saved.credentials[`far-${client}`];
        }
        for (const client of ["gpodder", "antennapod", "nextcloud", "jsonapi"]) {
          const total = { requests: 0, ms: 0, calls: 0, sequential: 0, queries: 0 };
          const add = ({ ms, use }) => {
            total.requests++;
            total.ms += ms;
            total.calls += use.calls;
            total.sequential += use.sequential;
            total.queries += use.queries;
          };
          for (const row of rows.filter((r) => r.client === client && r.phase === "full" && !r.setup)) {
            if (row.pages) {
              let request = row.next(0);
              for (;;) {
                const result = await send(request, delayMs);
                add(result);
                const next = JSON.parse(result.text).links.next;
                if (next === null) break;
                const url = new URL(next, "http://bench");
                request = { ...request, path: url.pathname + url.search };
              }
              continue;
            }
            for (let k = 0; k < row.times; k++) {
              const result = await send(row.next(k), delayMs);
              add(result);
              const cookie = sessionCookie(result.setCookie);
              if (cookie !== undefined) ctx.cookies[client] = cookie;
            }
          }
          clients[client] = { ...total, ms: Math.round(total.ms) };
        }
      } finally {
        Object.assign(ctx.credentials, saved.credentials);
        Object.assign(ctx.cookies, saved.cookies);
      }
      return clients;
    },
  };
}
