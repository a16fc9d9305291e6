import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  as,
  type Caller,
  countingD1,
  expectedSubscription,
  failingD1,
  newFeed,
  subscriptionDocument,
  syncFrom,
} from "./helpers";

type ErrorBody = { errors: { status: string; title: string; source?: { pointer?: string; parameter?: string } }[] };

/** Everything stored for the user, to prove a refused request changed nothing. */
async function stored(userId: string) {
  const rows = await env.DB.batch([
    env.DB.prepare("SELECT * FROM subscriptions WHERE user_id = ? ORDER BY guid").bind(userId),
    env.DB.prepare("SELECT * FROM user_stats WHERE user_id = ?").bind(userId),
  ]);
  return rows.map((result) => result.results);
}

async function subscribed(userId: string) {
  const user = await as(userId);
  const feed = newFeed();
  const created = await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
  const { data } = (await created.json()) as { data: { attributes: { userSubscribedAt: string } } };
  return { user, feed, path: `/v1/subscriptions/${feed.guid}`, subscribedAt: data.attributes.userSubscribedAt };
}

describe("PATCH /v1/subscriptions/{guid}: feed moves (CONTRACT 9)", () => {
  it("replaces feedUrl exactly as sent; the guid and userSubscribedAt stay; the move is a change for sync", async () => {
    const { user, feed, path, subscribedAt } = await subscribed("patch-move");
    const { token } = await syncFrom(user, "0");
    const moved = "https://new-host.example/Feed.XML?a=1&b=%20";
    const response = await user.patch(path, subscriptionDocument(feed.guid, moved));
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe("application/vnd.api+json");
    const body = (await response.json()) as { data: unknown };
    expect(body.data).toEqual({
      ...expectedSubscription({ guid: feed.guid, feedUrl: moved }),
      attributes: { feedUrl: moved, userSubscribedAt: subscribedAt },
    });
    const got = (await (await user.get(path)).json()) as { data: { attributes: unknown } };
    expect(got.data.attributes).toEqual({ feedUrl: moved, userSubscribedAt: subscribedAt });
    const changes = await syncFrom(user, token);
    expect(changes.items.map((item) => [item.id, item.attributes.feedUrl])).toEqual([[feed.guid, moved]]);
    expect(Number(changes.token)).toBe(Number(token) + 1);
  });

  it("accepts the body's id in any case", async () => {
    const { user, feed, path } = await subscribed("patch-case");
    const response = await user.patch(
      path.toUpperCase().replace("/V1/SUBSCRIPTIONS/", "/v1/subscriptions/"),
      subscriptionDocument(feed.guid.toUpperCase(), "https://b.example/x"),
    );
    expect(response.status).toBe(200);
  });

  it("records nothing for the same feedUrl, or when attributes or feedUrl are absent, and answers 200", async () => {
    const { user, feed, path } = await subscribed("patch-noop");
    const etag = (await user.get("/v1/subscriptions")).headers.get("ETag") as string;
    const before = await stored("patch-noop");
    const bodies = [
      subscriptionDocument(feed.guid, feed.feedUrl),
      { data: { type: "subscription", id: feed.guid } },
      { data: { type: "subscription", id: feed.guid, attributes: {} } },
      { data: { type: "subscription", id: feed.guid, attributes: { title: "ignored" } } },
    ];
    for (const body of bodies) {
      const response = await user.patch(path, body);
      expect(response.status, JSON.stringify(body)).toBe(200);
      expect(((await response.json()) as { data: unknown }).data).toEqual(expectedSubscription(feed));
    }
    expect(await stored("patch-noop")).toEqual(before);
    expect((await user.get("/v1/subscriptions", { "If-None-Match": etag })).status).toBe(304);
  });

  it("answers 404 for a guid never subscribed, another user's subscription, and a tombstone", async () => {
    const { user, feed, path } = await subscribed("patch-404");
    const other = await as("patch-404-other");
    const never = crypto.randomUUID();
    for (const [caller, target, id] of [
      [user, `/v1/subscriptions/${never}`, never],
      [other, path, feed.guid],
    ] as [Caller, string, string][]) {
      const response = await caller.patch(target, subscriptionDocument(id, "https://x.example/f"));
      expect(response.status).toBe(404);
      expect(((await response.json()) as ErrorBody).errors[0].title).toBe("Subscription not found");
    }
    await user.delete(path);
    const before = await stored("patch-404");
    const tombstone = await user.patch(path, subscriptionDocument(feed.guid, "https://x.example/f"));
    expect(tombstone.status).toBe(404);
    const noChange = await user.patch(path, { data: { type: "subscription", id: feed.guid } });
    expect(noChange.status).toBe(404);
    expect(await stored("patch-404")).toEqual(before);
  });

  const cases: [string, (guid: string) => unknown, number, string | undefined, string?][] = [
    ["a body that is not JSON", () => "{", 400, undefined],
    ["a top level that is not an object", () => [1], 400, ""],
    ["no data", () => ({}), 400, ""],
    ["data not an object", () => ({ data: [] }), 400, "/data"],
    ["no type", (id) => ({ data: { id, attributes: { feedUrl: "https://a.example/" } } }), 400, "/data"],
    ["type not subscription", (id) => ({ data: { type: "podcast", id } }), 409, "/data/type"],
    [
      "no id",
      () => ({ data: { type: "subscription", attributes: { feedUrl: "https://a.example/" } } }),
      400,
      "/data",
      "Invalid resource identifier",
    ],
    [
      "an id that is not a UUID",
      () => ({ data: { type: "subscription", id: "nope" } }),
      400,
      "/data/id",
      "Invalid resource identifier",
    ],
    [
      "an id of another subscription (before the attributes)",
      () => ({ data: { type: "subscription", id: crypto.randomUUID(), attributes: { feedUrl: 5 } } }),
      409,
      "/data/id",
    ],
    [
      "feedUrl null",
      (id) => ({ data: { type: "subscription", id, attributes: { feedUrl: null } } }),
      422,
      "/data/attributes/feedUrl",
    ],
    [
      "feedUrl not http(s)",
      (id) => ({ data: { type: "subscription", id, attributes: { feedUrl: "ftp://a.example/f" } } }),
      422,
      "/data/attributes/feedUrl",
    ],
    [
      "feedUrl relative",
      (id) => ({ data: { type: "subscription", id, attributes: { feedUrl: "/feed.xml" } } }),
      422,
      "/data/attributes/feedUrl",
    ],
    [
      "attributes not an object",
      (id) => ({ data: { type: "subscription", id, attributes: "x" } }),
      422,
      "/data/attributes",
    ],
  ];
  for (const [name, body, status, pointer, title] of cases) {
    it(`answers ${status} for ${name}, and changes nothing`, async () => {
      const { user, feed, path } = await subscribed(`patch-invalid-${status}`);
      const before = await stored(user.userId);
      const payload = body(feed.guid);
      const response = await user.patch(path, typeof payload === "string" ? payload : JSON.stringify(payload));
      expect(response.status).toBe(status);
      const error = ((await response.json()) as ErrorBody).errors[0];
      expect(error.source?.pointer).toBe(pointer);
      if (title) expect(error.title).toBe(title);
      expect(await stored(user.userId)).toEqual(before);
    });
  }

  it("checks the path guid first, then media types (415), like every body endpoint", async () => {
    const { user, feed } = await subscribed("patch-path");
    const bad = await user.patch("/v1/subscriptions/not-a-guid", "{");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as ErrorBody).errors[0].title).toBe("Invalid GUID in request");
    const path = `/v1/subscriptions/${feed.guid}`;
    expect(
      (
        await user.patch(path, subscriptionDocument(feed.guid, "https://a.example/"), {
          "Content-Type": "application/json",
        })
      ).status,
    ).toBe(415);
    expect(
      (
        await user.patch(path, subscriptionDocument(feed.guid, "https://a.example/"), {
          Accept: "application/vnd.api+json;charset=utf-8",
        })
      ).status,
    ).toBe(406);
    const huge = JSON.stringify(subscriptionDocument(feed.guid, `https://a.example/${"x".repeat(1024 * 1024)}`));
    expect((await user.patch(path, huge)).status).toBe(413);
  });

  it("makes one D1 call in every outcome; a D1 failure answers 503 and changes nothing", async () => {
    const { feed, path } = await subscribed("patch-trips");
    const counter = countingD1(env.DB);
    const counted = await as("patch-trips", { DB: counter.binding });
    for (const body of [
      subscriptionDocument(feed.guid, "https://trip.example/1"),
      subscriptionDocument(feed.guid, "https://trip.example/1"),
      { data: { type: "subscription", id: feed.guid } },
    ]) {
      counter.reset();
      expect((await counted.patch(path, body)).status).toBe(200);
      expect(counter.calls()).toBe(1);
    }
    const before = await stored("patch-trips");
    const failing = await as("patch-trips", { DB: failingD1(env.DB, 1) });
    expect((await failing.patch(path, subscriptionDocument(feed.guid, "https://trip.example/2"))).status).toBe(503);
    expect(await stored("patch-trips")).toEqual(before);
  });
});
