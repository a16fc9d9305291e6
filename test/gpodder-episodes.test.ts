import { describe, expect, it, vi } from "vitest";
import type { EpisodeState } from "../src/db/gpodder";
import {
  actionTime,
  gpodderTime,
  parseEpisodeAction,
  toEpisodeAction,
  toEpisodeWrite,
} from "../src/gpodder/episode-actions";
import { uuidV5 } from "../src/podcast-guid";
import { as, type Caller, databaseFor, ORIGIN, send, subscriptionDocument } from "./helpers";

/** An action that must parse (the tests of invalid ones call parseEpisodeAction directly). */
function valid(raw: unknown) {
  return must(parseEpisodeAction(raw));
}

function must<T>(value: T | undefined): T {
  if (value === undefined) throw new Error("expected a value");
  return value;
}

const FEED = "9b024349-ccf0-5f69-a609-6b82873eab3c";
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const state: EpisodeState = {
  mediaUrl: "https://cdn.example.com/1.mp3",
  itemGuid: null,
  position: 0,
  duration: null,
  played: false,
  positionChangedAt: null,
  playedChangedAt: null,
};

describe("episode actions to episode states", () => {
  it("names the episode by UUIDv5 of its guid in the feed's namespace (the contract's example)", async () => {
    expect(await uuidV5(FEED, "ABC-123")).toBe("4ceaf82a-1820-5c0e-893a-a95e7bcfde33");
    const action = parseEpisodeAction({
      podcast: "https://ex.com/feed",
      episode: "https://cdn.example.com/1.mp3",
      action: "PLAY",
      guid: "ABC-123",
      timestamp: "2026-01-02T03:04:05",
      started: 0,
      position: 100,
      total: 100,
    });
    expect(await toEpisodeWrite(must(action), FEED, NOW)).toEqual({
      id: "4ceaf82a-1820-5c0e-893a-a95e7bcfde33",
      feedGuid: FEED,
      mediaUrl: "https://cdn.example.com/1.mp3",
      itemGuid: "ABC-123",
      position: 100,
      duration: 100,
      played: true,
      changedAt: Date.UTC(2026, 0, 2, 3, 4, 5),
    });
  });

  it("maps play without total, new, and the actions that store nothing", async () => {
    const base = {
      podcast: "https://ex.com/feed",
      episode: "https://cdn.example.com/2.mp3",
      timestamp: "2026-01-02T03:04:05Z",
    };
    const play = await toEpisodeWrite(valid({ ...base, action: "play", position: 30 }), FEED, NOW);
    expect(play).toMatchObject({ id: await uuidV5(FEED, base.episode), position: 30 });
    expect(play).not.toHaveProperty("played");
    expect(play).not.toHaveProperty("duration");
    expect(await toEpisodeWrite(valid({ ...base, action: "new" }), FEED, NOW)).toMatchObject({
      played: false,
    });
    for (const action of ["download", "delete", "flattr", "play"]) {
      const parsed = parseEpisodeAction({ ...base, action });
      expect(parsed).toBeDefined();
      expect(await toEpisodeWrite(must(parsed), FEED, NOW)).toBeUndefined();
    }
  });

  it("skips invalid actions", async () => {
    const base = { podcast: "https://ex.com/feed", episode: "https://cdn.example.com/3.mp3", action: "play" };
    for (const invalid of [
      { ...base, podcast: undefined },
      { ...base, episode: undefined },
      { ...base, action: "listen" },
      { ...base, podcast: "ftp://ex.com/feed" },
      { ...base, timestamp: "yesterday" },
      { ...base, position: -1 },
      { ...base, position: 1.5 },
      { ...base, total: "10" },
      "not an object",
    ]) {
      expect(parseEpisodeAction(invalid), JSON.stringify(invalid)).toBeUndefined();
    }
    // A guid breaking the itemGuid rules, and a time before 2000, fail as episode writes.
    const badGuid = parseEpisodeAction({ ...base, position: 1, guid: "a\u0000b" });
    expect(await toEpisodeWrite(must(badGuid), FEED, NOW)).toBeUndefined();
    const early = parseEpisodeAction({ ...base, position: 1, timestamp: "1999-12-31T23:59:59" });
    expect(await toEpisodeWrite(must(early), FEED, NOW)).toBeUndefined();
    // An invalid device is ignored, the action kept.
    expect(parseEpisodeAction({ ...base, device: "bad device" })).not.toHaveProperty("device");
  });

  it("reads ISO 8601 as UTC without an offset, and writes YYYY-MM-DDTHH:MM:SS", () => {
    expect(actionTime("2026-01-02T03:04:05")).toBe("2026-01-02T03:04:05Z");
    expect(actionTime("2026-01-02T03:04:05.250+0100")).toBe("2026-01-02T03:04:05.250+01:00");
    expect(actionTime("2026-01-02")).toBeUndefined();
    expect(gpodderTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678))).toBe("2026-01-02T03:04:05");
  });

  it("tells a state as the one action clients apply", () => {
    const at = Date.UTC(2026, 0, 2, 3, 4, 5);
    const tell = (change: Partial<EpisodeState>) => toEpisodeAction("https://ex.com/feed", { ...state, ...change });
    expect(tell({ played: true, duration: 60, playedChangedAt: at })).toMatchObject({
      action: "play",
      started: 60,
      position: 60,
      total: 60,
      timestamp: "2026-01-02T03:04:05",
    });
    // A replay: the position changed after the state was played, and is below the duration.
    const replay = { played: true, duration: 60, playedChangedAt: at, positionChangedAt: at + 1000 };
    expect(tell({ ...replay, position: 20 })).toMatchObject({ action: "play", started: 0, position: 20, total: 60 });
    expect(tell({ ...replay, position: 60 })).toMatchObject({ started: 60, position: 60, total: 60 });
    expect(tell({ ...replay, position: 20, positionChangedAt: at - 1000 })).toMatchObject({
      started: 60,
      position: 60,
    });
    const unknownLength = tell({ played: true, playedChangedAt: at });
    expect(unknownLength).toMatchObject({ action: "play" });
    expect(unknownLength).not.toHaveProperty("position");
    expect(tell({ position: 20, duration: 60, positionChangedAt: at })).toMatchObject({
      action: "play",
      started: 0,
      position: 20,
      total: 60,
    });
    expect(tell({ playedChangedAt: at })).toEqual({
      podcast: "https://ex.com/feed",
      episode: state.mediaUrl,
      action: "new",
      timestamp: "2026-01-02T03:04:05",
    });
    expect(tell({ position: 20, positionChangedAt: at })).toBeUndefined();
    expect(tell({ itemGuid: "g", playedChangedAt: at })).toHaveProperty("guid", "g");
  });
});

async function gpodderClient(user: Caller) {
  const minted = await user.post("/v1/app-passwords", { data: { type: "app-password", attributes: { label: "x" } } });
  const { username, password } = ((await minted.json()) as { data: { attributes: Record<string, string> } }).data
    .attributes;
  const authorization = `Basic ${btoa(`${username}:${password}`)}`;
  const request = (method: string, path: string, body?: unknown) =>
    send(
      new Request(`${ORIGIN}${path}`, {
        method,
        headers: { Authorization: authorization },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
  return { username, request };
}

describe("episode actions through both APIs", () => {
  it("an uploaded play reads as the episode state, and a JSON:API state reads as an action", async () => {
    const user = await as("gp-episodes");
    const { username, request } = await gpodderClient(user);
    const feed = { guid: crypto.randomUUID(), feedUrl: "https://episodes.example.com/feed.xml" };
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));

    const upload = await request("POST", `/api/2/episodes/${username}.json`, [
      {
        podcast: feed.feedUrl,
        episode: "https://cdn.example.com/e1.mp3",
        action: "play",
        guid: "item-1",
        timestamp: "2026-01-02T03:04:05",
        started: 0,
        position: 42,
        total: 100,
        device: "laptop",
      },
      { podcast: feed.feedUrl, episode: "not a url", action: "play", position: 1 },
      {
        podcast: feed.feedUrl,
        episode: "https://cdn.example.com/e2.mp3",
        action: "play",
        timestamp: "2026-01-02T03:04:06",
        started: 0,
        position: 50,
        total: 50,
      },
    ]);
    expect(upload.status).toBe(200);
    const uploaded = (await upload.json()) as { timestamp: number; update_urls: unknown[] };
    expect(uploaded.update_urls).toEqual([]);

    const id = await uuidV5(feed.guid, "item-1");
    const episode = (await (await user.get(`/v1/episodes/${id}`)).json()) as { data: { attributes: object } };
    expect(episode.data.attributes).toMatchObject({
      mediaUrl: "https://cdn.example.com/e1.mp3",
      itemGuid: "item-1",
      position: 42,
      duration: 100,
      played: false,
      positionChangedAt: "2026-01-02T03:04:05.000Z",
    });
    const finished = (await (
      await user.get(`/v1/episodes/${await uuidV5(feed.guid, "https://cdn.example.com/e2.mp3")}`)
    ).json()) as {
      data: { attributes: { played: boolean } };
    };
    expect(finished.data.attributes.played).toBe(true);
    const devices = (await (await request("GET", `/api/2/devices/${username}.json`)).json()) as { id: string }[];
    expect(devices.map((device) => device.id)).toEqual(["laptop"]);

    // Written through the JSON:API, read through gpodder.
    const viaJsonApi = crypto.randomUUID();
    const posted = await user.post("/v1/episodes", {
      data: {
        type: "episode",
        id: viaJsonApi,
        attributes: {
          mediaUrl: "https://cdn.example.com/e3.mp3",
          played: true,
          duration: 300,
          changedAt: "2026-02-03T04:05:06.789Z",
        },
        relationships: { subscription: { data: { type: "subscription", id: feed.guid } } },
      },
    });
    expect(posted.status).toBe(201);
    const read = (await (await request("GET", `/api/2/episodes/${username}.json?since=0`)).json()) as {
      actions: Record<string, unknown>[];
      timestamp: number;
    };
    expect(read.actions).toEqual([
      {
        podcast: feed.feedUrl,
        episode: "https://cdn.example.com/e1.mp3",
        guid: "item-1",
        action: "play",
        timestamp: "2026-01-02T03:04:05",
        started: 0,
        position: 42,
        total: 100,
      },
      {
        podcast: feed.feedUrl,
        episode: "https://cdn.example.com/e2.mp3",
        action: "play",
        timestamp: "2026-01-02T03:04:06",
        started: 50,
        position: 50,
        total: 50,
      },
      {
        podcast: feed.feedUrl,
        episode: "https://cdn.example.com/e3.mp3",
        action: "play",
        timestamp: "2026-02-03T04:05:06",
        started: 300,
        position: 300,
        total: 300,
      },
    ]);
    const later = (await (
      await request("GET", `/api/2/episodes/${username}.json?since=${read.timestamp + 10}`)
    ).json()) as {
      actions: unknown[];
    };
    expect(later.actions).toEqual([]);
    const filtered = (await (
      await request(
        "GET",
        `/api/2/episodes/${username}.json?podcast=${encodeURIComponent("https://other.example.com/")}`,
      )
    ).json()) as { actions: unknown[] };
    expect(filtered.actions).toEqual([]);
  });

  it("a late play with an older timestamp changes no fact, takes no change number and reaches no device", async () => {
    const user = await as("gp-episodes-late");
    const { username, request } = await gpodderClient(user);
    const feed = { guid: crypto.randomUUID(), feedUrl: "https://late.example.com/feed.xml" };
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const episodes = Array.from({ length: 300 }, (_, i) => `https://cdn.late.example.com/${i}.mp3`);
    const play = (episode: string, timestamp: string, position: number, total: number) => ({
      podcast: feed.feedUrl,
      episode,
      action: "play",
      timestamp,
      started: 0,
      position,
      total,
    });
    // Finished on one device: 1 800 s of 1 800.
    const finished = await request(
      "POST",
      `/api/2/episodes/${username}.json`,
      episodes.map((episode) => play(episode, "2026-03-01T12:00:00", 1800, 1800)),
    );
    expect(finished.status).toBe(200);
    const synced = (await (await request("GET", `/api/2/episodes/${username}.json?since=0`)).json()) as {
      actions: unknown[];
      timestamp: number;
    };
    expect(synced.actions).toHaveLength(300);
    const version = async () =>
      (
        await (
          await databaseFor("gp-episodes-late")
        )
          .prepare("SELECT episode_version AS v FROM user_stats WHERE user_id = ?")
          .bind("gp-episodes-late")
          .first<{ v: number }>()
      )?.v;
    const before = await version();
    // Another device, offline since, uploads its older plays: a 3 600 s file (another encoding), 600 s in.
    const late = await request(
      "POST",
      `/api/2/episodes/${username}.json`,
      episodes.map((episode) => play(episode, "2026-03-01T11:00:00", 600, 3600)),
    );
    expect(late.status).toBe(200);
    expect(await version()).toBe(before);
    const id = await uuidV5(feed.guid, episodes[0]);
    const stored = (await (await user.get(`/v1/episodes/${id}`)).json()) as { data: { attributes: object } };
    expect(stored.data.attributes).toMatchObject({ duration: 1800, position: 1800, played: true });
    const after = (await (
      await request("GET", `/api/2/episodes/${username}.json?since=${synced.timestamp + 1}`)
    ).json()) as { actions: unknown[] };
    expect(after.actions).toEqual([]);
    const all = (await (await request("GET", `/api/2/episodes/${username}.json?since=0`)).json()) as {
      actions: Record<string, unknown>[];
    };
    expect(all.actions[0]).toMatchObject({ action: "play", started: 1800, position: 1800, total: 1800 });
    // A later fact still applies: the same episode replayed later with its real length.
    await request("POST", `/api/2/episodes/${username}.json`, [play(episodes[0], "2026-03-02T12:00:00", 60, 3600)]);
    const replayed = (await (await user.get(`/v1/episodes/${id}`)).json()) as { data: { attributes: object } };
    expect(replayed.data.attributes).toMatchObject({ duration: 3600, position: 60, played: true });
  });

  it("a replay after a finish reaches gpodder apps with its place: started 0, the position, the duration", async () => {
    const user = await as("gp-episodes-replay");
    const { username, request } = await gpodderClient(user);
    const feed = { guid: crypto.randomUUID(), feedUrl: "https://replay.example.com/feed.xml" };
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const play = (episode: string, timestamp: string, position: number) => ({
      podcast: feed.feedUrl,
      episode,
      action: "play",
      timestamp,
      started: 0,
      position,
      total: 1800,
    });
    const [replayed, finished] = ["https://cdn.replay.example.com/1.mp3", "https://cdn.replay.example.com/2.mp3"];
    await request("POST", `/api/2/episodes/${username}.json`, [
      play(replayed, "2026-03-01T12:00:00", 1800),
      play(finished, "2026-03-01T12:00:00", 1800),
      // Listened again from the start on another device, the next day: 5 minutes in.
      play(replayed, "2026-03-02T08:00:00", 300),
    ]);
    const state = (await (await user.get(`/v1/episodes/${await uuidV5(feed.guid, replayed)}`)).json()) as {
      data: { attributes: object };
    };
    expect(state.data.attributes).toMatchObject({ played: true, position: 300, duration: 1800 });
    const read = (await (await request("GET", `/api/2/episodes/${username}.json?since=0`)).json()) as {
      actions: Record<string, unknown>[];
    };
    expect(read.actions).toEqual([
      expect.objectContaining({ episode: finished, action: "play", started: 1800, position: 1800, total: 1800 }),
      expect.objectContaining({
        episode: replayed,
        action: "play",
        timestamp: "2026-03-02T08:00:00",
        started: 0,
        position: 300,
        total: 1800,
      }),
    ]);
  });

  it("logs invalid actions only (valid download and delete are not skipped), and uploads past the quota", async () => {
    const userId = "gp-episodes-logged";
    const user = await as(userId);
    const { username, request } = await gpodderClient(user);
    const feed = { guid: crypto.randomUUID(), feedUrl: "https://logged.example.com/feed.xml" };
    await user.post("/v1/subscriptions", subscriptionDocument(feed.guid, feed.feedUrl));
    const warned: Record<string, unknown>[] = [];
    vi.spyOn(console, "warn").mockImplementation((line: unknown) => {
      warned.push(JSON.parse(String(line)) as Record<string, unknown>);
    });
    const action = (episode: string, kind: string, extra: object = {}) => ({
      podcast: feed.feedUrl,
      episode: `https://cdn.logged.example.com/${episode}.mp3`,
      action: kind,
      timestamp: "2026-03-01T12:00:00",
      ...extra,
    });
    const upload = (actions: unknown[]) => request("POST", `/api/2/episodes/${username}.json`, actions);
    expect(
      (
        await upload([
          action("1", "download"),
          action("1", "delete"),
          action("1", "flattr"),
          action("1", "play"),
          action("2", "new"),
          { ...action("3", "play", { position: 5 }), podcast: undefined },
        ])
      ).status,
    ).toBe(200);
    expect(warned).toEqual([expect.objectContaining({ level: "warn", event: "episode_actions_skipped", count: 1 })]);

    // At the quota (50 000 states, none forgotten): the new states are refused, counted in one line.
    warned.length = 0;
    await (await databaseFor(userId))
      .prepare("UPDATE user_stats SET episode_count = 50000 WHERE user_id = ?")
      .bind(userId)
      .run();
    const refused = await upload([action("4", "new"), action("5", "play", { position: 5 }), action("2", "new")]);
    expect(refused.status).toBe(200);
    expect(warned).toEqual([
      expect.objectContaining({
        level: "warn",
        event: "episode_actions_refused",
        count: 2,
        episodeLimit: 2,
        storageLimit: 0,
      }),
    ]);
  });

  it("refuses a body that is not an array (400) and more than 1000 actions (413)", async () => {
    const { username, request } = await gpodderClient(await as("gp-episodes-invalid"));
    expect((await request("POST", `/api/2/episodes/${username}.json`, { actions: [] })).status).toBe(400);
    const many = Array.from({ length: 1001 }, () => ({
      podcast: "https://a.example/f",
      episode: "https://a.example/e",
      action: "new",
    }));
    expect((await request("POST", `/api/2/episodes/${username}.json`, many)).status).toBe(413);
    expect((await request("GET", `/api/2/episodes/${username}.json?since=x`)).status).toBe(400);
  });
});
