import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { expect } from "vitest";

/**
 * What every page for people is checked for in Chromium (docs/API.md §16): no accessibility violation of serious or
 * critical impact (axe-core, run inside the page), no horizontal scrolling at 360 px, and screenshots at desktop
 * and phone width (SCREENSHOTS below). Used by the account pages' and the Login Flow's browser tests.
 */

/**
 * Where the screenshots go: test-results/screenshots/ on every run (git-ignored: the pages show times and random
 * credentials, so each run's PNGs differ), docs/screenshots/ (committed, shown in the README and the guides) with
 * `SCREENSHOTS=docs npm run test:node`.
 */
export const SCREENSHOTS = fileURLToPath(
  new URL(
    process.env.SCREENSHOTS === "docs" ? "../docs/screenshots/" : "../test-results/screenshots/",
    import.meta.url,
  ),
);
const AXE = fileURLToPath(new URL("../node_modules/axe-core/axe.min.js", import.meta.url));

type AxeViolation = { id: string; impact: string; nodes: { target: string[] }[] };

/**
 * Runs axe-core in an open page (its context must bypass the pages' CSP, which forbids every script); answers the
 * violations of serious or critical impact, each named with `where`.
 */
export async function axeViolations(page: Page, where: string): Promise<string[]> {
  await page.addScriptTag({ content: readFileSync(AXE, "utf8") });
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: () => Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run()).violations;
  });
  return violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) => `${where}: ${violation.id} at ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`,
    );
}

/** Opens `origin + path` in a new page of the context and runs axe-core there. */
export async function seriousViolations(context: BrowserContext, origin: string, path: string): Promise<string[]> {
  const page = await context.newPage();
  await page.goto(`${origin}${path}`);
  const violations = await axeViolations(page, path);
  await page.close();
  return violations;
}

/** Whether the page, 360 px wide, needs no horizontal scrolling. */
export async function fitsPhone(page: Page): Promise<boolean> {
  return page.evaluate(() => {
    // Runs in the page (the test's own types have no DOM).
    const view = globalThis as unknown as {
      innerWidth: number;
      document: { documentElement: { scrollWidth: number } };
    };
    return view.document.documentElement.scrollWidth <= view.innerWidth;
  });
}

/** SCREENSHOTS<name>-desktop.png (1280 px) and <name>-phone.png (360 px), after checking it fits each. */
export async function screenshot(context: BrowserContext, origin: string, path: string, name: string) {
  for (const [width, height, suffix] of [
    [1280, 900, "desktop"],
    [360, 740, "phone"],
  ] as const) {
    const page = await context.newPage();
    await page.setViewportSize({ width, height });
    await page.goto(`${origin}${path}`);
    expect(await fitsPhone(page), `${path} at ${width} px`).toBe(true);
    await page.screenshot({ path: `${SCREENSHOTS}${name}-${suffix}.png`, fullPage: true });
    await page.close();
  }
}
