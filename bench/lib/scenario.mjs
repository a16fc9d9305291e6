// What the bench sends: the seeded users and, for each measured endpoint, how to build its next
// request. Every request is built fresh by `next()`: where a request must differ each time (a new
// guid to add, an existing one to delete) `dynamic` is set and autocannon calls it per request.
import { randomUUID } from "node:crypto";
import { sign } from "hono/jwt";
import { seededGuid } from "./data.mjs";

export const JSONAPI = "application/vnd.api+json";
export const ATOMIC = `${JSONAPI};ext="https://jsonapi.org/ext/atomic"`;
export const PAGE_SIZE = 25;
export const BULK_SIZES = [1, 10, 50, 100];
export const SCALING_SIZES = [10, 1000, 10000];
export const SCALING_PAGES = [1, 40];

export const listPath = (page) => `/v1/subscriptions?page%5Bnumber%5D=${page}&page%5Bsize%5D=${PAGE_SIZE}`;

/** Tombstones seeded among the actives of the list users: one per four active subscriptions. */
const withTombstones = (active) => Math.ceil(active / 4);

/**
 * The seeded users. `deletePool` is how many subscriptions the DELETE load may remove (one per
 * request); it must exceed the requests that run can send.
 */
export function users(deletePool) {
  const list = (no, active) => ({ id: `bench-list-${active}`, no, active, tombstones: withTombstones(active) });
  const plain = (no, id, active) => ({ id, no, active });
  return {
    list: list(1, 300),
    scaling: Object.fromEntries(SCALING_SIZES.map((size, i) => [size, list(2 + i, size)])),
    load: {
      postNew: plain(10, "bench-post-new", 10),
      delete: plain(11, "bench-delete", deletePool),
      bulk: Object.fromEntries(BULK_SIZES.map((n, i) => [n, plain(12 + i, `bench-bulk-${n}`, 10)])),
    },
    probe: {
      postNew: plain(20, "probe-post-new", 10),
      delete: plain(21, "probe-delete", 50),
      bulk: Object.fromEntries(BULK_SIZES.map((n, i) => [n, plain(22 + i, `probe-bulk-${n}`, 10)])),
    },
  };
}

export function allUsers(u) {
  return [
    u.list,
    ...Object.values(u.scaling),
    u.load.postNew,
    u.load.delete,
    ...Object.values(u.load.bulk),
    u.probe.postNew,
    u.probe.delete,
    ...Object.values(u.probe.bulk),
  ];
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

/**
 * @typedef {{ method: string, path: string, headers: Record<string, string>, body?: string }} Request
 * @typedef {{ name: string, expected: number[], dynamic: boolean, next: () => Request, adds?: number }} Endpoint
 */

/**
 * The measured endpoints, for one set of writing users (the load set or the probe set).
 * @returns {Endpoint[]}
 */
export function endpoints(u, writers, tokens) {
  const headers = (user, extra = {}) => ({ authorization: `Bearer ${tokens[user.id]}`, accept: JSONAPI, ...extra });
  const existingGuid = seededGuid(u.list.no, 150);
  let deleted = 0;
  const bulk = BULK_SIZES.map((n) => {
    const user = writers.bulk[n];
    return {
      name: `bulk-${n}`,
      expected: [200],
      dynamic: true,
      adds: n,
      next: () => ({
        method: "POST",
        path: "/v1/operations",
        headers: headers(user, { accept: ATOMIC, "content-type": ATOMIC }),
        body: JSON.stringify({
          "atomic:operations": Array.from({ length: n }, () => {
            const guid = randomUUID();
            return { op: "add", data: resource(guid, feedUrl(user.id, guid)) };
          }),
        }),
      }),
    };
  });
  return [
    {
      name: "list",
      expected: [200],
      dynamic: false,
      next: () => ({ method: "GET", path: listPath(1), headers: headers(u.list) }),
    },
    {
      name: "get-one",
      expected: [200],
      dynamic: false,
      next: () => ({ method: "GET", path: `/v1/subscriptions/${existingGuid}`, headers: headers(u.list) }),
    },
    {
      name: "post-existing",
      expected: [200],
      dynamic: false,
      next: () => ({
        method: "POST",
        path: "/v1/subscriptions",
        headers: headers(u.list, { "content-type": JSONAPI }),
        body: JSON.stringify({ data: resource(existingGuid, feedUrl(u.list.id, 150)) }),
      }),
    },
    {
      name: "post-new",
      expected: [201],
      dynamic: true,
      next: () => {
        const guid = randomUUID();
        return {
          method: "POST",
          path: "/v1/subscriptions",
          headers: headers(writers.postNew, { "content-type": JSONAPI }),
          body: JSON.stringify({ data: resource(guid, feedUrl(writers.postNew.id, guid)) }),
        };
      },
    },
    {
      name: "delete",
      expected: [204],
      dynamic: true,
      next: () => ({
        method: "DELETE",
        path: `/v1/subscriptions/${seededGuid(writers.delete.no, deleted++)}`,
        headers: headers(writers.delete),
      }),
    },
    ...bulk,
  ];
}

/** List page `page` for the scaling user with `size` subscriptions. */
export function scalingEndpoint(u, tokens, size, page) {
  const user = u.scaling[size];
  return {
    name: `list-${size}-page-${page}`,
    expected: [200],
    dynamic: false,
    next: () => ({
      method: "GET",
      path: listPath(page),
      headers: { authorization: `Bearer ${tokens[user.id]}`, accept: JSONAPI },
    }),
  };
}
