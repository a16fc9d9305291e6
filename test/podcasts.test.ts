import { describe, expect, it } from "vitest";
import { opmlStatements } from "../src/db/opml";
import { allStatements } from "../src/db/subscriptions";
import {
  addOperation,
  as,
  type Caller,
  countedDatabaseOf,
  databaseFor,
  meteredDatabaseOf,
  newFeed,
  ORIGIN,
  podcastRelationships,
  queryPlan,
  seedPodcast,
  send,
  subscriptionDocument,
  walksOf,
} from "./helpers";

/** docs/API.md §18, what is shown: the podcast resource, its relationship, `include=podcast`, and what it leaves alone. */

type Resource = {
  type: string;
  id: string;
  attributes: Record<string, unknown>;
  relationships?: unknown;
  links?: unknown;
};
type Document = { data: Resource | Resource[]; included?: Resource[]; meta?: Record<string, unknown> };

const unique = (name: string) => `${name}-${crypto.randomUUID().slice(0, 8)}`;

const FETCHED_AT = Date.UTC(2026, 10, 30, 8, 15, 0, 123);

const pending = {
  title: null,
  author: null,
  description: null,
  imageUrl: null,
  siteUrl: null,
  language: null,
  podcastGuid: null,
  fetchedAt: null,
  status: "pending",
};

function podcastResource(guid: string, attributes: Record<string, unknown>) {
  return { type: "podcast", id: guid, attributes, links: { self: `/v1/subscriptions/${guid}/podcast` } };
}

async function subscribed(
  name: string,
  count = 1,
): Promise<{ user: Caller; feeds: { guid: string; feedUrl: string }[] }> {
  const user = await as(unique(name));
  const feeds = Array.from({ length: count }, newFeed);
  for (const feed of feeds) {
    expect((await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl))).status).toBe(201);
  }
  return { user, feeds };
}

async function documentOf(response: Response): Promise<Document> {
  expect(response.status, await response.clone().text()).toBe(200);
  return (await response.json()) as Document;
}

const known = {
  title: "Tech Talk Weekly",
  author: "Ada & Co",
  description: "News from the world of computing.",
  imageUrl: "https://cdn.example.com/art.jpg",
  siteUrl: "https://techtalk.example.com/",
  language: "en",
  podcastGuid: "917393e3-1b1e-5cef-ace4-edaa54e1f810",
  fetchedAt: FETCHED_AT,
};

describe("relationships.podcast on every subscription resource (docs/API.md §18)", () => {
  it("POST (201 and 200), get-one, list, change feed (active and tombstone), PATCH and bulk results all carry it", async () => {
    const user = await as(unique("relationships"));
    const [a, b, c] = [newFeed(), newFeed(), newFeed()];
    const created = await user.post("/v1/subscriptions", subscriptionDocument(a.guid, a.feedUrl));
    expect(created.status).toBe(201);
    expect(((await created.json()) as Document).data).toMatchObject({ relationships: podcastRelationships(a.guid) });
    const again = await documentOf(await user.post("/v1/subscriptions", subscriptionDocument(a.guid, a.feedUrl)));
    expect((again.data as Resource).relationships).toEqual(podcastRelationships(a.guid));

    const one = await documentOf(await user.get(`/v1/subscriptions/${a.guid}`));
    expect((one.data as Resource).relationships).toEqual(podcastRelationships(a.guid));

    const moved = `${a.feedUrl}?moved`;
    const patched = await documentOf(
      await user.patch(`/v1/subscriptions/${a.guid}`, subscriptionDocument(a.guid, moved)),
    );
    expect((patched.data as Resource).relationships).toEqual(podcastRelationships(a.guid));

    const bulk = await user.operations({
      "atomic:operations": [
        addOperation(b.guid, b.feedUrl),
        addOperation(c.guid, c.feedUrl),
        { op: "update", data: { type: "subscription", id: b.guid, attributes: { feedUrl: `${b.feedUrl}?2` } } },
      ],
    });
    expect(bulk.status, await bulk.clone().text()).toBe(200);
    const results = ((await bulk.json()) as { "atomic:results": { data: Resource }[] })["atomic:results"];
    expect(results.map((result) => result.data.relationships)).toEqual(
      [b.guid, c.guid, b.guid].map(podcastRelationships),
    );

    const list = await documentOf(await user.get("/v1/subscriptions"));
    expect((list.data as Resource[]).map((item) => item.relationships)).toEqual(
      [a.guid, b.guid, c.guid].map(podcastRelationships),
    );

    expect((await user.delete(`/v1/subscriptions/${c.guid}`)).status).toBe(204);
    const changes = await documentOf(await user.get("/v1/subscriptions?filter[since]=0"));
    const items = changes.data as Resource[];
    expect(items.map((item) => [item.id, item.attributes.userUnsubscribedAt === null, item.relationships])).toEqual([
      [a.guid, true, podcastRelationships(a.guid)],
      [b.guid, true, podcastRelationships(b.guid)],
      [c.guid, false, podcastRelationships(c.guid)],
    ]);
    // The tombstone still has no links; its relationship names the podcast it had.
    expect(items[2].links).toBeUndefined();
  });
});

describe("GET /v1/subscriptions/{guid}/podcast", () => {
  it("answers pending before the round has fetched the feed, then what the round wrote", async () => {
    const { user, feeds } = await subscribed("podcast-one");
    const [feed] = feeds;
    const before = await user.get(`/v1/subscriptions/${feed.guid}/podcast`);
    expect(before.headers.get("ETag")).toBeNull();
    expect(before.headers.get("Cache-Control")).toBe("private, no-cache");
    expect((await documentOf(before)).data).toEqual(podcastResource(feed.guid, pending));

    await seedPodcast(user.userId, feed.feedUrl, known);
    const after = await documentOf(await user.get(`/v1/subscriptions/${feed.guid.toUpperCase()}/podcast`));
    expect(after).toEqual({
      jsonapi: { version: "1.1" },
      data: podcastResource(feed.guid, { ...known, fetchedAt: "2026-11-30T08:15:00.123Z", status: "ok" }),
    });
  });

  it("shows failing and gone podcasts with what was known, and unknown facts as null", async () => {
    const { user, feeds } = await subscribed("podcast-status", 2);
    await seedPodcast(user.userId, feeds[0].feedUrl, { status: "failing", title: "Still Known", fetchedAt: null });
    await seedPodcast(user.userId, feeds[1].feedUrl, { status: "gone", title: "Gone Show" });
    const failing = await documentOf(await user.get(`/v1/subscriptions/${feeds[0].guid}/podcast`));
    expect(failing.data).toEqual(
      podcastResource(feeds[0].guid, { ...pending, title: "Still Known", status: "failing" }),
    );
    const gone = await documentOf(await user.get(`/v1/subscriptions/${feeds[1].guid}/podcast`));
    expect((gone.data as Resource).attributes).toMatchObject({ title: "Gone Show", status: "gone" });
  });

  it("answers as get-one does: 404 for an unknown or unsubscribed guid, 400 for a bad one, 400 for reserved parameters", async () => {
    const { user, feeds } = await subscribed("podcast-missing");
    const unknown = await user.get(`/v1/subscriptions/${crypto.randomUUID()}/podcast`);
    expect(unknown.status).toBe(404);
    const body = (await unknown.json()) as { errors: { title: string }[] };
    expect(body.errors[0].title).toBe("Subscription not found");
    expect((await user.get("/v1/subscriptions/not-a-uuid/podcast")).status).toBe(400);
    const included = await user.get(`/v1/subscriptions/${feeds[0].guid}/podcast?include=podcast`);
    expect(included.status).toBe(400);
    expect(((await included.json()) as { errors: { source: unknown }[] }).errors[0].source).toEqual({
      parameter: "include",
    });
    expect((await user.delete(`/v1/subscriptions/${feeds[0].guid}`)).status).toBe(204);
    expect((await user.get(`/v1/subscriptions/${feeds[0].guid}/podcast`)).status).toBe(404);
    // Another user's subscription is no podcast of this one.
    const other = await as(unique("podcast-other"));
    const { feeds: theirs } = await subscribed("podcast-theirs");
    expect((await other.get(`/v1/subscriptions/${theirs[0].guid}/podcast`)).status).toBe(404);
  });

  it("answers 405 with Allow for a write", async () => {
    const { user, feeds } = await subscribed("podcast-405");
    const response = await user.delete(`/v1/subscriptions/${feeds[0].guid}/podcast`);
    expect(response.status).toBe(405);
    expect(response.headers.get("Allow")).toContain("GET");
  });
});

describe("include=podcast (docs/API.md §3, §18)", () => {
  it("the list adds the page's podcasts as included, in the page's order, pending ones too", async () => {
    const { user, feeds } = await subscribed("include-list", 3);
    await seedPodcast(user.userId, feeds[1].feedUrl, known);
    const response = await user.get("/v1/subscriptions?include=podcast&page[size]=2");
    expect(response.headers.get("ETag")).toBeNull();
    const first = await documentOf(response);
    expect((first.data as Resource[]).map((item) => item.id)).toEqual([feeds[0].guid, feeds[1].guid]);
    expect(first.included).toEqual([
      podcastResource(feeds[0].guid, pending),
      podcastResource(feeds[1].guid, { ...known, fetchedAt: "2026-11-30T08:15:00.123Z", status: "ok" }),
    ]);
    expect(first.meta).toEqual({ total: 3 });
    const second = await documentOf(await user.get("/v1/subscriptions?page[number]=2&page[size]=2&include=podcast"));
    expect(second.included).toEqual([podcastResource(feeds[2].guid, pending)]);
    const past = await documentOf(await user.get("/v1/subscriptions?page[number]=9&include=podcast"));
    expect(past).toMatchObject({ data: [], included: [] });
    // Without include, no included member.
    expect((await documentOf(await user.get("/v1/subscriptions"))).included).toBeUndefined();
  });

  it("a user with nothing stored gets empty data and included", async () => {
    const user = await as(unique("include-empty"));
    expect(await documentOf(await user.get("/v1/subscriptions?include=podcast"))).toMatchObject({
      data: [],
      included: [],
    });
    expect(await documentOf(await user.get("/v1/subscriptions?filter[since]=0&include=podcast"))).toMatchObject({
      data: [],
      included: [],
    });
  });

  it("the change feed includes the podcasts of its active subscriptions only, of this page only", async () => {
    const { user, feeds } = await subscribed("include-changes", 3);
    await seedPodcast(user.userId, feeds[2].feedUrl, { title: "Third" });
    expect((await user.delete(`/v1/subscriptions/${feeds[0].guid}`)).status).toBe(204);
    // Change order: feeds[1], feeds[2], then the tombstone of feeds[0].
    const whole = await documentOf(await user.get("/v1/subscriptions?filter[since]=0&include=podcast"));
    expect((whole.data as Resource[]).map((item) => item.id)).toEqual([feeds[1].guid, feeds[2].guid, feeds[0].guid]);
    expect(whole.included?.map((podcast) => [podcast.id, podcast.attributes.title])).toEqual([
      [feeds[1].guid, null],
      [feeds[2].guid, "Third"],
    ]);
    const page = await user.get("/v1/subscriptions?filter[since]=0&page[size]=1&include=podcast");
    expect(page.headers.get("ETag")).toBeNull();
    const first = (await page.json()) as Document & { links: { next: string | null } };
    expect((first.data as Resource[]).map((item) => item.id)).toEqual([feeds[1].guid]);
    expect(first.included?.map((podcast) => podcast.id)).toEqual([feeds[1].guid]);
    expect(first.links.next).not.toBeNull();
    const tombstonePage = await documentOf(
      await user.get(`/v1/subscriptions?filter[since]=${Number(first.meta?.syncToken) + 1}&include=podcast`),
    );
    expect((tombstonePage.data as Resource[]).map((item) => item.id)).toEqual([feeds[0].guid]);
    expect(tombstonePage.included).toEqual([]);
  });

  it("get-one adds its podcast; without include it is unchanged and keeps its ETag", async () => {
    const { user, feeds } = await subscribed("include-one");
    await seedPodcast(user.userId, feeds[0].feedUrl, { title: "One Show", author: "Someone" });
    const response = await user.get(`/v1/subscriptions/${feeds[0].guid}?include=podcast`);
    expect(response.headers.get("ETag")).toBeNull();
    const document = await documentOf(response);
    expect((document.data as Resource).id).toBe(feeds[0].guid);
    expect(document.included).toEqual([
      podcastResource(feeds[0].guid, {
        ...pending,
        title: "One Show",
        author: "Someone",
        fetchedAt: expect.stringMatching(/Z$/),
        status: "ok",
      }),
    ]);
    const plain = await user.get(`/v1/subscriptions/${feeds[0].guid}`);
    expect(plain.headers.get("ETag")).not.toBeNull();
    expect(((await plain.json()) as Document).included).toBeUndefined();
    expect((await user.get(`/v1/subscriptions/${crypto.randomUUID()}?include=podcast`)).status).toBe(404);
  });

  const refused: [string, string][] = [
    ["?include=episodes", "include"],
    ["?include=podcast,podcast", "include"],
    ["?include=Podcast", "include"],
    ["?include=", "include"],
    ["?include=podcast&include=podcast", "include"],
    ["?include=podcast&sort=id", "sort"],
  ];
  for (const [search, parameter] of refused) {
    it(`refuses ${search} on the list, the change feed and get-one (400 naming ${parameter})`, async () => {
      const { user, feeds } = await subscribed("include-refused");
      const separator = search.replace("?", "&");
      for (const path of [
        `/v1/subscriptions${search}`,
        `/v1/subscriptions?filter[since]=0${separator}`,
        `/v1/subscriptions/${feeds[0].guid}${search}`,
      ]) {
        const response = await user.get(path);
        expect(response.status, path).toBe(400);
        const body = (await response.json()) as { errors: { title: string; source: unknown }[] };
        expect(body.errors[0]).toMatchObject({ title: "Unsupported query parameter", source: { parameter } });
      }
    });
  }

  it("refuses include=podcast where it is not taken: writes, OPML, episodes", async () => {
    const { user, feeds } = await subscribed("include-elsewhere");
    const other = newFeed();
    for (const response of [
      await user.post("/v1/subscriptions?include=podcast", subscriptionDocument(other.guid, other.feedUrl)),
      await user.patch(
        `/v1/subscriptions/${feeds[0].guid}?include=podcast`,
        subscriptionDocument(feeds[0].guid, other.feedUrl),
      ),
      await user.get("/v1/subscriptions.opml?include=podcast", { Accept: "text/x-opml" }),
      await user.get("/v1/episodes?include=podcast"),
    ]) {
      expect(response.status).toBe(400);
    }
    // Nothing was written.
    const list = await documentOf(await user.get("/v1/subscriptions"));
    expect((list.data as Resource[]).map((item) => item.attributes.feedUrl)).toEqual([feeds[0].feedUrl]);
  });

  it("reads the podcasts in the same D1 call: one round trip for the list, the change feed and get-one", async () => {
    const userId = unique("include-trips");
    const user = await as(userId);
    const feeds = [newFeed(), newFeed()];
    for (const feed of feeds) await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const counted = await countedDatabaseOf(userId);
    const viaCounter = await as(userId, counted.bindings);
    for (const path of [
      "/v1/subscriptions?include=podcast",
      "/v1/subscriptions?filter[since]=0&include=podcast",
      `/v1/subscriptions/${feeds[0].guid}?include=podcast`,
      `/v1/subscriptions/${feeds[0].guid}/podcast`,
    ]) {
      counted.reset();
      expect((await viaCounter.get(path)).status, path).toBe(200);
      expect(counted.calls(), path).toBe(1);
    }
  });

  it("reads at most 2 rows per subscription shown: one feed row more per subscription than without include", async () => {
    const userId = unique("include-rows");
    const user = await as(userId);
    const feeds = Array.from({ length: 10 }, newFeed);
    const bulk = await user.operations({
      "atomic:operations": feeds.map((feed) => addOperation(feed.guid, feed.feedUrl)),
    });
    expect(bulk.status).toBe(200);
    for (const feed of feeds.slice(0, 5)) await seedPodcast(userId, feed.feedUrl, { title: feed.guid });
    const meter = await meteredDatabaseOf(userId);
    const viaMeter = await as(userId, meter.bindings);
    const rowsOf = async (path: string) => {
      meter.totals.rowsRead = 0;
      const document = await documentOf(await viaMeter.get(path));
      return { rows: meter.totals.rowsRead, document };
    };
    for (const path of ["/v1/subscriptions", "/v1/subscriptions?filter[since]=0"]) {
      const plain = await rowsOf(path);
      const included = await rowsOf(`${path}${path.includes("?") ? "&" : "?"}include=podcast`);
      expect(included.document.included).toHaveLength(10);
      expect(included.rows, path).toBeLessThanOrEqual(plain.rows + 10);
      // The statement's constant few (the stats row, the page's first key) besides.
      expect(included.rows, path).toBeLessThanOrEqual(2 * 10 + 3);
    }
  });
});

describe("a podcast's changes are not the subscription's (docs/API.md §18)", () => {
  it("a feeds row update leaves the ETags, the change feed and its token unchanged", async () => {
    const { user, feeds } = await subscribed("podcast-etag", 2);
    const list = await user.get("/v1/subscriptions");
    const one = await user.get(`/v1/subscriptions/${feeds[0].guid}`);
    const changes = await documentOf(await user.get("/v1/subscriptions?filter[since]=0"));
    const token = String(changes.meta?.syncToken);

    await seedPodcast(user.userId, feeds[0].feedUrl, known);
    await seedPodcast(user.userId, feeds[1].feedUrl, { status: "gone" });

    const listAfter = await user.get("/v1/subscriptions", { "If-None-Match": list.headers.get("ETag") as string });
    expect(listAfter.status).toBe(304);
    const oneAfter = await user.get(`/v1/subscriptions/${feeds[0].guid}`);
    expect(oneAfter.headers.get("ETag")).toBe(one.headers.get("ETag"));
    const since = await documentOf(await user.get(`/v1/subscriptions?filter[since]=${token}`));
    expect(since.data).toEqual([]);
    expect(since.meta).toEqual({ syncToken: token });
    const whole = await documentOf(await user.get("/v1/subscriptions?filter[since]=0"));
    expect(whole.data).toEqual(changes.data);
    // The version the stats row carries did not move either.
    const db = await databaseFor(user.userId);
    const stats = await db.prepare("SELECT version FROM user_stats WHERE user_id = ?").bind(user.userId).first();
    expect(stats).toEqual({ version: Number(token) });
  });

  it("a compound document is never answered 304: its podcasts change without a version", async () => {
    const { user, feeds } = await subscribed("podcast-no-304");
    const plain = await user.get("/v1/subscriptions");
    const etag = plain.headers.get("ETag") as string;
    await seedPodcast(user.userId, feeds[0].feedUrl, { title: "New Title" });
    for (const path of ["/v1/subscriptions?include=podcast", `/v1/subscriptions/${feeds[0].guid}?include=podcast`]) {
      const response = await user.get(path, { "If-None-Match": "*" });
      const document = await documentOf(response);
      expect(document.included?.[0].attributes.title).toBe("New Title");
      expect((await user.get(path, { "If-None-Match": etag })).status).toBe(200);
    }
  });
});

describe("hostile stored text reaches JSON escaped", () => {
  it("markup, quotes, backslashes and a javascript: siteUrl come back exactly as stored, as JSON strings", async () => {
    const { user, feeds } = await subscribed("podcast-hostile");
    const hostile = {
      title: '<script>alert(1)</script> "quoted" \\ back',
      author: "</script><img src=x onerror=alert(1)>",
      description: "\u2028line\u2029para",
      siteUrl: "javascript:alert(1)",
    };
    await seedPodcast(user.userId, feeds[0].feedUrl, hostile);
    const response = await user.get("/v1/subscriptions?include=podcast");
    const text = await response.text();
    expect(text).not.toContain("\n");
    const document = JSON.parse(text) as Document;
    expect(document.included?.[0].attributes).toMatchObject(hostile);
    const one = await documentOf(await user.get(`/v1/subscriptions/${feeds[0].guid}/podcast`));
    expect((one.data as Resource).attributes).toMatchObject(hostile);
  });
});

describe("the reads with podcasts scan no table", () => {
  it("list, change feed, get-one and OPML export with podcasts: every feed found by its key", async () => {
    const userId = unique("podcast-plans");
    const feeds = Array.from({ length: 3 }, newFeed);
    const user = await as(userId);
    for (const feed of feeds) await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    await seedPodcast(userId, feeds[0].feedUrl, { title: "Planned" });
    const meter = await meteredDatabaseOf(userId);
    const viaMeter = await as(userId, meter.bindings);
    for (const path of [
      "/v1/subscriptions?page[number]=2&page[size]=2&include=podcast",
      "/v1/subscriptions?filter[since]=0&include=podcast",
      `/v1/subscriptions/${feeds[0].guid}?include=podcast`,
    ]) {
      expect((await viaMeter.get(path)).status).toBe(200);
    }
    const opml = await send(
      new Request(`${ORIGIN}/v1/subscriptions.opml`, { headers: { Authorization: `Bearer ${user.token}` } }),
      meter.bindings,
    );
    expect(opml.status).toBe(200);
    await opml.text();
    const distinct = new Map(meter.totals.statements.map((statement) => [statement.sql, statement]));
    const mine = {
      listWithPodcasts: allStatements.listWithPodcasts,
      changesWithPodcasts: allStatements.changesWithPodcasts,
      findOneWithPodcast: allStatements.findOneWithPodcast,
      activeFeedsWithPodcastsPage: opmlStatements.activeFeedsWithPodcastsPage,
    };
    for (const [name, statement] of Object.entries(mine)) {
      expect(distinct.has(statement.sql), `statement ${name} not exercised`).toBe(true);
      const { params } = distinct.get(statement.sql) as { params: unknown[] };
      const plan = await queryPlan(await databaseFor(userId), statement.sql, params);
      const scans = walksOf(plan, ["subscriptions", "user_stats", "feeds", "url_pieces"], ["subscriptions"]);
      expect(scans, `${name}\n${plan.join("\n")}`).toEqual([]);
      expect(plan.join("\n"), name).not.toMatch(/TEMP B-TREE/);
    }
  });
});
