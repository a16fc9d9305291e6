import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { addOperation, as, type Caller, countingD1, newFeed, subscriptionDocument } from "./helpers";

/** A user whose requests go through a D1 binding that counts calls. */
async function countedUser(userId: string) {
  const counter = countingD1(env.DB);
  const user = await as(userId, { DB: counter.binding });
  /** Runs one request and returns its status and how many D1 calls it made. */
  const measure = async (request: (user: Caller) => Promise<Response>) => {
    counter.reset();
    const response = await request(user);
    return { status: response.status, calls: counter.calls() };
  };
  return { user, measure };
}

describe("one D1 round trip per request", () => {
  it("holds for every single-resource endpoint and outcome", async () => {
    const { measure } = await countedUser("trips");
    const feed = newFeed();
    const document = subscriptionDocument(feed.guid, feed.feedUrl);
    const path = `/v1/subscriptions/${feed.guid}`;

    expect(await measure((u) => u.post("/v1/subscriptions", document))).toEqual({ status: 201, calls: 1 });
    expect(await measure((u) => u.post("/v1/subscriptions", document))).toEqual({ status: 200, calls: 1 });
    expect(await measure((u) => u.get("/v1/subscriptions"))).toEqual({ status: 200, calls: 1 });
    expect(await measure((u) => u.get("/v1/subscriptions?page[number]=7"))).toEqual({ status: 200, calls: 1 });
    expect(await measure((u) => u.get(path))).toEqual({ status: 200, calls: 1 });
    expect(await measure((u) => u.delete(path))).toEqual({ status: 204, calls: 1 });
    expect(await measure((u) => u.get(path))).toEqual({ status: 404, calls: 1 });
    expect(await measure((u) => u.delete(path))).toEqual({ status: 404, calls: 1 });
    expect(await measure((u) => u.post("/v1/subscriptions", document))).toEqual({ status: 201, calls: 1 });
  });

  it("makes no call for requests refused before the database", async () => {
    const { measure } = await countedUser("trips-refused");
    expect(await measure((u) => u.get("/v1/subscriptions/nope"))).toEqual({ status: 400, calls: 0 });
    expect(await measure((u) => u.get("/v1/subscriptions?page[size]=500"))).toEqual({ status: 400, calls: 0 });
    expect(await measure((u) => u.post("/v1/subscriptions", { data: {} }))).toEqual({ status: 400, calls: 0 });
    expect(await measure((u) => u.post("/v1/subscriptions", "{"))).toEqual({ status: 400, calls: 0 });
  });

  for (const count of [1, 10, 100]) {
    it(`sends ${count} bulk add(s) as one call`, async () => {
      const { measure } = await countedUser(`trips-bulk-${count}`);
      const operations = Array.from({ length: count }, () => {
        const feed = newFeed();
        return addOperation(feed.guid, feed.feedUrl);
      });
      expect(await measure((u) => u.operations({ "atomic:operations": operations }))).toEqual({
        status: 200,
        calls: 1,
      });
    });
  }

  it("sends a mix of 100 adds, updates and removes (and one with every kind of outcome) as one call", async () => {
    const { user, measure } = await countedUser("trips-bulk-mix");
    const existing = Array.from({ length: 40 }, () => newFeed());
    await user.operations({ "atomic:operations": existing.map((feed) => addOperation(feed.guid, feed.feedUrl)) });
    const operations = Array.from({ length: 100 }, (_, i) => {
      const feed = existing[i % existing.length];
      switch (i % 5) {
        case 0:
          return addOperation(crypto.randomUUID(), `https://mix.example/${i}`);
        case 1:
          return addOperation(feed.guid, feed.feedUrl); // already subscribed, or revived after a remove
        case 2:
          return {
            op: "update",
            data: { type: "subscription", id: feed.guid, attributes: { feedUrl: `https://moved.example/${i}` } },
          };
        case 3:
          return { op: "remove", ref: { type: "subscription", id: feed.guid } };
        default:
          return { op: "remove", ref: { type: "subscription", id: crypto.randomUUID() } }; // not found
      }
    });
    const result = await measure((u) => u.operations({ "atomic:operations": operations }));
    expect(result).toEqual({ status: 200, calls: 1 });
  });

  it("makes one call for a PATCH and for a page of the change feed", async () => {
    const { user, measure } = await countedUser("trips-sync");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const path = `/v1/subscriptions/${feed.guid}`;
    expect(await measure((u) => u.patch(path, subscriptionDocument(feed.guid, "https://m.example/")))).toEqual({
      status: 200,
      calls: 1,
    });
    expect(
      await measure((u) =>
        u.patch(`/v1/subscriptions/${crypto.randomUUID()}`, { data: { type: "subscription", id: "x" } }),
      ),
    ).toEqual({ status: 400, calls: 0 });
    expect(await measure((u) => u.get("/v1/subscriptions?filter[since]=0"))).toEqual({ status: 200, calls: 1 });
    expect(await measure((u) => u.get("/v1/subscriptions?filter[since]=x"))).toEqual({ status: 400, calls: 0 });
  });

  it("makes no call when every bulk operation is invalid", async () => {
    const { measure } = await countedUser("trips-bulk-invalid");
    const operations = [{ op: "remove" }, { op: "add", data: { type: "podcast" } }, 7, { op: "update", data: {} }];
    expect(await measure((u) => u.operations({ "atomic:operations": operations }))).toEqual({ status: 200, calls: 0 });
  });
});
