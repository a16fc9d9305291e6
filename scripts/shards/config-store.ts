// Where `npm run shards:move` keeps SHARD_MAP and SHARD_FROZEN: the vars of one environment in a
// wrangler config file. Locally, `wrangler dev` reloads when the file changes; remotely, each change is
// deployed (`wrangler deploy`) and given time to reach every location before the move goes on.
import { readFileSync, writeFileSync } from "node:fs";
import type { ShardConfigStore, ShardSettings } from "./move";
import { environmentVars, type Target, wrangler } from "./wrangler";

const SETTINGS = { map: "SHARD_MAP", frozen: "SHARD_FROZEN" } as const;

/** The table header of the environment's vars: `[vars]` at the top level, `[env.NAME.vars]` in an environment. */
function varsHeader(env: string | undefined): string {
  return env ? `[env.${env}.vars]` : "[vars]";
}

/**
 * Sets `name = "value"` inside the vars table of `env`, keeping every other line (comments included).
 * The table must exist: environments inherit no vars, so a deployable environment always has one.
 */
export function setVar(toml: string, env: string | undefined, name: string, value: string): string {
  const lines = toml.split("\n");
  const header = varsHeader(env);
  const start = lines.findIndex((line) => line.trim() === header);
  if (start < 0) throw new Error(`the config has no ${header} table to hold ${name}.`);
  let end = lines.findIndex((line, i) => i > start && /^\s*\[/.test(line));
  if (end < 0) end = lines.length;
  const assignment = `${name} = ${JSON.stringify(value)}`;
  const existing = lines.findIndex((line, i) => i > start && i < end && new RegExp(`^\\s*${name}\\s*=`).test(line));
  if (existing >= 0) lines[existing] = assignment;
  else lines.splice(start + 1, 0, assignment);
  return lines.join("\n");
}

export function wranglerTomlStore(target: Target, options: { propagationMs?: number } = {}): ShardConfigStore {
  return {
    async read(): Promise<ShardSettings> {
      const vars = environmentVars(target);
      const text = (name: string) => (typeof vars[name] === "string" ? (vars[name] as string) : "");
      return { map: text(SETTINGS.map), frozen: text(SETTINGS.frozen) };
    },
    async write(settings: ShardSettings): Promise<void> {
      let toml = readFileSync(target.config, "utf8");
      toml = setVar(toml, target.env, SETTINGS.map, settings.map);
      toml = setVar(toml, target.env, SETTINGS.frozen, settings.frozen);
      writeFileSync(target.config, toml);
      console.log(`   ${target.config}: SHARD_MAP="${settings.map}" SHARD_FROZEN="${settings.frozen}"`);
      if (!target.remote) return;
      wrangler(["deploy", "--config", target.config, ...(target.env ? ["--env", target.env] : [])], { quiet: true });
      // A deployment reaches every location within seconds; requests already running finish on the old one.
      await new Promise((resolve) => setTimeout(resolve, options.propagationMs ?? 30_000));
    },
  };
}
