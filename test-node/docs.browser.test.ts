import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { buildOpenApiDocument } from "../src/openapi/document";
import { browserTestsRequired, CHROMIUM_ARGS, findChromium } from "./chromium";

const RESULTS = fileURLToPath(new URL("../test-results/", import.meta.url));
const METHODS = ["get", "put", "post", "delete", "patch"];

const origin = inject("workerOrigin");
const choice = await findChromium();
const skipReason = "missing" in choice && !browserTestsRequired ? choice.missing : undefined;
// The one line a run without a browser prints; `.ci/run` sets BROWSER_TESTS=required, so CI never skips.
if (skipReason) console.warn(`Skipping the /docs browser tests: ${skipReason}`);

function documentedOperations() {
  const document = buildOpenApiDocument() as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ method, path })),
  );
}

/** The operation block Swagger UI renders for one method and path. */
function operationBlock(page: Page, method: string, path: string) {
  return page.locator(`.opblock.opblock-${method}`).filter({
    has: page.locator(`.opblock-summary-path[data-path="${path}"]`),
  });
}

async function openDocs(page: Page) {
  const response = await page.goto(`${origin}/docs`, { waitUntil: "networkidle" });
  await page.waitForSelector("body[data-rendered=true]", { timeout: 30_000 });
  return response;
}

describe.skipIf(skipReason !== undefined)("GET /docs (Swagger UI in headless Chromium)", () => {
  let browser: Browser;

  beforeAll(async () => {
    if ("missing" in choice) throw new Error(`BROWSER_TESTS=required, but ${choice.missing}`);
    browser = await chromium.launch({
      executablePath: choice.executablePath,
      args: CHROMIUM_ARGS,
      env: { ...process.env, ...choice.env },
    });
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("renders every operation of /openapi.json from the worker's own assets, requesting nothing from another host", async () => {
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

    const response = await openDocs(page);
    expect(response?.status()).toBe(200);
    expect(response?.headers()["content-type"]).toMatch(/^text\/html/);
    await expect(page.locator(".info .title").textContent()).resolves.toContain("Podcast Subscriptions API");

    const served = (await (await fetch(`${origin}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const operations = Object.entries(served.paths).flatMap(([path, item]) =>
      METHODS.filter((method) => item[method]).map((method) => ({ method, path })),
    );
    // The served document is the one the code builds, so a new route shows up here by itself.
    expect(operations).toEqual(documentedOperations());
    expect(operations.map(({ method, path }) => `${method} ${path}`)).toEqual(
      expect.arrayContaining([
        "get /v1/subscriptions",
        "patch /v1/subscriptions/{guid}",
        "post /v1/operations",
        "get /v1/subscriptions.opml",
        "post /v1/subscriptions.opml",
      ]),
    );
    for (const { method, path } of operations) {
      const block = operationBlock(page, method, path);
      await expect(block.count(), `${method.toUpperCase()} ${path} is shown once`).resolves.toBe(1);
      await expect(block.isVisible(), `${method.toUpperCase()} ${path} is visible`).resolves.toBe(true);
      await expect(block.locator(".opblock-summary-method").textContent()).resolves.toBe(method.toUpperCase());
    }
    expect(await page.locator(".opblock").count(), "no operation the document lacks").toBe(operations.length);

    // Opening an operation shows every documented response, 304 and 429 included.
    const list = operationBlock(page, "get", "/v1/subscriptions");
    await list.locator(".opblock-summary-control").click();
    await list.locator("tr.response").first().waitFor();
    const statuses = await list.locator("tr.response").evaluateAll((rows) => rows.map((row) => row.dataset.code));
    expect(statuses).toEqual(expect.arrayContaining(["200", "304", "400", "401", "429", "503"]));

    mkdirSync(RESULTS, { recursive: true });
    await page.screenshot({ path: `${RESULTS}docs.png` });
    await page.screenshot({ path: `${RESULTS}docs-full.png`, fullPage: true });

    const foreign = requests.filter((url) => new URL(url).origin !== origin && !url.startsWith("data:"));
    expect(foreign).toEqual([]);
    expect(requests).toEqual(
      expect.arrayContaining([
        `${origin}/docs`,
        `${origin}/openapi.json`,
        `${origin}/assets/swagger-ui/swagger-ui-bundle.js`,
        `${origin}/assets/docs.css`,
      ]),
    );
    expect(failures).toEqual([]);
    expect(consoleErrors).toEqual([]);
    await page.close();
  });

  it("filters the operations by tag", async () => {
    const page = await browser.newPage();
    await openDocs(page);
    await page.fill(".operation-filter-input", "bulk");
    await expect.poll(() => page.locator(".opblock").count(), { message: "only the bulk endpoint is left" }).toBe(1);
    await expect(operationBlock(page, "post", "/v1/operations").isVisible()).resolves.toBe(true);
    await page.close();
  });

  it("shows the OPML endpoints with their own media types and the example document", async () => {
    const page = await browser.newPage();
    await openDocs(page);
    const importBlock = operationBlock(page, "post", "/v1/subscriptions.opml");
    await importBlock.locator(".opblock-summary-control").click();
    const requestBody = importBlock.locator(".opblock-section-request-body");
    await requestBody.waitFor();
    expect(await requestBody.locator("select option").allTextContents()).toContain("text/x-opml");
    await expect(requestBody.textContent()).resolves.toMatch(
      /<\?xml version="1\.0" encoding="UTF-8"\?>\s*<opml version="2\.0">/,
    );
    const exportBlock = operationBlock(page, "get", "/v1/subscriptions.opml");
    await exportBlock.locator(".opblock-summary-control").click();
    const responses = exportBlock.locator(".responses-wrapper");
    await responses.waitFor();
    expect(await responses.locator("select option").allTextContents()).toEqual(
      expect.arrayContaining([expect.stringMatching(/^text\/x-opml\b/)]),
    );
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
