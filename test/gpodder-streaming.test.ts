import { describe, expect, it } from "vitest";
import { GPODDER_EPISODE_PAGE_ROWS } from "../src/db/gpodder";
import { OPML_EXPORT_PAGE_ROWS } from "../src/db/opml";
import { toEpisodeAction } from "../src/gpodder/episode-actions";
import { MAX_FEED_URL_BYTES } from "../src/resources/subscription";
import {
  as,
  databaseFor,
  logStreamMeasure,
  meteredDatabaseOf,
  ORIGIN,
  readChunks,
  seedSubscriptions,
  send,
} from "./helpers";

// docs/API.md §14-15: the gpodder GETs that grow with the account (the simple API's lists, the episode
// actions since a time) are written page by page, one D1 call each. What they answer must be what the data
// says, every row once and in order, across the pages' seams; and what they hold at once must be one page.

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
    .prepare("SELECT version FROM user_stats WHERE user_id = ?")
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

  it("episode actions since 0 over several pages: every live state once, oldest change first, tombstones skipped", async () => {
    const userId = `gpodder-stream-episodes-${crypto.randomUUID()}`;
    await seedSubscriptions(userId, 1, { feedUrl: () => hostileUrl(0, 200, "feed.example") });
    const db = await databaseFor(userId);
    const feed = (await db
      .prepare("SELECT guid, feed_url FROM subscriptions WHERE user_id = ?")
      .bind(userId)
      .first()) as { guid: string; feed_url: string };
    const count = 3 * GPODDER_EPISODE_PAGE_ROWS + 31;
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
    expect(expected.length).toBeGreaterThan(2 * GPODDER_EPISODE_PAGE_ROWS);
    expect(text).toBe(JSON.stringify({ actions: expected, timestamp: body.timestamp }));
    expect(body.timestamp).toBeGreaterThanOrEqual(before);

    // The podcast filter applies on every page, and a page it empties writes nothing.
    const other = await get(who, `/api/2/episodes/${who.username}.json?since=0&podcast=https://none.example/`);
    expect(JSON.parse(await other.text())).toEqual({ actions: [], timestamp: expect.any(Number) });
  });

  it("episode actions of 2 KB URLs full of escapes: the most held at once is one page, each D1 call short", {
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

    const meter = await meteredDatabaseOf(userId);
    const response = await get(who, `/api/2/episodes/${who.username}.json?since=0`, meter.bindings);
    expect(response.status).toBe(200);
    const calledBeforeBody = meter.totals.statements.length;
    const read = await readChunks(response);
    const { totalBytes, largestChunk } = read;
    const pages = Math.ceil(count / GPODDER_EPISODE_PAGE_ROWS);
    // An action: the feed's and the episode's URLs, each escaped for JSON (at most twice its bytes), and ~150
    // bytes of the rest.
    const actionBytes = 2 * (2 * MAX_FEED_URL_BYTES) + 150;
    logStreamMeasure("gpodder_episodes_measure", { states: count }, read, meter.totals);
    expect(totalBytes).toBeGreaterThan(count * 2 * MAX_FEED_URL_BYTES);
    expect(largestChunk).toBeLessThanOrEqual(GPODDER_EPISODE_PAGE_ROWS * actionBytes);
    expect(largestChunk).toBeLessThan(totalBytes / 10);
    // The first page was read before the response started; the others as the body was read, one call each.
    expect(meter.totals.statements.length - calledBeforeBody).toBeGreaterThanOrEqual(pages - 1);
    expect(meter.totals.statements.length).toBeLessThanOrEqual(pages + 4);
    expect(Math.max(...meter.totals.sqlMs)).toBeLessThan(100);
  });
});
