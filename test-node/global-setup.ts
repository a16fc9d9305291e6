import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { TestProject } from "vitest/node";
import { unstable_startWorker } from "wrangler";
import { DEV_CLIENT_ID, devClient, startDevProvider } from "../scripts/dev-oidc-provider.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    /** Origin of the locally served worker, static assets included, e.g. `http://127.0.0.1:40123`. */
    workerOrigin: string;
    /** A .dev.vars-style file holding the worker's secret, for `DEV_VARS_FILE=... npm run token`. */
    devVarsFile: string;
    /** The worker's local state directory (as `--persist-to`), for `DEV_STATE_DIR=... npm run db:seed` and the like. */
    workerState: string;
    /** The local OpenID Connect provider the account pages sign in with (scripts/dev-oidc-provider.mjs). */
    oidcIssuer: string;
  }
}

const WRANGLER = fileURLToPath(new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url));

/** Only this test secret: the Node suite never talks to a real identity provider or database. */
const TEST_SECRET = "node-suite-secret-0123456789abcdef0123456789";

/**
 * Serves the worker as `wrangler dev` would (same wrangler.toml, static assets from public/), on a
 * free loopback port, with its local state in a temporary directory.
 */
export default async function setup(project: TestProject) {
  // Miniflare would otherwise try to download the Request.cf object from Cloudflare.
  process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
  process.env.WRANGLER_SEND_METRICS = "false";
  const persist = mkdtempSync(join(tmpdir(), "podcast-subscriptions-node-suite-"));
  const devVarsFile = join(persist, "test.dev.vars");
  writeFileSync(devVarsFile, `AUTH_JWT_SECRET="${TEST_SECRET}"\n`, { mode: 0o600 });
  // The docs' examples write subscriptions: the database gets the schema first, as `npm run dev` does.
  const migrate = spawnSync(
    process.execPath,
    [WRANGLER, "d1", "migrations", "apply", "DB", "--local", "--persist-to", persist],
    { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" },
  );
  if (migrate.status !== 0) throw new Error(`Local migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);
  // The identity provider listens first (its address is the worker's OIDC_ISSUER); its client, whose redirect URI
  // is the worker's, is registered once the worker's port is known.
  const provider = await startDevProvider();
  const worker = await unstable_startWorker({
    config: "wrangler.toml",
    bindings: {
      AUTH_JWT_SECRET: { type: "secret_text", value: TEST_SECRET },
      OIDC_ISSUER: { type: "plain_text", value: provider.issuer },
      OIDC_CLIENT_ID: { type: "plain_text", value: DEV_CLIENT_ID },
    },
    dev: {
      server: { hostname: "127.0.0.1", port: 0 },
      inspector: false,
      watch: false,
      persist,
      // The worker's warn events (a failed credential, say) would bury the report, as its request lines would:
      // errors only, unless TEST_LOGS=1 (vitest.config.ts hides the same in the workerd suite).
      logLevel: process.env.TEST_LOGS === "1" ? "log" : "error",
    },
  });
  await worker.ready;
  const url = await worker.url;
  provider.serve({ clients: [devClient([`${url.origin}/account/callback`])] });
  project.provide("workerOrigin", url.origin);
  project.provide("devVarsFile", devVarsFile);
  project.provide("workerState", persist);
  project.provide("oidcIssuer", provider.issuer);
  return async () => {
    await worker.dispose();
    await provider.close();
    rmSync(persist, { recursive: true, force: true });
  };
}
