import { describe, expect, it } from "vitest";
import { podcastGuidSync, uuidV5Sync } from "../src/podcast-guid";
import { at, FETCHING, subscribe, uniqueNumber } from "./feed-round-calls";
import { as, type Caller, databaseFor, listAll, runCron, subscriptionDocument, versionOf } from "./helpers";
import { gpodder, json, mint, nextcloud, playAction } from "./nextcloud-client";

/**
 * The http/https and trailing-slash forms of a URL are aliases of its podcast (docs/API.md §18, "A podcast's
 * aliases"; src/db/feed-aliases.ts, `namedSubscriptionsSql`), also for a subscription whose guid is not the URL's
 * podcast:guid (§14's rule alone finds that one: a JSON:API app chose the id, an OPML outline named it, or a learned
 * move kept A's guid under B). A URL finds the subscriptions of its other forms through the feed rows the round
 * attempted (`feeds.url_guid`).
 */

/** `url` under the other scheme (the local feed server speaks http; the https form is only ever named). */
const otherScheme = (url: string) => url.replace(/^http:/, "https:");

/** A user subscribed (a JSON:API id of the app's own, not the URL's podcast:guid) to a feed the round has fetched. */
async function subscribedAndFetched(name: string) {
  const user = await as(`${name}-${uniqueNumber()}`);
  const stored = at("/feeds/tech.rss");
  const guid = await subscribe(user, stored);
  expect(guid).not.toBe(podcastGuidSync(stored));
  // A new feed is due at once; runs until the one that attempts it (the round takes FEEDS_PER_ROUND a run).
  const db = await databaseFor(user.userId);
  const attempted = async () =>
    (await db.prepare("SELECT url_guid FROM feeds WHERE url = ?").bind(stored).first<{ url_guid: string | null }>())
      ?.url_guid ?? null;
  for (let run = 0; run < 6 && (await attempted()) === null; run++) {
    await runCron(Date.now() + run * 10 * 60 * 1000, FETCHING);
  }
  expect(await attempted()).toBe(podcastGuidSync(stored));
  return { user, guid, stored, forms: [otherScheme(stored), `${otherScheme(stored)}/`, `${stored}//`] };
}

const addUnder = (user: Caller, url: string) =>
  user.post("/v1/subscriptions", subscriptionDocument(crypto.randomUUID(), url));

describe("the http/https and trailing-slash forms of a subscription's URL name it", () => {
  it("JSON:API, bulk and OPML: an add of another form under another id is 409 Already Subscribed with the stored one, writing nothing", async () => {
    const { user, guid, stored, forms } = await subscribedAndFetched("forms-409");
    const version = await versionOf(user);
    for (const form of forms) {
      const response = await addUnder(user, form);
      expect(response.status, form).toBe(409);
      const body = (await response.json()) as { errors: { title: string; meta?: unknown }[] };
      expect(body.errors[0]).toMatchObject({ title: "Already Subscribed", meta: { feedUrl: stored, guid } });
    }
    const bulk = await user.operations({
      "atomic:operations": [
        { op: "add", data: { type: "subscription", id: crypto.randomUUID(), attributes: { feedUrl: forms[0] } } },
      ],
    });
    expect(JSON.stringify(await bulk.json())).toContain(JSON.stringify({ feedUrl: stored, guid }));
    const opml = `<?xml version="1.0"?><opml version="2.0"><body><outline type="rss" text="x" xmlUrl="${forms[1]}"/></body></opml>`;
    const imported = await user.post("/v1/subscriptions.opml", opml, { "Content-Type": "text/x-opml" });
    expect(((await imported.json()) as { meta: unknown }).meta).toMatchObject({ imported: 0, alreadySubscribed: 1 });
    expect(await versionOf(user)).toBe(version);
    expect(await listAll(user)).toEqual(new Map([[guid, stored]]));
  });

  it("gpodder.net and Nextcloud: an add of another form writes nothing (update_urls [form, stored]); the simple PUT naming it keeps the subscription", async () => {
    const { user, guid, stored, forms } = await subscribedAndFetched("forms-gpodder");
    const app = await mint(user);
    const version = await versionOf(user);
    const answer = await json<{ update_urls: [string, string][] }>(
      gpodder(app).post(`/api/2/subscriptions/${app.loginName}/phone.json`, { add: [forms[0]], remove: [] }),
    );
    expect(answer.update_urls).toEqual([[forms[0], stored]]);
    await json(nextcloud(app).post("subscription_change/create", { add: [forms[1]], remove: [] }));
    expect((await gpodder(app).put(`/subscriptions/${app.loginName}/phone.json`, [forms[2]])).status).toBe(200);
    expect(await versionOf(user)).toBe(version);
    expect(await listAll(user)).toEqual(new Map([[guid, stored]]));
  });

  it("episode actions under another form reach the subscription's state, under the id of its guid, read back under the stored URL", async () => {
    const { user, guid, stored, forms } = await subscribedAndFetched("forms-plays");
    const app = await mint(user);
    const episode = `${stored}-episode.mp3`;
    await json(
      gpodder(app).post(`/api/2/episodes/${app.loginName}.json`, [
        playAction(forms[0], episode, 20, "2026-01-02T03:00:00"),
      ]),
    );
    await json(
      nextcloud(app).post("episode_action/create", [playAction(forms[1], episode, 30, "2026-01-02T03:10:00")]),
    );
    const { data } = (await (await user.get("/v1/episodes")).json()) as {
      data: {
        id: string;
        attributes: { position: number };
        relationships: { subscription: { data: { id: string } } };
      }[];
    };
    expect(
      data.map((state) => [state.id, state.relationships.subscription.data.id, state.attributes.position]),
    ).toEqual([[uuidV5Sync(guid, "item-1"), guid, 30]]);
    const read = await json<{ actions: { podcast: string; position: number }[] }>(
      gpodder(app).get(`/api/2/episodes/${app.loginName}.json?since=0`),
    );
    expect(read.actions.map((action) => [action.podcast, action.position])).toEqual([[stored, 30]]);
  });

  it("gpodder.net and Nextcloud: a remove of another form unsubscribes the podcast; another user's forms name nothing of it", async () => {
    for (const api of ["gpodder", "nextcloud"] as const) {
      const { user, forms } = await subscribedAndFetched(`forms-remove-${api}`);
      const app = await mint(user);
      const removal = { add: [], remove: [forms[1]] };
      if (api === "gpodder") await json(gpodder(app).post(`/api/2/subscriptions/${app.loginName}/phone.json`, removal));
      else await json(nextcloud(app).post("subscription_change/create", removal));
      expect({ api, list: await listAll(user) }).toEqual({ api, list: new Map() });
    }
    const { forms } = await subscribedAndFetched("forms-owner");
    const other = await as(`forms-other-${uniqueNumber()}`);
    expect((await addUnder(other, forms[0])).status).toBe(201);
  });
});
