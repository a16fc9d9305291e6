import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { addOperation, applyChanges, as, listAll, subscriptionDocument, syncFrom } from "./helpers";
import { propertyOptions, propertyTimeout } from "./property-options";

/** Fixed so that CI runs are reproducible; fast-check prints the seed and path of a failure. */
const SEED = 20261123;

type Op =
  | { op: "add"; feed: number; url: number }
  | { op: "update"; feed: number; url: number }
  | { op: "remove"; feed: number };

const FEEDS = Array.from({ length: 6 }, (_, i) => `${i}0000000-0000-4000-8000-00000000000${i}`);
const url = (feed: number, n: number) => `https://feeds.example.com/${feed}/${n}.xml`;

function toOperation(op: Op) {
  const guid = FEEDS[op.feed];
  if (op.op === "add") return addOperation(guid, url(op.feed, op.url));
  if (op.op === "update") {
    return { op: "update", data: { type: "subscription", id: guid, attributes: { feedUrl: url(op.feed, op.url) } } };
  }
  return { op: "remove", ref: { type: "subscription", id: guid } };
}

/** The serial model of docs/API.md §5, 9 and 10: guid -> feedUrl of the active subscriptions. */
function applyToModel(model: Map<string, string>, op: Op) {
  const guid = FEEDS[op.feed];
  if (op.op === "add" && !model.has(guid)) model.set(guid, url(op.feed, op.url));
  if (op.op === "update" && model.has(guid)) model.set(guid, url(op.feed, op.url));
  if (op.op === "remove") model.delete(guid);
}

const operation: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("add" as const), feed: fc.nat(FEEDS.length - 1), url: fc.nat(3) }),
  fc.record({ op: fc.constant("update" as const), feed: fc.nat(FEEDS.length - 1), url: fc.nat(3) }),
  fc.record({ op: fc.constant("remove" as const), feed: fc.nat(FEEDS.length - 1) }),
);

/** A step of device A: a bulk request; or device B syncing from its stored token in between. */
const step = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.array(operation, { minLength: 1, maxLength: 6 }).map((ops) => ({ kind: "bulk" as const, ops })),
  },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }).map((size) => ({ kind: "sync" as const, size })) },
);

let run = 0;
const RUNS = propertyOptions(SEED, 80);

describe("two devices of one user stay in step through the change feed", () => {
  it(
    `device B, syncing from its stored token at any moment, ends with exactly device A's list (${RUNS.numRuns} random runs)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
          const userId = `devices-${run++}`;
          const a = await as(userId);
          const b = await as(userId);
          const model = new Map<string, string>();
          const local = new Map<string, string>();
          let token = "0";
          for (const current of steps) {
            if (current.kind === "bulk") {
              const response = await a.operations({ "atomic:operations": current.ops.map(toOperation) });
              expect(response.status).toBe(200);
              for (const op of current.ops) applyToModel(model, op);
            } else {
              const synced = await syncFrom(b, token, current.size);
              applyChanges(local, synced.items);
              token = synced.token;
            }
          }
          const synced = await syncFrom(b, token, 3);
          applyChanges(local, synced.items);
          expect(local).toEqual(model);
          expect(await listAll(a)).toEqual(model);
          // A device starting from scratch learns the same.
          expect(applyChanges(new Map(), (await syncFrom(b, "0", 100)).items)).toEqual(model);
        }),
        RUNS,
      );
    },
    propertyTimeout(600_000),
  );
});

describe("change numbers under concurrency", () => {
  it("50 concurrent mixed writes of one user: numbers never repeat or skip, and sync, list and a serial model agree", async () => {
    const userId = "sync-concurrent";
    const user = await as(userId);
    const reader = await as(userId);
    const pool = Array.from({ length: 12 }, () => crypto.randomUUID());
    // Every guid starts subscribed, so each kind of write has something to act on.
    await user.operations({
      "atomic:operations": pool.map((guid) => addOperation(guid, `https://start.example/${guid}`)),
    });
    const start = await syncFrom(user, "0", 100);
    expect(start.token).toBe(String(pool.length));

    /** Each write reports how many changes it made (201, 204, a moved 200, bulk results). */
    const writes: (() => Promise<number>)[] = [];
    for (let i = 0; i < 50; i++) {
      const guid = pool[(i * 5) % pool.length];
      const other = pool[(i * 7 + 1) % pool.length];
      switch (i % 5) {
        case 0:
          writes.push(async () =>
            (await user.post("/v1/subscriptions", subscriptionDocument(guid, `https://add.example/${i}`))).status ===
            201
              ? 1
              : 0,
          );
          break;
        case 1:
          writes.push(async () => ((await user.delete(`/v1/subscriptions/${guid}`)).status === 204 ? 1 : 0));
          break;
        case 2:
          // A URL no other write uses: a 200 is always a real move.
          writes.push(async () =>
            (await user.patch(`/v1/subscriptions/${guid}`, subscriptionDocument(guid, `https://moved.example/${i}`)))
              .status === 200
              ? 1
              : 0,
          );
          break;
        default: {
          const operations = [
            addOperation(guid, `https://bulk.example/${i}`),
            {
              op: "update",
              data: { type: "subscription", id: other, attributes: { feedUrl: `https://bulk-moved.example/${i}` } },
            },
            { op: "remove", ref: { type: "subscription", id: i % 2 ? guid : other } },
          ];
          writes.push(async () => {
            const body = (await (await user.operations({ "atomic:operations": operations })).json()) as {
              meta: { succeeded: number };
            };
            return body.meta.succeeded;
          });
        }
      }
    }
    // A third device syncs repeatedly while the writes run: it must never skip a change.
    let token = start.token;
    const local = applyChanges(new Map(), start.items);
    let writing = true;
    const syncing = (async () => {
      while (writing) {
        const synced = await syncFrom(reader, token, 2);
        applyChanges(local, synced.items);
        token = synced.token;
      }
    })();
    const changes = (await Promise.all(writes.map((write) => write()))).reduce((sum, n) => sum + n, 0);
    writing = false;
    await syncing;
    const rest = await syncFrom(reader, token, 7);
    applyChanges(local, rest.items);

    // Each real change took exactly the next number: the latest is the count of changes.
    const full = await syncFrom(user, "0", 5);
    expect(Number(full.token)).toBe(pool.length + changes);
    expect(rest.token).toBe(full.token);
    // Sync from 0 reports each subscription once, in strictly increasing change order.
    expect(new Set(full.items.map((item) => item.id)).size).toBe(full.items.length);
    const state = applyChanges(new Map(), full.items);
    const list = await listAll(user);
    expect(state).toEqual(list);
    expect(local).toEqual(list);
    for (const guid of list.keys()) expect(pool).toContain(guid);
  }, 60_000);
});
