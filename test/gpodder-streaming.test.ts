import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import {
  GPODDER_EPISODE_PAGES,
  GPODDER_FROZEN_SUBSCRIPTION_PAGES,
  GPODDER_SUBSCRIPTION_PAGES,
  gpodderStatements,
  readEpisodeActions,
  readSubscriptionChanges,
} from "../src/db/gpodder";
import { activeFeedPages, activeFeedPagesWithPodcasts, exportStatements, OPML_EXPORT_PAGE_ROWS } from "../src/db/opml";
import { itemsText, type TextPage, type TextPageSize } from "../src/db/text-pages";
import { toEpisodeAction } from "../src/gpodder/episode-actions";
import { MAX_FEED_URL_BYTES } from "../src/resources/subscription";
import { bucketOf } from "../src/shards";
import {
  as,
  databaseFor,
  logStreamMeasure,
  meteredDatabaseOf,
  ORIGIN,
  readChunks,
  seedSubscriptions,
  send,
  subscriptionDocument,
  withinOneRateWindow,
} from "./helpers";

// docs/API.md §14-15: the gpodder GETs that grow with the account (the simple API's lists, the episode
// actions and the subscription changes since a time) are written page by page, one D1 call each (the changes'
// and the actions' text written by SQLite, pages cut by the size of their text). What they answer must be what
// the data says, every row once and in order, across the pages' seams; and what they hold at once must be one page.

async function credentials(userId: string) {
  const user = await as(userId);
  const response = await user.post("/v1/app-passwords", { data: { type: "app-password", attributes: { label: "s" } } });
  const { data } = (await response.json()) as { data: { attributes: { username: string; password: string } } };
  return data.attributes;
}

function get(who: { username: string; password: string }, path: string, bindings = {}) {
  return send(
    new Request(`${ORIGIN}${path}`, { headers: { Authorization: `Basic ${btoa(`${who.username}:${who.password}`)}` } }),
    bindings,
  );
}

/** How many of the user's subscriptions have no url_key (rows as written before migration 0004). */
async function unkeyedRowsOf(userId: string): Promise<number | undefined> {
  const row = await (await databaseFor(userId))
    .prepare("SELECT count(*) AS n FROM subscriptions WHERE user_id = ? AND url_key IS NULL")
    .bind(userId)
    .first<{ n: number }>();
  return row?.n;
}

/** A URL of `bytes` bytes that is all characters JSON and XML escape after its prefix. */
function hostileUrl(index: number, bytes = 300, host = "escape.example"): string {
  const prefix = `https://${host}/${index}?`;
  return prefix + '&<>"\\'.repeat(bytes).slice(0, bytes - prefix.length);
}

/** Episode states stored straight into D1 for the user's feed `feedGuid`, every `gone`-th one a tombstone. */
async function seedEpisodes(
  userId: string,
  feedGuid: string,
  count: number,
  mediaUrl: (i: number) => string,
  gone = 7,
) {
  const db = await databaseFor(userId);
  const stats = await db
    .prepare("SELECT episode_version AS version FROM user_stats WHERE user_id = ?")
    .bind(userId)
    .first<{ version: number }>();
  const first = (stats?.version ?? 0) + 1;
  const statements: D1PreparedStatement[] = [];
  for (let i = 0; i < count; i++) {
    const deleted = i % gone === gone - 1;
    statements.push(
      db
        .prepare(
          "INSERT INTO episodes (user_id, id, feed_guid, media_url, position, duration, played, played_changed_at, change_seq, received_at, deleted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, unixepoch(), ?)",
        )
        .bind(
          userId,
          crypto.randomUUID(),
          feedGuid,
          deleted ? null : mediaUrl(i),
          i % 3 === 0 ? 0 : 10 + i,
          i % 3 === 0 ? null : 1000 + i,
          i % 3 === 0 ? 1 : 0,
          1_700_000_000_000 + i * 1000,
          first + i,
          deleted ? 1 : null,
        ),
    );
  }
  for (let i = 0; i < statements.length; i += 100) await db.batch(statements.slice(i, i + 100));
}

/** What drizzle/0020's bound says the user's episode states take as gpodder actions (`episodeListFits`). */
async function episodeListBound(userId: string): Promise<number> {
  const row = await (await databaseFor(userId))
    .prepare(
      "SELECT episode_list_bytes + episode_count * (150 + feed_url_max_bytes) AS bound FROM user_stats WHERE user_id = ?",
    )
    .bind(userId)
    .first<{ bound: number }>();
  return row?.bound ?? 0;
}

/** Every page of a walk, read to its end. */
async function pagesOf(pages: AsyncGenerator<TextPage, void, undefined>): Promise<TextPage[]> {
  const read: TextPage[] = [];
  for await (const page of pages) read.push(page);
  return read;
}

const byteLength = (text: string) => new TextEncoder().encode(text).byteLength;

async function activeUrls(userId: string): Promise<string[]> {
  const { results } = await (await databaseFor(userId))
    .prepare(
      "SELECT feed_url FROM subscriptions WHERE user_id = ? AND unsubscribed_at IS NULL ORDER BY subscribed_at, subscribed_seq",
    )
    .bind(userId)
    .all<{ feed_url: string }>();
  return results.map((row) => row.feed_url);
}

describe("gpodder GETs written page by page", () => {
  it("the simple API's lists over several pages: every active feed once, in list order, byte for byte", async () => {
    const userId = `gpodder-stream-list-${crypto.randomUUID()}`;
    const count = 3 * OPML_EXPORT_PAGE_ROWS + 17;
    await seedSubscriptions(userId, 40, { unsubscribed: true });
    await seedSubscriptions(userId, count, { feedUrl: (_guid, index) => hostileUrl(index) });
    const who = await credentials(userId);
    const urls = await activeUrls(userId);
    expect(urls).toHaveLength(count);

    const json = await get(who, `/subscriptions/${who.username}.json`);
    expect(json.status).toBe(200);
    expect(json.headers.get("Content-Type")).toBe("application/json");
    expect(await json.text()).toBe(JSON.stringify(urls));

    const txt = await get(who, `/subscriptions/${who.username}/phone.txt`);
    expect(await txt.text()).toBe(urls.map((url) => `${url}\n`).join(""));

    const opml = await (await get(who, `/subscriptions/${who.username}.opml`)).text();
    const xmlUrls = [...opml.matchAll(/xmlUrl="([^"]*)"/g)].map((match) =>
      match[1].replace(/&(amp|lt|gt|quot);/g, (_, name) => ({ amp: "&", lt: "<", gt: ">", quot: '"' })[name as "amp"]),
    );
    expect(xmlUrls).toEqual(urls);
    expect(opml.endsWith("</body>\n</opml>\n")).toBe(true);
  });

  it("the lists' and exports' pages cut by their text: every active feed once, in list order, across the seams", async () => {
    const userId = `gpodder-stream-seams-${crypto.randomUUID()}`;
    await seedSubscriptions(userId, 40, { unsubscribed: true });
    // Rows of different sizes (heads only: `activeUrls` reads no piece), so the pages cut at different rows.
    await seedSubscriptions(userId, 317, { feedUrl: (_guid, index) => hostileUrl(index, 100 + (index % 5) * 150) });
    const urls = await activeUrls(userId);
    const db = await databaseFor(userId);
    const sizes: TextPageSize[] = [
      { rows: 10_001, min: 1, bytes: 5_000 },
      { rows: 50, min: 3, bytes: 2_000 },
      { rows: 1, min: 1, bytes: 1 },
    ];
    for (const size of sizes) {
      for (const pages of [activeFeedPages(db, userId, { size }), activeFeedPagesWithPodcasts(db, userId, { size })]) {
        const read: string[] = [];
        let walked = 0;
        for await (const page of pages) {
          expect(page.length).toBeGreaterThan(0);
          expect(page.length).toBeLessThanOrEqual(OPML_EXPORT_PAGE_ROWS);
          read.push(...page.map((row) => row.feedUrl));
          walked += page.walked;
        }
        expect(read, JSON.stringify(size)).toEqual(urls);
        // What the lists are charged: every row walked, those past a cut too (the first page walks the account).
        if (size.rows > urls.length) expect(walked).toBeGreaterThan(2 * urls.length - 20);
        else expect(walked).toBeGreaterThanOrEqual(urls.length);
      }
    }
  });

  it("subscription changes since 0: the remove list walks the tombstones alone, never the active rows", async () => {
    const userId = `gpodder-stream-removed-walk-${crypto.randomUUID()}`;
    const [active, tombstones] = [1000, 30];
    await seedSubscriptions(userId, tombstones, { unsubscribed: true });
    await seedSubscriptions(userId, active);
    const who = await credentials(userId);
    const path = `/api/2/subscriptions/${who.username}/dev.json?since=0`;
    await (await get(who, path)).text(); // keys the seeded rows, creates the device, verifies the password
    const meter = await meteredDatabaseOf(userId);
    const body = (await (await get(who, path, meter.bindings)).json()) as { add: string[]; remove: string[] };
    expect([body.add.length, body.remove.length]).toEqual([active, tombstones]);
    const [removed] = meter.rowsReadBy(gpodderStatements.removedPage.sql);
    const [added] = meter.rowsReadBy(gpodderStatements.addedPage.sql);
    // Three rows read per tombstone walked (the walk, the running sum's sort and frame) and its URL's lookups
    // (two searches for an active row with its URL, two for a tombstone before it, seven for an active subscription
    // its URL names by the alias rule of docs/API.md §18: the alias probes and the subscription probes of each URL
    // of the podcast, and whether the user renamed any); the 1 000 active rows none.
    expect(removed).toBeLessThanOrEqual(14 * tombstones + 2);
    // The add list: three per row walked, two for the search of its URL's key, and the text written from the head
    // the walk carried (each kept row read again by its key was one more).
    expect(added).toBeLessThanOrEqual(5 * (active + tombstones) + 2);
  });

  it("episode actions since 0: each kept state's text is written from the row the walk read, not read again", async () => {
    const userId = `gpodder-stream-actions-rows-${crypto.randomUUID()}`;
    await seedSubscriptions(userId, 1, { feedUrl: () => "https://feed.example/rows.xml" });
    const { guid } = (await (
      await databaseFor(userId)
    )
      .prepare("SELECT guid FROM subscriptions WHERE user_id = ?")
      .bind(userId)
      .first()) as { guid: string };
    const count = 1000;
    await seedEpisodes(userId, guid, count, (i) => `https://cdn.example/${i}.mp3`);
    // Pages of a byte under the list's bound (drizzle/0020), which its text is far below: the page statement
    // answers the list in one page (the whole list's statement answers when it fits).
    const size = { rows: 12_500, min: 100, bytes: (await episodeListBound(userId)) - 1 };
    const meter = await meteredDatabaseOf(userId);
    const pages = await pagesOf((await readEpisodeActions(meter.binding, userId, 0, { size })).pages);
    const live = count - Math.floor(count / 7);
    expect(pages).toHaveLength(1);
    expect(JSON.parse(`[${pages[0].text}]`)).toHaveLength(live);
    const [page] = meter.rowsReadBy(gpodderStatements.episodeChangesPage.sql);
    // Per state walked: the row, the running sum's sort and frame; per live state, its feed's head for its size and
    // again for its text (reading the state again by its key was one more).
    expect(page).toBeLessThanOrEqual(3 * count + 2 * live + 2);
  });

  it("episode actions since 0 over several pages: every live state once, oldest change first, tombstones skipped", async () => {
    const userId = `gpodder-stream-episodes-${crypto.randomUUID()}`;
    await seedSubscriptions(userId, 1, { feedUrl: () => hostileUrl(0, 200, "feed.example") });
    const db = await databaseFor(userId);
    const feed = (await db
      .prepare("SELECT guid, feed_url FROM subscriptions WHERE user_id = ?")
      .bind(userId)
      .first()) as { guid: string; feed_url: string };
    const count = 331;
    await seedEpisodes(userId, feed.guid, count, (i) => hostileUrl(i, 200, "cdn.example"));
    const who = await credentials(userId);

    const before = Math.floor(Date.now() / 1000);
    const response = await get(who, `/api/2/episodes/${who.username}.json?since=0`);
    expect(response.status).toBe(200);
    const text = await response.text();
    const body = JSON.parse(text) as { actions: unknown[]; timestamp: number };

    const { results } = await db
      .prepare(
        "SELECT media_url, item_guid, position, duration, played, position_changed_at, played_changed_at FROM episodes WHERE user_id = ? AND deleted_at IS NULL ORDER BY change_seq",
      )
      .bind(userId)
      .all<Record<string, number | string | null>>();
    const expected = results.flatMap((row) => {
      const action = toEpisodeAction(feed.feed_url, {
        mediaUrl: row.media_url as string,
        itemGuid: row.item_guid as string | null,
        position: row.position as number,
        duration: row.duration as number | null,
        played: row.played === 1,
        positionChangedAt: row.position_changed_at as number | null,
        playedChangedAt: row.played_changed_at as number | null,
      });
      return action ? [action] : [];
    });
    expect(expected.length).toBeGreaterThan(200);
    expect(text).toBe(JSON.stringify({ actions: expected, timestamp: body.timestamp }));
    expect(body.timestamp).toBeGreaterThanOrEqual(before);

    // The same through small pages, cut by rows and by text: every seam joins them into the same text, and a page
    // holds at most its bytes and the item that crossed them.
    const actionsText = JSON.stringify(expected).slice(1, -1);
    const largest = Math.max(...expected.map((action) => JSON.stringify(action).length + 1));
    for (const size of [
      { rows: 40, min: 10, bytes: 1 << 20 },
      { rows: 400, min: 10, bytes: 20_000 },
    ] satisfies TextPageSize[]) {
      const pages = await pagesOf((await readEpisodeActions(db, userId, 0, { size })).pages);
      expect(pages.length, JSON.stringify(size)).toBeGreaterThan(4);
      expect(
        pages
          .map((page) => page.text)
          .filter((page) => page !== "")
          .join(","),
      ).toBe(actionsText);
      for (const page of pages) expect(byteLength(page.text)).toBeLessThan(size.bytes + largest);
      // Each row walked once, but those a page walked past its cut (walked again by the next page).
      expect(pages.reduce((sum, page) => sum + page.walked, 0)).toBeGreaterThanOrEqual(count);
    }

    // The podcast filter applies on every page, and a page it empties writes nothing.
    const other = await get(who, `/api/2/episodes/${who.username}.json?since=0&podcast=https://none.example/`);
    expect(JSON.parse(await other.text())).toEqual({ actions: [], timestamp: expect.any(Number) });
  });

  it("a page whose items did not come in key order is put in order by its keys", () => {
    // Items that hold what splits them, escaped: `,{"podcast":` inside a string reads `,{\"podcast\":`.
    const items = [
      { podcast: 'https://a.example/,{"podcast":1', episode: "e1" },
      { podcast: "https://b.example/", episode: '",{"podcast":' },
      { podcast: "https://c.example/", episode: "e3" },
    ].map((item) => JSON.stringify(item));
    // A state answered under its old URLs too is one item of actions joined by `, ` (db/gpodder.ts), never split.
    items[2] = `${items[2]}, ${JSON.stringify({ podcast: "https://old.example/", episode: "e3" })}`;
    const page = (order: number[]) => `${order.map((i) => i + 10).join(",")} ${order.map((i) => items[i]).join(",")}`;
    for (const order of [
      [0, 1, 2],
      [2, 0, 1],
      [1, 2, 0],
    ]) {
      expect(itemsText(page(order), '{"podcast":')).toBe(items.join(","));
    }
    const urls = ['"https://a.example/,\\"x"', '"https://b.example/"'];
    expect(itemsText(`7,3 ${urls[1]},${urls[0]}`, '"')).toBe(`${urls[0]},${urls[1]}`);
    expect(itemsText(" ", '"')).toBe("");
    // Keys compare as numbers, not as text: 9 comes before 10.
    expect(itemsText('9,10 "a","b"', '"')).toBe('"a","b"');
    expect(itemsText('10,9 "b","a"', '"')).toBe('"a","b"');
  });

  it("episode actions of 2 KB URLs full of escapes: the most held at once is one page, its D1 answer bounded", {
    timeout: 300_000,
  }, async () => {
    const userId = `gpodder-stream-memory-${crypto.randomUUID()}`;
    const feedUrl = hostileUrl(0, MAX_FEED_URL_BYTES, "feed.example");
    await seedSubscriptions(userId, 1, { feedUrl: () => feedUrl });
    const db = await databaseFor(userId);
    const { guid } = (await db.prepare("SELECT guid FROM subscriptions WHERE user_id = ?").bind(userId).first()) as {
      guid: string;
    };
    const count = 4000;
    await seedEpisodes(userId, guid, count, (i) => hostileUrl(i, MAX_FEED_URL_BYTES, "cdn.example"), count + 1);
    const who = await credentials(userId);
    // Signed in: what is counted below is the GET's own calls.
    expect((await get(who, `/api/2/devices/${who.username}.json`)).status).toBe(200);

    const meter = await meteredDatabaseOf(userId);
    const response = await get(who, `/api/2/episodes/${who.username}.json?since=0`, meter.bindings);
    expect(response.status).toBe(200);
    const calledBeforeBody = meter.totals.calls;
    const read = await readChunks(response);
    const { totalBytes, largestChunk } = read;
    logStreamMeasure("gpodder_episodes_measure", { states: count }, read, meter.totals);
    // An action: the feed's and the episode's URLs, each escaped for JSON (twice its bytes), and ~150 bytes more.
    const actionBytes = 2 * (2 * MAX_FEED_URL_BYTES) + 150;
    expect(totalBytes).toBeGreaterThan(count * 2 * MAX_FEED_URL_BYTES);
    // A chunk is one page's text: at most its bytes and the action that crossed them.
    expect(largestChunk).toBeLessThanOrEqual(GPODDER_EPISODE_PAGES.bytes + actionBytes);
    // What one D1 call answers is one page escaped again (at most twice its text) and the page's keys; with the text
    // read from it (at most twice its bytes in UTF-16), under 16 MiB however long the answer (about 23 MB here).
    const bound = 2 * (GPODDER_EPISODE_PAGES.bytes + actionBytes) + 10 * GPODDER_EPISODE_PAGES.rows;
    expect(Math.max(...meter.totals.answerBytes)).toBeLessThanOrEqual(bound);
    expect(bound + 2 * (GPODDER_EPISODE_PAGES.bytes + actionBytes)).toBeLessThan(16 * 1024 * 1024);
    // The first page was read before the response started, the others as the body was read, one call each.
    expect(meter.totals.calls - calledBeforeBody).toBeGreaterThanOrEqual(totalBytes / GPODDER_EPISODE_PAGES.bytes - 1);
    // Rows read stay linear in the account: a walked row costs 4 (the row, its feed's head, the running sum's sort
    // and frame), a kept one what its text reads (the row, its feed and their pieces: up to 8 for 2 KB URLs); the
    // first page walks past its cut once, the later ones ask for as many rows as fit.
    expect(meter.totals.rowsRead).toBeLessThan(15 * count);
  });

  it("subscription changes of an account stored before url_key: keyed first, then read in rows linear in the account", {
    timeout: 60_000,
  }, async () => {
    const userId = `gpodder-stream-unkeyed-${crypto.randomUUID()}`;
    // More rows than one keying round takes, sharing URLs, half of them tombstones (no url_key: before 0004).
    const rowCount = 1200;
    await seedSubscriptions(userId, rowCount / 2, { feedUrl: (guid, i) => `https://a.example/${i % 400}/${guid}` });
    await seedSubscriptions(userId, rowCount / 2, {
      unsubscribed: true,
      feedUrl: (guid, i) => `https://b.example/${i % 300}/${guid}`,
    });
    const who = await credentials(userId);
    const meter = await meteredDatabaseOf(userId);
    const response = await get(who, `/api/2/subscriptions/${who.username}/dev.json?since=0`, meter.bindings);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { add: string[]; remove: string[] };
    expect(body.add).toHaveLength(rowCount / 2);
    expect(body.remove).toHaveLength(rowCount / 2);
    // Compared by text, each row walked every other unkeyed row of the user: over 2 million rows read here.
    expect(meter.totals.rowsRead).toBeLessThan(25 * rowCount);
    // No statement walks the other unkeyed rows for each row (1.44 million rows here): each reads a few per row
    // (a change walk: the row, the lookups that name its URL once, the page's cut, the kept rows' text).
    expect(Math.max(...meter.totals.rowsReadPerStatement)).toBeLessThanOrEqual(8 * rowCount);
    expect(await unkeyedRowsOf(userId)).toBe(0);
  });

  it("subscription changes over several pages: each URL once, in change order, as the data says, one page at a time", {
    timeout: 120_000,
  }, async () => {
    const userId = `gpodder-stream-changes-${crypto.randomUUID()}`;
    // Rows as written before 0004 (no url_key): active rows sharing URLs, tombstones sharing URLs with active
    // rows and with each other.
    await seedSubscriptions(userId, 120, { feedUrl: (_guid, i) => hostileUrl(i % 80, 400, "a.example") });
    await seedSubscriptions(userId, 100, {
      unsubscribed: true,
      feedUrl: (_guid, i) =>
        i % 2 === 0 ? hostileUrl(i % 60, 400, "a.example") : hostileUrl(i % 30, 400, "gone.example"),
    });
    const who = await credentials(userId);
    // Through the gpodder API (url_key set): URLs long enough to be stored in pieces, some then removed, and
    // gone URLs revived (the other tombstones of such a URL are then not removals).
    const long = Array.from({ length: 40 }, (_, i) => hostileUrl(i, 1200, "long.example"));
    const post = (body: unknown) =>
      send(
        new Request(`${ORIGIN}/api/2/subscriptions/${who.username}/dev.json`, {
          method: "POST",
          headers: {
            Authorization: `Basic ${btoa(`${who.username}:${who.password}`)}`,
            "Content-Type": "application/json",
          },
          body: JSON.stringify(body),
        }),
      );
    expect(
      (await post({ add: [...long, hostileUrl(1, 400, "gone.example"), hostileUrl(7, 400, "gone.example")] })).status,
    ).toBe(200);
    expect((await post({ remove: long.slice(10, 30) })).status).toBe(200);
    // A keyed tombstone and a keyed active row, then rows without url_key of the same URLs.
    const mixed = [hostileUrl(5, 400, "mix.example"), hostileUrl(6, 400, "mix.example")];
    expect((await post({ add: mixed })).status).toBe(200);
    expect((await post({ remove: [mixed[0]] })).status).toBe(200);
    await seedSubscriptions(userId, 2, { unsubscribed: true, feedUrl: () => mixed[0] });
    await seedSubscriptions(userId, 1, { feedUrl: () => mixed[1] });
    // Later active rows: URLs of earlier active rows again, and new ones.
    await seedSubscriptions(userId, 110, { feedUrl: (_guid, i) => hostileUrl(i, 400, "a.example") });

    const db = await databaseFor(userId);
    // Received over several seconds, never earlier for a later change (as the database's clock writes them).
    await db
      .prepare("UPDATE subscriptions SET received_at = 1000000 + change_seq / 40 WHERE user_id = ?")
      .bind(userId)
      .run();
    const { results: rows } = await db
      .prepare(
        `SELECT s.received_at AS receivedAt, s.unsubscribed_at IS NULL AS active, s.url_key IS NOT NULL AS keyed,
          s.feed_url || coalesce((SELECT group_concat(piece, '') FROM (SELECT piece FROM url_pieces p
            WHERE p.user_id = s.user_id AND p.owner = s.guid AND p.field = 0 ORDER BY p.n)), '') AS url
        FROM subscriptions s WHERE s.user_id = ? ORDER BY s.change_seq`,
      )
      .bind(userId)
      .all<{ receivedAt: number; active: number; keyed: number; url: string }>();
    type Changed = (typeof rows)[number];
    expect(rows.length).toBeGreaterThan(300);
    expect(rows.filter((row) => row.keyed === 0).length).toBeGreaterThan(100);
    // The GET keys the rows without url_key first: then each URL once, where its first change in the range is,
    // and a tombstone's URL left out when an active row has it.
    const named = (changed: Changed[]) => {
      const first = new Map<string, Changed>();
      for (const row of changed) if (!first.has(row.url)) first.set(row.url, row);
      return changed.filter((row) => first.get(row.url) === row);
    };
    const activeFor = (tombstone: Changed) => rows.some((row) => row.active === 1 && row.url === tombstone.url);
    const expected = (since: number) => {
      const changed = rows.filter((row) => row.receivedAt >= since);
      return {
        add: named(changed.filter((row) => row.active === 1)).map((row) => row.url),
        remove: named(changed.filter((row) => row.active === 0))
          .filter((row) => !activeFor(row))
          .map((row) => row.url),
      };
    };

    const middle = rows[Math.floor(rows.length / 2)].receivedAt;
    const sinces = [0, middle, middle + 1, rows[rows.length - 1].receivedAt, rows[rows.length - 1].receivedAt + 1];
    const caller = { userId, appPasswordId: "unused: reads take no guard" };
    for (const since of sinces) {
      const before = Math.floor(Date.now() / 1000);
      const meter = await meteredDatabaseOf(userId);
      const response = await get(who, `/api/2/subscriptions/${who.username}/dev.json?since=${since}`, meter.bindings);
      expect(response.status).toBe(200);
      const calledBeforeBody = meter.totals.calls;
      let text = "";
      const read = await readChunks(response, (chunk) => {
        text += chunk;
      });
      const body = JSON.parse(text) as { add: string[]; remove: string[]; timestamp: number };
      // URLs named short first, so a failure reads as which URLs differ.
      const short = (urls: string[]) => urls.map((url) => `${url.slice(0, url.indexOf("?"))} (${url.length})`);
      expect(short(body.add), `since ${since}`).toEqual(short(expected(since).add));
      expect(short(body.remove), `since ${since}`).toEqual(short(expected(since).remove));
      expect(text, `since ${since}`).toBe(JSON.stringify({ ...expected(since), timestamp: body.timestamp }));
      expect(await unkeyedRowsOf(userId)).toBe(0);
      expect(body.timestamp).toBeGreaterThanOrEqual(before);
      // The account's URLs fit a page per list: nothing is read with the body and, once its rows from before 0004
      // are keyed (the first request keys them, then reads), both lists come in one round trip.
      expect(calledBeforeBody).toBe(meter.totals.calls);
      if (since !== sinces[0]) expect(meter.totals.calls).toBe(1);

      // The same through small pages, cut by rows and by text: every seam joins them into the same lists.
      for (const size of [
        { rows: 7, min: 3, bytes: 1 << 20 },
        { rows: 400, min: 3, bytes: 6_000 },
      ] satisfies TextPageSize[]) {
        const changes = await readSubscriptionChanges(db, caller, since, { frozen: false, size, knownBefore: 0 });
        const [add, remove] = [await pagesOf(changes.add), await pagesOf(changes.remove)];
        const list = (pages: TextPage[]) =>
          JSON.parse(
            `[${pages
              .map((page) => page.text)
              .filter((page) => page !== "")
              .join(",")}]`,
          ) as string[];
        expect(short(list(add)), `since ${since}, ${JSON.stringify(size)}`).toEqual(short(expected(since).add));
        expect(short(list(remove)), `since ${since}, ${JSON.stringify(size)}`).toEqual(short(expected(since).remove));
        if (since === 0) expect(add.length + remove.length).toBeGreaterThan(8);
        for (const page of [...add, ...remove]) expect(byteLength(page.text)).toBeLessThan(size.bytes + 2 * 1200 + 3);
      }
      if (since !== 0) continue;
      // Every kind of row is in the answer: duplicates left out, tombstones of active URLs left out.
      expect(body.add.length).toBeLessThan(rows.filter((row) => row.active === 1).length);
      expect(body.add).toEqual(expect.arrayContaining([long[0], long[39], hostileUrl(7, 400, "gone.example")]));
      expect(body.remove).toEqual(expect.arrayContaining([long[10], hostileUrl(3, 400, "gone.example")]));
      expect(body.remove).not.toContain(hostileUrl(40, 400, "a.example"));
      expect(body.remove.filter((url) => url === mixed[0])).toHaveLength(1);
      expect(body.add.filter((url) => url === mixed[1])).toHaveLength(1);
      expect(read.largestChunk).toBeLessThan(GPODDER_SUBSCRIPTION_PAGES.bytes);
    }
    expect(expected(middle + 1).add.length).toBeGreaterThan(0);
    expect(expected(middle + 1).remove.length).toBeGreaterThan(0);
  });

  it("an account of short URLs is answered in one round trip: 1 600 subscription changes, 1 600 episode actions", {
    timeout: 120_000,
  }, async () => {
    const userId = `gpodder-stream-one-trip-${crypto.randomUUID()}`;
    const count = 1_600;
    await seedSubscriptions(userId, count, { feedUrl: (_guid, i) => `https://feeds.example/${i}.xml` });
    const db = await databaseFor(userId);
    const { guid } = (await db.prepare("SELECT guid FROM subscriptions WHERE user_id = ?").bind(userId).first()) as {
      guid: string;
    };
    await seedEpisodes(userId, guid, count, (i) => `https://media.example/${i}.mp3`, count + 1);
    const who = await credentials(userId);
    // The rows from before url_key are keyed by a first read, and the device created: what is counted below is the
    // steady state.
    await (await get(who, `/api/2/subscriptions/${who.username}/dev.json?since=0`)).text();

    const callsOf = async (path: string) => {
      const meter = await meteredDatabaseOf(userId);
      const response = await get(who, path, meter.bindings);
      expect(response.status).toBe(200);
      const body = JSON.parse(await response.text());
      return { body, calls: meter.totals.calls, statements: meter.totals.statements.map((called) => called.sql) };
    };
    const subscriptions = await callsOf(`/api/2/subscriptions/${who.username}/dev.json?since=0`);
    const episodes = await callsOf(`/api/2/episodes/${who.username}.json?since=0`);
    expect(subscriptions.body.add).toHaveLength(count);
    expect(episodes.body.actions).toHaveLength(count);
    // Pages of 100 to 500 rows took 5 and 4 round trips in turn here, 21 and 43 for 10 000.
    expect(subscriptions.calls).toBe(1);
    expect(subscriptions.statements).toEqual([
      gpodderStatements.wholeAdded.sql,
      gpodderStatements.addedPage.sql,
      gpodderStatements.removedPage.sql,
    ]);
    expect(episodes.calls).toBe(1);
    expect(episodes.statements).toEqual([
      gpodderStatements.wholeEpisodes.sql,
      gpodderStatements.episodeChangesPage.sql,
    ]);
  });

  it("subscription changes keep pages of the first size while the bucket is frozen (rows then read unkeyed)", async () => {
    const userId = `gpodder-stream-frozen-${crypto.randomUUID()}`;
    const count = 4 * GPODDER_FROZEN_SUBSCRIPTION_PAGES.rows;
    // Short URLs, as written before 0004 (no url_key): pages of them would grow, were the bucket not frozen.
    await seedSubscriptions(userId, count, { feedUrl: (_guid, i) => `https://feeds.example/${i}.xml` });
    const who = await credentials(userId);
    const meter = await meteredDatabaseOf(userId);
    const frozen = { ...meter.bindings, SHARD_FROZEN: String(await bucketOf(userId)) };
    const response = await get(who, `/api/2/subscriptions/${who.username}/dev.json?since=0`, frozen);
    expect(response.status).toBe(200);
    expect(JSON.parse(await response.text()).add).toHaveLength(count);
    const calls = meter.totals.statements.filter((called) => called.sql === gpodderStatements.addedPage.sql).length;
    // Full pages of the first size, then one that finds the end; nothing was keyed meanwhile.
    expect(calls).toBe(count / GPODDER_FROZEN_SUBSCRIPTION_PAGES.rows + 1);
    expect(await unkeyedRowsOf(userId)).toBe(count);
  });
});

describe("the large gpodder GETs are charged by what they read (docs/API.md §14)", () => {
  beforeEach(() => withinOneRateWindow());
  const tight = { USER_RATE_LIMITER: env.TIGHT_USER_RATE_LIMITER }; // 5 requests per 60 s

  /** One feed the user subscribed to, with `count` live episode states. */
  async function feedWithStates(userId: string, count: number, host = "feed.example") {
    await seedSubscriptions(userId, 1, { feedUrl: () => `https://${host}/feed.xml` });
    const { guid } = (await (
      await databaseFor(userId)
    )
      .prepare("SELECT guid FROM subscriptions WHERE user_id = ? AND feed_url = ?")
      .bind(userId, `https://${host}/feed.xml`)
      .first()) as { guid: string };
    await seedEpisodes(userId, guid, count, (i) => `https://cdn.${host}/${i}.mp3`, count + 1);
    return `https://${host}/feed.xml`;
  }

  it("episode actions and the simple list: one request per 100 rows beyond the first 100, charged as they are read", {
    timeout: 60_000,
  }, async () => {
    const [episodes, list, small] = ["gp-charged-episodes", "gp-charged-list", "gp-charged-small"];
    await feedWithStates(episodes, 450);
    await seedSubscriptions(list, 450);
    await feedWithStates(small, 90);
    for (const [userId, path] of [
      [episodes, (u: string) => `/api/2/episodes/${u}.json?since=0`],
      [list, (u: string) => `/subscriptions/${u}.json`],
      [small, (u: string) => `/api/2/episodes/${u}.json?since=0`],
    ] as const) {
      const who = await credentials(userId);
      const response = await get(who, path(who.username), tight);
      expect(response.status).toBe(200);
      await response.text();
      // 1 for the request, 4 more for 450 rows (5 requests of 100): the limit of 5 is spent.
      const next = await get(who, `/api/2/devices/${who.username}.json`, tight);
      expect(next.status, userId).toBe(userId === small ? 200 : 429);
    }
  });

  it("the simple list waits on the limiter once per D1 page, not once per 100 rows", async () => {
    const userId = `gp-charged-waits-${crypto.randomUUID()}`;
    await seedSubscriptions(userId, 450);
    const who = await credentials(userId);
    // The user's limiter, counting its calls and how many times the request waited on it in turn (a call made
    // while none is pending starts a wait).
    let calls = 0;
    let waits = 0;
    let pending = 0;
    const counting: RateLimit = {
      limit: async (options) => {
        calls++;
        if (pending === 0) waits++;
        pending++;
        try {
          return await env.USER_RATE_LIMITER.limit(options);
        } finally {
          pending--;
        }
      },
    };
    const response = await get(who, `/subscriptions/${who.username}.json`, { USER_RATE_LIMITER: counting });
    expect(response.status).toBe(200);
    expect(JSON.parse(await response.text())).toHaveLength(450);
    // The request itself, then the D1 page's 450 rows at once: 4 requests' worth beyond the first 100 rows.
    expect({ calls, waits }).toEqual({ calls: 5, waits: 2 });
  });

  it("podcast= reads only that feed's states, through the episodes_feed index", { timeout: 60_000 }, async () => {
    const userId = "gp-podcast-index";
    await feedWithStates(userId, 600, "big.example");
    const podcast = await feedWithStates(userId, 5, "small.example");
    const who = await credentials(userId);
    const meter = await meteredDatabaseOf(userId);
    const path = `/api/2/episodes/${who.username}.json?since=0&podcast=${encodeURIComponent(podcast)}`;
    const body = (await (await get(who, path, meter.bindings)).json()) as { actions: { podcast: string }[] };
    expect(body.actions.map((action) => action.podcast)).toEqual(Array(5).fill(podcast));
    // The request's rows: the sign-in's, and that feed's 5 states (the other feed's 600 would be over 600).
    expect(meter.totals.rowsRead).toBeLessThan(100);
    const page = meter.totals.statements.find((statement) => statement.sql === gpodderStatements.feedChangesPage.sql);
    expect(page).toBeDefined();
    const plan = await (await databaseFor(userId))
      .prepare(`EXPLAIN QUERY PLAN ${page?.sql}`)
      .bind(...(page?.params ?? []))
      .all<{ detail: string }>();
    expect(plan.results.map((row) => row.detail).join("\n")).toMatch(/SEARCH t USING INDEX episodes_feed/);
    // From a recent `since`, the boundary is found in that feed's states too.
    meter.reset();
    const since = Math.floor(Date.now() / 1000) + 1;
    const none = (await (await get(who, `${path.replace("since=0", `since=${since}`)}`, meter.bindings)).json()) as {
      actions: unknown[];
    };
    expect(none.actions).toEqual([]);
    expect(meter.totals.rowsRead).toBeLessThan(100);
  });
});

/** A stored head's JSON string as drizzle/0020 counts it: its bytes, escapes and quotes; a cut head the most. */
function quotedBytesOf(head: string | null, headBytes: number, most: number): number {
  if (head === null) return 0;
  const bytes = byteLength(head);
  return bytes >= headBytes - 3 ? most : bytes + (head.match(/["\\]/g)?.length ?? 0) + 2;
}

/** A row's bytes in a gpodder list as drizzle/0019 counts them: its JSON string and a comma. */
function listBytesOf(head: string): number {
  return quotedBytesOf(head, 800, 4098) + 1;
}

describe("a full subscription list that fits one page is one walk (user_stats.feed_list_bytes, drizzle/0019)", () => {
  beforeEach(() => withinOneRateWindow());

  async function feedListBytes(userId: string) {
    const db = await databaseFor(userId);
    const stored = await db.prepare("SELECT feed_url FROM subscriptions WHERE user_id = ?").bind(userId).all();
    const stats = await db
      .prepare("SELECT feed_list_bytes FROM user_stats WHERE user_id = ?")
      .bind(userId)
      .first<{ feed_list_bytes: number }>();
    const rows = stored.results.map((row) => listBytesOf(String(row.feed_url)));
    return { kept: stats?.feed_list_bytes, expected: rows.reduce((sum, size) => sum + size, 0), rows: rows.length };
  }

  it("the triggers keep the bound of every stored row through adds, renames, removes, revivals and deletes", async () => {
    const userId = `gpodder-list-bytes-${crypto.randomUUID()}`;
    const user = await as(userId);
    const who = await credentials(userId);
    const upload = (body: { add: string[]; remove: string[] }) =>
      send(
        new Request(`${ORIGIN}/api/2/subscriptions/${who.username}/dev.json`, {
          method: "POST",
          headers: { Authorization: `Basic ${btoa(`${who.username}:${who.password}`)}` },
          body: JSON.stringify(body),
        }),
      );
    const long = (i: number) => `https://long.example/${i}?${"x".repeat(1500)}`;
    const urls = [hostileUrl(1, 300), hostileUrl(2, 800), long(3), "https://plain.example/a.xml", long(4)];
    expect((await upload({ add: urls, remove: [] })).status).toBe(200);
    const guids = [crypto.randomUUID(), crypto.randomUUID()];
    expect((await user.post("/v1/subscriptions", subscriptionDocument(guids[0], hostileUrl(5, 120)))).status).toBe(201);
    expect((await user.post("/v1/subscriptions", subscriptionDocument(guids[1], long(6)))).status).toBe(201);
    let state = await feedListBytes(userId);
    expect(state.rows).toBe(7);
    expect(state.kept).toBe(state.expected);
    // A rename to a long URL and back to a short one with escapes; removes; a revival under a longer URL.
    const rename = (guid: string, feedUrl: string) =>
      user.patch(`/v1/subscriptions/${guid}`, { data: { type: "subscription", id: guid, attributes: { feedUrl } } });
    expect((await rename(guids[0], long(7))).status).toBe(200);
    expect((await rename(guids[1], hostileUrl(8, 90))).status).toBe(200);
    expect((await upload({ add: [], remove: [urls[0], urls[2]] })).status).toBe(200);
    expect((await user.delete(`/v1/subscriptions/${guids[1]}`)).status).toBe(204);
    expect((await user.post("/v1/subscriptions", subscriptionDocument(guids[1], long(9)))).status).toBe(201);
    state = await feedListBytes(userId);
    expect(state.kept).toBe(state.expected);
    // Rows leave the database (a purge, a bucket move, an erasure): the delete trigger takes their bytes back.
    const db = await databaseFor(userId);
    await db.prepare("DELETE FROM subscriptions WHERE user_id = ? AND unsubscribed_at IS NOT NULL").bind(userId).run();
    await db.prepare("DELETE FROM subscriptions WHERE user_id = ? AND guid = ?").bind(userId, guids[0]).run();
    state = await feedListBytes(userId);
    expect(state.rows).toBe(4);
    expect(state.kept).toBe(state.expected);
  });

  it("since 0: the add list reads a row per row it answers, and says what the list by changes says", async () => {
    const userId = `gpodder-list-whole-${crypto.randomUUID()}`;
    const count = 1000;
    await seedSubscriptions(userId, 20, { unsubscribed: true });
    await seedSubscriptions(userId, count, {
      feedUrl: (_guid, i) => (i % 10 ? `https://w.example/${i}.xml` : hostileUrl(i)),
    });
    const who = await credentials(userId);
    const path = `/api/2/subscriptions/${who.username}/dev.json?since=0`;
    await (await get(who, path)).text(); // keys the seeded rows, creates the device
    const meter = await meteredDatabaseOf(userId);
    const body = (await (await get(who, path, meter.bindings)).json()) as { add: string[] };
    expect(body.add).toEqual(await activeUrls(userId));
    // A row per row walked (the active rows and the 20 tombstones beside them in the key index), the stats row and
    // the probe for rows without url_key twice (the filter and the answer); the list by changes walks nothing.
    expect(meter.rowsReadBy(gpodderStatements.wholeAdded.sql)).toEqual([expect.any(Number)]);
    expect(meter.rowsReadBy(gpodderStatements.wholeAdded.sql)[0]).toBeLessThanOrEqual(count + 20 + 4);
    expect(meter.rowsReadBy(gpodderStatements.addedPage.sql)[0]).toBeLessThanOrEqual(2);
    // The same list read by the changes, in pages cut by their text: the same URLs in the same order.
    const db = await databaseFor(userId);
    const caller = { userId, appPasswordId: "unused: reads take no guard" };
    const size = { rows: 10_001, min: 100, bytes: 20_000 };
    const paged = await readSubscriptionChanges(db, caller, 0, { frozen: false, size, knownBefore: 0 });
    const pages = await pagesOf(paged.add);
    expect(pages.length).toBeGreaterThan(2);
    expect(JSON.parse(`[${pages.map((page) => page.text).join(",")}]`)).toEqual(body.add);
  });

  it("a key several active rows share (one URL twice, two URLs of one key) is read by the changes instead", async () => {
    const userId = `gpodder-list-shared-${crypto.randomUUID()}`;
    await seedSubscriptions(userId, 30, { feedUrl: (_guid, i) => `https://s.example/${i}.xml` });
    const who = await credentials(userId);
    const path = `/api/2/subscriptions/${who.username}/dev.json?since=0`;
    await (await get(who, path)).text(); // keys the seeded rows
    const db = await databaseFor(userId);
    const keyed = async (url: string) =>
      (await db
        .prepare("SELECT url_key FROM subscriptions WHERE user_id = ? AND feed_url = ?")
        .bind(userId, url)
        .first<{ url_key: number }>()) as { url_key: number };
    // Rows written straight into D1 as a race or a move before its merge could leave them: a second active row of
    // https://s.example/3.xml, and another URL under the key of https://s.example/4.xml.
    const version = async () =>
      ((await db.prepare("SELECT version FROM user_stats WHERE user_id = ?").bind(userId).first<{ version: number }>())
        ?.version ?? 0) + 1;
    const insert = async (url: string, key: number) =>
      db
        .prepare(
          "INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, change_seq, url_key, received_at) VALUES (?, ?, ?, ?, ?, ?, unixepoch())",
        )
        .bind(userId, crypto.randomUUID(), url, Date.now(), await version(), key)
        .run();
    await insert("https://s.example/3.xml", (await keyed("https://s.example/3.xml")).url_key);
    await insert("https://other.example/collides.xml", (await keyed("https://s.example/4.xml")).url_key);
    const meter = await meteredDatabaseOf(userId);
    const body = (await (await get(who, path, meter.bindings)).json()) as { add: string[] };
    const expected = [
      ...Array.from({ length: 30 }, (_, i) => `https://s.example/${i}.xml`),
      "https://other.example/collides.xml",
    ];
    expect(body.add).toEqual(expected);
    // The whole walk found the shared keys; the list by changes was read after it.
    const called = meter.totals.statements.map((statement) => statement.sql);
    expect(called.filter((sql) => sql === gpodderStatements.addedPage.sql)).toHaveLength(2);
  });

  it("the simple list that fits one page reads a row per feed it lists, and its page statement walks nothing", async () => {
    const userId = `gpodder-list-simple-${crypto.randomUUID()}`;
    const count = 1000;
    await seedSubscriptions(userId, 20, { unsubscribed: true });
    await seedSubscriptions(userId, count, {
      feedUrl: (_guid, i) => (i % 10 ? `https://l.example/${i}.xml` : hostileUrl(i)),
    });
    const who = await credentials(userId);
    const path = `/subscriptions/${who.username}.json`;
    await (await get(who, path)).text(); // verifies the password
    const meter = await meteredDatabaseOf(userId);
    const body = (await (await get(who, path, meter.bindings)).json()) as string[];
    expect(body).toEqual(
      Array.from({ length: count }, (_, i) => (i % 10 ? `https://l.example/${i}.xml` : hostileUrl(i))),
    );
    // The walk of the list's index (active rows alone, and the step that ends it) and the stats row twice; the page statement reads the stats row alone.
    expect(meter.rowsReadBy(exportStatements.whole.sql)).toHaveLength(1);
    expect(meter.rowsReadBy(exportStatements.whole.sql)[0]).toBeLessThanOrEqual(count + 3);
    expect(meter.rowsReadBy(exportStatements.page.sql)).toHaveLength(1);
    expect(meter.rowsReadBy(exportStatements.page.sql)[0]).toBeLessThanOrEqual(2);
    expect(meter.totals.calls).toBe(1);
  });

  it("an account over one page's bound walks nothing whole and is read by the changes", async () => {
    const userId = `gpodder-list-over-${crypto.randomUUID()}`;
    // Cut heads count 4 099 bytes each: 460 of them are over the 1.75 MiB of a page.
    await seedSubscriptions(userId, 460, { feedUrl: (_guid, i) => hostileUrl(i, 1000, "over.example") });
    const who = await credentials(userId);
    const path = `/api/2/subscriptions/${who.username}/dev.json?since=0`;
    await (await get(who, path)).text(); // keys the seeded rows
    expect((await feedListBytes(userId)).kept).toBeGreaterThan(GPODDER_SUBSCRIPTION_PAGES.bytes);
    const meter = await meteredDatabaseOf(userId);
    const body = (await (await get(who, path, meter.bindings)).json()) as { add: string[] };
    expect(body.add).toEqual(Array.from({ length: 460 }, (_, i) => hostileUrl(i, 1000, "over.example")));
    const [whole] = meter.rowsReadBy(gpodderStatements.wholeAdded.sql);
    expect(whole).toBeLessThanOrEqual(3);
  });
});

describe("a full episode list that fits one page is one walk (user_stats.episode_list_bytes, drizzle/0020)", () => {
  beforeEach(() => withinOneRateWindow());

  async function episodeListBytes(userId: string) {
    const db = await databaseFor(userId);
    const stored = await db.prepare("SELECT media_url, item_guid FROM episodes WHERE user_id = ?").bind(userId).all();
    const feeds = await db.prepare("SELECT feed_url FROM subscriptions WHERE user_id = ?").bind(userId).all();
    const stats = await db
      .prepare("SELECT episode_list_bytes, feed_url_max_bytes, episode_count FROM user_stats WHERE user_id = ?")
      .bind(userId)
      .first<{ episode_list_bytes: number; feed_url_max_bytes: number; episode_count: number }>();
    const expected = stored.results.reduce(
      (sum, row) =>
        sum +
        quotedBytesOf(row.media_url as string | null, 600, 4098) +
        quotedBytesOf(row.item_guid as string | null, 200, 2050),
      0,
    );
    const feedMost = Math.max(0, ...feeds.results.map((row) => quotedBytesOf(String(row.feed_url), 800, 4098)));
    return { stats, expected, rows: stored.results.length, feedMost };
  }

  it("the triggers keep the bound of every stored state through uploads, updates, tombstones and deletes", async () => {
    const userId = `gpodder-episode-bytes-${crypto.randomUUID()}`;
    const who = await credentials(userId);
    const auth = { Authorization: `Basic ${btoa(`${who.username}:${who.password}`)}` };
    const post = (path: string, body: unknown) =>
      send(new Request(`${ORIGIN}${path}`, { method: "POST", headers: auth, body: JSON.stringify(body) }));
    const longFeed = hostileUrl(1, 1000, "feed.example");
    const feeds = [longFeed, "https://plain.example/feed.xml"];
    expect((await post(`/api/2/subscriptions/${who.username}/dev.json`, { add: feeds, remove: [] })).status).toBe(200);
    const play = (podcast: string, episode: string, position: number, guid?: string) => ({
      podcast,
      episode,
      ...(guid === undefined ? {} : { guid }),
      action: "play",
      timestamp: "2026-11-01T10:00:00",
      started: 0,
      position,
      total: 3600,
    });
    const longMedia = (i: number) => hostileUrl(i, 700, "cdn.example");
    const actions = [
      play(feeds[0], longMedia(2), 10),
      play(feeds[0], "https://cdn.example/a.mp3", 20, `guid-"quoted"-\\-${"g".repeat(300)}`),
      play(feeds[1], hostileUrl(3, 120, "cdn.example"), 30, 'short-"guid"'),
      play(feeds[1], "https://cdn.example/b.mp3", 40),
    ];
    expect((await post(`/api/2/episodes/${who.username}.json`, actions)).status).toBe(200);
    let state = await episodeListBytes(userId);
    expect(state.rows).toBe(4);
    expect(state.stats?.episode_count).toBe(4);
    expect(state.stats?.episode_list_bytes, "step 1").toBe(state.expected);
    expect(state.stats?.feed_url_max_bytes).toBe(4098);
    // Updates of the same episodes (a later position; an episode named by its guid under another media URL).
    const updates = [
      play(feeds[0], longMedia(2), 50),
      play(feeds[1], "https://cdn.example/b.mp3", 60),
      play(feeds[0], hostileUrl(4, 200, "moved.example"), 70, `guid-"quoted"-\\-${"g".repeat(300)}`),
    ];
    expect((await post(`/api/2/episodes/${who.username}.json`, updates)).status).toBe(200);
    state = await episodeListBytes(userId);
    expect(state.stats?.episode_list_bytes, "step 2").toBe(state.expected);
    // A tombstone (the media URL goes), then rows leaving the database (a purge, a bucket move, an erasure).
    const db = await databaseFor(userId);
    await db
      .prepare(
        "UPDATE episodes SET deleted_at = 1, media_url = NULL, change_seq = (SELECT episode_version + 1 FROM user_stats WHERE user_id = ?1) WHERE user_id = ?1 AND media_url = ?2",
      )
      .bind(userId, "https://cdn.example/b.mp3")
      .run();
    state = await episodeListBytes(userId);
    expect(state.stats?.episode_list_bytes, "step 3").toBe(state.expected);
    await db.prepare("DELETE FROM episodes WHERE user_id = ? AND item_guid IS NULL").bind(userId).run();
    state = await episodeListBytes(userId);
    expect(state.rows).toBeLessThan(4);
    expect(state.stats?.episode_list_bytes, "step 4").toBe(state.expected);
    // The longest feed URL ever stored stays the bound after it is renamed away (never lowered).
    const { guid } = (await db
      .prepare("SELECT guid FROM subscriptions WHERE user_id = ? AND feed_url LIKE 'https://feed.example/1?%'")
      .bind(userId)
      .first()) as { guid: string };
    const user = await as(userId);
    const renamed = await user.patch(`/v1/subscriptions/${guid}`, {
      data: { type: "subscription", id: guid, attributes: { feedUrl: "https://short.example/renamed.xml" } },
    });
    expect(renamed.status).toBe(200);
    state = await episodeListBytes(userId);
    expect(state.stats?.feed_url_max_bytes).toBeGreaterThanOrEqual(state.feedMost);
    expect(state.stats?.feed_url_max_bytes).toBe(4098);
  });

  it("since 0: the whole list reads the states and their feeds once, and says what the pages say", async () => {
    const userId = `gpodder-episodes-whole-${crypto.randomUUID()}`;
    await seedSubscriptions(userId, 1, { feedUrl: () => hostileUrl(0, 200, "feed.example") });
    const db = await databaseFor(userId);
    const { guid } = (await db.prepare("SELECT guid FROM subscriptions WHERE user_id = ?").bind(userId).first()) as {
      guid: string;
    };
    const count = 1000;
    await seedEpisodes(userId, guid, count, (i) => (i % 10 ? `https://cdn.example/${i}.mp3` : hostileUrl(i, 300)));
    const live = count - Math.floor(count / 7);
    const who = await credentials(userId);
    const path = `/api/2/episodes/${who.username}.json?since=0`;
    await (await get(who, path)).text(); // verifies the password
    const meter = await meteredDatabaseOf(userId);
    const text = await (await get(who, path, meter.bindings)).text();
    const body = JSON.parse(text) as { actions: unknown[]; timestamp: number };
    expect(body.actions).toHaveLength(live);
    // A row per state walked and one for each live state's feed, the stats row and the seek for learned moves (in
    // the filter and the answer); the page statement beside it walks nothing.
    expect(meter.rowsReadBy(gpodderStatements.wholeEpisodes.sql)).toEqual([expect.any(Number)]);
    expect(meter.rowsReadBy(gpodderStatements.wholeEpisodes.sql)[0]).toBeLessThanOrEqual(count + live + 4);
    expect(meter.rowsReadBy(gpodderStatements.episodeChangesPage.sql)[0]).toBeLessThanOrEqual(2);
    // The same actions read by the pages cut by their text, byte for byte.
    const size = { rows: 12_500, min: 100, bytes: 20_000 };
    const pages = await pagesOf((await readEpisodeActions(db, userId, 0, { size, aliases: true })).pages);
    expect(pages.length).toBeGreaterThan(2);
    expect(
      JSON.stringify({
        actions: JSON.parse(
          `[${pages
            .map((page) => page.text)
            .filter((page) => page !== "")
            .join(",")}]`,
        ),
        timestamp: body.timestamp,
      }),
    ).toBe(text);
  });

  it("a user with a learned move is read in pages by the gpodder.net read (its copies), whole by the Nextcloud one", async () => {
    const userId = `gpodder-episodes-moved-${crypto.randomUUID()}`;
    await seedSubscriptions(userId, 1, { feedUrl: () => "https://feed.example/moved.xml" });
    const db = await databaseFor(userId);
    const { guid } = (await db.prepare("SELECT guid FROM subscriptions WHERE user_id = ?").bind(userId).first()) as {
      guid: string;
    };
    await seedEpisodes(userId, guid, 200, (i) => `https://cdn.example/${i}.mp3`);
    // The mark a learned move leaves on the row (src/db/feed-aliases.ts); its copies come from the aliases.
    await db
      .prepare("UPDATE subscriptions SET learned_move_seq = change_seq WHERE user_id = ? AND guid = ?")
      .bind(userId, guid)
      .run();
    const read = async (aliases: boolean) => {
      const meter = await meteredDatabaseOf(userId);
      const pages = await pagesOf((await readEpisodeActions(meter.binding, userId, 0, { aliases })).pages);
      return {
        text: pages.map((page) => page.text).join(","),
        whole: meter.rowsReadBy(gpodderStatements.wholeEpisodes.sql)[0],
        page: meter.rowsReadBy(gpodderStatements.episodeChangesPage.sql)[0],
      };
    };
    const gpodderRead = await read(true);
    const nextcloudRead = await read(false);
    // The stats row and the seek for learned moves, in the filter and the answer.
    expect(gpodderRead.whole).toBeLessThanOrEqual(4);
    expect(gpodderRead.page).toBeGreaterThan(200);
    expect(nextcloudRead.whole).toBeGreaterThan(200);
    expect(nextcloudRead.page).toBeLessThanOrEqual(3);
    expect(gpodderRead.text).toBe(nextcloudRead.text);
  });

  it("an account over one page's bound walks nothing whole and is read by the pages", { timeout: 60_000 }, async () => {
    const userId = `gpodder-episodes-over-${crypto.randomUUID()}`;
    await seedSubscriptions(userId, 1, { feedUrl: () => "https://feed.example/over.xml" });
    const db = await databaseFor(userId);
    const { guid } = (await db.prepare("SELECT guid FROM subscriptions WHERE user_id = ?").bind(userId).first()) as {
      guid: string;
    };
    // Cut media heads count 4 098 bytes each: 1 000 of them are over the 3.75 MiB of a page.
    const count = 1000;
    await seedEpisodes(userId, guid, count, (i) => hostileUrl(i, 700, "cdn.example"), count + 1);
    expect(await episodeListBound(userId)).toBeGreaterThan(3.75 * 1024 * 1024);
    const meter = await meteredDatabaseOf(userId);
    const pages = await pagesOf((await readEpisodeActions(meter.binding, userId, 0, { aliases: true })).pages);
    const actions = JSON.parse(`[${pages.map((page) => page.text).join(",")}]`) as { episode: string }[];
    expect(actions.map((action) => action.episode)).toEqual(
      Array.from({ length: count }, (_, i) => hostileUrl(i, 700, "cdn.example")),
    );
    const [whole] = meter.rowsReadBy(gpodderStatements.wholeEpisodes.sql);
    expect(whole).toBeLessThanOrEqual(3);
  });
});
