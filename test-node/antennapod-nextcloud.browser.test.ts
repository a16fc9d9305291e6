import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  ANTENNAPOD_USER_AGENT,
  AntennaPod,
  actionJson,
  type Credentials,
  type EpisodeAction,
  UPLOAD_BULK_SIZE,
} from "./antennapod";
import { browserSkipReason, gpodderClients, launchChromium } from "./debian-clients";
import { fitsPhone, SCREENSHOTS, screenshot, seriousViolations } from "./page-checks";

/**
 * AntennaPod's "Nextcloud" option end to end (docs/API.md §17), in AntennaPod's own sequence (test-node/antennapod.ts
 * reproduces its requests from its source): the app starts a Login Flow and polls it once a second; the login link
 * opens in Chromium, where the person signs in at the local OpenID Connect provider (the one `npm run dev` starts)
 * and presses `Grant access`; the app's poll receives its password and syncs subscriptions and 70 episode actions
 * in batches of 30. A second device, Debian's real mygpoclient on the gpodder.net paths, sees them, and AntennaPod,
 * whose clock runs 5 minutes ahead and who takes that clock as its next `since`, misses nothing the other device
 * wrote. axe-core runs in the grant page, which must fit 360 px; its screenshots are taken (page-checks.ts SCREENSHOTS).
 * Mandatory when CI is set (or BROWSER_TESTS=required); skipped, saying why, where Chromium or mygpoclient is missing.
 */

const origin = inject("workerOrigin");
const skipReason = await browserSkipReason("the AntennaPod Nextcloud browser test");

/** The phone's clock runs this far ahead of the server's. */
const CLOCK_AHEAD_MS = 5 * 60_000;
const FEEDS = ["a", "b", "c"].map((name) => `https://antennapod.example.com/${name}.xml`);
/** What the second device adds once AntennaPod has synced. */
const LAPTOP_FEED = "https://laptop.example.com/feed.xml";
const LAPTOP_EPISODE = "https://laptop.example.com/1.mp3";

/** Debian's mygpoclient as a second device (test-node/gpodder-clients.py, mode second-device). */
function secondDevice(username: string, password: string, ...change: string[]): Promise<Record<string, unknown>> {
  return gpodderClients(["second-device", origin, username, password, "laptop", ...change]);
}

/** An exchange's path and query, relative to the gpoddersync app. */
const callOf = (url: string) => {
  const { pathname, search } = new URL(url);
  return `${pathname.replace("/index.php/apps/gpoddersync/", "")}${search}`;
};

/** The newest action per episode, as the server keeps one state per episode. */
function latestPerEpisode(actions: Record<string, unknown>[]): Map<string, Record<string, unknown>> {
  return new Map(actions.map((action) => [action.episode as string, action]));
}

describe.skipIf(skipReason !== undefined)("AntennaPod's Nextcloud option: Login Flow in Chromium, then sync", () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  // A name of its own: the files run side by side against the same worker.
  const userName = "antennapod-listener";
  const phone = new AntennaPod(CLOCK_AHEAD_MS);
  let flow: { login: string; token: string; endpoint: string };
  let polling: Promise<Credentials>;
  let credentials: Credentials;
  /** Every action AntennaPod uploaded, as it wrote them. */
  const uploaded: Record<string, unknown>[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
  });

  afterAll(async () => {
    // A test that failed before the grant leaves the poll running: stop it, as leaving AntennaPod's dialog does.
    phone.cancel();
    await browser?.close();
  });

  it("starts the flow as AntennaPod does (an empty form POST, its User-Agent); the poll waits with 404 []", async () => {
    flow = await phone.startLoginFlow(origin);
    const [start] = phone.exchanges;
    expect(start).toMatchObject({ method: "POST", url: `${origin}/index.php/login/v2`, body: "", status: 200 });
    expect(start.headers).toMatchObject({
      "User-Agent": ANTENNAPOD_USER_AGENT,
      "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
      "Content-Length": "0",
      "Accept-Encoding": "gzip",
    });
    expect(flow.endpoint).toBe(`${origin}/index.php/login/v2/poll`);
    expect(flow.login).toMatch(new RegExp(`^${origin}/index\\.php/login/v2/flow/[A-Za-z0-9_-]{43}$`));
    // AntennaPod opens the link in the browser and polls at once, once a second, until a 200.
    polling = phone.pollLoginFlow(flow);
    // Awaited by the grant's test; one that fails before it leaves nobody waiting (afterAll cancels the poll).
    polling.catch(() => undefined);
  });

  it("opens the login link in Chromium: sign-in at the local provider, then the grant page naming the app", async () => {
    await page.goto(flow.login);
    await expect(page.getByText("For development only").count()).resolves.toBe(1);
    await page.getByLabel("User name").fill(userName);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(flow.login);
    await expect(page.locator("h1").textContent()).resolves.toBe("Grant access to your podcasts?");
    const main = (await page.locator("main").textContent()) as string;
    expect(main).toContain(`An app that calls itself ${ANTENNAPOD_USER_AGENT} asks to sync with`);
    expect(main).toContain(userName);
    expect(main).toMatch(/Sign-in started\s*\d{4}-\d\d-\d\d \d\d:\d\d UTC \((just now|\d+ minutes? ago)\)/);
    // The address the server saw the app's POST come from (wrangler dev's CF-Connecting-IP), not one it chose.
    expect(main).toMatch(/Started from address\s*127\.0\.0\.1/);
    expect(main).toContain("Grant access only to an app you have just started signing in from");
    await expect(page.getByRole("button", { name: "Grant access" }).count()).resolves.toBe(1);
    await expect(page.getByRole("button", { name: "Deny" }).count()).resolves.toBe(1);
    // Looking grants nothing: the app still polls 404 [].
    const waiting = phone.exchanges.filter((exchange) => exchange.url === flow.endpoint);
    expect(waiting.length).toBeGreaterThan(0);
    for (const exchange of waiting) expect([exchange.status, exchange.responseBody]).toEqual([404, "[]"]);

    const path = new URL(flow.login).pathname;
    await screenshot(context, origin, path, "grant");
    await page.setViewportSize({ width: 360, height: 740 });
    expect(await fitsPhone(page), "the grant page at 360 px").toBe(true);
    await page.setViewportSize({ width: 1280, height: 900 });
    // axe is a script: injected into a context that lets it run (the pages themselves forbid scripts).
    const checking = await browser.newContext({ bypassCSP: true, storageState: await context.storageState() });
    expect(await seriousViolations(checking, origin, path)).toEqual([]);
    await checking.close();
  });

  it("Grant access: the page says to return to the app; the app's poll receives its password exactly once", async () => {
    await page.getByRole("button", { name: "Grant access" }).click();
    await expect(page.locator("h1").textContent()).resolves.toBe("Access granted");
    await expect(page.locator("main").textContent()).resolves.toContain("return to the app");
    // Shown as a success, at both widths (the answer to a POST: taken here, not by reloading it).
    for (const [width, height, suffix] of [
      [1280, 900, "desktop"],
      [360, 740, "phone"],
    ] as const) {
      await page.setViewportSize({ width, height });
      expect(await fitsPhone(page), `Access granted at ${width} px`).toBe(true);
      await page.screenshot({ path: `${SCREENSHOTS}granted-${suffix}.png`, fullPage: true });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    credentials = await polling;
    expect(credentials.server).toBe(origin);
    expect(credentials.loginName).toMatch(/^[a-z0-9][a-z0-9._-]{0,63}$/);

    const polls = phone.exchanges.filter((exchange) => exchange.url === flow.endpoint);
    expect(polls.at(-1)?.status).toBe(200);
    for (const exchange of polls.slice(0, -1)) expect([exchange.status, exchange.responseBody]).toEqual([404, "[]"]);
    for (const exchange of polls) {
      expect(exchange.body).toBe(`token=${flow.token}`);
      expect(exchange.headers["Content-Type"]).toBe("application/x-www-form-urlencoded; charset=utf-8");
    }
    // Once: a later poll (a second phone holding the token, say) gets nothing.
    const again = await phone.pollOnce(flow);
    expect([again.status, again.responseBody]).toEqual([404, "[]"]);
    // The account page lists the app password the grant minted, named after the app, with Revoke.
    await page.goto(`${origin}/account`);
    await expect(page.getByRole("button", { name: `Revoke ${ANTENNAPOD_USER_AGENT}` }).count()).resolves.toBe(1);
  });

  it("syncs as AntennaPod does: subscriptions, then 70 episode actions in batches of 30 (Basic on each)", async () => {
    for (const feed of FEEDS) phone.subscriptions.add(feed);
    const listened = phone.now();
    phone.queuedActions = Array.from(
      { length: 70 },
      (_, i): EpisodeAction => ({
        podcast: FEEDS[i % FEEDS.length],
        episode: `https://antennapod.example.com/episodes/${i}.mp3`,
        guid: `antennapod-${i}`,
        action: "play",
        at: listened - (70 - i) * 1000,
        started: i % 7 === 0 ? 1800 : 0,
        position: i % 7 === 0 ? 1800 : 60 + i,
        total: 1800,
      }),
    );
    uploaded.push(...phone.queuedActions.map(actionJson));
    const before = phone.exchanges.length;
    await phone.sync();
    const calls = phone.exchanges.slice(before);
    expect(calls.map((call) => `${call.method} ${callOf(call.url)} ${call.status}`)).toEqual([
      "GET subscriptions?since=0 200",
      "POST subscription_change/create 200",
      "GET episode_action?since=0 200",
      "POST episode_action/create 200",
      "POST episode_action/create 200",
      "POST episode_action/create 200",
    ]);
    const basic = `Basic ${Buffer.from(`${credentials.loginName}:${credentials.appPassword}`).toString("base64")}`;
    for (const call of calls) {
      expect(call.headers).toMatchObject({ Authorization: basic, Accept: "application/json" });
      expect(call.headers["User-Agent"]).toBe(ANTENNAPOD_USER_AGENT);
      if (call.method === "POST") expect(call.headers["Content-Type"]).toBe("application/json; charset=utf-8");
    }
    const batches = calls.slice(3).map((call) => JSON.parse(call.body) as unknown[]);
    expect(batches.map((batch) => batch.length)).toEqual([UPLOAD_BULK_SIZE, UPLOAD_BULK_SIZE, 10]);
    expect(batches.flat()).toEqual(uploaded);
    // Android's org.json writes `/` as `\/`: the server reads it as JSON does.
    expect(calls[1].body).toContain("https:\\/\\/antennapod.example.com\\/a.xml");
    // The next since is the phone's clock, 5 minutes ahead of the server's.
    expect(phone.lastEpisodeActionSync).toBeGreaterThan(Math.floor(Date.now() / 1000) + 240);
  });

  it("reads them back on its next sync, its since being its own clock, and uploads what it queued since", async () => {
    // Meanwhile the person listened to episode 1 from 61 s to 900 s and subscribed to one more podcast.
    const extraFeed = "https://antennapod.example.com/d.xml";
    phone.subscriptions.add(extraFeed);
    phone.queuedAdded.push(extraFeed);
    phone.queuedActions = [
      {
        podcast: FEEDS[1],
        episode: "https://antennapod.example.com/episodes/1.mp3",
        guid: "antennapod-1",
        action: "play",
        at: phone.now(),
        started: 61,
        position: 900,
        total: 1800,
      },
    ];
    const sinceSubscriptions = phone.lastSubscriptionSync;
    const sinceActions = phone.lastEpisodeActionSync;
    const before = phone.exchanges.length;
    await phone.sync();
    const calls = phone.exchanges.slice(before);
    expect(calls.map((call) => `${call.method} ${callOf(call.url)} ${call.status}`)).toEqual([
      `GET subscriptions?since=${sinceSubscriptions} 200`,
      "POST subscription_change/create 200",
      `GET episode_action?since=${sinceActions} 200`,
      "POST episode_action/create 200",
    ]);
    // What reached the server up to 600 s before since comes back: all of the first sync.
    expect([...phone.received.subscriptions].sort()).toEqual(FEEDS);
    const sorted = (list: Record<string, unknown>[]) =>
      [...list].sort((x, y) => String(x.guid).localeCompare(String(y.guid)));
    expect(sorted(phone.received.actions)).toEqual(sorted(uploaded));
    uploaded.push(...calls.slice(3).flatMap((call) => JSON.parse(call.body) as Record<string, unknown>[]));
    expect(JSON.parse(calls[1].body)).toEqual({ add: [extraFeed], remove: [] });
  });

  it("a second device on the gpodder.net paths (Debian's mygpoclient) sees the subscriptions and the 70 states", async () => {
    // The laptop connects with an app password of its own, made on the account page.
    await page.goto(`${origin}/account`);
    await page.getByLabel("App name").fill("gPodder on the laptop");
    await page.getByRole("button", { name: "Create app password" }).click();
    const username = await page.getByLabel("Username").inputValue();
    const password = await page.getByLabel("Password").inputValue();
    expect(username).toBe(credentials.loginName);

    const seen = await secondDevice(username, password, LAPTOP_FEED, LAPTOP_EPISODE);
    expect([...(seen.subscriptions as string[])].sort()).toEqual([...FEEDS, "https://antennapod.example.com/d.xml"]);
    const expected = latestPerEpisode(uploaded);
    const actions = seen.actions as Record<string, unknown>[];
    expect(actions).toHaveLength(70);
    for (const action of actions) {
      const sent = expected.get(action.episode as string) as Record<string, unknown>;
      expect(action).toMatchObject({
        podcast: sent.podcast,
        episode: sent.episode,
        action: "play",
        timestamp: sent.timestamp,
        // §14's mapping: a state's play starts at 0, or at its end once played.
        started: sent.position === sent.total ? sent.total : 0,
        position: sent.position,
        total: sent.total,
      });
    }
    expect(seen.update_urls).toEqual([]);
  });

  it("AntennaPod, its clock 5 minutes ahead and taken as since, misses nothing the other device wrote", async () => {
    // The laptop's changes reached the server before the phone's since, by the server's clock.
    const reached = Math.floor(Date.now() / 1000);
    expect(phone.lastSubscriptionSync).toBeGreaterThan(reached + 240);
    expect(phone.lastEpisodeActionSync).toBeGreaterThan(reached + 240);
    await phone.sync();
    expect(phone.received.subscriptions).toContain(LAPTOP_FEED);
    expect(phone.subscriptions.has(LAPTOP_FEED)).toBe(true);
    expect(phone.received.actions.map((action) => action.episode)).toContain(LAPTOP_EPISODE);
    expect(phone.positions.get(LAPTOP_EPISODE)).toBe(1234);
  });
});
