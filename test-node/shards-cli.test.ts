import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sign } from "hono/jwt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getPlatformProxy, unstable_readConfig } from "wrangler";
import { runningVersion, setVar, WRITE_GUARD, writeFileInPlace } from "../scripts/shards/config-store";
import { retryingOnLocalLock, type ShardExecutor } from "../scripts/shards/move";
import { inline } from "../scripts/shards/wrangler-executor";
import { bucketOf, shardConfigVersion } from "../src/shards";
import { migratedState, runScript } from "./served-worker";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TSX = join(ROOT, "node_modules", "tsx", "dist", "cli.mjs");
const WRANGLER = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const SECRET = "shards-cli-secret-0123456789abcdef0123456789";

/** Runs one of the npm scripts' tsx entry points as a user would, and returns its output. */
function run(script: string, args: string[]): string {
  const result = spawnSync(process.execPath, [TSX, join(ROOT, script), ...args], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
  expect(result.status, `${result.stdout}\n${result.stderr}`).toBe(0);
  return result.stdout;
}

describe("config edits and remote SQL", () => {
  it("setVar rewrites one var of one environment and keeps everything else", () => {
    const toml = '[vars]\nSHARD_MAP = ""\n# note\n\n[env.a.vars]\nSHARD_MAP = "DB:0-1023"\nOTHER = "x"\n[[x]]\n';
    const edited = setVar(setVar(toml, "a", "SHARD_MAP", "DB:0-511,DB_1:512-1023"), "a", "SHARD_FROZEN", "1-2");
    expect(edited).toBe(
      '[vars]\nSHARD_MAP = ""\n# note\n\n[env.a.vars]\nSHARD_FROZEN = "1-2"\nSHARD_MAP = "DB:0-511,DB_1:512-1023"\nOTHER = "x"\n[[x]]\n',
    );
    expect(() => setVar(toml, "b", "SHARD_MAP", "")).toThrow(/no \[env.b.vars\]/);
  });

  it("rewrites the config in place, and every state a reader can meet is the old file, the new one or no config", () => {
    const dir = mkdtempSync(join(tmpdir(), "shards-write-"));
    try {
      const path = join(dir, "wrangler.toml");
      const base = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
      const frozen = setVar(base, "shards", "SHARD_FROZEN", "512-767");
      writeFileSync(path, base);
      const inode = statSync(path).ino;
      // Longer, then shorter (the length is set before the first byte goes back), then the same again.
      for (const [before, after] of [
        [base, frozen],
        [frozen, base],
        [base, base],
      ]) {
        const states: string[] = [];
        writeFileInPlace(path, after, () => states.push(readFileSync(path, "utf8")));
        expect(states.at(-1)).toBe(after);
        for (const state of states.slice(0, -1)) {
          if (state === before) continue;
          expect(state.startsWith(WRITE_GUARD)).toBe(true);
          writeFileSync(join(dir, "seen.toml"), state);
          expect(() => unstable_readConfig({ config: join(dir, "seen.toml"), env: "shards" })).toThrow(/TOML/);
        }
        // wrangler dev's watcher follows the inode: it must never change (see writeFileInPlace).
        expect(statSync(path).ino).toBe(inode);
      }
      expect(unstable_readConfig({ config: path, env: "shards" }).vars?.SHARD_FROZEN).toBe("");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("runs a statement again when a local database is locked by another workerd, and only then", async () => {
    const calls: string[] = [];
    let failures = 2;
    const flaky: ShardExecutor = {
      async all(_database, statement) {
        calls.push(statement.sql);
        if (statement.sql === "locked" && failures-- > 0) {
          throw new Error("D1_ERROR: Failed to get session commit token: internal error; reference = abc123");
        }
        if (statement.sql === "broken") throw new Error("D1_ERROR: no such table: nope: SQLITE_ERROR");
        return [{ ok: 1 }];
      },
      async batch() {},
    };
    const executor = retryingOnLocalLock(flaky, { sleep: async () => {} });
    expect(await executor.all("DB", { sql: "locked", params: [] })).toEqual([{ ok: 1 }]);
    expect(calls).toEqual(["locked", "locked", "locked"]);
    await expect(executor.all("DB", { sql: "broken", params: [] })).rejects.toThrow(/no such table/);
    expect(calls.filter((sql) => sql === "broken")).toHaveLength(1);
  });

  it("writes values into SQL as literals for wrangler d1 execute", () => {
    expect(inline({ sql: "SELECT ? , ?, ? WHERE x IN (?)", params: ["it's", 12, null, "a"] })).toBe(
      "SELECT 'it''s' , 12, NULL WHERE x IN ('a')",
    );
    expect(() => inline({ sql: "SELECT ?", params: [] })).toThrow(/too few/);
    expect(() => inline({ sql: "SELECT ?", params: [1, 2] })).toThrow(/too many/);
  });

  it("writes numbered parameters (src/db/statements.ts renders them) once per use, and leaves quoted ? alone", () => {
    expect(inline({ sql: `SELECT ?1, '?' AS "a?", ?2 WHERE x = ?1`, params: ["u", true] })).toBe(
      `SELECT 'u', '?' AS "a?", 1 WHERE x = 'u'`,
    );
    const ten = Array.from({ length: 10 }, (_, i) => i + 1);
    expect(inline({ sql: ten.map((n) => `?${n}`).join(","), params: ten })).toBe(ten.join(","));
    expect(() => inline({ sql: "SELECT ?2", params: [1] })).toThrow(/too few/);
    expect(() => inline({ sql: "SELECT ?1", params: [1, 2] })).toThrow(/too many/);
    expect(() => inline({ sql: "SELECT ?1", params: [{}] })).toThrow(/cannot write/);
  });
});

describe("npm run shards:move on local databases (the CLI over wrangler)", () => {
  const dir = mkdtempSync(join(tmpdir(), "shards-cli-"));
  const config = join(dir, "wrangler.toml");
  const state = join(dir, "state");
  const proxy = () =>
    getPlatformProxy<Record<string, D1Database>>({
      configPath: config,
      environment: "shards",
      persist: { path: join(state, "v3") },
    });

  beforeAll(() => {
    // The repository's config with absolute paths, so the copy in a temporary directory can be rewritten.
    const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8")
      .replace('main = "src/index.ts"', `main = "${join(ROOT, "src/index.ts")}"`)
      .replaceAll('migrations_dir = "drizzle"', `migrations_dir = "${join(ROOT, "drizzle")}"`)
      .replace('directory = "./public"', `directory = "${join(ROOT, "public")}"`);
    writeFileSync(config, toml);
    run("scripts/migrate.ts", ["--local", "--env", "shards", "--config", config, "--persist-to", state]);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("migrates every database of the environment, moves the users of the buckets and rewrites the map", async () => {
    const movers: string[] = [];
    const stayers: string[] = [];
    for (let i = 0; movers.length < 3 || stayers.length < 3; i++) {
      const bucket = await bucketOf(`cli-user-${i}`);
      if (bucket >= 512 && bucket <= 767 && movers.length < 3) movers.push(`cli-user-${i}`);
      if (bucket >= 768 && stayers.length < 3) stayers.push(`cli-user-${i}`);
    }
    const seed = await proxy();
    try {
      for (const [index, userId] of [...movers, ...stayers].entries()) {
        await seed.env.DB_1.prepare(
          "INSERT INTO subscriptions (user_id, guid, feed_url, subscribed_at, unsubscribed_at, change_seq) VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?)",
        )
          .bind(
            ...[userId, crypto.randomUUID(), `https://cli.example/${index}/a`, 1000 + index, null, 1],
            ...[userId, crypto.randomUUID(), `https://cli.example/${index}/b`, 2000 + index, 3000, 2],
          )
          .run();
      }
    } finally {
      await seed.dispose();
    }

    const output = run("scripts/shards-move.ts", [
      ...["--env", "shards", "--config", config, "--persist-to", state],
      ...["--buckets", "512-767", "--from", "DB_1", "--to", "DB_2", "--no-worker"],
    ]);
    expect(output).toContain("6/6 deleting the moved rows from DB_1");
    const toml = readFileSync(config, "utf8");
    expect(toml).toContain('SHARD_MAP = "DB:0-511,DB_2:512-767,DB_1:768-1023"');
    expect(toml).toContain('SHARD_FROZEN = ""');

    const check = await proxy();
    try {
      const users = async (name: string) =>
        (await check.env[name].prepare("SELECT user_id, count(*) AS n FROM subscriptions GROUP BY user_id").all())
          .results;
      expect(await users("DB_2")).toEqual(movers.sort().map((user_id) => ({ user_id, n: 2 })));
      expect(await users("DB_1")).toEqual(stayers.sort().map((user_id) => ({ user_id, n: 2 })));
      const stats = await check.env.DB_2.prepare(
        "SELECT user_id, active_count, stored_count, version FROM user_stats ORDER BY user_id",
      ).all();
      expect(stats.results).toEqual(
        movers.map((user_id) => ({ user_id, active_count: 1, stored_count: 2, version: 2 })),
      );
    } finally {
      await check.dispose();
    }
  });
});

describe("npm run shards:move against a running wrangler dev --env shards", () => {
  const dir = mkdtempSync(join(tmpdir(), "shards-dev-"));
  const config = join(dir, "wrangler.toml");
  const state = join(dir, "state");
  const port = 18_787 + Math.floor(Math.random() * 1000);
  const url = `http://127.0.0.1:${port}`;
  let dev: ChildProcess | undefined;
  let devLog = "";

  beforeAll(async () => {
    const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8")
      .replace('main = "src/index.ts"', `main = "${join(ROOT, "src/index.ts")}"`)
      .replaceAll('migrations_dir = "drizzle"', `migrations_dir = "${join(ROOT, "drizzle")}"`)
      .replace('directory = "./public"', `directory = "${join(ROOT, "public")}"`);
    writeFileSync(config, toml);
    writeFileSync(join(dir, ".dev.vars"), `AUTH_JWT_SECRET=${SECRET}\n`);
    // The three databases migrated by npm run db:migrate:local -- --env shards (once per suite run; the
    // describe above runs it itself): the databases are named by their ids, which this config keeps.
    await migratedState("shards", { into: state });
    dev = spawn(
      process.execPath,
      [
        WRANGLER,
        "dev",
        "--config",
        config,
        "--env",
        "shards",
        "--persist-to",
        state,
        "--port",
        String(port),
        "--ip",
        "127.0.0.1",
        "--inspector-port",
        "0",
      ],
      {
        cwd: dir,
        env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false", CI: "true" },
      },
    );
    dev.stdout?.on("data", (data) => {
      devLog += data;
    });
    dev.stderr?.on("data", (data) => {
      devLog += data;
    });
    // Waits for the worker to answer, or for wrangler to stop, however long a loaded machine takes to start it
    // (a guessed 120 s failed beside three other suites); the hook's timeout only catches a hang.
    const exited = new Promise<void>((resolve) => dev?.once("exit", () => resolve()));
    let stopped = false;
    void exited.then(() => {
      stopped = true;
    });
    while (!stopped && (await runningVersion(url)) === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(await runningVersion(url), devLog).toBeDefined();
  }, 900_000);
  afterAll(() => {
    dev?.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  });

  it("returns only once the worker routes by the final settings, unfrozen; brand-new users writing throughout lose nothing", async () => {
    const token = async (userId: string) => {
      const now = Math.floor(Date.now() / 1000);
      return sign({ sub: userId, iat: now, exp: now + 3600 }, SECRET, "HS256");
    };
    const subscribe = async (userId: string) => {
      const guid = crypto.randomUUID();
      const response = await fetch(`${url}/v1/subscriptions`, {
        method: "POST",
        headers: { Authorization: `Bearer ${await token(userId)}`, "Content-Type": "application/vnd.api+json" },
        body: JSON.stringify({
          data: { type: "subscription", id: guid, attributes: { feedUrl: `https://dev.example/${guid}` } },
        }),
      });
      return { guid, status: response.status };
    };
    const newcomers: string[] = [];
    for (let i = 0; newcomers.length < 400; i++) {
      const bucket = await bucketOf(`dev-newcomer-${i}`);
      if (bucket >= 512 && bucket <= 767) newcomers.push(`dev-newcomer-${i}`);
    }
    // Some users exist before the move.
    const acknowledged = new Map<string, string>();
    for (const userId of newcomers.slice(0, 5)) {
      const { guid, status } = await subscribe(userId);
      expect(status).toBe(201);
      acknowledged.set(userId, guid);
    }
    // Brand-new users write for the first time, one after the other, during the whole move; a 503 is retried.
    let running = true;
    const statuses: number[] = [];
    const writer = (async () => {
      for (const userId of newcomers.slice(5)) {
        if (!running) break;
        for (;;) {
          const { guid, status } = await subscribe(userId);
          statuses.push(status);
          if (status === 201) {
            acknowledged.set(userId, guid);
            break;
          }
          expect(status).toBe(503);
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      }
    })();
    // Without blocking this process, so requests can run beside it.
    const moved = await runScript("scripts/shards-move.ts", [
      ...["--env", "shards", "--config", config, "--persist-to", state, "--worker-url", url],
      ...["--buckets", "512-767", "--from", "DB_1", "--to", "DB_2"],
    ]);
    // The move has returned: the worker already routes by the final settings, before any further request.
    const finalVersion = await shardConfigVersion({
      SHARD_MAP: "DB:0-511,DB_2:512-767,DB_1:768-1023",
      SHARD_FROZEN: "",
    });
    expect(moved.status, `${moved.output}\n${devLog.slice(-3000)}`).toBe(0);
    expect(await runningVersion(url)).toBe(finalVersion);
    running = false;
    await writer;
    expect(moved.output).toContain("routes by them");
    expect(statuses).toContain(201);
    expect(devLog).not.toMatch(/Error: .*wrangler\.toml|Failed to parse/);

    // Unfrozen: a write of a moved user is accepted at once.
    expect((await subscribe(newcomers[0])).status).toBe(201);
    // Every acknowledged first write is there, read through the worker (which reads DB_2 now).
    for (const [userId, guid] of acknowledged) {
      const response = await fetch(`${url}/v1/subscriptions/${guid}`, {
        headers: { Authorization: `Bearer ${await token(userId)}` },
      });
      expect(response.status, userId).toBe(200);
    }
  });
});
