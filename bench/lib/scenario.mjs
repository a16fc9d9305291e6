// What the bench sends: the seeded users and, for each measured endpoint, how to build its next
// request. Every request is built fresh by `next()`: where a request must differ each time (a new
// guid to add, an existing one to delete) `dynamic` is set and autocannon calls it per request.
//
// A user may store at most 10 000 subscriptions (active and tombstones), so the endpoints that add
// rows draw their users from a pool: each user takes a bounded number of requests, then the next
// one takes over. The pools are sized for a machine far faster than any seen so far; a pool that
// still runs dry is reported (its later requests would be refused at the limit).
import { randomUUID } from "node:crypto";
import { sign } from "hono/jwt";
import { EPISODE_SEEDED_AT, seededEpisode, seededGuid } from "./data.mjs";

export const JSONAPI = "application/vnd.api+json";
export const ATOMIC = `${JSONAPI};ext="https://jsonapi.org/ext/atomic"`;
export const OPML = "text/x-opml";
export const PAGE_SIZE = 25;
export const SYNC_PAGE_SIZE = 100;
export const BULK_SIZES = [1, 10, 50, 100];
export const SCALING_SIZES = [10, 1000, 10000];
export const OPML_FEEDS = 1000;
/** The single-request endpoints of results.json, in report order. */
export const ENDPOINT_NAMES = ["list", "get-one", "post-existing", "post-new", "delete", "patch", "sync"];
/** The episode-state rows (docs/API.md §13), in report order: load, probes and isolate-only alike. */
export const EPISODE_NAMES = [
  "episode-post-new",
  "episode-merge",
  "episode-noop",
  "episode-feed",
  "episode-bulk-1",
  "episode-bulk-100",
];
export const EPISODE_BULK_SIZES = [1, 100];
/** Stored episode states per user (tombstones included): the quota, and the feed user's history. */
export const EPISODE_FEED_STATES = 50000;
/** One state in five of the feed user is a tombstone. */
const EPISODE_FEED_GONE_EVERY = 5;
/** Episodes seeded for each merging user: request k merges into state k mod this. */
const MERGE_EPISODES = 1000;
/**
 * The gpodder.net API v2 rows (docs/API.md §14), in report order: an upload of 100 `play` actions, the
 * episode actions since 0 over 10 000 states, the subscription changes since 0 over 10 000 subscriptions, and
 * an upload of a few adds and removes. Every request sends HTTP Basic with an app password minted at seed
 * time; the bench measures the steady state, the credentials and the device already known to the isolate.
 */
export const GPODDER_NAMES = [
  "gpodder-episodes-upload",
  "gpodder-episodes-get",
  "gpodder-subscriptions-get",
  "gpodder-subscriptions-post",
];
/**
 * The gpodder rows whose answers stream in keyset pages of 100 (docs/API.md §15): one D1 call per page, so
 * their calls are reported beside the others but not held to one per request.
 */
export const STREAMED_GPODDER_NAMES = ["gpodder-episodes-get", "gpodder-subscriptions-get"];
/** The device every gpodder request names (created through the API at seed time, as apps do first). */
export const GPODDER_DEVICE = "bench-phone";
export const GPODDER_UPLOAD_ACTIONS = 100;
/** The podcasts an upload's actions are spread over (subscribed through the API at seed time). */
export const GPODDER_PODCASTS = 5;
/** Episode states of the user whose actions the episode GET reports (each feed of 100 subscribed). */
export const GPODDER_EPISODE_STATES = 10000;
/** A subscription upload: this many new feeds added, this many seeded ones removed. */
export const GPODDER_ADDS = 3;
export const GPODDER_REMOVES = 2;
/** Subscription uploads per pool user: adds stay under the 10 000 stored, removes within the seeded actives. */
const GPODDER_UPLOADS_PER_USER = 1800;
const GPODDER_SEEDED_ACTIVE = GPODDER_REMOVES * GPODDER_UPLOADS_PER_USER + 400;

/** What the isolate-only worker measures: the required figures first, then the rest of the API. */
export const ISOLATE_NAMES = [
  "list",
  // The same page with its podcasts (`include=podcast`, docs/API.md §18), measured right after the list: issue 36.
  "list-include-podcast",
  "get-one",
  "post-new",
  "bulk-1",
  "bulk-100",
  "post-existing",
  "delete",
  "patch",
  "sync",
  "opml-import",
  ...EPISODE_NAMES,
  ...GPODDER_NAMES,
];

/** The read scenarios whose own D1 statements the statement floor runs (a write would not repeat). */
export const STATEMENT_FLOOR_NAMES = ["list", "get-one", "sync"];
/**
 * The isolate-only scenarios also measured at their format floor (bench/isolate-worker.ts): the JSON of the
 * request and the response alone, and with the D1 answers parsed too; what their targets are held against.
 */
export const FORMAT_FLOOR_NAMES = [
  "bulk-1",
  "bulk-100",
  "episode-bulk-1",
  "episode-bulk-100",
  "episode-feed",
  // The heavy listener's largest answer (10 000 actions, 3.3 MB): parsing D1's answer and sending the text.
  "heavy:gpodder-full-episodes",
];

/** Rows a pool user may gain before the next user takes over: under the 10 000 stored per user. */
const ROWS_PER_POOL_USER = 9000;
/** Episode states a pool user may gain: under the 50 000 stored per user. */
const EPISODES_PER_POOL_USER = 45000;
/** Bounds on what any machine serves locally, to size the pools (this one serves far less). */
const SINGLE_WRITES_PER_SECOND_BOUND = 5000;
const BULK_ADDS_PER_SECOND_BOUND = 25000;

export const listPath = (page, size = PAGE_SIZE) => `/v1/subscriptions?page%5Bnumber%5D=${page}&page%5Bsize%5D=${size}`;
const changesPath =
  (collection) =>
  (since, size = SYNC_PAGE_SIZE) =>
    `${collection}?filter%5Bsince%5D=${since}&page%5Bsize%5D=${size}`;
export const syncPath = changesPath("/v1/subscriptions");
export const episodeFeedPath = changesPath("/v1/episodes");
/** The first page with nothing on it for a user with `size` active subscriptions. */
export const pastEndPage = (size) => Math.ceil(size / PAGE_SIZE) + 1;

/** Tombstones seeded among the actives of the list users: one per four active subscriptions. */
const withTombstones = (active) => Math.ceil(active / 4);

/**
 * Users that take turns: request k goes to user floor(k / perUser). `exhausted` is set when more
 * requests came than the pool holds (the count wraps around; those requests hit the limit).
 */
function pool(prefix, firstNo, count, perUser, active = 0) {
  const members = Array.from({ length: count }, (_, i) => ({ id: `${prefix}-${i}`, no: firstNo + i, active }));
  let taken = 0;
  return {
    users: members,
    perUser,
    exhausted: false,
    /** The user and its own request number for the next request. */
    take() {
      const k = taken++;
      const index = Math.floor(k / perUser);
      if (index >= members.length) this.exhausted = true;
      return { user: members[index % members.length], k: k % perUser };
    },
  };
}

/**
 * The seeded users. `loadSeconds` bounds how long the load of one endpoint lasts in all (warm-up and
 * samples); the writing pools are sized from it.
 */
export function users(loadSeconds) {
  const list = (no, active, tombstones = withTombstones(active)) => ({
    id: `bench-list-${active}`,
    no,
    active,
    tombstones,
  });
  const plain = (no, id, active) => ({ id, no, active });
  const singles = Math.ceil((SINGLE_WRITES_PER_SECOND_BOUND * loadSeconds) / ROWS_PER_POOL_USER);
  const bulkPools = (prefix, firstNo, count) =>
    Object.fromEntries(
      BULK_SIZES.map((n, i) => [
        n,
        pool(`${prefix}-${n}`, firstNo + i * 1000, count, Math.max(1, Math.floor(ROWS_PER_POOL_USER / n)), 10),
      ]),
    );
  const bulkCount = Math.ceil((BULK_ADDS_PER_SECOND_BOUND * loadSeconds) / ROWS_PER_POOL_USER);
  // Episode writers: pools under the episode quota for the writes that add states, one user with
  // MERGE_EPISODES seeded states for the merges (a merge adds none).
  const episodeSingles = Math.ceil((SINGLE_WRITES_PER_SECOND_BOUND * loadSeconds) / EPISODES_PER_POOL_USER);
  const episodeBulkCount = Math.ceil((BULK_ADDS_PER_SECOND_BOUND * loadSeconds) / EPISODES_PER_POOL_USER);
  const episodeWriters = (prefix, firstNo) => ({
    episodeNew: pool(`${prefix}-episode-new`, firstNo, episodeSingles, EPISODES_PER_POOL_USER),
    episodeMerge: { ...plain(firstNo + 1000, `${prefix}-episode-merge`, 0), episodes: MERGE_EPISODES },
    episodeBulk: Object.fromEntries(
      EPISODE_BULK_SIZES.map((n, i) => [
        n,
        pool(
          `${prefix}-episode-bulk-${n}`,
          firstNo + 2000 + i * 1000,
          episodeBulkCount,
          Math.floor(EPISODES_PER_POOL_USER / n),
        ),
      ]),
    ),
  });
  const gpodderWriters = (prefix, firstNo) => ({
    gpodderUpload: pool(
      `${prefix}-gpodder-upload`,
      firstNo,
      episodeBulkCount,
      Math.floor(EPISODES_PER_POOL_USER / GPODDER_UPLOAD_ACTIONS),
    ),
    gpodderSubscriptions: keyed(
      pool(
        `${prefix}-gpodder-subscriptions`,
        firstNo + 1000,
        Math.ceil((SINGLE_WRITES_PER_SECOND_BOUND * loadSeconds) / GPODDER_UPLOADS_PER_USER),
        GPODDER_UPLOADS_PER_USER,
        GPODDER_SEEDED_ACTIVE,
      ),
    ),
  });
  // The seeded subscriptions that gpodder uploads remove are found by URL: stored with their url_key.
  const keyed = (p) => {
    for (const user of p.users) user.urlKeys = true;
    return p;
  };
  return {
    // Keyed as the API keys its rows, each feed fetched (bench/lib/data.mjs): `include=podcast` shows real podcasts.
    list: { ...list(1, 300), urlKeys: true, feedsFetched: true },
    // The user with 10 000 is at the limit of stored subscriptions: no tombstones beside them. Its
    // 10 000 subscriptions are also the 10 000 changes of the sync figures.
    scaling: Object.fromEntries(
      SCALING_SIZES.map((size, i) => [size, list(2 + i, size, size >= 10000 ? 0 : withTombstones(size))]),
    ),
    load: {
      postNew: pool("bench-post-new", 100, singles, ROWS_PER_POOL_USER, 10),
      delete: pool("bench-delete", 200, singles, ROWS_PER_POOL_USER, ROWS_PER_POOL_USER),
      patch: plain(300, "bench-patch", 10),
      bulk: bulkPools("bench-bulk", 10000, bulkCount),
      ...episodeWriters("bench", 30000),
      ...gpodderWriters("bench", 60000),
    },
    probe: {
      postNew: pool("probe-post-new", 400, 1, ROWS_PER_POOL_USER, 10),
      delete: pool("probe-delete", 500, 1, 50, 50),
      patch: plain(600, "probe-patch", 10),
      bulk: bulkPools("probe-bulk", 20000, 1),
      opml: pool("probe-opml", 700, 1, Math.floor(ROWS_PER_POOL_USER / OPML_FEEDS), 0),
      ...episodeWriters("probe", 40000),
      ...gpodderWriters("probe", 70000),
    },
    // The gpodder episode GET: 10 000 states over 100 feeds, each subscribed.
    gpodderEpisodes: {
      ...plain(80000, `bench-gpodder-episodes-${GPODDER_EPISODE_STATES}`, 0),
      episodes: GPODDER_EPISODE_STATES,
      feedsSubscribed: true,
    },
    // At the quota: its states are also the episode feed's 50 000 changes. Writes to it only merge.
    episodeFeed: {
      ...plain(50000, `bench-episodes-${EPISODE_FEED_STATES}`, 0),
      episodes: EPISODE_FEED_STATES,
      goneEvery: EPISODE_FEED_GONE_EVERY,
    },
    // The fixed requests that the isolate-only worker replays are recorded with these users.
    isolate: {
      writer: plain(800, "isolate-writer", 10),
      opml: plain(801, "isolate-opml", 0),
      episodes: { ...plain(802, "isolate-episodes", 0), episodes: 10 },
      gpodder: { ...plain(803, "isolate-gpodder", 10), urlKeys: true },
    },
  };
}

const writers = (set) => [
  ...set.postNew.users,
  ...set.delete.users,
  set.patch,
  ...Object.values(set.bulk).flatMap((p) => p.users),
  ...(set.opml ? set.opml.users : []),
  ...set.episodeNew.users,
  set.episodeMerge,
  ...Object.values(set.episodeBulk).flatMap((p) => p.users),
  ...set.gpodderUpload.users,
  ...set.gpodderSubscriptions.users,
];

/** Every seeded user; `withWriters: false` leaves out the pools of the load and the probes (an isolate-only run). */
export function allUsers(u, { withWriters = true } = {}) {
  return [
    u.list,
    ...Object.values(u.scaling),
    ...(withWriters ? [...writers(u.load), ...writers(u.probe)] : []),
    u.isolate.writer,
    u.isolate.opml,
    u.isolate.episodes,
    u.isolate.gpodder,
    u.episodeFeed,
    u.gpodderEpisodes,
  ];
}

/**
 * The users that sign in to the gpodder API, each given an app password at seed time (`user.gpodder`); the
 * isolate-only scenarios sign in with a second one (`user.gpodderIsolate`), which the instrumented worker has
 * never verified when it records their warm-up. `podcasts`: the users whose uploads name the podcasts.
 */
export function gpodderUsers(u, { withWriters = true } = {}) {
  const sets = withWriters ? [u.load, u.probe] : [];
  const writers = (set) => [...set.gpodderUpload.users, ...set.gpodderSubscriptions.users];
  const uploaders = (set) => set.gpodderUpload.users;
  return {
    all: [u.gpodderEpisodes, u.scaling[10000], ...sets.flatMap(writers), u.isolate.gpodder],
    isolate: [u.gpodderEpisodes, u.scaling[10000], u.isolate.gpodder],
    podcasts: [...sets.flatMap(uploaders), u.isolate.gpodder],
  };
}

/** The pools of a run, by endpoint, to report any that ran dry. */
export function pools(u) {
  return {
    "post-new": u.load.postNew,
    delete: u.load.delete,
    ...Object.fromEntries(Object.entries(u.load.bulk).map(([n, p]) => [`bulk-${n}`, p])),
    "episode-post-new": u.load.episodeNew,
    ...Object.fromEntries(Object.entries(u.load.episodeBulk).map(([n, p]) => [`episode-bulk-${n}`, p])),
    "gpodder-episodes-upload": u.load.gpodderUpload,
    "gpodder-subscriptions-post": u.load.gpodderSubscriptions,
  };
}

/** HS256 tokens (sub, iat, exp) for every user, signed with the secret the workers are given. */
export async function tokensFor(userList, secret) {
  const now = Math.floor(Date.now() / 1000);
  const tokens = {};
  for (const user of userList) {
    tokens[user.id] = await sign({ sub: user.id, iat: now, exp: now + 3600 }, secret, "HS256");
  }
  return tokens;
}

const feedUrl = (userId, n) => `https://feeds.example.com/${userId}/${n}.xml`;
const resource = (id, url) => ({ type: "subscription", id, attributes: { feedUrl: url } });

const xmlEscape = (text) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** An OPML 2.0 document of `count` feeds nobody has subscribed to yet (their guids come from the URLs). */
export function opmlDocument(userId, count = OPML_FEEDS) {
  const batch = randomUUID();
  const outlines = Array.from({ length: count }, (_, i) => {
    const url = xmlEscape(`https://feeds.example.com/${userId}/opml/${batch}/${i}.xml?a=1&b=2`);
    return `    <outline type="rss" text="Podcast ${i}" xmlUrl="${url}"/>`;
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<opml version="2.0">',
    "  <head><title>Bench import</title></head>",
    "  <body>",
    ...outlines,
    "  </body>",
    "</opml>",
    "",
  ].join("\n");
}

/**
 * @typedef {{ method: string, path: string, headers: Record<string, string>, body?: string }} Request
 * @typedef {{ name: string, expected: number[], dynamic: boolean, next: () => Request, adds?: number,
 *   imports?: number, optional?: boolean, warmUp?: () => Request[], podcastsShown?: string }} Endpoint
 */

export const auth = (tokens, user, extra = {}) => ({
  authorization: `Bearer ${tokens[user.id]}`,
  accept: JSONAPI,
  ...extra,
});

/** `POST /v1/operations` adding `n` resources made by `added(user)` (each a new one). */
function bulkRequest(tokens, user, n, added = newSubscription) {
  return {
    method: "POST",
    path: "/v1/operations",
    headers: auth(tokens, user, { accept: ATOMIC, "content-type": ATOMIC }),
    body: JSON.stringify({ "atomic:operations": Array.from({ length: n }, () => ({ op: "add", data: added(user) })) }),
  };
}

function newSubscription(user) {
  const guid = randomUUID();
  return resource(guid, feedUrl(user.id, guid));
}

/** POST of one resource to a collection. */
function createRequest(tokens, user, collection, data) {
  return {
    method: "POST",
    path: collection,
    headers: auth(tokens, user, { "content-type": JSONAPI }),
    body: JSON.stringify({ data }),
  };
}

const postRequest = (tokens, user, guid, url) => createRequest(tokens, user, "/v1/subscriptions", resource(guid, url));

// Episode states (docs/API.md §13).

/** The feed of the new states: docs/API.md §13's example feed guid. */
const EPISODE_FEED_GUID = "9b024349-ccf0-5f69-a609-6b82873eab3c";
/** When a new state's change happened on the device: after the seeded ones, long before the server's clock. */
const NEW_EPISODE_CHANGED_AT = "2025-06-01T12:00:00.000Z";
const SEEDED_AT_MS = Date.parse(EPISODE_SEEDED_AT);

export const episodeResource = (id, feedGuid, attributes) => ({
  type: "episode",
  id,
  attributes,
  relationships: { subscription: { data: { type: "subscription", id: feedGuid } } },
});

/** A state a device reports for the first time: a mediaUrl of about 110 bytes, an itemGuid of 45, a position. */
function newEpisode(user) {
  const id = randomUUID();
  return episodeResource(id, EPISODE_FEED_GUID, {
    mediaUrl: `https://media.podcast-host.example.com/${user.id}/episodes/${id}.mp3`,
    itemGuid: `urn:uuid:${id}`,
    position: 120,
    duration: 3600,
    played: false,
    changedAt: NEW_EPISODE_CHANGED_AT,
  });
}

/**
 * A POST of seeded state n of `user` with a new position at `changedAt`: a merge that applies when
 * `changedAt` is later than the stored change (every seeded one is at EPISODE_SEEDED_AT), one that changes
 * nothing when it is that very time with the stored values.
 */
function episodeMergeRequest(tokens, user, n, changedAt, positionDelta) {
  const state = seededEpisode(user.id, user.no, n);
  return createRequest(
    tokens,
    user,
    "/v1/episodes",
    episodeResource(state.id, state.feedGuid, {
      mediaUrl: state.mediaUrl,
      position: state.position + positionDelta,
      changedAt,
    }),
  );
}

/** Merge number k into the merging user's states: each a later device time than the one before. */
const appliedMerge = (tokens, user, k) =>
  episodeMergeRequest(tokens, user, k % user.episodes, new Date(SEEDED_AT_MS + (k + 1) * 1000).toISOString(), k + 1);

// gpodder.net API v2 (docs/API.md §14).

/** `POST /v1/app-passwords` with the user's bearer token: answers the gpodder username and the password. */
export function appPasswordRequest(tokens, user, label) {
  return createRequest(tokens, user, "/v1/app-passwords", { type: "app-password", attributes: { label } });
}

/** HTTP Basic with an app password, as gPodder, AntennaPod and Kasts send it. */
export const basic = ({ username, password }, extra = {}) => ({
  authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`,
  ...extra,
});

export const gpodderJson = (credential, method, path, body) => ({
  method,
  path,
  headers: basic(credential, body === undefined ? {} : { "content-type": "application/json" }),
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
});

const gpodderPodcast = (user, i) => `https://feeds.example.com/${user.id}/gpodder-podcast-${i}.xml`;

/**
 * What an app does before it syncs, and what fills the isolate's caches: sign in (verifies the credentials,
 * cached 60 s) and create its device (known to the isolate 10 min).
 */
export function gpodderWarmUp(credential) {
  return [
    gpodderJson(credential, "POST", `/api/2/auth/${credential.username}/login.json`),
    gpodderJson(credential, "POST", `/api/2/devices/${credential.username}/${GPODDER_DEVICE}.json`, {
      caption: "Bench phone",
      type: "mobile",
    }),
  ];
}

/** The subscription upload of request k of a pool user: new feeds added, two seeded ones removed. */
function gpodderSubscriptionsPost(credential, user, k) {
  return gpodderJson(credential, "POST", `/api/2/subscriptions/${credential.username}/${GPODDER_DEVICE}.json`, {
    add: Array.from({ length: GPODDER_ADDS }, (_, i) => feedUrl(user.id, `gpodder-${k}-${i}`)),
    remove: Array.from({ length: GPODDER_REMOVES }, (_, i) => feedUrl(user.id, GPODDER_REMOVES * k + i)),
  });
}

/** The upload that subscribes a user to the podcasts its episode uploads name (seed time). */
export function gpodderPodcastsRequest(credential, user) {
  return gpodderJson(credential, "POST", `/api/2/subscriptions/${credential.username}/${GPODDER_DEVICE}.json`, {
    add: Array.from({ length: GPODDER_PODCASTS }, (_, i) => gpodderPodcast(user, i)),
    remove: [],
  });
}

/** 100 `play` actions with positions for episodes new to the server, spread over the user's podcasts. */
function gpodderEpisodesUpload(credential, user) {
  const batch = randomUUID();
  const actions = Array.from({ length: GPODDER_UPLOAD_ACTIONS }, (_, i) => ({
    podcast: gpodderPodcast(user, i % GPODDER_PODCASTS),
    episode: `https://media.podcast-host.example.com/${user.id}/episodes/${batch}/${i}.mp3`,
    guid: `urn:uuid:${batch}:${i}`,
    action: "play",
    timestamp: NEW_EPISODE_CHANGED_AT.slice(0, 19),
    started: 0,
    position: 60 + i,
    total: 3600,
    device: GPODDER_DEVICE,
  }));
  return gpodderJson(credential, "POST", `/api/2/episodes/${credential.username}.json`, actions);
}

function patchRequest(tokens, user, guid, url) {
  return {
    method: "PATCH",
    path: `/v1/subscriptions/${guid}`,
    headers: auth(tokens, user, { "content-type": JSONAPI }),
    body: JSON.stringify({ data: resource(guid, url) }),
  };
}

function opmlRequest(tokens, user) {
  return {
    method: "POST",
    path: "/v1/subscriptions.opml",
    headers: auth(tokens, user, { "content-type": OPML }),
    body: opmlDocument(user.id),
  };
}

/**
 * The requests that only read: the same for load, probes and the isolate-only worker (whose gpodder requests
 * sign in with the users' second app password, `credential`).
 */
function reads(u, tokens, credential = "gpodder") {
  const existingGuid = seededGuid(u.list.no, 150);
  const syncUser = u.scaling[10000];
  return {
    list: () => ({ method: "GET", path: listPath(1), headers: auth(tokens, u.list) }),
    "list-include-podcast": () => ({
      method: "GET",
      path: `${listPath(1)}&include=podcast`,
      headers: auth(tokens, u.list),
    }),
    "get-one": () => ({ method: "GET", path: `/v1/subscriptions/${existingGuid}`, headers: auth(tokens, u.list) }),
    "post-existing": () => postRequest(tokens, u.list, existingGuid, feedUrl(u.list.id, 150)),
    sync: () => ({ method: "GET", path: syncPath(0), headers: auth(tokens, syncUser) }),
    // State 0 of the feed user (live) sent again exactly as stored, at its stored device time.
    "episode-noop": () => episodeMergeRequest(tokens, u.episodeFeed, 0, EPISODE_SEEDED_AT, 0),
    "episode-feed": () => ({ method: "GET", path: episodeFeedPath(0), headers: auth(tokens, u.episodeFeed) }),
    "gpodder-episodes-get": () => {
      const signedIn = u.gpodderEpisodes[credential];
      return gpodderJson(signedIn, "GET", `/api/2/episodes/${signedIn.username}.json?since=0`);
    },
    "gpodder-subscriptions-get": () => {
      const signedIn = u.scaling[10000][credential];
      return gpodderJson(signedIn, "GET", `/api/2/subscriptions/${signedIn.username}/${GPODDER_DEVICE}.json?since=0`);
    },
  };
}

/** The user each gpodder row signs in as, given the writers of its two uploads. */
const gpodderUserOf = (u, uploader, subscriber) => ({
  "gpodder-episodes-upload": uploader,
  "gpodder-episodes-get": u.gpodderEpisodes,
  "gpodder-subscriptions-get": u.scaling[10000],
  "gpodder-subscriptions-post": subscriber,
});

/**
 * The measured endpoints, for one set of writing users (the load set or the probe set).
 * @returns {Endpoint[]}
 */
export function endpoints(u, set, tokens) {
  const read = reads(u, tokens);
  let patches = 0;
  const bulk = BULK_SIZES.map((n) => ({
    name: `bulk-${n}`,
    expected: [200],
    dynamic: true,
    adds: n,
    next: () => bulkRequest(tokens, set.bulk[n].take().user, n),
  }));
  const list = [
    { name: "list", expected: [200], dynamic: false, next: read.list },
    { name: "get-one", expected: [200], dynamic: false, next: read["get-one"] },
    { name: "post-existing", expected: [200], dynamic: false, next: read["post-existing"] },
    {
      name: "post-new",
      expected: [201],
      dynamic: true,
      next: () => {
        const guid = randomUUID();
        const { user } = set.postNew.take();
        return postRequest(tokens, user, guid, feedUrl(user.id, guid));
      },
    },
    {
      name: "delete",
      expected: [204],
      dynamic: true,
      next: () => {
        const { user, k } = set.delete.take();
        return { method: "DELETE", path: `/v1/subscriptions/${seededGuid(user.no, k)}`, headers: auth(tokens, user) };
      },
    },
    {
      // A real move each time: a feed URL the subscription never had.
      name: "patch",
      expected: [200],
      dynamic: true,
      next: () => {
        const k = patches++;
        return patchRequest(
          tokens,
          set.patch,
          seededGuid(set.patch.no, k % set.patch.active),
          feedUrl(set.patch.id, `moved-${k}`),
        );
      },
    },
    { name: "sync", expected: [200], dynamic: false, next: read.sync },
    ...bulk,
    ...episodeEndpoints(read, set, tokens),
    ...gpodderEndpoints(u, read, set),
  ];
  if (set.opml) {
    list.push({
      name: "opml-import",
      expected: [200],
      dynamic: true,
      imports: OPML_FEEDS,
      optional: true,
      next: () => opmlRequest(tokens, set.opml.take().user),
    });
  }
  return list;
}

/** The episode rows for one set of writing users: new states from a pool, merges, the no-op, the feed, bulk adds. */
function episodeEndpoints(read, set, tokens) {
  let merges = 0;
  return [
    {
      name: "episode-post-new",
      expected: [201],
      dynamic: true,
      next: () => {
        const { user } = set.episodeNew.take();
        return createRequest(tokens, user, "/v1/episodes", newEpisode(user));
      },
    },
    {
      // A different state each request, each at a later device time: every one applies.
      name: "episode-merge",
      expected: [200],
      dynamic: true,
      next: () => appliedMerge(tokens, set.episodeMerge, merges++),
    },
    { name: "episode-noop", expected: [200], dynamic: false, next: read["episode-noop"] },
    { name: "episode-feed", expected: [200], dynamic: false, next: read["episode-feed"] },
    ...EPISODE_BULK_SIZES.map((n) => ({
      name: `episode-bulk-${n}`,
      expected: [200],
      dynamic: true,
      adds: n,
      next: () => bulkRequest(tokens, set.episodeBulk[n].take().user, n, newEpisode),
    })),
  ];
}

/**
 * The gpodder rows for one set of writing users. `warmUp`: what the probes send first, so they measure the
 * steady state.
 */
function gpodderEndpoints(u, read, set) {
  // A probe pool has one user: its first.
  const users = gpodderUserOf(u, set.gpodderUpload.users[0], set.gpodderSubscriptions.users[0]);
  const warmUp = (name) => () => gpodderWarmUp(users[name].gpodder);
  return [
    {
      name: "gpodder-episodes-upload",
      expected: [200],
      dynamic: true,
      warmUp: warmUp("gpodder-episodes-upload"),
      next: () => {
        const { user } = set.gpodderUpload.take();
        return gpodderEpisodesUpload(user.gpodder, user);
      },
    },
    ...["gpodder-episodes-get", "gpodder-subscriptions-get"].map((name) => ({
      name,
      expected: [200],
      dynamic: false,
      warmUp: warmUp(name),
      next: read[name],
    })),
    {
      name: "gpodder-subscriptions-post",
      expected: [200],
      dynamic: true,
      warmUp: warmUp("gpodder-subscriptions-post"),
      next: () => {
        const { user, k } = set.gpodderSubscriptions.take();
        return gpodderSubscriptionsPost(user.gpodder, user, k);
      },
    },
  ];
}

/**
 * One fixed request per isolate-only scenario. Writes use the isolate users: each is recorded once
 * against the real D1 (where it really writes) and then replayed as often as the load asks.
 * @returns {Endpoint[]}
 */
export function isolateEndpoints(u, tokens) {
  const read = reads(u, tokens, "gpodderIsolate");
  const { writer, opml, episodes, gpodder } = u.isolate;
  const fresh = randomUUID();
  const requests = {
    ...read,
    "post-new": postRequest(tokens, writer, fresh, feedUrl(writer.id, fresh)),
    delete: { method: "DELETE", path: `/v1/subscriptions/${seededGuid(writer.no, 0)}`, headers: auth(tokens, writer) },
    patch: patchRequest(tokens, writer, seededGuid(writer.no, 1), feedUrl(writer.id, "moved")),
    "bulk-1": bulkRequest(tokens, writer, 1),
    "bulk-100": bulkRequest(tokens, writer, 100),
    "opml-import": opmlRequest(tokens, opml),
    "episode-post-new": createRequest(tokens, episodes, "/v1/episodes", newEpisode(episodes)),
    "episode-merge": appliedMerge(tokens, episodes, 0),
    "episode-bulk-1": bulkRequest(tokens, episodes, 1, newEpisode),
    "episode-bulk-100": bulkRequest(tokens, episodes, 100, newEpisode),
    "gpodder-episodes-upload": gpodderEpisodesUpload(gpodder.gpodderIsolate, gpodder),
    "gpodder-subscriptions-post": gpodderSubscriptionsPost(gpodder.gpodderIsolate, gpodder, 0),
  };
  const gpodderUser = gpodderUserOf(u, gpodder, gpodder);
  const expected = { "post-new": [201], delete: [204], "episode-post-new": [201] };
  // The list's podcasts must be the seeded ones, fetched: a pending podcast is a smaller answer than a real one.
  const podcastsShown = { "list-include-podcast": "ok" };
  return ISOLATE_NAMES.map((name) => {
    const request = typeof requests[name] === "function" ? requests[name]() : requests[name];
    return {
      name,
      expected: expected[name] ?? [200],
      dynamic: false,
      optional: name === "opml-import",
      ...(podcastsShown[name] ? { podcastsShown: podcastsShown[name] } : {}),
      next: () => request,
      // The calls that fill the isolate's caches (sign-in, device), recorded before the steady-state tape.
      ...(gpodderUser[name] ? { warmUp: () => gpodderWarmUp(gpodderUser[name].gpodderIsolate) } : {}),
    };
  });
}

/** Page `page` of the list for the scaling user with `size` subscriptions. */
export function scalingEndpoint(u, tokens, size, page) {
  const user = u.scaling[size];
  return {
    name: `list-${size}-page-${page}`,
    expected: [200],
    dynamic: false,
    next: () => ({ method: "GET", path: listPath(page), headers: auth(tokens, user) }),
  };
}

/** An episode feed page of 100 for the user with 50 000 states, from `since`. */
export function episodeFeedEndpoint(u, tokens, since) {
  return {
    name: `episode-feed-since-${since}`,
    expected: [200],
    dynamic: false,
    next: () => ({ method: "GET", path: episodeFeedPath(since), headers: auth(tokens, u.episodeFeed) }),
  };
}

/** A sync page of 100 for the user with 10 000 changes, from `since`. */
export function syncEndpoint(u, tokens, since) {
  return {
    name: `sync-since-${since}`,
    expected: [200],
    dynamic: false,
    next: () => ({ method: "GET", path: syncPath(since), headers: auth(tokens, u.scaling[10000]) }),
  };
}
