import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sign } from "hono/jwt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NamedFeed } from "../test/feed-documents";
import { startFeedServer } from "../test/feed-server";
import { ciRequires, gpodderClients, gpodderInstalled } from "./debian-clients";
import { type ServedWorker, serveWorker } from "./served-worker";

/**
 * A feed move as the real apps live it (issue 37 point 4; docs/decisions.md "Feed moves and the real clients"):
 * Debian's gPodder engine (its Core, Model, PodcastChannel.update and MygPoClient sync engine) and mygpoclient,
 * against `wrangler dev` with FEED_FETCH_ALLOW_PRIVATE and the local feed server. Feed A answers a 301 to B once
 * both devices hold A; device 1's own feed update moves it to B and it plays the episode there; device 2 stays on
 * A. Then the service's Cron learns the move. One worker and one feed server for the file; the tests run in order.
 * What the devices received is kept in `seen` for the tests after the runs. One rule of issue 37 cannot hold before
 * the round learns the move (docs/decisions.md, "Feed moves and the real clients"): its test asserts it as
 * `it.fails`, so the suite stays green while it fails and turns red the day it holds (then make it a plain test).
 */
const SECRET = "feed-moves-clients-secret-0123456789abcdef0123";
const JSONAPI = "application/vnd.api+json";
const TEN_MINUTES = 10 * 60 * 1000;
if (!gpodderInstalled && !ciRequires) {
  console.warn("Skipping the feed-move tests of the real gpodder clients: Debian's gpodder is not installed.");
}

let feeds: Awaited<ReturnType<typeof startFeedServer>>;
let worker: ServedWorker;
/** The two gPodder devices' GPODDER_HOME. */
let homes: string[] = [];

async function call(token: string, path: string, init: RequestInit = {}) {
  const response = await fetch(`${worker.origin}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${token}`, Accept: JSONAPI, "Content-Type": JSONAPI, ...init.headers },
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      data: {
        id: string;
        attributes: Record<string, unknown>;
        relationships?: { subscription?: { data?: { id: string } } };
      }[];
    },
  };
}

const define = async (name: string, feed: NamedFeed) => {
  const response = await fetch(`${feeds.origin}/_define/${name}`, { method: "POST", body: JSON.stringify(feed) });
  expect(response.status).toBe(204);
};

interface Device {
  /** What the pulls since the last `accept` brought, and which of it gPodder's dialog asks the person about. */
  received_subscriptions: [string, string][];
  offered: [string, string][];
  /** Each subscription pull of the engine's syncs in this run: its `since` and what it brought. */
  pulls: { since: number; add: string[]; remove: string[] }[];
  received_episodes: { podcast: string; episode: string; action: string; position: number }[];
  podcasts: { url: string; episodes: { url: string; played: boolean; position: number; total: number }[] }[];
  pending_uploads: number;
}

/** The episode of `media`, as gPodder device `out` holds it. */
const held = (out: Device, media: string) => out.podcasts.flatMap((p) => p.episodes).find((e) => e.url === media);

/** Waits until the wall clock's second is past `second` (the gpodder.net timestamps' resolution). */
async function untilSecondAfter(second: number) {
  const wait = (second + 1) * 1000 - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait + 10));
}

/** What the known gaps' tests assert on, kept by the tests that drive the devices. */
const seen: {
  device2?: Device;
  statesAfterFirstPlay?: unknown[];
  firstSubscription?: string;
  newDevice?: { actions?: unknown };
  device2Later?: Device;
  statesAfterMove?: unknown[];
  movedSubscription?: string;
} = {};

describe.skipIf(!gpodderInstalled && !ciRequires)("a feed move with the real gPodder and mygpoclient", () => {
  const run = Date.now();
  const names = { a: `moves-a-${run}`, b: `moves-b-${run}` };
  const episodes = [1, 2].map((n) => `https://media.example.com/moves/${run}/${n}.mp3`);
  const [episode, later] = episodes;
  let a: string;
  let b: string;
  let token: string;
  let login: [string, string];
  /** One run of gPodder device 1 or 2 (its home kept between runs), the steps of gpodder-clients.py's gpodder-device. */
  const gpodder = async (device: 1 | 2, ...steps: string[]) => {
    const out = (await gpodderClients(["gpodder-device", worker.origin, ...login, `gpodder-${device}`, ...steps], {
      GPODDER_HOME: homes[device - 1],
    })) as unknown as Device;
    console.info(`gPodder device ${device} (${steps.join(", ")}):`, JSON.stringify(out));
    return out;
  };
  const subscriptions = async () =>
    (await call(token, "/v1/subscriptions")).body.data.map((s) => ({ id: s.id, url: s.attributes.feedUrl }));
  const states = async () =>
    (await call(token, "/v1/episodes?filter[since]=0")).body.data.map((s) => ({
      ...s.attributes,
      subscription: s.relationships?.subscription?.data?.id,
    }));

  beforeAll(async () => {
    feeds = await startFeedServer();
    worker = await serveWorker(SECRET, undefined, { FEED_FETCH_ALLOW_PRIVATE: "true" });
    homes = [1, 2].map((n) => mkdtempSync(join(tmpdir(), `gpodder-move-${n}-`)));
    a = `${feeds.origin}/named/${names.a}`;
    b = `${feeds.origin}/named/${names.b}`;
    // A and B serve the same podcast until both devices hold A; then A answers 301 -> B.
    await define(names.a, { title: "Moving Podcast", enclosures: episodes });
    await define(names.b, { title: "Moving Podcast", enclosures: episodes });
    const now = Math.floor(Date.now() / 1000);
    token = await sign({ sub: `feed-moves-${run}`, iat: now, exp: now + 3600 }, SECRET, "HS256");
    const created = await fetch(`${worker.origin}/v1/app-passwords`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": JSONAPI },
      body: JSON.stringify({ data: { type: "app-password", attributes: { label: "gPodder" } } }),
    });
    expect(created.status).toBe(201);
    const { username, password } = ((await created.json()) as { data: { attributes: Record<string, string> } }).data
      .attributes;
    login = [username, password];
  });

  afterAll(async () => {
    await worker?.close();
    await feeds?.close();
    for (const home of homes) rmSync(home, { recursive: true, force: true });
  });

  it("device 1 follows the 301 itself and plays under B; device 2 stays on A; the service keeps one subscription", async () => {
    // Each run is what the device's UI does: a manual update first confirms or asks about the received subscription
    // changes ("accept"), then updates the feeds, then applies the received plays ("apply").
    const first = await gpodder(1, `subscribe:${a}`, "sync");
    const addedIn = Math.floor(Date.now() / 1000);
    expect(first.podcasts.map((p) => p.url)).toEqual([a]);
    expect(first.pending_uploads).toBe(0);
    const second = await gpodder(2, "sync", "accept", "sync");
    expect(second.offered).toEqual([["add", a]]);
    expect(second.podcasts.map((p) => p.url)).toEqual([a]);
    // Device 1's next manual update, A still a feed: the echo of its own add (inside the upload timestamp's
    // 10 minutes) is an add of a URL it holds, confirmed silently. Its pull must come in a later second than the add:
    // `since` is inclusive (docs/decisions.md, "gpodder `since`"), so a pull in the add's own second would answer the
    // echo once more to the pull after the 301, where it names a URL device 1 no longer holds (and gPodder asks).
    await untilSecondAfter(addedIn);
    expect((await gpodder(1, "sync", "accept")).offered).toEqual([]);

    await define(names.a, { location: b });
    const moved = await gpodder(1, "accept", "update", `play:${episode}`, "sync");
    expect(moved.podcasts.map((p) => p.url)).toEqual([b]);
    expect(held(moved, episode)).toMatchObject({ played: true, position: 1800 });
    expect(moved.pending_uploads).toBe(0);

    // Device 2 does not update its feeds (its fetch fails, or the podcast is paused): it still holds A, and gPodder
    // applies a received play only under the exact podcast URL it holds.
    const received = await gpodder(2, "sync", "accept", "apply");
    expect(received.offered).toEqual([]);
    expect(received.podcasts.map((p) => p.url)).toEqual([a]);
    seen.device2 = received;
    // One podcast to the service: the subscription of A (the play's state: the first known gap below).
    const [subscription, ...others] = await subscriptions();
    expect(others).toEqual([]);
    expect(subscription.url).toBe(a);
    seen.firstSubscription = subscription.id;
    seen.statesAfterFirstPlay = await states();
    expect(seen.statesAfterFirstPlay).toEqual([expect.objectContaining({ mediaUrl: episode, played: true })]);
  });

  it("the learned move reaches a new device as B and tells no existing device to remove or add anything", async () => {
    // The Cron's feed round fetches A (301 -> B) and moves the subscription: within two runs (a new feed is due).
    for (const time of [Date.now(), Date.now() + TEN_MINUTES]) {
      if ((await subscriptions()).some((s) => s.url === b)) break;
      const cron = encodeURIComponent("*/10 * * * *");
      const scheduled = await fetch(`${worker.origin}/cdn-cgi/local/scheduled?cron=${cron}&time=${time}`);
      expect(scheduled.status).toBe(200);
    }
    expect((await subscriptions()).map((s) => s.url)).toEqual([b]);

    const fresh = await gpodderClients(["pull", worker.origin, ...login, "new-device", "0"]);
    console.info("mygpoclient, a new device (since=0):", JSON.stringify(fresh));
    expect(fresh).toMatchObject({ add: [b], remove: [] });
    seen.newDevice = fresh;

    // The existing devices' incremental reads (gPodder's engine keeps its own `since`): no remove, no add B, and
    // nothing for gPodder to ask its user about. Device 1 plays a second episode (under B, now the stored URL).
    const one = await gpodder(1, "sync", "accept", `play:${later}`, "sync");
    const two = await gpodder(2, "sync", "accept", "apply");
    for (const [device, name] of [
      [one, "device 1 (on B)"],
      [two, "device 2 (on A)"],
    ] as const) {
      const pulled = device.pulls.flatMap((pull) => [
        ...pull.add.map((url) => ["add", url]),
        ...pull.remove.map((url) => ["remove", url]),
      ]);
      expect(pulled, name).toEqual([]);
      expect(device.offered, name).toEqual([]);
    }
    expect(one.podcasts.map((p) => p.url)).toEqual([b]);
    expect(two.podcasts.map((p) => p.url)).toEqual([a]);
    seen.device2Later = two;
    const [subscription] = await subscriptions();
    seen.movedSubscription = subscription.id;
    seen.statesAfterMove = await states();
    // The play after the move is in the subscription's own state (it names the stored URL, B).
    expect(seen.statesAfterMove).toContainEqual(
      expect.objectContaining({ mediaUrl: later, played: true, subscription: subscription.id }),
    );
  });

  // A play uploaded under B before the service learns A -> B is stored in B's own namespace (§14: B names no
  // subscription of the user's yet); the round that learns the move joins it to the subscription
  // (src/db/feed-aliases.ts, `strayPairsSql`; docs/decisions.md, "States sent under B before the move is learned"):
  // a change of the subscription's podcast, which every device's next read brings.
  it("a play sent under B before the move is learned joins the subscription with the move, and reaches every device", () => {
    expect(seen.statesAfterMove).toContainEqual(
      expect.objectContaining({ mediaUrl: episode, played: true, subscription: seen.movedSubscription }),
    );
    // Under B, and again under A (mygpoclient is gPodder's library: the read's copy for a moved subscription).
    expect(seen.newDevice?.actions).toEqual([
      { podcast: b, episode, action: "play", position: 1800 },
      { podcast: a, episode, action: "play", position: 1800 },
    ]);
    // Device 2, still on A, on its first sync after the move: the play answered under A too.
    expect(held(seen.device2Later as Device, episode)).toMatchObject({ played: true, position: 1800, total: 1800 });
  });

  // Known gap, which the service cannot close (issue 37; docs/decisions.md, "Feed moves and the real clients"): until
  // its own round fetches A, nothing the service holds says B is A. gPodder follows the 301 on its own and uploads no
  // subscription change for it (device 1's sync left no pending upload, and the service still lists A), and its play
  // names only B. So before the move is learned the play is B's, and device 2's syncs of that time bring nothing.
  it.fails("known gap: before the round learns the move, the play under B is not the subscription's, and device 2 does not get it", () => {
    expect(seen.statesAfterFirstPlay).toEqual([
      expect.objectContaining({ mediaUrl: episode, played: true, subscription: seen.firstSubscription }),
    ]);
    expect(held(seen.device2 as Device, episode)).toMatchObject({ played: true, position: 1800, total: 1800 });
  });

  // gPodder matches a received play by the exact podcast URL it holds: the gpodder.net read answers a moved
  // subscription's states under B and again under A (docs/decisions.md, "Episode reads under every alias"), so device
  // 2, still on A, applies the plays answered under B.
  it("device 2, still on A, receives the plays of device 1 under B on its own episodes", () => {
    expect(held(seen.device2Later as Device, later)).toMatchObject({ played: true });
  });

  // The joined play keeps the id it was given in B's namespace until the next round gives it the subscription's
  // (src/db/episode-rehomes.ts; docs/decisions.md, "A re-homed state takes the kept podcast's id"): gPodder's next
  // play of that episode, named by the subscription's guid now that B names the subscription, then reaches that state
  // instead of making a second one.
  it("after the next round, device 1's next play of the joined episode reaches its state: one state of it", async () => {
    const cron = encodeURIComponent("*/10 * * * *");
    const scheduled = await fetch(
      `${worker.origin}/cdn-cgi/local/scheduled?cron=${cron}&time=${Date.now() + 2 * TEN_MINUTES}`,
    );
    expect(scheduled.status).toBe(200);
    await gpodder(1, "sync", `play:${episode}`, "sync");
    const live = (await states()).filter((state) => (state as { mediaUrl?: string }).mediaUrl === episode);
    expect(live).toEqual([expect.objectContaining({ played: true, subscription: seen.movedSubscription })]);
  });
});
