import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { urlKey } from "../src/db/url-key";
import { browserSkipReason, gpodderClients, launchChromium } from "./debian-clients";
import {
  seriousViolations as axeAt,
  axeViolations,
  fitsPhone,
  SCREENSHOTS,
  screenshot as screenshotAt,
} from "./page-checks";
import { type SignInWorker, serveSignInWorker } from "./served-worker";

/**
 * The account pages (docs/API.md §16) as a listener uses them: headless Chromium with JavaScript off signs in at
 * the local OpenID Connect provider (the one `npm run dev` starts), creates an app password, and Debian's real
 * mygpoclient syncs with the credentials read off the page; the pages then show what it synced. axe-core runs in
 * every page, every page fits 360 px, and its screenshots are taken here (page-checks.ts SCREENSHOTS).
 */

/**
 * seedFeedRound writes into the worker's database from another process: this file serves its own worker and
 * identity provider (served-worker.ts says why not the suite's shared one).
 */
let served: SignInWorker;
let origin: string;
const skipReason = await browserSkipReason("the account pages browser tests");

/** mygpoclient's calls (test-node/gpodder-clients.py): a device, a subscription, a play at 42 s of 100 s. */
function syncWithMygpoclient(username: string, password: string): Promise<Record<string, unknown>> {
  return gpodderClients(["mygpoclient", origin, username, password]);
}

const FEED = "https://mygpoclient.example.com/feed.xml";
const EPISODE = "https://mygpoclient.example.com/1.mp3";
const WRANGLER = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));

/**
 * What the feed round writes after fetching FEED (docs/API.md §18), written straight into the worker's local D1:
 * a long title (the page must still fit a phone), an author, artwork on another origin and a `javascript:` site,
 * neither of which may reach the page. (Markup in stored text: test/account-pages.test.ts.) The screenshots show it.
 */
const PODCAST_TITLE = "The Extraordinarily Long-Winded Weekly Conversation About Everything & More";
function seedFeedRound(): void {
  const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
  const key = urlKey(FEED);
  const command = `INSERT OR IGNORE INTO feeds (url_key) VALUES (${key});
UPDATE feeds SET url = ${quote(FEED)}, final_url = ${quote(FEED)}, status = 'ok', title = ${quote(PODCAST_TITLE)},
  author = 'Maria & Friends', image_url = 'http://127.0.0.1:9/cover.jpg', site_url = 'javascript:alert(1)',
  fetched_at = ${Date.now()} WHERE url_key = ${key};`;
  execFileSync(
    process.execPath,
    [WRANGLER, "d1", "execute", "DB", "--local", "--persist-to", served.state, "--command", command],
    { stdio: "pipe", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
  );
}

const screenshot = (context: BrowserContext, path: string, name: string) => screenshotAt(context, origin, path, name);
const seriousViolations = (context: BrowserContext, path: string) => axeAt(context, origin, path);

describe.skipIf(skipReason !== undefined)("the account pages in Chromium, JavaScript off", () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  // This file's worker starts with an empty database each run: the screenshots show this user alone.
  const userName = "maria";
  let credentials: { server: string; username: string; password: string };

  beforeAll(async () => {
    served = await serveSignInWorker("account-pages-secret-0123456789abcdef0123456789");
    origin = served.origin;
    browser = await launchChromium();
    context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await served?.close();
  });

  it("signs in from the home page at the local provider (a user name only, for development only)", async () => {
    await page.goto(`${origin}/`);
    await screenshot(context, "/", "home");
    await page.getByRole("link", { name: "Sign in" }).click();
    await expect(page.getByText("For development only").count()).resolves.toBe(1);
    await page.getByLabel("User name").fill(userName);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${origin}/account`);
    await expect(page.locator("main").textContent()).resolves.toContain(`Signed in as ${userName}`);
    await expect(page.getByRole("button", { name: "Sign out" }).count()).resolves.toBe(1);
  });

  it("creates an app password, and mygpoclient syncs with what the page shows", async () => {
    await page.getByLabel("App name").fill("gPodder");
    await page.getByRole("button", { name: "Create app password" }).click();
    credentials = {
      server: await page.getByLabel("Server").inputValue(),
      username: await page.getByLabel("Username").inputValue(),
      password: await page.getByLabel("Password").inputValue(),
    };
    expect(credentials.server).toBe(origin);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.screenshot({ path: `${SCREENSHOTS}connect-desktop.png`, fullPage: true });
    await page.setViewportSize({ width: 360, height: 740 });
    expect(await fitsPhone(page), "the connect page at 360 px").toBe(true);
    await page.screenshot({ path: `${SCREENSHOTS}connect-phone.png`, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });

    const synced = await syncWithMygpoclient(credentials.username, credentials.password);
    expect(synced.subscriptions).toEqual([FEED]);
  });

  it("shows the subscription, the episode's progress bar, the device and the app password", async () => {
    await page.goto(`${origin}/account/subscriptions`);
    await expect(page.locator("ul.feeds").textContent()).resolves.toContain(FEED);
    await expect(page.getByRole("button", { name: `Unsubscribe from ${FEED}` }).count()).resolves.toBe(1);
    await page.goto(`${origin}/account/progress`);
    const bar = page.getByRole("progressbar", { name: `Position in ${EPISODE}` });
    await expect(bar.getAttribute("value")).resolves.toBe("42");
    await expect(bar.getAttribute("max")).resolves.toBe("100");
    await page.goto(`${origin}/account`);
    await expect(page.locator("main").textContent()).resolves.toMatch(/CI\s*\(ci-device\)\s*desktop/);
    await expect(page.getByRole("button", { name: "Revoke gPodder" }).count()).resolves.toBe(1);
    for (const [path, name] of [
      ["/account", "account"],
      ["/account/subscriptions", "subscriptions"],
      ["/account/progress", "progress"],
      ["/account/erase", "erase"],
    ] as const) {
      await screenshot(context, path, name);
    }
  });

  it("shows the podcast by its title once the feed is read, loads nothing from another origin, fits 360 px", async () => {
    seedFeedRound();
    const elsewhere: string[] = [];
    page.on("request", (request) => {
      if (new URL(request.url()).origin !== origin) elsewhere.push(request.url());
    });
    await page.goto(`${origin}/account/subscriptions`);
    const item = page.locator("ul.feeds li").first();
    await expect(item.locator(".title").textContent()).resolves.toBe(PODCAST_TITLE);
    await expect(item.locator(".author").textContent()).resolves.toBe("by Maria & Friends");
    await expect(item.locator(".url").textContent()).resolves.toBe(FEED);
    await expect(page.getByRole("button", { name: `Unsubscribe from ${PODCAST_TITLE}` }).count()).resolves.toBe(1);
    // The artwork is never requested, the site is no link.
    await expect(page.locator("img").count()).resolves.toBe(0);
    await expect(page.locator('a[href^="javascript:"]').count()).resolves.toBe(0);
    await page.goto(`${origin}/account/progress`);
    await expect(page.locator("ol.episodes .feed").first().textContent()).resolves.toBe(`from ${PODCAST_TITLE}`);
    expect(elsewhere).toEqual([]);
    await page.setViewportSize({ width: 360, height: 740 });
    await page.goto(`${origin}/account/subscriptions`);
    expect(await fitsPhone(page), "the subscriptions page with a long title at 360 px").toBe(true);
    await page.setViewportSize({ width: 1280, height: 900 });
    // The screenshots of the pages that show podcasts, now with a title (page-checks.ts SCREENSHOTS).
    await screenshot(context, "/account/subscriptions", "subscriptions");
    await screenshot(context, "/account/progress", "progress");
  });

  it("has no accessibility violation of serious or critical impact on any page (axe-core)", async () => {
    // axe is a script: injected into a context that lets it run (the pages themselves forbid scripts).
    const checking = await browser.newContext({ bypassCSP: true, storageState: await context.storageState() });
    const violations: string[] = [];
    for (const path of ["/", "/account", "/account/subscriptions", "/account/progress", "/account/erase"]) {
      violations.push(...(await seriousViolations(checking, path)));
    }
    const signedOut = await browser.newContext({ bypassCSP: true });
    violations.push(...(await seriousViolations(signedOut, "/account")));
    // The connect page and an error page.
    const connect = await checking.newPage();
    await connect.goto(`${origin}/account`);
    await connect.getByLabel("App name").fill("axe");
    await connect.getByRole("button", { name: "Create app password" }).click();
    violations.push(...(await axeViolations(connect, "connect page")));
    violations.push(...(await seriousViolations(signedOut, "/account/subscriptions?after=x")));
    await checking.close();
    await signedOut.close();
    expect(violations).toEqual([]);
  });

  it("exports and imports OPML through the page", async () => {
    await page.goto(`${origin}/account/subscriptions`);
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Export OPML" }).click(),
    ]);
    const path = await download.path();
    expect(readFileSync(path, "utf8")).toContain(`xmlUrl="${FEED}"`);
    await page.getByLabel("OPML file").setInputFiles({
      name: "podcasts.opml",
      mimeType: "text/x-opml",
      buffer: Buffer.from(
        `<?xml version="1.0"?><opml version="2.0"><body><outline text="Imported" xmlUrl="https://import.example/feed.xml"/><outline text="Broken" xmlUrl="not a url"/></body></opml>`,
      ),
    });
    await page.getByRole("button", { name: "Import" }).click();
    await expect(page.locator("main").textContent()).resolves.toContain("Added 1 podcast");
    await expect(page.locator("ul.skipped").textContent()).resolves.toContain("not a url");
    await page.goto(`${origin}/account/subscriptions`);
    await expect(page.locator("ul.feeds").textContent()).resolves.toContain("https://import.example/feed.xml");
  });

  it("Revoke stops the app", async () => {
    await page.goto(`${origin}/account`);
    await page.getByRole("button", { name: "Revoke gPodder" }).click();
    await expect(page.locator("main").textContent()).resolves.not.toContain("gPodder");
    await expect(syncWithMygpoclient(credentials.username, credentials.password)).rejects.toThrow(/Unauthorized|401/);
  });

  it("Sign out ends the session: the same cookies replayed are signed out", async () => {
    const before = await context.storageState();
    await page.getByRole("button", { name: "Sign out" }).click();
    await expect(page.getByRole("link", { name: "Sign in" }).count()).resolves.toBe(1);
    const replay = await browser.newContext({ javaScriptEnabled: false, storageState: before });
    const again = await replay.newPage();
    await again.goto(`${origin}/account`);
    await expect(again.getByRole("button", { name: "Sign out" }).count()).resolves.toBe(0);
    await expect(again.getByRole("link", { name: "Sign in" }).count()).resolves.toBe(1);
    await screenshot(replay, "/account", "signed-out");
    await replay.close();
  });

  it("erases the account after the typed confirmation, and only then", async () => {
    await page.getByRole("link", { name: "Sign in" }).click();
    // Still signed in at the provider: back at once; otherwise its form again.
    if (!page.url().startsWith(origin)) {
      await page.getByLabel("User name").fill(userName);
      await page.getByRole("button", { name: "Sign in" }).click();
    }
    await page.waitForURL(`${origin}/account`);
    await page.goto(`${origin}/account/erase`);
    await page.getByLabel("Confirm").fill("delete");
    await page.getByRole("button", { name: "Erase my account" }).click();
    await expect(page.locator("main").textContent()).resolves.toContain("Nothing was erased");
    await page.getByLabel("Confirm").fill("erase");
    await page.getByRole("button", { name: "Erase my account" }).click();
    await expect(page.locator("h1").textContent()).resolves.toBe("Your account is erased");
    await page.goto(`${origin}/account`);
    await expect(page.getByRole("link", { name: "Sign in" }).count()).resolves.toBe(1);
  });
});
