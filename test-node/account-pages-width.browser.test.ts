import { readFileSync } from "node:fs";
import { sign } from "hono/jwt";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { browserSkipReason, launchChromium } from "./debian-clients";
import { fitsPhone } from "./page-checks";

/**
 * docs/API.md §16: every page for people fits a 360-pixel-wide screen without horizontal scrolling, however long
 * what it shows: here an account filled to the limits' longest, a 2 048-byte feed URL and media URL without a place
 * to break, a 64-character device id, a 100-character caption and app name, in Chromium with JavaScript off.
 */

const origin = inject("workerOrigin");
const skipReason = await browserSkipReason("the account pages width tests");

/** 2 048 bytes (section 5's longest feedUrl and mediaUrl), one unbroken path segment. */
const longest = (host: string) => {
  const head = `https://${host}/`;
  return `${head}${"x".repeat(2048 - head.length)}`;
};
const FEED = longest("wide-feed.example");
const MEDIA = longest("wide-media.example");
const NAME = "W".repeat(100);
const DEVICE = "d".repeat(64);

/** A bearer token for the node suite's worker (its secret is in the .dev.vars file global-setup wrote). */
async function tokenFor(userId: string): Promise<string> {
  const secret = readFileSync(inject("devVarsFile"), "utf8").match(/AUTH_JWT_SECRET="([^"]+)"/)?.[1] as string;
  const now = Math.floor(Date.now() / 1000);
  return sign({ sub: userId, iat: now, exp: now + 3600 }, secret, "HS256");
}

async function call(path: string, init: RequestInit & { headers: Record<string, string> }) {
  const response = await fetch(`${origin}${path}`, init);
  expect(response.status, `${init.method} ${path}: ${await response.clone().text()}`).toBeLessThan(300);
  return response;
}

/** The account of `userId`, filled through the APIs with the longest names and URLs the limits allow. */
async function fill(userId: string) {
  const json = { Authorization: `Bearer ${await tokenFor(userId)}`, "Content-Type": "application/vnd.api+json" };
  const feed = crypto.randomUUID();
  await call("/v1/subscriptions", {
    method: "POST",
    headers: json,
    body: JSON.stringify({ data: { type: "subscription", id: feed, attributes: { feedUrl: FEED } } }),
  });
  const episode = (played: boolean) =>
    call("/v1/episodes", {
      method: "POST",
      headers: json,
      body: JSON.stringify({
        data: {
          type: "episode",
          id: crypto.randomUUID(),
          attributes: {
            mediaUrl: MEDIA,
            itemGuid: "g".repeat(1024),
            duration: 3600,
            position: 1800,
            played,
            changedAt: new Date().toISOString(),
          },
          relationships: { subscription: { data: { type: "subscription", id: feed } } },
        },
      }),
    });
  await episode(false);
  await episode(true);
  const minted = await call("/v1/app-passwords", {
    method: "POST",
    headers: json,
    body: JSON.stringify({ data: { type: "app-password", attributes: { label: NAME } } }),
  });
  const { username, password } = ((await minted.json()) as { data: { attributes: Record<string, string> } }).data
    .attributes;
  await call(`/api/2/devices/${username}/${DEVICE}.json`, {
    method: "POST",
    headers: { Authorization: `Basic ${btoa(`${username}:${password}`)}` },
    body: JSON.stringify({ caption: NAME, type: "mobile" }),
  });
}

describe.skipIf(skipReason !== undefined)("every page fits 360 px with the longest URLs and names", () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  // A name no other file of the node suite uses (they share the worker).
  const userName = "wide-listener";

  beforeAll(async () => {
    browser = await launchChromium();
    context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 360, height: 740 } });
    page = await context.newPage();
    await fill(userName);
    await page.goto(`${origin}/account/signin`);
    await page.getByLabel("User name").fill(userName);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${origin}/account`);
  });

  afterAll(async () => {
    await browser?.close();
  });

  /** The page now open, at 360 px: no horizontal scrolling, and it shows `shown` (so the long text is there). */
  async function expectFits(where: string, shown: string) {
    await expect(page.locator("body").textContent(), where).resolves.toContain(shown);
    // After a form's answer, its stylesheet too (the text alone can be there before it).
    await page.waitForLoadState("load");
    expect(await fitsPhone(page), `${where} at 360 px`).toBe(true);
  }

  it("the pages one opens: home, account, subscriptions, listening progress, erase, a page not found", async () => {
    for (const [path, shown] of [
      ["/", "Sign"],
      ["/account", NAME],
      ["/account/subscriptions", FEED],
      ["/account/progress", MEDIA],
      ["/account/erase", "Erase my account"],
      [`/account/${"y".repeat(1500)}`, "Not found"],
      [`/${"z".repeat(1500)}`, "z".repeat(1500)],
    ] as const) {
      await page.goto(`${origin}${path}`);
      await expectFits(path, shown);
    }
  });

  it("the pages a form answers: connect an app, an OPML import with a skipped outline, an erase refused", async () => {
    await page.goto(`${origin}/account`);
    await page.getByLabel("App name").fill("C".repeat(100));
    await page.getByRole("button", { name: "Create app password" }).click();
    await expectFits("the connect page", "C".repeat(100));

    await page.goto(`${origin}/account/subscriptions`);
    await page.getByLabel("OPML file").setInputFiles({
      name: "podcasts.opml",
      mimeType: "text/x-opml",
      buffer: Buffer.from(
        `<?xml version="1.0"?><opml version="2.0"><body><outline text="Broken" xmlUrl="ftp://${"q".repeat(2000)}"/></body></opml>`,
      ),
    });
    await page.getByRole("button", { name: "Import" }).click();
    await expectFits("the import result", "q".repeat(2000));

    await page.goto(`${origin}/account/erase`);
    await page.getByLabel("Confirm").fill("E".repeat(100));
    await page.getByRole("button", { name: "Erase my account" }).click();
    await expectFits("the refused erase", "Nothing was erased");
  });
});
