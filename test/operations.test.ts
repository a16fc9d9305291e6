import { describe, expect, it } from "vitest";
import {
  ATOMIC,
  addOperation,
  as,
  databaseFor,
  failingD1,
  INJECTED_FAILURE,
  JSONAPI,
  newFeed,
  ORIGIN,
  podcastRelationships,
  send,
  subscriptionDocument,
  tokenFor,
  wrapDatabaseOf,
} from "./helpers";

type ErrorObject = {
  status: string;
  title: string;
  detail: string;
  source?: { pointer?: string };
  meta?: Record<string, unknown>;
};
type Resource = { type: string; id: string; attributes: { feedUrl: string; userSubscribedAt: string } };
type Result = { data?: Resource; errors?: ErrorObject[] };
type BulkDocument = {
  jsonapi: { version: string; ext: string[] };
  "atomic:results": Result[];
  meta: { succeeded: number; failed: number };
  errors?: ErrorObject[];
};

const LINK_METHOD = `${ORIGIN}/ext/link-method`;

function adds(count: number) {
  return Array.from({ length: count }, () => {
    const feed = newFeed();
    return addOperation(feed.guid, feed.feedUrl);
  });
}

async function activeCount(userId: string): Promise<number> {
  const row = await (await databaseFor(userId))
    .prepare("SELECT count(*) AS n FROM subscriptions WHERE user_id = ? AND unsubscribed_at IS NULL")
    .bind(userId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

describe("POST /v1/operations", () => {
  it("adds 100 subscriptions in one request, results in order, with the summary and both extension URIs", async () => {
    const user = await as("bulk-100");
    const operations = adds(100);
    const response = await user.operations({ "atomic:operations": operations });
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe(`${JSONAPI};ext="${ATOMIC}"`);
    const body = (await response.json()) as BulkDocument;
    expect(body.jsonapi).toEqual({ version: "1.1", ext: [ATOMIC, LINK_METHOD] });
    expect(body.meta).toEqual({ succeeded: 100, failed: 0 });
    expect(body["atomic:results"]).toHaveLength(100);
    body["atomic:results"].forEach((result, index) => {
      const { id, attributes } = operations[index].data;
      expect(result).toEqual({
        data: {
          type: "subscription",
          id,
          attributes: { feedUrl: attributes.feedUrl, userSubscribedAt: expect.stringMatching(/\.\d{3}Z$/) },
          relationships: podcastRelationships(id),
          links: { self: `/v1/subscriptions/${id}` },
        },
      });
    });
    expect(await activeCount("bulk-100")).toBe(100);
  });

  it("reports each kind of failure inline, in order, and stores the valid operations", async () => {
    const user = await as("bulk-mixed");
    const existing = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(existing.guid, existing.feedUrl));
    const fresh = [newFeed(), newFeed(), newFeed()];
    const operations = [
      addOperation(fresh[0].guid, fresh[0].feedUrl), // 0 ok
      "add", // 1 not an object
      { data: addOperation(fresh[1].guid, fresh[1].feedUrl).data }, // 2 no op
      { op: 5 }, // 3 op not a string
      { op: "update", data: { type: "subscription", id: existing.guid } }, // 4 update without feedUrl
      { op: "remove", ref: { type: "subscription", id: fresh[2].guid } }, // 5 remove of a feed not subscribed (yet)
      { op: "replace" }, // 6 unknown op
      { op: "add" }, // 7 no data
      { op: "add", data: { ...addOperation(fresh[1].guid, fresh[1].feedUrl).data, type: "podcast" } }, // 8 type mismatch
      { op: "add", data: { ...addOperation(fresh[1].guid, fresh[1].feedUrl).data, id: "nope" } }, // 9 bad id
      { op: "add", data: { type: "subscription", id: fresh[1].guid, attributes: { feedUrl: "ftp://x" } } }, // 10 bad url
      addOperation(existing.guid, "https://changed.example/feed"), // 11 already subscribed (before)
      addOperation(fresh[1].guid, fresh[1].feedUrl), // 12 ok
      addOperation(fresh[1].guid.toUpperCase(), "https://again.example/f"), // 13 already subscribed (same request)
      addOperation(fresh[2].guid, fresh[2].feedUrl), // 14 ok
    ];
    const response = await user.operations({ "atomic:operations": operations });
    expect(response.status).toBe(200);
    const body = (await response.json()) as BulkDocument;
    const results = body["atomic:results"];
    expect(results).toHaveLength(operations.length);
    const summary = results.map((result) =>
      result.data ? "ok" : `${result.errors?.[0].status} ${result.errors?.[0].source?.pointer}`,
    );
    expect(summary).toEqual([
      "ok",
      "400 /atomic:operations/1",
      "400 /atomic:operations/2",
      "400 /atomic:operations/3",
      "422 /atomic:operations/4/data",
      "404 /atomic:operations/5",
      "400 /atomic:operations/6/op",
      "400 /atomic:operations/7",
      "409 /atomic:operations/8/data/type",
      "400 /atomic:operations/9/data/id",
      "422 /atomic:operations/10/data/attributes/feedUrl",
      "409 /atomic:operations/11",
      "ok",
      "409 /atomic:operations/13",
      "ok",
    ]);
    expect(results[4].errors?.[0].title).toBe("Invalid attribute");
    expect(results[5].errors?.[0].title).toBe("Subscription not found");
    expect(results[9].errors?.[0].title).toBe("Invalid resource identifier");
    expect(results[11].errors).toEqual([
      {
        status: "409",
        title: "Already Subscribed",
        detail: "User is already subscribed to this feed.",
        source: { pointer: "/atomic:operations/11" },
        meta: { feedUrl: "https://changed.example/feed", guid: existing.guid },
      },
    ]);
    expect(results[13].errors?.[0].meta).toEqual({ feedUrl: "https://again.example/f", guid: fresh[1].guid });
    expect(body.meta).toEqual({ succeeded: 3, failed: 12 });
    expect(await activeCount("bulk-mixed")).toBe(4);
    const kept = (await (await user.get(`/v1/subscriptions/${existing.guid}`)).json()) as Result;
    expect(kept.data?.attributes.feedUrl).toBe(existing.feedUrl);
  });

  it("revives an unsubscribed feed as a new subscription", async () => {
    const user = await as("bulk-revive");
    const feed = newFeed();
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    await user.delete(`/v1/subscriptions/${feed.guid}`);
    const response = await user.operations({
      "atomic:operations": [addOperation(feed.guid, "https://moved.example/f")],
    });
    const body = (await response.json()) as BulkDocument;
    expect(body.meta).toEqual({ succeeded: 1, failed: 0 });
    expect(body["atomic:results"][0].data?.attributes.feedUrl).toBe("https://moved.example/f");
    expect(await activeCount("bulk-revive")).toBe(1);
  });

  it("answers every operation with 409 when all are duplicates, still 200", async () => {
    const user = await as("bulk-dupes");
    const feed = newFeed();
    const operations = [addOperation(feed.guid, feed.feedUrl), addOperation(feed.guid, feed.feedUrl)];
    await user.operations({ "atomic:operations": operations });
    const response = await user.operations({ "atomic:operations": operations });
    expect(response.status).toBe(200);
    const body = (await response.json()) as BulkDocument;
    expect(body.meta).toEqual({ succeeded: 0, failed: 2 });
  });

  const requestLevel: [string, string, number, string | undefined][] = [
    ["malformed JSON", "{", 400, undefined],
    ["a JSON array", "[]", 400, ""],
    ["no atomic:operations", "{}", 400, ""],
    ["atomic:operations not an array", '{"atomic:operations":{"op":"add"}}', 400, "/atomic:operations"],
    ["an empty atomic:operations", '{"atomic:operations":[]}', 400, "/atomic:operations"],
  ];
  for (const [name, body, status, pointer] of requestLevel) {
    it(`answers ${status} with a top-level error and no results for ${name}`, async () => {
      const user = await as("bulk-request-level");
      const response = await user.operations(body);
      expect(response.status).toBe(status);
      const document = (await response.json()) as BulkDocument;
      expect(document["atomic:results"]).toBeUndefined();
      expect(document.errors).toHaveLength(1);
      expect(document.errors?.[0].status).toBe(String(status));
      expect(document.errors?.[0].source?.pointer).toBe(pointer);
    });
  }

  it("answers 413 Too many operations for 101 operations, and stores none", async () => {
    const user = await as("bulk-too-many");
    const response = await user.operations({ "atomic:operations": adds(101) });
    expect(response.status).toBe(413);
    const document = (await response.json()) as BulkDocument;
    expect(document["atomic:results"]).toBeUndefined();
    expect(document.errors?.[0]).toMatchObject({
      status: "413",
      title: "Too many operations",
      meta: { maxOperations: 100 },
    });
    expect(await activeCount("bulk-too-many")).toBe(0);
  });

  it("answers 503 and writes nothing when D1 fails during the batch; the retry succeeds", async () => {
    const operations = adds(10);
    const broken = await as("bulk-fault", await wrapDatabaseOf("bulk-fault", (real) => failingD1(real, 1)));
    const failed = await broken.operations({ "atomic:operations": operations });
    expect(failed.status).toBe(503);
    const document = (await failed.json()) as BulkDocument;
    expect(document.errors?.[0].status).toBe("503");
    expect(document["atomic:results"]).toBeUndefined();
    expect(await activeCount("bulk-fault")).toBe(0);
    const retried = await (await as("bulk-fault")).operations({ "atomic:operations": operations });
    expect(((await retried.json()) as BulkDocument).meta).toEqual({ succeeded: 10, failed: 0 });
  });

  it("rolls the whole batch back when one statement fails inside D1", async () => {
    // A statement that D1 rejects mid-batch (a CHECK-like failure forced with a trigger) must undo the others.
    const db = await databaseFor("bulk-rollback");
    await db.exec(
      `CREATE TRIGGER refuse_marker BEFORE INSERT ON subscriptions WHEN NEW.feed_url = 'https://refuse.example/' BEGIN SELECT RAISE(ABORT, 'refused ${INJECTED_FAILURE}'); END;`,
    );
    const user = await as("bulk-rollback");
    const operations = [...adds(3), addOperation(crypto.randomUUID(), "https://refuse.example/"), ...adds(3)];
    const response = await user.operations({ "atomic:operations": operations });
    expect(response.status).toBe(503);
    expect(await activeCount("bulk-rollback")).toBe(0);
    await db.exec("DROP TRIGGER refuse_marker;");
  });

  it("is scoped to the token's user", async () => {
    const token = await tokenFor("bulk-owner");
    const feed = newFeed();
    await send(
      new Request(`${ORIGIN}/v1/operations`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${token}`,
          "Content-Type": `${JSONAPI};ext="${ATOMIC}"`,
          Accept: `${JSONAPI};ext="${ATOMIC}"`,
        },
        body: JSON.stringify({ "atomic:operations": [addOperation(feed.guid, feed.feedUrl)] }),
      }),
    );
    expect(await activeCount("bulk-owner")).toBe(1);
    expect((await (await as("bulk-other")).get(`/v1/subscriptions/${feed.guid}`)).status).toBe(404);
  });
});
