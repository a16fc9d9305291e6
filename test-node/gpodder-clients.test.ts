import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sign } from "hono/jwt";
import { describe, expect, inject, it } from "vitest";
import { podcastGuid, uuidV5 } from "../src/podcast-guid";
import { ciRequires, gpodderClients, gpodderInstalled } from "./debian-clients";

/**
 * The real gpodder.net clients Debian ships (python3-mygpoclient, gpodder), run against the locally served
 * worker: mygpoclient's MygPodderClient, and gPodder's own sync engine syncing from one device to another.
 * They run on the system Python, which holds Debian's packages. Skipped only where the packages are absent
 * and CI is not set; in CI (.ci/run installs them) they are mandatory.
 */
const installed = gpodderInstalled;
const required = ciRequires;
if (!installed && !required) {
  console.warn(
    "Skipping the real gpodder client tests: Debian's python3-mygpoclient and gpodder are not installed " +
      "(sudo apt-get install python3-mygpoclient gpodder; CI installs them and requires these tests).",
  );
}

const run = gpodderClients;

/** A bearer token for the node suite's worker, signed with its secret (the .dev.vars file global-setup wrote). */
async function tokenFor(userId: string): Promise<string> {
  const secret = readFileSync(inject("devVarsFile"), "utf8").match(/AUTH_JWT_SECRET="([^"]+)"/)?.[1] as string;
  const now = Math.floor(Date.now() / 1000);
  return sign({ sub: userId, iat: now, exp: now + 3600 }, secret, "HS256");
}

async function jsonApi(token: string, path: string, init: RequestInit = {}) {
  const response = await fetch(`${inject("workerOrigin")}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/vnd.api+json", ...init.headers },
  });
  return { status: response.status, body: (await response.json()) as { data: unknown } };
}

async function appPassword(token: string) {
  const created = await jsonApi(token, "/v1/app-passwords", {
    method: "POST",
    body: JSON.stringify({ data: { type: "app-password", attributes: { label: "gPodder" } } }),
  });
  expect(created.status).toBe(201);
  return (created.body.data as { attributes: { username: string; password: string } }).attributes;
}

describe.skipIf(!installed && !required)("real gpodder.net clients", () => {
  it("mygpoclient's MygPodderClient: nine calls on one client object (three challenges at most: the cookie)", async () => {
    const token = await tokenFor(`mygpoclient-${crypto.randomUUID()}`);
    const { username, password } = await appPassword(token);
    const out = await run(["mygpoclient", inject("workerOrigin"), username, password]);
    expect(out.device_updated).toBe(true);
    expect(out.devices).toEqual([["ci-device", "CI", "desktop", 0]]);
    expect(out.update_urls).toEqual([
      [" https://mygpoclient.example.com/padded.xml ", "https://mygpoclient.example.com/padded.xml"],
    ]);
    expect(out.pulled).toMatchObject({
      add: ["https://mygpoclient.example.com/feed.xml", "https://mygpoclient.example.com/padded.xml"],
      remove: [],
    });
    expect(out.downloaded).toEqual([
      expect.objectContaining({
        podcast: "https://mygpoclient.example.com/feed.xml",
        episode: "https://mygpoclient.example.com/1.mp3",
        action: "play",
        timestamp: "2026-01-02T03:04:05",
        started: 0,
        position: 42,
        total: 100,
      }),
    ]);
    expect(out.subscriptions).toEqual(["https://mygpoclient.example.com/feed.xml"]);
    expect(out.devices_after).toEqual(["ci-device"]);
    // What the client wrote, read through the JSON:API.
    const list = await jsonApi(token, "/v1/subscriptions");
    expect((list.body.data as { attributes: { feedUrl: string } }[]).map((s) => s.attributes.feedUrl)).toEqual([
      "https://mygpoclient.example.com/feed.xml",
    ]);
  });

  it("gPodder's sync engine carries a subscription and a finished episode from device A to device B", async () => {
    const token = await tokenFor(`gpodder-sync-${crypto.randomUUID()}`);
    const { username, password } = await appPassword(token);
    const feed = "https://gpodder-sync.example.com/feed.xml";
    const episode = "https://gpodder-sync.example.com/episode-1.mp3";
    const homes = [mkdtempSync(join(tmpdir(), "gpodder-a-")), mkdtempSync(join(tmpdir(), "gpodder-b-"))];
    try {
      const root = inject("workerOrigin");
      const a = await run(["gpodder-sync", root, username, password, "device-a", feed, episode], {
        GPODDER_HOME: homes[0],
      });
      expect(a).toMatchObject({ enabled: true, pending_uploads: 0 });
      const b = await run(["gpodder-sync", root, username, password, "device-b"], { GPODDER_HOME: homes[1] });
      expect(b.enabled).toBe(true);
      expect(b.received_subscriptions).toEqual([["add", feed]]);
      expect(b.received_episodes).toEqual([
        { podcast: feed, episode, action: "play", started: 1800, position: 1800, total: 1800 },
      ]);

      // The state arrived: the JSON:API reads the subscription and the finished episode.
      const list = await jsonApi(token, "/v1/subscriptions");
      expect((list.body.data as { attributes: { feedUrl: string } }[]).map((s) => s.attributes.feedUrl)).toEqual([
        feed,
      ]);
      const id = await uuidV5(await podcastGuid(feed), episode);
      const state = await jsonApi(token, `/v1/episodes/${id}`);
      expect(state.status).toBe(200);
      expect((state.body.data as { attributes: object }).attributes).toMatchObject({
        mediaUrl: episode,
        position: 1800,
        duration: 1800,
        played: true,
      });
    } finally {
      for (const home of homes) rmSync(home, { recursive: true, force: true });
    }
  });
});
