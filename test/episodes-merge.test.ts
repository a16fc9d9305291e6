import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { as, type Caller, databaseFor } from "./helpers";
import { propertyOptions, propertyTimeout } from "./property-options";

/**
 * docs/API.md §13's merge, proven over random histories: three devices change the listening state of a few
 * episodes with random device times (ties, retries, reordering, late offline uploads), through single
 * requests and bulk; the server's state must be the per-field latest change, and a device following the
 * episode change feed from any token it was handed must end in exactly the server's state; a delivery that
 * changes nothing takes no change number.
 */

/** Fixed so that CI runs are reproducible; fast-check prints the seed and path of a failure. */
const SEED = 20261124;
const FEED = "9b024349-ccf0-5f69-a609-6b82873eab3c";
const EPISODES = Array.from({ length: 3 }, (_, i) => `e${i}000000-0000-4000-8000-00000000000${i}`);
const BASE = Date.UTC(2026, 5, 1);

/** One change a device made: to position, played or both, at a device time; or forgetting the episode. */
type Change =
  | { kind: "listen"; episode: number; position?: number; played?: boolean; duration?: number; at: number }
  | { kind: "forget"; episode: number };

/** How a change reaches the server: as POST, PATCH (which cannot create) or inside a bulk request. */
type Route = "post" | "patch" | "bulk";

type State = {
  position: number;
  positionAt: number | null;
  played: boolean;
  playedAt: number | null;
  duration: number | null;
};

const change: fc.Arbitrary<Change> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .record({
        episode: fc.nat(EPISODES.length - 1),
        position: fc.option(fc.nat(5000), { nil: undefined }),
        played: fc.option(fc.boolean(), { nil: undefined }),
        duration: fc.option(fc.integer({ min: 1, max: 9000 }), { nil: undefined }),
        // A handful of device times: ties between devices are common, as retries are.
        at: fc.nat(6).map((second) => BASE + second * 1000),
      })
      .map((listen) => ({ kind: "listen" as const, ...listen })),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("forget" as const), episode: fc.nat(EPISODES.length - 1) }) },
);

/** A delivery: which device's change, by which route; `retry` sends it twice (a lost response). */
const delivery = fc.record({
  change,
  route: fc.constantFrom<Route>("post", "patch", "bulk"),
  retry: fc.boolean(),
  // A device that follows the feed looks in after this delivery.
  look: fc.boolean(),
});

/** The serial model: what the contract says the state is after each delivery, in arrival order. */
function applyToModel(model: Map<number, State>, item: Change, route: Route) {
  if (item.kind === "forget") {
    model.delete(item.episode);
    return;
  }
  const current = model.get(item.episode);
  if (!current) {
    if (route === "patch") return; // PATCH never creates: 404
    model.set(item.episode, {
      position: item.position ?? 0,
      positionAt: item.position === undefined ? null : item.at,
      played: item.played ?? false,
      playedAt: item.played === undefined ? null : item.at,
      duration: item.duration ?? null,
    });
    return;
  }
  // Facts (duration here) follow the write's time: a write with a changedAt earlier than the later of the
  // state's two change times (a late upload) changes none; one without changedAt always may.
  const timed = item.position !== undefined || item.played !== undefined;
  const latest = Math.max(current.positionAt ?? Number.NEGATIVE_INFINITY, current.playedAt ?? Number.NEGATIVE_INFINITY);
  const factsApply = !timed || item.at >= latest;
  if (item.position !== undefined && (current.positionAt === null || current.positionAt < item.at)) {
    current.position = item.position;
    current.positionAt = item.at;
  }
  if (item.played !== undefined && (current.playedAt === null || current.playedAt < item.at)) {
    current.played = item.played;
    current.playedAt = item.at;
  }
  if (item.duration !== undefined && factsApply) current.duration = item.duration;
}

function resourceOf(item: Extract<Change, { kind: "listen" }>) {
  const attributes: Record<string, unknown> = { mediaUrl: `https://cdn.example.com/${item.episode}.mp3` };
  if (item.position !== undefined) attributes.position = item.position;
  if (item.played !== undefined) attributes.played = item.played;
  if (item.duration !== undefined) attributes.duration = item.duration;
  if (item.position !== undefined || item.played !== undefined) attributes.changedAt = new Date(item.at).toISOString();
  return {
    type: "episode",
    id: EPISODES[item.episode],
    attributes,
    relationships: { subscription: { data: { type: "subscription", id: FEED } } },
  };
}

async function deliver(user: Caller, item: Change, route: Route) {
  const id = EPISODES[item.episode];
  if (item.kind === "forget") {
    const response =
      route === "bulk"
        ? await user.operations({ "atomic:operations": [{ op: "remove", ref: { type: "episode", id } }] })
        : await user.delete(`/v1/episodes/${id}`);
    expect([200, 204, 404]).toContain(response.status);
    return;
  }
  const data = resourceOf(item);
  const response =
    route === "post"
      ? await user.post("/v1/episodes", { data })
      : route === "patch"
        ? await user.patch(`/v1/episodes/${id}`, { data })
        : await user.operations({ "atomic:operations": [{ op: "add", data }] });
  expect([200, 201, 404]).toContain(response.status);
}

type FeedItem = {
  id: string;
  attributes: {
    position?: number;
    positionChangedAt?: string | null;
    played?: boolean;
    playedChangedAt?: string | null;
    duration?: number | null;
    deletedAt: string | null;
  };
};

/** Follows the feed from `token` until links.next is null; returns the items in order and the last token. */
async function follow(user: Caller, token: string, size: number) {
  const items: FeedItem[] = [];
  let next: string | null = `/v1/episodes?filter[since]=${token}&page[size]=${size}`;
  let last = token;
  while (next) {
    const response = await user.get(next);
    expect(response.status).toBe(200);
    const page = (await response.json()) as {
      data: FeedItem[];
      links: { next: string | null };
      meta: { syncToken: string };
    };
    items.push(...page.data);
    last = page.meta.syncToken;
    next = page.links.next;
  }
  return { items, token: last };
}

function stateOf(item: FeedItem): State {
  const time = (value: string | null | undefined) => (value ? Date.parse(value) : null);
  return {
    position: item.attributes.position as number,
    positionAt: time(item.attributes.positionChangedAt),
    played: item.attributes.played as boolean,
    playedAt: time(item.attributes.playedChangedAt),
    duration: item.attributes.duration ?? null,
  };
}

function applyFeed(local: Map<string, State>, items: FeedItem[]) {
  for (const item of items) {
    if (item.attributes.deletedAt === null) local.set(item.id, stateOf(item));
    else local.delete(item.id);
  }
}

let run = 0;

const INTERLEAVINGS = propertyOptions(SEED, 60);

describe("episode state merge: three devices, random interleavings", () => {
  it(
    `the stored state is the per-field latest change, and a feed follower from any token ends in it (${INTERLEAVINGS.numRuns} runs)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(
          // Each device's changes in the order it made them; the interleaving below is how they arrive.
          fc.array(fc.array(delivery, { maxLength: 6 }), { minLength: 3, maxLength: 3 }),
          fc.array(fc.nat(2), { minLength: 18, maxLength: 18 }),
          fc.integer({ min: 1, max: 3 }),
          async (devices, schedule, pageSize) => {
            const userId = `merge-${run++}`;
            const user = await as(userId);
            // The arrival order: devices interleave (a device that was offline arrives late, in a burst).
            const queues = devices.map((changes) => [...changes]);
            const arrivals: (typeof devices)[number] = [];
            for (const device of schedule) {
              const next = queues[device].shift();
              if (next) arrivals.push(next);
            }
            for (const queue of queues) arrivals.push(...queue);

            const model = new Map<number, State>();
            // Devices that follow the feed: each joins at a `look` (a first sync from 0 then), and every device
            // syncs again from the token it stored at each later look.
            const followers: { local: Map<string, State>; token: string }[] = [];
            const look = async () => {
              followers.push({ local: new Map(), token: "0" });
              for (const follower of followers) {
                const { items, token } = await follow(user, follower.token, pageSize);
                applyFeed(follower.local, items);
                follower.token = token;
              }
            };
            // Each delivery takes a change number exactly when it changes the state.
            const db = await databaseFor(userId);
            const version = async () =>
              (
                await db
                  .prepare("SELECT episode_version AS v FROM user_stats WHERE user_id = ?")
                  .bind(userId)
                  .first<{ v: number }>()
              )?.v ?? 0;
            let known = 0;
            const deliverAndCount = async (item: Change, route: Route) => {
              const before = JSON.stringify([...model]);
              await deliver(user, item, route);
              applyToModel(model, item, route);
              const changed = JSON.stringify([...model]) !== before;
              const now = await version();
              expect(now, `${JSON.stringify(item)} by ${route}`).toBe(known + (changed ? 1 : 0));
              known = now;
            };
            for (const { change: item, route, retry, look: looks } of arrivals) {
              await deliverAndCount(item, route);
              if (retry) await deliverAndCount(item, route);
              if (looks) await look();
            }

            const expected = new Map([...model].map(([episode, state]) => [EPISODES[episode], state]));
            // The server's state, read by a device that starts from 0.
            const fresh = new Map<string, State>();
            applyFeed(fresh, (await follow(user, "0", pageSize)).items);
            expect(fresh).toEqual(expected);
            for (const [id, state] of expected) {
              const response = await user.get(`/v1/episodes/${id}`);
              expect(stateOf(((await response.json()) as { data: FeedItem }).data)).toEqual(state);
            }
            // Every follower, syncing from the token it stored, ends in exactly the server's state.
            await look();
            for (const follower of followers) expect(follower.local).toEqual(expected);
          },
        ),
        INTERLEAVINGS,
      );
    },
    propertyTimeout(600_000),
  );
});
