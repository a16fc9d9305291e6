import { describe, expect, it } from "vitest";
import { as, databaseFor, expectedSubscription, JSONAPI, newFeed, ORIGIN, subscriptionDocument } from "./helpers";

type ErrorDocument = { errors: { status: string; title: string; detail: string; source?: { pointer: string } }[] };

async function storedRows(userId: string) {
  const { results } = await (await databaseFor(userId))
    .prepare("SELECT guid, feed_url, subscribed_at, unsubscribed_at FROM subscriptions WHERE user_id = ? ORDER BY guid")
    .bind(userId)
    .all();
  return results;
}

describe("POST /v1/subscriptions", () => {
  it("creates a subscription: 201, Location, and the resource with both links", async () => {
    const user = await as("create-new");
    const feed = newFeed();
    const response = await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    expect(response.status).toBe(201);
    expect(response.headers.get("Content-Type")).toBe(JSONAPI);
    expect(response.headers.get("Location")).toBe(`${ORIGIN}/v1/subscriptions/${feed.guid}`);
    const body = (await response.json()) as { jsonapi: unknown; data: Record<string, unknown> };
    expect(body).toEqual({
      jsonapi: { version: "1.1" },
      data: expectedSubscription(feed),
    });
  });

  it("is idempotent: an existing subscription answers 200 with the stored resource, unchanged", async () => {
    const user = await as("create-existing");
    const feed = newFeed();
    const first = (await (
      await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl))
    ).json()) as {
      data: unknown;
    };
    const again = await user.post(
      "/v1/subscriptions",
      subscriptionDocument(feed.guid, "https://elsewhere.example/other.xml"),
    );
    expect(again.status).toBe(200);
    expect(again.headers.get("Location")).toBeNull();
    expect(((await again.json()) as { data: unknown }).data).toEqual(first.data);
    const rows = await storedRows("create-existing");
    expect(rows).toHaveLength(1);
    expect(rows[0].feed_url).toBe(feed.feedUrl);
  });

  it("stores the id lowercase and finds it by a path guid in any case", async () => {
    const user = await as("create-case");
    const guid = "0E6F1C2A-ABCD-4EF0-8123-94444555666A";
    const created = await user.post("/v1/subscriptions", subscriptionDocument(guid, "https://a.example/feed"));
    expect(((await created.json()) as { data: { id: string } }).data.id).toBe(guid.toLowerCase());
    expect((await user.get(`/v1/subscriptions/${guid}`)).status).toBe(200);
    expect((await user.get(`/v1/subscriptions/${guid.toLowerCase()}`)).status).toBe(200);
    expect(
      (await user.post("/v1/subscriptions", subscriptionDocument(guid.toLowerCase(), "https://a.example/feed"))).status,
    ).toBe(200);
  });

  it("stores feedUrl exactly as sent, never normalised", async () => {
    const user = await as("create-verbatim");
    const feedUrl = "HTTPS://Feeds.Example.COM:443/a/../Show%20Feed?b=2&a=1#latest";
    const guid = crypto.randomUUID();
    await user.post("/v1/subscriptions", subscriptionDocument(guid, feedUrl));
    const body = (await (await user.get(`/v1/subscriptions/${guid}`)).json()) as {
      data: { attributes: { feedUrl: string } };
    };
    expect(body.data.attributes.feedUrl).toBe(feedUrl);
  });

  it("accepts a feedUrl of exactly 2048 characters", async () => {
    const user = await as("create-long");
    const prefix = "https://feeds.example.com/";
    const feedUrl = prefix + "a".repeat(2048 - prefix.length);
    expect((await user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), feedUrl))).status).toBe(201);
  });

  it("ignores read-only and unknown attributes and members", async () => {
    const user = await as("create-ignored");
    const guid = crypto.randomUUID();
    const response = await user.post("/v1/subscriptions", {
      data: {
        type: "subscription",
        id: guid,
        attributes: { feedUrl: "https://a.example/f", userSubscribedAt: "1999-01-01T00:00:00.000Z", title: "x" },
        relationships: {},
      },
      meta: { client: "test" },
    });
    expect(response.status).toBe(201);
    const body = (await response.json()) as { data: { attributes: Record<string, unknown> } };
    expect(body.data.attributes.userSubscribedAt).not.toBe("1999-01-01T00:00:00.000Z");
    expect(Object.keys(body.data.attributes).sort()).toEqual(["feedUrl", "userSubscribedAt"]);
  });

  it("revives an unsubscribed feed: 201 with a fresh userSubscribedAt and the new feedUrl", async () => {
    const user = await as("create-revive");
    const guid = crypto.randomUUID();
    const first = (await (
      await user.post("/v1/subscriptions", subscriptionDocument(guid, "https://old.example/f"))
    ).json()) as {
      data: { attributes: { userSubscribedAt: string } };
    };
    expect((await user.delete(`/v1/subscriptions/${guid}`)).status).toBe(204);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const revived = await user.post("/v1/subscriptions", subscriptionDocument(guid, "https://new.example/f"));
    expect(revived.status).toBe(201);
    const body = (await revived.json()) as { data: { attributes: { feedUrl: string; userSubscribedAt: string } } };
    expect(body.data.attributes.feedUrl).toBe("https://new.example/f");
    expect(Date.parse(body.data.attributes.userSubscribedAt)).toBeGreaterThan(
      Date.parse(first.data.attributes.userSubscribedAt),
    );
    const rows = await storedRows("create-revive");
    expect(rows).toHaveLength(1);
    expect(rows[0].unsubscribed_at).toBeNull();
  });

  it("creates one row for 20 concurrent identical POSTs: one 201, the rest 200", async () => {
    const user = await as("create-concurrent");
    const feed = newFeed();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl))),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(19);
    expect(await storedRows("create-concurrent")).toHaveLength(1);
  });

  const valid = {
    type: "subscription",
    id: "5a3f7a52-2c0b-4d1e-9f3a-1b2c3d4e5f60",
    attributes: { feedUrl: "https://a.example/f" },
  };
  const matrix: { name: string; body: unknown; status: number; pointer?: string; title?: string }[] = [
    { name: "a JSON array", body: [], status: 400, pointer: "" },
    { name: "a JSON string", body: JSON.stringify("subscription"), status: 400, pointer: "" },
    { name: "null", body: null, status: 400, pointer: "" },
    { name: "no data", body: {}, status: 400, pointer: "" },
    { name: "data null", body: { data: null }, status: 400, pointer: "/data" },
    { name: "data an array", body: { data: [valid] }, status: 400, pointer: "/data" },
    { name: "data a string", body: { data: "x" }, status: 400, pointer: "/data" },
    { name: "no type", body: { data: { ...valid, type: undefined } }, status: 400, pointer: "/data" },
    { name: "type not a string", body: { data: { ...valid, type: 7 } }, status: 400, pointer: "/data/type" },
    {
      name: "another type",
      body: { data: { ...valid, type: "podcast" } },
      status: 409,
      pointer: "/data/type",
      title: "Type mismatch",
    },
    {
      name: "type in another case",
      body: { data: { ...valid, type: "Subscription" } },
      status: 409,
      pointer: "/data/type",
    },
    {
      name: "no id",
      body: { data: { ...valid, id: undefined } },
      status: 400,
      pointer: "/data",
      title: "Invalid resource identifier",
    },
    {
      name: "id not a UUID",
      body: { data: { ...valid, id: "feed-1" } },
      status: 400,
      pointer: "/data/id",
      title: "Invalid resource identifier",
    },
    {
      name: "id a number",
      body: { data: { ...valid, id: 12 } },
      status: 400,
      pointer: "/data/id",
      title: "Invalid resource identifier",
    },
    { name: "id with braces", body: { data: { ...valid, id: `{${valid.id}}` } }, status: 400, pointer: "/data/id" },
    { name: "no attributes", body: { data: { ...valid, attributes: undefined } }, status: 422, pointer: "/data" },
    {
      name: "attributes an array",
      body: { data: { ...valid, attributes: [] } },
      status: 422,
      pointer: "/data/attributes",
    },
    { name: "no feedUrl", body: { data: { ...valid, attributes: {} } }, status: 422, pointer: "/data/attributes" },
    {
      name: "feedUrl a number",
      body: { data: { ...valid, attributes: { feedUrl: 1 } } },
      status: 422,
      pointer: "/data/attributes/feedUrl",
    },
    {
      name: "feedUrl relative",
      body: { data: { ...valid, attributes: { feedUrl: "/feed.xml" } } },
      status: 422,
      pointer: "/data/attributes/feedUrl",
    },
    {
      name: "feedUrl ftp",
      body: { data: { ...valid, attributes: { feedUrl: "ftp://a.example/f" } } },
      status: 422,
      pointer: "/data/attributes/feedUrl",
    },
    {
      name: "feedUrl javascript:",
      body: { data: { ...valid, attributes: { feedUrl: "javascript:alert(1)" } } },
      status: 422,
      pointer: "/data/attributes/feedUrl",
    },
    {
      name: "feedUrl with a space",
      body: { data: { ...valid, attributes: { feedUrl: " https://a.example/f" } } },
      status: 422,
      pointer: "/data/attributes/feedUrl",
    },
    {
      name: "feedUrl empty",
      body: { data: { ...valid, attributes: { feedUrl: "" } } },
      status: 422,
      pointer: "/data/attributes/feedUrl",
    },
    {
      name: "feedUrl over 2048 characters",
      body: { data: { ...valid, attributes: { feedUrl: `https://a.example/${"a".repeat(2031)}` } } },
      status: 422,
      pointer: "/data/attributes/feedUrl",
    },
    {
      name: "wrong type and bad id (type first)",
      body: { data: { ...valid, type: "podcast", id: "x" } },
      status: 409,
      pointer: "/data/type",
    },
    {
      name: "bad id and bad feedUrl (id first)",
      body: { data: { ...valid, id: "x", attributes: { feedUrl: "x" } } },
      status: 400,
      pointer: "/data/id",
    },
  ];
  for (const { name, body, status, pointer, title } of matrix) {
    it(`answers ${status} at "${pointer}" for ${name}, and stores nothing`, async () => {
      const user = await as("create-invalid");
      const response = await user.post("/v1/subscriptions", body);
      expect(response.status).toBe(status);
      expect(response.headers.get("Content-Type")).toBe(JSONAPI);
      const document = (await response.json()) as ErrorDocument;
      expect(document.errors).toHaveLength(1);
      const [error] = document.errors;
      expect(error.status).toBe(String(status));
      expect(error.source?.pointer).toBe(pointer);
      if (title) expect(error.title).toBe(title);
      expect(error.detail.length).toBeGreaterThan(0);
      expect(await storedRows("create-invalid")).toEqual([]);
    });
  }

  it("answers 400 without a source for a body that is not JSON", async () => {
    const user = await as("create-invalid");
    for (const body of ["{", "not json", '{"data": }', ""]) {
      const response = await user.post("/v1/subscriptions", body);
      expect(response.status).toBe(400);
      const document = (await response.json()) as ErrorDocument;
      expect(document.errors[0].source).toBeUndefined();
    }
    expect(await storedRows("create-invalid")).toEqual([]);
  });

  it("answers 413 for a body over 1 MiB", async () => {
    const user = await as("create-invalid");
    const huge = JSON.stringify({
      data: { ...valid, attributes: { feedUrl: "https://a.example/f", pad: "x".repeat(1024 * 1024) } },
    });
    const response = await user.post("/v1/subscriptions", huge);
    expect(response.status).toBe(413);
    expect(response.headers.get("Content-Type")).toBe(JSONAPI);
    expect(await storedRows("create-invalid")).toEqual([]);
  });
});
