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
// AntennaPod's Nextcloud option joins with the Nextcloud paths (NEXTCLOUD_ROWS).
import { randomUUID } from "node:crypto";
import { episodeFeedUrl, seededEpisode } from "./data.mjs";
import { ATOMIC, appPasswordRequest, auth, episodeResource, gpodderJson, JSONAPI } from "./scenario.mjs";

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
  };
}

/** The clients, in table order. */
export const CLIENTS = {
  gpodder: "gPodder 3.11 (mygpoclient 1.9)",
  antennapod: "AntennaPod, gpodder.net option",
  jsonapi: "JSON:API client",
  opml: "OPML import",
};

/**
 * AntennaPod's "Nextcloud" option (NextcloudLoginFlow.java, NextcloudSyncService.java): its requests join this
 * table with the Nextcloud paths (docs/API.md §17), under the same targets.
 */
export const NEXTCLOUD_ROWS = [
  "POST /index.php/login/v2 (start the Login Flow)",
  "POST {poll.endpoint} token=… (once a second until granted)",
  "GET /index.php/apps/gpoddersync/subscriptions?since=0",
  "POST /index.php/apps/gpoddersync/subscription_change/create",
  "GET /index.php/apps/gpoddersync/episode_action?since=0",
  "POST /index.php/apps/gpoddersync/episode_action/create (30 actions)",
];

const sessionCookie = (setCookie) => /sessionid=([^;]+)/.exec(setCookie ?? "")?.[1];

/** The gpodder time form (`YYYY-MM-DDTHH:MM:SS`, UTC) of a millisecond time. */
const gpodderTime = (ms) => new Date(ms).toISOString().slice(0, 19);

/**
 * The rows of the table, and how to record them, replay them and run the full syncs again far from the database.
 * `tokens`: bearer tokens by user id; `startedAt`: the run's clock (the actions' device times follow it).
 */
export function heavyListener({ users, tokens, startedAt }) {
  const { listener, uploader } = users;
  const ctx = {
    credentials: {},
    cookies: {},
    since: {},
    tokens: {},
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
  const feedPage = (collection, since) => `${collection}?filter%5Bsince%5D=${since}&page%5Bsize%5D=${PAGE}`;
  const newFeed = (label) => `https://feeds.example.com/${listener.id}/new/${label}-${randomUUID()}.xml`;
  const sinceOf = (body) => JSON.parse(body).timestamp;

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
  const devices = { gpodder: GPODDER_DESKTOP, antennapod: ANTENNAPOD_DEVICE, uploader: GPODDER_DESKTOP };

  return {
    rows,
    ctx,

    /**
     * Mints the clients' app passwords through the API and gives the account its other devices.
     * `send(base, request, status)` sends one request and returns the response's text.
     */
    async prepare(send, base) {
      const mint = async (user, label) => {
        const text = await send(base, appPasswordRequest(tokens, user, label), 201);
        const { username, password } = JSON.parse(text).data.attributes;
        return { username, password };
      };
      for (const [client, user] of [
        ["gpodder", listener],
        ["antennapod", listener],
        ["other", listener],
        ["uploader", uploader],
        ["far-gpodder", listener],
        ["far-antennapod", listener],
      ]) {
        ctx.credentials[client] = await mint(user, client);
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
    async record(record, send, base) {
      const envelopes = {};
      const warmUps = {};
      /** The client's sign-in and session, fresh in the instrumented isolate (its cache lasts 60 s). */
      const warm = async (client) => {
        const calls = [];
        for (const make of warmUpRequests(client, devices[client])) {
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
        const client = row.id.startsWith("gpodder-upload") ? "uploader" : row.client;
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
        const envelope = await record(row.recorded);
        envelopes[row.name] = envelope;
        row.after?.(envelope);
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
      const credentials = { gpodder: ctx.credentials["far-gpodder"], antennapod: ctx.credentials["far-antennapod"] };
      const saved = { credentials: { ...ctx.credentials }, cookies: { ...ctx.cookies } };
      try {
        ctx.credentials.gpodder = credentials.gpodder;
        ctx.credentials.antennapod = credentials.antennapod;
        for (const client of ["gpodder", "antennapod", "jsonapi"]) {
          const total = { requests: 0, ms: 0, calls: 0, sequential: 0, queries: 0 };
          const add = ({ ms, use }) => {
            total.requests++;
            total.ms += ms;
            total.calls += use.calls;
            total.sequential += use.sequential;
            total.queries += use.queries;
          };
          for (const row of rows.filter((r) => r.client === client && r.phase === "full")) {
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
