import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { pageOf } from "../src/db/change-feed";
import type { ChangedEpisode } from "../src/db/episodes";
import { listEpisodeChanges } from "../src/db/episodes";
import { PENDING_PODCAST, type Podcast } from "../src/db/feeds";
import type { ChangedSubscription } from "../src/db/subscriptions";
import { listChanges, listChangesWithPodcasts, listPageOf, listSubscriptions } from "../src/db/subscriptions";
import { urlKey } from "../src/db/url-key";
import { MAX_SECONDS, toEpisodeChangeResource } from "../src/resources/episode";
import { toPodcastResource } from "../src/resources/podcast";
import { toChangeResource, toSubscriptionResource } from "../src/resources/subscription";
import { databaseFor } from "./helpers";
import { propertyOptions } from "./property-options";

/** The last millisecond `toISOString` writes with a four-digit year. */
const YEAR_9999_END = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/** Times at the edges (epoch, whole and odd milliseconds, leap day, a clamped "now", the last of 9999) and anywhere. */
const time = fc.oneof(
  fc.constantFrom(0, 1, 10, 99, 999, 1000, Date.UTC(2000, 0, 1), Date.UTC(2024, 1, 29, 23, 59, 59, 999), YEAR_9999_END),
  fc.constant(Date.now()),
  fc.integer({ min: 0, max: YEAR_9999_END }),
);

/**
 * Text with what JSON escapes and what it leaves alone (quotes, backslashes, slashes, non-ASCII, astral, U+2028),
 * the item boundary's own spelling, and lengths on both sides of where long URLs are cut into pieces.
 */
const text = (maxLength: number) =>
  fc
    .array(
      fc.constantFrom("a", "Z", "9", '"', "\\", "/", "é", "€", "😀", "\u2028", "<", "&", ',{"type":"', "%20", "?q=1"),
      {
        maxLength,
      },
    )
    .map((parts) => parts.join(""));

const url = fc.oneof(
  text(40).map((path) => `https://cdn.example.com/${path}`),
  fc.integer({ min: 560, max: 900 }).map((length) => `https://cdn.example.com/${"é".repeat(length / 2)}x`),
);

const episodeState = fc.record({
  id: fc.uuid(),
  feedGuid: fc.uuid(),
  mediaUrl: url,
  itemGuid: fc.option(fc.oneof(text(30), fc.constant("g".repeat(250))), { nil: null }),
  position: fc.oneof(fc.constantFrom(0, MAX_SECONDS), fc.integer({ min: 0, max: MAX_SECONDS })),
  duration: fc.option(fc.oneof(fc.constantFrom(1, MAX_SECONDS), fc.integer({ min: 1, max: MAX_SECONDS })), {
    nil: null,
  }),
  played: fc.boolean(),
  positionChangedAt: fc.option(time, { nil: null }),
  playedChangedAt: fc.option(time, { nil: null }),
  deletedAt: fc.option(time, { nil: null, freq: 3 }),
});

const subscriptionState = fc.record({
  guid: fc.uuid(),
  feedUrl: url,
  subscribedAt: time,
  unsubscribedAt: fc.option(time, { nil: null, freq: 3 }),
});

/** Distinct ids: a user's row is one state. */
const distinct = <T>(items: T[], key: (item: T) => string) => [...new Map(items.map((i) => [key(i), i])).values()];

let users = 0;

/** Every page of the feed from 0 at `size` a page: each page's text, last change and whether more follow. */
async function pages(read: typeof listChanges, user: string, size: number) {
  const db = await databaseFor(user);
  const result: { data: string; last: number; more: boolean }[] = [];
  for (let since = 0; ; ) {
    const { changes } = await read(db, user, since, size);
    if (!changes) throw new Error("a read without a known version always reads the changes");
    result.push(changes);
    if (!changes.more) return result;
    since = changes.last;
  }
}

/** The pages the JS serialiser writes for `changes` (in change order), as texts. */
function expectedPages<T extends { changeSeq: number }>(changes: T[], size: number, serialise: (change: T) => unknown) {
  const result: { data: string; last: number; more: boolean }[] = [];
  for (let start = 0; start === 0 || start < changes.length; start += size) {
    const page = changes.slice(start, start + size);
    result.push({
      data: JSON.stringify(page.map(serialise)),
      last: page.at(-1)?.changeSeq ?? 0,
      more: start + size < changes.length,
    });
  }
  return result;
}

describe("change feed items written by SQLite", () => {
  it("equal the JS serialiser's text byte for byte: random episode states, tombstones, null fields, edge times, long URLs", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(episodeState, { maxLength: 30 }),
        fc.integer({ min: 1, max: 12 }),
        async (drawn, size) => {
          const user = `feed-items-episodes-${users++}`;
          const states = distinct(drawn, (state) => state.id);
          const db = await databaseFor(user);
          const changes: ChangedEpisode[] = states.map((state, i) =>
            state.deletedAt === null
              ? { ...state, deletedAt: null, changeSeq: i + 1 }
              : { id: state.id, feedGuid: state.feedGuid, deletedAt: state.deletedAt, changeSeq: i + 1 },
          );
          if (states.length > 0) {
            await db.batch(
              states.map((state, i) => {
                const live = state.deletedAt === null;
                return db
                  .prepare(
                    `INSERT INTO episodes (user_id, id, feed_guid, media_url, item_guid, position, duration, played,
                     position_changed_at, played_changed_at, change_seq, received_at, deleted_at)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)`,
                  )
                  .bind(
                    user,
                    state.id,
                    state.feedGuid,
                    live ? state.mediaUrl : null,
                    live ? state.itemGuid : null,
                    state.position,
                    state.duration,
                    state.played ? 1 : 0,
                    state.positionChangedAt,
                    state.playedChangedAt,
                    i + 1,
                    state.deletedAt,
                  );
              }),
            );
          }
          const read = await pages(listEpisodeChanges, user, size);
          expect(read).toEqual(expectedPages(changes, size, toEpisodeChangeResource));
        },
      ),
      propertyOptions(20261124, 40),
    );
  });

  it("equal the JS serialiser's text byte for byte: random subscriptions, unsubscribed ones, edge times, long URLs", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(subscriptionState, { maxLength: 30 }),
        fc.integer({ min: 1, max: 12 }),
        async (drawn, size) => {
          const user = `feed-items-subscriptions-${users++}`;
          const states = distinct(drawn, (state) => state.guid);
          const db = await databaseFor(user);
          const changes: ChangedSubscription[] = states.map((state, i) => ({ ...state, changeSeq: i + 1 }));
          if (states.length > 0) {
            await db.batch(
              states.map((state, i) =>
                db
                  .prepare(
                    `INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq, subscribed_seq)
                     VALUES (?, ?, ?, ?, ?, ?, ?)`,
                  )
                  .bind(user, state.guid, state.feedUrl, state.subscribedAt, state.unsubscribedAt, i + 1, i + 1),
              ),
            );
          }
          const read = await pages(listChanges, user, size);
          expect(read).toEqual(expectedPages(changes, size, toChangeResource));
        },
      ),
      propertyOptions(20261124, 40),
    );
  });

  it("a page whose aggregate came out of change order is put in order, the change read past the page left out", () => {
    const items = [3, 1, 2].map((seq) => ({ type: "episode", id: `e${seq}`, attributes: { note: ',{"type":"x' } }));
    const page = pageOf(`3,1,2 ${JSON.stringify(items)}`, 0, 2);
    expect(page).toEqual({
      data: JSON.stringify([items[1], items[2]]),
      last: 2,
      more: true,
    });
  });

  it("list pages equal the JS serialiser's text byte for byte: random subscriptions, unsubscribed ones among them, ties", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(subscriptionState, { maxLength: 30 }),
        fc.integer({ min: 1, max: 12 }),
        async (drawn, size) => {
          const user = `list-items-${users++}`;
          const states = distinct(drawn, (state) => state.guid);
          const db = await databaseFor(user);
          if (states.length > 0) {
            await db.batch(
              states.map((state, i) =>
                db
                  .prepare(
                    `INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq, subscribed_seq)
                     VALUES (?, ?, ?, ?, ?, ?, ?)`,
                  )
                  // Ties of subscribedAt (the same millisecond) are ordered by subscribedSeq.
                  .bind(user, state.guid, state.feedUrl, state.subscribedAt % 7, state.unsubscribedAt, i + 1, i + 1),
              ),
            );
          }
          const active = states
            .map((state, i) => ({ ...state, subscribedAt: state.subscribedAt % 7, seq: i + 1 }))
            .filter((state) => state.unsubscribedAt === null)
            .sort((a, b) => a.subscribedAt - b.subscribedAt || a.seq - b.seq);
          const pages = Math.max(1, Math.ceil(active.length / size)) + 1;
          for (let number = 1; number <= pages; number++) {
            const page = await listSubscriptions(db, user, { number, size });
            const rows = active.slice((number - 1) * size, number * size);
            expect(page.data).toBe(JSON.stringify(rows.map((row) => toSubscriptionResource(row))));
            expect(page.total).toBe(active.length);
          }
        },
      ),
      propertyOptions(20261126, 40),
    );
  });

  it("pages with their podcasts (include=podcast) equal the JS serialisers' text byte for byte: list and change feed", async () => {
    const podcast = fc.option(
      fc.record({
        title: fc.option(text(20), { nil: null }),
        author: fc.option(text(10), { nil: null }),
        description: fc.option(text(30), { nil: null }),
        imageUrl: fc.option(url, { nil: null }),
        siteUrl: fc.option(url, { nil: null }),
        language: fc.option(fc.constantFrom("en", "de-AT"), { nil: null }),
        podcastGuid: fc.option(fc.uuid(), { nil: null }),
        fetchedAt: fc.option(time, { nil: null }),
        status: fc.constantFrom("ok" as const, "failing" as const, "gone" as const),
      }),
      { nil: null, freq: 3 },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ state: subscriptionState, podcast }), { maxLength: 20 }),
        fc.integer({ min: 1, max: 8 }),
        async (drawn, size) => {
          const user = `podcast-items-${users++}`;
          // Feed rows are per URL, shared by every user of the database: this run's URLs are its own.
          const rows = distinct(drawn, (row) => row.state.guid).map((row) => ({
            ...row,
            state: { ...row.state, feedUrl: `${row.state.feedUrl}#${user}` },
          }));
          const db = await databaseFor(user);
          const known = new Map<string, Podcast>();
          for (const { state, podcast } of rows) {
            if (!podcast) continue;
            const { fetchedAt, ...facts } = podcast;
            known.set(state.feedUrl, {
              ...facts,
              fetchedAt: fetchedAt === null ? null : new Date(fetchedAt).toISOString(),
            });
          }
          const statements = rows.flatMap(({ state, podcast }, i) => {
            const insert = db
              .prepare(
                `INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq, subscribed_seq, url_key)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
              )
              .bind(
                user,
                state.guid,
                state.feedUrl,
                state.subscribedAt,
                state.unsubscribedAt,
                i + 1,
                i + 1,
                urlKey(state.feedUrl),
              );
            if (!podcast) return [insert];
            const p = podcast;
            return [
              insert,
              db.prepare("INSERT OR IGNORE INTO feeds (url_key) VALUES (?)").bind(urlKey(state.feedUrl)),
              db
                .prepare(
                  `UPDATE feeds SET url = ?, status = ?, title = ?, author = ?, description = ?, image_url = ?, site_url = ?,
                   language = ?, podcast_guid = ?, fetched_at = ? WHERE url_key = ?`,
                )
                .bind(
                  state.feedUrl,
                  p.status,
                  p.title,
                  p.author,
                  p.description,
                  p.imageUrl,
                  p.siteUrl,
                  p.language,
                  p.podcastGuid,
                  p.fetchedAt,
                  urlKey(state.feedUrl),
                ),
            ];
          });
          if (statements.length > 0) await db.batch(statements);
          const podcastOf = (feedUrl: string): Podcast => known.get(feedUrl) ?? PENDING_PODCAST;
          const resourceOf = (row: { guid: string; feedUrl: string }) =>
            toPodcastResource(row.guid, podcastOf(row.feedUrl));

          const active = rows
            .map(({ state }, i) => ({ ...state, seq: i + 1 }))
            .filter((state) => state.unsubscribedAt === null)
            .sort((a, b) => a.subscribedAt - b.subscribedAt || a.seq - b.seq);
          const page = await listSubscriptions(db, user, { number: 1, size }, null, "podcasts");
          const shown = active.slice(0, size);
          expect(page.data).toBe(JSON.stringify(shown.map((row) => toSubscriptionResource(row))));
          expect(page.included).toBe(JSON.stringify(shown.map(resourceOf)));

          const changes: ChangedSubscription[] = rows.map(({ state }, i) => ({ ...state, changeSeq: i + 1 }));
          for (let since = 0; ; ) {
            const read = await listChangesWithPodcasts(db, user, since, size);
            const expected = changes.filter((change) => change.changeSeq > since).slice(0, size);
            expect(read.changes?.data).toBe(JSON.stringify(expected.map(toChangeResource)));
            const live = expected.filter((change) => change.unsubscribedAt === null);
            expect(read.changes?.included).toBe(JSON.stringify(live.map(resourceOf)));
            if (!read.changes?.more) break;
            since = read.changes.last;
          }
        },
      ),
      { seed: 20261201, numRuns: 30 },
    );
  });

  it("a list page whose aggregate came out of list order is put in order (subscribedAt, then subscribedSeq)", () => {
    const items = ["c", "a", "b"].map((id) => ({ type: "subscription", id, attributes: { note: ',{"type":"x' } }));
    expect(listPageOf(`5:3,5:1,2:9 ${JSON.stringify(items)}`)).toBe(JSON.stringify([items[2], items[1], items[0]]));
    expect(listPageOf(`1:1,1:2 ${JSON.stringify(items.slice(0, 2))}`)).toBe(JSON.stringify(items.slice(0, 2)));
    expect(listPageOf(" []")).toBe("[]");
  });
});
