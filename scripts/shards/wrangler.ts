// What the shard tools (migrations, bucket moves) need from wrangler: the configuration of one
// environment, the databases its bucket map names, and a way to run the wrangler CLI.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { unstable_readConfig } from "wrangler";
import { parseShardMap } from "../../src/shards";

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

/** The environment's vars as wrangler resolves them (environments inherit no vars). */
export function environmentVars(target: Pick<Target, "config" | "env">): Record<string, unknown> {
  return unstable_readConfig({ config: target.config, env: target.env }).vars ?? {};
}

/** The D1 bindings the environment declares. */
export function declaredDatabases(target: Pick<Target, "config" | "env">): string[] {
  const config = unstable_readConfig({ config: target.config, env: target.env });
  return (config.d1_databases ?? []).map((database: { binding: string }) => database.binding);
}

/** The databases the environment's SHARD_MAP names (DB alone without a map). */
export function mappedDatabases(target: Pick<Target, "config" | "env">): string[] {
  const map = environmentVars(target).SHARD_MAP;
  return [...parseShardMap(typeof map === "string" ? map : "").bindings];
}

/** The flags that point a `wrangler d1 ...` command at the target. */
export function targetFlags(target: Target): string[] {
  const flags = ["--config", target.config, target.remote ? "--remote" : "--local"];
  if (target.env) flags.push("--env", target.env);
  if (!target.remote && target.persistTo) flags.push("--persist-to", target.persistTo);
  return flags;
}

/** Runs wrangler (on the Node running this script) and returns its stdout; throws with its output on failure. */
export function wrangler(args: string[], options: { quiet?: boolean } = {}): string {
  const result = spawnSync(process.execPath, [WRANGLER, ...args], {
    cwd: ROOT,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: process.env.CI ?? "true" },
    maxBuffer: 256 * 1024 * 1024,
  });
  if (result.status !== 0) {
    throw new Error(`wrangler ${args.join(" ")} failed:\n${result.stdout}\n${result.stderr}`);
  }
  if (!options.quiet) process.stdout.write(result.stdout);
  return result.stdout;
}
