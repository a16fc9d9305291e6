import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseEnv } from "node:util";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { unstable_readConfig } from "wrangler";

const migrations = await readD1Migrations(fileURLToPath(new URL("./drizzle", import.meta.url)));

/**
 * The worker logs one JSON line per request, and info and warn events (an auth failure, a write refused while a
 * bucket moves, a cron run: docs/README-ops.md, "What to watch"); in the test report they only bury failures.
 * Error events stay (a test that causes one on purpose marks it as expected). TEST_LOGS=1 shows everything.
 */
const showWorkerLogs = process.env.TEST_LOGS === "1";
function isWorkerInfoOrWarning(line: string): boolean {
  if (!line.startsWith('{"level":"info"') && !line.startsWith('{"level":"warn"')) return false;
  try {
    return typeof JSON.parse(line).event === "string";
  } catch {
    return false;
  }
}

/**
 * The suite tests the committed configuration, never a developer's local files. The plugin reads wrangler.toml
 * as `wrangler dev` does, so it also loads the git-ignored .dev.vars beside it (or .env files when there is none),
 * where `npm run dev` writes OIDC_ISSUER: "without OIDC_ISSUER the page answers 503" then failed after
 * `npm run dev`. The .env files are not read (CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV), and every variable a
 * .dev.vars sets is bound back to wrangler.toml's value for the environment ("" where wrangler.toml declares
 * none: unset, for the worker). Wrangler's "Using secrets defined in .dev.vars", once per test file and project,
 * is then noise: its log level stays at warnings unless WRANGLER_LOG says otherwise.
 * .ci/run runs `npm run dev` (which writes .dev.vars) before `npm test`.
 */
process.env.CLOUDFLARE_LOAD_DEV_VARS_FROM_DOT_ENV = "false";
process.env.WRANGLER_LOG ??= "warn";
function committedVars(environment?: string): Record<string, unknown> {
  const config = unstable_readConfig({ config: "./wrangler.toml", env: environment });
  const localFiles = [".dev.vars", ...(environment ? [`.dev.vars.${environment}`] : [])].filter(existsSync);
  const localNames = localFiles.flatMap((path) => Object.keys(parseEnv(readFileSync(path, "utf8"))));
  return { ...Object.fromEntries(localNames.map((name) => [name, ""])), ...config.vars };
}

/** The worker as wrangler.toml declares it in `environment` (top level when undefined), inside workerd. */
function workerd(environment?: string) {
  return cloudflareTest({
    wrangler: { configPath: "./wrangler.toml", environment },
    miniflare: {
      // Each test file has a Miniflare of its own (`isolate` below), so its limiters' counters are its own; the
      // production limits would still trip within a busy file: the suite runs with loose ones, and the
      // rate-limit tests swap in the tight ones.
      ratelimits: {
        USER_RATE_LIMITER: { namespace_id: "1001", simple: { limit: 1_000_000, period: 60 } },
        AUTH_FAILURE_RATE_LIMITER: { namespace_id: "1002", simple: { limit: 1_000_000, period: 60 } },
        LOGIN_FLOW_RATE_LIMITER: { namespace_id: "1003", simple: { limit: 1_000_000, period: 60 } },
        LOGIN_POLL_RATE_LIMITER: { namespace_id: "1004", simple: { limit: 1_000_000, period: 60 } },
        TIGHT_USER_RATE_LIMITER: { namespace_id: "9001", simple: { limit: 5, period: 60 } },
        TIGHT_AUTH_FAILURE_RATE_LIMITER: { namespace_id: "9002", simple: { limit: 3, period: 60 } },
        TIGHT_LOGIN_FLOW_RATE_LIMITER: { namespace_id: "9003", simple: { limit: 30, period: 60 } },
        TIGHT_LOGIN_POLL_RATE_LIMITER: { namespace_id: "9004", simple: { limit: 60, period: 60 } },
        // One call a minute: test/file-isolation.ts spends it as each file starts, and fails the file if another
        // file already had (the counters would then be shared, and a rate-limit test could see another's).
        FILE_ISOLATION_PROBE: { namespace_id: "9999", simple: { limit: 1, period: 60 } },
      },
      bindings: {
        ...committedVars(environment),
        TEST_MIGRATIONS: migrations,
        // Tests sign their own tokens with this secret; it exists only here.
        AUTH_JWT_SECRET: "test-secret-for-vitest-only-0123456789abcdef",
        // No test fetches a feed unless it asks to (the feed round tests turn it on per scheduled run).
        FEED_FETCH: "off",
        // The property tests' size (test/property-options.ts): CI can raise it, a contributor lower it.
        PROPERTY_SEED: process.env.PROPERTY_SEED ?? "",
        PROPERTY_RUNS_SCALE: process.env.PROPERTY_RUNS_SCALE ?? "",
        // What `shards` adds to a property test is where each case's user lives, not more cases of the rule (the
        // same SQL, which `single` runs in full): a tenth of them there, a few users in each database
        // (docs/decisions.md, "Property tests in the shards project").
        PROPERTY_PROJECT_SHARE: environment === "shards" ? "0.1" : "1",
      },
    },
  });
}

/**
 * The files the `shards` project runs again: those whose behaviour depends on the database a user lives in. A
 * file is one when it reads, seeds or wraps D1 itself (through the helpers that find a user's shard, or a
 * binding by name), or runs the cron, which walks every shard; a file that only sends requests as users sees
 * the same answers whatever database holds them, and the routing itself is tested by the files that stay
 * (docs/development.md, "The shards project", lists the files left out and why each is safe).
 */
const SHARD_AWARE =
  /\b(databaseFor|shardFor|shardDatabases|wrapDatabaseOf|countedDatabaseOf|meteredDatabaseOf|seedSubscriptions|runCron|shardOfUser|shardRouting)\b|\benv\.DB(_\d+)?\b|SHARD_MAP/;
const testDirectory = fileURLToPath(new URL("./test/", import.meta.url));
const shardAwareFiles = readdirSync(testDirectory, { recursive: true, encoding: "utf8" })
  .filter((name) => name.endsWith(".test.ts") && SHARD_AWARE.test(readFileSync(testDirectory + name, "utf8")))
  .map((name) => `test/${name}`);

/**
 * The packages the tests load, by the specifiers the worker (of those its package.json dependencies ship) and the
 * tests import, type-only imports aside, and the JSX runtime tsconfig.json's jsxImportSource implies. Vite
 * pre-bundles them once per run (its dependency optimizer), so each file's fresh worker loads a few bundles instead
 * of the hundreds of modules zod, drizzle-orm and hono are made of (docs/decisions.md, issue 38). Listed from the
 * sources, so that a subpath imported later cannot be loaded beside its pre-bundled package as a second copy (a
 * class that `instanceof` would no longer recognise). A Node-only package that src/ imports for a script
 * (openapi-typescript) is no dependency of the worker, and cannot be bundled for it.
 */
const shipped = Object.keys(JSON.parse(readFileSync("package.json", "utf8")).dependencies);
const packageOf = (specifier: string) => specifier.split("/", specifier.startsWith("@") ? 2 : 1).join("/");
function importedPackages(directory: string): string[] {
  return readdirSync(directory, { recursive: true, encoding: "utf8" })
    .filter((name) => /\.tsx?$/.test(name))
    .flatMap((name) => [
      ...readFileSync(directory + name, "utf8").matchAll(/^(?:import|export)(?! type )[^;]*? from "([^".][^"]*)"/gm),
    ])
    .map(([, specifier]) => specifier)
    .filter((specifier) => !/^(cloudflare|node|vitest)(:|\/|$)/.test(specifier));
}
const preBundled = [
  ...new Set([
    ...importedPackages("src/").filter((specifier) => shipped.includes(packageOf(specifier))),
    ...importedPackages("test/"),
    "hono/jsx/jsx-runtime",
    "hono/jsx/jsx-dev-runtime",
  ]),
];

const suite = {
  include: ["test/**/*.test.ts"],
  deps: { optimizer: { ssr: { enabled: true, include: preBundled } } },
  // One Miniflare per test file (vitest's default, written down because the suite relies on it): each file has its
  // own D1 and its own rate-limiter counters, so files can run side by side and none sees another's state.
  isolate: true,
  // Property tests walk tens of thousands of cases: on a shared 2-core machine one took 5.6 s (vitest's 5 s default
  // failed a CI run), and a rate-limit test may first wait up to a minute for a fresh window (withinOneRateWindow).
  // Speed is measured by the bench, never by a test's timeout.
  testTimeout: 120_000,
  // A beforeEach may wait for the next rate-limit window (withinOneRateWindow: up to a minute), past vitest's 10 s
  // for a hook: a CI run failed there.
  hookTimeout: 90_000,
  // A test that spends a tight rate limit and fails after a limiter window ended during it proved nothing (the
  // counters restarted): withinOneRateWindow marks that failure, and the test runs once more in a fresh window.
  // Any other failure stands.
  retry: { count: 1, condition: /a rate-limit window ended during the test/ },
  // file-isolation: fails a file that would share limiter counters with another. recorded-responses: every
  // response the suite receives is checked against the OpenAPI document.
  setupFiles: ["./test/file-isolation.ts", "./test/apply-migrations.ts", "./test/recorded-responses.ts"],
  // The local OpenID Connect providers the account pages sign in with (docs/API.md §16), and the local feed server.
  globalSetup: ["./test/oidc-providers.global-setup.mjs", "./test/feed-server.global-setup.ts"],
};

/**
 * The suite runs against one database (the default deployment), and its shard-aware files again against two
 * shards (`[env.shards]`: users split over DB and DB_1 by SHARD_MAP). `--project single` or `--project shards`
 * runs one of them.
 */
export default defineConfig({
  test: {
    // Files side by side (vitest's default here would be one at a time: cores - 1): most of a file's time is
    // starting its worker and waiting on D1, timers and rate-limit windows, not computing. VITEST_MAX_WORKERS
    // or --maxWorkers overrides it.
    maxWorkers: Number(process.env.VITEST_MAX_WORKERS ?? 3),
    // A root option: vitest reads onConsoleLog from the root config only, never from a project's (where it
    // used to be, and every request line was printed).
    onConsoleLog: (line: string) => showWorkerLogs || !isWorkerInfoOrWarning(line),
    projects: [
      { plugins: [workerd()], test: { name: "single", ...suite } },
      { plugins: [workerd("shards")], test: { name: "shards", ...suite, include: shardAwareFiles } },
    ],
  },
});
