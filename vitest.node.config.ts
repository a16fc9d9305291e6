import { defineConfig } from "vitest/config";

/**
 * The Node-side suite (`npm test` runs it after the workerd suite): the OpenAPI document's lint,
 * freshness and status coverage, and the /docs page in headless Chromium against a locally served
 * worker (static assets included, which the workerd pool does not serve).
 */
export default defineConfig({
  test: {
    name: "node",
    environment: "node",
    include: ["test-node/**/*.test.ts"],
    globalSetup: ["./test-node/global-setup.ts"],
    // Tests and hooks start wrangler, Chromium and Python, migrate local databases and run the operator scripts: on a
    // machine running four other agents' suites a 120 s hook (the docs' examples), a 300 s one (npm run admin) and
    // a 60 s test (shards:move) timed out. A timeout here only catches a hang (the bench measures speed): one for
    // all, and no file sets a shorter one.
    testTimeout: 600_000,
    hookTimeout: 600_000,
    // Three files at a time on 2 cores (vitest's default is cores - 1: one at a time here): most of these tests
    // wait on processes they start (wrangler, Chromium, Python) or on the worker's 60 s credential trust.
    maxWorkers: 3,
  },
});
