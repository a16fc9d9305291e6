import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { serveSignInWorker, suiteMigration } from "./served-worker";

declare module "vitest" {
  export interface ProvidedContext {
    /** Origin of the locally served worker, static assets included, e.g. `http://127.0.0.1:40123`. */
    workerOrigin: string;
    /** A .dev.vars-style file holding the worker's secret, for `DEV_VARS_FILE=... npm run token`. */
    devVarsFile: string;
    /** Where the suite run's migrated states are, one per environment, each migrated once on first use (served-worker.ts, suiteMigration). */
    migrationRoot: string;
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
  // The top level's now (the shared worker starts from it); `--env shards` by the first file that needs it.
  const migrationRoot = mkdtempSync(join(tmpdir(), "podcast-subscriptions-migrated-"));
  project.provide("migrationRoot", migrationRoot);
  try {
    const worker = await serveSignInWorker(TEST_SECRET, {}, await suiteMigration("single", migrationRoot));
    project.provide("workerOrigin", worker.origin);
    project.provide("devVarsFile", worker.devVarsFile);
    return async () => {
      await worker.close();
      rmSync(migrationRoot, { recursive: true, force: true });
    };
  } catch (error) {
    rmSync(migrationRoot, { recursive: true, force: true });
    throw error;
  }
}
