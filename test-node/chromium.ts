import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/**
 * Which Chromium the browser tests drive, in this order:
 * 1. `CHROMIUM_PATH`, when it names a file;
 * 2. the Chromium build that the `@sparticuz/chromium` dev dependency ships inside its npm package (Linux x64
 *    only; unpacked into the temp directory on first use) with the NSS libraries it ships beside it, so
 *    `npm install && npm test` needs no system browser and no system library beyond glibc;
 * 3. Debian's `/usr/bin/chromium`.
 * With none of them the browser tests are skipped, saying how to run them, unless BROWSER_TESTS=required
 * (`.ci/run` sets it), which turns the skip into a failure.
 */
export type ChromiumChoice =
  | { executablePath: string; source: string; env?: Record<string, string> }
  | { missing: string };

export const browserTestsRequired = process.env.BROWSER_TESTS === "required";

const SYSTEM_CHROMIUM = "/usr/bin/chromium";

async function packagedChromium(): Promise<ChromiumChoice | undefined> {
  if (process.platform !== "linux" || process.arch !== "x64") return undefined;
  try {
    const { default: chromium, inflate } = await import("@sparticuz/chromium");
    const executablePath = await chromium.executablePath();
    // The package only unpacks its libraries on Amazon Linux; elsewhere they are unpacked here and put first.
    const bin = join(dirname(createRequire(import.meta.url).resolve("@sparticuz/chromium")), "..", "bin");
    const libraries = join(await inflate(join(bin, "al2023.tar.br")), "lib");
    const searchPath = [libraries, process.env.LD_LIBRARY_PATH].filter(Boolean).join(":");
    return { executablePath, source: "@sparticuz/chromium", env: { LD_LIBRARY_PATH: searchPath } };
  } catch {
    return undefined;
  }
}

export async function findChromium(): Promise<ChromiumChoice> {
  const configured = process.env.CHROMIUM_PATH;
  if (configured && existsSync(configured)) return { executablePath: configured, source: "CHROMIUM_PATH" };
  const packaged = await packagedChromium();
  if (packaged) return packaged;
  if (existsSync(SYSTEM_CHROMIUM)) return { executablePath: SYSTEM_CHROMIUM, source: SYSTEM_CHROMIUM };
  return {
    missing:
      `no Chromium for ${process.platform}-${process.arch}` +
      (configured ? ` (CHROMIUM_PATH=${configured} does not exist)` : "") +
      ": run them with CHROMIUM_PATH=/path/to/chromium npm run test:node",
  };
}

/** Flags for a headless run that contacts no Google service (no updates, no sync, no metrics). */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];
