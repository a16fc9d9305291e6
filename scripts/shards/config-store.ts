// Where `npm run shards:move` keeps SHARD_MAP and SHARD_FROZEN: the vars of one environment in a
// wrangler config file. Locally, `wrangler dev` reloads when the file changes; remotely, each change is
// deployed (`wrangler deploy`). Either way a write returns only once the running worker reports the new
// settings (GET /status/shard-config), so the move never copies before its freeze is in effect and never
// exits before its unfreeze is.
import { closeSync, fsyncSync, ftruncateSync, openSync, readFileSync, writeSync } from "node:fs";
import { SHARD_CONFIG_PATH, shardConfigVersion } from "../../src/shards";
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

/** The first byte while a write is under way: a TOML document that starts with `=` never parses. */
export const WRITE_GUARD = "=";

/**
 * Rewrites the file in place (same inode), so that a reader, `wrangler dev`'s config watcher included, sees
 * the old file, the new one, or a file that does not parse; never a mix that parses.
 *
 * Why in place: `wrangler dev` (4.156, chokidar 4.0.1) watches the config file itself with fs.watch, and on
 * each change closes its watcher and opens a new one. When the file is replaced by a rename (a new inode),
 * the closing watcher still re-watches the new inode after it was closed, in chokidar's shared watch table;
 * from the second replacement on, every later watcher joins that table entry, which watches a deleted inode:
 * wrangler never sees the file change again until it restarts (docs/sharding.md, "Moving buckets").
 *
 * Why a guard: a plain rewrite (truncate, then write) can be read half-written; an empty or partial file
 * that parses can make `wrangler dev` exit or run a wrong map. So the first byte becomes WRITE_GUARD (one byte:
 * never seen half-written), then the rest is written and the length set, and only then the real first byte
 * goes back. A read in between fails to parse: wrangler logs it and keeps the running worker and its
 * settings, and the last write's event (or the rewrite waitForWorker does) makes it read the file again.
 * A crash in between leaves a file that wrangler refuses, not a torn one. `onStep` (tests) sees each state.
 */
export function writeFileInPlace(path: string, text: string, onStep?: () => void): void {
  const bytes = Buffer.from(text, "utf8");
  const fd = openSync(path, "r+");
  try {
    const step = (action: () => unknown) => {
      action();
      onStep?.();
    };
    if (bytes.length === 0) {
      step(() => ftruncateSync(fd, 0));
      return;
    }
    step(() => writeSync(fd, WRITE_GUARD, 0));
    step(() => writeSync(fd, bytes, 1, bytes.length - 1, 1));
    step(() => ftruncateSync(fd, bytes.length));
    step(() => writeSync(fd, bytes, 0, 1, 0));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * How long the worker may take to report new settings. Locally a change can still go unseen (wrangler read
 * the file during a write, WRITE_GUARD in place, and skipped the events that followed within its throttle;
 * or the change came while it was replacing its watcher), so the file is rewritten after `retouchMs`.
 */
export interface WorkerWait {
  /** The running worker, e.g. http://127.0.0.1:8787 (`wrangler dev`) or the deployed worker's URL. */
  url: string;
  timeoutMs?: number;
  /** Locally: rewrite the file when the worker has not reloaded after this long. */
  retouchMs?: number;
  pollMs?: number;
}

/** The version the worker at `url` runs with; undefined when nothing answers there (yet). */
export async function runningVersion(url: string): Promise<string | undefined> {
  try {
    const response = await fetch(new URL(SHARD_CONFIG_PATH, url), { headers: { "Cache-Control": "no-cache" } });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { shardConfigVersion?: unknown };
    return typeof body.shardConfigVersion === "string" ? body.shardConfigVersion : undefined;
  } catch {
    return undefined;
  }
}

function versionOf(settings: ShardSettings): Promise<string> {
  return shardConfigVersion({ SHARD_MAP: settings.map, SHARD_FROZEN: settings.frozen });
}

/** Waits until the worker reports `settings`; `retouch` runs when it takes long (a reload that did not happen). */
export async function waitForWorker(wait: WorkerWait, settings: ShardSettings, retouch?: () => void): Promise<void> {
  const expected = await versionOf(settings);
  const started = Date.now();
  let touched = started;
  for (;;) {
    if ((await runningVersion(wait.url)) === expected) return;
    const now = Date.now();
    if (now - started > (wait.timeoutMs ?? 120_000)) {
      throw new Error(
        `the worker at ${wait.url} did not report SHARD_MAP="${settings.map}" SHARD_FROZEN="${settings.frozen}" ` +
          `within ${Math.round((now - started) / 1000)} s; the config file holds them: check the worker (a wrangler dev ` +
          "that stopped reloading its config needs a restart), then run the move again.",
      );
    }
    if (retouch && now - touched > (wait.retouchMs ?? 10_000)) {
      retouch();
      touched = now;
    }
    await new Promise((resolve) => setTimeout(resolve, wait.pollMs ?? 200));
  }
}

/**
 * The settings in a wrangler config file. `worker`: the running worker to wait for after each write (none: no
 * worker runs on this config, as when the move runs against stopped local state).
 */
export function wranglerTomlStore(
  target: Target,
  options: { propagationMs?: number; worker?: WorkerWait } = {},
): ShardConfigStore & { checkWorker(): Promise<void> } {
  const read = async (): Promise<ShardSettings> => {
    const vars = environmentVars(target);
    const text = (name: string) => (typeof vars[name] === "string" ? (vars[name] as string) : "");
    return { map: text(SETTINGS.map), frozen: text(SETTINGS.frozen) };
  };
  return {
    read,
    /** Before anything changes: the worker answers and runs with the file's current settings. */
    async checkWorker() {
      const { worker } = options;
      if (!worker) return;
      const settings = await read();
      const expected = await versionOf(settings);
      const running = await runningVersion(worker.url);
      if (running !== expected) {
        throw new Error(
          running === undefined
            ? `no worker answers ${SHARD_CONFIG_PATH} at ${worker.url}: start it (npm run dev:shards), give its URL ` +
                "with --worker-url, or pass --no-worker when no worker runs on this configuration."
            : `the worker at ${worker.url} runs with other settings than ${target.config} holds: is it another configuration?`,
        );
      }
    },
    async write(settings: ShardSettings): Promise<void> {
      let toml = readFileSync(target.config, "utf8");
      toml = setVar(toml, target.env, SETTINGS.map, settings.map);
      toml = setVar(toml, target.env, SETTINGS.frozen, settings.frozen);
      writeFileInPlace(target.config, toml);
      console.log(`   ${target.config}: SHARD_MAP="${settings.map}" SHARD_FROZEN="${settings.frozen}"`);
      if (target.remote) {
        wrangler(["deploy", "--config", target.config, ...(target.env ? ["--env", target.env] : [])], { quiet: true });
        // A deployment reaches every location within seconds; requests already running finish on the old one.
        await new Promise((resolve) => setTimeout(resolve, options.propagationMs ?? 30_000));
      }
      if (options.worker) {
        await waitForWorker(
          options.worker,
          settings,
          target.remote ? undefined : () => writeFileInPlace(target.config, toml),
        );
        console.log(`   the worker at ${options.worker.url} routes by them`);
      }
    },
  };
}
