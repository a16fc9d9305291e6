import { readFileSync } from "node:fs";
import { sign } from "hono/jwt";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startFeedServer } from "../test/feed-server";
import { browserSkipReason, launchChromium } from "./debian-clients";
import { fitsPhone, SCREENSHOTS } from "./page-checks";
import { type SignInWorker, serveSignInWorker } from "./served-worker";

/**
 * Feeds end to end (docs/API.md §18): `wrangler dev`'s worker with FEED_FETCH_ALLOW_PRIVATE=true, its Cron Trigger
 * run through wrangler's scheduled route, and a real local feed server (node:http, test/feed-server.ts) serving RSS
 * and Atom shaped like real podcast feeds and every way a feed host misbehaves. What it fetched is read back
 * through the JSON:API, the OPML exports and the account pages in Chromium. The node suite's
 * own worker (no FEED_FETCH_ALLOW_PRIVATE) shows that without it nothing is fetched.
 */
const SECRET = "feeds-test-secret-0123456789abcdef0123456789";
const JSONAPI = "application/vnd.api+json";
const TEN_MINUTES = 10 * 60 * 1000;
const DAY = 24 * 60 * 60 * 1000;
const skipBrowser = await browserSkipReason("the feeds browser test");

let feeds: Awaited<ReturnType<typeof startFeedServer>>;
let worker: SignInWorker;
let origin: string;

async function tokenFor(userId: string, secret = SECRET): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return sign({ sub: userId, iat: now, exp: now + 3600 }, secret, "HS256");
}

function api(base: string, token: string) {
  return async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${base}${path}`, {
      ...init,
      headers: { Authorization: `Bearer ${token}`, Accept: JSONAPI, "Content-Type": JSONAPI, ...init.headers },
    });
    return response;
  };
}

/** Runs the worker's Cron Trigger at `time` (wrangler's local scheduled route) and waits for it to end. */
async function runScheduled(base: string, time = Date.now()) {
  const response = await fetch(
    `${base}/cdn-cgi/local/scheduled?cron=${encodeURIComponent("*/10 * * * *")}&time=${time}`,
  );
  expect(response.status, await response.clone().text()).toBe(200);
}

const requestsAt = async (url: string) => {
  const { pathname, search } = new URL(url);
  const response = await fetch(`${feeds.origin}/_requests?url=${encodeURIComponent(`${pathname}${search}`)}`);
  return (await response.json()) as { headers: Record<string, string> }[];
};

beforeAll(async () => {
  feeds = await startFeedServer();
  worker = await serveSignInWorker(SECRET, { FEED_FETCH_ALLOW_PRIVATE: "true" });
  origin = worker.origin;
});

afterAll(async () => {
  await worker?.close();
  await feeds?.close();
});

/** The feeds the listener subscribes to, each a way a real feed host answers. */
const paths = {
  tech: "/redirect/301/3/feeds/tech.rss",
  atom: "/feeds/atom.xml",
  conditional: "/conditional/node-daily",
  gone: "/status/410",
  failing: "/status/503",
  hang: "/hang",
  endless: "/feeds/endless.rss",
  doctype: "/feeds/doctype.rss",
  html: "/feeds/html",
  hostile: "/feeds/hostile.rss",
  huge: "/feeds/huge-title.rss",
  // A podcast of its own: behind a 302 to the tech feed it would be the tech podcast (one podcast:guid), merged.
  temporary: "/redirect/302/1/conditional/node-temporary",
} as const;
type Name = keyof typeof paths;

describe("feeds, fetched by the service and shown everywhere", () => {
  const user = "feeds-listener";
  const urls = {} as Record<Name, string>;
  const guids = {} as Record<Name, string>;
  let call: ReturnType<typeof api>;
  let before: { list: string; etag: string | null; changes: string };
  const fetchedAt = Date.now();

  beforeAll(async () => {
    call = api(origin, await tokenFor(user));
    const run = `${Date.now()}`;
    for (const name of Object.keys(paths) as Name[]) {
      urls[name] = `${feeds.origin}${paths[name]}?run=${run}`;
      guids[name] = crypto.randomUUID();
      const created = await call("/v1/subscriptions", {
        method: "POST",
        body: JSON.stringify({ data: { type: "subscription", id: guids[name], attributes: { feedUrl: urls[name] } } }),
      });
      expect(created.status).toBe(201);
    }
    const list = await call("/v1/subscriptions?page[size]=100");
    before = {
      list: await list.text(),
      etag: list.headers.get("ETag"),
      changes: await (await call("/v1/subscriptions?filter[since]=0&page[size]=100")).text(),
    };
  });

  it("shows every podcast pending before the first round, and no request path fetches a feed", async () => {
    const podcast = await call(`/v1/subscriptions/${guids.tech}/podcast`);
    expect(podcast.status).toBe(200);
    expect(((await podcast.json()) as { data: { attributes: unknown } }).data.attributes).toMatchObject({
      status: "pending",
      title: null,
    });
    for (const url of Object.values(urls)) expect(await requestsAt(url)).toEqual([]);
  });

  it("fetches each feed once within two scheduled runs, following a 301 chain, and keeps its facts", async () => {
    // Twelve new feeds: a round takes eight, the next run the rest (and a long head left for it, past the first
    // round's parse share, is fetched again there: once per round at most).
    await runScheduled(origin, fetchedAt);
    await runScheduled(origin, fetchedAt + TEN_MINUTES);
    for (const name of Object.keys(paths) as Name[]) {
      expect((await requestsAt(urls[name])).length, name).toBeGreaterThanOrEqual(1);
      expect((await requestsAt(urls[name])).length, name).toBeLessThanOrEqual(2);
    }
    const tech = await call(`/v1/subscriptions/${guids.tech}/podcast`);
    expect(await tech.json()).toMatchObject({
      data: {
        type: "podcast",
        id: guids.tech,
        attributes: {
          title: "Tech Talk Weekly",
          author: "Ada & Grace",
          imageUrl: "https://cdn.example.com/tech/cover.jpg",
          siteUrl: "https://tech.example.com/",
          language: "en-us",
          podcastGuid: "917393e3-1b1e-5cef-ace4-edaa54e1f810",
          status: "ok",
        },
      },
    });
    const { fetchedAt: at } = (
      (await (await call(`/v1/subscriptions/${guids.tech}/podcast`)).json()) as {
        data: { attributes: { fetchedAt: string } };
      }
    ).data.attributes;
    expect([fetchedAt, fetchedAt + TEN_MINUTES].map((time) => new Date(time).toISOString())).toContain(at);
  });

  it("answers include=podcast with every podcast in `included`, each status as the feed earned it", async () => {
    const response = await call("/v1/subscriptions?page[size]=100&include=podcast");
    expect(response.status).toBe(200);
    const body = (await response.json()) as {
      data: { id: string; relationships: { podcast: { data: { type: string; id: string } } } }[];
      included: { type: string; id: string; attributes: Record<string, unknown> }[];
    };
    for (const item of body.data) expect(item.relationships.podcast.data).toEqual({ type: "podcast", id: item.id });
    const byName = (name: Name) => body.included.find((podcast) => podcast.id === guids[name])?.attributes;
    expect(byName("atom")).toMatchObject({ status: "ok", title: "Atom Audio Notes", author: "Ann Atom" });
    expect(byName("temporary")).toMatchObject({ status: "ok", title: "Conditional node-temporary v1" });
    expect(byName("endless")).toMatchObject({ status: "ok", title: "Endless" });
    expect(byName("gone")).toMatchObject({ status: "gone", title: null });
    for (const name of ["failing", "hang", "doctype", "html"] as const) {
      expect(byName(name), name).toMatchObject({ status: "failing", title: null });
    }
    expect(byName("hostile")).toMatchObject({ status: "ok", title: "Evil Title", siteUrl: null, imageUrl: null });
    expect(Array.from(String(byName("huge")?.title)).length).toBeLessThanOrEqual(500);
    expect(body.included).toHaveLength(Object.keys(paths).length);
  });

  it("changes nothing the sync answers but the learned move of the 301 chain: one change, guid and time kept", async () => {
    // The 301 chain's end is where the tech feed moved (docs/API.md §18): its subscription is stored there now, as
    // a PATCH would; the 302 is no move, and nothing else changed.
    const moved = urls.tech.replace("/redirect/301/3/feeds/", "/feeds/");
    type Item = { id: string; attributes: { feedUrl: string; userSubscribedAt: string } };
    const list = await call("/v1/subscriptions?page[size]=100");
    expect(list.headers.get("ETag")).not.toBe(before.etag);
    const expected = (JSON.parse(before.list) as { data: Item[] }).data.map((item) =>
      item.id === guids.tech ? { ...item, attributes: { ...item.attributes, feedUrl: moved } } : item,
    );
    expect(((await list.json()) as { data: Item[] }).data).toEqual(expected);
    const token = (JSON.parse(before.changes) as { meta: { syncToken: string } }).meta.syncToken;
    const changes = (await (await call(`/v1/subscriptions?filter[since]=${token}&page[size]=100`)).json()) as {
      data: Item[];
    };
    expect(changes.data.map((item) => [item.id, item.attributes.feedUrl])).toEqual([[guids.tech, moved]]);
  });

  it("names each podcast by its title in the OPML export, its site as htmlUrl", async () => {
    const opml = await (await call("/v1/subscriptions.opml", { headers: { Accept: "text/x-opml" } })).text();
    expect(opml).toContain('text="Tech Talk Weekly"');
    expect(opml).toContain('title="Tech Talk Weekly"');
    expect(opml).toContain('htmlUrl="https://tech.example.com/"');
    // A podcast never fetched successfully is named by its URL.
    expect(opml).toContain(`text="${urls.gone.replaceAll("&", "&amp;")}"`);
    expect(opml).not.toContain("javascript:");
    expect(opml).not.toContain("<script");
  });

  it("asks again a day later with the validators of the last answer (a 304)", async () => {
    // Every feed is due again by then: two runs of eight take them all.
    await runScheduled(origin, fetchedAt + DAY);
    await runScheduled(origin, fetchedAt + DAY + TEN_MINUTES);
    const requests = await requestsAt(urls.conditional);
    expect(requests).toHaveLength(2);
    expect(requests[1].headers["if-none-match"]).toBe('"v1"');
    const podcast = (await (await call(`/v1/subscriptions/${guids.conditional}/podcast`)).json()) as {
      data: { attributes: { status: string; fetchedAt: string } };
    };
    expect(podcast.data.attributes.status).toBe("ok");
    expect([fetchedAt + DAY, fetchedAt + DAY + TEN_MINUTES].map((time) => new Date(time).toISOString())).toContain(
      podcast.data.attributes.fetchedAt,
    );
  });

  describe.skipIf(skipBrowser !== undefined)("the account pages in Chromium", () => {
    let browser: Browser | undefined;
    let context: BrowserContext;
    let page: Page | undefined;
    const elsewhere: string[] = [];

    /** Chromium, JavaScript off, signed in at the local provider as the listener (once). */
    async function signedIn(): Promise<Page> {
      if (page) return page;
      browser = await launchChromium();
      context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
      page.on("request", (request) => {
        if (!request.url().startsWith(origin) && !request.url().startsWith(worker.oidcIssuer))
          elsewhere.push(request.url());
      });
      await page.goto(`${origin}/account`);
      await page.getByRole("link", { name: "Sign in" }).click();
      await page.getByLabel("User name").fill(user);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.waitForURL(`${origin}/account`);
      return page;
    }

    afterAll(async () => {
      await browser?.close();
    });

    it("shows each subscription by its title and author, the URL beside it, and says which are gone", async () => {
      const tab = await signedIn();
      await tab.goto(`${origin}/account/subscriptions`);
      const text = (await tab.locator("main").textContent()) ?? "";
      expect(text).toContain("Tech Talk Weekly");
      expect(text).toContain("Ada & Grace");
      expect(text).toContain("Atom Audio Notes");
      // The 301 chain's feed, under the URL it moved to (docs/API.md §18).
      expect(text).toContain(urls.tech.replace("/redirect/301/3/feeds/", "/feeds/"));
      // Never fetched: shown by the URL alone; the 410: said to be gone.
      expect(text).toContain(urls.failing);
      expect(text).toMatch(/gone|no longer/i);
      // The hostile feed's markup is text, never markup: its title reads clean and nothing ran.
      expect(text).toContain("Evil Title");
      expect(await tab.locator("main script, main iframe, main img").count()).toBe(0);
      expect(elsewhere).toEqual([]);
      await tab.screenshot({ path: `${SCREENSHOTS}podcasts-desktop.png`, fullPage: true });
      await tab.setViewportSize({ width: 360, height: 740 });
      expect(await fitsPhone(tab), "the subscriptions page at 360 px").toBe(true);
      await tab.screenshot({ path: `${SCREENSHOTS}podcasts-phone.png`, fullPage: true });
      await tab.setViewportSize({ width: 1280, height: 900 });
    });

    it("exports the titles from the account page's OPML link", async () => {
      const tab = await signedIn();
      await tab.goto(`${origin}/account/subscriptions`);
      const download = tab.waitForEvent("download");
      await tab.getByRole("link", { name: "Export OPML" }).click();
      const file = await (await download).path();
      const opml = readFileSync(file, "utf8");
      expect(opml).toContain('text="Tech Talk Weekly"');
      expect(opml).toContain('htmlUrl="https://tech.example.com/"');
    });
  });
});

describe("without FEED_FETCH_ALLOW_PRIVATE", () => {
  it("the node suite's worker fetches no feed on a loopback address", async () => {
    const base = inject("workerOrigin");
    const secret = readFileSync(inject("devVarsFile"), "utf8").match(/AUTH_JWT_SECRET="([^"]+)"/)?.[1];
    const call = api(base, await tokenFor("feeds-private", secret));
    const url = `${feeds.origin}/feeds/tech.rss?private=${Date.now()}`;
    const guid = crypto.randomUUID();
    const created = await call("/v1/subscriptions", {
      method: "POST",
      body: JSON.stringify({ data: { type: "subscription", id: guid, attributes: { feedUrl: url } } }),
    });
    expect(created.status).toBe(201);
    await runScheduled(base);
    expect(await requestsAt(url)).toEqual([]);
    const podcast = (await (await call(`/v1/subscriptions/${guid}/podcast`)).json()) as {
      data: { attributes: unknown };
    };
    expect(podcast.data.attributes).toMatchObject({ status: "failing", title: null });
  });
});
