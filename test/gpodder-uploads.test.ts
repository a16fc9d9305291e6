import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_URL_BYTES } from "../src/db/storage";
import {
  as,
  countedDatabaseOf,
  databaseFor,
  newFeed,
  ORIGIN,
  seedSubscriptions,
  send,
  withinOneRateWindow,
} from "./helpers";

// docs/API.md §14: gPodder uploads every queued subscription change in one request and cannot split it, so a
// subscription POST or PUT takes up to 10 000 URLs in a body of up to 16 MiB, answered within the account's
// quota and budget like any other upload, in one D1 round trip.

async function client(userId: string, bindings = {}) {
  const user = await as(userId);
  const minted = await user.post("/v1/app-passwords", { data: { type: "app-password", attributes: { label: "g" } } });
  const { username, password } = ((await minted.json()) as { data: { attributes: Record<string, string> } }).data
    .attributes;
  const request = (method: string, path: string, body?: string, extra = bindings) =>
    send(
      new Request(`${ORIGIN}${path}`, {
        method,
        headers: { Authorization: `Basic ${btoa(`${username}:${password}`)}` },
        body,
      }),
      extra,
    );
  return { user, username, request };
}

async function stats(userId: string) {
  return (await databaseFor(userId))
    .prepare("SELECT active_count, stored_count, url_bytes, version FROM user_stats WHERE user_id = ?")
    .bind(userId)
    .first<{ active_count: number; stored_count: number; url_bytes: number; version: number }>();
}

/** A URL of exactly `bytes` bytes. */
function urlOf(index: number, bytes = 40, host = "up.example.com"): string {
  const head = `https://${host}/${index}/`;
  return head + "x".repeat(bytes - head.length);
}

type Uploaded = { timestamp: number; update_urls: [string, string][] };

describe("gpodder subscription uploads of up to 10 000 URLs in up to 16 MiB (docs/API.md §14)", () => {
  it("a POST of 10 000 URLs subscribes to all of them, each with its own change number, in one D1 round trip", {
    timeout: 120_000,
  }, async () => {
    const userId = "gp-upload-10000";
    const counted = await countedDatabaseOf(userId);
    const { username, request } = await client(userId, counted.bindings);
    // Signed in and the device created: the upload's own round trip is then the only one.
    expect((await request("POST", `/api/2/devices/${username}/gpodder.json`, "{}")).status).toBe(200);
    const add = Array.from({ length: 10_000 }, (_, i) => urlOf(i));
    counted.reset();
    const response = await request("POST", `/api/2/subscriptions/${username}/gpodder.json`, JSON.stringify({ add }));
    expect(response.status).toBe(200);
    expect(counted.calls()).toBe(1);
    expect(((await response.json()) as Uploaded).update_urls).toEqual([]);
    expect(await stats(userId)).toMatchObject({ active_count: 10_000, stored_count: 10_000, version: 10_000 });
    const { results } = await (await databaseFor(userId))
      .prepare(
        "SELECT count(DISTINCT change_seq) AS numbers, min(change_seq) AS first FROM subscriptions WHERE user_id = ?",
      )
      .bind(userId)
      .all<{ numbers: number; first: number }>();
    expect(results[0]).toEqual({ numbers: 10_000, first: 1 });
    // The list keeps the upload's order.
    const list = await request("GET", `/subscriptions/${username}.json`);
    expect(await list.json()).toEqual(add);
    // At the quota: the next add is refused, listed as [sent, ""].
    const more = await request(
      "POST",
      `/api/2/subscriptions/${username}/gpodder.json`,
      JSON.stringify({ add: ["https://up.example.com/one-more.xml"] }),
    );
    expect(((await more.json()) as Uploaded).update_urls).toEqual([["https://up.example.com/one-more.xml", ""]]);
  });

  it("a PUT of 10 000 long URLs in a 15 MB body stores what the 8 MiB budget holds, in order, and refuses the rest", {
    timeout: 180_000,
  }, async () => {
    const userId = "gp-upload-budget";
    const { username, request } = await client(userId);
    const list = Array.from({ length: 10_000 }, (_, i) => urlOf(i, 1500));
    const body = JSON.stringify(list);
    expect(body.length).toBeGreaterThan(15_000_000);
    const response = await request("PUT", `/subscriptions/${username}/gpodder.json`, body);
    expect(response.status).toBe(200);
    const fitting = Math.floor(MAX_URL_BYTES / 1500);
    expect(await stats(userId)).toMatchObject({ active_count: fitting, url_bytes: fitting * 1500 });
    const stored = (await (await request("GET", `/subscriptions/${username}.json`)).json()) as string[];
    expect(stored).toEqual(list.slice(0, fitting));
    // A PUT of another list unsubscribes every feed not in it and subscribes the new ones.
    const next = [list[1], "https://up.example.com/new.xml"];
    expect((await request("PUT", `/subscriptions/${username}/gpodder.txt`, next.join("\n"))).status).toBe(200);
    expect(await (await request("GET", `/subscriptions/${username}.json`)).json()).toEqual(next);
  });

  it("refuses more than 10 000 URLs and bodies over 16 MiB (413); episode uploads keep their 1 MiB", async () => {
    const { username, request } = await client("gp-upload-limits");
    const tooMany = Array.from({ length: 10_001 }, (_, i) => urlOf(i));
    const post = (body: unknown) => request("POST", `/api/2/subscriptions/${username}/d.json`, JSON.stringify(body));
    expect((await post({ add: tooMany.slice(0, 5000), remove: tooMany.slice(5000) })).status).toBe(413);
    expect((await request("PUT", `/subscriptions/${username}/d.json`, JSON.stringify(tooMany))).status).toBe(413);
    const huge = await request("PUT", `/subscriptions/${username}/d.txt`, "x".repeat(16 * 1024 * 1024 + 1));
    expect(huge.status).toBe(413);
    expect(await huge.json()).toEqual({ error: expect.any(String) });
    const actions = Array.from({ length: 1000 }, (_, i) => ({
      podcast: urlOf(i, 600),
      episode: urlOf(i, 600, "cdn.example.com"),
      action: "new",
    }));
    expect((await request("POST", `/api/2/episodes/${username}.json`, JSON.stringify(actions))).status).toBe(413);
  });

  it("answers each URL as a sequence of single adds would: duplicates, twins, tombstones, refused and invalid ones", async () => {
    const userId = "gp-upload-sequence";
    const { user, username, request } = await client(userId);
    const gone = newFeed();
    await user.post("/v1/subscriptions", {
      data: { type: "subscription", id: gone.guid, attributes: { feedUrl: gone.feedUrl } },
    });
    await user.delete(`/v1/subscriptions/${gone.guid}`);
    const add = [
      "https://twin.example.com/feed",
      "http://twin.example.com/feed",
      "https://dup.example.com/feed",
      " https://dup.example.com/feed",
      gone.feedUrl,
      "not a url",
    ];
    const response = await request("POST", `/api/2/subscriptions/${username}/d.json`, JSON.stringify({ add }));
    expect(((await response.json()) as Uploaded).update_urls).toEqual([
      ["http://twin.example.com/feed", "https://twin.example.com/feed"],
      [" https://dup.example.com/feed", "https://dup.example.com/feed"],
      ["not a url", ""],
    ]);
    // The tombstone was revived under its own guid; three feeds are active.
    expect((await user.get(`/v1/subscriptions/${gone.guid}`)).status).toBe(200);
    expect(await stats(userId)).toMatchObject({ active_count: 3, stored_count: 3 });
  });

  it('near the quota, as many as fit after the oldest tombstones are purged; the rest [sent, ""]', async () => {
    const userId = "gp-upload-quota";
    const { user, username, request } = await client(userId);
    // Five unsubscriptions (through the API: found by their url_key), then the quota all but filled.
    for (let i = 0; i < 5; i++) {
      const gone = newFeed();
      await user.post("/v1/subscriptions", {
        data: { type: "subscription", id: gone.guid, attributes: { feedUrl: gone.feedUrl } },
      });
      await user.delete(`/v1/subscriptions/${gone.guid}`);
    }
    await seedSubscriptions(userId, 9_990);
    const add = Array.from({ length: 20 }, (_, i) => `https://quota.example.com/${i}.xml`);
    const response = await request("POST", `/api/2/subscriptions/${username}/d.json`, JSON.stringify({ add }));
    const { update_urls } = (await response.json()) as Uploaded;
    // 5 free slots and 5 tombstones purged: the first 10 fit, in order.
    expect(update_urls).toEqual(add.slice(10).map((url) => [url, ""]));
    expect(await stats(userId)).toMatchObject({ active_count: 10_000, stored_count: 10_000 });
  });

  it("an upload is charged to the user's limit as the requests of 100 URLs writing it would be", async () => {
    await withinOneRateWindow();
    const tight = { USER_RATE_LIMITER: env.TIGHT_USER_RATE_LIMITER }; // 5 requests per 60 s
    const { username, request } = await client("gp-upload-charged", tight);
    const add = Array.from({ length: 450 }, (_, i) => urlOf(i));
    expect((await request("POST", `/api/2/subscriptions/${username}/d.json`, JSON.stringify({ add }))).status).toBe(
      200,
    );
    // 1 for the request, 4 more for 450 URLs (5 requests of 100): the limit of 5 is spent.
    expect((await request("GET", `/api/2/devices/${username}.json`)).status).toBe(429);
  });
});
