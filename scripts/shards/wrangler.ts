// What the shard tools (migrations, bucket moves) need from wrangler: the configuration of one
// environment, the databases its bucket map names, and a way to run the wrangler CLI.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bucketOf, parseBucketSet, parseShardMap } from "../../src/shards";
import { wranglerCommand, wranglerMessage } from "../wrangler-message.mjs";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const DEFAULT_CONFIG = join(ROOT, "wrangler.toml");
const WRANGLER = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");

/** Where the tools act: a wrangler config file, an environment of it (top level when undefined), local or remote. */
export interface Target {
  config: string;
  env?: string;
  remote: boolean;
  /** Local state directory, as `wrangler dev --persist-to` (local only). */
  persistTo?: string;
}

/** The command-line options (node:util parseArgs) that name a `Target`: `--local` or `--remote`, `--env`, `--persist-to`, `--config`. */
export const TARGET_OPTIONS = {
  local: { type: "boolean", default: false },
  remote: { type: "boolean", default: false },
  env: { type: "string" },
  "persist-to": { type: "string" },
  config: { type: "string", default: DEFAULT_CONFIG },
} as const;

type Wrangler = typeof import("wrangler");
let readConfig: Wrangler["unstable_readConfig"] | undefined;

/**
 * The environment's configuration as wrangler resolves it. wrangler's module is loaded on the first call, not when
 * a script starts: loading it costs 1.5 to 3 s of CPU (a 15 MB bundle, more under tsx), which `--help`, a refused
 * argument and a command that only runs the wrangler CLI (npm run restore) need not pay.
 */
export function wranglerConfig(target: Pick<Target, "config" | "env">): ReturnType<Wrangler["unstable_readConfig"]> {
  readConfig ??= (createRequire(import.meta.url)("wrangler") as Wrangler).unstable_readConfig;
  return readConfig({ config: target.config, env: target.env });
}

/** The environment's vars as wrangler resolves them (environments inherit no vars). */
export function environmentVars(target: Pick<Target, "config" | "env">): Record<string, unknown> {
  return wranglerConfig(target).vars ?? {};
}

/** The D1 bindings the environment declares. */
export function declaredDatabases(target: Pick<Target, "config" | "env">): string[] {
  return (wranglerConfig(target).d1_databases ?? []).map((database: { binding: string }) => database.binding);
}

function textVar(target: Pick<Target, "config" | "env">, name: string): string {
  const value = environmentVars(target)[name];
  return typeof value === "string" ? value : "";
}

/** The databases the environment's SHARD_MAP names (DB alone without a map). */
export function mappedDatabases(target: Pick<Target, "config" | "env">): string[] {
  return [...parseShardMap(textVar(target, "SHARD_MAP")).bindings];
}

/** Where one user's rows are in the environment: the bucket, the binding its map gives it, frozen or not. */
export interface UserShardOf {
  bucket: number;
  binding: string;
  frozen: boolean;
}

/** The user's shard by the environment's SHARD_MAP and SHARD_FROZEN, as the worker finds it (src/shards.ts). */
export async function userShardOf(target: Pick<Target, "config" | "env">, userId: string): Promise<UserShardOf> {
  const map = parseShardMap(textVar(target, "SHARD_MAP"));
  const frozen = parseBucketSet(textVar(target, "SHARD_FROZEN"), "SHARD_FROZEN");
  const bucket = await bucketOf(userId);
  return { bucket, binding: map.owners[bucket], frozen: frozen.has(bucket) };
}

/**
 * The local state directory the tools use: the one given (--persist-to), else DEV_STATE_DIR, else wrangler's
 * default (.wrangler/state beside the config). DEV_STATE_DIR lets the docs test (test-node/readme.test.ts) point
 * the commands it runs as written at the state of the worker it serves, never at the checkout's.
 */
export function localStateDir(persistTo?: string): string | undefined {
  return persistTo ?? (process.env.DEV_STATE_DIR || undefined);
}

/** The flags that point a `wrangler d1 ...` command at the target. */
export function targetFlags(target: Target): string[] {
  const flags = ["--config", target.config, target.remote ? "--remote" : "--local"];
  if (target.env) flags.push("--env", target.env);
  if (!target.remote && target.persistTo) flags.push("--persist-to", target.persistTo);
  return flags;
}

/** A wrangler run that exited non-zero, with what it printed; its message is one line (scripts/wrangler-message.mjs). */
export class WranglerError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly stdout: string,
    readonly stderr: string,
  ) {
    super(`${wranglerCommand(args)} failed: ${wranglerMessage(stdout, stderr)}`);
    this.name = "WranglerError";
  }
}

/** Runs wrangler (on the Node running this script) and returns its stdout; throws a WranglerError on failure. */
export function wrangler(args: string[], options: { quiet?: boolean } = {}): string {
  const result = spawnSync(process.execPath, [WRANGLER, ...args], {
    cwd: ROOT,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: process.env.CI ?? "true" },
    maxBuffer: 256 * 1024 * 1024,
  });
  if (result.status !== 0) {
    throw new WranglerError(args, result.stdout, result.stderr);
  }
  if (!options.quiet) process.stdout.write(result.stdout);
  return result.stdout;
}
