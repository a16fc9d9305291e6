import { describe, expect, it } from "vitest";
import { addOperation, as, type Caller, countedDatabaseOf, newFeed, subscriptionDocument } from "./helpers";

/** A user whose requests go through a D1 binding that counts calls. */
async function countedUser(userId: string) {
  const counter = await countedDatabaseOf(userId);
  const user = await as(userId, counter.bindings);
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

  it("makes no call when every bulk operation is invalid", async () => {
    const { measure } = await countedUser("trips-bulk-invalid");
    const operations = [{ op: "remove" }, { op: "add", data: { type: "podcast" } }, 7];
    expect(await measure((u) => u.operations({ "atomic:operations": operations }))).toEqual({ status: 200, calls: 0 });
  });
});
