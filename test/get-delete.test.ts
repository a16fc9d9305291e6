import { describe, expect, it } from "vitest";
import { as, databaseFor, JSONAPI, newFeed, ORIGIN, send, subscriptionDocument } from "./helpers";

type ErrorDocument = { errors: { status: string; title: string; detail: string; source?: Record<string, string> }[] };

const NOT_FOUND = {
  status: "404",
  title: "Subscription not found",
  detail: "The requested subscription does not exist for the user.",
};
const INVALID_GUID = {
  status: "400",
  title: "Invalid GUID in request",
  detail: "The requested GUID is not a UUID value",
};

describe("GET /v1/subscriptions/{guid}", () => {
  it("returns the subscription with self and unsubscribe links", async () => {
    const user = await as("get-found");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const response = await user.get(`/v1/subscriptions/${feed.guid}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe(JSONAPI);
    const body = (await response.json()) as { jsonapi: unknown; data: Record<string, unknown> };
    expect(body.jsonapi).toEqual({ version: "1.1" });
    expect(body.data).toMatchObject({
      type: "subscription",
      id: feed.guid,
      attributes: { feedUrl: feed.feedUrl },
      links: {
        self: `/v1/subscriptions/${feed.guid}`,
        unsubscribe: { href: `/v1/subscriptions/${feed.guid}`, method: "DELETE" },
      },
    });
  });

  it("answers 404 with the specification's error for an unknown guid", async () => {
    const response = await (await as("get-missing")).get(`/v1/subscriptions/${crypto.randomUUID()}`);
    expect(response.status).toBe(404);
    expect(((await response.json()) as ErrorDocument).errors).toEqual([NOT_FOUND]);
  });

  for (const guid of [
    "not-a-uuid",
    "1234",
    "5a3f7a52-2c0b-4d1e-9f3a-1b2c3d4e5f6",
    "5a3f7a522c0b4d1e9f3a1b2c3d4e5f60",
    "%00",
  ]) {
    it(`answers 400 with the specification's error for the path guid ${guid}`, async () => {
      const response = await (await as("get-invalid")).get(`/v1/subscriptions/${guid}`);
      expect(response.status).toBe(400);
      expect(((await response.json()) as ErrorDocument).errors[0]).toMatchObject(INVALID_GUID);
    });
  }

  it("refuses reserved query parameters and ignores implementation-specific ones", async () => {
    const user = await as("get-query");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    for (const parameter of ["include", "fields[subscription]", "page[number]", "sort"]) {
      const response = await user.get(`/v1/subscriptions/${feed.guid}?${parameter}=x`);
      expect(response.status).toBe(400);
      expect(((await response.json()) as ErrorDocument).errors[0].source).toEqual({ parameter });
    }
    expect((await user.get(`/v1/subscriptions/${feed.guid}?cacheBust=1`)).status).toBe(200);
  });
});

describe("DELETE /v1/subscriptions/{guid}", () => {
  it("unsubscribes: 204 without a body, then 404 for get and delete", async () => {
    const user = await as("delete-once");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const response = await user.delete(`/v1/subscriptions/${feed.guid}`);
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect((await user.get(`/v1/subscriptions/${feed.guid}`)).status).toBe(404);
    const again = await user.delete(`/v1/subscriptions/${feed.guid}`);
    expect(again.status).toBe(404);
    expect(((await again.json()) as ErrorDocument).errors).toEqual([NOT_FOUND]);
  });

  it("follows links.unsubscribe as given (href and method)", async () => {
    const user = await as("delete-link");
    const feed = newFeed();
    const created = (await (
      await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl))
    ).json()) as {
      data: { links: { unsubscribe: { href: string; method: string } } };
    };
    const { href, method } = created.data.links.unsubscribe;
    const response = await send(
      new Request(new URL(href, ORIGIN), { method, headers: { Authorization: `Bearer ${user.token}` } }),
    );
    expect(response.status).toBe(204);
  });

  it("keeps a tombstone: the row stays, marked unsubscribed", async () => {
    const user = await as("delete-tombstone");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    await user.delete(`/v1/subscriptions/${feed.guid}`);
    const row = await (await databaseFor("delete-tombstone"))
      .prepare("SELECT feed_url, unsubscribed_at FROM subscriptions WHERE user_id = ? AND guid = ?")
      .bind("delete-tombstone", feed.guid)
      .first<{ feed_url: string; unsubscribed_at: number | null }>();
    expect(row?.feed_url).toBe(feed.feedUrl);
    expect(typeof row?.unsubscribed_at).toBe("number");
  });

  it("answers 404 for a guid never subscribed and 400 for an invalid one", async () => {
    const user = await as("delete-missing");
    expect((await user.delete(`/v1/subscriptions/${crypto.randomUUID()}`)).status).toBe(404);
    const invalid = await user.delete("/v1/subscriptions/nope");
    expect(invalid.status).toBe(400);
    expect(((await invalid.json()) as ErrorDocument).errors[0]).toMatchObject(INVALID_GUID);
  });
});

describe("tenancy", () => {
  it("another user's subscription is 404 for read and delete, and stays in place", async () => {
    const bob = await as("tenant-bob");
    const alice = await as("tenant-alice");
    const feed = newFeed();
    await bob.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const read = await alice.get(`/v1/subscriptions/${feed.guid}`);
    expect(read.status).toBe(404);
    expect(((await read.json()) as ErrorDocument).errors).toEqual([NOT_FOUND]);
    expect((await alice.delete(`/v1/subscriptions/${feed.guid}`)).status).toBe(404);
    expect((await bob.get(`/v1/subscriptions/${feed.guid}`)).status).toBe(200);
    const aliceList = (await (await alice.get("/v1/subscriptions")).json()) as { meta: { total: number } };
    expect(aliceList.meta.total).toBe(0);
  });

  it("the same guid for two users is two subscriptions", async () => {
    const bob = await as("tenant2-bob");
    const alice = await as("tenant2-alice");
    const guid = crypto.randomUUID();
    expect((await bob.post("/v1/subscriptions", subscriptionDocument(guid, "https://bob.example/f"))).status).toBe(201);
    expect((await alice.post("/v1/subscriptions", subscriptionDocument(guid, "https://alice.example/f"))).status).toBe(
      201,
    );
    expect((await alice.delete(`/v1/subscriptions/${guid}`)).status).toBe(204);
    const bobs = (await (await bob.get(`/v1/subscriptions/${guid}`)).json()) as {
      data: { attributes: { feedUrl: string } };
    };
    expect(bobs.data.attributes.feedUrl).toBe("https://bob.example/f");
  });

  it("nothing but the token selects the user (query, headers and body are ignored)", async () => {
    const bob = await as("tenant3-bob");
    const alice = await as("tenant3-alice");
    const feed = newFeed();
    await bob.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const response = await alice.get("/v1/subscriptions?userId=tenant3-bob", {
      "X-User-Id": "tenant3-bob",
    });
    expect(((await response.json()) as { meta: { total: number } }).meta.total).toBe(0);
    const sneaky = await alice.post("/v1/subscriptions", {
      ...subscriptionDocument(feed.guid, feed.feedUrl),
      meta: { userId: "tenant3-bob" },
    });
    expect(sneaky.status).toBe(201);
  });
});
