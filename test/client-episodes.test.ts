import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  applyEpisodeChanges,
  createSubscriptionsClient,
  type Episode,
  type EpisodeRef,
  episodeId,
  IncompleteError,
  type SubscriptionsApiError,
} from "../client/src/index";
import { ORIGIN, rejectionOf, tokenFor } from "./helpers";
import { recordExchange } from "./recorded-responses";

/** The typed client's episode calls (docs/README-client.md, "Listening progress"), against the worker. */

async function device(userId: string, failAfter = Number.POSITIVE_INFINITY) {
  const token = await tokenFor(userId);
  let requests = 0;
  return createSubscriptionsClient({
    baseUrl: ORIGIN,
    token,
    fetch: async (request) => {
      if (++requests > failAfter) throw new TypeError("network down");
      const answer = await SELF.fetch(request);
      recordExchange(request, answer);
      return answer;
    },
  });
}

const FEED = "9b024349-ccf0-5f69-a609-6b82873eab3c";

describe("episodeId", () => {
  it("is the podcast-namespace UUID: of the trimmed item guid, else of the enclosure URL", async () => {
    expect(await episodeId(FEED, { guid: "ABC-123", enclosureUrl: "https://x/a.mp3" })).toBe(
      "4ceaf82a-1820-5c0e-893a-a95e7bcfde33",
    );
    expect(await episodeId(FEED, { guid: "  abc-123  ", enclosureUrl: "https://x/a.mp3" })).toBe(
      "aef3b131-6f03-5173-8001-abcb30ad39e6",
    );
    expect(await episodeId(FEED, { guid: null, enclosureUrl: "https://x/a.mp3" })).toBe(
      await episodeId(FEED, { guid: "https://x/a.mp3", enclosureUrl: "https://y/other.mp3" }),
    );
  });
});

describe("listening progress through the client, two devices", () => {
  it("the laptop resumes where the phone paused, a late older upload changes nothing, the feed converges", async () => {
    const userId = `client-episodes-${crypto.randomUUID()}`;
    const [phone, laptop] = [await device(userId), await device(userId)];
    const episode: EpisodeRef = {
      id: await episodeId(FEED, { guid: "ABC-123", enclosureUrl: "https://cdn.example.com/abc.mp3" }),
      feedGuid: FEED,
      mediaUrl: "https://cdn.example.com/abc.mp3",
      itemGuid: "ABC-123",
    };
    const paused = await phone.savePosition(episode, 754, new Date("2026-11-24T07:45:00Z"));
    expect([paused.created, paused.episode.attributes.position]).toEqual([true, 754]);

    // The laptop syncs, resumes at 754 and finishes the episode later.
    const local = new Map<string, Episode>();
    const first = await laptop.syncEpisodes();
    applyEpisodeChanges(local, first.changes);
    expect(local.get(episode.id)?.attributes.position).toBe(754);
    const done = await laptop.saveEpisode(episode, { position: 3600, played: true, at: "2026-11-24T19:00:00Z" });
    expect([done.created, done.episode.attributes.played]).toEqual([false, true]);

    // The phone was offline at 07:50 and uploads now: its older pause changes nothing.
    const late = await phone.savePosition(episode, 800, "2026-11-24T07:50:00Z");
    expect(late.episode.attributes.position).toBe(3600);
    const played = await phone.markPlayed(episode, false, "2026-11-24T07:51:00Z");
    expect(played.episode.attributes.played).toBe(true);

    // Both devices end with the server's state: the laptop from its token, a fresh device from 0.
    const next = await laptop.syncEpisodes(first.syncToken);
    applyEpisodeChanges(local, next.changes);
    expect(local.get(episode.id)).toEqual(await phone.getEpisode(episode.id));
    const fresh = applyEpisodeChanges(
      new Map(),
      (await (await device(userId)).syncEpisodes("0", { pageSize: 1 })).changes,
    );
    expect(fresh).toEqual(local);

    // Forgetting it reaches the others as a tombstone.
    await phone.forgetEpisode(episode.id);
    applyEpisodeChanges(local, (await laptop.syncEpisodes(next.syncToken)).changes);
    expect(local.size).toBe(0);
    const missing = await rejectionOf<SubscriptionsApiError>(laptop.getEpisode(episode.id));
    expect(missing.status).toBe(404);
  });

  it("syncEpisodes keeps the pages it read when a later one fails", async () => {
    const userId = `client-episodes-partial-${crypto.randomUUID()}`;
    const writer = await device(userId);
    for (let i = 0; i < 3; i++) {
      const id = await episodeId(FEED, { guid: `item-${i}`, enclosureUrl: `https://cdn.example.com/${i}.mp3` });
      await writer.savePosition({ id, feedGuid: FEED, mediaUrl: `https://cdn.example.com/${i}.mp3` }, 10 * (i + 1));
    }
    const flaky = await device(userId, 2);
    const error = await rejectionOf<IncompleteError<{ changes: unknown[]; syncToken: string }>>(
      flaky.syncEpisodes("0", { pageSize: 1 }),
    );
    expect(error).toBeInstanceOf(IncompleteError);
    expect(error.partial.changes).toHaveLength(2);
    expect(error.partial.syncToken).toBe("2");
    const rest = await writer.syncEpisodes(error.partial.syncToken);
    expect(rest.changes).toHaveLength(1);
  });
});
