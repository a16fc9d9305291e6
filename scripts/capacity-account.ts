// The worst account (docs/API.md §15): what one account at the quotas and the 8 MiB budget stores on disk, and
// how long its most expensive requests hold its database, run as the app runs them (its own statements, in one
// transaction per request, as one D1 batch is). Plain SQLite in-process (node:sqlite) on a file built by the
// migrations in drizzle/, 4 KiB pages as D1's; D1 reports durations in whole milliseconds only.
// `npm run capacity -- --account` prints it; docs/CAPACITY.md quotes it.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import { accountStatements } from "../src/db/account";
import { episodeStatements } from "../src/db/episodes";
import { GPODDER_EPISODE_PAGES, GPODDER_SUBSCRIPTION_PAGES, gpodderStatements } from "../src/db/gpodder";
import { OPML_EXPORT_PAGE_ROWS, opmlStatements } from "../src/db/opml";
import { retentionStatementsByName, TOMBSTONES_PER_RUN, URL_KEYS_PER_RUN } from "../src/db/retention";
import type { Statement } from "../src/db/statements";
import { MAX_URL_BYTES } from "../src/db/storage";
import { allStatements } from "../src/db/subscriptions";
import { nextPageLimit, type TextPageRow, type TextPageSize } from "../src/db/text-pages";
import { urlKey } from "../src/db/url-key";

const MIGRATIONS = new URL("../drizzle/", import.meta.url);
const USER = "auth0|0123456789abcdef01234567"; // 30 characters, as identity providers issue them
const FEED = "9b024349-ccf0-5f69-a609-6b82873eab3c";

/** A fresh database file with every migration applied. */
function freshDatabase(dir: string, name: string): DatabaseSync {
  const sqlite = new DatabaseSync(join(dir, `${name}.sqlite`));
  sqlite.exec("PRAGMA page_size = 4096");
  for (const file of readdirSync(MIGRATIONS)
    .filter((entry) => entry.endsWith(".sql"))
    .sort()) {
    sqlite.exec(readFileSync(new URL(file, MIGRATIONS), "utf8").replaceAll("--> statement-breakpoint", ""));
  }
  return sqlite;
}

/** The SQL text and parameters of one of the app's statements for `values` (also used by capacity.ts). */
export function rendered(statement: Statement, values: Record<string, unknown>) {
  let captured: { sql: string; params: SQLInputValue[] } | undefined;
  const client = {
    prepare: (sql: string) => ({
      bind: (...params: SQLInputValue[]) => {
        captured = { sql, params };
      },
    }),
  } as unknown as D1Database;
  statement.bind(client, values);
  return captured as { sql: string; params: SQLInputValue[] };
}

/** Milliseconds one request's statements take in one transaction (rolled back, so each request sees the same data). */
function time(sqlite: DatabaseSync, statements: { sql: string; params: SQLInputValue[] }[], keep = false): number {
  const prepared = statements.map(({ sql, params }) => ({ query: sqlite.prepare(sql), params }));
  const started = performance.now();
  sqlite.exec("BEGIN");
  for (const { query, params } of prepared) query.all(...params);
  const ms = performance.now() - started;
  sqlite.exec(keep ? "COMMIT" : "ROLLBACK");
  return Math.round(ms * 100) / 100;
}

/** The median of `runs` timings: the machine is shared, a single run is noise. */
function median(runs: number, measure: () => number): number {
  const times = Array.from({ length: runs }, measure).sort((a, b) => a - b);
  return times[Math.floor(runs / 2)];
}

function fileBytes(sqlite: DatabaseSync): number {
  const pragma = (name: string) => Number(Object.values(sqlite.prepare(`PRAGMA ${name}`).get() ?? {})[0]);
  return (pragma("page_count") - pragma("freelist_count")) * pragma("page_size");
}

const url = (bytes: number, index: number, host = "feeds.example.com") => {
  const head = `https://${host}/${index}/`;
  return head + "x".repeat(bytes - head.length);
};
const uuid = (index: number, prefix = "00000000") => `${prefix}-0000-4000-8000-${String(index).padStart(12, "0")}`;

/**
 * Inserts subscriptions (change numbers from 1 up); `tombstone(i)` makes the i-th one a tombstone. Each has its
 * url_key as every write since migration 0004 sets it, unless `keyed` is false: a row from before 0004.
 */
function seedSubscriptions(
  sqlite: DatabaseSync,
  count: number,
  bytes: number,
  tombstone: (i: number) => boolean,
  keyed = true,
) {
  const insert = sqlite.prepare(
    "INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq, subscribed_seq, received_at, url_key) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)",
  );
  sqlite.exec("BEGIN");
  for (let i = 1; i <= count; i++) {
    const feedUrl = url(bytes, i);
    insert.run(USER, uuid(i), feedUrl, i, tombstone(i) ? i : null, i, i, keyed ? urlKey(feedUrl) : null);
  }
  sqlite.exec("COMMIT");
}

function seedEpisodes(
  sqlite: DatabaseSync,
  count: number,
  bytes: number,
  tombstone: (i: number) => boolean,
  feed = (_i: number) => FEED,
) {
  const insert = sqlite.prepare(
    "INSERT INTO episodes (user_id, id, feed_guid, media_url, position, change_seq, received_at, deleted_at) VALUES (?, ?, ?, ?, 0, ?, 0, ?)",
  );
  sqlite.exec("BEGIN");
  for (let i = 1; i <= count; i++) {
    const gone = tombstone(i);
    insert.run(USER, uuid(i, "e0000000"), feed(i), gone ? null : url(bytes, i, "cdn.example.com"), i, gone ? i : null);
  }
  sqlite.exec("COMMIT");
}

function stat(sqlite: DatabaseSync, column: string): number {
  return Number(
    (sqlite.prepare(`SELECT ${column} AS v FROM user_stats WHERE user_id = ?`).get(USER) as { v: number }).v,
  );
}

/** `count` subscribes of fresh 2 048-byte feeds, each with the make-room statement before it (bulk, OPML import). */
function subscribes(count: number, from: number) {
  return Array.from({ length: count }, (_, i) => {
    const values = {
      userId: USER,
      guid: uuid(from + i, "f0000000"),
      feedUrl: url(2048, from + i, "new.example.com"),
      now: 0,
      urlKey: null,
    };
    return [rendered(allStatements.subscribeRoom, values), rendered(allStatements.subscribe, values)];
  }).flat();
}

/**
 * Every page of a walk of text pages (src/db/text-pages.ts) as the app reads them, each timed in its own transaction:
 * `values(after, limit)` binds a page.
 */
function textPageTimes(
  sqlite: DatabaseSync,
  statement: Statement,
  values: (after: number | null, limit: number) => Record<string, unknown>,
  size: TextPageSize,
): number[] {
  const times: number[] = [];
  let after: number | null = null;
  let limit: number | undefined = size.rows;
  while (limit !== undefined) {
    const page = rendered(statement, { ...values(after, limit), bytes: size.bytes });
    times.push(time(sqlite, [page]));
    const row = sqlite.prepare(page.sql).get(...page.params) as unknown as TextPageRow;
    limit = nextPageLimit(row, limit, size);
    after = row.last;
  }
  return times;
}

/** Every page of the gpodder subscription changes since 0: the `add` walk, then `remove`. */
function subscriptionChangeTimes(sqlite: DatabaseSync): number[] {
  return [gpodderStatements.addedPage, gpodderStatements.removedPage].flatMap((pageStatement) =>
    textPageTimes(
      sqlite,
      pageStatement,
      (after, limit) => ({ userId: USER, since: 0, floor: after === null ? null : 0, after, limit, frozen: 0 }),
      GPODDER_SUBSCRIPTION_PAGES,
    ),
  );
}

/** Every page of the subscription changes since 0: the slowest page and the sum, of the median of three sweeps. */
function subscriptionChangeSweep(sqlite: DatabaseSync) {
  const sweeps = Array.from({ length: 3 }, () => subscriptionChangeTimes(sqlite));
  const sum = (times: number[]) => Math.round(times.reduce((a, b) => a + b, 0) * 100) / 100;
  const sweep = sweeps.sort((a, b) => sum(a) - sum(b))[1];
  return { slowest: Math.max(...sweep), sum: sum(sweep) };
}

/** One retention run's url_key backfill (src/db/retention.ts): its find, and its write of the keys found. */
function urlKeyBackfill(sqlite: DatabaseSync) {
  const find = rendered(retentionStatementsByName.missingUrlKeys, { skip: "[]" });
  const found = sqlite.prepare(find.sql).all(...find.params) as { user_id: string; guid: string; feed_url: string }[];
  const keys = JSON.stringify(found.map((row) => [row.user_id, row.guid, urlKey(row.feed_url)]));
  return { found: found.length, statements: [find, rendered(retentionStatementsByName.fillUrlKeys, { keys })] };
}

export function measureWorstAccount() {
  const dir = mkdtempSync(join(tmpdir(), "capacity-account-"));
  try {
    // 1. At the budget with the longest URLs: 4 096 live subscriptions of 2 048 bytes (8 MiB exactly).
    const budget = freshDatabase(dir, "budget");
    const empty = fileBytes(budget);
    seedSubscriptions(budget, 4096, 2048, () => false);
    const budgetBytes = fileBytes(budget) - empty;
    const urlBytes = stat(budget, "url_bytes");
    const list = (offset: number) => [
      rendered(allStatements.list, { userId: USER, knownVersion: null, limit: 100, offset }),
    ];
    const requests: Record<string, number> = {
      "list, deepest page of 100 (offset 3 996)": median(9, () => time(budget, list(3996))),
      "change feed, 100 from 0": median(9, () =>
        time(budget, [rendered(allStatements.changes, { userId: USER, since: 0, limit: 101, knownVersion: null })]),
      ),
      "change feed, the last 100": median(9, () =>
        time(budget, [rendered(allStatements.changes, { userId: USER, since: 3996, limit: 101, knownVersion: null })]),
      ),
      "OPML export, one page of 100 (the deepest)": median(9, () =>
        time(budget, [
          rendered(opmlStatements.activeFeedsPage, { userId: USER, afterAt: 3996, afterSeq: 3996, limit: 100 }),
        ]),
      ),
      "gpodder simple list (json, txt, opml), one page of 100 (the deepest)": median(9, () =>
        time(budget, [
          rendered(opmlStatements.activeFeedsPage, { userId: USER, afterAt: 3996, afterSeq: 3996, limit: 100 }),
        ]),
      ),
      "gpodder simple list, every page of 100 (sum of the D1 calls)": median(3, () =>
        Array.from({ length: Math.ceil(4096 / OPML_EXPORT_PAGE_ROWS) + 1 }, (_, page) =>
          time(budget, [
            rendered(opmlStatements.activeFeedsPage, {
              userId: USER,
              afterAt: page * OPML_EXPORT_PAGE_ROWS,
              afterSeq: page * OPML_EXPORT_PAGE_ROWS,
              limit: OPML_EXPORT_PAGE_ROWS,
            }),
          ]),
        ).reduce((a, b) => Math.round((a + b) * 100) / 100, 0),
      ),
      "bulk of 100 adds, at the budget (all refused)": median(5, () => time(budget, subscribes(100, 1))),
      "OPML import of 1 000 feeds, at the budget (all refused)": median(5, () => time(budget, subscribes(1000, 1))),
    };
    budget.close();

    // 1a. The gpodder subscription changes since 0 at the budget, half of the rows tombstones (both walks name
    //     URLs), of rows written since 0004; then of rows from before it (no url_key), before and after the
    //     retention cron's backfill has keyed them, and what one backfill run costs.
    const changes = freshDatabase(dir, "changes");
    seedSubscriptions(changes, 4096, 2048, (i) => i % 2 === 0);
    const keyedSweep = subscriptionChangeSweep(changes);
    requests["gpodder subscription changes since 0, half tombstones, the slowest page of either walk"] =
      keyedSweep.slowest;
    requests["gpodder subscription changes since 0, half tombstones, every page of both walks (sum of the D1 calls)"] =
      keyedSweep.sum;
    changes.close();
    const legacy = freshDatabase(dir, "legacy");
    seedSubscriptions(legacy, 4096, 2048, (i) => i % 2 === 0, false);
    const unkeyedSweep = subscriptionChangeSweep(legacy);
    requests["the same, rows from before 0004 (no url_key), the slowest page"] = unkeyedSweep.slowest;
    requests["the same, rows from before 0004 (no url_key), every page (sum)"] = unkeyedSweep.sum;
    requests[`retention run, url_key backfill of ${URL_KEYS_PER_RUN} rows of 2 048 bytes (find and write)`] = median(
      5,
      () => time(legacy, urlKeyBackfill(legacy).statements),
    );
    let runs = 0;
    for (let run = urlKeyBackfill(legacy); run.found > 0; run = urlKeyBackfill(legacy), runs++) {
      time(legacy, run.statements, true);
    }
    const backfilledSweep = subscriptionChangeSweep(legacy);
    requests[`the same after the backfill (${runs} retention runs), the slowest page`] = backfilledSweep.slowest;
    requests[`the same after the backfill (${runs} retention runs), every page (sum)`] = backfilledSweep.sum;
    legacy.close();

    // 1b. The list's worst tie: the deepest page's first row the last of 1 000 subscribed in one millisecond (one
    //     import), whose index entries the page's seek steps over (db/subscriptions.ts).
    const tied = freshDatabase(dir, "tied");
    seedSubscriptions(tied, 4096, 2048, () => false);
    tied.exec("UPDATE subscriptions SET subscribed_at = (subscribed_at + 3) / 1000");
    requests["list, deepest page of 100, its first row the last of an import of 1 000"] = median(9, () =>
      time(tied, [rendered(allStatements.list, { userId: USER, knownVersion: null, limit: 100, offset: 3996 })]),
    );
    tied.close();

    // 2. At the budget with 1 000 of the 4 096 unsubscribed, numbered last (above every live row): the import's
    //    first purge renumbers the 3 096 live rows once; the other 999 purge without renumbering.
    const recycle = freshDatabase(dir, "recycle");
    seedSubscriptions(recycle, 4096, 2048, (i) => i > 3096);
    requests["OPML import of 1 000 feeds, each purging a tombstone (3 096 live rows renumbered once)"] = median(5, () =>
      time(recycle, subscribes(1000, 1)),
    );
    requests["bulk of 100 adds, each purging a tombstone (3 096 renumbered once)"] = median(5, () =>
      time(recycle, subscribes(100, 1)),
    );
    recycle.close();

    // 3. The renumbering worst case: every live row below the only tombstone, at the count quotas.
    const churnSubscriptions = freshDatabase(dir, "churn-subscriptions");
    seedSubscriptions(churnSubscriptions, 10_000, 60, (i) => i === 10_000);
    requests["subscribe at the quota purging the newest tombstone (9 999 renumbered)"] = median(5, () =>
      time(churnSubscriptions, subscribes(1, 1)),
    );
    churnSubscriptions.close();
    const churnEpisodes = freshDatabase(dir, "churn-episodes");
    seedEpisodes(churnEpisodes, 50_000, 60, (i) => i === 50_000);
    const create = {
      userId: USER,
      id: uuid(1, "a0000000"),
      feedGuid: FEED,
      mediaUrl: url(100, 0, "cdn.example.com"),
      itemGuid: null,
      itemGuidSent: 0,
      position: null,
      duration: null,
      durationSent: 0,
      played: null,
      changedAt: null,
    };
    requests["episode create at the quota purging the newest tombstone (49 999 renumbered)"] = median(3, () =>
      time(churnEpisodes, [
        rendered(episodeStatements.storedRows, { userId: USER, ids: JSON.stringify([create.id]) }),
        rendered(episodeStatements.upsertRoom, create),
        rendered(episodeStatements.upsert, create),
      ]),
    );
    churnEpisodes.close();

    // 3b. The gpodder episode GET since 0 at the quota: 50 000 live states of 10 000 feeds, with 2 KB URLs for
    //     the feeds (the budget allows 4 096 of those) and 100-byte media URLs; read in pages as the app reads them
    //     (src/db/text-pages.ts: up to 12 500 rows, cut at 3 MiB of text).
    const gpodderFull = freshDatabase(dir, "gpodder-episodes");
    seedSubscriptions(gpodderFull, 4096, 2048, () => false);
    seedEpisodes(
      gpodderFull,
      50_000,
      100,
      () => false,
      (i) => uuid((i % 4096) + 1),
    );
    const pageTimes = () =>
      textPageTimes(
        gpodderFull,
        gpodderStatements.episodeChangesPage,
        (after, limit) => ({ userId: USER, since: 0, after, limit }),
        GPODDER_EPISODE_PAGES,
      );
    // One sweep of every page per run; the median run's pages sorted: the median page, and the slowest.
    const sweeps = Array.from({ length: 3 }, pageTimes).sort(
      (a, b) => a.reduce((x, y) => x + y, 0) - b.reduce((x, y) => x + y, 0),
    );
    const sweep = [...sweeps[1]].sort((a, b) => a - b);
    requests["gpodder episode GET since 0 at 50 000 states, a page (median page)"] =
      sweep[Math.floor(sweep.length / 2)];
    requests["gpodder episode GET since 0 at 50 000 states, a page (the slowest)"] = sweep[sweep.length - 1];
    requests["gpodder episode GET since 0 at 50 000 states, every page (sum of the D1 calls)"] =
      Math.round(sweep.reduce((a, b) => a + b, 0) * 100) / 100;
    gpodderFull.close();

    // 4. The worst footprint: every row the quotas allow (10 000 subscriptions, 50 000 episode states) sharing the
    //    8 MiB of URL text (139 bytes each), and what erasing it and one retention run cost.
    const full = freshDatabase(dir, "full");
    const emptyFull = fileBytes(full);
    seedSubscriptions(full, 10_000, 139, (i) => i % 10 === 0);
    seedEpisodes(full, 50_000, 139, (i) => i % 10 === 0);
    const fullBytes = fileBytes(full) - emptyFull;
    const fullUrlBytes = stat(full, "url_bytes");
    requests["DELETE /v1/account of that account (60 000 rows)"] = median(3, () =>
      time(
        full,
        Object.values(accountStatements).map((erase) => rendered(erase, { userId: USER })),
      ),
    );
    full.exec("UPDATE subscriptions SET unsubscribed_at = 1 WHERE unsubscribed_at IS NOT NULL");
    const expired = rendered(retentionStatementsByName.expired0, { cutoff: 2, skip: "[]" });
    const found = full.prepare(expired.sql).all(...expired.params) as { user_id: string; horizon: number }[];
    requests[`retention run, one database (${TOMBSTONES_PER_RUN} tombstones, 500 renumbered)`] = median(3, () =>
      time(full, [
        rendered(retentionStatementsByName.expired0, { cutoff: 2, skip: "[]" }),
        ...found.flatMap((user) => [
          rendered(retentionStatementsByName.renumber0, { userId: user.user_id, horizon: user.horizon, limit: 500 }),
          rendered(retentionStatementsByName.raise0, { userId: user.user_id, horizon: user.horizon }),
        ]),
      ]),
    );
    full.close();

    // 5. Bytes on disk per URL byte by URL length, for feedUrls (subscriptions) and mediaUrls (episode states): a
    //    WITHOUT ROWID cell keeps at most ~1 002 bytes on its 4 KiB page, so rows keep a head of their URL and
    //    url_pieces the rest (drizzle/0007). Each length on a fresh database, as many rows as the budget allows
    //    (at most 4 096). The sweep covers every 16th length from 500 to 2 048 bytes and the cut points.
    const perUrlByte = (table: "subscriptions" | "episodes", bytes: number) => {
      const sweep = freshDatabase(dir, `sweep-${table}-${bytes}`);
      const before = fileBytes(sweep);
      const rows = Math.min(4096, Math.floor(MAX_URL_BYTES / bytes));
      if (table === "subscriptions") seedSubscriptions(sweep, rows, bytes, () => false);
      else seedEpisodes(sweep, rows, bytes, () => false);
      const ratio = (fileBytes(sweep) - before) / stat(sweep, "url_bytes");
      sweep.close();
      return Math.round(ratio * 100) / 100;
    };
    const byLength: Record<string, Record<number, number>> = { feedUrl: {}, mediaUrl: {} };
    const worstFrom500: Record<string, { bytes: number; perUrlByte: number }> = {};
    for (const [name, table] of [
      ["feedUrl", "subscriptions"],
      ["mediaUrl", "episodes"],
    ] as const) {
      const lengths = new Set([60, 200, 500, 597, 600, 601, 797, 800, 801, 900, 1000, 1100, 1500, 1650, 1651, 2048]);
      for (let bytes = 500; bytes <= 2048; bytes += 16) lengths.add(bytes);
      let worst = { bytes: 0, perUrlByte: 0 };
      for (const bytes of [...lengths].sort((a, b) => a - b)) {
        const ratio = perUrlByte(table, bytes);
        byLength[name][bytes] = ratio;
        if (bytes >= 500 && ratio > worst.perUrlByte) worst = { bytes, perUrlByte: ratio };
      }
      worstFrom500[name] = worst;
    }

    return {
      bytesPerUrlByteByLength: byLength,
      worstBytesPerUrlByteFrom500: worstFrom500,
      budget: {
        account: "4 096 live subscriptions of 2 048-byte feedUrls (the 8 MiB budget)",
        urlBytes,
        bytesOnDisk: budgetBytes,
        bytesPerUrlByte: Math.round((budgetBytes / urlBytes) * 100) / 100,
        maxUrlBytes: MAX_URL_BYTES,
      },
      fullAccount: {
        account: "10 000 subscriptions and 50 000 episode states (10 % tombstones), 139-byte URLs",
        urlBytes: fullUrlBytes,
        bytesOnDisk: fullBytes,
        bytesPerUrlByte: Math.round((fullBytes / fullUrlBytes) * 100) / 100,
      },
      sqlMs: requests,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
