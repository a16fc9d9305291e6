import { describe, expect, it } from "vitest";
import {
  addOperation,
  as,
  type Caller,
  failingD1,
  INJECTED_FAILURE,
  listAll,
  newFeed,
  podcastRelationships,
  syncFrom,
  wrapDatabaseOf,
} from "./helpers";

type ErrorObject = { status: string; title: string; detail: string; source?: { pointer?: string } };
type Result = { data?: { id: string; attributes: { feedUrl: string }; links?: unknown }; errors?: ErrorObject[] };
type BulkDocument = { "atomic:results": Result[]; meta: { succeeded: number; failed: number } };

const update = (guid: string, feedUrl: string, extra: Record<string, unknown> = {}) => ({
  op: "update",
  data: { type: "subscription", id: guid, attributes: { feedUrl } },
  ...extra,
});
const remove = (guid: string) => ({ op: "remove", ref: { type: "subscription", id: guid } });

async function bulk(user: Caller, operations: unknown[]) {
  const response = await user.operations({ "atomic:operations": operations });
  expect(response.status).toBe(200);
  return (await response.json()) as BulkDocument;
}

/** A result as `status pointer`, or `ok` / `{}` for a success. */
const summary = (result: Result) =>
  result.errors
    ? `${result.errors[0].status} ${result.errors[0].source?.pointer}`
    : result.data
      ? "ok"
      : JSON.stringify(result);

describe("bulk update and remove (docs/API.md §10)", () => {
  it("updates move feeds and answer {data} with links.self; removes answer {}; both count in meta", async () => {
    const user = await as("bulk-ur");
    const [a, b, c] = [newFeed(), newFeed(), newFeed()];
    await bulk(
      user,
      [a, b, c].map((feed) => addOperation(feed.guid, feed.feedUrl)),
    );
    const { token } = await syncFrom(user, "0");
    const body = await bulk(user, [
      update(a.guid, "https://moved.example/a"),
      remove(b.guid),
      update(c.guid, c.feedUrl),
    ]);
    expect(body["atomic:results"][0]).toEqual({
      data: {
        type: "subscription",
        id: a.guid,
        attributes: { feedUrl: "https://moved.example/a", userSubscribedAt: expect.any(String) },
        relationships: podcastRelationships(a.guid),
        links: { self: `/v1/subscriptions/${a.guid}` },
      },
    });
    expect(body["atomic:results"][1]).toEqual({});
    // The same URL is a success that changes nothing.
    expect(body["atomic:results"][2].data?.attributes.feedUrl).toBe(c.feedUrl);
    expect(body.meta).toEqual({ succeeded: 3, failed: 0 });
    expect(await listAll(user)).toEqual(
      new Map([
        [a.guid, "https://moved.example/a"],
        [c.guid, c.feedUrl],
      ]),
    );
    const changes = await syncFrom(user, token);
    expect(changes.items.map((item) => [item.id, item.attributes.userUnsubscribedAt === null])).toEqual([
      [a.guid, true],
      [b.guid, false],
    ]);
  });

  it("applies operations in order: add then remove leaves it removed; remove then add revives it", async () => {
    const user = await as("bulk-order");
    const [x, y] = [newFeed(), newFeed()];
    await bulk(user, [addOperation(y.guid, y.feedUrl)]);
    const body = await bulk(user, [
      addOperation(x.guid, x.feedUrl),
      remove(x.guid),
      remove(y.guid),
      addOperation(y.guid, "https://revived.example/y"),
      update(y.guid, "https://moved.example/y"),
      remove(x.guid),
      update(x.guid, "https://moved.example/x"),
    ]);
    expect(body["atomic:results"].map(summary)).toEqual([
      "ok",
      "{}",
      "{}",
      "ok",
      "ok",
      "404 /atomic:operations/5",
      "404 /atomic:operations/6",
    ]);
    expect(body.meta).toEqual({ succeeded: 5, failed: 2 });
    expect(await listAll(user)).toEqual(new Map([[y.guid, "https://moved.example/y"]]));
  });

  it("answers 404 Subscription not found inline for a guid never subscribed, a tombstone, or another user's", async () => {
    const user = await as("bulk-404");
    const other = await as("bulk-404-other");
    const [mine, theirs] = [newFeed(), newFeed()];
    await bulk(user, [addOperation(mine.guid, mine.feedUrl), remove(mine.guid)]);
    await bulk(other, [addOperation(theirs.guid, theirs.feedUrl)]);
    const never = crypto.randomUUID();
    const body = await bulk(user, [
      update(never, "https://a.example/"),
      remove(never),
      update(mine.guid, "https://a.example/"),
      remove(mine.guid),
      update(theirs.guid, "https://a.example/"),
      remove(theirs.guid),
    ]);
    for (const [index, result] of body["atomic:results"].entries()) {
      expect(result.errors).toEqual([
        {
          status: "404",
          title: "Subscription not found",
          detail: "The requested subscription does not exist for the user.",
          source: { pointer: `/atomic:operations/${index}` },
        },
      ]);
    }
    expect(await listAll(other)).toEqual(new Map([[theirs.guid, theirs.feedUrl]]));
  });

  it("validates update like PATCH (feedUrl required) and its ref after data, with pointers under the operation", async () => {
    const user = await as("bulk-update-invalid");
    const feed = newFeed();
    await bulk(user, [addOperation(feed.guid, feed.feedUrl)]);
    const g = feed.guid;
    const body = await bulk(user, [
      { op: "update" },
      { op: "update", data: { id: g, attributes: { feedUrl: "https://a.example/" } } },
      { op: "update", data: { type: "podcast", id: g } },
      { op: "update", data: { type: "subscription", id: "x" } },
      { op: "update", data: { type: "subscription", id: g } },
      { op: "update", data: { type: "subscription", id: g, attributes: {} } },
      { op: "update", data: { type: "subscription", id: g, attributes: { feedUrl: null } } },
      { op: "update", data: { type: "subscription", id: g, attributes: { feedUrl: "mailto:a@b" } } },
      update(g, "https://a.example/", { ref: { type: "subscription", id: crypto.randomUUID() } }),
      update(g, "https://a.example/", { ref: { type: "podcast", id: g } }),
      update(g, "ftp://bad", { ref: { type: "subscription", id: crypto.randomUUID() } }),
      update(g, "https://ok.example/", { ref: { type: "subscription", id: g.toUpperCase() } }),
    ]);
    expect(body["atomic:results"].map(summary)).toEqual([
      "400 /atomic:operations/0",
      "400 /atomic:operations/1/data",
      "409 /atomic:operations/2/data/type",
      "400 /atomic:operations/3/data/id",
      "422 /atomic:operations/4/data",
      "422 /atomic:operations/5/data/attributes",
      "422 /atomic:operations/6/data/attributes/feedUrl",
      "422 /atomic:operations/7/data/attributes/feedUrl",
      "400 /atomic:operations/8/ref",
      "400 /atomic:operations/9/ref",
      "422 /atomic:operations/10/data/attributes/feedUrl",
      "ok",
    ]);
    expect(body["atomic:results"][3].errors?.[0].title).toBe("Invalid resource identifier");
    expect(await listAll(user)).toEqual(new Map([[g, "https://ok.example/"]]));
  });

  it("validates remove in the contract's order with its pointers", async () => {
    const user = await as("bulk-remove-invalid");
    const feed = newFeed();
    await bulk(user, [addOperation(feed.guid, feed.feedUrl)]);
    const body = await bulk(user, [
      { op: "remove", href: `/v1/subscriptions/${feed.guid}`, ref: { type: "subscription", id: feed.guid } },
      { op: "remove" },
      { op: "remove", ref: [feed.guid] },
      { op: "remove", ref: "x" },
      { op: "remove", ref: { id: feed.guid } },
      { op: "remove", ref: { type: "podcast", id: feed.guid } },
      { op: "remove", ref: { type: "subscription" } },
      { op: "remove", ref: { type: "subscription", id: "not-a-uuid" } },
    ]);
    expect(body["atomic:results"].map(summary)).toEqual([
      "400 /atomic:operations/0/href",
      "400 /atomic:operations/1",
      "400 /atomic:operations/2",
      "400 /atomic:operations/3",
      "400 /atomic:operations/4/ref",
      "409 /atomic:operations/5/ref/type",
      "400 /atomic:operations/6/ref/id",
      "400 /atomic:operations/7/ref/id",
    ]);
    expect(body["atomic:results"][6].errors?.[0].title).toBe("Invalid resource identifier");
    expect(body["atomic:results"][7].errors?.[0].title).toBe("Invalid resource identifier");
    expect(body.meta).toEqual({ succeeded: 0, failed: 8 });
    expect(await listAll(user)).toEqual(new Map([[feed.guid, feed.feedUrl]]));
  });

  it("answers 503 and changes nothing when D1 fails during a mixed batch", async () => {
    const user = await as("bulk-ur-fail");
    const [a, b] = [newFeed(), newFeed()];
    await bulk(user, [addOperation(a.guid, a.feedUrl), addOperation(b.guid, b.feedUrl)]);
    const before = await listAll(user);
    const failing = await as("bulk-ur-fail", await wrapDatabaseOf("bulk-ur-fail", (real) => failingD1(real, 1)));
    const response = await failing.operations({
      "atomic:operations": [
        update(a.guid, "https://moved.example/"),
        remove(b.guid),
        addOperation(crypto.randomUUID(), "https://c.example/"),
      ],
    });
    expect(response.status).toBe(503);
    expect(await listAll(user)).toEqual(before);
  });

  it("rolls a mixed batch back whole when a statement fails inside D1", async () => {
    const user = await as("bulk-ur-rollback");
    const [a, b] = [newFeed(), newFeed()];
    await bulk(user, [addOperation(a.guid, a.feedUrl), addOperation(b.guid, b.feedUrl)]);
    const before = await listAll(user);
    const { token } = await syncFrom(user, "0");
    // A statement that fails inside D1 after the others ran: the batch is one transaction.
    const breaking = (real: D1Database) =>
      new Proxy(real, {
        get(target, property) {
          if (property === "withSession") {
            return () => {
              const session = target.withSession("first-primary");
              return new Proxy(session, {
                get(s, p) {
                  if (p === "batch") {
                    return (statements: D1PreparedStatement[]) =>
                      s.batch([...statements, s.prepare(`INSERT INTO "${INJECTED_FAILURE}" VALUES (1)`)]);
                  }
                  const value = Reflect.get(s, p, s);
                  return typeof value === "function" ? value.bind(s) : value;
                },
              });
            };
          }
          const value = Reflect.get(target, property, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    const failing = await as("bulk-ur-rollback", await wrapDatabaseOf("bulk-ur-rollback", breaking));
    const response = await failing.operations({
      "atomic:operations": [update(a.guid, "https://moved.example/"), remove(b.guid)],
    });
    expect(response.status).toBe(503);
    expect(await listAll(user)).toEqual(before);
    expect((await syncFrom(user, token)).items).toEqual([]);
  });
});
