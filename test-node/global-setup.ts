import { rmSync } from "node:fs";
import type { TestProject } from "vitest/node";
import { type Environment, migrateState, serveSignInWorker } from "./served-worker";

declare module "vitest" {
  export interface ProvidedContext {
    /** Origin of the locally served worker, static assets included, e.g. `http://127.0.0.1:40123`. */
    workerOrigin: string;
    /** A .dev.vars-style file holding the worker's secret, for `DEV_VARS_FILE=... npm run token`. */
    devVarsFile: string;
    /** Local state directories migrated once for the suite, per environment: copy them (served-worker.ts, migratedState). */
    migratedStates: Record<Environment, string>;
  }
}

/** Only this test secret: the Node suite never talks to a real identity provider or database. */
const TEST_SECRET = "node-suite-secret-0123456789abcdef0123456789";

/**
 * The worker most test files share (test-node/served-worker.ts), signing in with a local identity provider. Its
 * state directory is not provided: a file that reads or writes a database from outside the worker (wrangler d1
 * execute, the backup and admin scripts) serves a worker of its own, since the shared worker would answer 503 to
 * the other files' requests while that process holds the SQLite lock.
 */
export default async function setup(project: TestProject) {
  // Both at once: each migration is a chain of workerd starts, one core's work.
  const [single, shards] = await Promise.all([migrateState("single"), migrateState("shards")]);
  const worker = await serveSignInWorker(TEST_SECRET, {}, single);
  project.provide("workerOrigin", worker.origin);
  project.provide("devVarsFile", worker.devVarsFile);
  project.provide("migratedStates", { single, shards });
  return async () => {
    await worker.close();
    for (const state of [single, shards]) rmSync(state, { recursive: true, force: true });
  };
}
