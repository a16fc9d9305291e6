import { describe, expect, it } from "vitest";
import { EXPORT_PAGES, OPML_EXPORT_PAGE_ROWS } from "../src/db/opml";
import { MAX_STORED_SUBSCRIPTIONS } from "../src/db/subscriptions";
import { MAX_FEED_URL_BYTES } from "../src/resources/subscription";
import { as, logStreamMeasure, meteredDatabaseOf, ORIGIN, readChunks, seedSubscriptions, send } from "./helpers";

// docs/API.md §15: the OPML export streams. What it holds at once is one page of rows and its text, whatever
// the account holds: here the worst account, at the quota, every URL 2 KB of characters XML must escape.

/** A 2048-byte URL that is all `&<>"` after its prefix: 4.75 bytes of XML per byte of URL. */
function hostileUrl(index: number): string {
  const prefix = `https://escape.example/${index}?`;
  return prefix + '&<>"'.repeat(MAX_FEED_URL_BYTES).slice(0, MAX_FEED_URL_BYTES - prefix.length);
}

const escaped = (url: string) =>
  url.replace(/[&<>"]/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[ch] as string);

describe('OPML export at the quota with 2 KB URLs full of &<>"', () => {
  it("streams page by page: the most bytes held at once is one page's text, each D1 call short", {
    timeout: 300_000,
  }, async () => {
    const userId = `opml-memory-${crypto.randomUUID()}`;
    await seedSubscriptions(userId, MAX_STORED_SUBSCRIPTIONS, { feedUrl: (_guid, index) => hostileUrl(index) });
    expect(hostileUrl(9999)).toHaveLength(MAX_FEED_URL_BYTES);

    const meter = await meteredDatabaseOf(userId);
    const token = (await as(userId)).token;
    const response = await send(
      new Request(`${ORIGIN}/v1/subscriptions.opml`, { headers: { Authorization: `Bearer ${token}` } }),
      meter.bindings,
    );
    expect(response.status).toBe(200);
    // The first page was read before the response started; the rest are read as the body is.
    expect(meter.totals.statements).toHaveLength(1);

    let outlines = 0;
    let tail = "";
    let firstOutline = "";
    const { chunks, totalBytes, largestChunk } = await readChunks(response, (text) => {
      outlines += text.split("<outline ").length - 1;
      if (!firstOutline) firstOutline = /<outline [^\n]*\/>/.exec(text)?.[0] ?? "";
      tail = text.slice(-40);
    });
    expect(outlines).toBe(MAX_STORED_SUBSCRIPTIONS);
    expect(tail.endsWith("</body>\n</opml>\n")).toBe(true);
    expect(firstOutline).toContain(`xmlUrl="${escaped(hostileUrl(0))}"`);

    // Each outline names its URL three times: `text` and `title` (the podcast's title when known, else the URL:
    // docs/API.md §11, §18) and `xmlUrl`.
    const outlineBytes = 3 * escaped(hostileUrl(0)).length + 100;
    logStreamMeasure(
      "opml_export_measure",
      { subscriptions: MAX_STORED_SUBSCRIPTIONS },
      { chunks, totalBytes, largestChunk },
      meter.totals,
    );
    // The whole document is ~300 MB; what is held at once is one page: under 4.5 MB.
    expect(totalBytes).toBeGreaterThan(MAX_STORED_SUBSCRIPTIONS * outlineBytes * 0.9);
    expect(largestChunk).toBeLessThanOrEqual(OPML_EXPORT_PAGE_ROWS * outlineBytes);
    expect(largestChunk).toBeLessThan(4_500_000);
    // One D1 call per page, each page as many rows as 1.5 MiB of their text holds (a row of a 2 KB URL counts as its
    // URL escaped for JSON at worst, and 84 bytes more): the first walks the whole account to find where it cuts
    // (three rows read for each row walked: the walk, and the running sum's sort and frame), the next ones about
    // the rows they keep. The text is written for the kept rows only: for each 2 048-byte URL the two pieces beyond
    // its row's head (drizzle/0007: looked up by primary key, and D1 counts the rows they read).
    const rowsPerPage = Math.floor(EXPORT_PAGES.bytes / (2 * MAX_FEED_URL_BYTES + 2 + 84));
    const walks = Math.ceil(MAX_STORED_SUBSCRIPTIONS / rowsPerPage) + 1;
    expect(meter.totals.statements.length).toBeLessThanOrEqual(walks);
    expect(meter.totals.rowsRead).toBeLessThanOrEqual(
      3 * MAX_STORED_SUBSCRIPTIONS + (3 + 2) * MAX_STORED_SUBSCRIPTIONS + 3 * walks * OPML_EXPORT_PAGE_ROWS,
    );
    // Each call bounded: one walk of the account's index entries at most, and one page's URLs' pieces (rows, not
    // milliseconds: the host is shared).
    expect(Math.max(...meter.totals.rowsReadPerStatement)).toBeLessThanOrEqual(
      3 * (MAX_STORED_SUBSCRIPTIONS + 1) + 2 * rowsPerPage,
    );
  });
});
