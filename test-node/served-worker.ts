import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";
import { unstable_startWorker } from "wrangler";
import { DEV_CLIENT_ID, devClient, startDevProvider } from "../scripts/dev-oidc-provider.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TSX = join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");

/** The wrangler.toml environments the suite migrates once: the top level and `[env.shards]`. */
export type Environment = "single" | "shards";

/**
 * Migrates a new local state directory for `environment` with `npm run db:migrate:local` (scripts/migrate.ts, every
 * database the environment declares), as an operator would; `state`: where (a new temporary directory by default).
 * The suite runs it once per environment (suiteMigration) and the files copy the result (migratedState):
 * `wrangler d1 migrations apply` starts a local D1 (a workerd) for every migration file, about 10 s of CPU per
 * database, which every served worker paid before.
 */
export async function migrateState(environment: Environment, state?: string): Promise<string> {
  const into = state ?? mkdtempSync(join(tmpdir(), `podcast-subscriptions-migrated-${environment}-`));
  const args = ["--local", "--persist-to", into, ...(environment === "shards" ? ["--env", "shards"] : [])];
  const { status, output } = await runScript("scripts/migrate.ts", args);
  if (status !== 0) throw new Error(`Local migrations (${environment}) failed:\n${output}`);
  return into;
}

const migrations = new Map<Environment, Promise<string>>();

/**
 * The suite run's migrated state of `environment`, in `root` (global setup's directory, removed at its teardown),
 * migrated by the first caller of the whole run: global setup for the top level (the shared worker's), the first
 * file that needs it for `--env shards` (three databases, about 30 s of CPU that a run without those files does not
 * pay). The files run in worker processes of their own, three at a time: the first to create `<environment>.lock`
 * migrates into `<environment>.partial` and renames it (at once) to `<environment>`, or writes why it failed to
 * `<environment>.failed`; the others wait for either.
 */
export function suiteMigration(environment: Environment, root = inject("migrationRoot")): Promise<string> {
  let migration = migrations.get(environment);
  if (!migration) {
    migration = migrateOnce(environment, root);
    migrations.set(environment, migration);
  }
  return migration;
}

async function migrateOnce(environment: Environment, root: string): Promise<string> {
  const done = join(root, environment);
  const failed = join(root, `${environment}.failed`);
  let owner = true;
  try {
    mkdirSync(join(root, `${environment}.lock`));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    owner = false;
  }
  if (owner) {
    const partial = join(root, `${environment}.partial`);
    try {
      await migrateState(environment, partial);
    } catch (error) {
      writeFileSync(failed, String(error));
      throw error;
    }
    renameSync(partial, done);
    return done;
  }
  // Another file's process is migrating: a hang there ends at the hook's timeout (vitest.node.config.ts).
  for (;;) {
    if (existsSync(done)) return done;
    if (existsSync(failed)) throw new Error(`Another test file's migration failed: ${readFileSync(failed, "utf8")}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Runs a tsx entry point of the repository (an npm script's) without blocking this process; answers its output. */
export function runScript(script: string, args: string[]): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [TSX, join(ROOT, script), ...args], {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    });
    let output = "";
    child.stdout.on("data", (data) => {
      output += data;
    });
    child.stderr.on("data", (data) => {
      output += data;
    });
    child.on("close", (status) => resolve({ status, output }));
  });
}

/**
 * A local state directory of `environment` whose databases are migrated: a copy of the suite run's (suiteMigration;
 * `from` another), which nothing opens, so the copy is the migrated files exactly. Into `into`, or a new temporary
 * directory; the caller removes it.
 */
export async function migratedState(
  environment: Environment,
  { from, into }: { from?: string; into?: string } = {},
): Promise<string> {
  const source = from ?? (await suiteMigration(environment));
  const state = into ?? mkdtempSync(join(tmpdir(), `podcast-subscriptions-node-suite-${environment}-`));
  cpSync(source, state, { recursive: true });
  return state;
}

export interface ServedWorker {
  /** e.g. `http://127.0.0.1:40123` */
  origin: string;
  /** A .dev.vars-style file holding the worker's secret, for `DEV_VARS_FILE=... npm run token`. */
  devVarsFile: string;
  /**
   * The worker's local state directory (as `--persist-to`), for `DEV_STATE_DIR=... npm run db:seed` and the like.
   * Only for a worker the test file serves itself: another process opening the SQLite file locks it, and the worker
   * answers 503 to whatever request meets the lock (CI failed so when the suite's shared worker was used this way).
   */
  state: string;
  close(): Promise<void>;
}

/**
 * Serves the worker as `wrangler dev` would (same wrangler.toml, static assets from public/), on a free loopback
 * port, with its local state (migrated, as `npm run dev` does: migratedState) in a temporary directory of its own
 * (`template`: the migrated state to copy, global setup's own by default). Its variables
 * come from wrangler.toml and `devVarsFile` alone, never from the checkout's .dev.vars, where `npm run dev` writes
 * OIDC_ISSUER (envFiles replaces wrangler's default files). `oidcIssuer`: the provider it signs in with, if any;
 * `vars`: more variables over wrangler.toml's (FEED_FETCH_ALLOW_PRIVATE for the feeds test).
 */
export async function serveWorker(
  secret: string,
  oidcIssuer?: string,
  vars: Record<string, string> = {},
  template?: string,
): Promise<ServedWorker> {
  // Miniflare would otherwise try to download the Request.cf object from Cloudflare.
  process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";
  process.env.WRANGLER_SEND_METRICS = "false";
  const state = await migratedState("single", { from: template });
  const devVarsFile = join(state, "test.dev.vars");
  writeFileSync(devVarsFile, `AUTH_JWT_SECRET="${secret}"\n`, { mode: 0o600 });
  const worker = await unstable_startWorker({
    config: "wrangler.toml",
    envFiles: [devVarsFile],
    bindings: Object.fromEntries(
      Object.entries({
        ...(oidcIssuer ? { OIDC_ISSUER: oidcIssuer, OIDC_CLIENT_ID: DEV_CLIENT_ID } : {}),
        ...vars,
      }).map(([name, value]) => [name, { type: "plain_text" as const, value }]),
    ),
    dev: {
      server: { hostname: "127.0.0.1", port: 0 },
      inspector: false,
      watch: false,
      persist: state,
      // The worker's warn events (a failed credential, say) would bury the report, as its request lines would:
      // errors only, unless TEST_LOGS=1 (vitest.config.ts hides the same in the workerd suite).
      logLevel: process.env.TEST_LOGS === "1" ? "log" : "error",
    },
  });
  await worker.ready;
  const { origin } = await worker.url;
  return {
    origin,
    devVarsFile,
    state,
    close: async () => {
      await worker.dispose();
      rmSync(state, { recursive: true, force: true });
    },
  };
}

export interface SignInWorker extends ServedWorker {
  /** The local OpenID Connect provider the worker signs in with (scripts/dev-oidc-provider.mjs). */
  oidcIssuer: string;
}

/**
 * serveWorker with a local OpenID Connect provider of its own, as `npm run dev` runs them. The provider listens
 * first (its address is the worker's OIDC_ISSUER); its client, whose redirect URI is the worker's, is registered
 * once the worker's port is known.
 */
export async function serveSignInWorker(
  secret: string,
  vars: Record<string, string> = {},
  template?: string,
): Promise<SignInWorker> {
  const provider = await startDevProvider();
  const worker = await serveWorker(secret, provider.issuer, vars, template).catch(async (error: unknown) => {
    await provider.close();
    throw error;
  });
  provider.serve({ clients: [devClient([`${worker.origin}/account/callback`])] });
  return {
    ...worker,
    oidcIssuer: provider.issuer,
    close: async () => {
      await worker.close();
      await provider.close();
    },
  };
}
