import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { buildOpenApiDocument } from "../src/openapi/document";

/** Debian's chromium (`.ci/run` installs it when absent); never a downloaded browser build. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const RESULTS = fileURLToPath(new URL("../test-results/", import.meta.url));
const METHODS = ["get", "put", "post", "delete", "patch"];

const origin = inject("workerOrigin");

function documentedOperations() {
  const document = buildOpenApiDocument() as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ method, path })),
  );
}

describe("GET /docs", () => {
  let browser: Browser;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`No Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH).`);
    }
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    });
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("renders every endpoint from the worker's own assets, requesting nothing from another host", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const requests: string[] = [];
    const failures: string[] = [];
    const consoleErrors: string[] = [];
    page.on("request", (request) => requests.push(request.url()));
    page.on("requestfailed", (request) => failures.push(`${request.url()}: ${request.failure()?.errorText}`));
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(message.text());
    });
    page.on("pageerror", (error) => consoleErrors.push(String(error)));

    const response = await page.goto(`${origin}/docs`, { waitUntil: "networkidle" });
    expect(response?.status()).toBe(200);
    expect(response?.headers()["content-type"]).toMatch(/^text\/html/);
    await page.waitForSelector("body[data-rendered]", { timeout: 15_000 });
    expect(await page.getAttribute("body", "data-rendered")).toBe("true");

    await expect(page.locator("h1").textContent()).resolves.toBe("Podcast Subscriptions API");
    const operations = documentedOperations();
    expect(operations.map(({ method, path }) => `${method} ${path}`)).toEqual(
      expect.arrayContaining(["get /v1/subscriptions", "patch /v1/subscriptions/{guid}", "post /v1/operations"]),
    );
    for (const { method, path } of operations) {
      const section = page.locator(`section.operation[data-method="${method}"][data-path="${path}"]`);
      await expect(section.count(), `${method.toUpperCase()} ${path} is shown`).resolves.toBe(1);
      await expect(section.locator(".operation-path").textContent()).resolves.toBe(path);
      await expect(section.isVisible()).resolves.toBe(true);
      const navLink = page.locator(`#nav a[href="#${await section.getAttribute("id")}"]`);
      await expect(navLink.count(), `${method.toUpperCase()} ${path} is in the sidebar`).resolves.toBe(1);
    }
    // Every status of the bulk endpoint's document shows, the 304/429 of the upcoming features included.
    const statuses = await page
      .locator('section.operation[data-path="/v1/subscriptions"][data-method="get"] details.response')
      .evaluateAll((elements) => elements.map((element) => element.getAttribute("data-status")));
    expect(statuses).toEqual(expect.arrayContaining(["200", "304", "400", "401", "429", "503"]));

    mkdirSync(RESULTS, { recursive: true });
    await page.screenshot({ path: `${RESULTS}docs.png` });
    await page.screenshot({ path: `${RESULTS}docs-full.png`, fullPage: true });

    const foreign = requests.filter((url) => new URL(url).origin !== origin && !url.startsWith("data:"));
    expect(foreign).toEqual([]);
    expect(requests).toEqual(expect.arrayContaining([`${origin}/docs`, `${origin}/openapi.json`]));
    expect(failures).toEqual([]);
    expect(consoleErrors).toEqual([]);
    await page.close();
  });

  it("filters the endpoints by text", async () => {
    const page = await browser.newPage();
    await page.goto(`${origin}/docs`);
    await page.waitForSelector("body[data-rendered=true]");
    await page.fill("#filter", "operations");
    await expect(page.locator("section.operation:visible").count()).resolves.toBe(1);
    await expect(page.locator('section.operation[data-path="/v1/operations"]').isVisible()).resolves.toBe(true);
    await page.close();
  });
});

describe("the worker behind the assets", () => {
  it("still answers /v1 itself (JSON:API), not the assets", async () => {
    const response = await fetch(`${origin}/v1/subscriptions`);
    expect(response.status).toBe(401);
    expect(response.headers.get("Content-Type")).toBe("application/vnd.api+json");
  });

  it("still answers /ext/link-method itself", async () => {
    const response = await fetch(`${origin}/ext/link-method`);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('JSON:API extension "link-method"');
  });
});
