import { describe, expect, it } from "vitest";
import { TOMBSTONE_RETENTION_MS } from "../src/db/retention";
import { MAX_URL_BYTES } from "../src/db/storage";
import { as, type Caller, databaseFor, listAll, runCron } from "./helpers";
import { propertyOptions } from "./property-options";

/**
 * docs/API.md §15, proven over random histories: subscriptions and episode states of one user are written,
 * removed, moved and merged while tombstones are purged, by the count quotas and the storage budget (the user's
 * counters are padded so that a handful of rows fill them) and by the retention cron (tombstones backdated).
 * Devices follow both change feeds from tokens they got at random points, in random page sizes, stopping
 * mid-walk. Every device must end equal to the server, having received every change it lacked or `410` (then
 * syncing again from 0); a walk from 0 with page size 1 always completes.
 */

/**
 * Histories (seeds 1, 2, ...): sized like a property test (property-options.ts: PROPERTY_RUNS_SCALE, and a tenth in
 * the shards project), but at least 6, so that the checks that the property is not vacuous have runs to count.
 */
const RUNS = Math.max(6, propertyOptions(1, 24).numRuns);
const STEPS = 45;
const FEED = "9b024349-ccf0-5f69-a609-6b82873eab3c";
const POOL = 7;
/** Room left under each limit once the counters are padded: a few rows fill it. */
const ROOM = { subscriptions: 5, episodes: 5, bytes: 700 };

/** mulberry32: small, seedable, so a failing run can be replayed from its seed. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]) => items[Math.floor(next() * items.length)],
  };
}

type Resource = "subscriptions" | "episodes";
type Item = { id: string; attributes: Record<string, unknown> };
type Page = { data: Item[]; meta: { syncToken: string }; links: { next: string | null } };

/** What a device keeps of an item: its state without the deletion marker; a tombstone removes it. */
function applyItems(resource: Resource, local: Map<string, string>, items: Item[]) {
  for (const { id, attributes } of items) {
    const deleted = resource === "subscriptions" ? attributes.userUnsubscribedAt : attributes.deletedAt;
    if (deleted !== null) local.delete(id);
    else if (resource === "subscriptions") local.set(id, String(attributes.feedUrl));
    else local.set(id, JSON.stringify([attributes.mediaUrl, attributes.position, attributes.played]));
  }
}

interface Device {
  local: Map<string, string>;
  token: string;
  expired: number;
}

/**
 * Follows the feed from the device's token for at most `pages` pages (all when undefined). A 410 makes it drop
 * its copy and start again from 0, as the detail says.
 */
async function follow(user: Caller, resource: Resource, device: Device, size: number, pages?: number) {
  let next: string | null = `/v1/${resource}?filter[since]=${device.token}&page[size]=${size}`;
  let restarted = device.token === "0";
  for (let page = 0; next && (pages === undefined || page < pages); page++) {
    const response = await user.get(next);
    if (response.status === 410) {
      const error = ((await response.json()) as { errors: { title: string }[] }).errors[0];
      expect(error.title).toBe("Sync token expired");
      // Nothing purges while a device walks here: a walk from 0 must never be refused.
      expect(restarted, "a walk from 0 was refused").toBe(false);
      restarted = true;
      device.local.clear();
      device.token = "0";
      device.expired++;
      next = `/v1/${resource}?filter[since]=0&page[size]=${size}`;
      continue;
    }
    expect(response.status, await response.clone().text()).toBe(200);
    const body = (await response.json()) as Page;
    applyItems(resource, device.local, body.data);
    device.token = body.meta.syncToken;
    next = body.links.next;
  }
}

/** The server's state as a walk from 0 with page size 1 reads it: it must complete without a 410. */
async function walkFromZero(user: Caller, resource: Resource) {
  const device: Device = { local: new Map(), token: "0", expired: 0 };
  await follow(user, resource, device, 1);
  expect(device.expired, `${resource}: a walk from 0 was refused`).toBe(0);
  return device.local;
}

/**
 * Tombstones are recycled, never a lockout: a write refused by a quota or the budget had no tombstones left that
 * could have made room (the user's counters are padded, so "live rows alone" is the padding plus the live rows).
 */
async function refusalWasJustified(db: D1Database, userId: string, response: Response, sentBytes: number) {
  const body = (await response.clone().json()) as {
    errors?: { title: string }[];
    "atomic:results"?: { errors?: { title: string }[] }[];
  };
  const title = body.errors?.[0]?.title ?? body["atomic:results"]?.[0]?.errors?.[0]?.title;
  if (title === undefined || !title.endsWith("limit reached")) return;
  const room = (await db
    .prepare(
      `SELECT (SELECT count(*) FROM subscriptions WHERE user_id = ?1 AND unsubscribed_at IS NOT NULL) AS subscription_tombstones,
        (SELECT coalesce(sum(length(CAST(feed_url AS BLOB))), 0) FROM subscriptions WHERE user_id = ?1 AND unsubscribed_at IS NOT NULL) AS tombstone_bytes,
        (SELECT count(*) FROM episodes WHERE user_id = ?1 AND deleted_at IS NOT NULL) AS episode_tombstones,
        (SELECT url_bytes FROM user_stats WHERE user_id = ?1) AS url_bytes`,
    )
    .bind(userId)
    .first()) as Record<string, number>;
  if (title === "Subscription limit reached") expect(room.subscription_tombstones, title).toBe(0);
  if (title === "Episode limit reached") expect(room.episode_tombstones, title).toBe(0);
  if (title === "Storage limit reached") {
    expect(MAX_URL_BYTES - room.url_bytes + room.tombstone_bytes, title).toBeLessThan(sentBytes);
  }
}

async function history(seed: number) {
  const rng = random(seed);
  const userId = `purge-sync-${seed}`;
  const user = await as(userId);
  const db = await databaseFor(userId);
  const subscriptionIds = Array.from({ length: POOL }, () => crypto.randomUUID());
  const episodeIds = Array.from({ length: POOL }, () => crypto.randomUUID());
  const url = (kind: string) => `https://${kind}.example.com/${crypto.randomUUID()}/${"x".repeat(rng.int(120))}`;
  const resources: Resource[] = ["subscriptions", "episodes"];
  const devices = resources.flatMap((resource) =>
    Array.from({ length: 3 }, () => ({ resource, device: { local: new Map(), token: "0", expired: 0 } as Device })),
  );
  let clock = Date.UTC(2026, 0, 1);

  // The first write creates the user's counters; then they are padded so that a few rows fill each limit.
  await user.post("/v1/subscriptions", {
    data: { type: "subscription", id: subscriptionIds[0], attributes: { feedUrl: url("feeds") } },
  });
  await db
    .prepare(
      "UPDATE user_stats SET stored_count = stored_count + ?, episode_count = episode_count + ?, url_bytes = url_bytes + ? WHERE user_id = ?",
    )
    .bind(10_000 - ROOM.subscriptions, 50_000 - ROOM.episodes, MAX_URL_BYTES - ROOM.bytes, userId)
    .run();

  const episodeDocument = (id: string, attributes: Record<string, unknown>) => ({
    data: {
      type: "episode",
      id,
      attributes,
      relationships: { subscription: { data: { type: "subscription", id: FEED } } },
    },
  });
  const statuses = new Set([200, 201, 204, 403, 404]);
  for (let step = 0; step < STEPS; step++) {
    const roll = rng.int(100);
    let response: Response | undefined;
    let sentBytes = 0;
    if (roll < 20) {
      const id = rng.pick(subscriptionIds);
      const document = { data: { type: "subscription", id, attributes: { feedUrl: url("feeds") } } };
      sentBytes = document.data.attributes.feedUrl.length;
      response = rng.int(2)
        ? await user.post("/v1/subscriptions", document)
        : await user.operations({ "atomic:operations": [{ op: "add", ...document }] });
    } else if (roll < 30) {
      response = await user.delete(`/v1/subscriptions/${rng.pick(subscriptionIds)}`);
    } else if (roll < 36) {
      const id = rng.pick(subscriptionIds);
      const feedUrl = url("moved");
      sentBytes = feedUrl.length;
      response = await user.patch(`/v1/subscriptions/${id}`, {
        data: { type: "subscription", id, attributes: { feedUrl } },
      });
    } else if (roll < 56) {
      clock += 1000;
      const attributes = { mediaUrl: url("cdn"), position: rng.int(3600), changedAt: new Date(clock).toISOString() };
      sentBytes = attributes.mediaUrl.length;
      response = await user.post("/v1/episodes", episodeDocument(rng.pick(episodeIds), attributes));
    } else if (roll < 66) {
      response = await user.delete(`/v1/episodes/${rng.pick(episodeIds)}`);
    } else if (roll < 72) {
      // Backdate a random tombstone past the retention, then let the cron run.
      const table = rng.pick(["subscriptions", "episodes"]);
      const column = table === "subscriptions" ? "unsubscribed_at" : "deleted_at";
      await db
        .prepare(
          `UPDATE ${table} SET ${column} = ?1 WHERE user_id = ?2 AND ${column} IS NOT NULL AND change_seq = (
             SELECT change_seq FROM ${table} WHERE user_id = ?2 AND ${column} IS NOT NULL ORDER BY random() LIMIT 1)`,
        )
        .bind(Date.now() - TOMBSTONE_RETENTION_MS - 1000, userId)
        .run();
      await runCron();
    } else {
      // A device syncs for a while, in pages of 1 to 3, and may stop mid-walk.
      const { resource, device } = rng.pick(devices);
      await follow(user, resource, device, 1 + rng.int(3), rng.int(4));
    }
    if (response)
      expect(statuses.has(response.status), `${response.status} ${await response.clone().text()}`).toBe(true);
    if (response && (response.status === 403 || response.status === 200)) {
      await refusalWasJustified(db, userId, response, sentBytes);
    }
  }

  const stats = await db
    .prepare("SELECT * FROM user_stats WHERE user_id = ?")
    .bind(userId)
    .first<Record<string, number>>();
  expect(stats?.url_bytes).toBeLessThanOrEqual(MAX_URL_BYTES);
  const truth = {
    subscriptions: await walkFromZero(user, "subscriptions"),
    episodes: await walkFromZero(user, "episodes"),
  };
  expect(truth.subscriptions).toEqual(await listAll(user));
  for (const { resource, device } of devices) {
    await follow(user, resource, device, 1 + rng.int(3));
    expect(device.local, `seed ${seed}: a ${resource} device`).toEqual(truth[resource]);
  }
  return {
    purged: (stats?.subscription_horizon ?? 0) > 0 || (stats?.episode_horizon ?? 0) > 0,
    expired: devices.reduce((sum, { device }) => sum + device.expired, 0),
  };
}

describe("purging never makes a device miss a deletion, and never strands it (docs/API.md §15)", () => {
  it(`random histories with purges by quota, budget and cron: every device ends equal to the server (${RUNS} runs)`, async () => {
    let purgedRuns = 0;
    let expired = 0;
    for (let seed = 1; seed <= RUNS; seed++) {
      const outcome = await history(seed);
      if (outcome.purged) purgedRuns++;
      expired += outcome.expired;
    }
    // The histories do purge and do strand tokens: the property is not vacuous.
    expect(purgedRuns).toBeGreaterThan(RUNS / 2);
    expect(expired).toBeGreaterThan(0);
  }, 300_000);
});
