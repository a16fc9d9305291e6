import type { TestProject } from "vitest/node";
import { devClient, startDevProvider } from "../scripts/dev-oidc-provider.mjs";
import { serveWorker } from "./served-worker";

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

/** Only this test secret: the Node suite never talks to a real identity provider or database. */
const TEST_SECRET = "node-suite-secret-0123456789abcdef0123456789";

/** The worker most test files share (test-node/served-worker.ts), signing in with a local identity provider. */
export default async function setup(project: TestProject) {
  // The identity provider listens first (its address is the worker's OIDC_ISSUER); its client, whose redirect URI
  // is the worker's, is registered once the worker's port is known.
  const provider = await startDevProvider();
  const worker = await serveWorker(TEST_SECRET, provider.issuer);
  provider.serve({ clients: [devClient([`${worker.origin}/account/callback`])] });
  project.provide("workerOrigin", worker.origin);
  project.provide("devVarsFile", worker.devVarsFile);
  project.provide("workerState", worker.state);
  project.provide("oidcIssuer", provider.issuer);
  return async () => {
    await worker.close();
    await provider.close();
  };
}
