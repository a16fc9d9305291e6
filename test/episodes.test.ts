import { describe, expect, it } from "vitest";
import { ATOMIC_MEDIA_TYPE, as, countedDatabaseOf, databaseFor, meteredDatabaseOf, ORIGIN } from "./helpers";

/** The feed and item of docs/API.md §13's example: UUIDv5(feed guid, "ABC-123"). */
const FEED = "9b024349-ccf0-5f69-a609-6b82873eab3c";
const OTHER_FEED = "677ea490-690e-51cb-8b43-755df6c55270";

type EpisodeResource = {
  type: string;
  id: string;
  attributes: {
    mediaUrl: string;
    itemGuid: string | null;
    position: number;
    duration: number | null;
    played: boolean;
    positionChangedAt: string | null;
    playedChangedAt: string | null;
    deletedAt?: string | null;
  };
  relationships: { subscription: { data: { type: string; id: string } } };
  links?: { self: string };
};
type ErrorDocument = {
  errors: {
    status: string;
    title: string;
    detail: string;
    source?: Record<string, string>;
    meta?: Record<string, unknown>;
  }[];
};

function episodeDocument(id: string, attributes: Record<string, unknown>, feed = FEED) {
  return {
    data: {
      type: "episode",
      id,
      attributes,
      relationships: { subscription: { data: { type: "subscription", id: feed } } },
    },
  };
}

const MEDIA = "https://cdn.example.com/episode-1.mp3";
const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds)).toISOString();

async function body<T>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

describe("POST /v1/episodes: create, then merge field by field (docs/API.md §13)", () => {
  it("creates with 201, Location and every attribute present; fields never set read their defaults", async () => {
    const user = await as("ep-create");
    const id = crypto.randomUUID();
    const response = await user.post("/v1/episodes", episodeDocument(id, { mediaUrl: MEDIA }));
    expect(response.status).toBe(201);
    expect(response.headers.get("Location")).toBe(`${ORIGIN}/v1/episodes/${id}`);
    const { data } = await body<{ data: EpisodeResource }>(response);
    expect(data).toEqual({
      type: "episode",
      id,
      attributes: {
        mediaUrl: MEDIA,
        itemGuid: null,
        position: 0,
        duration: null,
        played: false,
        positionChangedAt: null,
        playedChangedAt: null,
      },
      relationships: { subscription: { data: { type: "subscription", id: FEED } } },
      links: { self: `/v1/episodes/${id}` },
    });
    expect((await user.get(`/v1/episodes/${id}`)).status).toBe(200);
  });

  it("stores the id lowercase and finds it in any case", async () => {
    const user = await as("ep-case");
    const id = crypto.randomUUID().toUpperCase();
    const { data } = await body<{ data: EpisodeResource }>(
      await user.post("/v1/episodes", episodeDocument(id, { mediaUrl: MEDIA })),
    );
    expect(data.id).toBe(id.toLowerCase());
    expect((await user.get(`/v1/episodes/${id}`)).status).toBe(200);
  });

  it("position and played each replace the stored value only for a strictly later changedAt", async () => {
    const user = await as("ep-lww");
    const id = crypto.randomUUID();
    const write = (attributes: Record<string, unknown>) =>
      user.post("/v1/episodes", episodeDocument(id, { mediaUrl: MEDIA, ...attributes }));
    expect((await write({ position: 100, changedAt: at(10) })).status).toBe(201);
    // Equal: nothing changes (a retry); earlier: nothing changes (a late offline upload).
    let attributes = (await body<{ data: EpisodeResource }>(await write({ position: 5, changedAt: at(10) }))).data
      .attributes;
    expect(attributes.position).toBe(100);
    attributes = (await body<{ data: EpisodeResource }>(await write({ position: 5, changedAt: at(9) }))).data
      .attributes;
    expect(attributes.position).toBe(100);
    // Later: replaces, and the time becomes positionChangedAt (returned in UTC, truncated to the millisecond).
    attributes = (
      await body<{ data: EpisodeResource }>(
        await write({ position: 200, changedAt: "2026-01-01T02:00:11.123456+02:00" }),
      )
    ).data.attributes;
    expect(attributes.position).toBe(200);
    expect(attributes.positionChangedAt).toBe("2026-01-01T00:00:11.123Z");
    // played has its own time: an older played change still applies when played was never set.
    attributes = (await body<{ data: EpisodeResource }>(await write({ played: true, changedAt: at(1) }))).data
      .attributes;
    expect([attributes.played, attributes.playedChangedAt, attributes.position]).toEqual([true, at(1), 200]);
    attributes = (await body<{ data: EpisodeResource }>(await write({ played: false, changedAt: at(0) }))).data
      .attributes;
    expect(attributes.played).toBe(true);
  });

  it("a merge into an existing state needs no mediaUrl; creating one without it is 422 and writes nothing", async () => {
    const user = await as("ep-merge-no-media");
    const id = crypto.randomUUID();
    const merge = { duration: 3600, position: 120, changedAt: at(20) };
    // No state yet (and then only a tombstone): creating needs mediaUrl, at /data/attributes.
    const refused = await user.post("/v1/episodes", episodeDocument(id, merge));
    expect(refused.status).toBe(422);
    expect((await body<ErrorDocument>(refused)).errors[0]).toMatchObject({
      detail: "mediaUrl is required to create an episode state.",
      source: { pointer: "/data/attributes" },
    });
    expect((await user.get(`/v1/episodes/${id}`)).status).toBe(404);
    expect((await user.post("/v1/episodes", episodeDocument(id, { mediaUrl: MEDIA }))).status).toBe(201);
    const merged = await user.post("/v1/episodes", episodeDocument(id, merge));
    expect(merged.status).toBe(200);
    expect((await body<{ data: EpisodeResource }>(merged)).data.attributes).toMatchObject({
      mediaUrl: MEDIA,
      duration: 3600,
      position: 120,
      positionChangedAt: at(20),
    });
    // Of another feed: 409 as any POST naming another feed.
    expect((await user.post("/v1/episodes", episodeDocument(id, merge, OTHER_FEED))).status).toBe(409);
    expect((await user.delete(`/v1/episodes/${id}`)).status).toBe(204);
    expect((await user.post("/v1/episodes", episodeDocument(id, merge))).status).toBe(422);
    // In bulk, the same answers inline.
    const other = crypto.randomUUID();
    await user.post("/v1/episodes", episodeDocument(other, { mediaUrl: MEDIA }));
    const bulk = await user.operations({
      "atomic:operations": [
        { op: "add", ...episodeDocument(other, { played: true, changedAt: at(30) }) },
        { op: "add", ...episodeDocument(crypto.randomUUID(), { played: true, changedAt: at(30) }) },
      ],
    });
    const results = (await body<{ "atomic:results": ({ data?: EpisodeResource } & Partial<ErrorDocument>)[] }>(bulk))[
      "atomic:results"
    ];
    expect(results[0].data?.attributes).toMatchObject({ mediaUrl: MEDIA, played: true });
    expect(results[1].errors?.[0]).toMatchObject({
      status: "422",
      source: { pointer: "/atomic:operations/1/data/attributes" },
    });
  });

  it("mediaUrl, itemGuid and duration replace the stored ones whenever sent; null clears itemGuid and duration", async () => {
    const user = await as("ep-facts");
    const id = crypto.randomUUID();
    await user.post("/v1/episodes", episodeDocument(id, { mediaUrl: MEDIA, itemGuid: "ABC-123", duration: 3600 }));
    const moved = "https://cdn2.example.com/episode-1.mp3?v=2";
    let attributes = (
      await body<{ data: EpisodeResource }>(
        await user.post("/v1/episodes", episodeDocument(id, { mediaUrl: moved, duration: 3599 })),
      )
    ).data.attributes;
    expect([attributes.mediaUrl, attributes.itemGuid, attributes.duration]).toEqual([moved, "ABC-123", 3599]);
    attributes = (
      await body<{ data: EpisodeResource }>(
        await user.patch(`/v1/episodes/${id}`, episodeDocument(id, { itemGuid: null, duration: null })),
      )
    ).data.attributes;
    expect([attributes.mediaUrl, attributes.itemGuid, attributes.duration]).toEqual([moved, null, null]);
  });

  it("a changedAt more than 10 minutes ahead of the server's clock is taken as the server's clock", async () => {
    const user = await as("ep-future");
    const id = crypto.randomUUID();
    const before = Date.now();
    const response = await user.post(
      "/v1/episodes",
      episodeDocument(id, { mediaUrl: MEDIA, position: 50, changedAt: "2099-01-01T00:00:00Z" }),
    );
    const stored = Date.parse(
      (await body<{ data: EpisodeResource }>(response)).data.attributes.positionChangedAt as string,
    );
    expect(stored).toBeGreaterThanOrEqual(before);
    expect(stored).toBeLessThanOrEqual(Date.now());
    // So a device with a correct clock can still move it on a few seconds later.
    const later = new Date(Date.now() + 5000).toISOString();
    const next = await user.post(
      "/v1/episodes",
      episodeDocument(id, { mediaUrl: MEDIA, position: 60, changedAt: later }),
    );
    expect((await body<{ data: EpisodeResource }>(next)).data.attributes.position).toBe(60);
    // Within 10 minutes ahead it is kept as sent.
    const soon = new Date(Date.now() + 5 * 60_000).toISOString().replace(/\.\d+Z$/, ".000Z");
    const kept = await user.post(
      "/v1/episodes",
      episodeDocument(id, { mediaUrl: MEDIA, position: 70, changedAt: soon }),
    );
    expect((await body<{ data: EpisodeResource }>(kept)).data.attributes.positionChangedAt).toBe(soon);
  });

  it("a state of another feed is a 409 at the feed's pointer and writes nothing", async () => {
    const user = await as("ep-feed-409");
    const id = crypto.randomUUID();
    await user.post("/v1/episodes", episodeDocument(id, { mediaUrl: MEDIA, position: 1, changedAt: at(1) }));
    const response = await user.post(
      "/v1/episodes",
      episodeDocument(id, { mediaUrl: MEDIA, position: 9, changedAt: at(9) }, OTHER_FEED),
    );
    expect(response.status).toBe(409);
    const { errors } = await body<ErrorDocument>(response);
    expect(errors[0].source).toEqual({ pointer: "/data/relationships/subscription/data/id" });
    const patch = await user.patch(
      `/v1/episodes/${id}`,
      episodeDocument(id, { position: 9, changedAt: at(9) }, OTHER_FEED),
    );
    expect(patch.status).toBe(409);
    const { data } = await body<{ data: EpisodeResource }>(await user.get(`/v1/episodes/${id}`));
    expect(data.attributes.position).toBe(1);
  });
});

describe("PATCH, GET and DELETE /v1/episodes/{id}", () => {
  it("PATCH merges (relationships and mediaUrl optional); a path id that is not a UUID is 400, an unknown one 404", async () => {
    const user = await as("ep-patch");
    const id = crypto.randomUUID();
    expect(
      (await user.patch(`/v1/episodes/${id}`, episodeDocument(id, { position: 1, changedAt: at(1) }))).status,
    ).toBe(404);
    await user.post("/v1/episodes", episodeDocument(id, { mediaUrl: MEDIA }));
    const patched = await user.patch(`/v1/episodes/${id}`, {
      data: { type: "episode", id, attributes: { position: 42, played: false, changedAt: at(2) } },
    });
    expect(patched.status).toBe(200);
    expect((await body<{ data: EpisodeResource }>(patched)).data.attributes.position).toBe(42);
    const mismatch = await user.patch(`/v1/episodes/${id}`, episodeDocument(crypto.randomUUID(), {}));
    expect(mismatch.status).toBe(409);
    expect((await body<ErrorDocument>(mismatch)).errors[0].source).toEqual({ pointer: "/data/id" });
    const bad = await user.patch("/v1/episodes/not-a-uuid", episodeDocument(id, {}));
    expect(bad.status).toBe(400);
    expect((await body<ErrorDocument>(bad)).errors[0].title).toBe("Invalid GUID in request");
  });

  it("GET: 404 with the fixed wording; another user's state is exactly as absent", async () => {
    const owner = await as("ep-owner");
    const id = crypto.randomUUID();
    await owner.post("/v1/episodes", episodeDocument(id, { mediaUrl: MEDIA }));
    const other = await as("ep-other");
    const response = await other.get(`/v1/episodes/${id}`);
    expect(response.status).toBe(404);
    expect((await body<ErrorDocument>(response)).errors[0]).toEqual({
      status: "404",
      title: "Episode not found",
      detail: "The requested episode does not exist for the user.",
    });
    expect((await other.delete(`/v1/episodes/${id}`)).status).toBe(404);
    expect((await other.patch(`/v1/episodes/${id}`, episodeDocument(id, { duration: 5 }))).status).toBe(404);
    expect((await owner.get(`/v1/episodes/${id}`)).status).toBe(200);
  });

  it("DELETE forgets the state (204), keeps a tombstone for the feed; writing the id again starts afresh (201)", async () => {
    const user = await as("ep-delete");
    const id = crypto.randomUUID();
    await user.post(
      "/v1/episodes",
      episodeDocument(id, { mediaUrl: MEDIA, itemGuid: "x", position: 500, played: true, changedAt: at(50) }),
    );
    expect((await user.delete(`/v1/episodes/${id}`)).status).toBe(204);
    expect((await user.get(`/v1/episodes/${id}`)).status).toBe(404);
    expect((await user.delete(`/v1/episodes/${id}`)).status).toBe(404);
    const { results } = await (await databaseFor("ep-delete"))
      .prepare("SELECT media_url, item_guid, position, played, deleted_at FROM episodes WHERE user_id = 'ep-delete'")
      .all();
    expect(results).toEqual([
      { media_url: null, item_guid: null, position: 0, played: 0, deleted_at: expect.any(Number) },
    ]);
    // The forgotten times no longer count: an older change applies to the fresh state.
    const again = await user.post(
      "/v1/episodes",
      episodeDocument(id, { mediaUrl: MEDIA, position: 7, changedAt: at(1) }, OTHER_FEED),
    );
    expect(again.status).toBe(201);
    const { data } = await body<{ data: EpisodeResource }>(again);
    expect(data.attributes).toMatchObject({ position: 7, played: false, itemGuid: null, playedChangedAt: null });
    expect(data.relationships.subscription.data.id).toBe(OTHER_FEED);
  });
});

describe("validation order and pointers (docs/API.md §13): bad input answers an error and writes nothing", () => {
  const id = "4ceaf82a-1820-5c0e-893a-a95e7bcfde33";
  const relationships = { subscription: { data: { type: "subscription", id: FEED } } };
  const cases: [string, unknown, number, string | undefined][] = [
    ["not an object", [], 400, ""],
    ["data missing", {}, 400, ""],
    ["data not an object", { data: 1 }, 400, "/data"],
    ["type missing", { data: { id } }, 400, "/data"],
    ["type not episode", { data: { type: "subscription", id } }, 409, "/data/type"],
    ["id missing", { data: { type: "episode" } }, 400, "/data"],
    ["id not a UUID", { data: { type: "episode", id: "x" } }, 400, "/data/id"],
    ["relationships missing", { data: { type: "episode", id, attributes: { mediaUrl: MEDIA } } }, 400, "/data"],
    ["subscription missing", { data: { type: "episode", id, relationships: {} } }, 400, "/data/relationships"],
    [
      "relationship type wrong",
      { data: { type: "episode", id, relationships: { subscription: { data: { type: "feed", id: FEED } } } } },
      400,
      "/data/relationships/subscription/data/type",
    ],
    [
      "feed guid not a UUID",
      { data: { type: "episode", id, relationships: { subscription: { data: { type: "subscription", id: "x" } } } } },
      400,
      "/data/relationships/subscription/data/id",
    ],
    ["attributes missing", { data: { type: "episode", id, relationships } }, 422, "/data"],
    ["mediaUrl missing", { data: { type: "episode", id, relationships, attributes: {} } }, 422, "/data/attributes"],
    [
      "mediaUrl not http",
      { data: { type: "episode", id, relationships, attributes: { mediaUrl: "ftp://x/y" } } },
      422,
      "/data/attributes/mediaUrl",
    ],
    [
      "itemGuid with a control character",
      { data: { type: "episode", id, relationships, attributes: { mediaUrl: MEDIA, itemGuid: "a\u0007" } } },
      422,
      "/data/attributes/itemGuid",
    ],
    [
      "itemGuid over 1024 bytes",
      { data: { type: "episode", id, relationships, attributes: { mediaUrl: MEDIA, itemGuid: "é".repeat(513) } } },
      422,
      "/data/attributes/itemGuid",
    ],
    [
      "position negative",
      { data: { type: "episode", id, relationships, attributes: { mediaUrl: MEDIA, position: -1, changedAt: at(1) } } },
      422,
      "/data/attributes/position",
    ],
    [
      "position fractional",
      {
        data: { type: "episode", id, relationships, attributes: { mediaUrl: MEDIA, position: 1.5, changedAt: at(1) } },
      },
      422,
      "/data/attributes/position",
    ],
    [
      "position too large",
      {
        data: {
          type: "episode",
          id,
          relationships,
          attributes: { mediaUrl: MEDIA, position: 2147483648, changedAt: at(1) },
        },
      },
      422,
      "/data/attributes/position",
    ],
    [
      "duration zero",
      { data: { type: "episode", id, relationships, attributes: { mediaUrl: MEDIA, duration: 0 } } },
      422,
      "/data/attributes/duration",
    ],
    [
      "played not boolean",
      { data: { type: "episode", id, relationships, attributes: { mediaUrl: MEDIA, played: 1, changedAt: at(1) } } },
      422,
      "/data/attributes/played",
    ],
    [
      "changedAt missing with position",
      { data: { type: "episode", id, relationships, attributes: { mediaUrl: MEDIA, position: 1 } } },
      422,
      "/data/attributes",
    ],
    [
      "changedAt not RFC 3339",
      {
        data: {
          type: "episode",
          id,
          relationships,
          attributes: { mediaUrl: MEDIA, played: true, changedAt: "2026-01-01" },
        },
      },
      422,
      "/data/attributes/changedAt",
    ],
    [
      "changedAt before 2000",
      {
        data: {
          type: "episode",
          id,
          relationships,
          attributes: { mediaUrl: MEDIA, played: true, changedAt: "1999-12-31T23:59:59Z" },
        },
      },
      422,
      "/data/attributes/changedAt",
    ],
    [
      "changedAt an impossible date",
      {
        data: {
          type: "episode",
          id,
          relationships,
          attributes: { mediaUrl: MEDIA, played: true, changedAt: "2026-02-30T00:00:00Z" },
        },
      },
      422,
      "/data/attributes/changedAt",
    ],
  ];
  for (const [name, document, status, pointer] of cases) {
    it(`${name}: ${status} at ${pointer}`, async () => {
      const user = await as(`ep-bad-${name}`);
      const response = await user.post("/v1/episodes", document);
      expect(response.status).toBe(status);
      const { errors } = await body<ErrorDocument>(response);
      expect(errors[0].source?.pointer).toBe(pointer);
      expect((await body<{ data: unknown[] }>(await user.get("/v1/episodes"))).data).toEqual([]);
    });
  }

  it("a valid body with a reserved query parameter is 400 and writes nothing", async () => {
    const user = await as("ep-query");
    const id = crypto.randomUUID();
    const response = await user.post("/v1/episodes?include=subscription", episodeDocument(id, { mediaUrl: MEDIA }));
    expect(response.status).toBe(400);
    expect((await body<ErrorDocument>(response)).errors[0].source).toEqual({ parameter: "include" });
    expect((await user.get(`/v1/episodes/${id}`)).status).toBe(404);
  });

  it("the atomic extension in Content-Type is 415 on /v1/episodes", async () => {
    const user = await as("ep-415");
    const response = await user.post("/v1/episodes", episodeDocument(crypto.randomUUID(), { mediaUrl: MEDIA }), {
      "Content-Type": ATOMIC_MEDIA_TYPE,
    });
    expect(response.status).toBe(415);
  });
});

type FeedDocument = {
  data: EpisodeResource[];
  links: { self: string; first: string; prev: null; next: string | null; last: null };
  meta: { syncToken: string };
};

describe("GET /v1/episodes: the episode change feed", () => {
  it("reports states and tombstones once each in change order, with its own sequence beside the subscriptions'", async () => {
    const user = await as("ep-feed");
    const ids = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    for (const id of ids) await user.post("/v1/episodes", episodeDocument(id, { mediaUrl: MEDIA }));
    // A subscription change does not move the episode sequence.
    await user.post("/v1/subscriptions", {
      data: { type: "subscription", id: FEED, attributes: { feedUrl: "https://podnews.net/rss" } },
    });
    await user.post("/v1/episodes", episodeDocument(ids[0], { mediaUrl: MEDIA, position: 3, changedAt: at(3) }));
    await user.delete(`/v1/episodes/${ids[1]}`);
    const first = await body<FeedDocument>(await user.get("/v1/episodes?page[size]=2"));
    expect(first.links.self).toBe("/v1/episodes?filter[since]=0&page[size]=2");
    expect(first.data.map((item) => item.id)).toEqual([ids[2], ids[0]]);
    expect(first.meta.syncToken).toBe("4");
    expect(first.links.next).toBe("/v1/episodes?filter[since]=4&page[size]=2");
    const second = await body<FeedDocument>(await user.get(first.links.next as string));
    expect(second.data).toEqual([
      {
        type: "episode",
        id: ids[1],
        attributes: { deletedAt: expect.stringMatching(/Z$/) },
        relationships: { subscription: { data: { type: "subscription", id: FEED } } },
      },
    ]);
    expect(second.links.next).toBeNull();
    expect(second.meta.syncToken).toBe("5");
    expect(first.data[1].attributes.deletedAt).toBeNull();
  });

  it("refuses tokens it never issued (400) and page[number] (400); a merge that changes nothing is no change", async () => {
    const user = await as("ep-feed-tokens");
    const id = crypto.randomUUID();
    await user.post("/v1/episodes", episodeDocument(id, { mediaUrl: MEDIA, position: 1, changedAt: at(1) }));
    expect((await user.get("/v1/episodes?filter[since]=2")).status).toBe(400);
    expect((await body<ErrorDocument>(await user.get("/v1/episodes?filter[since]=02"))).errors[0].title).toBe(
      "Invalid sync token",
    );
    const paged = await user.get("/v1/episodes?page[number]=1");
    expect(paged.status).toBe(400);
    expect((await body<ErrorDocument>(paged)).errors[0].source).toEqual({ parameter: "page[number]" });
    await user.post("/v1/episodes", episodeDocument(id, { mediaUrl: MEDIA, position: 1, changedAt: at(1) }));
    expect((await body<FeedDocument>(await user.get("/v1/episodes?filter[since]=1"))).data).toEqual([]);
  });

  it("ETag / If-None-Match: 304 while nothing changed for the user, 200 after a change", async () => {
    const user = await as("ep-etag");
    await user.post("/v1/episodes", episodeDocument(crypto.randomUUID(), { mediaUrl: MEDIA }));
    const first = await user.get("/v1/episodes?filter[since]=0");
    const etag = first.headers.get("ETag") as string;
    expect(etag).toMatch(/^"[0-9a-f]{8}-1"$/);
    expect((await user.get("/v1/episodes?filter[since]=0", { "If-None-Match": etag })).status).toBe(304);
    await user.post("/v1/episodes", episodeDocument(crypto.randomUUID(), { mediaUrl: MEDIA }));
    expect((await user.get("/v1/episodes?filter[since]=0", { "If-None-Match": etag })).status).toBe(200);
  });
});

describe("episode operations in /v1/operations", () => {
  it("mixes episode and subscription operations in one request and one D1 round trip, in order", async () => {
    const counter = await countedDatabaseOf("ep-bulk");
    const user = await as("ep-bulk", counter.bindings);
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
    const response = await user.operations({
      "atomic:operations": [
        { op: "add", data: { type: "subscription", id: FEED, attributes: { feedUrl: "https://podnews.net/rss" } } },
        { op: "add", ...episodeDocument(a, { mediaUrl: MEDIA, position: 5, changedAt: at(5) }) },
        { op: "add", ...episodeDocument(b, { mediaUrl: MEDIA }) },
        {
          op: "update",
          ref: { type: "episode", id: a },
          data: { type: "episode", id: a, attributes: { played: true, changedAt: at(6) } },
        },
        { op: "remove", ref: { type: "episode", id: b } },
        { op: "remove", ref: { type: "episode", id: b } },
        { op: "update", data: { type: "episode", id: crypto.randomUUID(), attributes: { duration: 9 } } },
        { op: "add", data: { type: "podcast", id: a } },
        { op: "remove", ref: { type: "podcast", id: a } },
        { op: "add", ...episodeDocument(a, { mediaUrl: MEDIA }, OTHER_FEED) },
      ],
    });
    expect(response.status).toBe(200);
    expect(counter.calls()).toBe(1);
    const document = await body<{
      "atomic:results": ({ data?: EpisodeResource } & Partial<ErrorDocument>)[];
      meta: { succeeded: number; failed: number };
    }>(response);
    const results = document["atomic:results"];
    expect(results[1].data?.attributes.position).toBe(5);
    expect(results[1].data?.links).toEqual({ self: `/v1/episodes/${a}` });
    expect(results[3].data?.attributes).toMatchObject({ position: 5, played: true });
    expect(results[4]).toEqual({});
    expect(results[5].errors?.[0]).toMatchObject({
      status: "404",
      title: "Episode not found",
      source: { pointer: "/atomic:operations/5" },
    });
    expect(results[6].errors?.[0]).toMatchObject({ status: "404", source: { pointer: "/atomic:operations/6" } });
    expect(results[7].errors?.[0]).toMatchObject({
      status: "409",
      source: { pointer: "/atomic:operations/7/data/type" },
    });
    expect(results[8].errors?.[0]).toMatchObject({
      status: "409",
      source: { pointer: "/atomic:operations/8/ref/type" },
    });
    expect(results[9].errors?.[0]).toMatchObject({
      status: "409",
      source: { pointer: "/atomic:operations/9/data/relationships/subscription/data/id" },
    });
    expect(document.meta).toEqual({ succeeded: 5, failed: 5 });
  });

  it("an update whose ref names another resource than its data is 400 at ref", async () => {
    const user = await as("ep-bulk-ref");
    const id = crypto.randomUUID();
    const response = await user.operations({
      "atomic:operations": [
        {
          op: "update",
          ref: { type: "episode", id: crypto.randomUUID() },
          data: { type: "episode", id, attributes: {} },
        },
      ],
    });
    const results = (await body<{ "atomic:results": ErrorDocument[] }>(response))["atomic:results"];
    expect(results[0].errors[0].source).toEqual({ pointer: "/atomic:operations/0/ref" });
  });
});

describe("what episode writes and reads cost (rows, per D1's own meta)", () => {
  it("creating writes at most 4 rows, a merge that applies at most 4, one that changes nothing none", async () => {
    const meter = await meteredDatabaseOf("ep-rows");
    const user = await as("ep-rows", meter.bindings);
    const id = crypto.randomUUID();
    await user.post(
      "/v1/episodes",
      episodeDocument(id, { mediaUrl: MEDIA, itemGuid: "g", position: 1, changedAt: at(1) }),
    );
    expect(meter.totals.rowsWritten).toBeGreaterThan(0);
    expect(meter.totals.rowsWritten).toBeLessThanOrEqual(4);
    meter.reset();
    await user.post(
      "/v1/episodes",
      episodeDocument(id, { mediaUrl: MEDIA, position: 2, played: true, changedAt: at(2) }),
    );
    expect(meter.totals.rowsWritten).toBeGreaterThan(0);
    expect(meter.totals.rowsWritten).toBeLessThanOrEqual(4);
    meter.reset();
    await user.post(
      "/v1/episodes",
      episodeDocument(id, { mediaUrl: MEDIA, position: 2, played: true, changedAt: at(2) }),
    );
    await user.patch(`/v1/episodes/${id}`, episodeDocument(id, { position: 1, changedAt: at(0) }));
    expect(meter.totals.rowsWritten).toBe(0);
  });

  it("a feed page of S reads at most S + 2 rows however long the history (50 000 states)", async () => {
    const db = await databaseFor("ep-feed-rows");
    // 50 000 states in one statement: the triggers number them as the app's writes would.
    await db
      .prepare(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
         INSERT INTO episodes (user_id, id, feed_guid, media_url, change_seq, received_at)
         SELECT 'ep-feed-rows', printf('00000000-0000-4000-8000-%012d', i), ?, 'https://cdn.example.com/' || i || '.mp3', i, 0 FROM n`,
      )
      .bind(FEED)
      .run();
    const meter = await meteredDatabaseOf("ep-feed-rows");
    const user = await as("ep-feed-rows", meter.bindings);
    for (const since of [0, 25_000, 49_950]) {
      meter.reset();
      const page = await body<FeedDocument>(await user.get(`/v1/episodes?filter[since]=${since}&page[size]=100`));
      expect(page.data.length).toBe(Math.min(100, 50_000 - since));
      expect(meter.totals.rowsRead).toBeLessThanOrEqual(page.data.length + 2);
    }
    // The quota counts the 50 000 (tombstones too): a 50 001st state is refused, a merge still works.
    const refused = await user.post("/v1/episodes", episodeDocument(crypto.randomUUID(), { mediaUrl: MEDIA }));
    expect(refused.status).toBe(403);
    expect((await body<ErrorDocument>(refused)).errors[0]).toMatchObject({
      title: "Episode limit reached",
      meta: { maxEpisodes: 50000 },
    });
    const merged = await user.post(
      "/v1/episodes",
      episodeDocument("00000000-0000-4000-8000-000000000001", { mediaUrl: MEDIA, played: true, changedAt: at(1) }),
    );
    expect(merged.status).toBe(200);
    // A write reads the rows it names, not the account: sent again unchanged, the state reads a handful of rows
    // among the 50 000 (the read of stored rows once walked every state of the user).
    meter.reset();
    const unchanged = await user.post(
      "/v1/episodes",
      episodeDocument("00000000-0000-4000-8000-000000000001", { mediaUrl: MEDIA, played: true, changedAt: at(1) }),
    );
    expect(unchanged.status).toBe(200);
    expect(meter.totals.rowsWritten).toBe(0);
    expect(meter.totals.rowsRead).toBeLessThanOrEqual(20);
  });
});
