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
    testTimeout: 60_000,
    // Hooks start wrangler, Chromium and Python and migrate local databases: on a machine running other suites that
    // took over 120 s (shards-cli failed there). A hook's timeout only catches a hang.
    hookTimeout: 600_000,
    // Three files at a time on 2 cores (vitest's default is cores - 1: one at a time here): most of these tests
    // wait on processes they start (wrangler, Chromium, Python) or on the worker's 60 s credential trust.
    maxWorkers: 3,
  },
});
