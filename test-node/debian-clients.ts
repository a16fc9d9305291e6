import { execFile } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { browserTestsRequired, CHROMIUM_ARGS, findChromium } from "./chromium";
import { SCREENSHOTS } from "./page-checks";

/**
 * What the Node-side tests that drive real clients share: Debian's gpodder.net clients (python3-mygpoclient and
 * gpodder, on the system Python that holds Debian's packages) through test-node/gpodder-clients.py, and, for the
 * browser tests, Chromium. Mandatory when CI is set (.ci/run installs them) or BROWSER_TESTS=required; elsewhere a
 * missing one skips its tests, saying why.
 */

const PYTHON = "/usr/bin/python3";
const SCRIPT = fileURLToPath(new URL("./gpodder-clients.py", import.meta.url));
const PACKAGES = "/usr/lib/python3/dist-packages";

export const ciRequires = process.env.CI === "true" || process.env.CI === "1";
export const mygpoclientInstalled = existsSync(PYTHON) && existsSync(`${PACKAGES}/mygpoclient`);
export const gpodderInstalled = mygpoclientInstalled && existsSync(`${PACKAGES}/gpodder`);

/** Looked for once, by the browser tests only. */
let chromiumChoice: ReturnType<typeof findChromium> | undefined;
const chromiumFound = () => {
  chromiumChoice ??= findChromium();
  return chromiumChoice;
};

/**
 * Why a browser test that also runs mygpoclient is skipped here (printed), or undefined when it runs: where it is
 * required, a missing part fails it instead (`launchChromium`).
 */
export async function browserSkipReason(tests: string): Promise<string | undefined> {
  const required = browserTestsRequired || ciRequires;
  const choice = await chromiumFound();
  const reason =
    "missing" in choice && !required
      ? choice.missing
      : !mygpoclientInstalled && !required
        ? "Debian's python3-mygpoclient is not installed"
        : undefined;
  if (reason) console.warn(`Skipping ${tests}: ${reason}`);
  return reason;
}

/** Headless Chromium for a browser test, failing when a required part is missing; the screenshots' folder made. */
export async function launchChromium(): Promise<Browser> {
  const choice = await chromiumFound();
  if ("missing" in choice) throw new Error(`BROWSER_TESTS=required, but ${choice.missing}`);
  if (!mygpoclientInstalled) {
    throw new Error("CI requires Debian's python3-mygpoclient (apt-get install python3-mygpoclient)");
  }
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: choice.executablePath,
    args: CHROMIUM_ARGS,
    env: { ...process.env, ...choice.env },
  });
}

/** One run of test-node/gpodder-clients.py (`args`: its mode and theirs): the JSON its last line prints. */
export function gpodderClients(args: string[], env: Record<string, string> = {}): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(
      PYTHON,
      [SCRIPT, ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout.trim().split("\n").at(-1) as string));
      },
    );
  });
}
