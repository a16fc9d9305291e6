import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseOpml } from "../src/opml/parse";
import { podcastGuid } from "../src/podcast-guid";
import {
  as,
  type Bindings,
  countedDatabaseOf,
  databaseFor,
  failingD1,
  JSONAPI,
  newFeed,
  ORIGIN,
  seedPodcast,
  seedSubscriptions,
  send,
  subscriptionDocument,
  tokenFor,
  withinOneRateWindow,
  wrapDatabaseOf,
} from "./helpers";

const OPML_PATH = "/v1/subscriptions.opml";
const OPML_TYPE = "text/x-opml";

type ImportMeta = { imported: number; alreadySubscribed: number; skipped: { xmlUrl: string; reason: string }[] };
type ErrorDocument = { errors: { status: string; title: string; detail: string; meta?: Record<string, unknown> }[] };

/** Sends `body` to the import as `userId`, as raw bytes or text, with the given Content-Type (none when null). */
async function importOpml(
  userId: string,
  body: string | Uint8Array,
  options: { contentType?: string | null; accept?: string; bindings?: Partial<Bindings> } = {},
): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `Bearer ${await tokenFor(userId)}` };
  const contentType = options.contentType === undefined ? OPML_TYPE : options.contentType;
  if (contentType !== null) headers["Content-Type"] = contentType;
  if (options.accept !== undefined) headers.Accept = options.accept;
  return send(new Request(`${ORIGIN}${OPML_PATH}`, { method: "POST", headers, body }), options.bindings);
}

async function exportOpml(userId: string, headers: Record<string, string> = {}): Promise<Response> {
  const token = await tokenFor(userId);
  return send(new Request(`${ORIGIN}${OPML_PATH}`, { headers: { Authorization: `Bearer ${token}`, ...headers } }));
}

async function importMeta(response: Response): Promise<ImportMeta> {
  expect(response.status).toBe(200);
  expect(response.headers.get("Content-Type")).toBe(JSONAPI);
  const body = (await response.json()) as { jsonapi: unknown; meta: ImportMeta };
  expect(body.jsonapi).toEqual({ version: "1.1" });
  return body.meta;
}

async function expectError(response: Response, status: number, title?: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get("Content-Type")).toBe(JSONAPI);
  const body = (await response.json()) as ErrorDocument;
  expect(body.errors[0].status).toBe(String(status));
  if (title !== undefined) expect(body.errors[0].title).toBe(title);
  return body.errors[0];
}

/** Every stored row of the user (active and tombstones), straight from D1. */
async function storedRows(userId: string) {
  const { results } = await (await databaseFor(userId))
    .prepare(
      "SELECT guid, feed_url AS feedUrl, unsubscribed_at AS unsubscribedAt FROM subscriptions WHERE user_id = ? ORDER BY guid",
    )
    .bind(userId)
    .all<{ guid: string; feedUrl: string; unsubscribedAt: number | null }>();
  return results;
}

/** Active subscriptions of the user through the API, as {guid, feedUrl}, sorted by guid. */
async function activeFeeds(userId: string) {
  const user = await as(userId);
  const body = (await (await user.get("/v1/subscriptions?page[size]=100")).json()) as {
    data: { id: string; attributes: { feedUrl: string } }[];
  };
  return body.data
    .map((resource) => ({ guid: resource.id, feedUrl: resource.attributes.feedUrl }))
    .sort((a, b) => (a.guid < b.guid ? -1 : 1));
}

function opmlDocument(outlines: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<opml version="2.0"><head><title>t</title></head><body>${outlines}</body></opml>`;
}

const outline = (xmlUrl: string, guid?: string) =>
  `<outline type="rss" text="x" xmlUrl="${xmlUrl}"${guid === undefined ? "" : ` guid="${guid}"`}/>`;

const uniqueUser = (prefix: string) => `${prefix}-${crypto.randomUUID()}`;

describe("GET /v1/subscriptions.opml (export)", () => {
  it("answers OPML 2.0 with a head (title, RFC 822 dateCreated) and no outline for a new user", async () => {
    const response = await exportOpml(uniqueUser("export-empty"));
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe("text/x-opml; charset=utf-8");
    expect(response.headers.get("Cache-Control")).toBe("private, no-store");
    expect(response.headers.get("Content-Disposition")).toBe('attachment; filename="subscriptions.opml"');
    const text = await response.text();
    expect(text).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<opml version="2.0">/);
    expect(text).toMatch(/<head>\s*<title>[^<]+<\/title>/);
    const dateCreated = /<dateCreated>([^<]+)<\/dateCreated>/.exec(text)?.[1] as string;
    expect(dateCreated).toMatch(
      /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$/,
    );
    expect(Math.abs(Date.parse(dateCreated) - Date.now())).toBeLessThan(60_000);
    expect(text).not.toContain("<outline");
    expect(parseOpml(new TextEncoder().encode(text).buffer as ArrayBuffer)).toEqual([]);
  });

  it("lists the active subscriptions in list order, one rss outline each, XML-escaped; never tombstones", async () => {
    const userId = uniqueUser("export-list");
    const user = await as(userId);
    const tricky = { guid: crypto.randomUUID(), feedUrl: `https://a.example/feed?x=1&y=<2>&z="3"&w='4'` };
    const feeds = [newFeed(), tricky, newFeed()];
    for (const feed of feeds) await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const gone = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(gone.guid, gone.feedUrl));
    await user.delete(`/v1/subscriptions/${gone.guid}`);

    const text = await (await exportOpml(userId)).text();
    expect(text).toContain(
      `<outline type="rss" text="https://a.example/feed?x=1&amp;y=&lt;2&gt;&amp;z=&quot;3&quot;&amp;w='4'" title="https://a.example/feed?x=1&amp;y=&lt;2&gt;&amp;z=&quot;3&quot;&amp;w='4'" xmlUrl="https://a.example/feed?x=1&amp;y=&lt;2&gt;&amp;z=&quot;3&quot;&amp;w='4'" guid="${tricky.guid}"/>`,
    );
    const listed = (await (await user.get("/v1/subscriptions")).json()) as { data: { id: string }[] };
    const exported = parseOpml(new TextEncoder().encode(text).buffer as ArrayBuffer);
    expect(exported.map((feed) => feed.guid)).toEqual(listed.data.map((resource) => resource.id));
    expect(new Set(exported.map((feed) => feed.xmlUrl))).toEqual(new Set(feeds.map((feed) => feed.feedUrl)));
    expect(exported.map((feed) => feed.guid)).not.toContain(gone.guid);
  });

  it("names each feed by its podcast's title when known (text and title), else by its URL; htmlUrl = siteUrl (docs/API.md §18)", async () => {
    const userId = uniqueUser("export-titles");
    const user = await as(userId);
    const [titled, pending, gone, hostile] = [newFeed(), newFeed(), newFeed(), newFeed()];
    for (const feed of [titled, pending, gone, hostile]) {
      await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    }
    await seedPodcast(userId, titled.feedUrl, { title: "Tech & Talk", siteUrl: "https://techtalk.example/?a=1&b=2" });
    await seedPodcast(userId, gone.feedUrl, { status: "gone", title: "Gone Show" });
    await seedPodcast(userId, hostile.feedUrl, {
      title: '<script>alert(1)</script>"\u0001',
      siteUrl: "javascript:alert(1)",
    });

    const text = await (await exportOpml(userId)).text();
    expect(text).toContain(
      `<outline type="rss" text="Tech &amp; Talk" title="Tech &amp; Talk" xmlUrl="${titled.feedUrl}" htmlUrl="https://techtalk.example/?a=1&amp;b=2" guid="${titled.guid}"/>`,
    );
    expect(text).toContain(
      `<outline type="rss" text="${pending.feedUrl}" title="${pending.feedUrl}" xmlUrl="${pending.feedUrl}" guid="${pending.guid}"/>`,
    );
    expect(text).toContain(`text="Gone Show" title="Gone Show" xmlUrl="${gone.feedUrl}" guid="${gone.guid}"`);
    // Stored text is escaped whatever it holds; a URL that is no http(s) URL is never an htmlUrl.
    expect(text).toContain(
      `text="&lt;script&gt;alert(1)&lt;/script&gt;&quot;" title="&lt;script&gt;alert(1)&lt;/script&gt;&quot;" xmlUrl="${hostile.feedUrl}" guid="${hostile.guid}"`,
    );
    expect(text).not.toContain("<script");
    expect(text).not.toContain("javascript:");
    // Still a well-formed OPML document with every feed, in list order.
    const exported = parseOpml(new TextEncoder().encode(text).buffer as ArrayBuffer);
    expect(exported.map((feed) => feed.guid)).toEqual([titled.guid, pending.guid, gone.guid, hostile.guid]);
  });

  it("answers with one D1 call", async () => {
    const userId = uniqueUser("export-calls");
    const counter = await countedDatabaseOf(userId);
    const token = await tokenFor(userId);
    const response = await send(
      new Request(`${ORIGIN}${OPML_PATH}`, { headers: { Authorization: `Bearer ${token}` } }),
      counter.bindings,
    );
    expect(response.status).toBe(200);
    expect(counter.calls()).toBe(1);
  });

  it.each([
    undefined,
    "*/*",
    "text/*",
    "text/x-opml",
    "application/xml",
    "text/xml",
    "text/xml; charset=utf-8",
    "application/json, text/x-opml;q=0.5",
  ])("serves Accept %s", async (accept) => {
    const response = await exportOpml(uniqueUser("export-accept"), accept === undefined ? {} : { Accept: accept });
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe("text/x-opml; charset=utf-8");
    expect(response.headers.get("Vary")).toContain("Accept");
  });

  it.each(["application/json", JSONAPI, "text/html", "application/*", "application/rss+xml", "text/x-opml;q=0"])(
    "answers 406 as a JSON:API error for Accept %s",
    async (accept) => {
      await expectError(await exportOpml(uniqueUser("export-406"), { Accept: accept }), 406, "Not acceptable");
    },
  );

  it("refuses query parameters JSON:API reserves (400 source.parameter) and ignores others", async () => {
    const userId = uniqueUser("export-query");
    const token = await tokenFor(userId);
    const get = (query: string) =>
      send(new Request(`${ORIGIN}${OPML_PATH}?${query}`, { headers: { Authorization: `Bearer ${token}` } }));
    for (const [query, parameter] of [
      ["include=feeds", "include"],
      ["sort=feedUrl", "sort"],
      ["page[size]=10", "page[size]"],
      ["filter[since]=0", "filter[since]"],
    ]) {
      const response = await get(query);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { errors: { source: unknown }[] }).errors[0].source).toEqual({ parameter });
    }
    expect((await get("appVersion=3")).status).toBe(200);
  });

  it("needs authentication like every /v1 route", async () => {
    const response = await send(new Request(`${ORIGIN}${OPML_PATH}`));
    await expectError(response, 401);
    expect(response.headers.get("WWW-Authenticate")).toContain("Bearer");
  });
});

describe("routing of /v1/subscriptions.opml", () => {
  it("is not taken for a subscription guid, and other methods answer 405 with Allow", async () => {
    const userId = uniqueUser("routing");
    const token = await tokenFor(userId);
    const request = (method: string) =>
      send(new Request(`${ORIGIN}${OPML_PATH}`, { method, headers: { Authorization: `Bearer ${token}` } }));
    const get = await request("GET");
    expect(get.status).toBe(200);
    expect(get.headers.get("Content-Type")).toBe("text/x-opml; charset=utf-8");
    for (const method of ["PUT", "DELETE", "PATCH"]) {
      const response = await request(method);
      await expectError(response, 405, "Method not allowed");
      expect(response.headers.get("Allow")?.split(", ").sort()).toEqual(["GET", "HEAD", "POST"]);
    }
  });
});

describe("POST /v1/subscriptions.opml (import)", () => {
  it("round trip: export, then import into a fresh user, gives the same subscriptions (ids and URLs)", async () => {
    const source = uniqueUser("round-trip-from");
    const user = await as(source);
    // A guid unrelated to its URL (the guid is the podcast's identity, never recomputed), and a derived one.
    const feeds = [newFeed(), newFeed(), { guid: "", feedUrl: "https://podnews.net/rss" }];
    feeds[2].guid = await podcastGuid(feeds[2].feedUrl);
    for (const feed of feeds) await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const exported = await (await exportOpml(source)).text();

    const target = uniqueUser("round-trip-to");
    const meta = await importMeta(await importOpml(target, exported));
    expect(meta).toEqual({ imported: 3, alreadySubscribed: 0, skipped: [] });
    expect(await activeFeeds(target)).toEqual(await activeFeeds(source));

    // Importing again changes nothing: merge, idempotent.
    expect(await importMeta(await importOpml(target, exported))).toEqual({
      imported: 0,
      alreadySubscribed: 3,
      skipped: [],
    });
    expect(await activeFeeds(target)).toEqual(await activeFeeds(source));
  });

  it("imports real-world shapes: nested categories, no type, any attribute order, single quotes, CDATA, BOM, CRLF", async () => {
    const userId = uniqueUser("real-world");
    const upper = crypto.randomUUID().toUpperCase();
    const opml = [
      '<?xml version="1.0" encoding="utf-8"?>',
      "<!-- exported by some podcast app -->",
      "<opml version='1.0'>",
      "  <head><title>My feeds</title><dateCreated>Tue, 02 Jan 2024 10:00:00 GMT</dateCreated><ownerName>Ann</ownerName></head>",
      "  <body>",
      '    <outline text="News" title="News">',
      '      <outline text="World"><outline xmlUrl="https://news.example/world.xml" text="World" type="rss"/></outline>',
      "      <outline type='rss' text='Tech &amp; Co' xmlUrl='https://tech.example/feed?a=1&amp;b=2' htmlUrl='https://tech.example'/>",
      "    </outline>",
      `    <outline xmlUrl="https://guid.example/feed" guid="${upper}" text="Has a guid"/>`,
      '    <outline guid="not-a-uuid" text="Bad guid" xmlUrl="https://badguid.example/feed/"/>',
      '    <outline text="With text"><![CDATA[ some <b>notes</b> ]]></outline>',
      '    <outline title="No type" xmlUrl="https://notype.example/rss"></outline>',
      "  </body>",
      "</opml>",
    ].join("\r\n");
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(opml)]);

    const meta = await importMeta(await importOpml(userId, bytes));
    expect(meta).toEqual({ imported: 5, alreadySubscribed: 0, skipped: [] });
    const expected = [
      { guid: await podcastGuid("https://news.example/world.xml"), feedUrl: "https://news.example/world.xml" },
      { guid: await podcastGuid("https://tech.example/feed?a=1&b=2"), feedUrl: "https://tech.example/feed?a=1&b=2" },
      { guid: upper.toLowerCase(), feedUrl: "https://guid.example/feed" },
      { guid: await podcastGuid("https://badguid.example/feed"), feedUrl: "https://badguid.example/feed/" },
      { guid: await podcastGuid("https://notype.example/rss"), feedUrl: "https://notype.example/rss" },
    ].sort((a, b) => (a.guid < b.guid ? -1 : 1));
    expect(await activeFeeds(userId)).toEqual(expected);
  });

  it("counts imported, already subscribed (before or earlier in the file) and skipped, with reasons in file order", async () => {
    const userId = uniqueUser("counts");
    const existing = newFeed();
    await (await as(userId)).post("/v1/subscriptions", subscriptionDocument(existing.guid, existing.feedUrl));
    const fresh = newFeed();
    const long = `https://long.example/${"a".repeat(2048)}`;
    const opml = opmlDocument(
      [
        outline(fresh.feedUrl, fresh.guid),
        outline("ftp://files.example/feed.xml"),
        outline(existing.feedUrl, existing.guid),
        outline("https://other-url.example/same-guid", fresh.guid),
        outline(""),
        outline("/relative/feed.xml"),
        outline(long),
        outline("https://derived.example/feed"),
        outline("https://derived.example/feed/"),
      ].join(""),
    );
    const meta = await importMeta(await importOpml(userId, opml));
    expect(meta.imported).toBe(2);
    expect(meta.alreadySubscribed).toBe(3);
    expect(meta.skipped.map((skipped) => skipped.xmlUrl)).toEqual([
      "ftp://files.example/feed.xml",
      "",
      "/relative/feed.xml",
      long,
    ]);
    for (const { reason } of meta.skipped) expect(reason).toMatch(/feedUrl must be an absolute http or https URL/);
    const rows = await storedRows(userId);
    expect(rows).toHaveLength(3);
    // The second outline naming fresh.guid did not overwrite the first: merge, never rewrite.
    expect(rows.find((row) => row.guid === fresh.guid)?.feedUrl).toBe(fresh.feedUrl);
  });

  it("revives an unsubscribed feed (counted as imported)", async () => {
    const userId = uniqueUser("revive");
    const user = await as(userId);
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    await user.delete(`/v1/subscriptions/${feed.guid}`);
    const meta = await importMeta(await importOpml(userId, opmlDocument(outline(feed.feedUrl, feed.guid))));
    expect(meta).toEqual({ imported: 1, alreadySubscribed: 0, skipped: [] });
    expect((await user.get(`/v1/subscriptions/${feed.guid}`)).status).toBe(200);
  });

  it("stops adding at the quota of 10000 stored subscriptions and lists the rest in skipped, in file order", async () => {
    const userId = uniqueUser("quota");
    // Live rows fill the quota: tombstones would be purged to make room (test/storage.test.ts).
    await seedSubscriptions(userId, 10_000 - 2);
    const feeds = Array.from({ length: 4 }, () => newFeed());
    const opml = opmlDocument(
      [
        outline(feeds[0].feedUrl, feeds[0].guid),
        outline("ftp://invalid.example/feed"),
        outline(feeds[1].feedUrl, feeds[1].guid),
        outline(feeds[2].feedUrl, feeds[2].guid),
        outline(feeds[3].feedUrl, feeds[3].guid),
      ].join(""),
    );
    const meta = await importMeta(await importOpml(userId, opml));
    expect(meta.imported).toBe(2);
    expect(meta.alreadySubscribed).toBe(0);
    expect(meta.skipped.map((skipped) => skipped.xmlUrl)).toEqual([
      "ftp://invalid.example/feed",
      feeds[2].feedUrl,
      feeds[3].feedUrl,
    ]);
    expect(meta.skipped[1].reason).toMatch(/at most 10000 subscriptions/);
    expect(await storedRows(userId)).toHaveLength(10_000);
  });

  it("imports 1000 feeds in one D1 call; a file without feeds makes none", async () => {
    const userId = uniqueUser("thousand");
    const counter = await countedDatabaseOf(userId);
    const feeds = Array.from({ length: 1000 }, () => newFeed());
    const opml = opmlDocument(feeds.map((feed) => outline(feed.feedUrl, feed.guid)).join("\n"));
    const meta = await importMeta(await importOpml(userId, opml, { bindings: counter.bindings }));
    expect(meta).toEqual({ imported: 1000, alreadySubscribed: 0, skipped: [] });
    expect(counter.calls()).toBe(1);
    expect(await storedRows(userId)).toHaveLength(1000);

    counter.reset();
    const empty = await importOpml(userId, opmlDocument('<outline text="only a folder"/>'), {
      bindings: counter.bindings,
    });
    expect(await importMeta(empty)).toEqual({ imported: 0, alreadySubscribed: 0, skipped: [] });
    expect(counter.calls()).toBe(0);
  });

  it("answers 503 when D1 fails, having written nothing; the same import then succeeds", async () => {
    const userId = uniqueUser("import-503");
    const opml = opmlDocument([newFeed(), newFeed()].map((feed) => outline(feed.feedUrl, feed.guid)).join(""));
    const failed = await importOpml(userId, opml, {
      bindings: await wrapDatabaseOf(userId, (real) => failingD1(real, 1)),
    });
    await expectError(failed, 503, "Service unavailable");
    expect(failed.headers.get("Retry-After")).toBe("1");
    expect(await storedRows(userId)).toEqual([]);
    expect(await importMeta(await importOpml(userId, opml))).toEqual({
      imported: 2,
      alreadySubscribed: 0,
      skipped: [],
    });
  });

  it("answers JSON:API: Accept as on every JSON:API endpoint", async () => {
    const opml = opmlDocument(outline(newFeed().feedUrl));
    expect((await importOpml(uniqueUser("import-accept"), opml, { accept: JSONAPI })).status).toBe(200);
    expect((await importOpml(uniqueUser("import-accept"), opml, { accept: "*/*" })).status).toBe(200);
    await expectError(
      await importOpml(uniqueUser("import-accept"), opml, { accept: `${JSONAPI}; charset=utf-8` }),
      406,
      "Not acceptable",
    );
  });

  it("checks in the /v1 order: Content-Type (415), then Accept (406), then body size (413), then the document", async () => {
    const userId = uniqueUser("order");
    const badAccept = `${JSONAPI}; charset=utf-8`;
    const huge = opmlDocument(`<!--${"x".repeat(1024 * 1024)}-->`);
    await expectError(await importOpml(userId, "<rss/>", { contentType: "text/plain", accept: badAccept }), 415);
    await expectError(await importOpml(userId, huge, { accept: badAccept }), 406);
    await expectError(await importOpml(userId, `<!DOCTYPE x>${huge}`), 413);
  });

  it("is rate limited per user like every /v1 route (429 with Retry-After), for export and import", async () => {
    await withinOneRateWindow();
    const tight = { USER_RATE_LIMITER: env.TIGHT_USER_RATE_LIMITER };
    const userId = uniqueUser("opml-limit");
    const token = await tokenFor(userId);
    const opml = opmlDocument(outline(newFeed().feedUrl));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const exported = await send(
        new Request(`${ORIGIN}${OPML_PATH}`, { headers: { Authorization: `Bearer ${token}` } }),
        tight,
      );
      statuses.push(exported.status);
      statuses.push((await importOpml(userId, opml, { bindings: tight })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const limited = await importOpml(userId, opml, { bindings: tight });
    await expectError(limited, 429);
    expect(limited.headers.get("Retry-After")).toMatch(/^\d+$/);
  });

  it("charges an import as the bulk requests of 100 writing its feeds would be (docs/storage.md)", async () => {
    await withinOneRateWindow();
    const tight = { USER_RATE_LIMITER: env.TIGHT_USER_RATE_LIMITER }; // 5 requests per 60 s
    const large = uniqueUser("opml-charged");
    const feeds = Array.from({ length: 401 }, () => outline(newFeed().feedUrl)).join("");
    expect((await importMeta(await importOpml(large, opmlDocument(feeds), { bindings: tight }))).imported).toBe(401);
    // 1 for the request and 4 more for 401 feeds (5 bulks of 100): the limit of 5 is spent.
    await expectError(await importOpml(large, opmlDocument(""), { bindings: tight }), 429);

    const small = uniqueUser("opml-uncharged");
    const hundred = Array.from({ length: 100 }, () => outline(newFeed().feedUrl)).join("");
    expect((await importOpml(small, opmlDocument(hundred), { bindings: tight })).status).toBe(200);
    for (let i = 0; i < 4; i++)
      expect((await importOpml(small, opmlDocument(""), { bindings: tight })).status).toBe(200);
  });

  it("needs authentication before anything else (401 before 415)", async () => {
    const response = await send(
      new Request(`${ORIGIN}${OPML_PATH}`, { method: "POST", headers: { "Content-Type": "text/plain" }, body: "x" }),
    );
    await expectError(response, 401);
  });
});

describe("POST /v1/subscriptions.opml refuses, writing nothing and calling D1 never", () => {
  const feed = { guid: "0e6f1c2a-1111-4222-8333-944445555666", feedUrl: "https://feeds.example.com/show.xml" };
  const valid = opmlDocument(outline(feed.feedUrl, feed.guid));

  /** Sends the import through a counting D1 and checks that nothing reached the database. */
  async function refused(
    body: string | Uint8Array,
    status: number,
    title: string,
    options: { contentType?: string | null } = {},
  ) {
    const userId = uniqueUser("refused");
    const counter = await countedDatabaseOf(userId);
    const error = await expectError(
      await importOpml(userId, body, { ...options, bindings: counter.bindings }),
      status,
      title,
    );
    expect(counter.calls()).toBe(0);
    expect(await storedRows(userId)).toEqual([]);
    return error;
  }

  it.each([["application/json"], [JSONAPI], ["text/plain"], ["text/html"], ["text/xml; charset=iso-8859-1"]])(
    "Content-Type %s: 415",
    async (contentType) => {
      await refused(valid, 415, "Unsupported media type", { contentType });
    },
  );

  it("no Content-Type: 415", async () => {
    await refused(valid, 415, "Unsupported media type", { contentType: null });
  });

  it.each(["text/x-opml", "application/xml", "text/xml", "application/opml+xml", "text/xml; charset=UTF-8"])(
    "takes Content-Type %s",
    async (contentType) => {
      const response = await importOpml(uniqueUser("content-type"), valid, { contentType });
      expect((await importMeta(response)).imported).toBe(1);
    },
  );

  it.each([
    ["unclosed element", opmlDocument('<outline xmlUrl="https://a.example/f">')],
    ["mismatched tags", '<opml><body><outline xmlUrl="https://a.example/f"></body></opml>'],
    ["unquoted attribute", "<opml><body><outline xmlUrl=https://a.example/f/></body></opml>"],
    ["undefined entity", opmlDocument('<outline text="&nbsp;" xmlUrl="https://a.example/f"/>')],
    ["entity declaration outside a DOCTYPE", `<opml><!ENTITY x "y"><body/></opml>`],
    ["text after the root", `${valid}<opml/>`],
    ["empty body", ""],
    ["not XML", "https://a.example/f"],
  ])("not well-formed (%s): 400 Invalid OPML", async (_, body) => {
    await refused(body, 400, "Invalid OPML");
  });

  it.each([
    ["rss", '<rss version="2.0"><channel><title>x</title></channel></rss>'],
    ["html", "<html><body><outline xmlUrl='https://a.example/f'/></body></html>"],
    ["OPML in upper case", "<OPML><body><outline xmlUrl='https://a.example/f'/></body></OPML>"],
  ])("no <opml> root (%s): 400 Invalid OPML", async (_, body) => {
    const error = await refused(body, 400, "Invalid OPML");
    expect(error.detail).toMatch(/root element/);
  });

  it.each(["ISO-8859-1", "UTF-16", "windows-1252", "US-ASCII"])(
    "an XML declaration naming %s: 400",
    async (encoding) => {
      const body = valid.replace('encoding="UTF-8"', `encoding="${encoding}"`);
      const error = await refused(body, 400, "Unsupported encoding");
      expect(error.detail).toContain(encoding);
    },
  );

  it("invalid UTF-8 bytes: 400, never stored with replacement characters", async () => {
    const head = new TextEncoder().encode(opmlDocument('<outline xmlUrl="https://a.example/caf'));
    const tail = new TextEncoder().encode('"/>');
    // 0xE9 is "é" in Latin-1, an invalid byte sequence in UTF-8.
    await refused(new Uint8Array([...head, 0xe9, ...tail]), 400, "Malformed request body");
  });

  it('a file in another encoding: 400 naming the encoding to convert from, not just "not UTF-8"', async () => {
    // A Latin-1 file as older exporters write it: declared, with a byte that is invalid UTF-8.
    const latin1 = [
      ...new TextEncoder().encode(
        `<?xml version="1.0" encoding="ISO-8859-1"?><opml version="2.0"><body><outline xmlUrl="https://a.example/caf`,
      ),
      0xe9,
      ...new TextEncoder().encode('"/></body></opml>'),
    ];
    const declared = await refused(new Uint8Array(latin1), 400, "Unsupported encoding");
    expect(declared.detail).toMatch(/convert the file from ISO-8859-1 to UTF-8/);
    // UTF-16, with its byte-order mark or without (then the first bytes tell).
    const utf16 = (text: string, littleEndian: boolean) =>
      new Uint8Array([...text].flatMap((c) => (littleEndian ? [c.charCodeAt(0), 0] : [0, c.charCodeAt(0)])));
    for (const [bytes, encoding] of [
      [new Uint8Array([0xff, 0xfe, ...utf16("<opml/>", true)]), "UTF-16"],
      [new Uint8Array([0xfe, 0xff, ...utf16("<opml/>", false)]), "UTF-16"],
      [utf16('<?xml version="1.0"?><opml/>', true), "UTF-16LE"],
      [utf16('<?xml version="1.0"?><opml/>', false), "UTF-16BE"],
    ] as const) {
      const error = await refused(bytes, 400, "Unsupported encoding");
      expect(error.detail).toContain(`convert the file from ${encoding} to UTF-8`);
    }
  });

  it("reads url= when an outline has no xmlUrl (xmlUrl wins when both), trims ASCII whitespace, and reports skipped values as in the file", async () => {
    const userId = uniqueUser("url-attribute");
    const byUrl = newFeed();
    const both = newFeed();
    const padded = newFeed();
    const opml = opmlDocument(
      [
        `<outline text="old exporter" url="${byUrl.feedUrl}"/>`,
        `<outline text="both" url="https://ignored.example/feed" xmlUrl="${both.feedUrl}"/>`,
        `<outline text="padded" xmlUrl=" 	${padded.feedUrl}&#10;&#13; "/>`,
        `<outline text="bad url" url="ftp://old.example/feed"/>`,
        // U+00A0 (no-break space) is not surrounding whitespace here: the URL keeps it and is refused.
        `<outline text="nbsp" xmlUrl=" https://nbsp.example/feed"/>`,
      ].join(""),
    );
    const meta = await importMeta(await importOpml(userId, opml));
    expect(meta.imported).toBe(3);
    expect(meta.skipped.map((skipped) => skipped.xmlUrl)).toEqual([
      "ftp://old.example/feed",
      " https://nbsp.example/feed",
    ]);
    const stored = await activeFeeds(userId);
    expect(new Set(stored.map((feed) => feed.feedUrl))).toEqual(new Set([byUrl.feedUrl, both.feedUrl, padded.feedUrl]));
    // Without a guid attribute, the guid is the podcast:guid of the trimmed URL.
    expect(stored.find((feed) => feed.feedUrl === padded.feedUrl)?.guid).toBe(await podcastGuid(padded.feedUrl));
  });

  it("reports a URL the quota refused as in the file, untrimmed", async () => {
    const userId = uniqueUser("quota-padded");
    // Active ones: the quota holds whatever becomes of tombstones.
    await seedSubscriptions(userId, 10_000);
    const feed = newFeed();
    const meta = await importMeta(await importOpml(userId, opmlDocument(`<outline url="  ${feed.feedUrl} "/>`)));
    expect(meta.skipped).toEqual([{ xmlUrl: `  ${feed.feedUrl} `, reason: expect.stringMatching(/at most 10000/) }]);
  });

  it("a body over 1 MiB: 413", async () => {
    const padding = `<!--${"x".repeat(1024 * 1024)}-->`;
    await refused(opmlDocument(outline(feed.feedUrl) + padding), 413, "Request body too large");
  });

  it("more than 1000 outlines with an xmlUrl (valid or not): 413 with meta.maxFeeds", async () => {
    const outlines = Array.from({ length: 1000 }, () => outline(newFeed().feedUrl));
    const tooMany = [...outlines, outline("not a url")].join("");
    const error = await refused(opmlDocument(tooMany), 413, "Too many feeds");
    expect(error.meta).toEqual({ maxFeeds: 1000 });
    // url= counts as xmlUrl does.
    await refused(opmlDocument([...outlines, '<outline url="https://a.example/f"/>'].join("")), 413, "Too many feeds");
    // Outlines without an xmlUrl or url (folders) do not count.
    const folders = Array.from({ length: 50 }, () => '<outline text="folder"/>').join("");
    const meta = await importMeta(await importOpml(uniqueUser("folders"), opmlDocument(folders + outlines.join(""))));
    expect(meta.imported).toBe(1000);
  });
});

describe("POST /v1/subscriptions.opml never expands entities: a DOCTYPE is refused as such", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  const laughs = (levels: number) => {
    const entities = ['<!ENTITY lol0 "lol">'];
    for (let level = 1; level <= levels; level++) {
      entities.push(`<!ENTITY lol${level} "${`&lol${level - 1};`.repeat(10)}">`);
    }
    return `<?xml version="1.0"?>\n<!DOCTYPE opml [\n${entities.join("\n")}\n]>\n<opml version="2.0"><body><outline text="&lol${levels};" xmlUrl="https://a.example/&lol${levels};"/></body></opml>`;
  };

  async function refusedAsDoctype(body: string) {
    const userId = uniqueUser("doctype");
    const counter = await countedDatabaseOf(userId);
    const response = await importOpml(userId, body, { bindings: counter.bindings });
    const error = await expectError(response, 400, "DOCTYPE not allowed");
    expect(error.detail).toMatch(/DOCTYPE/);
    expect(counter.calls()).toBe(0);
    expect(await storedRows(userId)).toEqual([]);
  }

  it("a plain DOCTYPE (no entities at all) is refused by the same rule", async () => {
    await refusedAsDoctype(
      `<!DOCTYPE opml>${opmlDocument(outline("https://a.example/f")).replace(/^<\?xml[^>]*>\n/, "")}`,
    );
  });

  it("billion laughs (10^9 expansions) is refused by the DOCTYPE rule, exactly like a 10-expansion one", async () => {
    // Expanded, lol9 would be 3 * 10^9 characters; it is refused for having a DOCTYPE, not for its size or time.
    await refusedAsDoctype(laughs(9));
    await refusedAsDoctype(laughs(1));
  });

  it.each([
    ["file", "file:///etc/passwd"],
    ["http", "http://169.254.169.254/latest/meta-data/"],
  ])("an external entity (%s) is refused by the DOCTYPE rule and never fetched", async (_, systemId) => {
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    const body = `<?xml version="1.0"?>\n<!DOCTYPE opml [<!ENTITY xxe SYSTEM "${systemId}">]>\n<opml><body><outline text="&xxe;" xmlUrl="https://a.example/f"/></body></opml>`;
    await refusedAsDoctype(body);
    expect(fetchSpy).not.toHaveBeenCalled();
  });

  it("an external DTD (public identifier) is refused by the DOCTYPE rule", async () => {
    await refusedAsDoctype(
      `<!DOCTYPE opml PUBLIC "-//Example//DTD OPML//EN" "http://example.com/opml.dtd"><opml><body/></opml>`,
    );
  });
});
