import { describe, expect, it } from "vitest";
import { FEED_URL, ITEM_GUID, MEDIA_URL } from "../src/db/url-pieces";
import {
  as,
  type Caller,
  databaseFor,
  listAll,
  meteredDatabaseOf,
  ORIGIN,
  send,
  subscriptionDocument,
  syncFrom,
} from "./helpers";

/**
 * Long URL text kept as a head in the row and pieces in `url_pieces` (drizzle/0007, docs/CAPACITY.md): every
 * read path gives back exactly what was written, at the cut points and with multi-byte characters across them,
 * the budget counts every byte, and nothing outlives its row.
 */

const PIECE_BYTES = 850;
const encoder = new TextEncoder();
const bytesOf = (text: string) => encoder.encode(text).length;

/** A URL of exactly `bytes` UTF-8 bytes whose `fill` characters (1 to 4 bytes each) run across every cut point. */
function urlOf(bytes: number, fill = "a", host = "feeds.example.com"): string {
  let url = `https://${host}/${crypto.randomUUID().slice(0, 8)}/`;
  const fillBytes = bytesOf(fill);
  while (bytesOf(url) + fillBytes <= bytes) url += fill;
  return url + "b".repeat(bytes - bytesOf(url));
}

/** Lengths around the head and the first piece of a text whose head keeps `head` bytes, and the maximum. */
function boundaries(head: number, max: number): number[] {
  const cuts = [head - 1, head, head + 1, head + PIECE_BYTES, head + PIECE_BYTES + 1, max];
  return [...new Set(cuts.filter((bytes) => bytes <= max))];
}

const FILLS = ["a", "é", "€", "😀"];

async function query<T>(userId: string, sql: string): Promise<T[]> {
  const { results } = await (await databaseFor(userId)).prepare(sql).bind(userId).all<T>();
  return results;
}

/**
 * What storage must always satisfy: no row keeps more than its head, no piece passes its size, no piece lacks
 * its row (or its text), and url_bytes counts the full text of every stored URL.
 */
async function expectStorageConsistent(userId: string, expectedUrlBytes?: number) {
  const [heads] = await query<{ feed: number | null; media: number | null; item: number | null }>(
    userId,
    `SELECT (SELECT max(length(CAST(feed_url AS BLOB))) FROM subscriptions WHERE user_id = ?1) AS feed,
      (SELECT max(length(CAST(media_url AS BLOB))) FROM episodes WHERE user_id = ?1) AS media,
      (SELECT max(length(CAST(item_guid AS BLOB))) FROM episodes WHERE user_id = ?1) AS item`,
  );
  expect(heads.feed ?? 0).toBeLessThanOrEqual(FEED_URL.headBytes);
  expect(heads.media ?? 0).toBeLessThanOrEqual(MEDIA_URL.headBytes);
  expect(heads.item ?? 0).toBeLessThanOrEqual(ITEM_GUID.headBytes);
  const [pieces] = await query<{ largest: number | null; orphans: number }>(
    userId,
    `SELECT max(length(CAST(piece AS BLOB))) AS largest, sum(CASE field
        WHEN 0 THEN NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.user_id = p.user_id AND s.guid = p.owner)
        WHEN 1 THEN NOT EXISTS (SELECT 1 FROM episodes e WHERE e.user_id = p.user_id AND e.id = p.owner AND e.media_url IS NOT NULL)
        ELSE NOT EXISTS (SELECT 1 FROM episodes e WHERE e.user_id = p.user_id AND e.id = p.owner AND e.item_guid IS NOT NULL)
      END) AS orphans
    FROM url_pieces p WHERE p.user_id = ?1`,
  );
  expect(pieces.largest ?? 0).toBeLessThanOrEqual(PIECE_BYTES);
  expect(pieces.orphans ?? 0).toBe(0);
  if (expectedUrlBytes !== undefined) {
    const [stats] = await query<{ url_bytes: number }>(userId, "SELECT url_bytes FROM user_stats WHERE user_id = ?1");
    expect(stats?.url_bytes ?? 0).toBe(expectedUrlBytes);
  }
}

async function pieceCount(userId: string): Promise<number> {
  const [row] = await query<{ n: number }>(userId, "SELECT count(*) AS n FROM url_pieces WHERE user_id = ?1");
  return row.n;
}

async function gpodderClient(user: Caller) {
  const minted = await user.post("/v1/app-passwords", { data: { type: "app-password", attributes: { label: "x" } } });
  const { username, password } = ((await minted.json()) as { data: { attributes: Record<string, string> } }).data
    .attributes;
  const authorization = `Basic ${btoa(`${username}:${password}`)}`;
  const request = (method: string, path: string, body?: string) =>
    send(new Request(`${ORIGIN}${path}`, { method, headers: { Authorization: authorization }, body }));
  return { username, request };
}

type Document<T> = { data: T };
type Subscription = { id: string; attributes: { feedUrl: string } };
type Episode = { id: string; attributes: { mediaUrl: string; itemGuid: string | null } };

describe("feedUrls at the cut points read back whole through every path", () => {
  it("JSON:API get, list, change feed and OPML export; gpodder list and changes; url_bytes counts every byte", async () => {
    const user = await as(`pieces-feeds-${crypto.randomUUID()}`);
    const feeds = new Map<string, string>();
    for (const fill of FILLS) {
      for (const bytes of boundaries(FEED_URL.headBytes, 2048)) {
        const guid = crypto.randomUUID();
        const feedUrl = urlOf(bytes, fill);
        expect(bytesOf(feedUrl)).toBe(bytes);
        const created = await user.post("/v1/subscriptions", subscriptionDocument(guid, feedUrl));
        expect(created.status, `${fill} ${bytes}`).toBe(201);
        expect(((await created.json()) as Document<Subscription>).data.attributes.feedUrl).toBe(feedUrl);
        feeds.set(guid, feedUrl);
      }
    }
    const total = [...feeds.values()].reduce((sum, url) => sum + bytesOf(url), 0);
    await expectStorageConsistent(user.userId, total);
    expect(await pieceCount(user.userId)).toBeGreaterThan(feeds.size);

    for (const [guid, feedUrl] of feeds) {
      const one = (await (await user.get(`/v1/subscriptions/${guid}`)).json()) as Document<Subscription>;
      expect(one.data.attributes.feedUrl).toBe(feedUrl);
    }
    const list = (await (await user.get("/v1/subscriptions?page[size]=100")).json()) as Document<Subscription[]>;
    expect(new Map(list.data.map((item) => [item.id, item.attributes.feedUrl]))).toEqual(feeds);
    const changes = await syncFrom(user, "0", 100);
    expect(new Map(changes.items.map((item) => [item.id, item.attributes?.feedUrl]))).toEqual(feeds);

    const opml = await (await user.get("/v1/subscriptions.opml", { Accept: "text/x-opml" })).text();
    for (const feedUrl of feeds.values()) expect(opml).toContain(`xmlUrl="${feedUrl.replaceAll("&", "&amp;")}"`);

    const { username, request } = await gpodderClient(user);
    const simple = (await (await request("GET", `/subscriptions/${username}.json`)).json()) as string[];
    expect(new Set(simple)).toEqual(new Set(feeds.values()));
    const since = (await (await request("GET", `/api/2/subscriptions/${username}/phone.json?since=0`)).json()) as {
      add: string[];
    };
    expect(new Set(since.add)).toEqual(new Set(feeds.values()));
    // The simple API's upload of the same list keeps every feed: each stored URL matches its sent one.
    const put = await request("PUT", `/subscriptions/${username}/phone.json`, JSON.stringify([...feeds.values()]));
    expect(put.status).toBe(200);
    expect(await listAll(user)).toEqual(feeds);

    // gpodder finds a feed by its exact long URL: removing it leaves the others, re-adding it revives it.
    const [gone, goneUrl] = [...feeds][feeds.size - 1];
    const removed = await request(
      "POST",
      `/api/2/subscriptions/${username}/phone.json`,
      JSON.stringify({ add: [], remove: [goneUrl] }),
    );
    expect(removed.status).toBe(200);
    expect((await user.get(`/v1/subscriptions/${gone}`)).status).toBe(404);
    const readded = await request(
      "POST",
      `/api/2/subscriptions/${username}/phone.json`,
      JSON.stringify({ add: [goneUrl], remove: [] }),
    );
    expect(readded.status).toBe(200);
    const revived = (await (await user.get(`/v1/subscriptions/${gone}`)).json()) as Document<Subscription>;
    expect(revived.data.attributes.feedUrl).toBe(goneUrl);
    await expectStorageConsistent(user.userId, total);
  });

  it("feed moves between long and short URLs, a repeated move is a no-op, tombstones and revivals keep the text", async () => {
    const user = await as(`pieces-moves-${crypto.randomUUID()}`);
    const guid = crypto.randomUUID();
    const version = async () =>
      (await query<{ version: number }>(user.userId, "SELECT version FROM user_stats WHERE user_id = ?1"))[0].version;
    let current = urlOf(2048, "€");
    expect((await user.post("/v1/subscriptions", subscriptionDocument(guid, current))).status).toBe(201);
    for (const next of [urlOf(60), urlOf(1651, "😀"), urlOf(801), urlOf(2048), urlOf(800, "é"), urlOf(1650, "€")]) {
      const moved = await user.patch(`/v1/subscriptions/${guid}`, subscriptionDocument(guid, next));
      expect(moved.status).toBe(200);
      expect(((await moved.json()) as Document<Subscription>).data.attributes.feedUrl).toBe(next);
      current = next;
      await expectStorageConsistent(user.userId, bytesOf(current));
      const before = await version();
      const again = await user.patch(`/v1/subscriptions/${guid}`, subscriptionDocument(guid, current));
      expect(((await again.json()) as Document<Subscription>).data.attributes.feedUrl).toBe(current);
      expect(await version(), "the same URL again changes nothing").toBe(before);
    }

    expect((await user.delete(`/v1/subscriptions/${guid}`)).status).toBe(204);
    const tombstone = await syncFrom(user, "0", 10);
    expect(tombstone.items[0].attributes?.feedUrl).toBe(current);
    await expectStorageConsistent(user.userId, bytesOf(current));

    const revivedUrl = urlOf(1700, "😀");
    expect((await user.post("/v1/subscriptions", subscriptionDocument(guid, revivedUrl))).status).toBe(201);
    const revived = (await (await user.get(`/v1/subscriptions/${guid}`)).json()) as Document<Subscription>;
    expect(revived.data.attributes.feedUrl).toBe(revivedUrl);
    await expectStorageConsistent(user.userId, bytesOf(revivedUrl));
  });
});

describe("episode mediaUrls and itemGuids at the cut points", () => {
  it("read back whole through get, change feed and gpodder; merges keep them; tombstones drop their pieces", async () => {
    const user = await as(`pieces-episodes-${crypto.randomUUID()}`);
    const feed = { guid: crypto.randomUUID(), feedUrl: urlOf(2048, "é") };
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const written = new Map<string, { mediaUrl: string; itemGuid: string }>();
    const medias = boundaries(MEDIA_URL.headBytes, 2048);
    const items = boundaries(ITEM_GUID.headBytes, 1024);
    for (const fill of FILLS) {
      for (let i = 0; i < Math.max(medias.length, items.length); i++) {
        const id = crypto.randomUUID();
        const mediaUrl = urlOf(medias[i % medias.length], fill, "cdn.example.com");
        const itemGuid = urlOf(items[i % items.length], fill, "guids.example.com");
        const posted = await user.post("/v1/episodes", {
          data: {
            type: "episode",
            id,
            attributes: { mediaUrl, itemGuid, position: 1, duration: 100, changedAt: "2026-01-01T00:00:00.000Z" },
            relationships: { subscription: { data: { type: "subscription", id: feed.guid } } },
          },
        });
        expect(posted.status, `${fill} ${i}`).toBe(201);
        expect(((await posted.json()) as Document<Episode>).data.attributes).toMatchObject({ mediaUrl, itemGuid });
        written.set(id, { mediaUrl, itemGuid });
      }
    }
    const textBytes = () =>
      bytesOf(feed.feedUrl) +
      [...written.values()].reduce((sum, text) => sum + bytesOf(text.mediaUrl) + bytesOf(text.itemGuid), 0);
    await expectStorageConsistent(user.userId, textBytes());

    for (const [id, text] of written) {
      const one = (await (await user.get(`/v1/episodes/${id}`)).json()) as Document<Episode>;
      expect(one.data.attributes).toMatchObject(text);
    }
    const changes = (await (await user.get("/v1/episodes?filter[since]=0&page[size]=100")).json()) as {
      data: Episode[];
    };
    expect(new Map(changes.data.map((item) => [item.id, item.attributes]))).toEqual(
      new Map([...written].map(([id, text]) => [id, expect.objectContaining(text)])),
    );
    const { username, request } = await gpodderClient(user);
    const actions = (await (await request("GET", `/api/2/episodes/${username}.json?since=0`)).json()) as {
      actions: { podcast: string; episode: string; guid?: string }[];
    };
    const told = new Set(actions.actions.map((action) => `${action.podcast} ${action.episode} ${action.guid}`));
    const expected = [...written.values()].map((text) => `${feed.feedUrl} ${text.mediaUrl} ${text.itemGuid}`);
    expect(told.size).toBe(written.size);
    expect(expected.every((action) => told.has(action))).toBe(true);

    // A merge that sends neither text keeps both, and its answer has them whole; sending the same text again is
    // a no-op; a new short text replaces a long one.
    const [first, text] = [...written][written.size - 1];
    const merged = await user.patch(`/v1/episodes/${first}`, {
      data: { type: "episode", id: first, attributes: { position: 99, changedAt: "2026-01-02T00:00:00.000Z" } },
    });
    expect(((await merged.json()) as Document<Episode>).data.attributes).toMatchObject({ ...text, position: 99 });
    const version = async () =>
      (await query<{ v: number }>(user.userId, "SELECT episode_version AS v FROM user_stats WHERE user_id = ?1"))[0].v;
    const before = await version();
    const same = await user.patch(`/v1/episodes/${first}`, {
      data: { type: "episode", id: first, attributes: { ...text } },
    });
    expect(((await same.json()) as Document<Episode>).data.attributes).toMatchObject(text);
    expect(await version()).toBe(before);
    const shorter = { mediaUrl: urlOf(MEDIA_URL.headBytes - 1, "€"), itemGuid: "short" };
    const replaced = await user.patch(`/v1/episodes/${first}`, {
      data: { type: "episode", id: first, attributes: shorter },
    });
    expect(((await replaced.json()) as Document<Episode>).data.attributes).toMatchObject(shorter);
    written.set(first, shorter);
    await expectStorageConsistent(user.userId, textBytes());

    // Forgetting a state keeps a tombstone with no text: its pieces go, and writing the id again starts afresh.
    const [forgotten] = [...written.keys()];
    expect((await user.delete(`/v1/episodes/${forgotten}`)).status).toBe(204);
    written.delete(forgotten);
    await expectStorageConsistent(user.userId, textBytes());
  });
});

describe("no piece outlives its row", () => {
  it("erasing the account removes every piece", async () => {
    const user = await as(`pieces-erase-${crypto.randomUUID()}`);
    const guid = crypto.randomUUID();
    await user.post("/v1/subscriptions", subscriptionDocument(guid, urlOf(2048, "😀")));
    await user.post("/v1/episodes", {
      data: {
        type: "episode",
        id: crypto.randomUUID(),
        attributes: { mediaUrl: urlOf(2048), itemGuid: urlOf(1024, "€") },
        relationships: { subscription: { data: { type: "subscription", id: guid } } },
      },
    });
    expect(await pieceCount(user.userId)).toBeGreaterThan(0);
    expect((await user.delete("/v1/account")).status).toBe(204);
    expect(await pieceCount(user.userId)).toBe(0);
    await expectStorageConsistent(user.userId, 0);
  });

  it("purging tombstones (raising the horizon) removes their pieces and keeps the live rows'", async () => {
    const user = await as(`pieces-purge-${crypto.randomUUID()}`);
    const live = { guid: crypto.randomUUID(), feedUrl: urlOf(1900, "€") };
    const gone = { guid: crypto.randomUUID(), feedUrl: urlOf(2048, "😀") };
    await user.post("/v1/subscriptions", subscriptionDocument(gone.guid, gone.feedUrl));
    await user.post("/v1/subscriptions", subscriptionDocument(live.guid, live.feedUrl));
    await user.delete(`/v1/subscriptions/${gone.guid}`);
    await expectStorageConsistent(user.userId, bytesOf(live.feedUrl) + bytesOf(gone.feedUrl));
    const db = await databaseFor(user.userId);
    await db.prepare("UPDATE user_stats SET subscription_horizon = version WHERE user_id = ?").bind(user.userId).run();
    await expectStorageConsistent(user.userId, bytesOf(live.feedUrl));
    const [left] = await query<{ n: number }>(
      user.userId,
      "SELECT count(*) AS n FROM url_pieces WHERE user_id = ?1 AND owner = (SELECT guid FROM subscriptions WHERE user_id = ?1)",
    );
    expect(left.n).toBeGreaterThan(0);
    const kept = (await (await user.get(`/v1/subscriptions/${live.guid}`)).json()) as Document<Subscription>;
    expect(kept.data.attributes.feedUrl).toBe(live.feedUrl);
  });
});

describe("what long URLs cost in D1 rows (docs/CAPACITY.md)", () => {
  it("a 2 048-byte feedUrl: the subscribe writes its two pieces more, a list page reads each row's pieces", async () => {
    const userId = `pieces-rows-${crypto.randomUUID()}`;
    const meter = await meteredDatabaseOf(userId);
    const user = await as(userId, meter.bindings);
    const short = await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), urlOf(100)));
    expect(short.status).toBe(201);
    const shortWritten = meter.totals.rowsWritten;
    meter.reset();
    for (let i = 0; i < 10; i++) {
      const long = await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), urlOf(2048)));
      expect(long.status).toBe(201);
    }
    // Per subscribe: the short one's rows, two pieces, and the row written again as its head (its index
    // entries do not change: they hold no URL text).
    const longWritten = meter.totals.rowsWritten / 10;
    expect(longWritten).toBeLessThanOrEqual(shortWritten + 3);
    meter.reset();
    const page = (await (await user.get("/v1/subscriptions?page[size]=11")).json()) as { data: unknown[] };
    expect(page.data).toHaveLength(11);
    // The short feed reads its row; each long one its row and its two pieces (a lookup that finds none reads none).
    expect(meter.totals.rowsRead).toBeLessThanOrEqual(11 + 2 + 10 * 2);
  });
});
